// Benchmark for exercise m3.05: what do the tensor cores, NHWC and no X_col buy over m3.04,
// and what does each piece of the A loader buy?
//
// Rows, for each ResNet layer of course::conv_resnet_layers() (ResNet_C64_56_K64_3x3 is N 32,
// C 64, 56 x 56, K 64, 3 x 3), in the order they run:
//   conv_fp32/m3_04_im2col_cublas/solution/<layer>          the previous step: m3.04's im2col +
//                                                           cuBLAS, float32 NCHW, no TF32
//   conv_fp16/m3_05_implicit_gemm_analytic/solution/<layer> part 1: indices computed in place
//   conv_fp16/m3_05_implicit_gemm_analytic/exercise/<layer> yours
//   conv_fp16/m3_05_implicit_gemm_mma_sync/solution/<layer> part 2: rows decoded once per
//                                                           block, the filter walked without
//                                                           division, on mma.sync
//   conv_fp16/m3_05_implicit_gemm_mma_sync/exercise/<layer> yours
//   conv_fp16/m3_05_implicit_gemm/solution/<layer>          part 2 on the GPU's fastest main
//                                                           loop: part 3's wgmma on a Hopper
//                                                           (elsewhere the same as the row above)
//   conv_fp16/m3_05_implicit_gemm/exercise/<layer>          yours
//   conv_bf16/m3_05_implicit_gemm/solution/<layer>          the same with bfloat16 inputs
// The families name the precision: conv_fp32 rows take float32 x and w (NCHW), conv_fp16 and
// conv_bf16 rows 16-bit x and w (NHWC / KRSC) with float32 accumulation and a float32 y. The
// m3.05 rows' speedup_vs_conv_fp32 counter is the m3.04 row's time over theirs: a comparison
// across precisions (and layouts), labelled so; it is what a PyTorch user gains by switching
// to fp16 channels_last with this kernel. ./course bench's table adds each row's speedup over
// the step above it in its family (part 2 over part 1, part 3 over part 2).
// Counters: TFLOPS (2 N K P Q C R S / time), GBps (x and w read once, y written once / time),
// speedup_vs_conv_fp32.
//
// The baselines, cuDNN through F.conv2d in fp16 NHWC (channels_last) and NCHW and in bf16
// NHWC (cudnn.benchmark = True, TF32 off), are timed by bench_implicit_gemm_torch.py on the
// same layers; ./course bench m3_05 runs both. Every row verifies before it times
// (course/conv_benchmark.h).
//
// On any GPU of the course (compute capability 7.5 and newer) the float16 rows run: the
// m3_05_implicit_gemm rows take wgmma where there is one (a Hopper) and mma.sync elsewhere,
// and their tiles fit in 64 KiB of shared memory. The bfloat16 row needs bfloat16 tensor
// cores (compute capability 8.0: A100, RTX 30xx and newer); on a T4 or an RTX 20xx it is
// listed as "not runnable on this GPU", with that reason, and not timed.
//
//   ./build/month3/05_implicit_gemm/m3_05_implicit_gemm_bench --benchmark_filter=C128_28
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "course/benchmark.h"
#include "course/conv.h"
#include "course/conv_benchmark.h"
#include "course/conv_reference.h"
#include "course/cuda_check.h"
#include "course/device_buffer.h"
#include "implicit_gemm.h"
#if COURSE_HAVE_IM2COL_GEMM
#include "im2col_gemm.h"
#endif

namespace {

#if COURSE_HAVE_IM2COL_GEMM
// m3.04's cuBLAS path with a workspace for the whole batch, allocated on the row's first
// (untimed) call and kept, as m3.04's own benchmark does: the allocation is not timed.
course::ConvCall im2col_cublas_with_workspace() {
  auto workspace = std::make_shared<course::DeviceBuffer<float>>(0);
  return [workspace](const course::ConvShape& s, const float* x, const float* w, const float* bias,
                     float* y, cudaStream_t stream) {
    using course::Im2colGemm;
    const std::size_t needed =
        course::solution::conv2d_im2col_workspace_bytes(s, Im2colGemm::cublas);
    if (workspace->bytes() < needed) {
      CUDA_CHECK(cudaDeviceSynchronize());  // nothing may still use the old one
      *workspace = course::DeviceBuffer<float>((needed + sizeof(float) - 1) / sizeof(float));
    }
    course::solution::conv2d_im2col_gemm(s, x, w, bias, y, Im2colGemm::cublas, workspace->data(),
                                         workspace->bytes(), stream);
  };
}
#endif

}  // namespace

int main(int argc, char** argv) {
  namespace sol = course::solution;
  namespace ex = course::exercise;
  const auto layers = course::conv_resnet_layers();
  std::string previous, previous_family;
#if COURSE_HAVE_IM2COL_GEMM
  previous = "m3_04_im2col_cublas/solution";
  previous_family = "conv_fp32";
  course::bench::register_conv_rows("conv_fp32", {{previous, im2col_cublas_with_workspace()}},
                                    layers);
#endif
  using Fp16Row = course::bench::ConvRowOf<__half>;
  std::vector<Fp16Row> fp16 = {
      {"m3_05_implicit_gemm_analytic/solution",
       sol::conv2d_implicit_gemm_analytic_fp16,
       previous,
       {},
       previous_family},
      {"m3_05_implicit_gemm_analytic/exercise",
       ex::conv2d_implicit_gemm_analytic_fp16,
       previous,
       {},
       previous_family},
      {"m3_05_implicit_gemm_mma_sync/solution",
       sol::conv2d_implicit_gemm_mma_sync_fp16,
       previous,
       {},
       previous_family},
      {"m3_05_implicit_gemm_mma_sync/exercise",
       ex::conv2d_implicit_gemm_mma_sync_fp16,
       previous,
       {},
       previous_family},
      {"m3_05_implicit_gemm/solution",
       sol::conv2d_implicit_gemm_fp16,
       previous,
       {},
       previous_family},
      {"m3_05_implicit_gemm/exercise",
       ex::conv2d_implicit_gemm_fp16,
       previous,
       {},
       previous_family},
  };
  course::bench::register_conv_rows_as<__half>("conv_fp16", fp16, layers, course::ConvLayout::nhwc);
  std::vector<course::bench::ConvRowOf<__nv_bfloat16>> bf16 = {
      {"m3_05_implicit_gemm/solution",
       sol::conv2d_implicit_gemm_bf16,
       previous,
       {},
       previous_family},
  };
  course::bench::register_conv_rows_as<__nv_bfloat16>("conv_bf16", bf16, layers,
                                                      course::ConvLayout::nhwc);
  // Which main loop the m3_05_implicit_gemm rows ran on (part 3's wgmma on a Hopper), in the
  // JSON context and the table's header. Asked only where there is a GPU: without one,
  // run_benchmarks says so and stops.
  if (course::cuda_device_available()) {
    try {
      benchmark::AddCustomContext("main_loop", sol::conv2d_implicit_gemm_main_loop());
    } catch (const std::exception& error) {
      benchmark::AddCustomContext("main_loop", std::string("unknown: ") + error.what());
    }
  }
  return course::bench::run_benchmarks(argc, argv);
}
