// Benchmark for exercise m2.09: the course's GEMMs on the shapes users run, not only squares.
//
// Two tables, one per precision, per shape M x N x K, rows in the order they run:
//   shapes_fp32/cublas/M:..                    cuBLAS SGEMM in float32 (TF32 off): the baseline
//   shapes_fp32/step_m2_05_register_tiling/..  m2.05's SGEMM (one block per tile, all of K),
//                                              when m2.05 is built
//   shapes_fp32/solution/..                    the chooser's pick (tile, splits), reference
//   shapes_fp32/exercise/..                    the same with your TODOs
//   shapes_fp16/cublas_fp16/..                 cuBLAS (cublasGemmEx), float16 in, float32 out
//   shapes_fp16/step_m2_07_wmma/..             m2.07's mma_gemm, when m2.07 is built
//   shapes_fp16/solution/.., shapes_fp16/exercise/..
//   shapes_fp16/solution_mma_sync/..           on a Hopper only: the reference chooser told
//                                              the wide tile is absent, so the mma.sync tiles
//                                              an A100 or an RTX GPU runs (odd sizes included)
// Every row checks its result against a float64 reference (sampled rows) before it is timed;
// cublas_pct is the share of cuBLAS in the same run, speedup the time of the step_ row over
// this row's. The shapes: gemm_shapes.h's benchmark_shapes() (the square the course is tuned
// on, an LLM's MLP projection 4096 x 11008 x 4096, a long K on a small C, a batch of 128 or 16
// tokens, a small square, a rectangle and odd sizes). The shared benchmark is
// course/gemm_benchmark.h.
#include <cuda_fp16.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "course/benchmark.h"
#include "course/device_buffer.h"
#include "course/gemm_benchmark.h"
#include "gemm_shapes.h"

#if defined(COURSE_HAVE_REGISTER_TILING)
#include "register_tiling.h"  // m2.05
#endif
#if defined(COURSE_HAVE_WMMA)
#include "wmma_gemm.h"  // m2.07
#endif

namespace {

// The reference's float16 GEMM as a GPU without the wide tile runs it: the chooser's pick
// among the mma.sync tiles, with room for the padded copies of odd sizes, in a workspace of
// its own (grown by the check before the timed runs, never while they run).
void hgemm_on_mma_sync_tiles(int M, int N, int K, float alpha, const __half* A, const __half* B,
                             float beta, float* C, cudaStream_t stream) {
  namespace gs = course::gemm_shapes;
  static std::unique_ptr<course::DeviceBuffer<float>> workspace;
  const gs::GemmPlan plan = course::solution::choose_gemm_plan(
      M, N, K, gs::Precision::fp16, course::bench::device().sm_count, gs::kSharedWorkspaceFloats,
      gs::WgmmaCapacity{});
  const std::size_t floats =
      std::max<std::size_t>(gs::hgemm_workspace_floats(plan, M, N, K, A, B), 1);
  if (!workspace || workspace->size() < floats) {
    workspace = std::make_unique<course::DeviceBuffer<float>>(floats);
  }
  course::solution::hgemm_planned(plan, M, N, K, alpha, A, B, beta, C, workspace->data(),
                                  workspace->size(), stream);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<course::GemmShape>& shapes = course::gemm_shapes::benchmark_shapes();
  std::vector<std::pair<std::string, course::GemmFn>> fp32 = {
#if defined(COURSE_HAVE_REGISTER_TILING)
    {"step_m2_05_register_tiling", course::solution::sgemm_2d_register_tile},
#endif
    {"solution", course::solution::sgemm_shapes},
    {"exercise", course::exercise::sgemm_shapes},
  };
  std::vector<std::pair<std::string, course::GemmFnOf<__half>>> fp16 = {
#if defined(COURSE_HAVE_WMMA)
    {"step_m2_07_wmma", course::solution::mma_gemm},
#endif
    {"solution", course::solution::hgemm_shapes},
    {"exercise", course::exercise::hgemm_shapes},
  };
  // Where the reference runs float16 on the wide tile, time the mma.sync tiles beside it.
  if (course::solution::wide_tile_runs_here()) {
    fp16.insert(fp16.end() - 1, {"solution_mma_sync", hgemm_on_mma_sync_tiles});
  }
  course::bench::register_gemm_shape_rows<float>("shapes_fp32", fp32, shapes);
  course::bench::register_gemm_shape_rows<__half>("shapes_fp16", fp16, shapes);
  return course::bench::run_benchmarks(argc, argv);
}
