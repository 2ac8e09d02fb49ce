// Exercise m3.03, part 1: direct convolution, one thread per output element. (Reference
// solution.)
//
// What is new after month 2: the loop nest of a convolution. Each output y[n][k][p][q] is a
// dot product of length C * R * S between the filter w[k] and the window of x that the
// output pixel (p, q) sees. This kernel writes that loop nest as it is: thread i computes
// output i, in the order of y's memory (q fastest), so a warp covers consecutive q of one
// row: its loads of x are (nearly) consecutive and its loads of w are one address, a
// broadcast.
//
// Why it is slow (README.md, "Where the time goes"): nothing is shared on purpose. Every
// input value is read by up to K * R * S threads (every filter, every tap that lands on it)
// and every weight by N * P * Q threads; the L1 and L2 caches catch much of the reuse, by
// luck, but each multiply-add still issues two loads. Part 2 (conv2d_direct_tiled.cu) reads
// each value once per block into shared memory and reuses it from registers.
//
// Indices: a tensor here has fewer than 2^31 elements (require_conv_arguments), so every
// offset fits in an int, but blockIdx.x * blockDim.x + threadIdx.x of the last block may
// not, and n * C * H * W products are formed in 64 bits by the course's index helpers.
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

  // Undo y's NCHW offset ((n * K + k) * P + p) * Q + q: q is the fastest index. Every value
  // fits in an int once divided out.
  const int q = static_cast<int>(index % Q);
  std::int64_t rest = index / Q;
  const int p = static_cast<int>(rest % P);
  rest /= P;
  const int k = static_cast<int>(rest % s.K);
  const int n = static_cast<int>(rest / s.K);

  // The loop nest of the convolution. h and col are the input row and column that filter
  // tap (r, t) of output (p, q) reads; outside the image it is padding, which adds 0, so
  // the tap is skipped -- without reading x there, which would be out of bounds.
  float sum = 0.0f;
  for (int c = 0; c < s.C; ++c) {
    for (int r = 0; r < s.R; ++r) {
      const int h = p * s.stride_h - s.pad_h + r * s.dilation_h;
      if (h < 0 || h >= s.H) continue;
      for (int t = 0; t < s.S; ++t) {
        const int col = q * s.stride_w - s.pad_w + t * s.dilation_w;
        if (col < 0 || col >= s.W) continue;
        sum = fmaf(__ldg(x + conv_input_index(ConvLayout::nchw, s, n, c, h, col)),
                   __ldg(w + conv_weight_index(ConvLayout::nchw, s, k, c, r, t)), sum);
      }
    }
  }
  if (bias != nullptr) sum += __ldg(bias + k);
  y[index] = sum;  // index is y's offset of (n, k, p, q): consecutive threads, consecutive q
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

  // One thread per output element, in a one-dimensional grid: x allows 2^31 - 1 blocks
  // (y and z only 65535), far more than N * K * P * Q < 2^31 outputs need.
  const unsigned int blocks = grid_blocks_1d(function, shape.output_elements(), kThreads);
  conv2d_direct_naive_kernel<<<blocks, kThreads, 0, stream>>>(shape, x, w, bias, y);
  CUDA_CHECK_LAUNCH();
}

}  // namespace course::COURSE_IMPL
