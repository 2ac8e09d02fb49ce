// The interface of exercise m1.01. Your skeleton (month1/01_vector_add/vector_add.cu) and
// the reference (solutions/month1/01_vector_add/vector_add.cu) both implement it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "course/impl.h"

COURSE_DECLARE_IMPLS(
    // c[i] = a[i] + b[i] for 0 <= i < n. a, b and c are device pointers.
    // The work is queued on `stream` and may still be running when this returns.
    // Throws std::invalid_argument for a negative n, course::CudaError if the launch fails.
    void vector_add(const float* a, const float* b, float* c, std::int64_t n,
                    cudaStream_t stream = nullptr);)
