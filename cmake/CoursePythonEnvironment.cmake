# Which Python environment is active, and noticing when it changes (cmake/CoursePython.cmake).
#
# course_python_environment(<var>) describes the active virtual or conda environment: the
# VIRTUAL_ENV and CONDA_PREFIX variables, and the time its site-packages folder last changed
# (so installing PyTorch into the environment counts as a change too).
#
# Configure writes <build>/course_python/environment_check.cmake, which sets
# COURSE_PYTHON_ENVIRONMENT_THEN (the description at configure time) and includes this file;
# ctest reads that script before any test. When the description differs now (you activated
# another environment, left it, or installed packages into it), the script configures the build
# again, which picks the active environment's Python (and PyTorch) and rewrites the test
# lists that ctest reads next. If that fails, it prints how to configure yourself.

function(course_python_environment out_var)
  set(description "")
  foreach(variable IN ITEMS VIRTUAL_ENV CONDA_PREFIX)
    set(prefix "$ENV{${variable}}")
    set(changed "")
    if(prefix)
      file(GLOB folders LIST_DIRECTORIES true "${prefix}/lib/python3*/site-packages")
      foreach(folder IN LISTS folders)
        file(TIMESTAMP "${folder}" stamp "%s" UTC)
        string(APPEND changed " ${stamp}")
      endforeach()
    endif()
    list(APPEND description "${variable}=${prefix}${changed}")
  endforeach()
  set(${out_var} "${description}" PARENT_SCOPE)
endfunction()

# The same, in words: "VIRTUAL_ENV=/home/you/venv", or "no virtual or conda environment".
function(course_python_environment_names out_var)
  set(names "")
  foreach(variable IN ITEMS VIRTUAL_ENV CONDA_PREFIX)
    if(NOT "$ENV{${variable}}" STREQUAL "")
      list(APPEND names "${variable}=$ENV{${variable}}")
    endif()
  endforeach()
  if(names)
    string(REPLACE ";" ", " names "${names}")
  else()
    set(names "no virtual or conda environment")
  endif()
  set(${out_var} "${names}" PARENT_SCOPE)
endfunction()

if(DEFINED COURSE_PYTHON_ENVIRONMENT_THEN)
  course_python_environment(_course_now)
  if(NOT _course_now STREQUAL COURSE_PYTHON_ENVIRONMENT_THEN)
    course_python_environment_names(_course_now_names)
    if(_course_now_names STREQUAL COURSE_PYTHON_ENVIRONMENT_THEN_NAMES)
      set(_course_what "the packages of ${_course_now_names} changed")
    else()
      string(CONCAT _course_what "the build was configured with "
                    "${COURSE_PYTHON_ENVIRONMENT_THEN_NAMES}, and now ${_course_now_names} is active")
    endif()
    message("Python tests: ${_course_what}: configuring again to pick the Python")
    execute_process(COMMAND "${COURSE_PYTHON_CMAKE_COMMAND}" "${COURSE_PYTHON_BUILD_DIR}"
                    RESULT_VARIABLE _course_result
                    OUTPUT_VARIABLE _course_output ERROR_VARIABLE _course_output)
    if(_course_result EQUAL 0)
      # Configure's own "Python tests:" lines (a ';' in them would split the list).
      string(ASCII 1 _course_semicolon)
      string(REPLACE ";" "${_course_semicolon}" _course_output "${_course_output}")
      string(REGEX MATCHALL "Python tests:[^\n]*" _course_lines "${_course_output}")
      foreach(_course_line IN LISTS _course_lines)
        string(REPLACE "${_course_semicolon}" ";" _course_line "${_course_line}")
        message("${_course_line}")
      endforeach()
    else()
      message("${_course_output}")
      message("Python tests: configuring again failed (above), so they run with the Python "
              "chosen before. Configure yourself, in the environment you want:\n"
              "  cmake -S ${COURSE_PYTHON_SOURCE_DIR} -B ${COURSE_PYTHON_BUILD_DIR}\n"
              "or name the Python: -DCOURSE_PYTHON=/path/to/python3")
    endif()
  endif()
endif()
