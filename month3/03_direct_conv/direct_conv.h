// The interface of exercise m3.03. Your skeletons (month3/03_direct_conv/*.cu) and the
// reference (solutions/month3/03_direct_conv/*.cu) both implement it.
#pragma once

#include <cuda_runtime.h>

#include "course/conv.h"
#include "course/impl.h"

COURSE_DECLARE_IMPLS(
    // Both compute the forward convolution of torch.nn.functional.conv2d with groups = 1,
    //   y[n][k][p][q] = bias[k] + sum over c, r, s of
    //                   x[n][c][p * stride_h - pad_h + r * dilation_h][q * stride_w - pad_w + s * dilation_w]
    //                   * w[k][c][r][s]
    // (cross-correlation, zero padding; course/conv.h), in float32, NCHW: x[N][C][H][W],
    // w[K][C][R][S], y[N][K][P][Q], all contiguous device pointers. `bias` is null (no
    // bias) or K floats. Any shape require_conv_arguments accepts works; N == 0 does
    // nothing (x and y may then be null). groups != 1 is not supported: pass one group at
    // a time. The work is queued on `stream` and may still be running when the function
    // returns. Both throw std::invalid_argument for a bad shape or a null pointer (naming
    // the value) and course::CudaError if the launch fails.

    // Part 1: one thread per output element.
    void conv2d_direct_naive(const ConvShape& shape, const float* x, const float* w,
                             const float* bias, float* y, cudaStream_t stream = nullptr);

    // Part 2: a block computes an 8 x 8 tile of output pixels for 64 output channels of one
    // image from shared memory (the input patch with its halo, the slice of the weights),
    // 8 channels x 4 pixels per thread in registers.
    void conv2d_direct_tiled(const ConvShape& shape, const float* x, const float* w,
                             const float* bias, float* y, cudaStream_t stream = nullptr);

    // Whether conv2d_direct_tiled runs its tiled kernel for `shape` (true) or hands the
    // shape to conv2d_direct_naive because one channel of the patch and the weights does
    // not fit in the kernel's shared memory (huge filters or dilations). Host code, no GPU.
    bool conv2d_direct_tiled_fits(const ConvShape& shape);)
