// The interface of exercise m1.02. Your skeleton (month1/02_launch_config/launch_config.cu)
// and the reference (solutions/month1/02_launch_config/launch_config.cu) both implement it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "course/impl.h"

COURSE_DECLARE_IMPLS(
    // How many blocks of `threads_per_block` threads of the grid-stride kernel fit on the
    // whole GPU at once: the number of multiprocessors (SMs) times the blocks that can be
    // resident on one SM. A grid of this size fills the GPU exactly once.
    // Throws std::invalid_argument unless threads_per_block is a multiple of 32 in [32, 1024].
    int blocks_to_fill_gpu(int threads_per_block);

    // c[i] = a[i] + b[i] for 0 <= i < n with a grid-stride loop: every thread handles the
    // elements index, index + (threads in the grid), index + 2 * (threads in the grid), ...
    // threads_per_block: a multiple of 32 in [32, 1024].
    // blocks: the grid size; 0 picks it: blocks_to_fill_gpu(threads_per_block), but never
    // more blocks than the n elements need.
    // a, b and c are device pointers; the work is queued on `stream`.
    // Throws std::invalid_argument for a negative n, a bad threads_per_block or a negative
    // blocks (the message shows the value), course::CudaError if the launch fails.
    void vector_add_grid_stride(const float* a, const float* b, float* c, std::int64_t n,
                                int threads_per_block, int blocks = 0,
                                cudaStream_t stream = nullptr);

    // The same sum, moving 16 bytes (a float4) per load and store wherever it can.
    // Correct for any n and for any float pointers, including ones that do not start on a
    // 16-byte boundary (a + 1, say): the elements before the first boundary and after the
    // last whole float4 are added one float at a time, and when a, b and c sit at different
    // distances from a boundary it uses one float at a time throughout.
    // Throws std::invalid_argument for a negative n, course::CudaError if the launch fails.
    void vector_add_float4(const float* a, const float* b, float* c, std::int64_t n,
                           cudaStream_t stream = nullptr);)
