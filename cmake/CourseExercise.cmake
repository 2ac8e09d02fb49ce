# course_add_exercise: one call per exercise folder makes everything it needs.
#
#   course_add_exercise(
#     SOURCES    vector_add.cu          # the files you edit; each has a twin in solutions/
#     TESTS      test_vector_add.cu     # GoogleTest sources, run against both versions
#     BENCHMARKS bench_vector_add.cu    # Google Benchmark sources, built once
#     COMPARES_WITH m1_01_vector_add)   # optional: earlier exercises the benchmark times
#
# COMPARES_WITH links each named exercise's reference solution (and so its interface
# header) to the benchmark, which defines COURSE_HAVE_<NAME>=1 for it (NAME is the id
# without its mN_NN_ prefix, in capitals: COURSE_HAVE_VECTOR_ADD), so a benchmark can
# time the previous step as rows step_<id>. An exercise that is not built is left out.
#
# The month, number and name come from the folder: month1/01_vector_add gives the id
# m1_01_vector_add. For that id it creates
#   m1_01_vector_add_exercise        library from month1/01_vector_add/<SOURCES>
#   m1_01_vector_add_solution        library from solutions/month1/01_vector_add/<SOURCES>
#   m1_01_vector_add_exercise_test   the TESTS linked to your version
#   m1_01_vector_add_solution_test   the same TESTS linked to the reference solution
#   m1_01_vector_add_bench           the BENCHMARKS, linked to both, so one run times both
#   m1_01_vector_add_exercise_all    your library, its tests and the benchmark: what
#                                    `./course grade m1_01` builds, and nothing else
#   m1_01_vector_add_solution_all    the reference library and its tests: what
#                                    `./course test m1_01` builds (a Python exercise's
#                                    two are empty: its tests build their extension)
# Every GoogleTest case becomes a ctest test named
#   <exercise|solution>/m1_01_vector_add/<Suite>.<Case>
# with the labels month1, m1_01_vector_add, exercise|solution and gpu, so
#   ctest -L exercise            grades your work
#   ctest -L m1_01_vector_add    runs one exercise
# A test that finds no GPU reports itself skipped (GTEST_SKIP), and ctest shows it as skipped.
#
# The two versions define the same functions. The build compiles each with COURSE_IMPL set
# to `exercise` or `solution`, and the sources put their functions in namespace
# course::COURSE_IMPL, so both can live in one benchmark binary (see common/include/course/impl.h).

add_custom_target(course_exercises)   # everything `./course grade` needs
add_custom_target(course_solutions)   # the reference solutions and their tests
add_custom_target(course_benchmarks)  # every benchmark binary

# <id>_exercise_all: everything grading one exercise needs; <id>_solution_all: everything its
# reference tests need. Building one exercise at a time keeps a grade to seconds, and a
# compile error in one exercise never blocks another.
function(course_exercise_all_target id)
  foreach(impl exercise solution)
    if(NOT TARGET ${id}_${impl}_all)
      add_custom_target(${id}_${impl}_all)
    endif()
  endforeach()
endfunction()

# Gives every test gtest_discover_tests finds in <target> the given labels.
# (Its own PROPERTIES argument flattens a list of labels, so the labels are set by a
# script that ctest runs right after the one that declares the discovered tests.)
# GTEST_SKIP() already shows as "skipped" in ctest: gtest_discover_tests sets that up.
function(course_label_discovered_tests target labels)
  set(script "${CMAKE_CURRENT_BINARY_DIR}/${target}_labels.cmake")
  file(WRITE "${script}"
    "if(DEFINED ${target}_TESTS)\n"
    "  set_tests_properties(\${${target}_TESTS} PROPERTIES LABELS \"${labels}\")\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${script}")
endfunction()

function(course_exercise_id out_id out_month)
  file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}" "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT rel MATCHES "^month([0-9]+)/([0-9][0-9])_([a-z0-9_]+)$")
    message(FATAL_ERROR "course_add_exercise: ${rel} is not a folder monthN/NN_name")
  endif()
  set(${out_id} "m${CMAKE_MATCH_1}_${CMAKE_MATCH_2}_${CMAKE_MATCH_3}" PARENT_SCOPE)
  set(${out_month} "month${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

# Whose earlier kernels an exercise built on earlier exercises uses (m3.04 calls your m2.05
# SGEMM): `exercise` (yours, the default) or `solution` (the reference's). It is the setting
# the Python exercises read from the environment at every run (COURSE_EARLIER_KERNELS=solution,
# course_harness/paths.py); CMake reads it when it configures, so that m3.04 links the m2.05
# library it names:
#   - at every configure the environment's value, when set, wins over the cache, so
#     `COURSE_EARLIER_KERNELS=solution cmake -B build` switches and says so; without it,
#     `cmake -B build -DCOURSE_EARLIER_KERNELS=solution` sets it, and the cache keeps it;
#   - ./course configures again before it builds whenever the build's value is not the
#     environment's (`exercise` when unset): tools/course.py, configure_command();
#   - ctest says so, before any test runs, when the environment asks for the other value than
#     the build was configured with: a plain `cmake --build` does not configure again.
string(STRIP "$ENV{COURSE_EARLIER_KERNELS}" _course_earlier_env)
set(_course_earlier_doc
    "whose earlier kernels your exercises build on: exercise (yours) or solution (the reference)")
if(NOT _course_earlier_env STREQUAL "" AND NOT _course_earlier_env MATCHES "^(exercise|solution)$")
  message(FATAL_ERROR "the environment's COURSE_EARLIER_KERNELS must be exercise or solution, "
                      "got ${_course_earlier_env}")
elseif(NOT _course_earlier_env STREQUAL "")
  if(DEFINED CACHE{COURSE_EARLIER_KERNELS}
     AND NOT "$CACHE{COURSE_EARLIER_KERNELS}" STREQUAL _course_earlier_env)
    message(STATUS "COURSE_EARLIER_KERNELS: ${_course_earlier_env} (the environment's; the build "
                   "had $CACHE{COURSE_EARLIER_KERNELS})")
  endif()
  set(COURSE_EARLIER_KERNELS "${_course_earlier_env}" CACHE STRING "${_course_earlier_doc}" FORCE)
else()
  set(COURSE_EARLIER_KERNELS "exercise" CACHE STRING "${_course_earlier_doc}")
endif()
set_property(CACHE COURSE_EARLIER_KERNELS PROPERTY STRINGS exercise solution)
if(NOT COURSE_EARLIER_KERNELS MATCHES "^(exercise|solution)$")
  message(FATAL_ERROR "COURSE_EARLIER_KERNELS must be exercise or solution, got ${COURSE_EARLIER_KERNELS}")
endif()
# The check ctest reads before any test (written at every configure, with its value).
file(CONFIGURE OUTPUT "${CMAKE_BINARY_DIR}/course_earlier_kernels_check.cmake" @ONLY CONTENT [==[
# Written by cmake/CourseExercise.cmake at configure time; ctest includes it before any test.
string(STRIP "$ENV{COURSE_EARLIER_KERNELS}" _course_earlier_now)
if(NOT _course_earlier_now STREQUAL "" AND NOT _course_earlier_now STREQUAL "@COURSE_EARLIER_KERNELS@")
  message("COURSE_EARLIER_KERNELS=${_course_earlier_now}, but this build was configured with "
          "@COURSE_EARLIER_KERNELS@, and CMake reads it when it configures: m3.04's exercise tests "
          "run with the @COURSE_EARLIER_KERNELS@ m2.05 SGEMM (the Python exercises follow the "
          "variable). Configure and build again (./course grade and ./course test do it themselves):")
  message("  cmake @CMAKE_BINARY_DIR@ && cmake --build @CMAKE_BINARY_DIR@")
endif()
]==])
set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES
             "${CMAKE_BINARY_DIR}/course_earlier_kernels_check.cmake")

# Every file the learner edits has a twin under solutions/: stops the configure step when
# one of FILES (relative to this exercise's folder) has none.
function(course_require_solution_twins)
  file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}" "${CMAKE_CURRENT_SOURCE_DIR}")
  foreach(src IN LISTS ARGN)
    if(NOT EXISTS "${PROJECT_SOURCE_DIR}/solutions/${rel}/${src}")
      message(FATAL_ERROR "${rel}/${src} has no solution twin at solutions/${rel}/${src}")
    endif()
  endforeach()
endfunction()

# The start that every way of registering an exercise shares, after cmake_parse_arguments
# with `prefix`: the `required` argument must be given; sets `id` and `month` in the caller;
# makes the <id>_exercise_all target; checks that the files of the `twins` argument have
# their solution twins.
macro(course_begin_exercise caller prefix required twins)
  if(NOT ${prefix}_${required})
    message(FATAL_ERROR "${caller}: ${required} is required")
  endif()
  course_exercise_id(id month)
  course_exercise_all_target(${id})
  course_require_solution_twins(${${prefix}_${twins}})
endmacro()

function(course_add_exercise)
  cmake_parse_arguments(EX "" "" "SOURCES;TESTS;BENCHMARKS;COMPARES_WITH" ${ARGN})
  course_begin_exercise(course_add_exercise EX SOURCES SOURCES)
  file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}" "${CMAKE_CURRENT_SOURCE_DIR}")
  set(solution_dir "${PROJECT_SOURCE_DIR}/solutions/${rel}")

  foreach(impl exercise solution)
    set(impl_sources "")
    foreach(src IN LISTS EX_SOURCES)
      if(impl STREQUAL "exercise")
        list(APPEND impl_sources "${CMAKE_CURRENT_SOURCE_DIR}/${src}")
      else()
        list(APPEND impl_sources "${solution_dir}/${src}")
      endif()
    endforeach()

    set(lib ${id}_${impl})
    add_library(${lib} STATIC ${impl_sources})
    target_include_directories(${lib} PUBLIC "${CMAKE_CURRENT_SOURCE_DIR}")
    target_compile_definitions(${lib} PRIVATE COURSE_IMPL=${impl})
    target_link_libraries(${lib} PUBLIC course_common)
    add_dependencies(course_${impl}s ${lib})
    add_dependencies(${id}_${impl}_all ${lib})

    if(EX_TESTS)
      add_executable(${lib}_test ${EX_TESTS})
      target_link_libraries(${lib}_test PRIVATE ${lib} course_test_support)
      target_compile_definitions(${lib}_test PRIVATE COURSE_IMPL=${impl})
      add_dependencies(course_${impl}s ${lib}_test)
      add_dependencies(${id}_${impl}_all ${lib}_test)
      gtest_discover_tests(${lib}_test
        TEST_PREFIX "${impl}/${id}/"
        DISCOVERY_TIMEOUT 60
        PROPERTIES TIMEOUT 300)
      course_label_discovered_tests(${lib}_test "${month};${id};${impl};gpu")
    endif()
  endforeach()

  if(EX_BENCHMARKS)
    add_executable(${id}_bench ${EX_BENCHMARKS})
    # The benchmark compares both versions, so it is built from neither's COURSE_IMPL.
    target_link_libraries(${id}_bench PRIVATE ${id}_exercise ${id}_solution course_bench_support)
    add_dependencies(course_benchmarks ${id}_bench)
    add_dependencies(${id}_exercise_all ${id}_bench)
    foreach(previous IN LISTS EX_COMPARES_WITH)
      if(TARGET ${previous}_solution)
        string(REGEX REPLACE "^m[0-9]+_[0-9][0-9]_" "" name "${previous}")
        string(TOUPPER "${name}" name)
        target_link_libraries(${id}_bench PRIVATE ${previous}_solution)
        target_compile_definitions(${id}_bench PRIVATE COURSE_HAVE_${name}=1)
      endif()
    endforeach()
  elseif(EX_COMPARES_WITH)
    message(FATAL_ERROR "course_add_exercise: COMPARES_WITH needs BENCHMARKS")
  endif()
endfunction()

# course_add_sass_check(<check name> SCRIPT <checker.py> [ARGS <arguments...>])
#
# A technique check on the machine code (SASS) of an exercise's two libraries: the checker
# reads `cuobjdump -sass` of the library given as --library (see tools/sass.py), so it
# needs no GPU. It adds, in the calling exercise's folder,
#   solution/<id>/<check name>   labels cpu, solution: runs with the CPU tests, and in CI
#   exercise/<id>/<check name>   label exercise: runs when you grade, and fails until the
#                                TODOs it looks at are done
# Without cuobjdump a check reports itself skipped (exit code 77).
find_program(COURSE_CUOBJDUMP cuobjdump HINTS "${CUDAToolkit_BIN_DIR}")
function(course_add_sass_check name)
  cmake_parse_arguments(CHECK "" "SCRIPT" "ARGS" ${ARGN})
  if(NOT Python3_Interpreter_FOUND)
    return()
  endif()
  course_exercise_id(id month)
  foreach(impl solution exercise)
    add_test(NAME ${impl}/${id}/${name}
      COMMAND ${Python3_EXECUTABLE} ${CHECK_SCRIPT} --library $<TARGET_FILE:${id}_${impl}>
              --cuobjdump "${COURSE_CUOBJDUMP}" ${CHECK_ARGS})
  endforeach()
  set_tests_properties(solution/${id}/${name} PROPERTIES
    SKIP_RETURN_CODE 77 LABELS "cpu;solution;${month};${id}")
  set_tests_properties(exercise/${id}/${name} PROPERTIES
    SKIP_RETURN_CODE 77 LABELS "exercise;${month};${id}")
endfunction()

# Every numbered folder under a month with a CMakeLists.txt is an exercise, in order.
function(course_add_month_exercises)
  file(GLOB children RELATIVE "${CMAKE_CURRENT_SOURCE_DIR}" "${CMAKE_CURRENT_SOURCE_DIR}/[0-9][0-9]_*")
  list(SORT children)
  foreach(child IN LISTS children)
    if(EXISTS "${CMAKE_CURRENT_SOURCE_DIR}/${child}/CMakeLists.txt")
      add_subdirectory(${child})
    endif()
  endforeach()
endfunction()
