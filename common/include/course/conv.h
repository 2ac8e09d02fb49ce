// The convolution family's interface, shared by month 3's convolution kernels (m3.03 to
// m3.06): the shape of a 2-D convolution, its output size, where an element lives in the
// two layouts the course uses, and the argument checks every launcher starts with. Kernel
// code includes this; the float64 references and tolerances are in course/conv_reference.h
// (tests and benchmarks only).
//
// Like torch.nn.functional.conv2d (groups = 1), the course computes the cross-correlation
//
//   y[n][k][p][q] = sum over c, r, s of x[n][c][p * stride_h - pad_h + r * dilation_h]
//                                          [q * stride_w - pad_w + s * dilation_w] * w[k][c][r][s]
//
// (no flip of the filter), with x read as 0 outside the image (zero padding), for
//   x: N images of C channels, H x W        w: K filters of C x R x S
//   y: N images of K channels, P x Q        P = floor((H + 2 pad_h - dilation_h (R - 1) - 1) / stride_h) + 1
// and Q alike.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "course/launch.h"

namespace course {

// Where the elements of x, w and y live in memory.
//   nchw: x[N][C][H][W], w[K][C][R][S], y[N][K][P][Q]: PyTorch's default (contiguous).
//   nhwc: x[N][H][W][C], w[K][R][S][C], y[N][P][Q][K]: PyTorch's channels_last, the
//         tensor cores' layout (m3.05): the channels of one pixel are contiguous.
enum class ConvLayout { nchw, nhwc };

inline const char* to_string(ConvLayout layout) {
  return layout == ConvLayout::nchw ? "nchw" : "nhwc";
}

struct ConvShape {
  int N = 1, C = 1, H = 1, W = 1;  // input: batch, channels, height, width
  int K = 1, R = 1, S = 1;         // filters: count (output channels), height, width
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
  int dilation_h = 1, dilation_w = 1;

  // The output's height and width; 0 when the filter does not fit in the padded image
  // (require_conv_arguments rejects that). The span is tested first: C++ division rounds
  // toward zero, so -1 / 2 + 1 would give 1 instead of floor(-1 / 2) + 1 = 0.
  __host__ __device__ constexpr int P() const {
    const int span = H + 2 * pad_h - dilation_h * (R - 1) - 1;
    return span < 0 ? 0 : span / stride_h + 1;
  }
  __host__ __device__ constexpr int Q() const {
    const int span = W + 2 * pad_w - dilation_w * (S - 1) - 1;
    return span < 0 ? 0 : span / stride_w + 1;
  }

  constexpr std::int64_t input_elements() const { return std::int64_t{N} * C * H * W; }
  constexpr std::int64_t weight_elements() const { return std::int64_t{K} * C * R * S; }
  constexpr std::int64_t output_elements() const {
    return std::int64_t{N} * K * P() * Q();
  }
  // The convolution as a GEMM (m3.04, m3.05): M = N P Q output pixels, N = K filters,
  // K = C R S products per output.
  constexpr std::int64_t gemm_k() const { return std::int64_t{C} * R * S; }
  // Multiply-adds count 2 operations, as for GEMM.
  constexpr double flops() const { return 2.0 * static_cast<double>(output_elements()) * gemm_k(); }
};

// "N32 C64 56x56 K64 3x3 stride 1 pad 1 dilation 1", for messages and test names.
inline std::string to_string(const ConvShape& s) {
  return "N" + std::to_string(s.N) + " C" + std::to_string(s.C) + " " + std::to_string(s.H) +
         "x" + std::to_string(s.W) + " K" + std::to_string(s.K) + " " + std::to_string(s.R) +
         "x" + std::to_string(s.S) + " stride " + std::to_string(s.stride_h) +
         (s.stride_w != s.stride_h ? "," + std::to_string(s.stride_w) : "") + " pad " +
         std::to_string(s.pad_h) + (s.pad_w != s.pad_h ? "," + std::to_string(s.pad_w) : "") +
         " dilation " + std::to_string(s.dilation_h) +
         (s.dilation_w != s.dilation_h ? "," + std::to_string(s.dilation_w) : "");
}

// Offsets of x[n][c][h][w], w[k][c][r][s] and y[n][k][p][q] in `layout`.
__host__ __device__ inline std::int64_t conv_input_index(ConvLayout layout, const ConvShape& s,
                                                         int n, int c, int h, int w) {
  return layout == ConvLayout::nchw
             ? ((std::int64_t{n} * s.C + c) * s.H + h) * s.W + w
             : ((std::int64_t{n} * s.H + h) * s.W + w) * s.C + c;
}
__host__ __device__ inline std::int64_t conv_weight_index(ConvLayout layout, const ConvShape& s,
                                                          int k, int c, int r, int t) {
  return layout == ConvLayout::nchw
             ? ((std::int64_t{k} * s.C + c) * s.R + r) * s.S + t
             : ((std::int64_t{k} * s.R + r) * s.S + t) * s.C + c;
}
__host__ __device__ inline std::int64_t conv_output_index(ConvLayout layout, const ConvShape& s,
                                                          int n, int k, int p, int q) {
  return layout == ConvLayout::nchw
             ? ((std::int64_t{n} * s.K + k) * s.P() + p) * s.Q() + q
             : ((std::int64_t{n} * s.P() + p) * s.Q() + q) * s.K + k;
}

// The checks every convolution launcher starts with. Throws std::invalid_argument naming
// `function` and the bad value: a negative batch, a channel, filter or image size below 1,
// a stride or dilation below 1, a negative padding, a filter that does not fit in the padded
// image (an empty or negative output), or a tensor of 2^31 elements or more (the kernels
// index with int inside a tensor). N == 0 is allowed: there is nothing to compute.
inline void require_conv_arguments(const char* function, const ConvShape& s) {
  // The messages are lambdas, made only when a check fails (course/launch.h): these checks
  // run before every launch, and formatting the shape each time would cost more than them.
  const auto with_shape = [&](const std::string& what) { return what + " (" + to_string(s) + ")"; };
  require(s.N >= 0, function,
          [&] { return with_shape("the batch N must be >= 0, got " + std::to_string(s.N)); });
  require(s.C >= 1 && s.H >= 1 && s.W >= 1, function, [&] {
    return with_shape("C, H and W must be >= 1, got C = " + std::to_string(s.C) + ", H = " +
                      std::to_string(s.H) + ", W = " + std::to_string(s.W));
  });
  require(s.K >= 1 && s.R >= 1 && s.S >= 1, function, [&] {
    return with_shape("K, R and S must be >= 1, got K = " + std::to_string(s.K) + ", R = " +
                      std::to_string(s.R) + ", S = " + std::to_string(s.S));
  });
  require(s.stride_h >= 1 && s.stride_w >= 1, function, [&] {
    return with_shape("the stride must be >= 1, got " + std::to_string(s.stride_h) + ", " +
                      std::to_string(s.stride_w));
  });
  require(s.dilation_h >= 1 && s.dilation_w >= 1, function, [&] {
    return with_shape("the dilation must be >= 1, got " + std::to_string(s.dilation_h) + ", " +
                      std::to_string(s.dilation_w));
  });
  require(s.pad_h >= 0 && s.pad_w >= 0, function, [&] {
    return with_shape("the padding must be >= 0, got " + std::to_string(s.pad_h) + ", " +
                      std::to_string(s.pad_w));
  });
  require(s.P() >= 1 && s.Q() >= 1, function, [&] {
    return with_shape("the filter does not fit in the padded image: the output would be empty, " +
                      std::to_string(s.P()) + " x " + std::to_string(s.Q()));
  });
  constexpr std::int64_t kMaxElements = 2147483647;  // INT_MAX
  require(s.input_elements() <= kMaxElements && s.weight_elements() <= kMaxElements &&
              s.output_elements() <= kMaxElements,
          function, [&] { return with_shape("every tensor must have fewer than 2^31 elements"); });
}

// The signature every forward-convolution launcher of month 3 shares (m3.03, m3.04):
// y = conv2d(x, w) + bias, all device pointers in the launcher's layout, `bias` either null
// (no bias) or K values, the work queued on `stream`. ConvFnOf<__half> is the form for
// kernels whose x and w are float16 (their y and bias stay float32).
template <typename Input>
using ConvFnOf = void (*)(const ConvShape& shape, const Input* x, const Input* w,
                          const float* bias, float* y, cudaStream_t stream);
using ConvFn = ConvFnOf<float>;

// The pointer contract of every convolution launcher, checked after require_conv_arguments:
// w is never empty (K, C, R, S >= 1) and must not be null; x and y are empty exactly when
// N == 0, and then may be null (there is nothing to read or write). `bias` may always be
// null: no bias. Throws std::invalid_argument naming `function` and the null pointer.
inline void require_conv_pointers(const char* function, const ConvShape& s, const void* x,
                                  const void* w, const void* y) {
  // As above: the messages are made only when a check fails.
  const auto null_message = [&](const char* name) {
    return [&s, name] {
      return std::string(name) + " must be a device pointer, got null (" + to_string(s) + ")";
    };
  };
  require(w != nullptr, function, null_message("w"));
  require(s.N == 0 || x != nullptr, function, null_message("x"));
  require(s.N == 0 || y != nullptr, function, null_message("y"));
}

}  // namespace course
