// Tests for exercise m3.05 (implicit GEMM on the tensor cores). The same tests grade your
// skeleton and the reference solution.
//
//   IndexMath*       parts 1 and 2's index math on the CPU (no GPU needed): your functions,
//                    run on the host through implicit_gemm_tap and
//                    implicit_gemm_precomputed_walk, against the definitions written out
//                    here. Each names the one TODO it grades.
//   Analytic*        part 1's kernel (conv2d_implicit_gemm_analytic_fp16 / _bf16).
//   Precomputed*     part 2's kernel (conv2d_implicit_gemm_fp16 / _bf16).
// The convolution tests are m3.03's (course/conv_testing.h) in NHWC / KRSC with 16-bit inputs:
// seeded random inputs rounded to fp16 (or bf16) before the float64 reference, y poisoned
// with NaN, NaN guards around every tensor, conv_tolerance(fp16 or bf16, C R S). Shapes:
// course::conv_test_cases() (odd sizes, 1 x 1 to 7 x 7, stride 2, dilation 2, padding larger
// than the radius, P or Q = 1, C = 1 or 3, K = 1: mostly C % 8 != 0, the slow path), the
// fast-path shapes below (C % 8 == 0, odd K, both tiles), x and w off their 16-byte
// boundaries (the slow path again), and the ResNet layers on sampled outputs.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "course/conv.h"
#include "course/conv_reference.h"
#include "course/conv_testing.h"
#include "course/hopper.h"
#include "course/testing.h"
#include "implicit_gemm.h"

namespace {

using course::conv_shape;
using course::ConvCase;
using course::ConvLayout;
using course::ConvShape;

constexpr const char* kHintRow =
    "look at TODO(m3.05a) in month3/05_implicit_gemm/conv2d_implicit_gemm.cu: gemm_row_to_pixel "
    "undoes m = (n P + p) Q + q (divide by P Q, then by Q)";
constexpr const char* kHintTap =
    "look at TODO(m3.05b) in month3/05_implicit_gemm/conv2d_implicit_gemm.cu: gemm_k_to_tap "
    "undoes g = (r S + s) C + c (KRSC: the channel is fastest), and input_position is "
    "p * stride - pad + r * dilation (no flip of the filter)";
constexpr const char* kHintPredicate =
    "look at TODO(m3.05c) in month3/05_implicit_gemm/conv2d_implicit_gemm.cu: reads_input is "
    "true only for m < M, g < C R S and 0 <= h < H, 0 <= w < W (everything else is a zero)";
constexpr const char* kHintPart1 =
    "look at TODO(m3.05a) (the GEMM row -> n, p, q), TODO(m3.05b) (the GEMM k -> r, s, c and "
    "the input position) and TODO(m3.05c) (the predicate) in "
    "month3/05_implicit_gemm/conv2d_implicit_gemm.cu; the IndexMath tests grade each alone "
    "(fix those first)";
constexpr const char* kHintPart2 =
    "look at TODO(m3.05d) (row_start, filter_walk_advance, tap_offset) in "
    "month3/05_implicit_gemm/conv2d_implicit_gemm.cu, graded alone by the "
    "IndexMath.PrecomputedWalk tests; shapes with C % 8 != 0 or unaligned x and w run part 1's "
    "loader (TODO(m3.05a) to (c)) in this launcher too";

// Shapes on the fast path: C % 8 == 0 (16-byte copies of 8 channels).
std::vector<ConvCase> fast_path_cases() {
  ConvShape asymmetric = conv_shape(2, 16, 11, 26, 9, 2, 3, 1, 0);
  asymmetric.stride_w = 3, asymmetric.pad_w = 1, asymmetric.dilation_w = 2, asymmetric.pad_h = 4;
  return {
      {"Fast_3x3", conv_shape(2, 16, 13, 11, 24, 3, 3, 1, 1)},
      {"Fast_1x1_OddK", conv_shape(3, 64, 9, 7, 40, 1, 1, 1, 0)},
      {"Fast_5x5_K7", conv_shape(2, 24, 17, 19, 7, 5, 5, 1, 2)},  // K odd: one float per store
      {"Fast_K1", conv_shape(2, 8, 10, 9, 1, 3, 3, 1, 1)},
      {"Fast_Stride2Dilation2", conv_shape(2, 32, 31, 29, 65, 3, 3, 2, 2, 2)},
      {"Fast_PadLargerThanRadius", conv_shape(1, 8, 6, 5, 12, 3, 3, 1, 3)},
      {"Fast_OutputOneRow", conv_shape(2, 40, 3, 12, 16, 3, 3, 1, 0)},
      {"Fast_ManyChannels", conv_shape(2, 264, 6, 6, 72, 3, 3, 1, 1)},  // C R S = 2376
      {"Fast_Asymmetric", asymmetric},
      {"Fast_C8_7x7Stride2", conv_shape(2, 8, 35, 33, 16, 7, 7, 2, 3)},  // a stem padded to C = 8
      // Which tile the launcher picks (choose_tile) depends on the blocks each would give;
      // on a GPU of 132 SMs, like the reference, the shapes above take the 64 x 64 tile, this
      // one (enough output pixels and K > 64) the 128 x 128 tile ...
      {"Fast_WideTile", conv_shape(32, 64, 32, 32, 192, 3, 3, 1, 1)},
      // ... and this one (as many pixels, K <= 64) the 128 x 64 tile.
      {"Fast_NarrowTile", conv_shape(32, 16, 33, 33, 40, 3, 3, 1, 1)},
  };
}

std::vector<ConvCase> small_cases() {
  std::vector<ConvCase> cases = course::conv_test_cases();
  cases.push_back({"FirstLayerC3_7x7Stride2", conv_shape(2, 3, 35, 33, 16, 7, 7, 2, 3)});
  for (const ConvCase& c : fast_path_cases()) cases.push_back(c);
  return cases;
}

std::vector<ConvCase> index_cases() {
  std::vector<ConvCase> cases = small_cases();
  for (const ConvCase& c : course::conv_resnet_layers()) cases.push_back(c);
  return cases;
}

// Rows worth checking: the first and last of every image and output row near the ends, the
// last real row and the spare rows of the last tile, and a spread in between.
std::vector<int> sample_rows(const ConvShape& s) {
  const int P = s.P(), Q = s.Q(), M = s.N * P * Q;
  std::vector<int> rows = {0, 1, Q - 1, Q, P * Q - 1, P * Q, M - 1, M, M + 1, M + 127};
  for (int i = 0; i < 40; ++i)
    rows.push_back(static_cast<int>((std::int64_t{M} * i * 7919 / 40) % M));
  std::vector<int> kept;
  for (int m : rows) {
    if (m >= 0 && m < M + 128) kept.push_back(m);
  }
  return kept;
}

// Columns: every g of small filters, a spread of the others, and the spare columns of the
// last tile.
std::vector<int> sample_columns(const ConvShape& s) {
  const int K = s.C * s.R * s.S;
  std::vector<int> columns;
  if (K <= 600) {
    for (int g = 0; g < K + 64; ++g) columns.push_back(g);
  } else {
    for (int g = 0; g < K; g += 37) columns.push_back(g);
    for (int g = K - 70; g < K + 64; ++g) columns.push_back(g);
  }
  return columns;
}

// --- Part 1 on the CPU -----------------------------------------------------------------

class IndexMath : public ::testing::TestWithParam<ConvCase> {};

TEST_P(IndexMath, GemmRowToOutputPixel) {
  const ConvShape s = GetParam().shape;
  const int P = s.P(), Q = s.Q(), M = s.N * P * Q;
  for (int m : sample_rows(s)) {
    if (m >= M) continue;
    const course::ImplicitGemmTap t = course::impl::implicit_gemm_tap(s, m, 0);
    const int n = m / (P * Q), p = (m / Q) % P, q = m % Q;
    ASSERT_TRUE(t.n == n && t.p == p && t.q == q)
        << course::to_string(s) << ": GEMM row m = " << m << " is output pixel (n, p, q) = (" << n
        << ", " << p << ", " << q << "), got (" << t.n << ", " << t.p << ", " << t.q << "). "
        << kHintRow;
  }
}

TEST_P(IndexMath, GemmKToFilterTapAndInputPosition) {
  const ConvShape s = GetParam().shape;
  const int K = s.C * s.R * s.S;
  const int M = s.N * s.P() * s.Q();
  for (int m : {0, M / 2 + 1, M - 1}) {
    for (int g : sample_columns(s)) {
      if (g >= K) continue;
      const course::ImplicitGemmTap t = course::impl::implicit_gemm_tap(s, m, g);
      const int c = g % s.C, rs = g / s.C, r = rs / s.S, ts = rs % s.S;
      ASSERT_TRUE(t.r == r && t.s == ts && t.c == c)
          << course::to_string(s) << ": GEMM k g = " << g << " is the tap (r, s, c) = (" << r
          << ", " << ts << ", " << c << "), got (" << t.r << ", " << t.s << ", " << t.c << "). "
          << kHintTap;
      // From your own (p, q) and (r, s), so that this grades input_position alone.
      const int h = t.p * s.stride_h - s.pad_h + t.r * s.dilation_h;
      const int w = t.q * s.stride_w - s.pad_w + t.s * s.dilation_w;
      ASSERT_TRUE(t.h == h && t.w == w)
          << course::to_string(s) << ": output (p, q) = (" << t.p << ", " << t.q
          << ") through tap (r, s) = (" << t.r << ", " << t.s << ") reads input (h, w) = (" << h
          << ", " << w << "), got (" << t.h << ", " << t.w << "). " << kHintTap;
    }
  }
}

TEST_P(IndexMath, PredicateZeroFillsPaddingAndSpareRowsAndColumns) {
  const ConvShape s = GetParam().shape;
  const int K = s.C * s.R * s.S;
  const int M = s.N * s.P() * s.Q();
  for (int m : sample_rows(s)) {
    for (int g : sample_columns(s)) {
      const course::ImplicitGemmTap t = course::impl::implicit_gemm_tap(s, m, g);
      // From your own (h, w), so that this grades the predicate alone.
      const bool inside = m < M && g < K && t.h >= 0 && t.h < s.H && t.w >= 0 && t.w < s.W;
      ASSERT_EQ(t.inside, inside) << course::to_string(s) << ": A[m = " << m << "][g = " << g
                                  << "] (input (h, w) = (" << t.h << ", " << t.w << "), M = " << M
                                  << ", C R S = " << K << ") "
                                  << (inside ? "reads x"
                                             : "is a zero (padding, or beyond the GEMM)")
                                  << ". " << kHintPredicate;
    }
  }
}

// --- Part 2 on the CPU -----------------------------------------------------------------

// The offset of x (NHWC) that A[m][g] reads, or -1 where it is a zero: the definition.
std::int64_t expected_offset(const ConvShape& s, int m, int g) {
  const int P = s.P(), Q = s.Q(), M = s.N * P * Q, K = s.C * s.R * s.S;
  if (m >= M || g >= K) return -1;
  const int n = m / (P * Q), p = (m / Q) % P, q = m % Q;
  const int c = g % s.C, r = (g / s.C) / s.S, ts = (g / s.C) % s.S;
  const int h = p * s.stride_h - s.pad_h + r * s.dilation_h;
  const int w = q * s.stride_w - s.pad_w + ts * s.dilation_w;
  if (h < 0 || h >= s.H || w < 0 || w >= s.W) return -1;
  return course::conv_input_index(ConvLayout::nhwc, s, n, c, h, w);
}

TEST_P(IndexMath, PrecomputedWalk) {
  const ConvShape s = GetParam().shape;
  const int K = s.C * s.R * s.S;
  // The kernel's walk: start at its chunk column (8 chunk), move one 64-deep tile at a time;
  // and a finer walk of 8 (the loop of filter_walk_advance, once per channel block).
  for (const int step : {64, 8}) {
    const int steps = (K + 64) / step + 1;
    for (int m : sample_rows(s)) {
      for (int chunk = 0; chunk < 8; chunk += (step == 8 ? 8 : 1)) {
        const int g0 = chunk * 8;
        const std::vector<std::int64_t> got =
            course::impl::implicit_gemm_precomputed_walk(s, m, g0, step, steps);
        ASSERT_EQ(got.size(), static_cast<std::size_t>(steps + 1)) << kHintPart2;
        for (int i = 0; i <= steps; ++i) {
          const int g = g0 + i * step;
          const std::int64_t want = expected_offset(s, m, g);
          ASSERT_EQ(got[static_cast<std::size_t>(i)], want)
              << course::to_string(s) << ": row m = " << m << ", walked from g = " << g0
              << " in steps of " << step << ", at g = " << g << " (step " << i << ") should "
              << (want < 0 ? std::string("read nothing (-1)")
                           : "read x[" + std::to_string(want) + "]")
              << ". " << kHintPart2;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, IndexMath, ::testing::ValuesIn(index_cases()),
                         course::conv_case_name);

// --- The kernels -------------------------------------------------------------------------

const course::ConvTestOptions kNhwc{ConvLayout::nhwc};

template <typename Input>
using Launcher = void (*)(const ConvShape&, const Input*, const Input*, const float*, float*,
                          cudaStream_t);

struct Kernel {
  const char* name;
  Launcher<__half> fp16;
  Launcher<__nv_bfloat16> bf16;
  const char* hint;
};

// Turing (sm_75) has float16 tensor cores only; the bfloat16 tests need an Ampere or newer.
constexpr const char* kBf16Needs = "bfloat16 mma.sync";

const Kernel kAnalytic{"conv2d_implicit_gemm_analytic",
                       course::impl::conv2d_implicit_gemm_analytic_fp16,
                       course::impl::conv2d_implicit_gemm_analytic_bf16, kHintPart1};
// Part 2's loaders on the GPU's fastest main loop (part 3's wgmma on a Hopper), and on
// mma.sync everywhere: on a Hopper the two are different kernels, and both are graded.
const Kernel kPrecomputed{"conv2d_implicit_gemm", course::impl::conv2d_implicit_gemm_fp16,
                          course::impl::conv2d_implicit_gemm_bf16, kHintPart2};
const Kernel kPrecomputedMmaSync{"conv2d_implicit_gemm_mma_sync",
                                 course::impl::conv2d_implicit_gemm_mma_sync_fp16,
                                 course::impl::conv2d_implicit_gemm_mma_sync_bf16, kHintPart2};

void expect_matches(const Kernel& kernel, const ConvShape& s, bool bias, bool bf16,
                    course::ConvTestOptions options = kNhwc) {
  if (bf16) {
    course::expect_conv_matches_reference_as<__nv_bfloat16>(kernel.bf16, s, bias, kernel.hint,
                                                            nullptr, options);
  } else {
    course::expect_conv_matches_reference_as<__half>(kernel.fp16, s, bias, kernel.hint, nullptr,
                                                     options);
  }
}

class AnalyticConvTest : public course::GpuTest, public ::testing::WithParamInterface<ConvCase> {};
class PrecomputedConvTest : public course::GpuTest,
                            public ::testing::WithParamInterface<ConvCase> {};
class PrecomputedMmaSyncConvTest : public course::GpuTest,
                                   public ::testing::WithParamInterface<ConvCase> {};

TEST_P(AnalyticConvTest, Fp16MatchesFloat64Reference) {
  expect_matches(kAnalytic, GetParam().shape, false, false);
}
TEST_P(AnalyticConvTest, Fp16WithBiasMatchesFloat64Reference) {
  expect_matches(kAnalytic, GetParam().shape, true, false);
}
TEST_P(AnalyticConvTest, Bf16WithBiasMatchesFloat64Reference) {
  COURSE_REQUIRE_COMPUTE_CAPABILITY(8, 0, kBf16Needs);
  expect_matches(kAnalytic, GetParam().shape, true, true);
}
TEST_P(PrecomputedConvTest, Fp16MatchesFloat64Reference) {
  expect_matches(kPrecomputed, GetParam().shape, false, false);
}
TEST_P(PrecomputedConvTest, Fp16WithBiasMatchesFloat64Reference) {
  expect_matches(kPrecomputed, GetParam().shape, true, false);
}
TEST_P(PrecomputedConvTest, Bf16WithBiasMatchesFloat64Reference) {
  COURSE_REQUIRE_COMPUTE_CAPABILITY(8, 0, kBf16Needs);
  expect_matches(kPrecomputed, GetParam().shape, true, true);
}
// x and w 8 bytes past a 16-byte boundary: no 16-byte copies, the slow path must be taken.
TEST_P(PrecomputedConvTest, UnalignedInputsTakeTheSlowPathAndMatch) {
  expect_matches(kPrecomputed, GetParam().shape, true, false,
                 course::ConvTestOptions{ConvLayout::nhwc, 4});
}

TEST_P(PrecomputedMmaSyncConvTest, Fp16WithBiasMatchesFloat64Reference) {
  expect_matches(kPrecomputedMmaSync, GetParam().shape, true, false);
}
TEST_P(PrecomputedMmaSyncConvTest, Bf16WithBiasMatchesFloat64Reference) {
  COURSE_REQUIRE_COMPUTE_CAPABILITY(8, 0, kBf16Needs);
  expect_matches(kPrecomputedMmaSync, GetParam().shape, true, true);
}

INSTANTIATE_TEST_SUITE_P(Shapes, AnalyticConvTest, ::testing::ValuesIn(small_cases()),
                         course::conv_case_name);
INSTANTIATE_TEST_SUITE_P(Shapes, PrecomputedConvTest, ::testing::ValuesIn(small_cases()),
                         course::conv_case_name);
INSTANTIATE_TEST_SUITE_P(Shapes, PrecomputedMmaSyncConvTest, ::testing::ValuesIn(small_cases()),
                         course::conv_case_name);

class ResNetConvTest : public course::GpuTest, public ::testing::WithParamInterface<ConvCase> {};

TEST_P(ResNetConvTest, AnalyticFp16MatchesOnSampledOutputs) {
  expect_matches(kAnalytic, GetParam().shape, true, false);
}
TEST_P(ResNetConvTest, PrecomputedFp16MatchesOnSampledOutputs) {
  expect_matches(kPrecomputed, GetParam().shape, true, false);
}
TEST_P(ResNetConvTest, PrecomputedBf16MatchesOnSampledOutputs) {
  COURSE_REQUIRE_COMPUTE_CAPABILITY(8, 0, kBf16Needs);
  expect_matches(kPrecomputed, GetParam().shape, true, true);
}
TEST_P(ResNetConvTest, PrecomputedMmaSyncFp16MatchesOnSampledOutputs) {
  expect_matches(kPrecomputedMmaSync, GetParam().shape, true, false);
}

INSTANTIATE_TEST_SUITE_P(ResNetLayers, ResNetConvTest,
                         ::testing::ValuesIn(course::conv_resnet_layers()), course::conv_case_name);

class ImplicitGemmArgumentsTest : public course::GpuTest {};

TEST_F(ImplicitGemmArgumentsTest, BadShapesAndNullPointersAreRejectedWithAClearError) {
  course::expect_conv_rejects_bad_arguments_as<__half>(course::impl::conv2d_implicit_gemm_fp16,
                                                       "conv2d_implicit_gemm_fp16", kHintPart2);
  course::expect_conv_rejects_bad_arguments_as<__half>(
      course::impl::conv2d_implicit_gemm_analytic_fp16, "conv2d_implicit_gemm_analytic_fp16",
      kHintPart1);
  course::expect_conv_rejects_bad_arguments_as<__half>(
      course::impl::conv2d_implicit_gemm_mma_sync_fp16, "conv2d_implicit_gemm_mma_sync_fp16",
      kHintPart2);
}

TEST_F(ImplicitGemmArgumentsTest, Bf16BadArgumentsAreRejectedWithAClearError) {
  COURSE_REQUIRE_COMPUTE_CAPABILITY(8, 0, kBf16Needs);
  course::expect_conv_rejects_bad_arguments_as<__nv_bfloat16>(
      course::impl::conv2d_implicit_gemm_bf16, "conv2d_implicit_gemm_bf16", kHintPart2);
}

// A GPU without bfloat16 tensor cores (a T4) gets a clear error from every bfloat16
// launcher, never a result; a GPU with them runs the same call.
TEST_F(ImplicitGemmArgumentsTest, Bf16NeedsComputeCapability80OrAClearError) {
  const ConvShape s = conv_shape(2, 16, 9, 7, 24, 3, 3, 1, 1);
  course::DeviceBuffer<__nv_bfloat16> x(s.input_elements()), w(s.weight_elements());
  course::DeviceBuffer<float> y(s.output_elements());
  CUDA_CHECK(cudaMemset(x.data(), 0, x.bytes()));
  CUDA_CHECK(cudaMemset(w.data(), 0, w.bytes()));
  const bool has_bf16 = course::compute_capability_shortfall(8, 0, kBf16Needs).empty();
  for (const Kernel* kernel : {&kAnalytic, &kPrecomputed, &kPrecomputedMmaSync}) {
    const auto call = [&] { kernel->bf16(s, x.data(), w.data(), nullptr, y.data(), nullptr); };
    if (has_bf16) {
      EXPECT_NO_THROW(call()) << kernel->name << "_bf16";
    } else {
      EXPECT_THROW(call(), course::UnsupportedDevice) << kernel->name << "_bf16";
    }
  }
  CUDA_CHECK(cudaDeviceSynchronize());
}

// CMakeLists.txt builds the launchers for sm_90a too: on a Hopper the runtime must take that
// code, or part 3 would silently never run.
TEST_F(ImplicitGemmArgumentsTest, OnAHopperTheFastPathRunsOnWgmma) {
  const std::string expected = course::hopper::is_hopper_gpu() ? "wgmma" : "mma.sync";
  EXPECT_EQ(course::impl::conv2d_implicit_gemm_main_loop(), expected)
      << "on this GPU the fast path should run on " << expected
      << " (month3/05_implicit_gemm/CMakeLists.txt adds sm_90a; conv2d_implicit_gemm_given.cuh's "
         "wgmma_runs_here checks which machine code the runtime loaded)";
}

TEST_F(ImplicitGemmArgumentsTest, RunsOnTheGivenStream) {
  // The fast path (C % 8 == 0) and the slow one (C = 5).
  course::expect_conv_runs_on_stream_as<__half>(course::impl::conv2d_implicit_gemm_fp16, kHintPart2,
                                                conv_shape(2, 16, 13, 11, 24, 3, 3, 1, 1),
                                                ConvLayout::nhwc);
  course::expect_conv_runs_on_stream_as<__half>(course::impl::conv2d_implicit_gemm_fp16, kHintPart2,
                                                conv_shape(2, 5, 13, 11, 7, 3, 3, 1, 1),
                                                ConvLayout::nhwc);
  course::expect_conv_runs_on_stream_as<__half>(
      course::impl::conv2d_implicit_gemm_analytic_fp16, kHintPart1,
      conv_shape(2, 16, 13, 11, 24, 3, 3, 1, 1), ConvLayout::nhwc);
}

}  // namespace
