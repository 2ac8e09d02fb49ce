// Benchmark for exercise m2.07: the tensor cores against cuBLAS, and against the float32
// SGEMM of m2.05.
//
// Two tables, one per kernel, per square size n (M = N = K = n), rows in the order they run:
//   wmma_simple/cublas_fp16/n:...       cuBLAS (cublasGemmEx): float16 A and B, float32 C
//                                       and accumulation, tensor cores: the baseline
//   wmma_simple/step_m2_05_register_tiling/n:...
//                                       m2.05's float32 SGEMM (the CUDA cores) on the same
//                                       values as floats, when m2.05 is built
//   wmma_simple/solution/n:...          the reference part 1
//   wmma_simple/exercise/n:...          your part 1
// and the same rows for wmma_gemm (part 2). Every row checks its result against a float64
// reference (sampled rows) before it is timed; cublas_pct is the share of cuBLAS measured
// in the same run. The shared benchmark is course/gemm_benchmark.h.
#include <string>
#include <utility>
#include <vector>

#include "course/benchmark.h"
#include "course/gemm_benchmark.h"
#include "wmma_gemm.h"

#if defined(COURSE_HAVE_REGISTER_TILING)
#include "register_tiling.h"  // m2.05, the previous step
#endif

namespace {

std::vector<std::pair<std::string, course::GemmFn>> previous_step() {
#if defined(COURSE_HAVE_REGISTER_TILING)
  return {{"step_m2_05_register_tiling", course::solution::sgemm_2d_register_tile}};
#else
  return {};
#endif
}

}  // namespace

int main(int argc, char** argv) {
  course::bench::register_fp16_gemm_rows(
      "wmma_simple", previous_step(),
      {{"solution", course::solution::wmma_gemm_simple},
       {"exercise", course::exercise::wmma_gemm_simple}},
      course::bench::gemm_benchmark_sizes());
  course::bench::register_fp16_gemm_rows(
      "wmma_gemm", previous_step(),
      {{"solution", course::solution::wmma_gemm}, {"exercise", course::exercise::wmma_gemm}},
      course::bench::gemm_benchmark_sizes());
  return course::bench::run_benchmarks(argc, argv);
}
