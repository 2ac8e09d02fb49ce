// Tests for exercise m2.07 (tensor cores through WMMA). The same tests grade your skeleton
// and the reference solution. A and B are float16: the tests round their random inputs to
// float16, compute the float64 reference from the rounded values, and compare within
// gemm_tolerance(fp16, K) (course/gemm_testing.h explains the checks).
#include <gtest/gtest.h>

#include <cuda_fp16.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "course/gemm_testing.h"
#include "wmma_gemm.h"

namespace {

constexpr const char* kSimpleHint =
    "look at TODO(m2.07a) (load_matrix_sync of the A and B fragments, mma_sync) and "
    "TODO(m2.07b) (store_scaled: alpha, beta, store_matrix_sync) in month2/07_wmma/wmma_gemm.cu";
constexpr const char* kTiledHint =
    "look at TODO(m2.07c) (the warp's fragments from the shared tiles and its 8 mma_sync) and "
    "TODO(m2.07d) (the epilogue: each fragment through scratch, written inside C only) in "
    "month2/07_wmma/wmma_gemm.cu";
constexpr const char* kMmaHint =
    "look at TODO(m2.07e) (the fragments through ldmatrix: each lane's row address), "
    "TODO(m2.07f) (the pipeline: wait, barrier, the next tile's copy, commit) and "
    "TODO(m2.07g) (the epilogue: each lane's accumulators to C, inside C only) in "
    "month2/07_wmma/mma_gemm.cu";

// --- Part 1: one warp per 16 x 16 tile, straight from global memory --------------------------

class WmmaSimpleTest : public course::GpuTest,
                       public ::testing::WithParamInterface<course::GemmCase> {};

TEST_P(WmmaSimpleTest, MatchesFloat64Reference) {
  course::expect_gemm_matches_reference(course::impl::wmma_gemm_simple, GetParam(), kSimpleHint);
}

// Multiples of 16 only (the launcher rejects anything else, see below).
INSTANTIATE_TEST_SUITE_P(
    Shapes, WmmaSimpleTest,
    ::testing::Values(course::GemmCase{{16, 16, 16}, 1.0f, 0.0f},
                      course::GemmCase{{32, 48, 64}, 1.0f, 0.0f},
                      course::GemmCase{{48, 16, 1024}, 1.0f, 0.0f},  // long K
                      course::GemmCase{{272, 528, 80}, 1.0f, 0.0f},
                      course::GemmCase{{1024, 1024, 1024}, 1.0f, 0.0f},
                      course::GemmCase{{64, 64, 0}, 1.0f, 0.5f},     // K = 0: C = beta * C
                      course::GemmCase{{0, 32, 16}, 1.0f, 0.0f},
                      course::GemmCase{{144, 80, 96}, 1.5f, 0.0f},
                      course::GemmCase{{144, 80, 96}, 0.5f, -0.75f},
                      course::GemmCase{{64, 64, 64}, 1.0f, 1.0f}),
    course::gemm_case_name);

class WmmaSimpleArgumentsTest : public course::GpuTest {};

TEST_F(WmmaSimpleArgumentsTest, NegativeSizesAreRejectedWithAClearError) {
  course::expect_gemm_rejects_negative_sizes(course::impl::wmma_gemm_simple, kSimpleHint);
}

TEST_F(WmmaSimpleArgumentsTest, SizesThatAreNotMultiplesOf16AreRejected) {
  course::DeviceBuffer<float> buffer(64 * 64);
  const auto* h = reinterpret_cast<const __half*>(buffer.data());
  for (const course::GemmShape& shape :
       {course::GemmShape{17, 32, 32}, course::GemmShape{32, 33, 32}, course::GemmShape{32, 32, 8}}) {
    EXPECT_THROW(course::impl::wmma_gemm_simple(shape.M, shape.N, shape.K, 1.0f, h, h, 0.0f,
                                                buffer.data(), nullptr),
                 std::invalid_argument)
        << "M x N x K = " << course::to_string(shape) << " is not made of 16 x 16 tiles";
  }
  // A pointer 2 bytes past a 32-byte boundary cannot feed load_matrix_sync.
  EXPECT_THROW(course::impl::wmma_gemm_simple(32, 32, 32, 1.0f, h + 1, h, 0.0f, buffer.data(),
                                              nullptr),
               std::invalid_argument);
  CUDA_CHECK(cudaDeviceSynchronize());
}

TEST_F(WmmaSimpleArgumentsTest, RunsOnTheGivenStream) {
  course::expect_gemm_runs_on_stream(course::impl::wmma_gemm_simple, kSimpleHint,
                                     course::GemmShape{64, 48, 32});
}

// --- Part 2: shared-memory tiles, any shape ----------------------------------------------------

class WmmaTiledTest : public course::GpuTest,
                      public ::testing::WithParamInterface<course::GemmCase> {};

TEST_P(WmmaTiledTest, MatchesFloat64Reference) {
  course::expect_gemm_matches_reference(course::impl::wmma_gemm, GetParam(), kTiledHint);
}

// Every shape of the month-2 suite (1 x 1 x 1, 17 x 33 x 65, K not a multiple of the tile,
// 4093 x 4091 x 4099, ...), then shapes aimed at this kernel: K and N multiples of 8 (the
// 16-byte copies) with ragged tiles, and exactly one block tile.
INSTANTIATE_TEST_SUITE_P(Shapes, WmmaTiledTest, ::testing::ValuesIn(course::gemm_test_cases()),
                         course::gemm_case_name);
INSTANTIATE_TEST_SUITE_P(
    TileEdges, WmmaTiledTest,
    ::testing::Values(course::GemmCase{{128, 128, 32}, 1.0f, 0.0f},
                      course::GemmCase{{136, 120, 40}, 1.0f, 0.0f},
                      course::GemmCase{{257, 264, 1000}, 1.0f, 0.0f},
                      course::GemmCase{{1000, 1000, 8}, 0.5f, -0.75f},
                      course::GemmCase{{2048, 2048, 2048}, 1.0f, 0.0f}),
    course::gemm_case_name);

class WmmaTiledArgumentsTest : public course::GpuTest {};

TEST_F(WmmaTiledArgumentsTest, NegativeSizesAreRejectedWithAClearError) {
  course::expect_gemm_rejects_negative_sizes(course::impl::wmma_gemm, kTiledHint);
}

TEST_F(WmmaTiledArgumentsTest, RunsOnTheGivenStream) {
  course::expect_gemm_runs_on_stream(course::impl::wmma_gemm, kTiledHint);
}

// 16-byte copies need 16-byte aligned rows: A and B 2, 6 and 8 bytes past an aligned
// address must take the element-by-element path.
TEST_F(WmmaTiledArgumentsTest, MisalignedPointersAreHandled) {
  course::expect_gemm_handles_misaligned_pointers(course::impl::wmma_gemm,
                                                  course::GemmShape{136, 144, 72},  // K, N % 8 == 0
                                                  {1, 3, 4}, kTiledHint);
}

// --- Part 3: ldmatrix + mma.sync, 128 x 128 tiles, 4 stages of 32, swizzled ------------------

class MmaGemmTest : public course::GpuTest,
                    public ::testing::WithParamInterface<course::GemmCase> {};

TEST_P(MmaGemmTest, MatchesFloat64Reference) {
  course::expect_gemm_matches_reference(course::impl::mma_gemm, GetParam(), kMmaHint);
}

// The whole month-2 list (its K of 33, 65 and 129 end one element into a 32-deep stage), then
// shapes aimed at this kernel: exactly one 128 x 128 tile, one element more in every
// direction, a K of two stages (64, fewer than the pipeline's four), of exactly four (128), of
// many (1000), K < 16, and two or more tiles each way.
INSTANTIATE_TEST_SUITE_P(Shapes, MmaGemmTest, ::testing::ValuesIn(course::gemm_test_cases()),
                         course::gemm_case_name);
INSTANTIATE_TEST_SUITE_P(
    TileEdges, MmaGemmTest,
    ::testing::Values(course::GemmCase{{128, 128, 64}, 1.0f, 0.0f},
                      course::GemmCase{{129, 129, 72}, 1.0f, 0.0f},
                      course::GemmCase{{128, 256, 64}, 1.0f, 0.0f},
                      course::GemmCase{{129, 257, 72}, 1.0f, 0.0f},
                      course::GemmCase{{256, 512, 128}, 0.5f, -0.75f},
                      course::GemmCase{{300, 520, 1000}, 1.0f, 0.0f},
                      course::GemmCase{{1000, 1000, 8}, 1.5f, 0.5f},
                      course::GemmCase{{2048, 2048, 2048}, 1.0f, 0.0f}),
    course::gemm_case_name);

class MmaGemmArgumentsTest : public course::GpuTest {};

TEST_F(MmaGemmArgumentsTest, NegativeSizesAreRejectedWithAClearError) {
  course::expect_gemm_rejects_negative_sizes(course::impl::mma_gemm, kMmaHint);
}

TEST_F(MmaGemmArgumentsTest, RunsOnTheGivenStream) {
  course::expect_gemm_runs_on_stream(course::impl::mma_gemm, kMmaHint);
}

// 16-byte copies need 16-byte aligned rows: A and B 2, 6 and 8 bytes past an aligned
// address must take the element-by-element path, and C 4 bytes past one the scalar stores.
TEST_F(MmaGemmArgumentsTest, MisalignedPointersAreHandled) {
  course::expect_gemm_handles_misaligned_pointers(course::impl::mma_gemm,
                                                  course::GemmShape{136, 264, 72},  // K, N % 8 == 0
                                                  {1, 3, 4}, kMmaHint);
}

}  // namespace
