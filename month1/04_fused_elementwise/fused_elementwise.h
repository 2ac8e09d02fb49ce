// The interface of exercise m1.04. Your skeleton (month1/04_fused_elementwise/
// fused_elementwise.cu) and the reference (solutions/month1/04_fused_elementwise/
// fused_elementwise.cu) both implement it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "course/impl.h"

COURSE_DECLARE_IMPLS(
    // y[r, c] = gelu(x[r, c] * w[c] + b[c]) for a row-major [rows, cols] float32 matrix x
    // and per-column w and b (cols floats each), in ONE kernel: x is read once and y is
    // written once. gelu is the exact form 0.5 * v * (1 + erf(v / sqrt(2))), as
    // torch.nn.functional.gelu(v) computes by default. In PyTorch:
    //   y = torch.nn.functional.gelu(x * w + b)
    // x, w, b and y are device pointers; y must not overlap x. rows == 0 or cols == 0 is an
    // empty matrix: nothing to do. The work is queued on `stream`.
    // Throws std::invalid_argument for a negative rows or cols (the message shows the
    // value), course::CudaError if the launch fails.
    void affine_gelu(const float* x, const float* w, const float* b, float* y, std::int64_t rows,
                     std::int64_t cols, cudaStream_t stream = nullptr);

    // The same result the way PyTorch eager mode computes it: three kernels, each reading
    // and writing a whole matrix in memory:
    //   scratch = x * w;   y = scratch + b;   y = gelu(y)
    // `scratch` is a device buffer of rows * cols floats. Provided complete, as the baseline
    // the fused kernel is measured against.
    void affine_gelu_unfused(const float* x, const float* w, const float* b, float* y,
                             float* scratch, std::int64_t rows, std::int64_t cols,
                             cudaStream_t stream = nullptr);)
