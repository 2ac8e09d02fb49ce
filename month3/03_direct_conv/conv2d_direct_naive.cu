// Exercise m3.03, part 1: direct convolution, one thread per output element.
//
// What is new after month 2: the loop nest of a convolution. Each output y[n][k][p][q] is a
// dot product of length C * R * S between the filter w[k] and the window of x that the
// output pixel (p, q) sees. This kernel writes that loop nest as it is: thread i computes
// output i, in the order of y's memory (q fastest), so a warp covers consecutive q of one
// row: its loads of x are (nearly) consecutive and its loads of w are one address.
//
// Why it will be slow: every multiply-add issues two loads, and every input value is read
// by up to K * R * S threads. Part 2 (conv2d_direct_tiled.cu) fixes that; README.md explains.
//
// Fill in TODO(m3.03a), (b) and (c), then run `./course grade m3_03` to check your work
// (the tests of part 2, the tiled kernel, fail until you have done it too).
#include <cstdint>

// ---- given: the same in the skeleton and the solution (./course check compares) ----
#include "course/conv.h"
#include "course/cuda_check.h"
#include "course/launch.h"
#include "direct_conv.h"

namespace course::COURSE_IMPL {  // see course/impl.h
namespace direct_naive {

constexpr int kThreads = 256;  // threads per block; each computes one output element
// ---- end of given ----

__global__ void __launch_bounds__(kThreads)
    conv2d_direct_naive_kernel(ConvShape s, const float* __restrict__ x,
                               const float* __restrict__ w, const float* __restrict__ bias,
                               float* __restrict__ y) {
  const int P = s.P(), Q = s.Q();
  const std::int64_t total = static_cast<std::int64_t>(s.N) * s.K * P * Q;
  // 64 bits: in the last block this can pass 2^31 - 1 even though total does not.
  const std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= total) return;  // the last block's spare threads

  // TODO(m3.03a): undo y's NCHW offset, index = ((n * K + k) * P + p) * Q + q, into the
  // four ints n, k, p, q (q is the fastest: q = index % Q, then divide by Q, and so on).
  // Example: K = 2, P = 3, Q = 4, index = 29 -> q = 1, p = 1, k = 0, n = 1.
  (void)P, (void)Q;

  // TODO(m3.03b): the loop nest. For c = 0 .. C-1, r = 0 .. R-1, t = 0 .. S-1: the input
  // row h = p * stride_h - pad_h + r * dilation_h and column col = q * stride_w - pad_w +
  // t * dilation_w; when 0 <= h < H and 0 <= col < W add
  //   x[conv_input_index(ConvLayout::nchw, s, n, c, h, col)] * w[conv_weight_index(..., k, c, r,
  //   t)]
  // to a float sum (outside the image it is padding: skip the tap, never read x there).
  // Then add bias[k] if bias is not null, and store the sum at y[index].
  (void)x, (void)w, (void)bias, (void)y;
}

}  // namespace direct_naive

void conv2d_direct_naive(const ConvShape& shape, const float* x, const float* w, const float* bias,
                         float* y, cudaStream_t stream) {
  using namespace direct_naive;
  // ---- given: the same in the skeleton and the solution (./course check compares) ----
  constexpr const char* function = "conv2d_direct_naive";
  require_conv_arguments(function, shape);  // sizes, strides, padding, an empty output...
  require_conv_pointers(function, shape, x, w, y);
  if (shape.N == 0) return;  // nothing to compute, and a grid of zero blocks is an error
  // ---- end of given ----

  // TODO(m3.03c): launch conv2d_direct_naive_kernel on `stream`, one thread per output
  // element in a one-dimensional grid of kThreads-thread blocks. course::grid_blocks_1d
  // (course/launch.h) rounds up and checks the grid's limit in x:
  //   const unsigned int blocks = grid_blocks_1d(function, shape.output_elements(), kThreads);
  //   conv2d_direct_naive_kernel<<<blocks, kThreads, 0, stream>>>(shape, x, w, bias, y);
  (void)stream;

  CUDA_CHECK_LAUNCH();  // a bad launch configuration is reported here
}

}  // namespace course::COURSE_IMPL
