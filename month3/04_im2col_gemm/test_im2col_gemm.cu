// Tests for exercise m3.04 (im2col + GEMM). The same tests grade your skeleton and the
// reference solution; the convolution test bodies are m3.03's, in course/conv_testing.h
// (seeded random inputs, y poisoned with NaN, NaN guards around every tensor, a float64
// reference with a tolerance that grows with C * R * S).
//
//   Im2col*          part 1 alone: X_col from the GPU against course::reference_im2col (the
//                    CPU im2col), element for element; a slice of the batch too.
//   CublasConv*      parts 1 and 2: conv2d_im2col_cublas (the ConvFn form, its workspace
//                    from cudaMallocAsync) and conv2d_im2col_gemm with Im2colGemm::cublas
//                    and a workspace that holds only some images per pass.
//   SgemmConv*       parts 1 and 3: the same with your m2.05 SGEMM.
// Shapes: course::conv_test_cases() (odd sizes, 1 x 1 / 5 x 5 / 7 x 7 filters, stride 2,
// dilation 2, padding larger than the radius, P or Q = 1, C = 1, K = 1, N = 1, per-axis
// options), the extra shapes below (the 1 x 1 case that needs no copy, many images, odd
// P Q), with and without a bias, and the ResNet layers the benchmark times on sampled outputs.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/conv.h"
#include "course/conv_reference.h"
#include "course/conv_testing.h"
#include "course/testing.h"
#include "im2col_gemm.h"

namespace {

using course::Im2colGemm;

constexpr const char* kHintIm2col =
    "look at TODO(m3.04a) in month3/04_im2col_gemm/im2col.cu (undo the column into n, p, q; "
    "row (c * R + r) * S + t; 0 in the padding; 64-bit offsets)";

constexpr const char* kHintCublas =
    "look at TODO(m3.04a) (im2col, graded alone by the Im2col tests: fix those first) and "
    "TODO(m3.04b) (the cublasSgemmStridedBatched call: cuBLAS is column-major, so the "
    "row-major y_n = W X_col_n is, to cuBLAS, y_n^T = X_col_n^T W^T: which operand is A, "
    "m, n, k, every leading dimension and stride) in month3/04_im2col_gemm/";

constexpr const char* kHintSgemm =
    "look at TODO(m3.04a) (im2col, graded alone by the Im2col tests), TODO(m3.04c) (the m2.05 "
    "SGEMM's M, N, K for Y_tmp = W X_col) and TODO(m3.04d) (the permute of Y_tmp [K][images P Q] "
    "into y [images][K][P Q], and the bias) in month3/04_im2col_gemm/conv2d_im2col_gemm.cu. "
    "This path calls YOUR m2.05 sgemm_2d_register_tile: if the cuBLAS tests pass and these fail, "
    "check m2.05 (./course grade m2_05), or grade with the reference's: "
    "COURSE_EARLIER_KERNELS=solution ./course grade m3_04";

course::ConvShape with(course::ConvShape s, void (*change)(course::ConvShape&)) {
  change(s);
  return s;
}

// Shapes aimed at this exercise's own edges.
std::vector<course::ConvCase> im2col_edge_cases() {
  using course::conv_shape;
  return {
      // 1 x 1, stride 1, no padding: the cuBLAS path multiplies x itself (no im2col).
      {"PointwiseNoCopy", conv_shape(3, 16, 9, 7, 12, 1, 1, 1, 0)},
      {"Pointwise1x1Stride2", conv_shape(2, 20, 15, 15, 33, 1, 1, 2, 0)},  // needs the copy
      {"PaddingAroundA1x1Filter", conv_shape(1, 4, 5, 5, 5, 1, 1, 1, 2)},  // needs the copy
      // P Q = 49, odd: neither X_col's rows nor y's images start on 16 bytes.
      {"SevenBySevenImages", conv_shape(5, 33, 7, 7, 70, 3, 3, 1, 1)},
      {"ManyImages", conv_shape(70, 2, 5, 5, 3, 3, 3, 1, 1)},
      {"ManyChannels", conv_shape(2, 300, 6, 6, 9, 3, 3, 1, 1)},  // C R S = 2700
      {"Stride2Dilation2", conv_shape(2, 9, 31, 29, 65, 3, 3, 2, 2, 2)},
      {"AsymmetricOptions", with(conv_shape(2, 6, 11, 26, 9, 2, 3, 1, 0),
                                 [](course::ConvShape& s) {
                                   s.stride_w = 3, s.pad_w = 1, s.dilation_w = 2, s.pad_h = 4;
                                 })},
  };
}

std::vector<course::ConvCase> all_small_cases() {
  std::vector<course::ConvCase> cases = course::conv_test_cases();
  for (const auto& c : im2col_edge_cases()) cases.push_back(c);
  return cases;
}

// conv2d_im2col_gemm with a workspace that holds `images_per_pass` images: several passes
// over the batch, and an X_col (and Y_tmp) that is reused from pass to pass.
course::ConvCall with_small_workspace(Im2colGemm gemm, int images_per_pass) {
  return [gemm, images_per_pass](const course::ConvShape& s, const float* x, const float* w,
                                 const float* bias, float* y, cudaStream_t stream) {
    const std::size_t bytes =
        course::impl::conv2d_im2col_min_workspace_bytes(s, gemm) * images_per_pass;
    course::DeviceBuffer<float> workspace((bytes + sizeof(float) - 1) / sizeof(float) + 1);
    workspace.poison();  // stale X_col values must not leak into y
    CUDA_CHECK(cudaDeviceSynchronize());
    course::impl::conv2d_im2col_gemm(s, x, w, bias, y, gemm, workspace.data(), bytes, stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));  // before the workspace is freed
  };
}

// --- Part 1: im2col alone ----------------------------------------------------------------

// "X_col[row 13 = (c 1, r 1, s 1)][column 40 = (n 0, p 4, q 0)]", for messages.
std::string describe_x_col(const course::ConvShape& s, int first_image, std::int64_t columns,
                           std::int64_t index) {
  const std::int64_t row = index / columns, column = index % columns;
  const std::int64_t pq = static_cast<std::int64_t>(s.P()) * s.Q();
  const std::int64_t t = row % s.S, r = (row / s.S) % s.R, c = row / s.S / s.R;
  const std::int64_t n = first_image + column / pq, p = (column % pq) / s.Q(), q = column % s.Q();
  return "X_col[row " + std::to_string(row) + " = (c " + std::to_string(c) + ", r " +
         std::to_string(r) + ", s " + std::to_string(t) + ")][column " + std::to_string(column) +
         " = (n " + std::to_string(n) + ", p " + std::to_string(p) + ", q " + std::to_string(q) +
         ")]";
}

void expect_im2col_matches_reference(const course::ConvShape& s, int first_image, int images) {
  const std::uint64_t seed = course::test_seed();
  const auto x = course::random_uniform<float>(static_cast<std::size_t>(s.input_elements()), seed);
  const std::vector<float> expected = course::reference_im2col(s, x, first_image, images);
  const std::int64_t columns = static_cast<std::int64_t>(images) * s.P() * s.Q();
  auto device_x = course::GuardedBuffer<float>::from_host(x);
  course::GuardedBuffer<float> device_x_col(expected.size());
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::string what = "im2col of images " + std::to_string(first_image) + " .. " +
                           std::to_string(first_image + images - 1) + " of " +
                           course::to_string(s) + " (seed " + std::to_string(seed) + ")";
  try {
    course::impl::im2col(s, device_x.data(), first_image, images, device_x_col.data(), nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
  } catch (const std::exception& error) {
    ADD_FAILURE() << what << " failed: " << error.what() << "\n" << kHintIm2col;
    return;
  }
  const auto contents = device_x_col.download();
  if (contents.first_stray_write) {
    ADD_FAILURE() << what << ": wrote outside X_col, at x_col[" << *contents.first_stray_write
                  << "] (X_col holds C R S x images P Q = " << expected.size() << " floats). "
                  << kHintIm2col;
  }
  // A copy is exact: every element must be the very float of x (or 0 in the padding).
  std::size_t wrong = 0, first = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (std::memcmp(&contents.values[i], &expected[i], sizeof(float)) != 0 && wrong++ == 0) {
      first = i;
    }
  }
  if (wrong > 0) {
    const float got = contents.values[first];
    ADD_FAILURE() << what << ": " << wrong << " of " << expected.size()
                  << " elements differ from the CPU im2col; the first is "
                  << describe_x_col(s, first_image, columns, static_cast<std::int64_t>(first))
                  << " = " << got
                  << (course::is_poison(got) ? " (never written: still the poison value)" : "")
                  << ", expected " << expected[first]
                  << (expected[first] == 0.0f ? " (0: that tap lies in the padding)" : "") << ".\n"
                  << kHintIm2col;
  }
}

class Im2colTest : public course::GpuTest,
                   public ::testing::WithParamInterface<course::ConvCase> {};

TEST_P(Im2colTest, MatchesTheCpuIm2col) {
  const course::ConvShape s = GetParam().shape;
  expect_im2col_matches_reference(s, 0, s.N);
}

TEST_P(Im2colTest, ASliceOfTheBatchMatchesTheCpuIm2col) {
  const course::ConvShape s = GetParam().shape;
  if (s.N < 2) GTEST_SKIP() << "needs two images or more";
  expect_im2col_matches_reference(s, 1, s.N - 1);  // the columns start at image 1
  expect_im2col_matches_reference(s, s.N - 1, 1);  // the last image alone
}

INSTANTIATE_TEST_SUITE_P(Shapes, Im2colTest, ::testing::ValuesIn(all_small_cases()),
                         course::conv_case_name);

class Im2colLargeTest : public course::GpuTest {};

// One ResNet layer in full (X_col of 2 images of the C64 56 x 56 layer: 3.6 million floats).
TEST_F(Im2colLargeTest, ResNetLayerTwoImagesMatchTheCpuIm2col) {
  const course::ConvShape s = course::conv_resnet_layers()[0].shape;
  expect_im2col_matches_reference(s, s.N - 2, 2);
}

class Im2colArgumentsTest : public course::GpuTest {};

TEST_F(Im2colArgumentsTest, ImagesOutsideTheBatchOrNullPointersAreRejected) {
  course::GuardedBuffer<float> buffer(4096);
  float* p = buffer.data();
  const course::ConvShape s = course::conv_shape(2, 3, 8, 8, 4, 3, 3, 1, 1);
  EXPECT_THROW(course::impl::im2col(s, p, 1, 2, p, nullptr), std::invalid_argument);
  EXPECT_THROW(course::impl::im2col(s, p, -1, 1, p, nullptr), std::invalid_argument);
  EXPECT_THROW(course::impl::im2col(s, nullptr, 0, 2, p, nullptr), std::invalid_argument);
  EXPECT_THROW(course::impl::im2col(s, p, 0, 2, nullptr, nullptr), std::invalid_argument);
  try {
    course::impl::im2col(s, p, 1, 5, p, nullptr);
    ADD_FAILURE() << "images 1 .. 5 of a batch of 2 were accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("im2col"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("N = 2"), std::string::npos) << error.what();
  }
  course::impl::im2col(s, nullptr, 0, 0, nullptr, nullptr);  // no images: nothing to do
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto contents = buffer.download();
  bool untouched = !contents.first_stray_write;
  for (const float value : contents.values) untouched = untouched && course::is_poison(value);
  EXPECT_TRUE(untouched) << "a rejected im2col call wrote to memory";
}

// --- The workspace (given code, host only: no GPU needed) --------------------------------

TEST(Im2colWorkspace, BytesAreTheXColAndYTmpOfOnePass) {
  const course::ConvShape layer = course::conv_resnet_layers()[0].shape;  // N32 C64 56 K64 3x3
  const std::size_t x_col = std::size_t{4} * 64 * 9 * 56 * 56 * 32;       // C R S x N P Q floats
  const std::size_t y = std::size_t{4} * 64 * 56 * 56 * 32;               // K x N P Q floats
  EXPECT_EQ(course::impl::conv2d_im2col_workspace_bytes(layer, Im2colGemm::cublas), x_col);
  EXPECT_EQ(course::impl::conv2d_im2col_workspace_bytes(layer, Im2colGemm::sgemm_m205), x_col + y);
  EXPECT_EQ(course::impl::conv2d_im2col_min_workspace_bytes(layer, Im2colGemm::cublas), x_col / 32);
  // A 1 x 1, stride-1, unpadded layer needs no X_col with cuBLAS: x is its own X_col.
  const course::ConvShape pointwise = course::conv_resnet_layers()[4].shape;
  EXPECT_FALSE(course::impl::conv2d_im2col_needs_copy(pointwise));
  EXPECT_EQ(course::impl::conv2d_im2col_workspace_bytes(pointwise, Im2colGemm::cublas), 0u);
  EXPECT_GT(course::impl::conv2d_im2col_workspace_bytes(pointwise, Im2colGemm::sgemm_m205), 0u);
  EXPECT_TRUE(course::impl::conv2d_im2col_needs_copy(course::conv_resnet_layers()[5].shape));
  // An empty batch needs nothing.
  course::ConvShape empty = layer;
  empty.N = 0;
  EXPECT_EQ(course::impl::conv2d_im2col_workspace_bytes(empty, Im2colGemm::sgemm_m205), 0u);
}

TEST(Im2colWorkspace, LayersTheM205SgemmCannotIndexAreRejectedWithTheSizes) {
  // One image's X_col: C R S x P Q = (128 * 121) x (512 * 512) > 2^31 floats.
  const course::ConvShape huge = course::conv_shape(1, 128, 512, 512, 8, 11, 11, 1, 5);
  try {
    (void)course::impl::conv2d_im2col_workspace_bytes(huge, Im2colGemm::sgemm_m205);
    ADD_FAILURE() << "the m2.05 path accepted a layer whose X_col it cannot index";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("15488 x 262144"), std::string::npos) << error.what();
  }
  // cuBLAS takes it (64-bit offsets in im2col): 4 * 15488 * 262144 bytes.
  EXPECT_EQ(course::impl::conv2d_im2col_workspace_bytes(huge, Im2colGemm::cublas),
            std::size_t{4} * 15488 * 262144);
}

// --- Part 2: cuBLAS ----------------------------------------------------------------------

class CublasConvTest : public course::GpuTest,
                       public ::testing::WithParamInterface<course::ConvCase> {};

TEST_P(CublasConvTest, MatchesFloat64Reference) {
  course::expect_conv_matches_reference(course::impl::conv2d_im2col_cublas, GetParam().shape,
                                        /*with_bias=*/false, kHintCublas);
}

TEST_P(CublasConvTest, WithBiasMatchesFloat64Reference) {
  course::expect_conv_matches_reference(course::impl::conv2d_im2col_cublas, GetParam().shape,
                                        /*with_bias=*/true, kHintCublas);
}

TEST_P(CublasConvTest, TwoImagesPerPassMatchFloat64Reference) {
  course::expect_conv_matches_reference(with_small_workspace(Im2colGemm::cublas, 2),
                                        GetParam().shape, /*with_bias=*/true, kHintCublas);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CublasConvTest, ::testing::ValuesIn(all_small_cases()),
                         course::conv_case_name);

class CublasConvLargeTest : public course::GpuTest,
                            public ::testing::WithParamInterface<course::ConvCase> {};

TEST_P(CublasConvLargeTest, MatchesFloat64ReferenceOnSampledOutputs) {
  course::expect_conv_matches_reference(course::impl::conv2d_im2col_cublas, GetParam().shape,
                                        /*with_bias=*/true, kHintCublas);
}

INSTANTIATE_TEST_SUITE_P(ResNetLayers, CublasConvLargeTest,
                         ::testing::ValuesIn(course::conv_resnet_layers()), course::conv_case_name);

class CublasConvArgumentsTest : public course::GpuTest {};

TEST_F(CublasConvArgumentsTest, BadShapesAndNullPointersAreRejectedWithAClearError) {
  course::expect_conv_rejects_bad_arguments(course::impl::conv2d_im2col_cublas,
                                            "conv2d_im2col_cublas", kHintCublas);
}

TEST_F(CublasConvArgumentsTest, RunsOnTheGivenStream) {
  course::expect_conv_runs_on_stream(course::impl::conv2d_im2col_cublas, kHintCublas);
}

TEST_F(CublasConvArgumentsTest, RunsOnTheGivenStreamWithoutACopy) {
  course::expect_conv_runs_on_stream(course::impl::conv2d_im2col_cublas, kHintCublas,
                                     course::conv_shape(2, 5, 13, 11, 7, 1, 1, 1, 0));
}

// A workspace too small, null or misaligned is rejected, naming the bytes it needs.
void expect_workspace_checks(Im2colGemm gemm) {
  course::GuardedBuffer<float> buffer(1 << 16);
  float* p = buffer.data();
  const course::ConvShape s = course::conv_shape(2, 3, 8, 8, 4, 3, 3, 1, 1);
  const std::size_t least = course::impl::conv2d_im2col_min_workspace_bytes(s, gemm);
  ASSERT_GT(least, 0u);
  ASSERT_LE(least, buffer.size() * sizeof(float));
  try {
    course::impl::conv2d_im2col_gemm(s, p, p, nullptr, p, gemm, p, least - 1, nullptr);
    ADD_FAILURE() << "a workspace of " << least - 1 << " bytes was accepted; one image needs "
                  << least;
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find(std::to_string(least)), std::string::npos)
        << "the message should say how many bytes are needed: " << error.what();
    EXPECT_NE(std::string(error.what()).find("conv2d_im2col_gemm"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW(course::impl::conv2d_im2col_gemm(s, p, p, nullptr, p, gemm, nullptr, least, nullptr),
               std::invalid_argument);
  EXPECT_THROW(course::impl::conv2d_im2col_gemm(s, p, p, nullptr, p, gemm,
                                                reinterpret_cast<char*>(p) + 4, least, nullptr),
               std::invalid_argument);
  EXPECT_THROW(course::impl::conv2d_im2col_gemm(s, p, p, nullptr, p, static_cast<Im2colGemm>(7), p,
                                                least, nullptr),
               std::invalid_argument);
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto contents = buffer.download();
  bool untouched = !contents.first_stray_write;
  for (const float value : contents.values) untouched = untouched && course::is_poison(value);
  EXPECT_TRUE(untouched) << "a rejected call wrote to memory";
}

TEST_F(CublasConvArgumentsTest, AWorkspaceTooSmallNullOrMisalignedIsRejected) {
  expect_workspace_checks(Im2colGemm::cublas);
}

// --- Part 3: your m2.05 SGEMM ------------------------------------------------------------

class SgemmConvTest : public course::GpuTest,
                      public ::testing::WithParamInterface<course::ConvCase> {};

TEST_P(SgemmConvTest, MatchesFloat64Reference) {
  course::expect_conv_matches_reference(course::impl::conv2d_im2col_sgemm, GetParam().shape,
                                        /*with_bias=*/false, kHintSgemm);
}

TEST_P(SgemmConvTest, WithBiasMatchesFloat64Reference) {
  course::expect_conv_matches_reference(course::impl::conv2d_im2col_sgemm, GetParam().shape,
                                        /*with_bias=*/true, kHintSgemm);
}

TEST_P(SgemmConvTest, TwoImagesPerPassMatchFloat64Reference) {
  course::expect_conv_matches_reference(with_small_workspace(Im2colGemm::sgemm_m205, 2),
                                        GetParam().shape, /*with_bias=*/true, kHintSgemm);
}

INSTANTIATE_TEST_SUITE_P(Shapes, SgemmConvTest, ::testing::ValuesIn(all_small_cases()),
                         course::conv_case_name);

class SgemmConvLargeTest : public course::GpuTest,
                           public ::testing::WithParamInterface<course::ConvCase> {};

TEST_P(SgemmConvLargeTest, MatchesFloat64ReferenceOnSampledOutputs) {
  course::expect_conv_matches_reference(course::impl::conv2d_im2col_sgemm, GetParam().shape,
                                        /*with_bias=*/true, kHintSgemm);
}

INSTANTIATE_TEST_SUITE_P(ResNetLayers, SgemmConvLargeTest,
                         ::testing::ValuesIn(course::conv_resnet_layers()), course::conv_case_name);

class SgemmConvArgumentsTest : public course::GpuTest {};

TEST_F(SgemmConvArgumentsTest, BadShapesAndNullPointersAreRejectedWithAClearError) {
  course::expect_conv_rejects_bad_arguments(course::impl::conv2d_im2col_sgemm,
                                            "conv2d_im2col_sgemm", kHintSgemm);
}

TEST_F(SgemmConvArgumentsTest, RunsOnTheGivenStream) {
  course::expect_conv_runs_on_stream(course::impl::conv2d_im2col_sgemm, kHintSgemm);
}

TEST_F(SgemmConvArgumentsTest, AWorkspaceTooSmallNullOrMisalignedIsRejected) {
  expect_workspace_checks(Im2colGemm::sgemm_m205);
}

}  // namespace
