// cuBLAS as the row-major baseline of the course's GEMMs, for tests and benchmarks (the
// kernels never call it).
#pragma once

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <type_traits>

#include "course/cublas_check.h"
#include "course/gemm.h"

namespace course {

// cuBLAS SGEMM on row-major matrices, same arguments and semantics as GemmFn plus a handle.
//
// cuBLAS is column-major: it reads an R x C matrix X with leading dimension ld as
// X[i + j * ld]. A row-major M x N matrix is, byte for byte, the column-major N x M matrix
// C^T. Since C^T = (A B)^T = B^T A^T, asking cuBLAS for the column-major product
// B^T (N x K, ld N) times A^T (K x M, ld K) writes C^T (N x M, ld N), which is exactly
// row-major C. No transposes are executed: only the roles of A and B swap.
//
// The handle is switched to `stream` and to CUBLAS_DEFAULT_MATH. Default math keeps
// cublasSgemm in true float32 (TF32 tensor cores are used only with
// CUBLAS_TF32_TENSOR_OP_MATH, which this overrides), so the baseline computes what the
// course's float32 kernels compute. (CUBLAS_PEDANTIC_MATH would also forbid TF32 but may
// choose slower kernels, which would flatter our numbers.)
inline void cublas_sgemm_row_major(cublasHandle_t handle, int M, int N, int K, float alpha,
                                   const float* A, const float* B, float beta, float* C,
                                   cudaStream_t stream) {
  require_gemm_arguments("cublas_sgemm_row_major", M, N, K);
  if (M == 0 || N == 0) return;  // an empty C: nothing to compute
  CUBLAS_CHECK(cublasSetStream(handle, stream));
  CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
  // Leading dimensions must be >= 1 even for an empty K (cuBLAS rejects 0).
  CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, std::max(N, 1),
                           A, std::max(K, 1), &beta, C, std::max(N, 1)));
}

// The same with float16 or bfloat16 A and B and float32 C: cublasGemmEx accumulating in
// float32 on the tensor cores (the baseline of m2.07 and m2.08). Same row-major trick as
// above.
template <typename Input>
void cublas_gemm_row_major(cublasHandle_t handle, int M, int N, int K, float alpha,
                           const Input* A, const Input* B, float beta, float* C,
                           cudaStream_t stream) {
  static_assert(!std::is_same_v<Input, float>, "float32 inputs: cublas_sgemm_row_major");
  require_gemm_arguments("cublas_gemm_row_major", M, N, K);
  if (M == 0 || N == 0) return;  // an empty C: nothing to compute
  const cudaDataType type = std::is_same_v<Input, __half> ? CUDA_R_16F : CUDA_R_16BF;
  CUBLAS_CHECK(cublasSetStream(handle, stream));
  CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, type,
                            std::max(N, 1), A, type, std::max(K, 1), &beta, C, CUDA_R_32F,
                            std::max(N, 1), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace course
