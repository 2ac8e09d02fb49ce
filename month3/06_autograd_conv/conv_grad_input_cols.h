// Exercise m3.06, given code: float32 grad-input for layers with few input channels, by a
// GEMM into columns and a col2im GATHER (autograd_conv_given.cuh includes this header and
// runs it from conv2d_grad_input; grad_input_by_columns there is the host side).
//
// Why a second path. The stride phases (conv_split.h) run each phase of dx as a stride-1
// forward whose OUTPUT channels are the layer's input channels C. For a network's first layer
// C = 3 (RGB): m3.04's GEMM then has an output of 3 rows, and cuBLAS's SGEMM kernels tile
// that dimension in blocks of 32 to 128 rows, so nearly every tile is empty; meanwhile the
// phase's im2col writes K x taps values of dy per output pixel to produce C = 3 outputs.
//
// The other order of the same sums. Per image n, with dy_n the [K x P Q] matrix:
//   dX_col_n[C R S x P Q] = W^T[C R S x K] * dy_n[K x P Q]
// is every product w[k][c][r][t] * dy[n][k][p][q] summed over k: column (p, q) holds what
// output pixel (p, q) sends back to each of its C R S input taps. That GEMM has a wide output
// (C R S = 147 rows for a 3-channel 7 x 7 filter, P Q columns) and K to reduce: cuBLAS's
// shape. Then col2im adds, for each dx element, the few dX_col entries that reach it:
//   dx[n][c][h][w] = sum over taps (r, t) and outputs (p, q) with
//                    p * stride_h + r * dilation_h - pad_h = h  (and alike for t, q)
//                    of dX_col_n[(c R + r) S + t][p Q + q].
// col2im usually SCATTERS (each column entry added into dx, with atomics, in whatever order
// the threads run). Here it GATHERS: one thread per dx element sums its own entries in a
// fixed order, so every run is bitwise the same and no element is written twice.
//
// Which taps reach h (one axis; the other alike). Tap r reaches h from output
// p = (h + pad - r d) / s when that division is exact and 0 <= p < P. Exactness depends on
// r modulo s / g only (g = gcd(s, d)): the taps that reach h are r0, r0 + s/g, r0 + 2 s/g, ...
// (conv_split.h's stride phases, seen from one element), and each step lowers p by d / g. So a
// thread computes its first tap r0 once, by a modular inverse, instead of testing all R taps:
//   r d = h + pad (mod s)  needs  g | h + pad, and then  r = ((h + pad) / g) * inv (mod s / g),
// inv the inverse of d / g modulo s / g (ColumnAxis, computed on the host).
//
// The columns of a whole batch are large (C R S x N P Q floats: 236 MB for the C = 3 stem at
// batch 32). They run in chunks of images whose dX_col fits a budget of a few tens of MiB
// (conv_split.h's COURSE_CONV_DGRAD_COLUMN_BUDGET_BYTES, default 32 MiB), so that what the
// GEMM writes is still in the GPU's L2 cache when the gather reads it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "course/conv.h"

namespace course {

// One axis of the convolution as the gather sees it.
struct ColumnAxis {
  int size = 1;    // the input's H (or W)
  int out = 1;     // the output's P (or Q)
  int filter = 1;  // R (or S)
  int stride = 1, pad = 0, dilation = 1;
  int gcd = 1;       // gcd(stride, dilation)
  int tap_step = 1;  // stride / gcd: the taps that reach one input index are this far apart
  int out_step = 1;  // dilation / gcd: how far p moves back per tap step
  int inverse = 0;   // (dilation / gcd)^-1 modulo tap_step (0 when tap_step == 1)
};

inline ColumnAxis plan_column_axis(int size, int out, int filter, int stride, int pad,
                                   int dilation) {
  ColumnAxis a;
  a.size = size, a.out = out, a.filter = filter;
  a.stride = stride, a.pad = pad, a.dilation = dilation;
  int g = stride, b = dilation;
  while (b != 0) {
    const int t = g % b;
    g = b, b = t;
  }
  a.gcd = g;
  a.tap_step = stride / g;
  a.out_step = dilation / g;
  // The extended Euclidean algorithm on (out_step, tap_step), coprime: x with
  // out_step * x = 1 (mod tap_step).
  std::int64_t r0 = a.tap_step, r1 = a.out_step % a.tap_step, x0 = 0, x1 = 1;
  while (r1 != 0) {
    const std::int64_t quotient = r0 / r1;
    const std::int64_t r2 = r0 - quotient * r1, x2 = x0 - quotient * x1;
    r0 = r1, r1 = r2, x0 = x1, x1 = x2;
  }
  a.inverse = static_cast<int>(((x0 % a.tap_step) + a.tap_step) % a.tap_step);
  return a;
}

// The taps that reach input index `in` of one axis: first_tap + j * tap_step from output
// first_out - j * out_step, j < taps (taps == 0: none, dx there is 0). The host can run it
// too (plain integer arithmetic).
struct TapRun {
  int first_tap = 0;
  int taps = 0;
  int first_out = 0;
};

__host__ __device__ inline TapRun taps_reaching(const ColumnAxis& a, int in) {
  TapRun run;
  const std::int64_t base = std::int64_t{in} + a.pad;  // >= 0
  if (base % a.gcd != 0) return run;                   // no r with r d = base (mod s)
  std::int64_t r = (base / a.gcd % a.tap_step) * a.inverse % a.tap_step;
  if (r >= a.filter) return run;
  std::int64_t p = (base - r * a.dilation) / a.stride;  // exact
  if (p >= a.out) {  // the first taps read outputs past the last: skip them
    const std::int64_t skip = (p - a.out) / a.out_step + 1;
    r += skip * a.tap_step;
    p -= skip * a.out_step;
  }
  if (r >= a.filter || p < 0) return run;
  const std::int64_t by_filter = (a.filter - 1 - r) / a.tap_step + 1;
  const std::int64_t by_output = p / a.out_step + 1;
  run.first_tap = static_cast<int>(r);
  run.first_out = static_cast<int>(p);
  run.taps = static_cast<int>(by_filter < by_output ? by_filter : by_output);
  return run;
}

// When conv2d_grad_input takes this path (float32 only): fewer than kColumnsMaxChannels input
// channels. The phases' GEMM has M = C output rows, and cuBLAS's SGEMM tiles that dimension
// 32 rows at the narrowest (64 or 128 for the fast kernels): below 16 channels more than half
// of every tile is zeros, and the phases' im2col writes K x taps values of dy per pixel where
// dX_col writes C x taps, fewer whenever C < K. From 16 channels up the phases' GEMM tiles
// fill and their im2col is no longer the larger copy for the layers of a CNN (K >= C), so the
// phases stay. One image's dX_col must also stay below kColumnsMaxImageBytes (1 GiB, the
// forward's X_col default budget): a huge image with a large filter takes the phases, which
// need no such buffer.
inline constexpr int kColumnsMaxChannels = 16;
inline constexpr std::int64_t kColumnsMaxImageBytes = std::int64_t{1} << 30;

inline std::int64_t grad_input_column_bytes_per_image(const ConvShape& s) {
  return s.gemm_k() * s.P() * s.Q() * static_cast<std::int64_t>(sizeof(float));
}

inline bool grad_input_by_columns_fits(const ConvShape& s) {
  return s.C < kColumnsMaxChannels && grad_input_column_bytes_per_image(s) <= kColumnsMaxImageBytes;
}

// How many images of a batch of N go into one dX_col: as many as fit `budget_bytes`, at
// least one, at most N.
inline int grad_input_column_chunk(const ConvShape& s, std::int64_t budget_bytes) {
  const std::int64_t per_image = std::max<std::int64_t>(1, grad_input_column_bytes_per_image(s));
  return static_cast<int>(std::max<std::int64_t>(
      1, std::min<std::int64_t>(std::max(s.N, 1), budget_bytes / per_image)));
}

constexpr int kCol2imThreads = 256;

namespace {  // the kernel: one definition, in the one translation unit that includes this

// dx of the s.N images of one chunk from their dX_col (images one after another, each
// [C R S][P Q] row-major): one thread per dx element, consecutive threads along a row of dx
// (their columns entries q are consecutive or a stride apart). The sum runs over the tap runs
// of the element's row and column (taps_reaching), rows outer, in one fixed order.
__global__ void __launch_bounds__(kCol2imThreads)
    col2im_gather_kernel(ConvShape s, ColumnAxis along_h, ColumnAxis along_w,
                         const float* __restrict__ columns, float* __restrict__ dx) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= std::int64_t{s.N} * s.C * s.H * s.W) return;
  const int w = static_cast<int>(i % s.W);
  const int h = static_cast<int>((i / s.W) % s.H);
  const std::int64_t image_channel = i / (std::int64_t{s.W} * s.H);  // n * C + c
  const TapRun rows = taps_reaching(along_h, h);
  const TapRun cols = taps_reaching(along_w, w);
  const std::int64_t pixels = std::int64_t{along_h.out} * along_w.out;
  // dX_col row (c R + r) S + t of image n starts at ((n C + c) R + r) S + t rows in.
  const float* base = columns + image_channel * s.R * s.S * pixels;
  float sum = 0.0f;
  for (int a = 0; a < rows.taps; ++a) {
    const int r = rows.first_tap + a * along_h.tap_step;
    const int p = rows.first_out - a * along_h.out_step;
    for (int b = 0; b < cols.taps; ++b) {
      const int t = cols.first_tap + b * along_w.tap_step;
      const int q = cols.first_out - b * along_w.out_step;
      sum += base[(std::int64_t{r} * s.S + t) * pixels + std::int64_t{p} * along_w.out + q];
    }
  }
  dx[i] = sum;
}

}  // namespace
}  // namespace course
