// Benchmark for exercise m2.01: how fast is one thread per element of C, mapped naively?
//
// Rows, per square size n (M = N = K = n), in the order they run:
//   sgemm/cublas/n:...     cuBLAS SGEMM in float32: the baseline
//   sgemm/solution/n:...   the reference solution
//   sgemm/exercise/n:...   your kernel
// Compare TFLOPS between rows; cublas_pct is the share of cuBLAS in this same run. Expect
// a few percent at best: README.md explains where the time goes. The shared benchmark
// (verify first, then time with the L2 cache flushed) is course/gemm_benchmark.h.
#include "course/benchmark.h"
#include "course/gemm_benchmark.h"
#include "naive_gemm.h"

int main(int argc, char** argv) {
  course::bench::register_gemm_rows("sgemm",
                                    {{"solution", course::solution::naive_gemm},
                                     {"exercise", course::exercise::naive_gemm}},
                                    course::bench::gemm_benchmark_sizes(),
                                    /*include_cublas=*/true);
  return course::bench::run_benchmarks(argc, argv);
}
