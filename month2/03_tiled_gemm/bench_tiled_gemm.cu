// Benchmark for exercise m2.03: what does reusing tiles from shared memory buy?
//
// Rows, per square size n (M = N = K = n), in the order they run:
//   sgemm/cublas/n:...                      cuBLAS SGEMM in float32: the baseline
//   sgemm/step_m2_02_coalesced_gemm/n:...   the previous step's reference solution
//   sgemm/solution/n:...                    the reference solution of this step
//   sgemm/exercise/n:...                    your kernel
// Compare TFLOPS between rows; cublas_pct is the share of cuBLAS and speedup the ratio to
// the coalesced step, both measured in this same run. README.md says what to expect and
// why the tiled kernel is still far from cuBLAS. The shared benchmark (verify first, then
// time with the L2 cache flushed) is course/gemm_benchmark.h.
#include "course/benchmark.h"
#include "course/gemm_benchmark.h"
#include "coalesced_gemm.h"
#include "tiled_gemm.h"

int main(int argc, char** argv) {
  course::bench::register_gemm_rows("sgemm",
                                    {{"step_m2_02_coalesced_gemm", course::solution::coalesced_gemm},
                                     {"solution", course::solution::tiled_gemm},
                                     {"exercise", course::exercise::tiled_gemm}},
                                    course::bench::gemm_benchmark_sizes(),
                                    /*include_cublas=*/true);
  return course::bench::run_benchmarks(argc, argv);
}
