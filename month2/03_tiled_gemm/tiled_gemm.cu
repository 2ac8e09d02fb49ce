// Exercise m2.03: shared-memory tiled GEMM.
//
// What changes from m2.02 (coalesced): every thread still computes one element of C, but
// a block no longer reads its operands from global memory one multiply-add at a time. The
// block walks along K in steps of TILE_DIM: its threads copy a TILE_DIM x TILE_DIM tile of
// A and one of B into shared memory (one element each, coalesced), wait for each other,
// and then every thread takes TILE_DIM multiply-adds from the tiles.
//
// Why it should be faster: an element loaded into a tile is used by TILE_DIM threads, so
// the global loads per multiply-add drop from 2 to 2 / TILE_DIM, and the rest come from
// on-chip shared memory. README.md explains the two barriers and the edges.
//
// Fill in the three TODOs, then run `./course grade m2_03` to check your work.
#include "tiled_gemm.h"

#include <string>

#include "course/cuda_check.h"
#include "course/gemm.h"
#include "course/launch.h"

namespace course::COURSE_IMPL {  // see course/impl.h

// The tile edge, and the block edge: TILE_DIM x TILE_DIM threads, one per element of a
// C tile. 32 x 32 = 1024 threads, the largest square block.
constexpr int kTileDim = 32;

template <int TILE_DIM>
__global__ void __launch_bounds__((TILE_DIM * TILE_DIM))
    tiled_gemm_kernel(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                      float* C) {
  static_assert(TILE_DIM >= 1 && TILE_DIM * TILE_DIM <= 1024,
                "a block of TILE_DIM x TILE_DIM threads must hold at most 1024 threads: "
                "TILE_DIM can be at most 32");

  const int tx = threadIdx.x;  // column inside the tile
  const int ty = threadIdx.y;  // row inside the tile
  // As in m2.02, x runs along the columns of C.
  const int row = blockIdx.y * TILE_DIM + ty;
  const int col = blockIdx.x * TILE_DIM + tx;

  // TODO(m2.03a): declare the two tiles in shared memory,
  //   __shared__ float tile_a[TILE_DIM][TILE_DIM];  // A[block's rows][k0 .. k0 + TILE_DIM)
  //   __shared__ float tile_b[TILE_DIM][TILE_DIM];  // B[k0 .. k0 + TILE_DIM)[block's columns]
  // and in the loop below let each thread copy one element of each:
  //   tile_a[ty][tx] = A[row][k0 + tx]   and   tile_b[ty][tx] = B[k0 + ty][col],
  // storing 0.0f instead wherever that element lies outside A (row >= M or k0 + tx >= K)
  // or outside B (k0 + ty >= K or col >= N). Zeros add nothing to the sum, so any M, N, K
  // works. Example: K = 40, TILE_DIM = 32: the second tile covers k = 32 .. 63, and only
  // k = 32 .. 39 exist.

  // Threads outside C do not return early: they still load their share of the tiles and
  // must reach every __syncthreads().
  float sum = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE_DIM) {
    // TODO(m2.03a): load this thread's element of tile_a and of tile_b (zero outside).

    // TODO(m2.03b): wait until the whole block has written the tiles (__syncthreads()),
    // add tile_a[ty][k] * tile_b[k][tx] for k = 0 .. TILE_DIM-1 to sum, then wait again
    // before the next iteration overwrites the tiles (README.md explains both barriers).
  }

  if (row < M && col < N) {
    // beta == 0: C is output only and is not read (it may hold NaN, and NaN * 0 is NaN).
    const int index = row * N + col;
    C[index] = beta == 0.0f ? alpha * sum : alpha * sum + beta * C[index];
  }
}

void tiled_gemm(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                float* C, cudaStream_t stream) {
  // Bad sizes throw; an empty C (M == 0 or N == 0) leaves nothing to launch.
  if (!gemm_launch_needed("tiled_gemm", M, N, K, GridY::rows, kTileDim)) return;

  // TODO(m2.03c): launch tiled_gemm_kernel<kTileDim> on `stream` with one block of
  // kTileDim x kTileDim threads per tile of C: grid x over the N columns, y over the M rows
  // (course::ceil_div rounds up):
  //   tiled_gemm_kernel<kTileDim><<<grid, block, 0, stream>>>(M, N, K, alpha, A, B, beta, C);

  CUDA_CHECK_LAUNCH();  // a bad launch configuration is reported here
}

}  // namespace course::COURSE_IMPL
