// Exercise m1.04: a fused element-wise kernel, y = gelu(x * w + b). (Reference solution.)
//
// What changes from the unfused chain, and why it is faster: PyTorch eager mode runs
// gelu(x * w + b) as three kernels, and each one reads a whole matrix from DRAM and writes a
// whole matrix back: 6 matrix passes. The arithmetic is nearly free next to that traffic.
// One kernel that keeps the intermediate values in registers reads x once and writes y
// once: 2 passes, so about 3x less time at the same bandwidth. On top of that, this kernel
// uses what m1.02 taught: float4 loads and stores and several rows in flight per thread, so
// that it runs close to the bandwidth of a plain copy.
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

// ---- The fused kernel ----------------------------------------------------------------------

constexpr int kFusedThreads = 256;
// Rows whose x values one thread loads before it computes and stores any of them, so that
// several loads per thread are waiting on DRAM at once (bytes in flight, README.md).
constexpr int kRowsInFlight = 4;

namespace {

// The whole chain for one value, or for four neighbouring columns at once. The product and
// the sum never leave registers: that is the fusion.
__device__ __forceinline__ float affine_gelu_of(float x, float w, float b) {
  return gelu(x * w + b);
}
__device__ __forceinline__ float4 affine_gelu_of(float4 x, float4 w, float4 b) {
  return make_float4(gelu(x.x * w.x + b.x), gelu(x.y * w.y + b.y), gelu(x.z * w.z + b.z),
                     gelu(x.w * w.w + b.w));
}

}  // namespace

// Vec is float (any shape) or float4 (cols a multiple of 4, all pointers 16-byte aligned);
// vecs_per_row = cols / (floats in a Vec). The block is threads_x columns by threads_y rows
// (the launcher picks them, threads_x * threads_y == kFusedThreads).
template <typename Vec>
__global__ void __launch_bounds__(kFusedThreads)
    affine_gelu_kernel(const Vec* __restrict__ x, const Vec* __restrict__ w,
                       const Vec* __restrict__ b, Vec* __restrict__ y, std::int64_t rows,
                       std::int64_t vecs_per_row) {
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= vecs_per_row) return;
  // A thread keeps one column for its whole life, so it loads that column's w and b once
  // and reuses them for every row it visits: per element, only x is read from DRAM.
  const Vec scale = w[col];
  const Vec shift = b[col];

  const std::int64_t row_step = static_cast<std::int64_t>(gridDim.y) * blockDim.y;
  std::int64_t row = static_cast<std::int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
  // kRowsInFlight rows per round: all loads first, then all the math and the stores.
  for (; row + (kRowsInFlight - 1) * row_step < rows; row += kRowsInFlight * row_step) {
    Vec in[kRowsInFlight];
#pragma unroll
    for (int k = 0; k < kRowsInFlight; ++k) in[k] = x[(row + k * row_step) * vecs_per_row + col];
#pragma unroll
    for (int k = 0; k < kRowsInFlight; ++k) {
      y[(row + k * row_step) * vecs_per_row + col] = affine_gelu_of(in[k], scale, shift);
    }
  }
  for (; row < rows; row += row_step) {  // the rows left over, one at a time
    y[row * vecs_per_row + col] = affine_gelu_of(x[row * vecs_per_row + col], scale, shift);
  }
}

namespace {

template <typename Vec>
void launch_affine_gelu(const float* x, const float* w, const float* b, float* y, std::int64_t rows,
                        std::int64_t vecs_per_row, cudaStream_t stream) {
  // Block shape: up to kFusedThreads threads along a row (a warp reads 32 neighbouring
  // Vecs: coalesced), the rest of the block on further rows. A narrow matrix (one column,
  // say) gets 1 x 256 blocks, not 256 x 1 blocks with 255 idle threads.
  int threads_x = 1;
  while (threads_x < kFusedThreads && threads_x < vecs_per_row) threads_x *= 2;
  const int threads_y = kFusedThreads / threads_x;

  // Grid: enough blocks to cover a row, times enough rows of blocks to fill the GPU once;
  // every thread then loops over its share of the rows (gridDim.y is at most kMaxGridY).
  const std::int64_t blocks_x = ceil_div<std::int64_t>(vecs_per_row, threads_x);
  const std::int64_t row_blocks_needed = ceil_div<std::int64_t>(rows, threads_y);
  const std::int64_t fill = resident_blocks_to_fill_gpu(affine_gelu_kernel<Vec>, kFusedThreads);
  const std::int64_t blocks_y = std::clamp<std::int64_t>(
      fill / blocks_x, 1, std::min<std::int64_t>(row_blocks_needed, kMaxGridY));

  const dim3 grid(static_cast<unsigned int>(blocks_x), static_cast<unsigned int>(blocks_y));
  const dim3 block(threads_x, threads_y);
  affine_gelu_kernel<Vec><<<grid, block, 0, stream>>>(
      reinterpret_cast<const Vec*>(x), reinterpret_cast<const Vec*>(w),
      reinterpret_cast<const Vec*>(b), reinterpret_cast<Vec*>(y), rows, vecs_per_row);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void affine_gelu(const float* x, const float* w, const float* b, float* y, std::int64_t rows,
                 std::int64_t cols, cudaStream_t stream) {
  require_shape(rows, cols, "affine_gelu");
  if (rows == 0 || cols == 0) return;  // an empty matrix; a launch of zero blocks is an error

  // float4 needs every row to start on a 16-byte boundary (cols a multiple of 4, x and y
  // aligned) and w and b aligned too. Otherwise one float at a time: correct, slower.
  if (cols % 4 == 0 && is_aligned(x, 16) && is_aligned(w, 16) && is_aligned(b, 16) &&
      is_aligned(y, 16)) {
    launch_affine_gelu<float4>(x, w, b, y, rows, cols / 4, stream);
  } else {
    launch_affine_gelu<float>(x, w, b, y, rows, cols, stream);
  }
}

}  // namespace course::COURSE_IMPL
