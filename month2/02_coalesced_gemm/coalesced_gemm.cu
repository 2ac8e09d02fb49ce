// Exercise m2.02: coalesced GEMM, the same kernel with the threads turned.
//
// What changes from m2.01 (naive): only which coordinate of the thread picks the row and
// which the column. Here threadIdx.x walks along a row of C (the column index) and
// threadIdx.y down its columns (the row index).
//
// Why it should be faster: the 32 threads of a warp are the 32 consecutive threadIdx.x of
// one threadIdx.y. With x along the columns they share one row of C and own 32
// neighbouring columns, so each of their loads of B and their store of C is one contiguous
// 128-byte access instead of 32 scattered ones. README.md explains and measures it.
//
// Fill in the two TODOs, then run `./course grade m2_02` to check your work.
#include "coalesced_gemm.h"

#include <string>

#include "course/cuda_check.h"
#include "course/gemm.h"
#include "course/launch.h"

namespace course::COURSE_IMPL {  // see course/impl.h

// 32 x 32 = 1024 threads per block. blockDim.x = 32 makes each warp exactly one block row:
// 32 threads with the same threadIdx.y and threadIdx.x = 0 .. 31.
constexpr int kBlockDim = 32;

__global__ void __launch_bounds__((kBlockDim * kBlockDim))
    coalesced_gemm_kernel(int M, int N, int K, float alpha, const float* A, const float* B,
                          float beta, float* C) {
  // TODO(m2.02a): the kernel of m2.01 with the roles of x and y swapped: the column of C
  // comes from x (col = blockIdx.x * blockDim.x + threadIdx.x) and the row from y. Then,
  // as before: if row < M and col < N, sum A[row][k] * B[k][col] over k, and write
  // C[row][col] = alpha * sum + beta * C[row][col] (alpha * sum alone when beta == 0,
  // without reading C).
}

void coalesced_gemm(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                    float* C, cudaStream_t stream) {
  // Bad sizes throw; an empty C (M == 0 or N == 0) leaves nothing to launch.
  if (!gemm_launch_needed("coalesced_gemm", M, N, K, GridY::rows, kBlockDim)) return;

  // TODO(m2.02b): launch coalesced_gemm_kernel on `stream` with kBlockDim x kBlockDim
  // threads per block and a grid whose x covers the N columns and y the M rows (the
  // opposite of m2.01):
  //   coalesced_gemm_kernel<<<grid, block, 0, stream>>>(M, N, K, alpha, A, B, beta, C);

  CUDA_CHECK_LAUNCH();  // a bad launch configuration is reported here
}

}  // namespace course::COURSE_IMPL
