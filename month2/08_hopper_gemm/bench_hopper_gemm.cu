// Benchmark for exercise m2.08: wgmma and the TMA against cuBLAS, in float16 and bfloat16.
//
// Two tables per square size n (M = N = K = n), rows in the order they run:
//   hopper_gemm/cublas_fp16/n:...   cuBLAS (cublasGemmEx): float16 A and B, float32 C and
//                                   accumulation: the baseline, which on a Hopper GPU runs
//                                   wgmma and TMA kernels itself
//   hopper_gemm/step_m2_07_wmma/n:...   m2.07's mma_gemm (mma.sync), when m2.07 is built
//   hopper_gemm/solution/n:...      the reference
//   hopper_gemm/exercise/n:...      yours
// and hopper_gemm_bf16/... the same in bfloat16 (cublas_bf16; the mma.sync step is fp16
// only, so that table has none). Every row checks its result against a float64 reference
// (sampled rows) before it is timed. The shared benchmark is course/gemm_benchmark.h.
//
// wgmma and the TMA exist on a Hopper GPU only (compute capability 9.0: H100, H200). On any
// other GPU the launcher refuses, and the solution and exercise rows are listed as "not
// runnable on this GPU", with that reason, and not timed; cuBLAS and the mma.sync step are
// timed as usual, so the table still shows what this GPU's tensor cores do.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>
#include <utility>
#include <vector>

#include "course/benchmark.h"
#include "course/gemm_benchmark.h"
#include "hopper_gemm.h"

#if defined(COURSE_HAVE_WMMA)
#include "wmma_gemm.h"  // m2.07, the previous step
#endif

int main(int argc, char** argv) {
  const std::vector<int> sizes = {1024, 2048, 4096, 8192};
  std::vector<std::pair<std::string, course::GemmFnOf<__half>>> fp16_rows;
#if defined(COURSE_HAVE_WMMA)
  fp16_rows.emplace_back("step_m2_07_wmma", course::solution::mma_gemm);
#endif
  fp16_rows.emplace_back("solution", course::solution::hopper_gemm);
  fp16_rows.emplace_back("exercise", course::exercise::hopper_gemm);
  course::bench::register_tensor_core_gemm_rows<__half>("hopper_gemm", {}, fp16_rows, sizes);
  course::bench::register_tensor_core_gemm_rows<__nv_bfloat16>(
      "hopper_gemm_bf16", {},
      {{"solution", course::solution::hopper_gemm_bf16},
       {"exercise", course::exercise::hopper_gemm_bf16}},
      sizes);
  return course::bench::run_benchmarks(argc, argv);
}
