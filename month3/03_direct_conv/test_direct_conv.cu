// Tests for exercise m3.03 (direct convolution). The same tests grade your skeleton and the
// reference solution; the test bodies every convolution shares are in course/conv_testing.h
// (seeded random inputs, y poisoned with NaN, NaN guards around every tensor, a float64
// reference with a tolerance that grows with C * R * S).
//
// Shapes: course::conv_test_cases() (odd sizes, 1 x 1 / 5 x 5 / 7 x 7 filters, stride 2,
// dilation 2, padding larger than the radius, P or Q = 1, C = 1, K = 1, N = 1, per-axis
// options), the extra shapes below that hit the tiled kernel's edges (partial tiles in every
// direction, several channel steps, K not a multiple of 64, huge filters and dilations that
// the tiled launcher hands to the naive kernel), and the ResNet layers the benchmark times,
// checked on sampled outputs.
#include <gtest/gtest.h>

#include <vector>

#include "course/conv.h"
#include "course/conv_reference.h"
#include "course/conv_testing.h"
#include "course/testing.h"
#include "direct_conv.h"

namespace {

constexpr const char* kHintNaive =
    "look at TODO(m3.03a) (undo y's offset into n, k, p, q), TODO(m3.03b) (the loop nest over "
    "c, r, s: skip the taps that land in the padding; the bias; the store) and TODO(m3.03c) "
    "(the launch: one thread per output) in month3/03_direct_conv/conv2d_direct_naive.cu";

constexpr const char* kHintTiled =
    "look at TODO(m3.03d) (the input patch with its halo, zeros in the padding), TODO(m3.03e) "
    "(the weights of the block's 64 filters, zeros past K), TODO(m3.03f) (the register tile: 8 "
    "weights x 4 input values per tap) and TODO(m3.03g) (the store: bias, and only k < K, "
    "p < P, q < Q) in month3/03_direct_conv/conv2d_direct_tiled.cu";

// Shapes larger than the tiled kernel's shared memory: conv2d_direct_tiled hands them to
// conv2d_direct_naive (TODO(m3.03a) to (c)).
constexpr const char* kHintFallback =
    "this shape does not fit the tiled kernel's shared memory, so conv2d_direct_tiled runs "
    "conv2d_direct_naive: look at TODO(m3.03a), (b) and (c) in "
    "month3/03_direct_conv/conv2d_direct_naive.cu";

course::ConvShape with(course::ConvShape s, void (*change)(course::ConvShape&)) {
  change(s);
  return s;
}

// Shapes aimed at the tiled kernel's edges (8 x 8 pixels x 64 filters per block, up to 8
// input channels per step); both kernels must get them right.
std::vector<course::ConvCase> tile_edge_cases() {
  using course::conv_shape;
  return {
      // P = 19, Q = 21: partial tiles at the bottom and the right; C = 11: a step of 8
      // channels and one of 3; K = 70: a block of 64 filters and one of 6.
      {"PartialTilesEverywhere", conv_shape(3, 11, 19, 21, 70, 3, 3, 1, 1)},
      {"ExactTiles", conv_shape(2, 16, 16, 16, 128, 3, 3, 1, 1)},  // nothing partial
      {"ManyChannelSteps", conv_shape(2, 37, 12, 12, 16, 3, 3, 1, 1)},
      {"Stride2Dilation2", conv_shape(2, 9, 31, 29, 65, 3, 3, 2, 2, 2)},
      {"Filter7x7Stride2FullFilterTile", conv_shape(1, 3, 45, 45, 64, 7, 7, 2, 3)},
      {"Filter1x1Stride2", conv_shape(2, 20, 15, 15, 33, 1, 1, 2, 0)},  // a ResNet shortcut
      // A 1 x 1 filter with padding 2: the border outputs see only padding (y = bias there).
      {"PaddingAroundA1x1Filter", conv_shape(1, 4, 5, 5, 5, 1, 1, 1, 2)},
      {"ManyImages", conv_shape(70, 2, 5, 5, 3, 3, 3, 1, 1)},
      {"AsymmetricOptions", with(conv_shape(2, 6, 11, 26, 9, 2, 3, 1, 0),
                                 [](course::ConvShape& s) {
                                   s.stride_w = 3, s.pad_w = 1, s.dilation_w = 2, s.pad_h = 4;
                                 })},
  };
}

// Shapes whose one channel of patch + weights needs more than the tiled kernel's 48 KiB.
std::vector<course::ConvCase> fallback_cases() {
  using course::conv_shape;
  return {
      {"Dilation60", conv_shape(1, 2, 125, 125, 3, 3, 3, 1, 0, 60)},  // a 128 x 128 patch
      {"Filter15x15", conv_shape(2, 2, 20, 20, 3, 15, 15, 1, 7)},     // 64 filters x 225 taps
  };
}

std::vector<course::ConvCase> all_small_cases() {
  std::vector<course::ConvCase> cases = course::conv_test_cases();
  for (const auto& c : tile_edge_cases()) cases.push_back(c);
  return cases;
}

// --- Part 1: one thread per output -------------------------------------------------------

class NaiveConvTest : public course::GpuTest,
                      public ::testing::WithParamInterface<course::ConvCase> {};

TEST_P(NaiveConvTest, MatchesFloat64Reference) {
  course::expect_conv_matches_reference(course::impl::conv2d_direct_naive, GetParam().shape,
                                        /*with_bias=*/false, kHintNaive);
}

TEST_P(NaiveConvTest, WithBiasMatchesFloat64Reference) {
  course::expect_conv_matches_reference(course::impl::conv2d_direct_naive, GetParam().shape,
                                        /*with_bias=*/true, kHintNaive);
}

INSTANTIATE_TEST_SUITE_P(Shapes, NaiveConvTest, ::testing::ValuesIn(all_small_cases()),
                         course::conv_case_name);

class NaiveConvLargeTest : public course::GpuTest,
                           public ::testing::WithParamInterface<course::ConvCase> {};

TEST_P(NaiveConvLargeTest, MatchesFloat64ReferenceOnSampledOutputs) {
  course::expect_conv_matches_reference(course::impl::conv2d_direct_naive, GetParam().shape,
                                        /*with_bias=*/true, kHintNaive);
}

INSTANTIATE_TEST_SUITE_P(ResNetLayers, NaiveConvLargeTest,
                         ::testing::ValuesIn(course::conv_resnet_layers()), course::conv_case_name);
INSTANTIATE_TEST_SUITE_P(HugeFilters, NaiveConvLargeTest, ::testing::ValuesIn(fallback_cases()),
                         course::conv_case_name);

class NaiveConvArgumentsTest : public course::GpuTest {};

TEST_F(NaiveConvArgumentsTest, BadShapesAndNullPointersAreRejectedWithAClearError) {
  course::expect_conv_rejects_bad_arguments(course::impl::conv2d_direct_naive,
                                            "conv2d_direct_naive", kHintNaive);
}

TEST_F(NaiveConvArgumentsTest, RunsOnTheGivenStream) {
  course::expect_conv_runs_on_stream(course::impl::conv2d_direct_naive, kHintNaive);
}

// --- Part 2: shared-memory tiles, 32 outputs per thread ----------------------------------

class TiledConvTest : public course::GpuTest,
                      public ::testing::WithParamInterface<course::ConvCase> {};

TEST_P(TiledConvTest, MatchesFloat64Reference) {
  course::expect_conv_matches_reference(course::impl::conv2d_direct_tiled, GetParam().shape,
                                        /*with_bias=*/false, kHintTiled);
}

TEST_P(TiledConvTest, WithBiasMatchesFloat64Reference) {
  course::expect_conv_matches_reference(course::impl::conv2d_direct_tiled, GetParam().shape,
                                        /*with_bias=*/true, kHintTiled);
}

INSTANTIATE_TEST_SUITE_P(Shapes, TiledConvTest, ::testing::ValuesIn(all_small_cases()),
                         course::conv_case_name);

class TiledConvLargeTest : public course::GpuTest,
                           public ::testing::WithParamInterface<course::ConvCase> {};

TEST_P(TiledConvLargeTest, MatchesFloat64ReferenceOnSampledOutputs) {
  course::expect_conv_matches_reference(course::impl::conv2d_direct_tiled, GetParam().shape,
                                        /*with_bias=*/true, kHintTiled);
}

INSTANTIATE_TEST_SUITE_P(ResNetLayers, TiledConvLargeTest,
                         ::testing::ValuesIn(course::conv_resnet_layers()), course::conv_case_name);

// The shapes the tiled launcher gives to the naive kernel must still come out right.
class TiledConvFallbackTest : public course::GpuTest,
                              public ::testing::WithParamInterface<course::ConvCase> {};

TEST_P(TiledConvFallbackTest, HandsTheShapeToTheNaiveKernel) {
  course::expect_conv_matches_reference(course::impl::conv2d_direct_tiled, GetParam().shape,
                                        /*with_bias=*/true, kHintFallback);
}

INSTANTIATE_TEST_SUITE_P(HugeFilters, TiledConvFallbackTest,
                         ::testing::ValuesIn(fallback_cases()), course::conv_case_name);

// Which shapes the tiled kernel takes (given code, host only: no GPU needed). Every shape the
// course grades and times fits, so the tiled tests above really test the tiled kernel.
TEST(TiledConvFits, EveryGradedShapeFitsAndOnlyHugeFiltersFallBack) {
  for (const auto& c : all_small_cases()) {
    EXPECT_TRUE(course::impl::conv2d_direct_tiled_fits(c.shape)) << c;
  }
  for (const auto& c : course::conv_resnet_layers()) {
    EXPECT_TRUE(course::impl::conv2d_direct_tiled_fits(c.shape)) << c;
  }
  for (const auto& c : fallback_cases()) {
    EXPECT_FALSE(course::impl::conv2d_direct_tiled_fits(c.shape)) << c;
  }
}

class TiledConvArgumentsTest : public course::GpuTest {};

TEST_F(TiledConvArgumentsTest, BadShapesAndNullPointersAreRejectedWithAClearError) {
  course::expect_conv_rejects_bad_arguments(course::impl::conv2d_direct_tiled,
                                            "conv2d_direct_tiled", kHintTiled);
}

TEST_F(TiledConvArgumentsTest, RunsOnTheGivenStream) {
  course::expect_conv_runs_on_stream(course::impl::conv2d_direct_tiled, kHintTiled);
}

}  // namespace
