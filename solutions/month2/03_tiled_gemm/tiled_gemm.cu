// Exercise m2.03: shared-memory tiled GEMM. (Reference solution.)
//
// What changed from m2.02 (coalesced): every thread still computes one element of C, but
// a block no longer reads its operands from global memory one multiply-add at a time. The
// block walks along K in steps of TILE_DIM: its threads copy a TILE_DIM x TILE_DIM tile of
// A and one of B into shared memory (one element each, coalesced), wait for each other,
// and then every thread takes TILE_DIM multiply-adds from the tiles.
//
// Why it should be faster: in m2.02 each multiply-add issued two global loads (A[row][k]
// and B[k][col]); the L1 cache caught some of the reuse, by luck. Here an element loaded
// into a tile is used by TILE_DIM threads, so the global loads per multiply-add drop from
// 2 to 2 / TILE_DIM (1/16 with 32 x 32 tiles), and the rest come from shared memory,
// on-chip and about as fast as L1, with reuse the kernel controls instead of hoping for.
// The limit now is shared-memory traffic: two shared loads per multiply-add. Register
// tiling (m2.05) attacks that next.
//
// Edges: the tiles are filled with zeros where they stick out past A or B, so the kernel
// works for any M, N and K, not just multiples of TILE_DIM (README.md shows what goes
// wrong otherwise).
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

  // Two tiles, 2 * 32 * 32 * 4 bytes = 8 KiB, shared by the block's threads.
  __shared__ float tile_a[TILE_DIM][TILE_DIM];  // A[block's rows][k0 .. k0 + TILE_DIM)
  __shared__ float tile_b[TILE_DIM][TILE_DIM];  // B[k0 .. k0 + TILE_DIM)[block's columns]

  const int tx = threadIdx.x;  // column inside the tile
  const int ty = threadIdx.y;  // row inside the tile
  // As in m2.02, x runs along the columns, so a warp (32 consecutive tx) covers a
  // contiguous row segment: coalesced loads of A and B and a coalesced store of C.
  const int row = blockIdx.y * TILE_DIM + ty;
  const int col = blockIdx.x * TILE_DIM + tx;

  // No early return for threads outside C: they must still load their share of the tiles
  // (their elements may lie inside A or B) and reach every __syncthreads().
  float sum = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE_DIM) {
    // Each thread copies one element of each tile. Past the edge of A (row >= M or
    // k >= K) or of B (k >= K or col >= N) it stores 0, which adds exact zeros to the sum:
    // without the checks the last tile reads past the end of a row (into the next one) or
    // of the whole matrix.
    const int a_col = k0 + tx;
    const int b_row = k0 + ty;
    tile_a[ty][tx] = (row < M && a_col < K) ? A[row * K + a_col] : 0.0f;
    tile_b[ty][tx] = (b_row < K && col < N) ? B[b_row * N + col] : 0.0f;

    // Barrier 1: the tiles are complete. Thread (ty, tx) reads tile_a[ty][*] and
    // tile_b[*][tx], elements that other threads wrote; without the barrier it could read
    // them before they are written.
    __syncthreads();

    // tile_a[ty][k] is one address for the whole warp (a broadcast); tile_b[k][tx] are 32
    // consecutive words in 32 different banks. Neither conflicts.
#pragma unroll
    for (int k = 0; k < TILE_DIM; ++k) sum += tile_a[ty][k] * tile_b[k][tx];

    // Barrier 2: everyone is done with these tiles. Without it a fast thread would start
    // the next iteration and overwrite tile_a / tile_b while slower threads still read them.
    __syncthreads();
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

  // One block per TILE_DIM x TILE_DIM tile of C, rounded up: x over the columns, y over
  // the rows. K == 0 is fine: the loop over tiles runs zero times and C = beta * C.
  const dim3 block(kTileDim, kTileDim);
  const dim3 grid(ceil_div(N, kTileDim), ceil_div(M, kTileDim));
  tiled_gemm_kernel<kTileDim><<<grid, block, 0, stream>>>(M, N, K, alpha, A, B, beta, C);

  CUDA_CHECK_LAUNCH();  // a bad launch configuration is reported here
}

}  // namespace course::COURSE_IMPL
