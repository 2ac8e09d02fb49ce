// The interface of exercise m2.07. Your skeleton (month2/07_wmma/wmma_gemm.cu and
// mma_gemm.cu) and the reference (the same files under solutions/) both implement it.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "course/impl.h"

COURSE_DECLARE_IMPLS(
    // Both compute row-major C[M x N] = alpha * A[M x K] * B[K x N] + beta * C with A and B
    // in float16 (__half) and C in float32, accumulating in float32 on the tensor cores:
    // the mixed-precision GEMM behind PyTorch's autocast. A, B and C are device pointers;
    // when beta == 0, C is only written, never read. The work is queued on `stream`.
    // Both throw std::invalid_argument for bad arguments (the message says which) and
    // course::CudaError if the launch fails.

    // Part 1: one warp per 16 x 16 tile of C, its fragments loaded straight from global
    // memory. The tensor-core fragments are 16 x 16, so M, N and K must be multiples of 16
    // and A, B and C 32-byte aligned; anything else is rejected with a clear error.
    void wmma_gemm_simple(int M, int N, int K, float alpha, const __half* A, const __half* B,
                          float beta, float* C, cudaStream_t stream = nullptr);

    // Part 2: 128 x 128 block tiles staged through shared memory (double-buffered, copied
    // asynchronously), eight warps of 64 x 32, and an epilogue that handles the edges: any
    // M, N, K >= 0 and any alignment of the pointers.
    void wmma_gemm(int M, int N, int K, float alpha, const __half* A, const __half* B,
                   float beta, float* C, cudaStream_t stream = nullptr);

    // Part 3 (mma_gemm.cu): ldmatrix and mma.sync instead of WMMA, 128 x 128 block tiles of
    // 4 warps of 64 x 64, four stages of swizzled shared memory, C written straight from
    // the accumulators: any M, N, K >= 0 and any alignment, like part 2.
    void mma_gemm(int M, int N, int K, float alpha, const __half* A, const __half* B,
                  float beta, float* C, cudaStream_t stream = nullptr);)
