// The convolution family's test side: float64 CPU references for the forward pass and both
// gradients, the tolerance, sampled outputs for large layers, and the shapes every
// convolution kernel of month 3 is graded on. Tests and benchmarks include this; kernels
// include course/conv.h only.
//
// The references compute in float64 from the float values the kernel gets (inputs already
// rounded to fp16 / bf16 where the kernel takes those), in the plainest loop order, so that
// they are easy to trust:
//   forward       y[n][k][p][q]  = sum_{c,r,s} x[n][c][h(p, r)][w(q, s)] * w[k][c][r][s] (+ b[k])
//   grad_input    dx[n][c][h][w] = sum over the (k, r, s, p, q) with h(p, r) = h, w(q, s) = w
//                                  of dy[n][k][p][q] * w[k][c][r][s]
//   grad_weight   dw[k][c][r][s] = sum_{n,p,q} dy[n][k][p][q] * x[n][c][h(p, r)][w(q, s)]
//   grad_bias     db[k]          = sum_{n,p,q} dy[n][k][p][q]
// with h(p, r) = p * stride_h - pad_h + r * dilation_h (and w(q, s) alike); terms whose
// input position falls in the padding are 0. All tensors are in `layout` (course/conv.h).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "course/conv.h"
#include "course/gemm_reference.h"
#include "course/verify.h"

namespace course {

// What the convolution tests and benchmarks call: any callable with the signature of
// course::ConvFn (course/conv.h), so a plain launcher (m3.03's) and a lambda that binds more
// arguments (m3.04's workspace) both fit. ConvCallOf<__half> (or __nv_bfloat16) is the form
// for kernels whose x and w are 16-bit (m3.05); y and the bias stay float32.
template <typename Input>
using ConvCallOf = std::function<void(const ConvShape& shape, const Input* x, const Input* w,
                                      const float* bias, float* y, cudaStream_t stream)>;
using ConvCall = ConvCallOf<float>;

namespace detail {

inline void check_conv_reference_sizes(const char* function, const ConvShape& s,
                                       const std::vector<float>* x, const std::vector<float>* w,
                                       const std::vector<float>* y) {
  require_conv_arguments(function, s);
  auto check = [&](const std::vector<float>* values, std::int64_t expected, const char* name) {
    require(values == nullptr || static_cast<std::int64_t>(values->size()) == expected, function,
            std::string(name) + " must hold " + std::to_string(expected) + " values for " +
                to_string(s) + ", got " + std::to_string(values ? values->size() : 0));
  };
  check(x, s.input_elements(), "x");
  check(w, s.weight_elements(), "w");
  check(y, s.output_elements(), "the output gradient dy");
}

// The input row (or column) that output row p and filter row r read; outside [0, size) it
// is padding.
inline int conv_input_position(int p, int r, int stride, int pad, int dilation) {
  return p * stride - pad + r * dilation;
}

}  // namespace detail

// The im2col matrix of images [first_image, first_image + images) of an NCHW x, as m3.04's
// kernel writes it: row-major, C R S rows of images * P * Q columns,
//   x_col[(c * R + r) * S + s][(n - first_image) * P * Q + p * Q + q]
//     = x[n][c][p * stride_h - pad_h + r * dilation_h][q * stride_w - pad_w + s * dilation_w]
// and 0 where that position lies in the padding. Row (c, r, s) is the weight w[k][c][r][s]'s
// partner, so W[K x C R S] times this matrix is y for those images, image after image in
// its columns. Exact: it only copies floats.
inline std::vector<float> reference_im2col(const ConvShape& s, const std::vector<float>& x,
                                           int first_image, int images) {
  detail::check_conv_reference_sizes("reference_im2col", s, &x, nullptr, nullptr);
  require(first_image >= 0 && images >= 0 && first_image + images <= s.N, "reference_im2col",
          "images [" + std::to_string(first_image) + ", " + std::to_string(first_image + images) +
              ") are not in the batch of N = " + std::to_string(s.N));
  const int P = s.P(), Q = s.Q();
  const std::int64_t columns = std::int64_t{images} * P * Q;
  std::vector<float> x_col(static_cast<std::size_t>(s.gemm_k() * columns), 0.0f);
  for (int c = 0; c < s.C; ++c) {
    for (int r = 0; r < s.R; ++r) {
      for (int t = 0; t < s.S; ++t) {
        const std::int64_t row = (std::int64_t{c} * s.R + r) * s.S + t;
        for (int i = 0; i < images; ++i) {
          for (int p = 0; p < P; ++p) {
            const int h = detail::conv_input_position(p, r, s.stride_h, s.pad_h, s.dilation_h);
            if (h < 0 || h >= s.H) continue;  // padding: stays 0
            for (int q = 0; q < Q; ++q) {
              const int col = detail::conv_input_position(q, t, s.stride_w, s.pad_w, s.dilation_w);
              if (col < 0 || col >= s.W) continue;
              x_col[static_cast<std::size_t>(row * columns + (std::int64_t{i} * P + p) * Q + q)] =
                  x[static_cast<std::size_t>(
                      conv_input_index(ConvLayout::nchw, s, first_image + i, c, h, col))];
            }
          }
        }
      }
    }
  }
  return x_col;
}

// y = conv2d(x, w) + bias for the outputs in `outputs` (indices into y, in `layout`), in
// float64. `bias` is empty (no bias) or holds K values.
inline std::vector<double> reference_conv2d_outputs(const ConvShape& s, ConvLayout layout,
                                                    const std::vector<float>& x,
                                                    const std::vector<float>& w,
                                                    const std::vector<float>& bias,
                                                    const std::vector<std::int64_t>& outputs) {
  detail::check_conv_reference_sizes("reference_conv2d", s, &x, &w, nullptr);
  require(bias.empty() || static_cast<int>(bias.size()) == s.K, "reference_conv2d",
          "the bias must be empty or hold K = " + std::to_string(s.K) + " values, got " +
              std::to_string(bias.size()));
  const int P = s.P(), Q = s.Q();
  std::vector<double> out(outputs.size());
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    std::int64_t rest = outputs[i];
    require(rest >= 0 && rest < s.output_elements(), "reference_conv2d",
            "output index " + std::to_string(rest) + " is outside y for " + to_string(s));
    int n, k, p, q;  // undo conv_output_index
    if (layout == ConvLayout::nchw) {
      q = static_cast<int>(rest % Q), rest /= Q;
      p = static_cast<int>(rest % P), rest /= P;
      k = static_cast<int>(rest % s.K), n = static_cast<int>(rest / s.K);
    } else {
      k = static_cast<int>(rest % s.K), rest /= s.K;
      q = static_cast<int>(rest % Q), rest /= Q;
      p = static_cast<int>(rest % P), n = static_cast<int>(rest / P);
    }
    double sum = bias.empty() ? 0.0 : static_cast<double>(bias[k]);
    for (int c = 0; c < s.C; ++c) {
      for (int r = 0; r < s.R; ++r) {
        const int h = detail::conv_input_position(p, r, s.stride_h, s.pad_h, s.dilation_h);
        if (h < 0 || h >= s.H) continue;  // padding
        for (int t = 0; t < s.S; ++t) {
          const int col = detail::conv_input_position(q, t, s.stride_w, s.pad_w, s.dilation_w);
          if (col < 0 || col >= s.W) continue;
          sum += static_cast<double>(x[conv_input_index(layout, s, n, c, h, col)]) *
                 static_cast<double>(w[conv_weight_index(layout, s, k, c, r, t)]);
        }
      }
    }
    out[i] = sum;
  }
  return out;
}

// Every output of y = conv2d(x, w) + bias, in float64, in `layout`. N * K * P * Q * C * R * S
// multiply-adds: keep full checks to about 10^9 and sample beyond (conv_sample_outputs).
inline std::vector<double> reference_conv2d(const ConvShape& s, ConvLayout layout,
                                            const std::vector<float>& x,
                                            const std::vector<float>& w,
                                            const std::vector<float>& bias = {}) {
  require_conv_arguments("reference_conv2d", s);
  std::vector<std::int64_t> all(static_cast<std::size_t>(s.output_elements()));
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
  return reference_conv2d_outputs(s, layout, x, w, bias, all);
}

// dx, the gradient of sum(y * dy) with respect to x, in float64, in `layout` (the input's
// shape). Computed as a scatter over the outputs, a different order from a gather kernel's.
inline std::vector<double> reference_conv2d_grad_input(const ConvShape& s, ConvLayout layout,
                                                       const std::vector<float>& w,
                                                       const std::vector<float>& dy) {
  detail::check_conv_reference_sizes("reference_conv2d_grad_input", s, nullptr, &w, &dy);
  std::vector<double> dx(static_cast<std::size_t>(s.input_elements()), 0.0);
  for (int n = 0; n < s.N; ++n) {
    for (int k = 0; k < s.K; ++k) {
      for (int p = 0; p < s.P(); ++p) {
        for (int q = 0; q < s.Q(); ++q) {
          const double g = dy[conv_output_index(layout, s, n, k, p, q)];
          for (int c = 0; c < s.C; ++c) {
            for (int r = 0; r < s.R; ++r) {
              const int h = detail::conv_input_position(p, r, s.stride_h, s.pad_h, s.dilation_h);
              if (h < 0 || h >= s.H) continue;
              for (int t = 0; t < s.S; ++t) {
                const int col = detail::conv_input_position(q, t, s.stride_w, s.pad_w, s.dilation_w);
                if (col < 0 || col >= s.W) continue;
                dx[conv_input_index(layout, s, n, c, h, col)] +=
                    g * static_cast<double>(w[conv_weight_index(layout, s, k, c, r, t)]);
              }
            }
          }
        }
      }
    }
  }
  return dx;
}

// dw, the gradient of sum(y * dy) with respect to w, in float64, in `layout` (the filters'
// shape).
inline std::vector<double> reference_conv2d_grad_weight(const ConvShape& s, ConvLayout layout,
                                                        const std::vector<float>& x,
                                                        const std::vector<float>& dy) {
  detail::check_conv_reference_sizes("reference_conv2d_grad_weight", s, &x, nullptr, &dy);
  std::vector<double> dw(static_cast<std::size_t>(s.weight_elements()), 0.0);
  for (int k = 0; k < s.K; ++k) {
    for (int c = 0; c < s.C; ++c) {
      for (int r = 0; r < s.R; ++r) {
        for (int t = 0; t < s.S; ++t) {
          double sum = 0.0;
          for (int n = 0; n < s.N; ++n) {
            for (int p = 0; p < s.P(); ++p) {
              const int h = detail::conv_input_position(p, r, s.stride_h, s.pad_h, s.dilation_h);
              if (h < 0 || h >= s.H) continue;
              for (int q = 0; q < s.Q(); ++q) {
                const int col = detail::conv_input_position(q, t, s.stride_w, s.pad_w, s.dilation_w);
                if (col < 0 || col >= s.W) continue;
                sum += static_cast<double>(dy[conv_output_index(layout, s, n, k, p, q)]) *
                       static_cast<double>(x[conv_input_index(layout, s, n, c, h, col)]);
              }
            }
          }
          dw[conv_weight_index(layout, s, k, c, r, t)] = sum;
        }
      }
    }
  }
  return dw;
}

// db[k] = the sum of dy over n, p and q, in float64.
inline std::vector<double> reference_conv2d_grad_bias(const ConvShape& s, ConvLayout layout,
                                                      const std::vector<float>& dy) {
  detail::check_conv_reference_sizes("reference_conv2d_grad_bias", s, nullptr, nullptr, &dy);
  std::vector<double> db(static_cast<std::size_t>(s.K), 0.0);
  for (int n = 0; n < s.N; ++n) {
    for (int k = 0; k < s.K; ++k) {
      for (int p = 0; p < s.P(); ++p) {
        for (int q = 0; q < s.Q(); ++q) db[k] += dy[conv_output_index(layout, s, n, k, p, q)];
      }
    }
  }
  return db;
}

// The tolerance for a convolution output against the float64 reference, for inputs in
// [-1, 1]: each output is a sum of C R S products, so it is gemm_tolerance with K = C R S
// (course/gemm.h explains why the absolute part grows with the length of the sum). For a
// gradient, pass the length of its sums: K R S for grad_input (at most), N P Q for
// grad_weight.
inline Tolerance conv_tolerance(Dtype dtype, std::int64_t products_per_output) {
  const std::int64_t length = std::max<std::int64_t>(products_per_output, 1);
  return gemm_tolerance(dtype, static_cast<int>(std::min<std::int64_t>(length, 2147483647)));
}

// The outputs a sampled check compares when a full reference is too slow: for every image
// n and filter k of a handful (the first two, the last two, and every 37th), every output
// pixel of a few rows (the first two, the last two, and one row in every 8 at an offset that
// changes from block to block), plus every (n, k) at the four corner pixels. So the edges
// of every tile of pixels, every filter and every image are hit. Sorted, no duplicates.
inline std::vector<std::int64_t> conv_sample_outputs(const ConvShape& s, ConvLayout layout) {
  const int P = s.P(), Q = s.Q();
  auto pick = [](int count, int every) {
    std::vector<int> picked;
    for (int i : {0, 1, count - 2, count - 1}) {
      if (i >= 0 && i < count) picked.push_back(i);
    }
    for (int block = 0; block * every < count; ++block) {
      const int i = block * every + (block * 5 + 3) % every;
      if (i < count) picked.push_back(i);
    }
    std::sort(picked.begin(), picked.end());
    picked.erase(std::unique(picked.begin(), picked.end()), picked.end());
    return picked;
  };
  std::vector<std::int64_t> outputs;
  for (int n : pick(s.N, 37)) {
    for (int k : pick(s.K, 37)) {
      for (int p : pick(P, 8)) {
        for (int q = 0; q < Q; ++q) outputs.push_back(conv_output_index(layout, s, n, k, p, q));
      }
    }
  }
  for (int n = 0; n < s.N; ++n) {
    for (int k = 0; k < s.K; ++k) {
      for (int p : {0, P - 1}) {
        for (int q : {0, Q - 1}) outputs.push_back(conv_output_index(layout, s, n, k, p, q));
      }
    }
  }
  std::sort(outputs.begin(), outputs.end());
  outputs.erase(std::unique(outputs.begin(), outputs.end()), outputs.end());
  return outputs;
}

// The shapes every convolution kernel of month 3 must get right, each named for its test.
struct ConvCase {
  const char* name;
  ConvShape shape;
};

inline std::ostream& operator<<(std::ostream& out, const ConvCase& c) {
  return out << c.name << " (" << to_string(c.shape) << ")";
}

inline ConvShape conv_shape(int N, int C, int H, int W, int K, int R, int S, int stride, int pad,
                            int dilation = 1) {
  ConvShape s;
  s.N = N, s.C = C, s.H = H, s.W = W, s.K = K, s.R = R, s.S = S;
  s.stride_h = s.stride_w = stride;
  s.pad_h = s.pad_w = pad;
  s.dilation_h = s.dilation_w = dilation;
  return s;
}

inline std::vector<ConvCase> conv_test_cases() {
  return {
      {"N1_1x1", conv_shape(1, 8, 9, 11, 5, 1, 1, 1, 0)},          // a 1 x 1 filter: a GEMM
      {"OddImage_3x3", conv_shape(2, 5, 13, 7, 6, 3, 3, 1, 1)},    // odd H and W, same size out
      {"Filter5x5", conv_shape(2, 3, 17, 19, 4, 5, 5, 1, 2)},
      {"Filter7x7Stride2", conv_shape(2, 3, 23, 21, 8, 7, 7, 2, 3)},  // the ResNet stem, small
      {"Stride2", conv_shape(3, 6, 15, 16, 7, 3, 3, 2, 1)},
      {"Dilation2", conv_shape(2, 4, 14, 15, 5, 3, 3, 1, 2, 2)},
      {"PadLargerThanRadius", conv_shape(1, 3, 6, 5, 4, 3, 3, 1, 3)},
      {"OutputOneRow", conv_shape(2, 4, 3, 12, 5, 3, 3, 1, 0)},    // P = 1
      {"OutputOneColumn", conv_shape(2, 4, 12, 3, 5, 3, 3, 1, 0)},  // Q = 1
      {"OneChannel", conv_shape(4, 1, 10, 10, 6, 3, 3, 1, 1)},      // C = 1
      {"OneFilter", conv_shape(3, 7, 9, 9, 1, 3, 3, 1, 1)},         // K = 1
      {"NonSquare", [] {
         ConvShape s = conv_shape(2, 5, 12, 17, 6, 3, 5, 1, 0);     // R != S, per-axis options
         s.stride_w = 2, s.pad_h = 1, s.pad_w = 2, s.dilation_h = 2;
         return s;
       }()},
  };
}

// The ResNet layers the benchmarks time (N, C, H = W, K, R = S, stride, pad), checked on
// sampled outputs in the tests.
inline std::vector<ConvCase> conv_resnet_layers() {
  return {
      {"ResNet_C64_56_K64_3x3", conv_shape(32, 64, 56, 56, 64, 3, 3, 1, 1)},
      {"ResNet_C128_28_K128_3x3", conv_shape(32, 128, 28, 28, 128, 3, 3, 1, 1)},
      {"ResNet_C256_14_K256_3x3", conv_shape(32, 256, 14, 14, 256, 3, 3, 1, 1)},
      {"ResNet_C512_7_K512_3x3", conv_shape(64, 512, 7, 7, 512, 3, 3, 1, 1)},
      {"ResNet_C64_56_K256_1x1", conv_shape(32, 64, 56, 56, 256, 1, 1, 1, 0)},
      {"ResNet_Stem_C3_224_K64_7x7", conv_shape(32, 3, 224, 224, 64, 7, 7, 2, 3)},
  };
}

}  // namespace course
