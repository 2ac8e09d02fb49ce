// Exercise m3.04, part 1: im2col, every window of the input as one column of a matrix.
// (Reference solution.)
//
// What changed from m3.03: the direct kernels computed each output from the window of x it
// sees, reading the window where it lies. Here we first copy every window into its own
// column of X_col [C R S][images * P Q] (course/conv.h's NCHW x; layout in im2col_gemm.h), so
// that the convolution becomes one matrix product, W [K][C R S] times X_col, which a GEMM
// (part 2: cuBLAS; part 3: your m2.05 SGEMM) runs at close to the GPU's float32 peak.
//
// Why it should be fast: the copy is pure data movement, bound by DRAM bandwidth, and it is
// written so that bandwidth is all it needs:
//   * thread j of the grid owns column j, (n, p, q); consecutive threads take consecutive
//     columns, so every store of a warp writes 32 consecutive floats of one row of X_col
//     (one 128-byte transaction), and for stride 1 its 32 loads read 32 consecutive pixels
//     of one row of x;
//   * a thread works out (n, p, q) once and then writes the R S rows of one input channel c,
//     (c, r, s) for every tap, so the divisions are paid once per R S stores;
//   * blockIdx.y walks the channels (a grid-stride loop beyond 65535 of them).
// The price is the size of X_col: R S / (stride_h stride_w) times x, about (9 times for a
// 3 x 3 stride-1 layer), written once here and read once by the GEMM. README.md weighs it.
#include <algorithm>
#include <cstdint>
#include <string>

// ---- given: the same in the skeleton and the solution (./course check compares) ----
#include "course/conv.h"
#include "course/cuda_check.h"
#include "course/launch.h"
#include "im2col_gemm.h"

namespace course::COURSE_IMPL {  // see course/impl.h
namespace im2col_detail {

constexpr int kThreads = 256;  // threads per block, one column of X_col each

// Grid: x covers the columns of the pass (images * P * Q, in blocks of kThreads), y the
// input channels c (grid-stride: gridDim.y is at most 65535). X_col has `columns` floats per
// row; row (c, r, s) starts at ((c * R + r) * S + s) * columns, in 64 bits, because X_col can
// hold more than 2^31 floats even when x and y do not (R S times x's size).
__global__ void __launch_bounds__(kThreads)
    im2col_kernel(ConvShape s, const float* __restrict__ x, int first_image, int images,
                  float* __restrict__ x_col) {
  const int P = s.P(), Q = s.Q();
  const int PQ = P * Q;  // < 2^31: y has N K P Q < 2^31 elements
  const std::int64_t columns = static_cast<std::int64_t>(images) * PQ;
  const std::int64_t column = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (column >= columns) return;  // the last block's spare threads
  // ---- end of given ----

  // The column's output pixel: column = (n - first_image) * P Q + p * Q + q. Its window's
  // top-left tap (r = s = 0) reads x at (h0, w0), negative in the padding.
  const int image = static_cast<int>(column / PQ);
  const int pq = static_cast<int>(column - static_cast<std::int64_t>(image) * PQ);
  const int n = first_image + image;
  const int p = pq / Q, q = pq % Q;
  const int h0 = p * s.stride_h - s.pad_h;
  const int w0 = q * s.stride_w - s.pad_w;

  for (int c = static_cast<int>(blockIdx.y); c < s.C; c += static_cast<int>(gridDim.y)) {
    // Rows (c, r, t) for all taps of channel c: row = (c * R + r) * S + t. The tap's input
    // pixel is (h0 + r * dilation_h, w0 + t * dilation_w); outside the image it is padding,
    // stored as 0 and never read from x (that address belongs to another row or channel).
    const float* x_nc = x + conv_input_index(ConvLayout::nchw, s, n, c, 0, 0);
    float* out = x_col + static_cast<std::int64_t>(c) * s.R * s.S * columns + column;
    for (int r = 0; r < s.R; ++r) {
      const int h = h0 + r * s.dilation_h;
      const bool row_inside = h >= 0 && h < s.H;
      for (int t = 0; t < s.S; ++t) {
        const int wc = w0 + t * s.dilation_w;
        const bool inside = row_inside && wc >= 0 && wc < s.W;
        *out = inside ? __ldg(x_nc + static_cast<std::int64_t>(h) * s.W + wc) : 0.0f;
        out += columns;  // the next row of X_col, the same column
      }
    }
  }
}

}  // namespace im2col_detail

// ---- given: the same in the skeleton and the solution (./course check compares) ----
void im2col(const ConvShape& shape, const float* x, int first_image, int images, float* x_col,
            cudaStream_t stream) {
  using namespace im2col_detail;
  constexpr const char* function = "im2col";
  require_conv_arguments(function, shape);
  // The messages are lambdas: made only when a check fails (course/launch.h).
  require(
      first_image >= 0 && images >= 0 && static_cast<std::int64_t>(first_image) + images <= shape.N,
      function, [&] {
        return "images " + std::to_string(first_image) + " .. " +
               std::to_string(static_cast<std::int64_t>(first_image) + images - 1) +
               " are not in the batch of N = " + std::to_string(shape.N) + " (" + to_string(shape) +
               ")";
      });
  if (images == 0) return;  // nothing to copy, and a grid of zero blocks is an error
  require(x != nullptr, function,
          [&] { return "x must be a device pointer, got null (" + to_string(shape) + ")"; });
  require(x_col != nullptr, function,
          [&] { return "x_col must be a device pointer, got null (" + to_string(shape) + ")"; });

  const std::int64_t columns = static_cast<std::int64_t>(images) * shape.P() * shape.Q();
  const dim3 grid(grid_blocks_1d(function, columns, kThreads),
                  static_cast<unsigned int>(std::min<int>(shape.C, static_cast<int>(kMaxGridY))));
  im2col_kernel<<<grid, kThreads, 0, stream>>>(shape, x, first_image, images, x_col);
  CUDA_CHECK_LAUNCH();
}

}  // namespace course::COURSE_IMPL
// ---- end of given ----
