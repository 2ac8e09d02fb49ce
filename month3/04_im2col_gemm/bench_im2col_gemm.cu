// Benchmark for exercise m3.04: what do im2col and a GEMM buy over m3.03's direct kernel,
// and what does the X_col copy cost?
//
// Rows, for each ResNet layer of course::conv_resnet_layers() (N, C, H = W, K, R = S, stride,
// pad named in the row: ResNet_C64_56_K64_3x3 is N 32, C 64, 56 x 56, K 64, 3 x 3), in the
// order they run:
//   conv_fp32/m3_03_tiled/solution/<layer>          the previous step: m3.03's tiled kernel
//                                                   (its reference solution)
//   conv_fp32/m3_04_im2col_cublas/solution/<layer>  im2col + cublasSgemmStridedBatched
//   conv_fp32/m3_04_im2col_cublas/exercise/<layer>  yours
//   conv_fp32/m3_04_im2col_sgemm/solution/<layer>   im2col + the m2.05 SGEMM + permute
//   conv_fp32/m3_04_im2col_sgemm/exercise/<layer>   yours (with your m2.05, unless
//                                                   -DCOURSE_EARLIER_KERNELS=solution)
// All in float32 (conv_fp32: cuBLAS in CUBLAS_DEFAULT_MATH, no TF32, no tensor cores). The
// m3.04 rows call conv2d_im2col_gemm with a workspace allocated once for the layer (one pass
// over the batch), as a framework's allocator would give it; the allocation is not timed.
// Counters:
//   TFLOPS      2 N K P Q C R S / time
//   speedup     the m3.03 tiled row's time over this row's, measured in this same run
//   xcol_bytes  the bytes of X_col for the batch (0 where cuBLAS multiplies x directly)
//   x_bytes     the bytes of x
//   blowup      xcol_bytes / x_bytes: the R S / stride^2 price of im2col
//   workspace_bytes  what conv2d_im2col_workspace_bytes asks for (sgemm: X_col + Y_tmp)
// (./course bench's table shows each row's speedup over the step above it: cuBLAS over m3.03,
// the m2.05 path over cuBLAS.)
//
// The baselines a PyTorch user has, cuDNN through F.conv2d (cudnn.benchmark = True, TF32 off)
// and F.unfold + matmul, are timed by bench_im2col_gemm_torch.py on the same layers;
// ./course bench m3_04 runs both. Every row verifies before it times (course/conv_benchmark.h).
//
//   ./build/month3/04_im2col_gemm/m3_04_im2col_gemm_bench --benchmark_filter=C128_28
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "course/benchmark.h"
#include "course/conv_benchmark.h"
#include "course/conv_reference.h"
#include "course/cuda_check.h"
#include "course/device_buffer.h"
#include "im2col_gemm.h"
#if COURSE_HAVE_DIRECT_CONV
#include "direct_conv.h"
#endif

namespace {

using course::Im2colGemm;
using Launcher = void (*)(const course::ConvShape&, const float*, const float*, const float*,
                          float*, Im2colGemm, void*, std::size_t, cudaStream_t);
using WorkspaceBytes = std::size_t (*)(const course::ConvShape&, Im2colGemm);

// A row that calls `launcher` with a workspace of `bytes(shape, gemm)` bytes, allocated on
// the row's first call for a layer (the untimed verification run) and kept while the layer's
// shape stays the same.
course::ConvCall with_workspace(Launcher launcher, WorkspaceBytes bytes, Im2colGemm gemm) {
  struct Workspace {
    course::DeviceBuffer<float> buffer{0};
    std::size_t bytes = 0;
  };
  auto workspace = std::make_shared<Workspace>();
  return [=](const course::ConvShape& s, const float* x, const float* w, const float* bias,
             float* y, cudaStream_t stream) {
    const std::size_t needed = bytes(s, gemm);
    if (workspace->buffer.bytes() < needed) {
      CUDA_CHECK(cudaDeviceSynchronize());  // nothing may still use the old one
      workspace->buffer = course::DeviceBuffer<float>((needed + sizeof(float) - 1) / sizeof(float));
    }
    launcher(s, x, w, bias, y, gemm, workspace->buffer.data(), workspace->buffer.bytes(), stream);
  };
}

std::map<std::string, double> memory_counters(const course::ConvShape& s, Im2colGemm gemm) {
  const double x_bytes = 4.0 * static_cast<double>(s.input_elements());
  const double x_col_bytes =
      course::solution::conv2d_im2col_needs_copy(s) || gemm == Im2colGemm::sgemm_m205
          ? 4.0 * static_cast<double>(s.gemm_k()) * s.N * s.P() * s.Q()
          : 0.0;
  return {{"x_bytes", x_bytes},
          {"xcol_bytes", x_col_bytes},
          {"blowup", x_col_bytes / x_bytes},
          {"workspace_bytes",
           static_cast<double>(course::solution::conv2d_im2col_workspace_bytes(s, gemm))}};
}

}  // namespace

int main(int argc, char** argv) {
  namespace sol = course::solution;
  namespace ex = course::exercise;
  auto counters = [](Im2colGemm gemm) {
    return [gemm](const course::ConvShape& s) { return memory_counters(s, gemm); };
  };
  std::vector<course::bench::ConvRow> rows;
  std::string previous;
#if COURSE_HAVE_DIRECT_CONV
  previous = "m3_03_tiled/solution";
  rows.push_back({previous, sol::conv2d_direct_tiled});
#endif
  rows.push_back({"m3_04_im2col_cublas/solution",
                  with_workspace(sol::conv2d_im2col_gemm, sol::conv2d_im2col_workspace_bytes,
                                 Im2colGemm::cublas),
                  previous, counters(Im2colGemm::cublas)});
  rows.push_back({"m3_04_im2col_cublas/exercise",
                  with_workspace(ex::conv2d_im2col_gemm, ex::conv2d_im2col_workspace_bytes,
                                 Im2colGemm::cublas),
                  previous, counters(Im2colGemm::cublas)});
  rows.push_back({"m3_04_im2col_sgemm/solution",
                  with_workspace(sol::conv2d_im2col_gemm, sol::conv2d_im2col_workspace_bytes,
                                 Im2colGemm::sgemm_m205),
                  previous, counters(Im2colGemm::sgemm_m205)});
  rows.push_back({"m3_04_im2col_sgemm/exercise",
                  with_workspace(ex::conv2d_im2col_gemm, ex::conv2d_im2col_workspace_bytes,
                                 Im2colGemm::sgemm_m205),
                  previous, counters(Im2colGemm::sgemm_m205)});
  course::bench::register_conv_rows("conv_fp32", rows, course::conv_resnet_layers());
  return course::bench::run_benchmarks(argc, argv);
}
