// The interface of exercise m2.03. Your skeleton (month2/03_tiled_gemm/tiled_gemm.cu) and
// the reference (solutions/month2/03_tiled_gemm/tiled_gemm.cu) both implement it.
#pragma once

#include <cuda_runtime.h>

#include "course/impl.h"

COURSE_DECLARE_IMPLS(
    // Row-major C[M x N] = alpha * A[M x K] * B[K x N] + beta * C, computed tile by tile
    // through shared memory, for any M, N and K (the conventions of every month-2 GEMM are
    // in course/gemm.h). A, B and C are device pointers; when beta == 0, C is only
    // written, never read.
    // The work is queued on `stream` and may still be running when this returns.
    // Throws std::invalid_argument for a negative size, course::CudaError if the launch fails.
    void tiled_gemm(int M, int N, int K, float alpha, const float* A, const float* B,
                    float beta, float* C, cudaStream_t stream = nullptr);)
