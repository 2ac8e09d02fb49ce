// Benchmark for exercise m2.05: how close do register tiles get to cuBLAS?
//
// Two tables, one per kernel, per square size n (M = N = K = n), rows in the order they run:
//   sgemm_1d/cublas/n:...                  cuBLAS SGEMM in float32 (no TF32): the baseline
//   sgemm_1d/step_m2_03_tiled_gemm/n:...   the previous step's reference (when it is built)
//   sgemm_1d/solution/n:...                the reference 1D register tile
//   sgemm_1d/exercise/n:...                your 1D register tile
// and the same four rows for sgemm_2d (the 2D register tile). Compare TFLOPS between rows;
// cublas_pct is the share of cuBLAS in this same run, speedup the gain over m2.03.
// The reference 2D kernel comes within a few percent of cuBLAS at 4096 on an H200;
// README.md says why, and what each part of the kernel is worth. The shared benchmark (verify first, then
// time with the L2 cache flushed) is course/gemm_benchmark.h.
#include <string>
#include <utility>
#include <vector>

#include "course/benchmark.h"
#include "course/gemm_benchmark.h"
#include "register_tiling.h"

#if defined(COURSE_HAVE_TILED_GEMM)
#include "tiled_gemm.h"  // m2.03, the previous step
#endif

namespace {

using Rows = std::vector<std::pair<std::string, course::GemmFn>>;

Rows with_previous_step(Rows rows) {
#if defined(COURSE_HAVE_TILED_GEMM)
  rows.insert(rows.begin(), {"step_m2_03_tiled_gemm", course::solution::tiled_gemm});
#endif
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  course::bench::register_gemm_rows(
      "sgemm_1d",
      with_previous_step({{"solution", course::solution::sgemm_1d_register_tile},
                          {"exercise", course::exercise::sgemm_1d_register_tile}}),
      course::bench::gemm_benchmark_sizes(), /*include_cublas=*/true);
  course::bench::register_gemm_rows(
      "sgemm_2d",
      with_previous_step({{"solution", course::solution::sgemm_2d_register_tile},
                          {"exercise", course::exercise::sgemm_2d_register_tile}}),
      course::bench::gemm_benchmark_sizes(), /*include_cublas=*/true);
  return course::bench::run_benchmarks(argc, argv);
}
