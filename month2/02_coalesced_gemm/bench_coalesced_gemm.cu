// Benchmark for exercise m2.02: what does coalescing buy over the naive mapping?
//
// Rows, per square size n (M = N = K = n), in the order they run:
//   sgemm/cublas/n:...                  cuBLAS SGEMM in float32: the baseline
//   sgemm/step_m2_01_naive_gemm/n:...   the previous step's reference solution
//   sgemm/solution/n:...                the reference solution of this step
//   sgemm/exercise/n:...                your kernel
// Compare TFLOPS between rows; cublas_pct is the share of cuBLAS and speedup the ratio to
// the naive step, both measured in this same run. The same arithmetic with the same
// number of loads runs several times faster: only the order of the threads changed.
// The shared benchmark (verify first, then time with the L2 cache flushed) is
// course/gemm_benchmark.h.
#include "course/benchmark.h"
#include "course/gemm_benchmark.h"
#include "coalesced_gemm.h"
#include "naive_gemm.h"

int main(int argc, char** argv) {
  course::bench::register_gemm_rows("sgemm",
                                    {{"step_m2_01_naive_gemm", course::solution::naive_gemm},
                                     {"solution", course::solution::coalesced_gemm},
                                     {"exercise", course::exercise::coalesced_gemm}},
                                    course::bench::gemm_benchmark_sizes(),
                                    /*include_cublas=*/true);
  return course::bench::run_benchmarks(argc, argv);
}
