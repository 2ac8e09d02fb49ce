// Tests of the convolution family (course/conv.h, course/conv_reference.h): the output size,
// the argument checks, and the float64 references, checked against independent
// computations: im2col followed by the GEMM reference, the other layout, hand-made filters
// whose output is a shifted copy of the input, and the adjoint identity that ties the two
// gradients to the forward pass. They need no GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/conv.h"
#include "course/conv_reference.h"
#include "course/gemm_reference.h"
#include "course/random.h"

namespace {

using course::ConvCase;
using course::ConvLayout;
using course::ConvShape;

std::vector<float> random_values(std::int64_t count, std::uint64_t seed) {
  return course::random_uniform<float>(static_cast<std::size_t>(count), seed);
}

// Largest |a - b| relative to the largest |b| (1 if b is all zeros).
double relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double diff = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return diff / (scale > 0.0 ? scale : 1.0);
}

double dot(const std::vector<double>& a, const std::vector<float>& b) {
  double sum = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += a[i] * static_cast<double>(b[i]);
  return sum;
}

// x (or w, or y) of an NCHW (KCRS) tensor laid out as NHWC (KRSC): what x.to(channels_last)
// holds in memory.
std::vector<float> to_nhwc(const std::vector<float>& nchw, int N, int C, int H, int W) {
  std::vector<float> out(nchw.size());
  for (int n = 0; n < N; ++n) {
    for (int c = 0; c < C; ++c) {
      for (int h = 0; h < H; ++h) {
        for (int w = 0; w < W; ++w) {
          out[((static_cast<std::size_t>(n) * H + h) * W + w) * C + c] =
              nchw[((static_cast<std::size_t>(n) * C + c) * H + h) * W + w];
        }
      }
    }
  }
  return out;
}

TEST(ConvShape, OutputSizeFollowsPyTorch) {
  // Values F.conv2d gives: the ResNet stem, a "same" 3 x 3, dilation, stride with a ragged end.
  EXPECT_EQ(course::conv_shape(1, 3, 224, 224, 64, 7, 7, 2, 3).P(), 112);
  EXPECT_EQ(course::conv_shape(1, 64, 56, 56, 64, 3, 3, 1, 1).Q(), 56);
  EXPECT_EQ(course::conv_shape(1, 4, 7, 7, 4, 3, 3, 1, 0, 2).P(), 3);
  EXPECT_EQ(course::conv_shape(1, 4, 8, 8, 4, 3, 3, 2, 0).P(), 3);
  EXPECT_EQ(course::conv_shape(1, 4, 9, 9, 4, 3, 3, 2, 0).P(), 4);
  // A filter larger than the padded image: no output. With stride 2 the numerator is
  // negative, where C++'s division would round toward zero and claim one row.
  EXPECT_EQ(course::conv_shape(1, 1, 2, 2, 1, 3, 3, 1, 0).P(), 0);
  EXPECT_EQ(course::conv_shape(1, 1, 2, 2, 1, 3, 3, 2, 0).P(), 0);
  ConvShape s = course::conv_shape(2, 3, 10, 12, 4, 3, 5, 1, 0);
  s.stride_w = 2;
  EXPECT_EQ(s.P(), 8);
  EXPECT_EQ(s.Q(), 4);
  EXPECT_EQ(s.output_elements(), 2 * 4 * 8 * 4);
  EXPECT_EQ(s.gemm_k(), 3 * 3 * 5);
}

TEST(ConvShape, BadArgumentsAreRejectedWithTheValue) {
  struct Bad {
    ConvShape shape;
    const char* shows;
  };
  const ConvShape good = course::conv_shape(2, 3, 8, 8, 4, 3, 3, 1, 1);
  EXPECT_NO_THROW(course::require_conv_arguments("conv", good));
  std::vector<Bad> bad;
  auto with = [&](auto change, const char* shows) {
    ConvShape s = good;
    change(s);
    bad.push_back({s, shows});
  };
  with([](ConvShape& s) { s.N = -1; }, "-1");
  with([](ConvShape& s) { s.C = 0; }, "C = 0");
  with([](ConvShape& s) { s.H = -5; }, "H = -5");
  with([](ConvShape& s) { s.K = 0; }, "K = 0");
  with([](ConvShape& s) { s.S = 0; }, "S = 0");
  with([](ConvShape& s) { s.stride_w = 0; }, "stride");
  with([](ConvShape& s) { s.dilation_h = 0; }, "dilation");
  with([](ConvShape& s) { s.pad_h = -1; }, "padding");
  with([](ConvShape& s) { s.pad_h = 0, s.pad_w = 0, s.H = 2; }, "empty");
  with([](ConvShape& s) { s.N = 1 << 20, s.C = 64, s.H = s.W = 64; }, "2^31");
  for (const Bad& b : bad) {
    try {
      course::require_conv_arguments("my_conv", b.shape);
      ADD_FAILURE() << "accepted " << course::to_string(b.shape);
    } catch (const std::invalid_argument& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("my_conv"), std::string::npos) << message;
      EXPECT_NE(message.find(b.shows), std::string::npos) << message;
    }
  }
  EXPECT_NO_THROW(course::require_conv_arguments("conv", [&] {
    ConvShape s = good;
    s.N = 0;  // an empty batch: nothing to compute, not an error
    return s;
  }()));
}

class ConvReferenceTest : public ::testing::TestWithParam<ConvCase> {};

// The forward reference against im2col followed by the GEMM reference (course/gemm.h):
// X_col[(c, r, s)][(n, p, q)] holds the input each product needs (0 in the padding), and
// W[k][(c, r, s)] X_col is y, as m3.04 computes it.
// reference_im2col of a slice of the batch is that slice's columns of the whole batch's
// X_col (what m3.04's passes over the batch rely on).
TEST_P(ConvReferenceTest, Im2colOfASliceIsThoseImagesColumns) {
  const ConvShape s = GetParam().shape;
  const auto x = random_values(s.input_elements(), 5);
  const std::vector<float> all = course::reference_im2col(s, x, 0, s.N);
  const std::int64_t pq = static_cast<std::int64_t>(s.P()) * s.Q(), columns = s.N * pq;
  for (int first = 0; first < s.N; ++first) {
    const int images = s.N - first;
    const std::vector<float> slice = course::reference_im2col(s, x, first, images);
    ASSERT_EQ(static_cast<std::int64_t>(slice.size()), s.gemm_k() * images * pq);
    for (std::int64_t row = 0; row < s.gemm_k(); ++row) {
      for (std::int64_t column = 0; column < images * pq; ++column) {
        ASSERT_EQ(slice[static_cast<std::size_t>(row * images * pq + column)],
                  all[static_cast<std::size_t>(row * columns + first * pq + column)])
            << GetParam() << ": row " << row << ", column " << column << " of images " << first
            << "..";
      }
    }
  }
  EXPECT_THROW(course::reference_im2col(s, x, 1, s.N), std::invalid_argument);
}

TEST_P(ConvReferenceTest, ForwardMatchesIm2colTimesTheGemmReference) {
  const ConvShape s = GetParam().shape;
  const int P = s.P(), Q = s.Q();
  const auto x = random_values(s.input_elements(), 1);
  const auto w = random_values(s.weight_elements(), 2);
  const int rows = static_cast<int>(s.gemm_k()), cols = s.N * P * Q;
  const std::vector<float> x_col = course::reference_im2col(s, x, 0, s.N);
  const std::vector<double> gemm =
      course::reference_gemm(course::GemmShape{s.K, cols, rows}, 1.0f, w, x_col, 0.0f, {});
  const std::vector<double> y = course::reference_conv2d(s, ConvLayout::nchw, x, w);
  std::vector<double> expected(y.size());
  for (int n = 0; n < s.N; ++n) {
    for (int k = 0; k < s.K; ++k) {
      for (int p = 0; p < P; ++p) {
        for (int q = 0; q < Q; ++q) {
          expected[course::conv_output_index(ConvLayout::nchw, s, n, k, p, q)] =
              gemm[static_cast<std::size_t>(k) * cols + (n * P + p) * Q + q];
        }
      }
    }
  }
  EXPECT_LT(relative_difference(y, expected), 1e-12) << course::to_string(s);
}

// The same tensors stored channels-last give the same numbers, element for element.
TEST_P(ConvReferenceTest, LayoutsAgree) {
  const ConvShape s = GetParam().shape;
  const auto x = random_values(s.input_elements(), 3);
  const auto w = random_values(s.weight_elements(), 4);
  const auto bias = random_values(s.K, 5);
  const std::vector<double> nchw = course::reference_conv2d(s, ConvLayout::nchw, x, w, bias);
  const std::vector<double> nhwc = course::reference_conv2d(
      s, ConvLayout::nhwc, to_nhwc(x, s.N, s.C, s.H, s.W), to_nhwc(w, s.K, s.C, s.R, s.S), bias);
  for (int n = 0; n < s.N; ++n) {
    for (int k = 0; k < s.K; ++k) {
      for (int p = 0; p < s.P(); ++p) {
        for (int q = 0; q < s.Q(); ++q) {
          ASSERT_EQ(nchw[course::conv_output_index(ConvLayout::nchw, s, n, k, p, q)],
                    nhwc[course::conv_output_index(ConvLayout::nhwc, s, n, k, p, q)])
              << "n " << n << " k " << k << " p " << p << " q " << q;
        }
      }
    }
  }
}

// sum(y * dy) = sum(x * dx) = sum(w * dw): dx and dw are the adjoints of the forward pass
// in x and in w. A wrong element of either gradient breaks the identity for random inputs.
// And db is the sum of dy.
TEST_P(ConvReferenceTest, GradientsSatisfyTheAdjointIdentity) {
  const ConvShape s = GetParam().shape;
  for (ConvLayout layout : {ConvLayout::nchw, ConvLayout::nhwc}) {
    const auto x = random_values(s.input_elements(), 6);
    const auto w = random_values(s.weight_elements(), 7);
    const auto dy = random_values(s.output_elements(), 8);
    const double forward = dot(course::reference_conv2d(s, layout, x, w), dy);
    const double through_x = dot(course::reference_conv2d_grad_input(s, layout, w, dy), x);
    const double through_w = dot(course::reference_conv2d_grad_weight(s, layout, x, dy), w);
    const double scale = std::max(std::abs(forward), 1.0);
    EXPECT_NEAR(through_x, forward, 1e-10 * scale) << course::to_string(layout);
    EXPECT_NEAR(through_w, forward, 1e-10 * scale) << course::to_string(layout);
    const std::vector<double> db = course::reference_conv2d_grad_bias(s, layout, dy);
    std::vector<double> expected(s.K, 0.0);
    for (std::int64_t i = 0; i < s.output_elements(); ++i) {
      const int k = layout == ConvLayout::nchw ? static_cast<int>((i / (s.P() * s.Q())) % s.K)
                                               : static_cast<int>(i % s.K);
      expected[k] += dy[static_cast<std::size_t>(i)];
    }
    EXPECT_LT(relative_difference(db, expected), 1e-12);
  }
}

// A sampled check reads the same numbers as the full reference at the sampled outputs.
TEST_P(ConvReferenceTest, SampledOutputsMatchTheFullReference) {
  const ConvShape s = GetParam().shape;
  const auto x = random_values(s.input_elements(), 9);
  const auto w = random_values(s.weight_elements(), 10);
  for (ConvLayout layout : {ConvLayout::nchw, ConvLayout::nhwc}) {
    const auto full = course::reference_conv2d(s, layout, x, w);
    const auto outputs = course::conv_sample_outputs(s, layout);
    const auto sampled = course::reference_conv2d_outputs(s, layout, x, w, {}, outputs);
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      ASSERT_EQ(sampled[i], full[static_cast<std::size_t>(outputs[i])]) << "output " << outputs[i];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvReferenceTest, ::testing::ValuesIn(course::conv_test_cases()),
                         [](const ::testing::TestParamInfo<ConvCase>& info) {
                           return std::string(info.param.name);
                         });

// Cross-correlation, not convolution: a filter that is 1 at (r, s) and 0 elsewhere reads
// x at p * stride - pad + r * dilation, with no flip, and 0 in the padding.
TEST(ConvReference, OneHotFilterShiftsTheImage) {
  for (const ConvShape& s : {course::conv_shape(1, 1, 7, 9, 1, 3, 3, 1, 1),
                             course::conv_shape(1, 1, 11, 10, 1, 3, 3, 2, 1, 2)}) {
    const auto x = random_values(s.input_elements(), 11);
    for (int r = 0; r < s.R; ++r) {
      for (int t = 0; t < s.S; ++t) {
        std::vector<float> w(static_cast<std::size_t>(s.weight_elements()), 0.0f);
        w[static_cast<std::size_t>(r * s.S + t)] = 1.0f;
        const auto y = course::reference_conv2d(s, ConvLayout::nchw, x, w);
        for (int p = 0; p < s.P(); ++p) {
          for (int q = 0; q < s.Q(); ++q) {
            const int h = p * s.stride_h - s.pad_h + r * s.dilation_h;
            const int col = q * s.stride_w - s.pad_w + t * s.dilation_w;
            const double expected =
                h < 0 || h >= s.H || col < 0 || col >= s.W ? 0.0 : x[static_cast<std::size_t>(h) * s.W + col];
            ASSERT_EQ(y[static_cast<std::size_t>(p) * s.Q() + q], expected)
                << course::to_string(s) << ", filter 1 at r " << r << " s " << t << ", output " << p
                << ", " << q;
          }
        }
      }
    }
  }
}

// The ResNet layers are too large for a full reference in a test: the sample hits every
// filter and image at the corners, every tile-row block of the sampled ones, and stays
// inside y.
TEST(ConvReference, SamplesCoverTheResNetLayers) {
  for (const ConvCase& c : course::conv_resnet_layers()) {
    const ConvShape& s = c.shape;
    for (ConvLayout layout : {ConvLayout::nchw, ConvLayout::nhwc}) {
      const auto outputs = course::conv_sample_outputs(s, layout);
      ASSERT_FALSE(outputs.empty()) << c.name;
      EXPECT_GE(outputs.front(), 0);
      EXPECT_LT(outputs.back(), s.output_elements());
      EXPECT_TRUE(std::is_sorted(outputs.begin(), outputs.end()));
      EXPECT_LT(outputs.size(), static_cast<std::size_t>(s.output_elements()) / 4) << c.name;
      std::vector<bool> filter_seen(s.K, false);
      for (std::int64_t i : outputs) {
        const int k = layout == ConvLayout::nchw ? static_cast<int>((i / (s.P() * s.Q())) % s.K)
                                                 : static_cast<int>(i % s.K);
        filter_seen[k] = true;
      }
      EXPECT_EQ(std::count(filter_seen.begin(), filter_seen.end(), false), 0) << c.name;
    }
  }
}

TEST(ConvReference, TensorsOfTheWrongSizeAreRejected) {
  const ConvShape s = course::conv_shape(2, 3, 8, 8, 4, 3, 3, 1, 1);
  const auto x = random_values(s.input_elements(), 12);
  const auto w = random_values(s.weight_elements(), 13);
  EXPECT_THROW(course::reference_conv2d(s, ConvLayout::nchw, std::vector<float>(x.begin() + 1, x.end()), w),
               std::invalid_argument);
  EXPECT_THROW(course::reference_conv2d(s, ConvLayout::nchw, x, w, std::vector<float>(3, 0.0f)),
               std::invalid_argument);
  EXPECT_THROW(course::reference_conv2d_grad_input(s, ConvLayout::nchw, w, std::vector<float>(5, 0.0f)),
               std::invalid_argument);
}

TEST(ConvReference, ToleranceIsTheGemmToleranceOfTheSumLength) {
  const ConvShape s = course::conv_shape(32, 64, 56, 56, 64, 3, 3, 1, 1);
  const course::Tolerance conv = course::conv_tolerance(course::Dtype::fp16, s.gemm_k());
  const course::Tolerance gemm = course::gemm_tolerance(course::Dtype::fp16, 64 * 9);
  EXPECT_EQ(conv.atol, gemm.atol);
  EXPECT_EQ(conv.rtol, gemm.rtol);
  EXPECT_GT(course::conv_tolerance(course::Dtype::fp32, 4608).atol,
            course::conv_tolerance(course::Dtype::fp32, 27).atol);
}

}  // namespace
