# GoogleTest and Google Benchmark.
#
# First choice: the copies installed on the system (Debian/Ubuntu: googletest,
# libgtest-dev, libgmock-dev, libbenchmark-dev; scripts/install-deps.sh installs them).
# Fallback: download them with FetchContent, for learners whose system has no packages.
# Turn the fallback off with -DCOURSE_ALLOW_DOWNLOADS=OFF to make a missing package an error.
option(COURSE_ALLOW_DOWNLOADS "Fetch GoogleTest/Google Benchmark if not installed" ON)

include(FetchContent)

find_package(GTest CONFIG QUIET)
if(NOT GTest_FOUND)
  find_package(GTest QUIET)
endif()
if(NOT TARGET GTest::gtest AND EXISTS /usr/src/googletest/CMakeLists.txt)
  # Debian's `googletest` package ships sources only; build them as part of the course.
  add_subdirectory(/usr/src/googletest ${CMAKE_BINARY_DIR}/_deps/googletest EXCLUDE_FROM_ALL)
endif()
if(NOT TARGET GTest::gtest AND NOT TARGET gtest)
  if(NOT COURSE_ALLOW_DOWNLOADS)
    message(FATAL_ERROR "GoogleTest not found. Run scripts/install-deps.sh "
                        "or configure with -DCOURSE_ALLOW_DOWNLOADS=ON.")
  endif()
  message(STATUS "GoogleTest not installed: fetching it")
  set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
  FetchContent_Declare(googletest
    URL https://github.com/google/googletest/archive/refs/tags/v1.14.0.tar.gz)
  FetchContent_MakeAvailable(googletest)
endif()
if(NOT TARGET GTest::gtest)
  add_library(GTest::gtest ALIAS gtest)
endif()

find_package(benchmark QUIET)
if(NOT TARGET benchmark::benchmark)
  if(NOT COURSE_ALLOW_DOWNLOADS)
    message(FATAL_ERROR "Google Benchmark not found. Run scripts/install-deps.sh "
                        "or configure with -DCOURSE_ALLOW_DOWNLOADS=ON.")
  endif()
  message(STATUS "Google Benchmark not installed: fetching it")
  set(BENCHMARK_ENABLE_TESTING OFF CACHE BOOL "" FORCE)
  set(BENCHMARK_ENABLE_INSTALL OFF CACHE BOOL "" FORCE)
  FetchContent_Declare(benchmark
    URL https://github.com/google/benchmark/archive/refs/tags/v1.8.3.tar.gz)
  FetchContent_MakeAvailable(benchmark)
endif()

include(GoogleTest)

find_package(Python3 COMPONENTS Interpreter)
