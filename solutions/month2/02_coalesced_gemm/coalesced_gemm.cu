// Exercise m2.02: coalesced GEMM, the same kernel with the threads turned. (Reference solution.)
//
// What changed from m2.01 (naive): only which coordinate of the thread picks the row and
// which the column. Now threadIdx.x walks along a row of C (the column index) and
// threadIdx.y down its columns (the row index).
//
// Why it is faster: the 32 threads of a warp are the 32 consecutive threadIdx.x of one
// threadIdx.y. Here they share one row of C and own 32 neighbouring columns, so at every
// step k
//   A[row][k]          is one address for the whole warp: a single load, broadcast;
//   B[k][col .. col+31] are 128 contiguous bytes: one fully used 128-byte line;
// and the final store of C[row][col .. col+31] is again 128 contiguous bytes. In m2.01 the
// warp's loads of A touched 32 rows, K * 4 bytes apart (32 separate 32-byte sectors for 128
// useful bytes), and so did its stores of C. Same arithmetic, same number of load
// instructions, a fraction of the memory transactions: README.md measures the difference.
#include "coalesced_gemm.h"

#include <string>

#include "course/cuda_check.h"
#include "course/gemm.h"
#include "course/launch.h"

namespace course::COURSE_IMPL {  // see course/impl.h

// 32 x 32 = 1024 threads per block. blockDim.x = 32 makes each warp exactly one block row:
// 32 threads with the same row of C and 32 consecutive columns.
constexpr int kBlockDim = 32;

__global__ void __launch_bounds__((kBlockDim * kBlockDim))
    coalesced_gemm_kernel(int M, int N, int K, float alpha, const float* A, const float* B,
                          float beta, float* C) {
  // x along the columns of C, y down its rows: neighbouring threads of a warp own
  // neighbouring columns, so their accesses to B and C are contiguous.
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;  // the blocks on the right and bottom edges stick out

  float sum = 0.0f;
  for (int k = 0; k < K; ++k) sum += A[row * K + k] * B[k * N + col];

  // beta == 0: C is output only and is not read (it may hold NaN, and NaN * 0 is NaN).
  const int index = row * N + col;
  C[index] = beta == 0.0f ? alpha * sum : alpha * sum + beta * C[index];
}

void coalesced_gemm(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                    float* C, cudaStream_t stream) {
  // Bad sizes throw; an empty C (M == 0 or N == 0) leaves nothing to launch.
  if (!gemm_launch_needed("coalesced_gemm", M, N, K, GridY::rows, kBlockDim)) return;

  // One thread per element of C, rounded up to whole blocks: x over the N columns, y over
  // the M rows (the opposite of m2.01).
  const dim3 block(kBlockDim, kBlockDim);
  const dim3 grid(ceil_div(N, kBlockDim), ceil_div(M, kBlockDim));
  coalesced_gemm_kernel<<<grid, block, 0, stream>>>(M, N, K, alpha, A, B, beta, C);

  CUDA_CHECK_LAUNCH();  // a bad launch configuration is reported here
}

}  // namespace course::COURSE_IMPL
