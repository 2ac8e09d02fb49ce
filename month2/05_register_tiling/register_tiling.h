// The interface of exercise m2.05. Your skeletons (month2/05_register_tiling/*.cu) and the
// reference (solutions/month2/05_register_tiling/*.cu) both implement it.
#pragma once

#include <cuda_runtime.h>

#include "course/impl.h"

COURSE_DECLARE_IMPLS(
    // Both compute row-major C[M x N] = alpha * A[M x K] * B[K x N] + beta * C, the
    // conventions of every month-2 GEMM (course/gemm.h): A, B and C are device pointers;
    // when beta == 0, C is only written, never read. Any M, N, K >= 0 and any alignment of
    // the pointers is accepted. The work is queued on `stream` and may still be running
    // when the function returns. Both throw std::invalid_argument for a negative size and
    // course::CudaError if the launch fails.

    // Part 1: each thread computes TM = 8 elements of one column of C (a 1D register tile).
    void sgemm_1d_register_tile(int M, int N, int K, float alpha, const float* A,
                                const float* B, float beta, float* C,
                                cudaStream_t stream = nullptr);

    // Part 2: each thread computes an 8 x 16 block of C (a 2D register tile), with float4
    // loads, a transposed A tile and copies that run ahead of the arithmetic.
    void sgemm_2d_register_tile(int M, int N, int K, float alpha, const float* A,
                                const float* B, float beta, float* C,
                                cudaStream_t stream = nullptr);

    // Whether sgemm_2d_register_tile takes its float4 path (128-bit loads, copies and
    // stores) for these sizes and pointers: only when every row of A, B and C starts on a
    // 16-byte boundary. Host code, no GPU needed: a test checks the choice it makes.
    bool sgemm_2d_uses_float4(int N, int K, const float* A, const float* B, const float* C);)
