// Exercise m1.04: a fused element-wise kernel, y = gelu(x * w + b).
//
// What changes from the unfused chain, and why it is faster: PyTorch eager mode runs
// gelu(x * w + b) as three kernels, and each one reads a whole matrix from DRAM and writes a
// whole matrix back: 6 matrix passes. The arithmetic is nearly free next to that traffic.
// One kernel that keeps the intermediate values in registers reads x once and writes y
// once: 2 passes, so about 3x less time at the same bandwidth. On top of that, this kernel
// uses what m1.02 taught: float4 loads and stores and several rows in flight per thread, so
// that it runs close to the bandwidth of a plain copy.
//
// Read README.md first. Fill in the two TODOs, then run `./course grade m1_04`.
#include "fused_elementwise.h"

// ---- given: the same in the skeleton and the solution (./course check compares) ----
#include <algorithm>
#include <cstdint>
#include <string>

#include "course/cuda_check.h"
#include "course/launch.h"

namespace course::COURSE_IMPL {  // see course/impl.h

namespace {

// GELU in its exact form, torch.nn.functional.gelu(v) with approximate='none':
//   gelu(v) = v * Phi(v) = 0.5 * v * (1 + erf(v / sqrt(2)))
// where Phi is the standard normal CDF. erff is CUDA's float32 erf (at most 2 ulp off).
__device__ __forceinline__ float gelu(float v) {
  constexpr float kInvSqrt2 = 0.70710678118654752f;
  return 0.5f * v * (1.0f + erff(v * kInvSqrt2));
}

void require_shape(std::int64_t rows, std::int64_t cols, const char* function) {
  require(rows >= 0, function, "rows must be >= 0, got " + std::to_string(rows));
  require(cols >= 0, function, "cols must be >= 0, got " + std::to_string(cols));
}

}  // namespace

// ---- Provided: the unfused chain, the baseline -------------------------------------------
//
// Three kernels, as PyTorch eager mode launches them, each walking the matrix the same way:
// a thread per column (neighbouring threads, neighbouring columns: coalesced), and rows
// blockIdx.y, blockIdx.y + gridDim.y, ... (gridDim.y is at most kMaxGridY).

constexpr int kChainThreads = 256;

dim3 chain_grid(std::int64_t rows, std::int64_t cols) {
  return dim3(static_cast<unsigned int>(ceil_div<std::int64_t>(cols, kChainThreads)),
              static_cast<unsigned int>(std::min<std::int64_t>(rows, kMaxGridY)));
}

__global__ void __launch_bounds__(kChainThreads)
    multiply_by_column_kernel(const float* __restrict__ x, const float* __restrict__ w,
                              float* __restrict__ out, std::int64_t rows, std::int64_t cols) {
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= cols) return;
  const float scale = w[col];  // one load per thread, reused for every row it visits
  for (std::int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    out[row * cols + col] = x[row * cols + col] * scale;
  }
}

__global__ void __launch_bounds__(kChainThreads)
    add_column_kernel(const float* __restrict__ in, const float* __restrict__ b,
                      float* __restrict__ out, std::int64_t rows, std::int64_t cols) {
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= cols) return;
  const float shift = b[col];
  for (std::int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    out[row * cols + col] = in[row * cols + col] + shift;
  }
}

__global__ void __launch_bounds__(kChainThreads)
    gelu_in_place_kernel(float* values, std::int64_t rows, std::int64_t cols) {
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= cols) return;
  for (std::int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    values[row * cols + col] = gelu(values[row * cols + col]);
  }
}

void affine_gelu_unfused(const float* x, const float* w, const float* b, float* y, float* scratch,
                         std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  require_shape(rows, cols, "affine_gelu_unfused");
  if (rows == 0 || cols == 0) return;  // an empty matrix; a launch of zero blocks is an error
  const dim3 grid = chain_grid(rows, cols);
  multiply_by_column_kernel<<<grid, kChainThreads, 0, stream>>>(x, w, scratch, rows, cols);
  CUDA_CHECK_LAUNCH();
  add_column_kernel<<<grid, kChainThreads, 0, stream>>>(scratch, b, y, rows, cols);
  CUDA_CHECK_LAUNCH();
  gelu_in_place_kernel<<<grid, kChainThreads, 0, stream>>>(y, rows, cols);
  CUDA_CHECK_LAUNCH();
}
// ---- end of given ----

// ---- The fused kernel: yours ---------------------------------------------------------------

constexpr int kFusedThreads = 256;

__global__ void __launch_bounds__(kFusedThreads)
    affine_gelu_kernel(const float* __restrict__ x, const float* __restrict__ w,
                       const float* __restrict__ b, float* __restrict__ y, std::int64_t rows,
                       std::int64_t cols) {
  // TODO(m1.04a): compute y[row * cols + col] = gelu(x[row * cols + col] * w[col] + b[col])
  // for every element, reading each x once and writing each y once; the product and the sum
  // stay in registers. A good first version walks the matrix like the provided kernels
  // above: one column per thread (col from blockIdx.x, blockDim.x, threadIdx.x; return if
  // col >= cols), rows blockIdx.y, blockIdx.y + gridDim.y, ..., and w[col], b[col] loaded
  // once before the loop. README.md shows how to make it faster once it is correct.
}

void affine_gelu(const float* x, const float* w, const float* b, float* y, std::int64_t rows,
                 std::int64_t cols, cudaStream_t stream) {
  require_shape(rows, cols, "affine_gelu");
  if (rows == 0 || cols == 0) return;  // an empty matrix; a launch of zero blocks is an error

  // TODO(m1.04b): launch affine_gelu_kernel on `stream` with kFusedThreads threads per block
  // and a grid that covers the matrix, e.g. chain_grid(rows, cols) if your kernel walks the
  // matrix like the provided ones:
  //   affine_gelu_kernel<<<grid, kFusedThreads, 0, stream>>>(x, w, b, y, rows, cols);

  CUDA_CHECK_LAUNCH();  // a bad launch configuration is reported here
}

}  // namespace course::COURSE_IMPL
