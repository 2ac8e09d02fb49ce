// Tests for exercise m2.01 (naive GEMM). The same tests grade your skeleton and the
// reference solution; the test body every GEMM step shares is in course/gemm_testing.h.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "course/cublas_handle.h"
#include "course/gemm.h"
#include "course/gemm_cublas.h"
#include "course/gemm_reference.h"
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

// The shared GEMM harness itself, checked once here, at the first GEMM of the course.

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

// The benchmarks' baseline: cuBLAS on row-major matrices through the transpose trick.
cublasHandle_t g_cublas = nullptr;
void cublas_gemm(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                 float* C, cudaStream_t stream) {
  course::cublas_sgemm_row_major(g_cublas, M, N, K, alpha, A, B, beta, C, stream);
}

class GemmBaselineTest : public course::GpuTest {};

TEST_F(GemmBaselineTest, CublasRowMajorMatchesReference) {
  course::CublasHandle handle;
  g_cublas = handle.get();
  const char* hint = "course::cublas_sgemm_row_major in common/include/course/gemm_cublas.h";
  for (const course::GemmCase& c :
       {course::GemmCase{{17, 33, 65}, 1.0f, 0.0f}, course::GemmCase{{1, 300, 129}, 1.0f, 0.0f},
        course::GemmCase{{300, 1, 129}, 1.5f, 0.0f}, course::GemmCase{{96, 80, 1000}, 1.0f, 0.0f},
        course::GemmCase{{129, 129, 129}, 0.5f, -0.75f}}) {
    course::expect_gemm_matches_reference(cublas_gemm, c, hint);
  }
  g_cublas = nullptr;
}

}  // namespace
