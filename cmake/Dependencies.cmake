# GoogleTest and Google Benchmark.
#
# First choice: the copies installed on the system (Debian/Ubuntu: googletest,
# libgtest-dev, libgmock-dev, libbenchmark-dev; scripts/install-deps.sh installs them).
# Fallback: download them with FetchContent, for learners whose system has no packages.
# Turn the fallback off with -DCOURSE_ALLOW_DOWNLOADS=OFF to make a missing package an error.
option(COURSE_ALLOW_DOWNLOADS "Fetch GoogleTest/Google Benchmark if not installed" ON)

include(FetchContent)

# course_fetch(<name> <what> <url> [OPTION...]): the fallback for a package that is not
# installed. Stops with the install hint when downloads are off; otherwise turns the given
# options of the package's build OFF (its tests, its install rules) and fetches it.
function(course_fetch name what url)
  if(NOT COURSE_ALLOW_DOWNLOADS)
    message(FATAL_ERROR "${what} not found. Run scripts/install-deps.sh "
                        "or configure with -DCOURSE_ALLOW_DOWNLOADS=ON.")
  endif()
  message(STATUS "${what} not installed: fetching it")
  foreach(option IN LISTS ARGN)
    set(${option} OFF CACHE BOOL "" FORCE)
  endforeach()
  FetchContent_Declare(${name} URL "${url}")
  FetchContent_MakeAvailable(${name})
endfunction()

find_package(GTest CONFIG QUIET)
if(NOT GTest_FOUND)
  find_package(GTest QUIET)
endif()
if(NOT TARGET GTest::gtest AND EXISTS /usr/src/googletest/CMakeLists.txt)
  # Debian's `googletest` package ships sources only; build them as part of the course.
  add_subdirectory(/usr/src/googletest ${CMAKE_BINARY_DIR}/_deps/googletest EXCLUDE_FROM_ALL)
endif()
if(NOT TARGET GTest::gtest AND NOT TARGET gtest)
  course_fetch(googletest GoogleTest
    https://github.com/google/googletest/archive/refs/tags/v1.14.0.tar.gz INSTALL_GTEST)
endif()
if(NOT TARGET GTest::gtest)
  add_library(GTest::gtest ALIAS gtest)
endif()

find_package(benchmark QUIET)
# The version decides how a benchmark's flags are spelled (common/src/benchmark.cpp).
set(COURSE_BENCHMARK_VERSION "${benchmark_VERSION}")
if(NOT TARGET benchmark::benchmark)
  set(COURSE_BENCHMARK_VERSION 1.8.3)
  course_fetch(benchmark "Google Benchmark"
    https://github.com/google/benchmark/archive/refs/tags/v${COURSE_BENCHMARK_VERSION}.tar.gz
    BENCHMARK_ENABLE_TESTING BENCHMARK_ENABLE_INSTALL)
endif()

include(GoogleTest)

find_package(Python3 COMPONENTS Interpreter)
