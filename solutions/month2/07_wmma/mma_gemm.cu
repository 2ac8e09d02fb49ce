// Exercise m2.07, part 3: the tensor cores without WMMA, through ldmatrix and mma.sync.
// (Reference solution.)
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
#include "mma_gemm_tuning.h"
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
  const int piece_row = lane % 16, piece_col = (lane / 16) * 8;
#pragma unroll
  for (int i = 0; i < Tile::kTilesM; ++i) {
    const int row = warp_m + i * 16 + piece_row;
    load_matrix_x4(f.a[i],
                   shared_address(As + tile_offset<Tile::kLayout, Tile::kBlockK, Tile::kLdA>(
                                           row, k + piece_col)));
  }
#pragma unroll
  for (int j = 0; j < Tile::kTilesN; j += 2) {
    std::uint32_t r[4];
    load_matrix_x4_transposed(
        r, shared_address(Bs + tile_offset<Tile::kLayout, Tile::kBlockN, Tile::kLdB>(
                                   k + piece_row, warp_n + j * 8 + piece_col)));
    f.b[j][0] = r[0];
    f.b[j][1] = r[1];
    f.b[j + 1][0] = r[2];
    f.b[j + 1][1] = r[3];
  }
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
// (course/mma_sync.h): two neighbours, which store_accumulator_pair writes as one float2
// where it can.
template <class Tile>
__device__ __forceinline__ void store_accumulators(
    const float (&acc)[Tile::kTilesM][Tile::kTilesN][4], int M, int N, float alpha, float beta,
    float* __restrict__ C, int row0, int col0, int lane) {
  const int group = lane / 4, pair = (lane % 4) * 2;
  const bool aligned = pairs_aligned(C, N);
#pragma unroll
  for (int i = 0; i < Tile::kTilesM; ++i) {
#pragma unroll
    for (int j = 0; j < Tile::kTilesN; ++j) {
      const int row = row0 + i * 16 + group, col = col0 + j * 8 + pair;
      store_accumulator_pair(C, M, N, row, col, alpha, beta, acc[i][j][0], acc[i][j][1], aligned);
      store_accumulator_pair(C, M, N, row + 8, col, alpha, beta, acc[i][j][2], acc[i][j][3],
                             aligned);
    }
  }
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
    wait_for_copies<Tile::kStages - 2>();  // this thread's copies of tile t have landed ...
    __syncthreads();  // ... and everyone's; and everyone is done with step t - 1's stage
    const int next = t + Tile::kStages - 1;
    if (next < num_tiles) {
      copy_tiles<Tile, kVectorized>(stage(next % Tile::kStages), A, B, M, N, K, block_m, block_n,
                                    next * Tile::kBlockK);
    }
    commit_copies();
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

// The steps of README.md's part-3 table, for the benchmark: the tile shapes, stage counts and
// shared-memory layouts that lead to the tuned kernel (TunedTile in mma_gemm_pipeline.h is
// the fastest of them on the reference GPU), one change at a time (see mma_gemm_tuning.h).
namespace course::COURSE_IMPL::tuning {
namespace {
template <class Tile>
void run(int M, int N, int K, float alpha, const __half* A, const __half* B, float beta, float* C,
         cudaStream_t stream) {
  launch_mma_gemm<Tile>("mma_gemm (tuning step)", M, N, K, alpha, A, B, beta, C, stream);
}
}  // namespace
const std::vector<MmaTuningStep>& mma_tuning_steps() {
  static const std::vector<MmaTuningStep> steps = {
      // Part 2's shapes (warps of 64 x 32, 128 x 128 blocks, 2 stages of 32, padded rows),
      // with ldmatrix and mma.sync.
      {"warp64x32_block128x128_k32x2_padded",
       run<MmaTile<128, 128, 32, 64, 32, 2, SharedLayout::padded>>},
      // Larger warp and block tiles.
      {"warp64x64_block128x256_k32x2_padded",
       run<MmaTile<128, 256, 32, 64, 64, 2, SharedLayout::padded>>},
      // More stages of the same depth.
      {"warp64x64_block128x256_k32x4_padded",
       run<MmaTile<128, 256, 32, 64, 64, 4, SharedLayout::padded>>},
      // The same without padding: what the bank conflicts cost.
      {"warp64x64_block128x256_k32x4_plain",
       run<MmaTile<128, 256, 32, 64, 64, 4, SharedLayout::plain>>},
      // Swizzled instead of padded.
      {"warp64x64_block128x256_k32x4_swizzled",
       run<MmaTile<128, 256, 32, 64, 64, 4, SharedLayout::swizzled>>},
      // More stages still.
      {"warp64x64_block128x256_k32x6_swizzled",
       run<MmaTile<128, 256, 32, 64, 64, 6, SharedLayout::swizzled>>},
      // Deeper tiles (64 of K), 3 and 4 stages.
      {"warp64x64_block128x256_k64x3_swizzled",
       run<MmaTile<128, 256, 64, 64, 64, 3, SharedLayout::swizzled>>},
      {"warp64x64_block128x256_k64x4_swizzled",
       run<MmaTile<128, 256, 64, 64, 64, 4, SharedLayout::swizzled>>},
      // Step 5's warps and stages in a 128 x 128 block of 4 warps: two blocks per
      // multiprocessor, so one block's products run while the other waits at its barrier.
      {"warp64x64_block128x128_k32x4_swizzled",
       run<MmaTile<128, 128, 32, 64, 64, 4, SharedLayout::swizzled>>},
  };
  return steps;
}
}  // namespace course::COURSE_IMPL::tuning
