# course_add_python_tests: Python tests (PyTorch extensions) graded through ctest.
#
#   course_add_python_tests(
#     TESTS    test_torch_extension.py                  # unittest/pytest files in this folder
#     SOURCES  torch_extension.cpp torch_extension.cu   # the files you edit; each has a twin in solutions/
#     REQUIRES torch)                                   # Python modules the tests need (default: torch)
#
# The tests run against both versions, like the C++ ones: every test class in a test file
# (`class SomethingTest(unittest.TestCase)`: a name ending in "Test") becomes the ctest tests
#   exercise/m1_05_torch_extension/SomethingTest   with COURSE_IMPL=exercise (your files)
#   solution/m1_05_torch_extension/SomethingTest   with COURSE_IMPL=solution (solutions/...)
# The test file reads COURSE_IMPL to decide which sources to build. Extensions that
# torch.utils.cpp_extension.load builds go to <build>/torch_extensions (TORCH_EXTENSIONS_DIR),
# never into the source tree.
#
# Labels: <month>;<id>;<exercise|solution>;python, and a device label:
#   gpu  for classes whose name contains "Cuda"; without a GPU they report themselves skipped;
#   cpu  for the solution's other classes: they need no GPU, so CI runs them.
# The skeleton's CPU classes get no `cpu` label on purpose: `./course test` runs
# `ctest -L '^(solution|cpu)$'`, and the skeleton's tests fail until you do the TODOs.
#
# Which Python runs them: COURSE_PYTHON when you set it (-DCOURSE_PYTHON=/path/to/python3) and
# it can `import torch`; otherwise, of the active virtual environment (VIRTUAL_ENV) or conda
# environment (CONDA_PREFIX), python3 on PATH, the interpreter CMake found, and
# /usr/bin/python3, the first whose PyTorch is built with CUDA, or else the first that can
# `import torch` (configure says which, and that its CUDA tests will be skipped, with the pip
# command for a CUDA PyTorch). If none can, the tests are still registered and report
# themselves skipped, with the reason, never passed.
#
# The choice follows the environment: ctest reads <build>/course_python/environment_check.cmake
# before it runs any test, and when another virtual or conda environment is active than at
# configure time (you activated one, or left it, or installed packages into it), it configures
# again, which picks that environment's Python; if that fails, it prints the command to
# configure yourself (cmake/CoursePythonEnvironment.cmake).
# `cmake -S . -B build -DCOURSE_PYTHON=$(which python3)` fixes the choice whatever is active;
# `cmake -S . -B build -UCOURSE_PYTHON` lets the environment choose again.
#
# Each test runs through common/python/run_python_tests.py, which uses pytest when that
# interpreter has it, unittest otherwise, and exits with 77 (SKIP_RETURN_CODE) when every test
# was skipped. The tests find the course's Python harness (common/python/course_harness) on
# PYTHONPATH and the build folder in COURSE_BUILD_DIR; the interpreter's path is written to
# <build>/course_python/interpreter.txt, which tools/run_benchmarks.py reads to run the
# Python benchmarks with the same Python, and ./course doctor to say which Python the build uses.
#
# course_add_harness_python_tests(TESTS tests/test_x.py) registers the harness's own Python
# tests (common/python/tests) as harness/python/<Class>, labelled harness;python and cpu or gpu.

set(COURSE_PYTHON "" CACHE FILEPATH
    "Python interpreter with PyTorch for the Python tests (empty: search for one)")

set(COURSE_PYTHON_SKIP_CODE 77)
set(COURSE_PYTHON_RUNNER "${PROJECT_SOURCE_DIR}/common/python/run_python_tests.py")
set(COURSE_PYTHON_PATH "${PROJECT_SOURCE_DIR}/common/python")


include("${CMAKE_CURRENT_LIST_DIR}/CoursePythonEnvironment.cmake")

# What the choice of Python depends on: COURSE_PYTHON when set, else the active environment
# (and when its packages last changed).
function(_course_python_key out_var)
  if(COURSE_PYTHON)
    set(${out_var} "COURSE_PYTHON=${COURSE_PYTHON}" PARENT_SCOPE)
  else()
    course_python_environment(environment)
    set(${out_var} "${environment}" PARENT_SCOPE)
  endif()
endfunction()

# The pip command for a CUDA PyTorch that matches this nvcc's CUDA major version, from
# common/python/course_harness/requirements.py (the one place that knows PyTorch's indexes).
function(_course_cuda_torch_command python out_var)
  string(REGEX MATCH "^[0-9]+" major "${CMAKE_CUDA_COMPILER_VERSION}")
  execute_process(
    COMMAND "${python}" -c "import sys; sys.path.insert(0, sys.argv[1]); from course_harness import requirements; print(requirements.cuda_torch_install_command(int(sys.argv[2]) if sys.argv[2] else None))"
            "${COURSE_PYTHON_PATH}" "${major}"
    OUTPUT_VARIABLE command RESULT_VARIABLE result ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE
    TIMEOUT 60)
  if(NOT result EQUAL 0 OR NOT command)
    set(command "python3 -m pip install torch (a CUDA build: see docs/setup.md)")
  endif()
  set(${out_var} "${command}" PARENT_SCOPE)
endfunction()

# The check ctest runs before the tests (see the top of this file and
# cmake/CoursePythonEnvironment.cmake), written at every configure with the environment of
# that configure in it.
function(_course_write_environment_check)
  set(script "${CMAKE_BINARY_DIR}/course_python/environment_check.cmake")
  if(COURSE_PYTHON)
    file(WRITE "${script}"
         "# COURSE_PYTHON is set (${COURSE_PYTHON}): the Python tests use it whatever is active.\n")
  else()
    course_python_environment(environment)
    course_python_environment_names(names)
    file(WRITE "${script}"
         "# Written by cmake/CoursePython.cmake at configure time; ctest includes it before any test.\n"
         "set(COURSE_PYTHON_ENVIRONMENT_THEN [==[${environment}]==])\n"
         "set(COURSE_PYTHON_ENVIRONMENT_THEN_NAMES [==[${names}]==])\n"
         "set(COURSE_PYTHON_CMAKE_COMMAND [==[${CMAKE_COMMAND}]==])\n"
         "set(COURSE_PYTHON_SOURCE_DIR [==[${CMAKE_SOURCE_DIR}]==])\n"
         "set(COURSE_PYTHON_BUILD_DIR [==[${CMAKE_BINARY_DIR}]==])\n"
         "include([==[${CMAKE_CURRENT_FUNCTION_LIST_DIR}/CoursePythonEnvironment.cmake]==])\n")
  endif()
  set_property(DIRECTORY "${CMAKE_SOURCE_DIR}" APPEND PROPERTY TEST_INCLUDE_FILES "${script}")
endfunction()
_course_write_environment_check()

# Finds a Python that can import torch, once per configure (and reuses the previous
# configure's answer while COURSE_PYTHON and the environment are unchanged: importing torch
# takes seconds).
# Sets the global properties COURSE_TORCH_PYTHON (empty when none has torch) and
# COURSE_ANY_PYTHON (an interpreter to run the runner with even so).
function(_course_find_torch_python)
  get_property(searched GLOBAL PROPERTY COURSE_TORCH_PYTHON_SEARCHED)
  if(searched)
    return()
  endif()
  set_property(GLOBAL PROPERTY COURSE_TORCH_PYTHON_SEARCHED TRUE)

  find_program(_course_path_python3 NAMES python3 python NO_CACHE)
  # The learner's active environment first (a virtual environment or conda, where a CUDA
  # PyTorch usually lives), then python3 on PATH, then the system's.
  set(environments "")
  foreach(variable IN ITEMS VIRTUAL_ENV CONDA_PREFIX)
    if(DEFINED ENV{${variable}} AND NOT "$ENV{${variable}}" STREQUAL "")
      list(APPEND environments "$ENV{${variable}}/bin/python3")
    endif()
  endforeach()
  set(candidates "")
  foreach(candidate IN ITEMS "${COURSE_PYTHON}" ${environments} "${_course_path_python3}"
                             "${Python3_EXECUTABLE}" /usr/bin/python3 /usr/local/bin/python3)
    if(candidate AND EXISTS "${candidate}")
      list(APPEND candidates "${candidate}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES candidates)
  set(any_python "")
  if(candidates)
    list(GET candidates 0 any_python)
  endif()
  set_property(GLOBAL PROPERTY COURSE_ANY_PYTHON "${any_python}")

  # The answer depends on COURSE_PYTHON and on the environment active at configure time.
  _course_python_key(key)
  if(COURSE_TORCH_PYTHON_FOUND AND EXISTS "${COURSE_TORCH_PYTHON_FOUND}"
     AND "${COURSE_TORCH_PYTHON_KEY}" STREQUAL "${key}")
    set_property(GLOBAL PROPERTY COURSE_TORCH_PYTHON "${COURSE_TORCH_PYTHON_FOUND}")
    message(STATUS "Python tests: ${COURSE_TORCH_PYTHON_FOUND} (${COURSE_TORCH_PYTHON_ABOUT})")
    return()
  endif()

  # Prints e.g. "torch 2.4.0, CUDA 12.4, pytest" or "torch 1.13.1, no CUDA, unittest".
  set(probe "import importlib.util, torch; print('torch ' + torch.__version__ + ', ' + ('CUDA ' + torch.version.cuda if torch.version.cuda else 'no CUDA') + ', ' + ('pytest' if importlib.util.find_spec('pytest') else 'unittest'))")
  set(chosen "")
  set(chosen_about "")
  foreach(candidate IN LISTS candidates)
    execute_process(COMMAND "${candidate}" -c "${probe}"
                    RESULT_VARIABLE result OUTPUT_VARIABLE about ERROR_QUIET
                    OUTPUT_STRIP_TRAILING_WHITESPACE TIMEOUT 120)
    if(result EQUAL 0 AND NOT chosen)
      set(chosen "${candidate}")
      set(chosen_about "${about}")
      # A COURSE_PYTHON you set wins, with or without CUDA: it is your choice.
      if(candidate STREQUAL COURSE_PYTHON)
        break()
      endif()
    endif()
    # A PyTorch built with CUDA wins over an earlier CPU-only one.
    if(result EQUAL 0 AND about MATCHES ", CUDA ")
      set(chosen "${candidate}")
      set(chosen_about "${about}")
      break()
    endif()
    if(NOT result EQUAL 0 AND candidate STREQUAL COURSE_PYTHON)
      message(WARNING "COURSE_PYTHON=${COURSE_PYTHON} cannot import torch; looking for another Python")
    endif()
  endforeach()
  if(chosen)
    set(COURSE_TORCH_PYTHON_FOUND "${chosen}" CACHE INTERNAL "Python with torch")
    set(COURSE_TORCH_PYTHON_KEY "${key}" CACHE INTERNAL "COURSE_PYTHON and environment it was found for")
    set(COURSE_TORCH_PYTHON_ABOUT "${chosen_about}" CACHE INTERNAL "its torch version and test runner")
    set_property(GLOBAL PROPERTY COURSE_TORCH_PYTHON "${chosen}")
    message(STATUS "Python tests: ${chosen} (${chosen_about})")
    if(chosen_about MATCHES "no CUDA")
      _course_cuda_torch_command("${chosen}" install)
      set(where "in a virtual or conda environment and activate it")
      foreach(variable IN ITEMS VIRTUAL_ENV CONDA_PREFIX)
        if(NOT "$ENV{${variable}}" STREQUAL "" AND chosen MATCHES "^$ENV{${variable}}/")
          set(where "into this environment (${variable}=$ENV{${variable}}) in place of this one")
          # pip keeps an installed torch ("already satisfied") unless it goes first.
          set(install "python3 -m pip uninstall -y torch && ${install}")
        endif()
      endforeach()
      message(STATUS "Python tests: this PyTorch has no CUDA, so the CUDA tests (m1.05 on) will "
                     "report themselves skipped. For them, install a CUDA PyTorch ${where}: "
                     "${install}. The next ctest picks it.")
    endif()
    return()
  endif()
  unset(COURSE_TORCH_PYTHON_FOUND CACHE)
  set_property(GLOBAL PROPERTY COURSE_TORCH_PYTHON "")
  string(REPLACE ";" ", " tried "${candidates}")
  set(install "python3 -m pip install torch")
  if(any_python)
    _course_cuda_torch_command("${any_python}" install)
  endif()
  message(STATUS "Python tests: no Python with PyTorch found (tried: ${tried}); they will "
                 "report themselves skipped. Install a CUDA PyTorch in a virtual or conda "
                 "environment and activate it (${install}; the next ctest picks it), or "
                 "Debian/Ubuntu's python3-torch (CPU only), or configure with "
                 "-DCOURSE_PYTHON=/path/to/python3.")
endfunction()

# The "class SomethingTest(" names in one test file (a new class re-runs the configure step).
function(_course_python_test_classes test_path out_var)
  if(NOT EXISTS "${test_path}")
    message(FATAL_ERROR "course_add_python_tests: ${test_path} does not exist")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${test_path}")
  file(STRINGS "${test_path}" class_lines REGEX "^class [A-Za-z_][A-Za-z0-9_]*Test\\(")
  if(NOT class_lines)
    message(FATAL_ERROR "course_add_python_tests: ${test_path} has no class *Test(...)")
  endif()
  set(classes "")
  foreach(line IN LISTS class_lines)
    string(REGEX REPLACE "^class ([A-Za-z0-9_]+)\\(.*$" "\\1" class "${line}")
    list(APPEND classes "${class}")
  endforeach()
  set(${out_var} "${classes}" PARENT_SCOPE)
endfunction()

# The interpreter for the Python tests, and the runner's --require arguments for REQUIRES.
function(_course_python_command out_var)
  _course_find_torch_python()
  get_property(python GLOBAL PROPERTY COURSE_TORCH_PYTHON)
  if(NOT python)
    get_property(python GLOBAL PROPERTY COURSE_ANY_PYTHON)
  endif()
  if(python)
    file(WRITE "${CMAKE_BINARY_DIR}/course_python/interpreter.txt" "${python}\n")
  endif()
  set(${out_var} "${python}" PARENT_SCOPE)
endfunction()

# One ctest test: one class of one file, for one implementation.
function(_course_python_test name python test_path class impl labels require_args)
  if(python)
    add_test(NAME "${name}"
             COMMAND "${python}" "${COURSE_PYTHON_RUNNER}" ${require_args} "${test_path}" "${class}"
             WORKING_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}")
  else()
    add_test(NAME "${name}"
             COMMAND "${CMAKE_COMMAND}" -E echo
                     "SKIPPED: no Python interpreter found; install python3 and PyTorch")
    set_tests_properties("${name}" PROPERTIES SKIP_REGULAR_EXPRESSION "SKIPPED: ")
  endif()
  set_tests_properties("${name}" PROPERTIES
    LABELS "${labels}"
    SKIP_RETURN_CODE ${COURSE_PYTHON_SKIP_CODE}
    # The first test of a build compiles the extension (a minute or two with nvcc).
    TIMEOUT 900
    ENVIRONMENT "COURSE_IMPL=${impl};COURSE_BUILD_DIR=${CMAKE_BINARY_DIR};PYTHONPATH=${COURSE_PYTHON_PATH};TORCH_EXTENSIONS_DIR=${CMAKE_BINARY_DIR}/torch_extensions;PYTHONDONTWRITEBYTECODE=1")
endfunction()

function(course_add_python_tests)
  cmake_parse_arguments(PY "" "" "TESTS;SOURCES;REQUIRES" ${ARGN})
  # Nothing to compile ahead: Python builds the extension when the tests run.
  course_begin_exercise(course_add_python_tests PY TESTS SOURCES)
  if(NOT PY_REQUIRES)
    set(PY_REQUIRES torch)
  endif()
  _course_python_command(python)
  set(require_args "")
  foreach(module IN LISTS PY_REQUIRES)
    list(APPEND require_args --require ${module})
  endforeach()

  foreach(test_file IN LISTS PY_TESTS)
    set(test_path "${CMAKE_CURRENT_SOURCE_DIR}/${test_file}")
    _course_python_test_classes("${test_path}" classes)
    foreach(class IN LISTS classes)
      foreach(impl exercise solution)
        set(labels "${month};${id};${impl};python")
        if(class MATCHES "Cuda")
          list(APPEND labels gpu)
        elseif(impl STREQUAL "solution")
          list(APPEND labels cpu)
        endif()
        _course_python_test("${impl}/${id}/${class}" "${python}" "${test_path}" "${class}"
                            "${impl}" "${labels}" "${require_args}")
      endforeach()
    endforeach()
  endforeach()
endfunction()

function(course_add_harness_python_tests)
  cmake_parse_arguments(PY "" "" "TESTS" ${ARGN})
  _course_python_command(python)
  foreach(test_file IN LISTS PY_TESTS)
    set(test_path "${CMAKE_CURRENT_SOURCE_DIR}/${test_file}")
    _course_python_test_classes("${test_path}" classes)
    foreach(class IN LISTS classes)
      if(class MATCHES "Cuda")
        set(labels "harness;python;solution;gpu")
      else()
        set(labels "harness;python;cpu")
      endif()
      _course_python_test("harness/python/${class}" "${python}" "${test_path}" "${class}"
                          solution "${labels}" "--require;torch")
    endforeach()
  endforeach()
endfunction()
