// Tests for exercise m2.01 (naive GEMM). The same tests grade your skeleton and the
// reference solution; the test body every GEMM step shares is in course/gemm_testing.h
// (the harness's own tests are in common/tests/).
#include <gtest/gtest.h>

#include "course/gemm_testing.h"
#include "course/testing.h"
#include "naive_gemm.h"

namespace {

constexpr const char* kHint =
    "look at TODO(m2.01a) (the kernel: row and column, bounds check, dot product, alpha and "
    "beta) and TODO(m2.01b) (the launch: a 2D grid over C) in month2/01_naive_gemm/naive_gemm.cu";

class NaiveGemmTest : public course::GpuTest,
                      public ::testing::WithParamInterface<course::GemmCase> {};

TEST_P(NaiveGemmTest, MatchesFloat64Reference) {
  course::expect_gemm_matches_reference(course::impl::naive_gemm, GetParam(), kHint);
}

// Square, rectangular and awkward shapes, empty ones, and alpha / beta variants: see
// course::gemm_test_cases().
INSTANTIATE_TEST_SUITE_P(Shapes, NaiveGemmTest, ::testing::ValuesIn(course::gemm_test_cases()),
                         course::gemm_case_name);

class NaiveGemmArgumentsTest : public course::GpuTest {};

TEST_F(NaiveGemmArgumentsTest, NegativeSizesAreRejectedWithAClearError) {
  course::expect_gemm_rejects_negative_sizes(course::impl::naive_gemm, kHint);
}

TEST_F(NaiveGemmArgumentsTest, RunsOnTheGivenStream) {
  course::expect_gemm_runs_on_stream(course::impl::naive_gemm, kHint);
}

}  // namespace
