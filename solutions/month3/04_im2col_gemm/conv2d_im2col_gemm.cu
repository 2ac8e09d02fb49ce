// Exercise m3.04, parts 2 and 3: the GEMM that finishes the convolution. (Reference solution.)
//
// What changed from m3.03: after im2col (part 1, im2col.cu) the convolution of image n is
// one matrix product, y_n [K][P Q] = W [K][C R S] * X_col_n [C R S][P Q], and a GEMM is the
// best-tuned kernel there is. Two GEMMs finish it:
//   * part 2, cuBLAS in true float32: one cublasSgemmStridedBatched call computes all the
//     images of a pass, each written straight into its place in y (NCHW). No TF32: the
//     handle is set to CUBLAS_DEFAULT_MATH explicitly (the given code says why);
//   * part 3, your m2.05 SGEMM (sgemm_2d_register_tile): it takes contiguous row-major
//     matrices only, so it computes the whole pass as one GEMM, Y_tmp [K][images P Q] =
//     W X_col, and a small kernel permutes Y_tmp into y's [images][K][P Q] order (adding the
//     bias on the way).
// Why it should be faster than m3.03's tiled kernel: cuBLAS (and m2.05) keep 8 x 8 or larger
// register tiles busy with deep software pipelines; the direct kernel's tile was limited by
// its halo and its channel steps. The price is the X_col round trip through DRAM (written by
// im2col, read by the GEMM), R S times the size of x: README.md weighs the two.
//
// The workspace holds X_col (and Y_tmp for part 3) for `images` images per pass; the caller
// passes it (conv2d_im2col_gemm) or the ConvFn forms allocate it on the stream. That code,
// the passes over the batch and the launchers are given, in
// month3/04_im2col_gemm/conv2d_im2col_gemm_given.cuh.
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
// cuBLAS is column-major: it reads a matrix with leading dimension ld as M[i + j * ld]. A
// row-major R x C matrix with row stride ld is, byte for byte, the column-major C x R matrix
// (its transpose) with the same ld. So the row-major product Y_n = W X_col_n is, to cuBLAS,
// Y_n^T = X_col_n^T W^T with
//   Y_n^T    [P Q x K]        ld P Q        (m = P Q, n = K)
//   X_col_n^T [P Q x C R S]    ld ld_x_col   (cuBLAS's A: the FIRST operand)
//   W^T      [C R S x K]      ld C R S      (cuBLAS's B, the same for every image: stride 0)
// and no transposes executed (CUBLAS_OP_N twice): only the roles of the operands swap. The
// long side, P Q (up to 3136 for a 56 x 56 layer), is cuBLAS's m, and the batch gives it
// images x (P Q / tile) x (K / tile) tiles to spread over the GPU.
void gemm_cublas(cublasHandle_t handle, const ConvShape& s, const float* w, const float* x_col,
                 int ld_x_col, long long x_col_image_stride, int images, float* y) {
  const int K = s.K, CRS = static_cast<int>(s.gemm_k()), PQ = s.P() * s.Q();
  const float alpha = 1.0f, beta = 0.0f;  // beta = 0: y is only written, never read
  CUBLAS_CHECK(cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N,
                                         /*m=*/PQ, /*n=*/K, /*k=*/CRS, &alpha,
                                         /*A=*/x_col, ld_x_col, x_col_image_stride,
                                         /*B=*/w, CRS, /*strideB=*/0, &beta,
                                         /*C=*/y, PQ, static_cast<long long>(K) * PQ, images));
}

// Part 3a: Y_tmp [K][images P Q] = W [K][C R S] X_col [C R S][images P Q] with your m2.05
// SGEMM: row-major, contiguous, C = alpha A B + beta C, in course::m205 (see above).
void gemm_m205(const ConvShape& s, const float* w, const float* x_col, int images, float* y_tmp,
               cudaStream_t stream) {
  const int K = s.K, CRS = static_cast<int>(s.gemm_k()), PQ = s.P() * s.Q();
  m205::sgemm_2d_register_tile(/*M=*/K, /*N=*/images * PQ, /*K=*/CRS, 1.0f, /*A=*/w,
                               /*B=*/x_col, 0.0f, /*C=*/y_tmp, stream);
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
  const std::int64_t pq = i % pq_count, rest = i / pq_count;
  const int k = static_cast<int>(rest % s.K);
  const std::int64_t image = rest / s.K;
  float value = y_tmp[(static_cast<std::int64_t>(k) * images + image) * pq_count + pq];
  if (bias != nullptr) value += __ldg(bias + k);
  y_pass[i] = value;
}

}  // namespace im2col_gemm_detail
}  // namespace course::COURSE_IMPL
