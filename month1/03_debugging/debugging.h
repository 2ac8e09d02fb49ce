// The interface of exercise m1.03. Your skeleton (month1/03_debugging/debugging.cu) and the
// reference (solutions/month1/03_debugging/debugging.cu) both implement it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "course/impl.h"

COURSE_DECLARE_IMPLS(
    // Part (a): errors that CUDA reports only if you ask.

    // Device memory for `count` floats (cudaMalloc). Release it with free_device_floats.
    // Throws std::invalid_argument for a negative count, and course::CudaError, naming the
    // cudaMalloc call, when the GPU cannot provide the memory.
    float* allocate_device_floats(std::int64_t count);

    // Releases memory from allocate_device_floats (cudaFree); throws course::CudaError if
    // cudaFree fails.
    void free_device_floats(float* pointer);

    // Launches ONE block of `threads` threads that writes out[t] = t for t < threads; `out`
    // holds at least `threads` floats. The block size is deliberately not checked up front:
    // CUDA rejects a block of more than 1024 threads, and this function must report that
    // as a course::CudaError thrown by its launch check (CUDA_CHECK_LAUNCH).
    void launch_with_block_size(float* out, int threads, cudaStream_t stream = nullptr);

    // Part (b): a kernel with planted bugs to find and fix.

    // sums[r] = matrix[r][0] + ... + matrix[r][cols - 1] for every row r of a row-major
    // [rows, cols] float32 matrix (torch: matrix.sum(dim=1)). Reads only the rows * cols
    // elements of `matrix` and writes only sums[0, rows). A row with no columns sums to 0.
    // Throws std::invalid_argument for a negative rows or cols.
    void row_sum(const float* matrix, float* sums, int rows, int cols,
                 cudaStream_t stream = nullptr);)
