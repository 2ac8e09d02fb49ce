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
//   conv_fp32/cublas_gemm_alone/<layer>             the baseline: the cuBLAS path's GEMMs
//                                                   alone, on an X_col made once, untimed:
//                                                   the cuBLAS path if im2col were free
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
// the m2.05 path over cuBLAS; and each row's % of the GEMM alone.)
//
// The baselines a PyTorch user has, cuDNN through F.conv2d (cudnn.benchmark = True, TF32 off)
// and F.unfold + matmul, are timed by bench_im2col_gemm_torch.py on the same layers;
// ./course bench m3_04 runs both. Every row verifies before it times (course/conv_benchmark.h).
//
//   ./build/month3/04_im2col_gemm/m3_04_im2col_gemm_bench --benchmark_filter=C128_28
#include <cstddef>
#include <cstdint>
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

// The GEMMs of the cuBLAS path without the im2col that feeds them. Once X_col exists, the
// convolution IS a 1 x 1 convolution: image n of X_col, [C R S][P Q], is an image of C R S
// channels and P x Q pixels, and w, [K][C R S], is its 1 x 1 filter. So the row builds X_col
// image by image (im2col of one image at a time: [N][C R S][P Q]) on its first call for a
// layer's x (the untimed verification run) and keeps it; every call then hands that 1 x 1
// convolution to conv2d_im2col_gemm, which multiplies it without a copy: the same 32 GEMMs of
// K x P Q x C R S, in one cublasSgemmStridedBatched. x never changes while a row runs, so
// every call still computes the whole convolution, and the row verifies like the others.
course::ConvCall gemm_alone() {
  struct Cache {
    const float* x = nullptr;
    course::ConvShape shape{};
    course::DeviceBuffer<float> x_col{0};
  };
  auto cache = std::make_shared<Cache>();
  return [=](const course::ConvShape& s, const float* x, const float* w, const float* bias,
             float* y, cudaStream_t stream) {
    namespace sol = course::solution;
    if (!sol::conv2d_im2col_needs_copy(s)) {  // x already is X_col: the cuBLAS path itself
      sol::conv2d_im2col_gemm(s, x, w, bias, y, Im2colGemm::cublas, nullptr, 0, stream);
      return;
    }
    const std::int64_t image_floats = s.gemm_k() * s.P() * s.Q();
    if (cache->x != x || course::to_string(cache->shape) != course::to_string(s)) {
      CUDA_CHECK(cudaDeviceSynchronize());  // nothing may still use the old one
      cache->x_col = course::DeviceBuffer<float>(static_cast<std::size_t>(image_floats * s.N));
      for (int n = 0; n < s.N; ++n) {
        sol::im2col(s, x, n, 1, cache->x_col.data() + n * image_floats, stream);
      }
      cache->x = x;
      cache->shape = s;
    }
    course::ConvShape one_by_one;
    one_by_one.N = s.N;
    one_by_one.C = static_cast<int>(s.gemm_k());
    one_by_one.H = s.P();
    one_by_one.W = s.Q();
    one_by_one.K = s.K;
    sol::conv2d_im2col_gemm(one_by_one, cache->x_col.data(), w, bias, y, Im2colGemm::cublas,
                            nullptr, 0, stream);
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
  rows.push_back({"cublas_gemm_alone", gemm_alone()});
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
