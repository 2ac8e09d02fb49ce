// Exercise m3.04, parts 2 and 3: the GEMM that finishes the convolution.
//
// What changed from m3.03: after im2col (part 1, im2col.cu) the convolution of image n is
// one matrix product, y_n [K][P Q] = W [K][C R S] * X_col_n [C R S][P Q], and a GEMM is the
// best-tuned kernel there is. Two GEMMs finish it:
//   * part 2, cuBLAS in true float32: one cublasSgemmStridedBatched call computes all the
//     images of a pass, each written straight into its place in y (NCHW). cuBLAS is
//     column-major and the course is row-major: that is the trap of TODO(m3.04b);
//   * part 3, your m2.05 SGEMM (sgemm_2d_register_tile): it takes contiguous row-major
//     matrices only, so it computes the whole pass as one GEMM, Y_tmp [K][images P Q] =
//     W X_col (TODO(m3.04c)), and a small kernel permutes Y_tmp into y's [images][K][P Q]
//     order, adding the bias (TODO(m3.04d)).
// The workspace (X_col, and Y_tmp for part 3), the passes over the batch, the cuBLAS handle,
// the bias of part 2 and the launchers are given, in
// month3/04_im2col_gemm/conv2d_im2col_gemm_given.cuh; read conv2d_im2col_gemm there to see
// how your functions are called. Then run `./course grade m3_04`.
#include <cublas_v2.h>

#include <cstdint>

#include "conv2d_im2col_gemm_given.cuh"
#include "course/conv.h"
#include "course/cublas_check.h"

namespace course::COURSE_IMPL {  // see course/impl.h
namespace im2col_gemm_detail {

// From conv2d_im2col_gemm_given.cuh: m205 names the m2.05 SGEMM's namespace (yours, or the
// reference's: CMakeLists.txt says how to choose), and kThreads = 256 is the block size of
// the permute kernel.

// Part 2: y_n = W X_col_n for the `images` images of one pass, one cuBLAS call.
//
// X_col_n is row-major [C R S][P Q] with row stride ld_x_col (images P Q after im2col, whose
// rows run over all the pass's images; P Q when x itself is X_col), image n + 1 starting
// x_col_image_stride floats after image n (P Q after im2col; C H W for x itself). W is w,
// row-major [K][C R S]. y_n is row-major [K][P Q], image n + 1 K P Q floats after image n.
//
// cuBLAS is column-major: it reads a matrix with leading dimension ld as M[i + j * ld] (i
// the row, j the column), where the course's row-major matrices are M[i * ld + j]. Byte for
// byte, a row-major R x C matrix with row stride ld IS a column-major C x R matrix (its
// transpose) with the same ld. Use that, and (A B)^T = B^T A^T, to ask cuBLAS for a product
// whose column-major result is exactly the row-major y_n, without transposing anything
// (CUBLAS_OP_N for both operands). README.md ("The column-major trap") draws it.
void gemm_cublas(cublasHandle_t handle, const ConvShape& s, const float* w, const float* x_col,
                 int ld_x_col, long long x_col_image_stride, int images, float* y) {
  // TODO(m3.04b): one cublasSgemmStridedBatched call for the `images` images:
  //   cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha,
  //                             A, lda, strideA, B, ldb, strideB, &beta,
  //                             C, ldc, strideC, batchCount)
  // computes, for every batch i, the COLUMN-MAJOR product C_i [m x n] = A_i [m x k] B_i [k x n]
  // with A_i = A + i * strideA read as A_i[row + col * lda] (and B_i, C_i alike). Our
  // matrices are row-major. Work out which of W and X_col_n is cuBLAS's A, what m, n and k
  // are, and every leading dimension and stride, from the comment above; wrap the call in
  // CUBLAS_CHECK(...). alpha = 1, beta = 0 (y is only written). Check on paper: the element
  // y_n[k][pq] must come out as C_i[pq + k * ldc] for i = n.
  (void)handle, (void)s, (void)w, (void)x_col, (void)ld_x_col, (void)x_col_image_stride,
      (void)images, (void)y;
}

// Part 3a: Y_tmp [K][images P Q] = W [K][C R S] X_col [C R S][images P Q] with your m2.05
// SGEMM: row-major, contiguous, C = alpha A B + beta C, in course::m205 (see above).
void gemm_m205(const ConvShape& s, const float* w, const float* x_col, int images, float* y_tmp,
               cudaStream_t stream) {
  // TODO(m3.04c): call m205::sgemm_2d_register_tile(M, N, K, alpha, A, B, beta, C, stream)
  // (month2/05_register_tiling/register_tiling.h: row-major C[M x N] = alpha A[M x K] B[K x N]
  // + beta C) for Y_tmp = W X_col: which sizes are M, N and K of this GEMM, in terms of the
  // convolution's K, C R S, P Q and `images`?
  (void)s, (void)w, (void)x_col, (void)images, (void)y_tmp, (void)stream;
}

// Part 3b: y for the pass's images from Y_tmp, plus the bias. Thread i writes y_pass[i], in
// y's own order, i = (image * K + k) * P Q + pq (consecutive threads: consecutive pq, so
// both the stores and the loads of Y_tmp[k][image * P Q + pq] are coalesced).
__global__ void __launch_bounds__(kThreads)
    permute_kernel(ConvShape s, int images, const float* __restrict__ y_tmp,
                   const float* __restrict__ bias, float* __restrict__ y_pass) {
  const std::int64_t pq_count = static_cast<std::int64_t>(s.P()) * s.Q();
  const std::int64_t total = static_cast<std::int64_t>(images) * s.K * pq_count;
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  // TODO(m3.04d): undo i = (image * K + k) * P Q + pq into image, k and pq (pq fastest),
  // read Y_tmp[k][image * P Q + pq] (Y_tmp has images * P Q columns), add bias[k] when
  // bias is not null, and store the value at y_pass[i].
  // Example: K = 2, P Q = 3, images = 2, i = 7 -> pq = 1, k = 0, image = 1: y_pass[7] =
  // y_tmp[0 * 6 + 1 * 3 + 1] = y_tmp[4].
  (void)y_tmp, (void)bias, (void)y_pass;
}

}  // namespace im2col_gemm_detail
}  // namespace course::COURSE_IMPL
