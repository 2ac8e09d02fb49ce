// The interface of exercise m2.06. Your skeletons (month2/06_warp_primitives/*.cu) and the
// reference (solutions/month2/06_warp_primitives/*.cu) both implement it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "course/impl.h"

COURSE_DECLARE_IMPLS(
    // Part 1: *sum = x[0] + x[1] + ... + x[n - 1], in float32. x and sum are device
    // pointers; *sum is overwritten (0 when n == 0). x may start anywhere (x + 1 of an
    // allocation is fine). Each block adds up its share of x and adds that to *sum with
    // one atomicAdd, so the order of the additions, and so the last bits of the result, can
    // change from run to run. The work is queued on `stream`.
    // Throws std::invalid_argument for a negative n or a null pointer, course::CudaError if
    // the launch fails.

    // The classic block reduction: the block's 256 partial sums go to shared memory and are
    // added in pairs, halving the active threads each round, with a __syncthreads between
    // rounds.
    void reduce_sum_shared_tree(const float* x, std::int64_t n, float* sum,
                                cudaStream_t stream = nullptr);

    // The same sum, reduced inside each warp with register shuffles (__shfl_down_sync):
    // shared memory holds one value per warp, and the block waits at one barrier.
    void reduce_sum_warp_shuffle(const float* x, std::int64_t n, float* sum,
                                 cudaStream_t stream = nullptr);

    // Part 2: y = softmax(x) along every row of a row-major [rows x cols] float32 matrix:
    //   y[r][c] = exp(x[r][c] - m_r) / sum_j exp(x[r][j] - m_r),   m_r = max_j x[r][j].
    // One warp per row; the row's max and sum are combined across the warp with
    // __shfl_xor_sync. -inf entries (a mask) give 0; a row that is all -inf gives NaN, as in
    // PyTorch. x and y are device pointers of rows * cols floats that do not overlap.
    // Throws std::invalid_argument for negative sizes or null pointers, course::CudaError
    // if the launch fails.
    void softmax_rows(const float* x, float* y, std::int64_t rows, std::int64_t cols,
                      cudaStream_t stream = nullptr);)
