// Exercise m2.07: tensor cores through the WMMA API. (Reference solution.)
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
  if (beta != 0.0f) {
    Accumulator old;
    wmma::load_matrix_sync(old, c, ldc, wmma::mem_row_major);
    for (int i = 0; i < acc.num_elements; ++i) acc.x[i] = alpha * acc.x[i] + beta * old.x[i];
  } else {
    for (int i = 0; i < acc.num_elements; ++i) acc.x[i] = alpha * acc.x[i];
  }
  wmma::store_matrix_sync(c, acc, ldc, wmma::mem_row_major);
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
    // A[row .. row+15][k .. k+15] (leading dimension K) and B[k .. k+15][col .. col+15] (N).
    wmma::load_matrix_sync(a, A + static_cast<std::ptrdiff_t>(row) * K + k, K);
    wmma::load_matrix_sync(b, B + static_cast<std::ptrdiff_t>(k) * N + col, N);
    wmma::mma_sync(acc, a, b, acc);  // acc += a * b, 16 x 16 x 16 on the tensor cores
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
      FragmentA a[kFragmentsM];
      FragmentB b[kFragmentsN];
#pragma unroll
      for (int i = 0; i < kFragmentsM; ++i) {
        wmma::load_matrix_sync(a[i], As + i * kFragment * kLdA + k, kLdA);
      }
#pragma unroll
      for (int j = 0; j < kFragmentsN; ++j) {
        wmma::load_matrix_sync(b[j], Bs + k * kLdB + j * kFragment, kLdB);
      }
      // 8 tensor-core products from 6 loaded fragments.
#pragma unroll
      for (int i = 0; i < kFragmentsM; ++i) {
#pragma unroll
        for (int j = 0; j < kFragmentsN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
      }
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
      wmma::store_matrix_sync(scratch, acc[i][j], kFragment, wmma::mem_row_major);
      __syncwarp();  // the fragment is in scratch, for every lane
      const int row0 = block_m + warp_m + i * kFragment;
      const int col0 = block_n + warp_n + j * kFragment;
      for (int e = lane; e < kFragment * kFragment; e += 32) {
        const int row = row0 + e / kFragment, col = col0 + e % kFragment;
        if (row < M && col < N) {
          float* c = C + static_cast<std::ptrdiff_t>(row) * N + col;
          *c = beta == 0.0f ? alpha * scratch[e] : alpha * scratch[e] + beta * *c;
        }
      }
      __syncwarp();  // everyone has read scratch before the next fragment overwrites it
    }
  }
}

}  // namespace
}  // namespace course::COURSE_IMPL
