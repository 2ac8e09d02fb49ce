// The interface of exercise m3.05. Your skeleton (month3/05_implicit_gemm/
// conv2d_implicit_gemm.cu) and the reference (solutions/month3/05_implicit_gemm/...) both
// implement it, with the given launchers of conv2d_implicit_gemm_given.cuh.
//
// The convolution of course/conv.h (groups = 1, cross-correlation, zero padding) in NHWC as
// an implicit GEMM on the tensor cores:
//   x: NHWC float16 or bfloat16, x[n][h][w][c]      w: KRSC, w[k][r][s][c], same type
//   y: NHWC float32, y[n][p][q][k] (float32 accumulation, no rounding of the result)
//   bias: null or K float32
// The GEMM (CUTLASS's fprop mapping):
//   M = N P Q   row    m = (n P + p) Q + q          (an output pixel)
//   N = K       column k                           (a filter)
//   K = C R S   depth  g = (r S + s) C + c          (a tap of the filter: KRSC's own order)
//   y[m][k] = sum over g of A[m][g] W[k][g], A[m][g] = x[n][p stride_h - pad_h + r dilation_h]
//                                                       [q stride_w - pad_w + s dilation_w][c]
// (0 in the padding), W = w as a row-major K x C R S matrix. A is never written to memory: the
// kernel gathers its tiles from x. README.md draws it.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "course/conv.h"
#include "course/impl.h"

namespace course {

// Part 1's index math for one element A[m][g] of the implicit matrix, as the kernel computes
// it: the output pixel (n, p, q) of row m, the filter tap (r, s, c) of column g, the input
// position (h, w) they read, and whether that element reads x at all (inside = false: the
// padding, or m or g beyond the GEMM; the element is 0).
struct ImplicitGemmTap {
  int n = 0, p = 0, q = 0;
  int r = 0, s = 0, c = 0;
  int h = 0, w = 0;
  bool inside = false;
};

}  // namespace course

COURSE_DECLARE_IMPLS(
    // Part 1 (the tasks m3.05a to m3.05c), run on the host: the kernel's own functions, so the
    // tests can check them without a GPU. m in [0, M + 128), g in [0, C R S + 64): the spare
    // rows and columns of the last tiles must come back inside = false.
    ImplicitGemmTap implicit_gemm_tap(const ConvShape& shape, int m, int g);

    // Part 2 (the task m3.05d), run on the host: the precomputed loader's walk along GEMM row m,
    // as one thread of the kernel does it. The row's start is computed once, the filter tap
    // once at g = g0, then moved by `step` columns `steps` times without a division. Returns
    // the offset into x (NHWC, in elements) that the loader reads at each of the steps + 1
    // positions g0, g0 + step, ..., or -1 where it reads nothing (padding, m >= M, g >= C R S).
    // g0 and step multiples of 8 (the kernel's 16-byte chunks: g0 = 8 * chunk column, step =
    // the tile depth kBlockK, 32 or 64); requires C % 8 == 0 like the kernel's fast path.
    std::vector<std::int64_t> implicit_gemm_precomputed_walk(const ConvShape& shape, int m, int g0,
                                                             int step, int steps);

    // y = conv2d(x, w) + bias in NHWC (above), queued on `stream`. Null bias: no bias; N == 0
    // does nothing. Throws std::invalid_argument for a bad shape or a null pointer (course/
    // conv.h); course::CudaError when CUDA fails.
    //   Fast path: C % 8 == 0 and x and w 16-byte aligned (16-byte cp.async copies of 8
    //   channels of one pixel). Otherwise (C = 3 first layers, odd channel counts, offset
    //   pointers) a slow path that gathers one element at a time: correct, not fast. K is
    //   free: the edges of y are checked element by element.
    //
    // Part 1: every index computed in place, for every copy (CUTLASS's "analytic" iterator).
    void conv2d_implicit_gemm_analytic_fp16(const ConvShape& shape, const __half* x,
                                            const __half* w, const float* bias, float* y,
                                            cudaStream_t stream = nullptr);
    void conv2d_implicit_gemm_analytic_bf16(const ConvShape& shape, const __nv_bfloat16* x,
                                            const __nv_bfloat16* w, const float* bias, float* y,
                                            cudaStream_t stream = nullptr);
    // Part 2: the GEMM-row decode done once per block with fast division, the filter tap
    // moved from tile to tile without division (CUTLASS's "optimized" iterator). The slow
    // path is part 1's. On the fastest main loop of the GPU: part 3's wgmma
    // (implicit_gemm_wgmma.h) on a Hopper when C R S > 64, mma.sync otherwise.
    void conv2d_implicit_gemm_fp16(const ConvShape& shape, const __half* x, const __half* w,
                                   const float* bias, float* y, cudaStream_t stream = nullptr);
    void conv2d_implicit_gemm_bf16(const ConvShape& shape, const __nv_bfloat16* x,
                                   const __nv_bfloat16* w, const float* bias, float* y,
                                   cudaStream_t stream = nullptr);
    // The same loaders on mma.sync on every GPU (on a Hopper, what part 3 replaces).
    void conv2d_implicit_gemm_mma_sync_fp16(const ConvShape& shape, const __half* x,
                                            const __half* w, const float* bias, float* y,
                                            cudaStream_t stream = nullptr);
    void conv2d_implicit_gemm_mma_sync_bf16(const ConvShape& shape, const __nv_bfloat16* x,
                                            const __nv_bfloat16* w, const float* bias, float* y,
                                            cudaStream_t stream = nullptr);
    // The main loop conv2d_implicit_gemm_fp16 and _bf16 take on the current GPU for a fast-path
    // layer with C R S > 64: "wgmma" (part 3: a Hopper, and this library built for sm_90a) or
    // "mma.sync".
    const char* conv2d_implicit_gemm_main_loop();)
