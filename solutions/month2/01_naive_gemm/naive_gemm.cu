// Exercise m2.01: naive GEMM, one thread per element of C. (Reference solution.)
//
// C = alpha * A * B + beta * C for row-major float32 matrices: torch.addmm(C, A, B,
// beta=beta, alpha=alpha). What changed from vector add (m1.01): a thread still computes
// one output element, but that element is now a dot product of a row of A with a column of
// B, K multiply-adds long, and the threads form a 2D grid over C.
//
// This first version is deliberately the "obvious" one: the x coordinate of the thread
// walks down the rows of C, as i comes before j in C[i][j]. It is correct, and slow: the 32
// threads of a warp own 32 different rows, so at every step k they read A from 32 rows K
// floats apart and finally write C at 32 places N floats apart. Nothing they touch is
// contiguous, so each warp-wide access costs 32 memory transactions instead of one.
// README.md measures it; m2.02 fixes it by swapping two coordinates.
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
  // x walks down the rows of C, y across its columns. Consecutive threads of a warp (they
  // differ in threadIdx.x) therefore own consecutive *rows*: the uncoalesced mapping.
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const int col = blockIdx.y * blockDim.y + threadIdx.y;
  // The grid is rounded up to whole blocks, so the last blocks stick out past the edges of
  // C; their extra threads must not read or write. (No __syncthreads() follows, so they
  // may simply leave.)
  if (row >= M || col >= N) return;

  // Element (i, j) of a row-major matrix with `cols` columns is at i * cols + j. The
  // launcher guarantees every matrix has fewer than 2^31 elements, so int does not overflow.
  float sum = 0.0f;
  for (int k = 0; k < K; ++k) sum += A[row * K + k] * B[k * N + col];

  // BLAS semantics: beta == 0 means C is output only. Reading it anyway would turn
  // uninitialised memory (possibly NaN: NaN * 0 is NaN) into the result.
  const int index = row * N + col;
  C[index] = beta == 0.0f ? alpha * sum : alpha * sum + beta * C[index];
}

void naive_gemm(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                float* C, cudaStream_t stream) {
  // Bad sizes throw; an empty C (M == 0 or N == 0) leaves nothing to launch.
  if (!gemm_launch_needed("naive_gemm", M, N, K, GridY::columns, kBlockDim)) return;

  // One thread per element of C, rounded up to whole blocks: x over the M rows, y over the
  // N columns.
  const dim3 block(kBlockDim, kBlockDim);
  const dim3 grid(ceil_div(M, kBlockDim), ceil_div(N, kBlockDim));
  naive_gemm_kernel<<<grid, block, 0, stream>>>(M, N, K, alpha, A, B, beta, C);

  CUDA_CHECK_LAUNCH();  // a bad launch configuration is reported here
}

}  // namespace course::COURSE_IMPL
