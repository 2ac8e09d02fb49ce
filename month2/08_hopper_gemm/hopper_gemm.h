// The interface of exercise m2.08 (bonus, Hopper GPUs: the H100 and H200, compute capability
// 9.0). Your skeleton (month2/08_hopper_gemm/hopper_gemm.cu) and the reference
// (solutions/month2/08_hopper_gemm/hopper_gemm.cu) both implement it.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "course/impl.h"

COURSE_DECLARE_IMPLS(
    // Row-major C[M x N] = alpha * A[M x K] * B[K x N] + beta * C with A and B in float16
    // (hopper_gemm) or bfloat16 (hopper_gemm_bf16) and C in float32, accumulating in float32
    // with wgmma, the tiles brought in by the TMA. When beta == 0, C is only written. The
    // work is queued on `stream`.
    // The TMA copies rows whose length is a multiple of 16 bytes from 16-byte aligned
    // addresses, so K and N must be multiples of 8 and A and B 16-byte aligned; M is free.
    // Throws std::invalid_argument for bad arguments (the message says which),
    // std::runtime_error on a GPU that is not sm_90, course::CudaError if the launch fails.
    void hopper_gemm(int M, int N, int K, float alpha, const __half* A, const __half* B,
                     float beta, float* C, cudaStream_t stream = nullptr);
    void hopper_gemm_bf16(int M, int N, int K, float alpha, const __nv_bfloat16* A,
                          const __nv_bfloat16* B, float beta, float* C,
                          cudaStream_t stream = nullptr);)
