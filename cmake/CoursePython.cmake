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
# Which Python runs them: of COURSE_PYTHON (set it with -DCOURSE_PYTHON=/path/to/python3), the
# active virtual environment (VIRTUAL_ENV) or conda environment (CONDA_PREFIX), python3 on
# PATH, the interpreter CMake found, and /usr/bin/python3, the first whose PyTorch is built
# with CUDA, or else the first that can `import torch` (configure says which, and that its
# CUDA tests will be skipped). If none can, the tests are still registered and report themselves
# skipped, with the reason, never passed. Each test runs through a small runner (written to
# <build>/course_python/run_python_tests.py) that uses pytest when that interpreter has it,
# unittest otherwise, and exits with 77 (SKIP_RETURN_CODE) when every test was skipped.

set(COURSE_PYTHON "" CACHE FILEPATH
    "Python interpreter with PyTorch for the Python tests (empty: search for one)")

set(COURSE_PYTHON_SKIP_CODE 77)
set(COURSE_PYTHON_RUNNER "${CMAKE_BINARY_DIR}/course_python/run_python_tests.py")

file(WRITE "${COURSE_PYTHON_RUNNER}" [==[
#!/usr/bin/env python3
"""Runs the test classes of one Python test file for ctest (written by cmake/CoursePython.cmake).

  run_python_tests.py [--require MODULE]... TEST_FILE [CLASS ...]

Exit status: 0 when the tests passed, 1 when a test failed or could not run, 77 when every
test was skipped (ctest's SKIP_RETURN_CODE, so ctest shows them as skipped, not passed).
Uses pytest when this interpreter has it, unittest otherwise.
"""
import argparse
import importlib
import importlib.util
import os
import sys
import traceback
import unittest

SKIPPED = 77


def report_skip(reasons):
    counts = {}
    for reason in reasons:
        reason = reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason
        counts[reason] = counts.get(reason, 0) + 1
    for reason, count in sorted(counts.items()) or [("(no reason given)", 0)]:
        print(f"SKIPPED: {reason}" + (f" ({count} tests)" if count > 1 else ""), flush=True)
    return SKIPPED


class PytestTally:
    """A pytest plugin that counts outcomes, so `all skipped` can be told from `passed`."""

    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.skipped = []

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.failed += 1
        elif report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            self.skipped.append(reason)
        elif report.when == "call" and report.passed:
            self.passed += 1


def run_pytest(pytest, test_file, classes):
    # From the test's folder, so that pytest names tests by file::class::test.
    directory, file_name = os.path.split(os.path.abspath(test_file))
    os.chdir(directory)
    targets = [f"{file_name}::{name}" for name in classes] or [file_name]
    tally = PytestTally()
    # Plugins that would write next to the sources are off; -rsfE lists skips and failures.
    code = pytest.main(["-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                        "-v", "-rsfE", "--tb=short", *targets], plugins=[tally])
    if code == 5:
        print(f"run_python_tests: no tests named {classes} in {test_file}", flush=True)
        return 1
    if code != 0 or tally.failed:
        return 1
    if tally.passed == 0 and tally.skipped:
        return report_skip(tally.skipped)
    return 0


def run_unittest(test_file, classes):
    directory, file_name = os.path.split(os.path.abspath(test_file))
    sys.path.insert(0, directory)
    module = importlib.import_module(os.path.splitext(file_name)[0])
    loader = unittest.TestLoader()
    suite = loader.loadTestsFromNames(classes, module) if classes else loader.loadTestsFromModule(module)
    result = unittest.TextTestRunner(stream=sys.stdout, verbosity=2).run(suite)
    if not result.wasSuccessful():
        return 1
    # A class skipped in setUpClass counts as one skip and no test run.
    if result.skipped and len(result.skipped) >= result.testsRun:
        return report_skip(reason for _, reason in result.skipped)
    if result.testsRun == 0:
        print(f"run_python_tests: no tests named {classes} in {test_file}", flush=True)
        return 1
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--require", action="append", default=[], metavar="MODULE",
                        help="a module the tests need; without it they are skipped")
    parser.add_argument("test_file")
    parser.add_argument("classes", nargs="*")
    args = parser.parse_args()

    for module in args.require:
        try:
            importlib.import_module(module)
        except Exception as error:  # ImportError, or a broken install
            return report_skip([
                f"these tests need the Python module '{module}', which {sys.executable} cannot "
                f"import ({type(error).__name__}: {error}). Install it for that interpreter "
                f"(PyTorch on Debian/Ubuntu: apt-get install python3-torch), "
                f"or point the build at a Python that has it: "
                f"cmake -B <build> -DCOURSE_PYTHON=/path/to/python3"])

    versions = [f"python {sys.version.split()[0]} ({sys.executable})"]
    if "torch" in sys.modules:
        versions.append(f"torch {sys.modules['torch'].__version__}")
    pytest = None
    if importlib.util.find_spec("pytest") is not None:
        import pytest
    versions.append("pytest" if pytest else "unittest")
    print("run_python_tests: " + ", ".join(versions), flush=True)

    try:
        if pytest is not None:
            return run_pytest(pytest, args.test_file, args.classes)
        return run_unittest(args.test_file, args.classes)
    except Exception:
        traceback.print_exc()
        return 1


if __name__ == "__main__":
    sys.exit(main())
]==])

# Finds a Python that can import torch, once per configure (and reuses the previous
# configure's answer while COURSE_PYTHON is unchanged: importing torch takes seconds).
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
  set(key "${COURSE_PYTHON};$ENV{VIRTUAL_ENV};$ENV{CONDA_PREFIX}")
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
      message(STATUS "Python tests: this PyTorch has no CUDA, so the CUDA tests (m1.05) will "
                     "report themselves skipped. For them, activate an environment with a CUDA "
                     "PyTorch and configure again, or -DCOURSE_PYTHON=/path/to/python3")
    endif()
    return()
  endif()
  unset(COURSE_TORCH_PYTHON_FOUND CACHE)
  set_property(GLOBAL PROPERTY COURSE_TORCH_PYTHON "")
  string(REPLACE ";" ", " tried "${candidates}")
  message(STATUS "Python tests: no Python with PyTorch found (tried: ${tried}); they will "
                 "report themselves skipped. Install PyTorch (Debian/Ubuntu: python3-torch) or "
                 "configure with -DCOURSE_PYTHON=/path/to/python3.")
endfunction()

function(course_add_python_tests)
  cmake_parse_arguments(PY "" "" "TESTS;SOURCES;REQUIRES" ${ARGN})
  if(NOT PY_TESTS)
    message(FATAL_ERROR "course_add_python_tests: TESTS is required")
  endif()
  if(NOT PY_REQUIRES)
    set(PY_REQUIRES torch)
  endif()
  course_exercise_id(id month tag)
  # Nothing to compile ahead: Python builds the extension when the tests run.
  course_exercise_all_target(${id})
  file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}" "${CMAKE_CURRENT_SOURCE_DIR}")
  foreach(src IN LISTS PY_SOURCES)
    if(NOT EXISTS "${PROJECT_SOURCE_DIR}/solutions/${rel}/${src}")
      message(FATAL_ERROR "${rel}/${src} has no solution twin at solutions/${rel}/${src}")
    endif()
  endforeach()

  _course_find_torch_python()
  get_property(python GLOBAL PROPERTY COURSE_TORCH_PYTHON)
  if(NOT python)
    get_property(python GLOBAL PROPERTY COURSE_ANY_PYTHON)
  endif()
  set(require_args "")
  foreach(module IN LISTS PY_REQUIRES)
    list(APPEND require_args --require ${module})
  endforeach()

  foreach(test_file IN LISTS PY_TESTS)
    set(test_path "${CMAKE_CURRENT_SOURCE_DIR}/${test_file}")
    if(NOT EXISTS "${test_path}")
      message(FATAL_ERROR "course_add_python_tests: ${rel}/${test_file} does not exist")
    endif()
    # A new test class in the file re-runs the configure step, which registers it.
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${test_path}")
    file(STRINGS "${test_path}" class_lines REGEX "^class [A-Za-z_][A-Za-z0-9_]*Test\\(")
    if(NOT class_lines)
      message(FATAL_ERROR "course_add_python_tests: ${rel}/${test_file} has no class *Test(...)")
    endif()
    foreach(line IN LISTS class_lines)
      string(REGEX REPLACE "^class ([A-Za-z0-9_]+)\\(.*$" "\\1" class "${line}")
      foreach(impl exercise solution)
        set(name "${impl}/${id}/${class}")
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
        set(labels "${month};${id};${impl};python")
        if(class MATCHES "Cuda")
          list(APPEND labels gpu)
        elseif(impl STREQUAL "solution")
          list(APPEND labels cpu)
        endif()
        set_tests_properties("${name}" PROPERTIES
          LABELS "${labels}"
          SKIP_RETURN_CODE ${COURSE_PYTHON_SKIP_CODE}
          # The first test of a build compiles the extension (a minute or two with nvcc).
          TIMEOUT 900
          ENVIRONMENT "COURSE_IMPL=${impl};TORCH_EXTENSIONS_DIR=${CMAKE_BINARY_DIR}/torch_extensions;PYTHONDONTWRITEBYTECODE=1")
      endforeach()
    endforeach()
  endforeach()
endfunction()
