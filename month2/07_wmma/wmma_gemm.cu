// Exercise m2.07: tensor cores through the WMMA API.
//
// What changes from m2.05: the multiply-adds leave the CUDA cores. A tensor core multiplies
// small matrices: one warp-wide instruction, mma_sync, computes a 16 x 16 x 16 product
// (4096 multiply-adds) from two "fragments" of float16 and accumulates it in float32. The
// WMMA API (nvcuda::wmma, <mma.h>) hands those fragments to the warp as opaque objects:
// load_matrix_sync fills one from memory, mma_sync multiplies, store_matrix_sync writes the
// result. Which lane holds which element is the hardware's business.
//  * wmma_gemm_simple (part 1): one warp per 16 x 16 tile of C, straight from global
//    memory. Short, and faster than m2.01 to m2.04; but every fragment is read from global
//    memory (or L2) by every warp that needs it and used once, so it stays behind m2.05's
//    register-tiled SGEMM: a faster unit does not help a kernel that cannot feed it.
//  * wmma_gemm (part 2): m2.03's idea again, one level up. A block stages 128 x 32 of A and
//    32 x 128 of B in shared memory (copied asynchronously, one tile ahead), and each of its
//    8 warps computes 64 x 32 of C from there: 4 x 2 accumulator fragments, so every A
//    fragment it loads is used twice and every B fragment four times (m2.05's register
//    tiling, with fragments for registers). The shared tiles are padded (m2.04): without
//    it, the rows that load_matrix_sync reads would all start in the same banks.
// README.md explains each piece, and what the benchmark shows.
//
// The fragment types, part 2's tile shape and copies into shared memory, and the launchers
// are given, in month2/07_wmma/wmma_gemm_given.cuh; the pipeline is in the kernel below.
// Fill in TODO(m2.07a) to (d), then run `./course grade m2_07`.
#include "wmma_gemm.h"
#include "wmma_gemm_given.cuh"

namespace course::COURSE_IMPL {  // see course/impl.h
namespace {

// From wmma_gemm_given.cuh: `wmma` is nvcuda::wmma; FragmentA and FragmentB hold 16 x 16
// halves of A and B, an Accumulator 16 x 16 floats; kFragment = 16.

// alpha * acc + beta * C for one fragment, written where C's fragment is (a 16 x 16 tile
// with leading dimension ldc). An accumulator's elements sit in the same lanes whatever
// memory they came from, so loading C into a second accumulator and combining the two
// element by element (acc.x[i]) is legal, although nobody says which (row, column) x[i] is.
__device__ __forceinline__ void store_scaled(Accumulator& acc, float alpha, float beta, float* c,
                                             int ldc) {
  // TODO(m2.07b): scale and store.
  //  * beta != 0: load C's tile into a second Accumulator with
  //    wmma::load_matrix_sync(old, c, ldc, wmma::mem_row_major), then for every
  //    i < acc.num_elements: acc.x[i] = alpha * acc.x[i] + beta * old.x[i].
  //  * beta == 0: do not read C (it may hold anything, NaN included): acc.x[i] *= alpha.
  //  * Then wmma::store_matrix_sync(c, acc, ldc, wmma::mem_row_major).
  (void)acc, (void)alpha, (void)beta, (void)c, (void)ldc;
}

// --- Part 1 -------------------------------------------------------------------------------
// Warp w of the grid computes the tile of C at (tile_row, tile_col) = (w / tiles_n, w % tiles_n).
__global__ void wmma_gemm_simple_kernel(int M, int N, int K, float alpha,
                                        const __half* __restrict__ A, const __half* __restrict__ B,
                                        float beta, float* __restrict__ C) {
  const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32);
  const int tiles_n = N / kFragment;
  if (warp >= (M / kFragment) * tiles_n) return;  // the whole warp leaves together
  const int row = (warp / tiles_n) * kFragment;
  const int col = (warp % tiles_n) * kFragment;

  Accumulator acc;
  wmma::fill_fragment(acc, 0.0f);
  FragmentA a;
  FragmentB b;
  for (int k = 0; k < K; k += kFragment) {
    // TODO(m2.07a): load the fragments and multiply.
    //  * a = A[row .. row+15][k .. k+15]: wmma::load_matrix_sync(a, pointer to A[row][k], K)
    //    (the last argument is the leading dimension: the distance between rows, K for A);
    //  * b = B[k .. k+15][col .. col+15]: the same from &B[k][col], leading dimension N;
    //  * wmma::mma_sync(acc, a, b, acc): acc += a * b on the tensor cores.
    (void)a, (void)b;
  }
  store_scaled(acc, alpha, beta, C + static_cast<std::ptrdiff_t>(row) * N + col, N);
}

// --- Part 2 -------------------------------------------------------------------------------
// The shape (wmma_gemm_given.cuh): a block of kThreads = 8 warps computes kBlockM x kBlockN =
// 128 x 128 of C, kBlockK = 32 of K per stage; a warp computes kWarpM x kWarpN = 64 x 32 of
// it, kFragmentsM x kFragmentsN = 4 x 2 accumulator fragments. A stage (kStageHalves) holds
// the A tile, rows of kLdA = 40 halves, then the B tile, rows of kLdB = 136 (both padded by
// 8); there are kStages = 2. copy_tiles<kVectorized> fills one stage.
template <bool kVectorized>
__global__ void __launch_bounds__(kThreads)
    wmma_gemm_kernel(int M, int N, int K, float alpha, const __half* __restrict__ A,
                     const __half* __restrict__ B, float beta, float* __restrict__ C) {
  __shared__ __align__(128) __half shared[kStages * kStageHalves];
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int block_m = static_cast<int>(blockIdx.y) * kBlockM;
  const int block_n = static_cast<int>(blockIdx.x) * kBlockN;
  const int warp_m = (warp / kWarpsN) * kWarpM;  // this warp's tile inside the block tile
  const int warp_n = (warp % kWarpsN) * kWarpN;

  Accumulator acc[kFragmentsM][kFragmentsN];
#pragma unroll
  for (int i = 0; i < kFragmentsM; ++i) {
#pragma unroll
    for (int j = 0; j < kFragmentsN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  }

  // Double buffering: tile t is computed from one stage while tile t + 1 is copied into
  // the other.
  const int num_tiles = (K + kBlockK - 1) / kBlockK;
  if (num_tiles > 0) copy_tiles<kVectorized>(shared, A, B, M, N, K, block_m, block_n, 0);
  commit_copies();
  for (int t = 0; t < num_tiles; ++t) {
    __half* stage = shared + (t % kStages) * kStageHalves;
    if (t + 1 < num_tiles) {
      copy_tiles<kVectorized>(shared + ((t + 1) % kStages) * kStageHalves, A, B, M, N, K, block_m,
                              block_n, (t + 1) * kBlockK);
    }
    commit_copies();
    wait_for_copies<1>();  // tile t has landed (this thread's copies) ...
    __syncthreads();       // ... and everyone's

    const __half* As = stage + warp_m * kLdA;
    const __half* Bs = stage + kBlockM * kLdA + warp_n;
    for (int k = 0; k < kBlockK; k += kFragment) {
      // TODO(m2.07c): this warp's products for the 16 values of k starting at k.
      //  * a[i] (i < kFragmentsM): rows i * 16 .. i * 16 + 15 of the warp's part of the A
      //    tile, columns k .. k + 15: load_matrix_sync(a[i], As + i * kFragment * kLdA + k, kLdA);
      //  * b[j] (j < kFragmentsN): rows k .. k + 15 of the B tile, the warp's columns
      //    j * 16 .. j * 16 + 15: load_matrix_sync(b[j], Bs + k * kLdB + j * kFragment, kLdB);
      //  * mma_sync(acc[i][j], a[i], b[j], acc[i][j]) for every i, j: 8 products from 6
      //    loaded fragments.
      (void)As, (void)Bs, (void)k;
    }
    __syncthreads();  // everyone is done with this stage before it is refilled
  }

  // Epilogue. Which (row, column) an accumulator element belongs to is not specified, so to
  // check the edges of C each fragment goes through a 16 x 16 scratch tile in shared memory
  // (store_matrix_sync), and the lanes write it out element by element: 8 each.
  float* scratch = reinterpret_cast<float*>(shared) + warp * kFragment * kFragment;
#pragma unroll
  for (int i = 0; i < kFragmentsM; ++i) {
#pragma unroll
    for (int j = 0; j < kFragmentsN; ++j) {
      // TODO(m2.07d): write fragment acc[i][j] to C, inside the matrix only.
      //  1. wmma::store_matrix_sync(scratch, acc[i][j], kFragment, wmma::mem_row_major),
      //     then __syncwarp() so every lane sees the whole tile.
      //  2. Element e of scratch (e = lane, lane + 32, ..., < 256) is row
      //     block_m + warp_m + i * 16 + e / 16, column block_n + warp_n + j * 16 + e % 16 of
      //     C. Where row < M and column < N: C = alpha * scratch[e] (+ beta * C only when
      //     beta != 0: do not read C otherwise).
      //  3. __syncwarp() again before the next fragment overwrites scratch.
      (void)scratch, (void)lane, (void)alpha, (void)beta, (void)C, (void)block_m, (void)block_n;
    }
  }
}

}  // namespace
}  // namespace course::COURSE_IMPL
