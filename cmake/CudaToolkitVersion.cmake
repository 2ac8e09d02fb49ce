# The oldest CUDA toolkit the course supports, checked before the CUDA language is enabled.
#
# The course is written for CUDA 12.0 and newer (12.x and 13.x). An older nvcc would fail
# later, in the middle of the build, on an instruction or API it lacks; this stops at
# configure time instead, naming the nvcc it found and how to point the build at another.
# COURSE_OLDEST_CUDA_TOOLKIT (top-level CMakeLists.txt) is the one place that says "12.0";
# tools/doctor.py reads it from there.
#
# The nvcc checked is the one CMake will use, looked for in CMake's order: CMAKE_CUDA_COMPILER
# if given, else $CUDACXX, else nvcc beside the C++ compiler, on PATH, or in $CUDA_PATH/bin
# (cmake/CudaArchitectures.cmake gives /usr/local/cuda/bin/nvcc when PATH has none). After
# project(), course_check_cuda_compiler_version() checks the version CMake found too.

function(_course_check_cuda_toolkit_version oldest)
  set(nvcc "")
  if(DEFINED CMAKE_CUDA_COMPILER AND NOT "${CMAKE_CUDA_COMPILER}" STREQUAL "")
    set(nvcc "${CMAKE_CUDA_COMPILER}")
  elseif(DEFINED ENV{CUDACXX} AND NOT "$ENV{CUDACXX}" STREQUAL "")
    set(nvcc "$ENV{CUDACXX}")
  endif()
  if(nvcc AND NOT IS_ABSOLUTE "${nvcc}")
    find_program(found_nvcc NAMES "${nvcc}" NO_CACHE)
    if(NOT found_nvcc)
      message(FATAL_ERROR "The CUDA compiler ${nvcc} (CMAKE_CUDA_COMPILER or CUDACXX) is not on PATH")
    endif()
    set(nvcc "${found_nvcc}")
  elseif(nvcc AND NOT EXISTS "${nvcc}")
    message(FATAL_ERROR "The CUDA compiler ${nvcc} (CMAKE_CUDA_COMPILER or CUDACXX) does not exist")
  endif()
  if(NOT nvcc)
    set(cxx "${CMAKE_CXX_COMPILER}")
    if(NOT cxx)
      find_program(cxx NAMES c++ g++ NO_CACHE)
    endif()
    if(cxx)
      get_filename_component(cxx_dir "${cxx}" DIRECTORY)
      find_program(found_nvcc NAMES nvcc PATHS "${cxx_dir}" NO_DEFAULT_PATH NO_CACHE)
    endif()
    if(NOT found_nvcc)
      find_program(found_nvcc NAMES nvcc NO_CACHE)
    endif()
    if(NOT found_nvcc AND NOT "$ENV{CUDA_PATH}" STREQUAL "")
      find_program(found_nvcc NAMES nvcc PATHS "$ENV{CUDA_PATH}/bin" NO_DEFAULT_PATH NO_CACHE)
    endif()
    set(nvcc "${found_nvcc}")
  endif()

  if(NOT nvcc)
    message(FATAL_ERROR
      "No CUDA compiler (nvcc) found: not on PATH, nor in /usr/local/cuda/bin or $CUDA_PATH/bin.\n"
      "The course needs the CUDA toolkit ${oldest} or newer (12.x or 13.x): "
      "https://developer.nvidia.com/cuda-downloads (on WSL2: the toolkit for WSL-Ubuntu). "
      "If it is installed elsewhere, name its nvcc:\n"
      "  cmake -S ${CMAKE_SOURCE_DIR} -B ${CMAKE_BINARY_DIR} -DCMAKE_CUDA_COMPILER=/path/to/bin/nvcc")
  endif()

  execute_process(COMMAND "${nvcc}" --version
                  OUTPUT_VARIABLE output ERROR_VARIABLE output RESULT_VARIABLE result TIMEOUT 60)
  if(NOT result EQUAL 0 OR NOT output MATCHES "release ([0-9]+)\\.([0-9]+)")
    message(WARNING "Could not read the CUDA version of ${nvcc} (nvcc --version said: ${output})")
    return()
  endif()
  set(version "${CMAKE_MATCH_1}.${CMAKE_MATCH_2}")
  if(version VERSION_LESS oldest)
    _course_old_toolkit_error("${nvcc}" "${version}" "${oldest}")
  endif()
  message(STATUS "CUDA toolkit: ${version} (${nvcc}); the course supports ${oldest} and newer")
endfunction()

function(_course_old_toolkit_error nvcc version oldest)
  message(FATAL_ERROR
    "This CUDA toolkit is too old for the course: ${nvcc} is CUDA ${version}; the course "
    "needs CUDA ${oldest} or newer (12.x or 13.x).\n"
    "Install a newer toolkit (https://developer.nvidia.com/cuda-downloads), or, if one is "
    "installed beside this one, point a fresh build folder at its nvcc, for example:\n"
    "  rm -rf ${CMAKE_BINARY_DIR}\n"
    "  cmake -S ${CMAKE_SOURCE_DIR} -B ${CMAKE_BINARY_DIR} -DCMAKE_CUDA_COMPILER=/usr/local/cuda-12.6/bin/nvcc\n"
    "(./course uses that folder too; CUDACXX=/path/to/nvcc works as well).")
endfunction()

# After project(): the version CMake itself found, in case it chose another nvcc.
function(course_check_cuda_compiler_version oldest)
  if(CMAKE_CUDA_COMPILER_VERSION AND CMAKE_CUDA_COMPILER_VERSION VERSION_LESS oldest)
    string(REGEX MATCH "^[0-9]+\\.[0-9]+" version "${CMAKE_CUDA_COMPILER_VERSION}")
    _course_old_toolkit_error("${CMAKE_CUDA_COMPILER}" "${version}" "${oldest}")
  endif()
endfunction()

_course_check_cuda_toolkit_version("${COURSE_OLDEST_CUDA_TOOLKIT}")
