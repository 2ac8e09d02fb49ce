// Tests for exercise m2.03 (shared-memory tiled GEMM). The same tests grade your skeleton
// and the reference solution; the test body every GEMM step shares is in
// course/gemm_testing.h.
//
// The shapes that matter most here are the ones that are not multiples of the tile (31,
// 33, 129, K = 33, 65, 1000, 4099...): a kernel that assumes whole tiles reads past the
// edges of A and B. The matrices are surrounded by NaN guards, so a value read from past
// the end and then used -- even multiplied by a zero -- turns the result into NaN.
#include <gtest/gtest.h>

#include "course/gemm_testing.h"
#include "course/testing.h"
#include "tiled_gemm.h"

namespace {

constexpr const char* kHint =
    "look at TODO(m2.03a) (the shared-memory tiles: one element of A and one of B per "
    "thread, zero outside the matrices), TODO(m2.03b) (the two __syncthreads() and the "
    "product of the tiles) and TODO(m2.03c) (the launch) in month2/03_tiled_gemm/tiled_gemm.cu";

class TiledGemmTest : public course::GpuTest,
                      public ::testing::WithParamInterface<course::GemmCase> {};

TEST_P(TiledGemmTest, MatchesFloat64Reference) {
  course::expect_gemm_matches_reference(course::impl::tiled_gemm, GetParam(), kHint);
}

// Square, rectangular and awkward shapes, empty ones, and alpha / beta variants: see
// course::gemm_test_cases().
INSTANTIATE_TEST_SUITE_P(Shapes, TiledGemmTest, ::testing::ValuesIn(course::gemm_test_cases()),
                         course::gemm_case_name);

class TiledGemmArgumentsTest : public course::GpuTest {};

TEST_F(TiledGemmArgumentsTest, NegativeSizesAreRejectedWithAClearError) {
  course::expect_gemm_rejects_negative_sizes(course::impl::tiled_gemm, kHint);
}

TEST_F(TiledGemmArgumentsTest, RunsOnTheGivenStream) {
  course::expect_gemm_runs_on_stream(course::impl::tiled_gemm, kHint);
}

}  // namespace
