// Tests for exercise m2.02 (coalesced GEMM). The same tests grade your skeleton and the
// reference solution; the test body every GEMM step shares is in course/gemm_testing.h.
//
// The tests check that the answer is right, not that the accesses coalesce: both mappings
// compute the same C. The benchmark (bench_coalesced_gemm.cu) shows the difference.
#include <gtest/gtest.h>

#include "course/gemm_testing.h"
#include "course/testing.h"
#include "coalesced_gemm.h"

namespace {

constexpr const char* kHint =
    "look at TODO(m2.02a) (the kernel: column from x, row from y, bounds check, dot product, "
    "alpha and beta) and TODO(m2.02b) (the launch: x over the N columns, y over the M rows) "
    "in month2/02_coalesced_gemm/coalesced_gemm.cu";

class CoalescedGemmTest : public course::GpuTest,
                          public ::testing::WithParamInterface<course::GemmCase> {};

TEST_P(CoalescedGemmTest, MatchesFloat64Reference) {
  course::expect_gemm_matches_reference(course::impl::coalesced_gemm, GetParam(), kHint);
}

// Square, rectangular and awkward shapes, empty ones, and alpha / beta variants: see
// course::gemm_test_cases().
INSTANTIATE_TEST_SUITE_P(Shapes, CoalescedGemmTest,
                         ::testing::ValuesIn(course::gemm_test_cases()), course::gemm_case_name);

class CoalescedGemmArgumentsTest : public course::GpuTest {};

TEST_F(CoalescedGemmArgumentsTest, NegativeSizesAreRejectedWithAClearError) {
  course::expect_gemm_rejects_negative_sizes(course::impl::coalesced_gemm, kHint);
}

TEST_F(CoalescedGemmArgumentsTest, RunsOnTheGivenStream) {
  course::expect_gemm_runs_on_stream(course::impl::coalesced_gemm, kHint);
}

}  // namespace
