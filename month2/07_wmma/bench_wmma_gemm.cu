// Benchmark for exercise m2.07: the tensor cores against cuBLAS, and against the float32
// SGEMM of m2.05.
//
// Three tables, one per part, per square size n (M = N = K = n), rows in the order they run:
//   wmma_simple/cublas_fp16/n:...       cuBLAS (cublasGemmEx): float16 A and B, float32 C
//                                       and accumulation, tensor cores: the baseline
//   wmma_simple/step_m2_05_register_tiling/n:...
//                                       m2.05's float32 SGEMM (the CUDA cores) on the same
//                                       values as floats, when m2.05 is built
//   wmma_simple/solution/n:...          the reference part 1
//   wmma_simple/exercise/n:...          your part 1
// and the same rows for wmma_gemm (part 2) and mma_gemm (part 3). A fourth table,
// mma_gemm_steps, times the steps from part 2 to part 3 (mma_gemm_tuning.h), each with one
// piece of the tuned kernel changed, beside part 2 and cuBLAS: README.md reads it. Every
// row checks its result against a float64 reference (sampled rows) before it is timed;
// cublas_pct is the share of cuBLAS measured in the same run. The shared benchmark is
// course/gemm_benchmark.h.
//
// Rows this GPU cannot run: every row runs on compute capability 7.5 and newer, but the
// tuning steps' tiles take 37 to 192 KiB of shared memory per block (4 stages of 128 x 256
// x 64 take 192 KiB), and a GPU allows at most 64 KiB (T4), 99 KiB (RTX 3090, 4090), 163 KiB
// (A100) or 227 KiB (H100, H200). The launcher checks before it opts in, so a step whose tile
// needs more than this GPU allows is listed as "not runnable on this GPU", with what it needs,
// and is not timed. Part 3's own tile (mma_gemm) takes 64 KiB, which every GPU has.
#include <cuda_fp16.h>

#include <string>
#include <utility>
#include <vector>

#include "course/benchmark.h"
#include "course/gemm_benchmark.h"
#include "mma_gemm_tuning.h"
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

using Fp16Rows = std::vector<std::pair<std::string, course::GemmFnOf<__half>>>;

}  // namespace

int main(int argc, char** argv) {
  // The tensor-core parts are timed up to 8192^3, where the larger tiles of part 3 pay most.
  const std::vector<int> sizes = {1024, 2048, 4096, 8192};
  course::bench::register_tensor_core_gemm_rows<__half>(
      "wmma_simple", previous_step(),
      Fp16Rows{{"solution", course::solution::wmma_gemm_simple},
               {"exercise", course::exercise::wmma_gemm_simple}},
      course::bench::gemm_benchmark_sizes());
  course::bench::register_tensor_core_gemm_rows<__half>(
      "wmma_gemm", previous_step(),
      Fp16Rows{{"solution", course::solution::wmma_gemm}, {"exercise", course::exercise::wmma_gemm}},
      sizes);
  course::bench::register_tensor_core_gemm_rows<__half>(
      "mma_gemm", previous_step(),
      Fp16Rows{{"solution", course::solution::mma_gemm}, {"exercise", course::exercise::mma_gemm}},
      sizes);
  Fp16Rows steps = {{"part2_wmma_gemm", course::solution::wmma_gemm}};
  for (const auto& step : course::solution::tuning::mma_tuning_steps()) {
    steps.emplace_back(step.name, step.gemm);
  }
  course::bench::register_tensor_core_gemm_rows<__half>("mma_gemm_steps", {}, steps, sizes);
  return course::bench::run_benchmarks(argc, argv);
}
