// Exercise m2.01: naive GEMM, one thread per element of C.
//
// C = alpha * A * B + beta * C for row-major float32 matrices: torch.addmm(C, A, B,
// beta=beta, alpha=alpha). What changed from vector add (m1.01): a thread still computes
// one output element, but that element is now a dot product of a row of A with a column of
// B, K multiply-adds long, and the threads form a 2D grid over C.
//
// This first version is deliberately the "obvious" one: the x coordinate of the thread
// walks down the rows of C, as i comes before j in C[i][j]. It is correct, and slow; the
// benchmark shows how slow and m2.02 shows why. Read README.md first.
//
// Fill in the two TODOs, then run `./course grade m2_01` to check your work.
#include "naive_gemm.h"

#include <string>

#include "course/cuda_check.h"
#include "course/gemm.h"
#include "course/launch.h"

namespace course::COURSE_IMPL {  // see course/impl.h

// 32 x 32 = 1024 threads per block, the most a block may hold: one warp per block row.
constexpr int kBlockDim = 32;

__global__ void __launch_bounds__((kBlockDim * kBlockDim))
    naive_gemm_kernel(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                      float* C) {
  // TODO(m2.01a): compute the element of C this thread owns, with x along the rows:
  //   row = blockIdx.x * blockDim.x + threadIdx.x,  col = blockIdx.y * blockDim.y + threadIdx.y.
  // If it is inside C (row < M and col < N), sum A[row][k] * B[k][col] over k = 0 .. K-1
  // (element (i, j) of a row-major matrix with `cols` columns is at i * cols + j), then
  // write C[row][col] = alpha * sum + beta * C[row][col] -- but when beta == 0 write
  // alpha * sum without reading C at all (C may hold garbage, and NaN * 0 is NaN).
  // Example: M = N = K = 2, A = [[1, 2], [3, 4]], B = [[5, 6], [7, 8]], alpha = 1, beta = 0:
  // the thread with row 1, col 0 writes C[1 * 2 + 0] = 3 * 5 + 4 * 7 = 43.
}

void naive_gemm(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                float* C, cudaStream_t stream) {
  // Bad sizes throw; an empty C (M == 0 or N == 0) leaves nothing to launch.
  if (!gemm_launch_needed("naive_gemm", M, N, K, GridY::columns, kBlockDim)) return;

  // TODO(m2.01b): launch naive_gemm_kernel on `stream` with kBlockDim x kBlockDim threads
  // per block (a dim3) and enough blocks to cover all of C: x over the M rows, y over the
  // N columns (course::ceil_div helps):
  //   naive_gemm_kernel<<<grid, block, 0, stream>>>(M, N, K, alpha, A, B, beta, C);

  CUDA_CHECK_LAUNCH();  // a bad launch configuration is reported here
}

}  // namespace course::COURSE_IMPL
