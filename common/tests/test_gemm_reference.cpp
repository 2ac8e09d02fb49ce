// Tests of the GEMM family's test side (course/gemm_reference.h): the float64 reference on a
// hand-computed example, the sampled rows and the tolerance. They need no GPU.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "course/gemm_reference.h"

namespace {

TEST(GemmReference, MatchesAHandComputedExample) {
  // A = [[1, 2, 3], [4, 5, 6]], B = [[7, 8], [9, 10], [11, 12]]: A B = [[58, 64], [139, 154]].
  const course::GemmShape shape{2, 2, 3};
  const std::vector<float> A = {1, 2, 3, 4, 5, 6};
  const std::vector<float> B = {7, 8, 9, 10, 11, 12};
  const std::vector<float> C = {1, 2, 3, 4};
  EXPECT_EQ(course::reference_gemm(shape, 2.0f, A, B, -1.0f, C),
            (std::vector<double>{2 * 58 - 1, 2 * 64 - 2, 2 * 139 - 3, 2 * 154 - 4}));
  // beta == 0: C is not read, so a NaN in it does not matter.
  const std::vector<float> nan_c(4, std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(course::reference_gemm(shape, 1.0f, A, B, 0.0f, nan_c),
            (std::vector<double>{58, 64, 139, 154}));
  EXPECT_EQ(course::reference_gemm_rows(shape, 1.0f, A, B, 0.0f, {}, {1}),
            (std::vector<double>{139, 154}));
  // K == 0: an empty sum, C = beta * C.
  EXPECT_EQ(course::reference_gemm({2, 2, 0}, 1.0f, {}, {}, 0.5f, C),
            (std::vector<double>{0.5, 1.0, 1.5, 2.0}));
}

TEST(GemmReference, SampledRowsHitEveryRowTile) {
  for (int M : {1, 2, 3, 127, 128, 129, 1000, 4093, 4096}) {
    const std::vector<int> rows = course::gemm_sample_rows(M);
    ASSERT_FALSE(rows.empty()) << "M = " << M;
    EXPECT_EQ(rows.front(), 0) << "M = " << M;
    EXPECT_EQ(rows.back(), M - 1) << "M = " << M;
    for (std::size_t i = 1; i < rows.size(); ++i) EXPECT_LT(rows[i - 1], rows[i]);
    for (int tile = 0; tile * 32 < M; ++tile) {  // every 32-row tile has a sampled row
      bool hit = false;
      for (int r : rows) hit |= r / 32 == tile;
      EXPECT_TRUE(hit) << "M = " << M << ": no sampled row in rows " << tile * 32 << "..";
    }
  }
}

TEST(GemmReference, ToleranceGrowsWithKButStaysTight) {
  const course::Tolerance small = course::gemm_tolerance(course::Dtype::fp32, 1);
  const course::Tolerance large = course::gemm_tolerance(course::Dtype::fp32, 4096);
  EXPECT_LT(small.atol, large.atol);
  EXPECT_LT(large.atol, 0.01) << "a dropped product (about 0.25 on average) must still fail";
}

}  // namespace
