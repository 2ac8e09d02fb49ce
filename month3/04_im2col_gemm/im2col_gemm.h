// The interface of exercise m3.04. Your skeletons (month3/04_im2col_gemm/*.cu) and the
// reference (solutions/month3/04_im2col_gemm/*.cu) both implement it.
//
// The convolution of m3.03 (course/conv.h: NCHW float32, groups = 1) as im2col and a GEMM:
//
//   X_col[C R S][images * P Q]   row (c, r, s) = (c * R + r) * S + s,
//                                column (n, p, q) = (n - first image) * P Q + p * Q + q,
//                                X_col[row][column] = x[n][c][p * stride_h - pad_h + r *
//                                dilation_h]
//                                                         [q * stride_w - pad_w + s * dilation_w]
//                                (0 in the padding): every window of x, one column each
//   y_n[K][P Q] = W[K][C R S] * X_col[:, columns of image n]     for every image n
//
// W is w itself (w[k][c][r][s] is row k of a row-major K x C R S matrix), and y_n is image n
// of y (NCHW), so nothing but X_col is ever copied. README.md draws it.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "course/conv.h"
#include "course/impl.h"

namespace course {

// Which GEMM finishes the convolution.
//   cublas      cublasSgemmStridedBatched in true float32 (CUBLAS_DEFAULT_MATH, never TF32):
//               one GEMM per image, batched in one call, written straight into y (NCHW).
//   sgemm_m205  your m2.05 SGEMM (sgemm_2d_register_tile): one GEMM for all the images of a
//               pass, Y_tmp[K][images * P Q] = W X_col, then a permute into y's NCHW order
//               (the m2.05 launcher takes no leading dimensions and no batch stride).
enum class Im2colGemm { cublas, sgemm_m205 };

inline const char* to_string(Im2colGemm gemm) {
  return gemm == Im2colGemm::cublas ? "cublas" : "sgemm_m205";
}

}  // namespace course

COURSE_DECLARE_IMPLS(
    // Part 1 (im2col.cu): writes X_col for images first_image .. first_image + images - 1 of x
    // (the layout above; x_col holds C R S rows of images * P * Q floats, 64-bit offsets), on
    // `stream`. Throws std::invalid_argument for a bad shape, null pointers or images outside
    // the batch; images == 0 does nothing.
    void im2col(const ConvShape& shape, const float* x, int first_image, int images, float* x_col,
                cudaStream_t stream = nullptr);

    // Whether the convolution needs an im2col at all: a 1 x 1 filter with stride 1 and no
    // padding reads each pixel once, and image n of x, [C][H W], already is its X_col
    // [C R S][P Q] (P = H, Q = W). The cuBLAS path then multiplies x directly.
    bool conv2d_im2col_needs_copy(const ConvShape& shape);

    // Bytes of workspace conv2d_im2col_gemm needs to do the whole batch in one pass (the
    // fastest), and to do it one image per pass (the least it accepts). 0 when it needs none
    // (the cuBLAS path of a 1 x 1, stride-1, unpadded layer). The im2col copy is
    // 4 C R S P Q bytes per image, R S / (stride_h stride_w) times x's own 4 C H W, about;
    // the m2.05 path adds Y_tmp, 4 K P Q bytes per image. Host code, no GPU.
    std::size_t conv2d_im2col_workspace_bytes(const ConvShape& shape, Im2colGemm gemm);
    std::size_t conv2d_im2col_min_workspace_bytes(const ConvShape& shape, Im2colGemm gemm);

    // Parts 2 and 3 (conv2d_im2col_gemm.cu): y = conv2d(x, w) + bias, like m3.03's launchers
    // (null bias = no bias; N == 0 does nothing), with the GEMM `gemm`, using `workspace`
    // (a device pointer aligned to 16 bytes, or null when the shape needs none) of
    // `workspace_bytes` bytes: as many images per pass as fit, at least one
    // (conv2d_im2col_min_workspace_bytes). Everything is queued on `stream`. Throws
    // std::invalid_argument for a bad shape, a null pointer, a workspace too small (with the
    // bytes it needs), or a layer the chosen GEMM cannot index; course::CudaError or
    // course::CublasError when CUDA or cuBLAS fail.
    void conv2d_im2col_gemm(const ConvShape& shape, const float* x, const float* w,
                            const float* bias, float* y, Im2colGemm gemm, void* workspace,
                            std::size_t workspace_bytes, cudaStream_t stream = nullptr);

    // The same in the signature of every convolution launcher (course::ConvFn): the
    // workspace comes from cudaMallocAsync on `stream` and goes back with cudaFreeAsync
    // (stream-ordered, so it can be captured into a CUDA graph), at most
    // kIm2colWorkspaceBudgetBytes, so a large batch takes several passes. Convenient, but
    // a call that allocates may wait for the driver: code that calls it often (the
    // benchmark, PyTorch's allocator) passes its own workspace to conv2d_im2col_gemm.
    void conv2d_im2col_cublas(const ConvShape& shape, const float* x, const float* w,
                              const float* bias, float* y, cudaStream_t stream = nullptr);
    void conv2d_im2col_sgemm(const ConvShape& shape, const float* x, const float* w,
                             const float* bias, float* y, cudaStream_t stream = nullptr);)

namespace course {
// The most workspace conv2d_im2col_cublas and conv2d_im2col_sgemm allocate per call.
inline constexpr std::size_t kIm2colWorkspaceBudgetBytes = std::size_t{1} << 30;  // 1 GiB
}  // namespace course
