// Exercise m3.04, part 1: im2col, every window of the input as one column of a matrix.
//
// What changed from m3.03: the direct kernels computed each output from the window of x it
// sees, reading the window where it lies. Here we first copy every window into its own
// column of X_col [C R S][images * P Q] (course/conv.h's NCHW x; layout in im2col_gemm.h), so
// that the convolution becomes one matrix product, W [K][C R S] times X_col, which a GEMM
// (part 2: cuBLAS; part 3: your m2.05 SGEMM) runs at close to the GPU's float32 peak.
//
// Why it should be fast: the copy is pure data movement, bound by DRAM bandwidth, if it is
// written so that bandwidth is all it needs: consecutive threads take consecutive columns,
// so every store of a warp writes 32 consecutive floats of one row of X_col, and a thread
// works out its column's (n, p, q) once and then writes the R S rows of one channel. The
// price is the size of X_col, about R S / (stride_h stride_w) times x. README.md weighs it.
//
// Fill in TODO(m3.04a), then run `./course grade m3_04` (the Im2col tests grade this file
// alone; the convolution tests need parts 2 and 3 too, in conv2d_im2col_gemm.cu).
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

  // TODO(m3.04a): fill this thread's column of X_col.
  //   1. Undo column = (n - first_image) * P Q + p * Q + q into the image n and the output
  //      pixel (p, q) (divide by PQ, then by Q); its window starts at input row
  //      h0 = p * stride_h - pad_h and column w0 = q * stride_w - pad_w (negative in the
  //      padding).
  //   2. For the channels c = blockIdx.y, blockIdx.y + gridDim.y, ... below C, and every tap
  //      (r, t) of the filter: the input pixel h = h0 + r * dilation_h, wc = w0 + t *
  //      dilation_w; write
  //        x_col[row * columns + column],  row = (c * R + r) * S + t   (64 bits!)
  //      = x[conv_input_index(ConvLayout::nchw, s, n, c, h, wc)] when 0 <= h < H and
  //      0 <= wc < W, else 0.0f (padding: never read x there).
  //   Example: C = 1, 3 x 3 filter, pad 1, stride 1, 4 x 4 image, one image: column 5 is
  //   (p, q) = (1, 1), h0 = w0 = 0; row 4 (r = 1, t = 1) gets x[0][0][1][1], row 0 x[0][0][0][0].
  (void)x, (void)first_image, (void)x_col;
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
