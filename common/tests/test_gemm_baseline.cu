// Test of the benchmarks' GEMM baseline (course/gemm_cublas.h): cuBLAS on row-major matrices
// through the transpose trick must match the float64 reference. It needs a GPU (and reports
// itself skipped without one).
#include <gtest/gtest.h>

#include "course/cublas_handle.h"
#include "course/gemm_cublas.h"
#include "course/gemm_testing.h"
#include "course/testing.h"

namespace {

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
