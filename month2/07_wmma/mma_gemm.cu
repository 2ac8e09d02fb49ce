// Exercise m2.07, part 3: the tensor cores without WMMA, through ldmatrix and mma.sync.
// (Skeleton: the TODOs are yours.)
//
// What changes from part 2 (wmma_gemm), and why it is faster:
//  * Larger tiles. A warp computes 64 x 64 of C instead of 64 x 32 (4 x 8 accumulator tiles
//    of 16 x 8), so each fragment it loads from shared memory feeds twice as many products.
//    A block of 4 warps computes 128 x 128, and two blocks share a multiprocessor (244
//    registers a thread, 64 KiB of shared memory a block): while one waits at a barrier,
//    the other's products keep the tensor cores busy.
//  * A longer pipeline. Four stages of 128 x 32 (A) and 32 x 128 (B) tiles, 64 KiB of
//    shared memory (past the 48 KiB default: the launcher raises the limit), instead of two:
//    three tiles are on their way while the fourth is multiplied.
//  * Copies with a compile-time trip count (course/block_loop.h): every warp issues its share
//    of the next tile's cp.async copies between two slices of products, so their
//    instructions are time the tensor cores wait; unrolled, they lose their branches and
//    most of their address arithmetic (README.md, part 3, counts them).
//  * Swizzled shared memory instead of padding: the 16-byte chunks of each row are permuted
//    (course/mma_sync.h, swizzled_chunk) so that ldmatrix reads 8 rows from 8 different
//    bank groups. No bytes are wasted, and the tiles stay dense for cp.async.
//  * ldmatrix + mma.sync instead of load_matrix_sync + mma_sync. The register layout of
//    mma.sync's fragments is documented (course/mma_sync.h), which WMMA's is not. So C is
//    written straight from the accumulators, two floats per store, with the edges checked
//    element by element, and no scratch tile in shared memory.
// README.md (part 3) shows what each piece bought on the reference GPU.
#include "wmma_gemm.h"

// ---- given: the same in the skeleton and the solution (./course check compares) ----
#include <cuda_fp16.h>

#include <cstdint>
#include <string>

#include "course/async_copy.h"
#include "course/block_order.h"
#include "course/cuda_check.h"
#include "course/gemm.h"
#include "course/launch.h"
#include "course/mma_sync.h"
#include "course/requirements.h"
#include "mma_gemm_pipeline.h"

namespace course::COURSE_IMPL {  // see course/impl.h
namespace {

using namespace course::mma_gemm_pipeline;  // MmaTile, SharedLayout, tile_offset, copy_tiles

// A warp's fragments for the 16-deep slice k of a stage: kTilesM A fragments (16 x 16) and
// kTilesN B fragments (16 x 8), from shared memory through ldmatrix. ldmatrix x4 reads
// four 8 x 8 tiles; lane l gives the address of row l % 16 of a 16 x 16 piece, in its left
// (l < 16) or right 8 columns. For A that is the fragment a[0..3] (rows 0-7 / 8-15,
// columns 0-7 / 8-15); for B, read transposed, the fragments of two 16 x 8 tiles side by
// side.
template <class Tile>
struct Fragments {
  std::uint32_t a[Tile::kTilesM][4];
  std::uint32_t b[Tile::kTilesN][2];
};
// ---- end of given ----

template <class Tile>
__device__ __forceinline__ void load_fragments(const __half* stage, int k, int warp_m, int warp_n,
                                               int lane, Fragments<Tile>& f) {
  const __half* As = stage;
  const __half* Bs = stage + Tile::kBlockM * Tile::kLdA;
  // TODO(m2.07e): load the warp's fragments for slice k (columns k .. k + 15 of As, rows
  // k .. k + 15 of Bs) with load_matrix_x4 and load_matrix_x4_transposed
  // (course/mma_sync.h). Each lane gives one row address of a 16 x 16 piece: row lane % 16,
  // starting at column (lane / 16) * 8 of the piece. A's piece i starts at row
  // warp_m + 16 i; B's pieces at column warp_n + 16 p hold two 16 x 8 fragments,
  // f.b[2 p] (registers 0, 1) and f.b[2 p + 1] (registers 2, 3). Find an element's place
  // in the tile with tile_offset<Tile::kLayout, Tile::kBlockK, Tile::kLdA>(row, column)
  // (A) or <Tile::kLayout, Tile::kBlockN, Tile::kLdB> (B), and pass the address through
  // shared_address(). Example: lane 17 gives row warp_m + 1 of A, column k + 8.
  (void)As;
  (void)Bs;
  (void)k;
  (void)warp_m;
  (void)warp_n;
  (void)lane;
  for (auto& a : f.a) a[0] = a[1] = a[2] = a[3] = 0u;
  for (auto& b : f.b) b[0] = b[1] = 0u;
}

// kTilesM x kTilesN tensor-core products: every A fragment is used kTilesN times, every B
// fragment kTilesM times.
template <class Tile>
__device__ __forceinline__ void multiply_fragments(const Fragments<Tile>& f,
                                                   float (&acc)[Tile::kTilesM][Tile::kTilesN][4]) {
#pragma unroll
  for (int i = 0; i < Tile::kTilesM; ++i) {
#pragma unroll
    for (int j = 0; j < Tile::kTilesN; ++j) mma_16x8x16(acc[i][j], f.a[i], f.b[j]);
  }
}

// Epilogue, straight from the accumulators: C = alpha * acc + beta * C for the warp's
// kWarpM x kWarpN tile, whose first element is (row0, col0) of C. Lane (group, thread)
// holds, for each mma tile, C[group][2 thread .. 2 thread + 1] and the same 8 rows down
// (course/mma_sync.h): two neighbours, written as one float2 where they are inside C and
// 8-byte aligned, one at a time at the right and bottom edges.
template <class Tile>
__device__ __forceinline__ void store_accumulators(
    const float (&acc)[Tile::kTilesM][Tile::kTilesN][4], int M, int N, float alpha, float beta,
    float* __restrict__ C, int row0, int col0, int lane) {
  // TODO(m2.07g): write C = alpha * acc + beta * C for the warp's tile. acc[i][j] is the
  // 16 x 8 mma tile at rows row0 + 16 i .., columns col0 + 8 j ..; in it, this lane holds
  // elements (lane / 4, 2 (lane % 4)) and (lane / 4, 2 (lane % 4) + 1) in acc[i][j][0..1],
  // and the same two 8 rows down in acc[i][j][2..3]. Write each pair with
  // store_accumulator_pair(C, M, N, row, col, alpha, beta, first, second, aligned)
  // (course/mma_sync.h), which checks the edges, skips reading C when beta == 0 and
  // stores a float2 where it can; aligned = pairs_aligned(C, N).
  (void)acc;
  (void)M;
  (void)N;
  (void)alpha;
  (void)beta;
  (void)C;
  (void)row0;
  (void)col0;
  (void)lane;
}

template <class Tile, bool kVectorized>
__global__ void __launch_bounds__(Tile::kThreads, 1)
    mma_gemm_kernel(int M, int N, int K, float alpha, const __half* __restrict__ A,
                    const __half* __restrict__ B, float beta, float* __restrict__ C) {
  extern __shared__ uint4 dynamic_shared[];  // uint4: 16-byte aligned, for cp.async
  __half* shared = reinterpret_cast<__half*>(dynamic_shared);
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  // This block's tile of C (block_m, block_n) and this warp's tile inside it (warp_m, warp_n).
  const WarpTileOrigin origin = warp_tile_origin<Tile>(M, N, warp);
  const int block_m = origin.block_m, block_n = origin.block_n;
  const int warp_m = origin.warp_m, warp_n = origin.warp_n;

  float acc[Tile::kTilesM][Tile::kTilesN][4];
  zero_accumulators(acc);

  // The pipeline. Tiles 0 .. kStages - 2 are requested before the loop. At step t, tile
  // t + kStages - 1 is requested into the stage that step t - 1 read, and tile t is
  // multiplied, one 16-deep slice at a time. One commit per step, even an empty one, keeps
  // the group count of wait_for_copies right.
  const int num_tiles = (K + Tile::kBlockK - 1) / Tile::kBlockK;  // tiles of K
  auto stage = [&](int index) { return shared + index * Tile::kStageHalves; };
#pragma unroll
  for (int s = 0; s < Tile::kStages - 1; ++s) {
    if (s < num_tiles) {
      copy_tiles<Tile, kVectorized>(stage(s), A, B, M, N, K, block_m, block_n, s * Tile::kBlockK);
    }
    commit_copies();
  }
  for (int t = 0; t < num_tiles; ++t) {
    // TODO(m2.07f): before tile t is multiplied: wait until this thread's copies of tile t
    // have landed (wait_for_copies<Tile::kStages - 2>()), then a barrier, so everyone's
    // have, and everyone is done with the stage step t - 1 read; then request tile
    // t + kStages - 1 (if it exists) into that stage, stage((t + kStages - 1) % kStages),
    // with copy_tiles<Tile, kVectorized>, and commit_copies() (always, even with nothing
    // requested: the wait counts groups).
#pragma unroll
    for (int k = 0; k < Tile::kBlockK; k += 16) {
      Fragments<Tile> f;
      load_fragments<Tile>(stage(t % Tile::kStages), k, warp_m, warp_n, lane, f);
      multiply_fragments<Tile>(f, acc);
    }
  }

  store_accumulators<Tile>(acc, M, N, alpha, beta, C, block_m + warp_m, block_n + warp_n, lane);
}

// ---- given: the same in the skeleton and the solution (./course check compares) ----
template <class Tile>
void launch_mma_gemm(const char* function, int M, int N, int K, float alpha, const __half* A,
                     const __half* B, float beta, float* C, cudaStream_t stream) {
  require_gemm_arguments(function, M, N, K);
  if (M == 0 || N == 0) return;  // C is empty, and a launch of zero blocks is an error
  require(C != nullptr && (K == 0 || (A != nullptr && B != nullptr)), function,
          "A, B and C must be device pointers, got null");
  const long long blocks = static_cast<long long>(ceil_div(M, Tile::kBlockM)) *
                           ceil_div(N, Tile::kBlockN);  // <= M * N <= INT_MAX
  // 16-byte copies of 8 halves need every row of A and B to start on a 16-byte boundary.
  const bool vectorized = K % 8 == 0 && N % 8 == 0 && is_aligned(A, 16) && is_aligned(B, 16);
  // More than 48 KiB of shared memory per block only after opting in, per kernel; a GPU
  // that allows less (a T4: 64 KiB) gets a clear error here rather than a failed launch.
  const auto kernel = vectorized ? mma_gemm_kernel<Tile, true> : mma_gemm_kernel<Tile, false>;
  allow_dynamic_shared_memory(kernel, Tile::kSharedBytes, function);
  kernel<<<static_cast<unsigned>(blocks), Tile::kThreads, Tile::kSharedBytes, stream>>>(
      M, N, K, alpha, A, B, beta, C);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void mma_gemm(int M, int N, int K, float alpha, const __half* A, const __half* B, float beta,
              float* C, cudaStream_t stream) {
  launch_mma_gemm<TunedTile>("mma_gemm", M, N, K, alpha, A, B, beta, C, stream);
}

}  // namespace course::COURSE_IMPL
// ---- end of given ----
