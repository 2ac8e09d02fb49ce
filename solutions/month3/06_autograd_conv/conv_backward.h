// Exercise m3.06: what one element of the forward and of each gradient is. (Reference solution.)
//
// These functions are __host__ __device__: the CPU kernels (autograd_conv.cpp) call them in
// plain loops, and the CUDA kernels (autograd_conv_given.cuh) call them once per thread or per
// block. So the arithmetic you write here is graded twice: by the CPU tests (gradcheck in
// float64, in CI) and by the CUDA tests on the GPU. T is float or double.
//
// Notation (course/conv.h): x[N][C][H][W], w[K][C][R][S], y and dy[N][K][P][Q], NCHW and
// contiguous; input row h(p, r) = p * stride_h - pad_h + r * dilation_h, and column w(q, s)
// alike. The chain rule on y[n][k][p][q] = sum_{c,r,s} x[n][c][h(p,r)][w(q,s)] w[k][c][r][s]:
//   dx[n][c][h][w]  = sum over the (k, r, s) and (p, q) with h(p, r) = h, w(q, s) = w
//                     of dy[n][k][p][q] * w[k][c][r][s]          (a transposed convolution)
//   dw[k][c][r][s]  = sum_{n,p,q} dy[n][k][p][q] * x[n][c][h(p,r)][w(q,s)]    (a correlation)
//   db[k]           = sum_{n,p,q} dy[n][k][p][q]
#pragma once

#include <cstdint>

// ---- given: the same in the skeleton and the solution (./course check compares) ----
#include "course/conv.h"

namespace course {

// y[n][k][p][q] = bias[k] + sum_{c,r,s} x[..] * w[..], with bias null for none: the forward,
// for the CPU and for the float64 CUDA kernel (float32 CUDA runs the forward table: m3.04's
// im2col + GEMM, or m3.03's tiled kernel).
template <typename T>
__host__ __device__ inline T forward_at(const ConvShape& s, const T* x, const T* w, const T* bias,
                                        int n, int k, int p, int q) {
  T sum = bias != nullptr ? bias[k] : T(0);
  for (int c = 0; c < s.C; ++c) {
    for (int r = 0; r < s.R; ++r) {
      const int h = p * s.stride_h - s.pad_h + r * s.dilation_h;
      if (h < 0 || h >= s.H) continue;  // the padding reads as 0
      for (int t = 0; t < s.S; ++t) {
        const int col = q * s.stride_w - s.pad_w + t * s.dilation_w;
        if (col < 0 || col >= s.W) continue;
        sum += x[conv_input_index(ConvLayout::nchw, s, n, c, h, col)] *
               w[conv_weight_index(ConvLayout::nchw, s, k, c, r, t)];
      }
    }
  }
  return sum;
}
// ---- end of given ----

// dx[n][c][h][w] in the GATHER form: this one input element adds up, over every filter tap
// (r, s) and every output channel k, the dy of the output pixel (p, q) that read it through
// that tap, if there is one. Row h was read by output row p through filter row r when
// p * stride_h - pad_h + r * dilation_h = h, i.e. p = (h + pad_h - r * dilation_h) / stride_h
// when that division is exact and 0 <= p < P (and the columns alike). Nothing else writes
// dx[n][c][h][w], so a thread per element needs no atomics and always sums in one order.
template <typename T>
__host__ __device__ inline T grad_input_at(const ConvShape& s, const T* dy, const T* w, int n,
                                           int c, int h, int col) {
  const int P = s.P(), Q = s.Q();
  T sum = T(0);
  for (int r = 0; r < s.R; ++r) {
    // The solution: p * stride_h = h + pad_h - r * dilation_h must be a multiple of the
    // stride, at least 0 and less than P * stride_h. (Test the sign first: C++'s % of a
    // negative number is negative or 0, and its / rounds toward zero.)
    const int ph = h + s.pad_h - r * s.dilation_h;
    if (ph < 0 || ph % s.stride_h != 0) continue;
    const int p = ph / s.stride_h;
    if (p >= P) continue;
    for (int t = 0; t < s.S; ++t) {
      const int qw = col + s.pad_w - t * s.dilation_w;
      if (qw < 0 || qw % s.stride_w != 0) continue;
      const int q = qw / s.stride_w;
      if (q >= Q) continue;
      for (int k = 0; k < s.K; ++k) {
        sum += dy[conv_output_index(ConvLayout::nchw, s, n, k, p, q)] *
               w[conv_weight_index(ConvLayout::nchw, s, k, c, r, t)];
      }
    }
  }
  return sum;
}

// Part of dw[k][c][r][s]: the sum over the output pixels i = first, first + step, ... of the
// N * P * Q pixels (i = (n * P + p) * Q + q), of dy[n][k][p][q] * x[n][c][h(p, r)][w(q, s)],
// the terms whose input position lies in the padding being 0. The CPU kernel calls it with
// first = 0, step = 1 (the whole sum); the CUDA kernel gives each of a block's threads its
// own `first` and step = blockDim.x, then adds the threads' parts in a fixed order.
template <typename T>
__host__ __device__ inline T grad_weight_partial(const ConvShape& s, const T* dy, const T* x, int k,
                                                 int c, int r, int t, std::int64_t first,
                                                 std::int64_t step) {
  const int P = s.P(), Q = s.Q();
  const std::int64_t pixels = std::int64_t{s.N} * P * Q;
  T sum = T(0);
  // The solution: undo i = (n * P + p) * Q + q, find the input position this pixel read
  // through tap (r, t), skip it in the padding.
  for (std::int64_t i = first; i < pixels; i += step) {
    const int q = static_cast<int>(i % Q);
    const int p = static_cast<int>((i / Q) % P);
    const int n = static_cast<int>(i / (std::int64_t{P} * Q));
    const int h = p * s.stride_h - s.pad_h + r * s.dilation_h;
    const int col = q * s.stride_w - s.pad_w + t * s.dilation_w;
    if (h < 0 || h >= s.H || col < 0 || col >= s.W) continue;
    sum += dy[conv_output_index(ConvLayout::nchw, s, n, k, p, q)] *
           x[conv_input_index(ConvLayout::nchw, s, n, c, h, col)];
  }
  return sum;
}

}  // namespace course
