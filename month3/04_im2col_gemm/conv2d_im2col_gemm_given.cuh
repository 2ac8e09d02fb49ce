// Given code for exercise m3.04, parts 2 and 3 (conv2d_im2col_gemm.cu): the workspace (X_col,
// and Y_tmp for part 3), the passes over the batch, the cuBLAS handle, the bias of part 2 and
// the launchers. Your skeleton and the reference both include it; the functions you write are
// in conv2d_im2col_gemm.cu, and conv2d_im2col_gemm below shows how they are called.
#pragma once

#include <cublas_v2.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>

#include "course/conv.h"
#include "course/cublas_check.h"
#include "course/cublas_handle.h"
#include "course/cuda_check.h"
#include "course/launch.h"
#include "im2col_gemm.h"
#include "register_tiling.h"  // m2.05: sgemm_2d_register_tile

// Which m2.05 SGEMM part 3 calls: CMake defines COURSE_M205_IMPL as `exercise` (yours, what
// the skeleton calls unless you configure with -DCOURSE_EARLIER_KERNELS=solution) or `solution`
// (what the reference calls).
#ifndef COURSE_M205_IMPL
#error \
    "COURSE_M205_IMPL (exercise or solution) names the m2.05 SGEMM; month3/04_im2col_gemm/CMakeLists.txt sets it"
#endif

namespace course::COURSE_IMPL {  // see course/impl.h
namespace im2col_gemm_detail {

namespace m205 = ::course::COURSE_M205_IMPL;

constexpr int kThreads = 256;                  // the bias and permute kernels, one output each
constexpr std::size_t kRegionAlignment = 256;  // Y_tmp starts on a 256-byte boundary
constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max();

// What one pass over `images` images needs: X_col (unless cuBLAS multiplies x directly) and,
// for the m2.05 path, Y_tmp. Sizes in bytes; X_col rounded up so Y_tmp stays aligned.
struct PassBytes {
  std::size_t x_col = 0, y_tmp = 0;
  std::size_t total() const { return x_col + y_tmp; }
};

inline bool copies(const ConvShape& s, Im2colGemm gemm) {
  return gemm == Im2colGemm::sgemm_m205 || conv2d_im2col_needs_copy(s);
}

inline PassBytes pass_bytes(const ConvShape& s, Im2colGemm gemm, std::int64_t images) {
  const double pq = static_cast<double>(s.P()) * s.Q();
  const double floats = copies(s, gemm) ? static_cast<double>(s.gemm_k()) * pq * images : 0.0;
  require(4.0 * floats < 0x1p62, "conv2d_im2col_gemm",
          "X_col would need " + std::to_string(4.0 * floats) + " bytes (" + to_string(s) + ")");
  PassBytes bytes;
  if (floats > 0) {
    const std::size_t raw = static_cast<std::size_t>(floats) * sizeof(float);
    bytes.x_col = (raw + kRegionAlignment - 1) / kRegionAlignment * kRegionAlignment;
  }
  if (gemm == Im2colGemm::sgemm_m205) {
    bytes.y_tmp = static_cast<std::size_t>(s.K) * static_cast<std::size_t>(pq) *
                  static_cast<std::size_t>(images) * sizeof(float);
  }
  return bytes;
}

// The most images one pass may take with `gemm`. The m2.05 SGEMM indexes each matrix with int
// (require_gemm_arguments), so X_col [C R S][images P Q] and Y_tmp [K][images P Q] must each
// hold fewer than 2^31 floats; cuBLAS takes the whole batch (its lda, images P Q <= N P Q,
// fits an int because y does).
inline std::int64_t max_images_per_pass(const ConvShape& s, Im2colGemm gemm) {
  if (gemm == Im2colGemm::cublas) return s.N;
  const std::int64_t pq = static_cast<std::int64_t>(s.P()) * s.Q();
  return std::min<std::int64_t>({s.N, kMaxInt / (s.gemm_k() * pq), kMaxInt / (s.K * pq)});
}

// Checks the shape and the choice of GEMM, for every public function of this file.
inline void require_im2col_gemm(const char* function, const ConvShape& s, Im2colGemm gemm) {
  require_conv_arguments(function, s);
  require(gemm == Im2colGemm::cublas || gemm == Im2colGemm::sgemm_m205, function, [&] {
    return "gemm must be Im2colGemm::cublas or Im2colGemm::sgemm_m205, got " +
           std::to_string(static_cast<int>(gemm));
  });
  if (gemm == Im2colGemm::sgemm_m205 && s.N > 0) {
    require(max_images_per_pass(s, gemm) >= 1, function, [&] {
      return "one image's X_col has C R S x P Q = " + std::to_string(s.gemm_k()) + " x " +
             std::to_string(static_cast<std::int64_t>(s.P()) * s.Q()) +
             " floats, more than the m2.05 SGEMM indexes (2^31 - 1); use Im2colGemm::cublas (" +
             to_string(s) + ")";
    });
  }
}

// y[n][k][p][q] += bias[k], after the cuBLAS GEMM (which has no bias epilogue): one read and
// one write of y, a few percent of the GEMM's time.
__global__ void __launch_bounds__(kThreads)
    add_bias_kernel(ConvShape s, const float* __restrict__ bias, float* __restrict__ y) {
  const std::int64_t pq = static_cast<std::int64_t>(s.P()) * s.Q();
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<std::int64_t>(s.N) * s.K * pq) return;
  y[i] += __ldg(bias + (i / pq) % s.K);
}

// One cuBLAS handle per thread and device, made on first use and kept: creating one costs
// milliseconds and memory. cuBLAS handles must not be shared by threads running at once.
// cublasCreate allocates device memory (cudaMalloc), which a CUDA graph capture in the
// default (global) mode forbids; creating it with this thread's capture mode relaxed is
// safe, because the allocation is not part of any stream's work.
inline cublasHandle_t thread_cublas_handle() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  thread_local std::map<int, std::unique_ptr<CublasHandle>> handles;
  std::unique_ptr<CublasHandle>& handle = handles[device];
  if (!handle) {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    try {
      handle = std::make_unique<CublasHandle>();
    } catch (...) {
      cudaThreadExchangeStreamCaptureMode(&mode);
      throw;
    }
    CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
  }
  return handle->get();
}

// A workspace that lives on `stream`: cudaMallocAsync now, cudaFreeAsync when it goes out of
// scope (after the work queued before it, in stream order, even when an error skips ahead).
class StreamWorkspace {
 public:
  StreamWorkspace(std::size_t bytes, cudaStream_t stream) : stream_(stream) {
    if (bytes > 0) CUDA_CHECK(cudaMallocAsync(&data_, bytes, stream));
  }
  StreamWorkspace(const StreamWorkspace&) = delete;
  StreamWorkspace& operator=(const StreamWorkspace&) = delete;
  ~StreamWorkspace() {
    if (data_ != nullptr) cudaFreeAsync(data_, stream_);
  }
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
  cudaStream_t stream_;
};

// The functions you write in conv2d_im2col_gemm.cu, declared here for conv2d_im2col_gemm below.
void gemm_cublas(cublasHandle_t handle, const ConvShape& s, const float* w, const float* x_col,
                 int ld_x_col, long long x_col_image_stride, int images, float* y);
void gemm_m205(const ConvShape& s, const float* w, const float* x_col, int images, float* y_tmp,
               cudaStream_t stream);
__global__ void __launch_bounds__(kThreads)
    permute_kernel(ConvShape s, int images, const float* __restrict__ y_tmp,
                   const float* __restrict__ bias, float* __restrict__ y_pass);

void permute(const ConvShape& s, int images, const float* y_tmp, const float* bias, float* y_pass,
             cudaStream_t stream) {
  const std::int64_t total = static_cast<std::int64_t>(images) * s.K * s.P() * s.Q();
  const unsigned int blocks = grid_blocks_1d("conv2d_im2col_gemm (permute)", total, kThreads);
  permute_kernel<<<blocks, kThreads, 0, stream>>>(s, images, y_tmp, bias, y_pass);
  CUDA_CHECK_LAUNCH();
}

}  // namespace im2col_gemm_detail

bool conv2d_im2col_needs_copy(const ConvShape& s) {
  return !(s.R == 1 && s.S == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_h == 0 &&
           s.pad_w == 0);
}

std::size_t conv2d_im2col_workspace_bytes(const ConvShape& shape, Im2colGemm gemm) {
  using namespace im2col_gemm_detail;
  require_im2col_gemm("conv2d_im2col_workspace_bytes", shape, gemm);
  return pass_bytes(shape, gemm, max_images_per_pass(shape, gemm)).total();
}

std::size_t conv2d_im2col_min_workspace_bytes(const ConvShape& shape, Im2colGemm gemm) {
  using namespace im2col_gemm_detail;
  require_im2col_gemm("conv2d_im2col_min_workspace_bytes", shape, gemm);
  return pass_bytes(shape, gemm, std::min(shape.N, 1)).total();
}

void conv2d_im2col_gemm(const ConvShape& shape, const float* x, const float* w, const float* bias,
                        float* y, Im2colGemm gemm, void* workspace, std::size_t workspace_bytes,
                        cudaStream_t stream) {
  using namespace im2col_gemm_detail;
  constexpr const char* function = "conv2d_im2col_gemm";
  require_im2col_gemm(function, shape, gemm);
  require_conv_pointers(function, shape, x, w, y);
  if (shape.N == 0) return;  // nothing to compute

  // How many images per pass fit in the workspace: the most, up to the batch.
  const std::size_t least = pass_bytes(shape, gemm, 1).total();
  require(workspace_bytes >= least, function, [&] {
    return "the workspace must hold at least one image's X_col" +
           std::string(gemm == Im2colGemm::sgemm_m205 ? " and Y_tmp" : "") + ", " +
           std::to_string(least) + " bytes, got " + std::to_string(workspace_bytes) +
           " (conv2d_im2col_workspace_bytes gives the bytes of one pass; " + to_string(shape) + ")";
  });
  require(least == 0 || workspace != nullptr, function, [&] {
    return "workspace must be a device pointer, got null (" + to_string(shape) + ")";
  });
  require(is_aligned(workspace, 16), function, "workspace must be aligned to 16 bytes");
  // The bytes of a pass grow with its images: the largest count that fits, by bisection.
  std::int64_t fits = 1, too_many = max_images_per_pass(shape, gemm) + 1;
  while (too_many - fits > 1) {
    const std::int64_t middle = fits + (too_many - fits) / 2;
    (pass_bytes(shape, gemm, middle).total() <= workspace_bytes ? fits : too_many) = middle;
  }
  const int images_per_pass = static_cast<int>(fits);
  const PassBytes layout = pass_bytes(shape, gemm, images_per_pass);
  float* x_col_buffer = static_cast<float*>(workspace);
  float* y_tmp = layout.y_tmp > 0
                     ? reinterpret_cast<float*>(static_cast<char*>(workspace) + layout.x_col)
                     : nullptr;

  cublasHandle_t handle = nullptr;
  if (gemm == Im2colGemm::cublas) {
    handle = thread_cublas_handle();
    CUBLAS_CHECK(cublasSetStream(handle, stream));
    // True float32: CUBLAS_DEFAULT_MATH never rounds float32 inputs to TF32 (that takes
    // CUBLAS_TF32_TENSOR_OP_MATH, or CUBLAS_COMPUTE_32F_FAST_TF32), and setting it here
    // undoes whatever mode the handle had. CUBLAS_PEDANTIC_MATH would also forbid TF32 but
    // may pick slower kernels; course::cublas_sgemm_row_major, the course's baseline, makes
    // the same choice.
    CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
  }

  const bool copy = copies(shape, gemm);
  const std::int64_t pq = static_cast<std::int64_t>(shape.P()) * shape.Q();
  for (int n0 = 0; n0 < shape.N; n0 += images_per_pass) {
    const int images = std::min(images_per_pass, shape.N - n0);
    float* y_pass = y + static_cast<std::int64_t>(n0) * shape.K * pq;
    const float* x_col = x_col_buffer;
    int ld_x_col = static_cast<int>(images * pq);  // X_col's rows run over the pass's images
    long long x_col_image_stride = pq;
    if (copy) {
      im2col(shape, x, n0, images, x_col_buffer, stream);
    } else {
      // 1 x 1, stride 1, no padding: image n of x, [C][H W], is its own X_col.
      x_col = x + static_cast<std::int64_t>(n0) * shape.C * shape.H * shape.W;
      ld_x_col = static_cast<int>(pq);
      x_col_image_stride = static_cast<long long>(shape.C) * pq;
    }
    if (gemm == Im2colGemm::cublas) {
      gemm_cublas(handle, shape, w, x_col, ld_x_col, x_col_image_stride, images, y_pass);
    } else {
      gemm_m205(shape, w, x_col, images, y_tmp, stream);
      permute(shape, images, y_tmp, bias, y_pass, stream);
    }
  }
  if (gemm == Im2colGemm::cublas && bias != nullptr) {
    const unsigned int blocks = grid_blocks_1d(function, shape.output_elements(), kThreads);
    add_bias_kernel<<<blocks, kThreads, 0, stream>>>(shape, bias, y);
    CUDA_CHECK_LAUNCH();
  }
}

namespace {

void conv2d_im2col_allocating(const char* function, Im2colGemm gemm, const ConvShape& shape,
                              const float* x, const float* w, const float* bias, float* y,
                              cudaStream_t stream) {
  using namespace im2col_gemm_detail;
  require_im2col_gemm(function, shape, gemm);
  require_conv_pointers(function, shape, x, w, y);
  if (shape.N == 0) return;
  const std::size_t bytes =
      std::max(conv2d_im2col_min_workspace_bytes(shape, gemm),
               std::min(conv2d_im2col_workspace_bytes(shape, gemm), kIm2colWorkspaceBudgetBytes));
  StreamWorkspace workspace(bytes, stream);
  conv2d_im2col_gemm(shape, x, w, bias, y, gemm, workspace.data(), bytes, stream);
}

}  // namespace

void conv2d_im2col_cublas(const ConvShape& shape, const float* x, const float* w, const float* bias,
                          float* y, cudaStream_t stream) {
  conv2d_im2col_allocating("conv2d_im2col_cublas", Im2colGemm::cublas, shape, x, w, bias, y,
                           stream);
}

void conv2d_im2col_sgemm(const ConvShape& shape, const float* x, const float* w, const float* bias,
                         float* y, cudaStream_t stream) {
  conv2d_im2col_allocating("conv2d_im2col_sgemm", Im2colGemm::sgemm_m205, shape, x, w, bias, y,
                           stream);
}

}  // namespace course::COURSE_IMPL
