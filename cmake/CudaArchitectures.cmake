# Which GPU architectures to compile for.
#
# 1. If you set CMAKE_CUDA_ARCHITECTURES yourself (-DCMAKE_CUDA_ARCHITECTURES=90), that wins.
# 2. Otherwise, if this machine has an NVIDIA GPU, build for exactly that GPU
#    (fast builds, and the benchmark measures code tuned for the card it runs on).
# 3. Otherwise (a laptop or a CI machine without a GPU) build a portable list from
#    Turing (sm_75) to Hopper (sm_90).
#
# Nothing here hard-codes one architecture: the course runs on any GPU from sm_75 up.
set(COURSE_DEFAULT_CUDA_ARCHITECTURES "75;80;86;89;90"
    CACHE STRING "Architectures used when no GPU is found and none are given")

if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
  find_program(COURSE_NVIDIA_SMI nvidia-smi)
  set(_course_detected "")
  if(COURSE_NVIDIA_SMI)
    execute_process(
      COMMAND ${COURSE_NVIDIA_SMI} --query-gpu=compute_cap --format=csv,noheader
      OUTPUT_VARIABLE _course_caps
      RESULT_VARIABLE _course_smi_result
      ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(_course_smi_result EQUAL 0 AND _course_caps MATCHES "^[0-9]+\\.[0-9]+")
      string(REPLACE "\n" ";" _course_caps "${_course_caps}")
      foreach(_cap IN LISTS _course_caps)
        string(REPLACE "." "" _cap "${_cap}")
        string(STRIP "${_cap}" _cap)
        list(APPEND _course_detected "${_cap}")
      endforeach()
      list(REMOVE_DUPLICATES _course_detected)
    endif()
  endif()
  if(_course_detected)
    message(STATUS "CUDA architectures: ${_course_detected} (the GPU on this machine)")
    set(CMAKE_CUDA_ARCHITECTURES "${_course_detected}" CACHE STRING "CUDA architectures")
  else()
    message(STATUS "CUDA architectures: ${COURSE_DEFAULT_CUDA_ARCHITECTURES} (no GPU found; portable list)")
    set(CMAKE_CUDA_ARCHITECTURES "${COURSE_DEFAULT_CUDA_ARCHITECTURES}" CACHE STRING "CUDA architectures")
  endif()
endif()

# nvcc is often not on PATH right after installing the toolkit; look in its standard place.
if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
  find_program(_course_nvcc nvcc)
  if(NOT _course_nvcc AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH "CUDA compiler")
  endif()
endif()
