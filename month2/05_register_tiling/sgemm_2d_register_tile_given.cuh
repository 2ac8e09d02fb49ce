// Given code for exercise m2.05, part 2 (sgemm_2d_register_tile.cu): the tile shapes and their
// checks, and the launcher, which picks a tile for the problem and launches your kernel. Your
// skeleton and the reference both include it; the kernel you write is in
// sgemm_2d_register_tile.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "course/async_copy.h"
#include "course/block_order.h"
#include "course/cuda_check.h"
#include "course/gemm.h"
#include "course/launch.h"
#include "register_tiling.h"

namespace course::COURSE_IMPL {  // see course/impl.h
namespace register_tiling {

// ---------------------------------------------------------------------------------------
// The tile shape. Every size is a compile-time constant, so the compiler can unroll every
// loop over the thread tile and keep the accumulators in registers.
//
//   BM x BN   the block tile: the part of C one thread block computes
//   BK        the depth of one step: how many columns of A / rows of B a stage holds
//   WM x WN   the warp tile: the part of the block tile one warp computes
//   TM x TN   the thread tile: the part of C one thread computes, in registers
//   STAGES    how many BK-deep tiles of A and B are in shared memory at once
//   MIN_BLOCKS_PER_SM   the occupancy asked of the compiler through __launch_bounds__
//   GROUP_M   the order of the blocks: groups of GROUP_M rows of tiles (1: row by row)
// ---------------------------------------------------------------------------------------
template <int BM_, int BN_, int BK_, int WM_, int WN_, int TM_, int TN_, int STAGES_,
          int MIN_BLOCKS_PER_SM_, int GROUP_M_>
struct TileConfig {
  static constexpr int BM = BM_, BN = BN_, BK = BK_;
  static constexpr int WM = WM_, WN = WN_, TM = TM_, TN = TN_;
  static constexpr int STAGES = STAGES_, MIN_BLOCKS_PER_SM = MIN_BLOCKS_PER_SM_;
  static constexpr int GROUP_M = GROUP_M_;

  static constexpr int kWarpsM = BM / WM, kWarpsN = BN / WN;
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int kLanesM = WM / TM, kLanesN = WN / TN;  // a warp's threads, as a grid
  // A is stored transposed, As[k][m]. The rows are padded by 4 floats: every row still
  // starts on a 16-byte boundary, as float4 loads need, and the transposing stores of a
  // warp spread over twice as many banks as without the padding (m2.04).
  static constexpr int kLdA = BM + 4;
  static constexpr int kAStageFloats = BK * kLdA, kBStageFloats = BK * BN;
  static constexpr std::size_t kSharedBytes =
      sizeof(float) * STAGES * (kAStageFloats + kBStageFloats);
  // How the threads split the copies: a thread loads 4 consecutive k of one row of A (one
  // float4) and copies one float4 (4 consecutive n) of one row of B, as often as it takes
  // to cover the tile.
  static constexpr int kARowsPerPass = kThreads / (BK / 4);
  static constexpr int kAPasses = BM / kARowsPerPass;
  static constexpr int kBRowsPerPass = kThreads / (BN / 4);
  static constexpr int kBPasses = BK / kBRowsPerPass;

  static_assert(BM % WM == 0 && BN % WN == 0,
                "the block tile (BM x BN) must be an exact grid of warp tiles (WM x WN)");
  static_assert(WM % TM == 0 && WN % TN == 0,
                "a warp tile (WM x WN) must be an exact grid of thread tiles (TM x TN)");
  static_assert(kLanesM * kLanesN == 32,
                "a warp tile must hold exactly 32 thread tiles, one per thread of the warp: "
                "(WM / TM) * (WN / TN) must be 32");
  static_assert(TM % 4 == 0 && TN % 4 == 0,
                "TM and TN must be multiples of 4: a thread reads its values of A and B from "
                "shared memory as float4s, 4 at a time");
  static_assert(BK % 4 == 0 && BK >= 4,
                "BK must be a multiple of 4: a thread loads 4 consecutive k of a row of A");
  static_assert(BN % 4 == 0, "BN must be a multiple of 4: B is copied one float4 at a time");
  static_assert(kThreads <= 1024, "a block may have at most 1024 threads: fewer warp tiles");
  static_assert(kThreads % (BK / 4) == 0 && kAPasses * kARowsPerPass == BM,
                "the A tile (BM x BK) must split evenly over the threads, 4 floats each: "
                "BM * BK / 4 must be a multiple of the thread count");
  static_assert(kThreads % (BN / 4) == 0 && kBPasses * kBRowsPerPass == BK,
                "the B tile (BK x BN) must split evenly over the threads, one float4 each: "
                "BK * BN / 4 must be a multiple of the thread count");
  static_assert(STAGES >= 2,
                "at least 2 stages: one that is being computed on while the next is copied in");
  static_assert(kSharedBytes <= 48 * 1024,
                "the stages must fit in 48 KiB of shared memory, the most a block gets without "
                "opting in (cudaFuncSetAttribute); fewer stages or a smaller BK");
  static_assert(TM * TN <= 128,
                "TM * TN accumulators per thread: more than 128 leaves too few of the 255 "
                "registers a thread can have for everything else, and they spill to local "
                "memory");
  static_assert(GROUP_M >= 1, "GROUP_M counts rows of tiles: 1 or more");
};

// The tile used for large problems, tuned on an H200 (README.md says how): 128 x 128 x 16,
// four warps of 64 x 64, 8 x 16 per thread, 2 stages (32.5 KiB of shared memory), two
// blocks per multiprocessor, blocks in groups of 8 tile rows.
using LargeTile = TileConfig<128, 128, 16, 64, 64, 8, 16, 2, 2, 8>;
// For problems whose 128 x 128 grid would leave multiprocessors idle: 64 x 64 x 16, four
// warps of 32 x 32, 4 x 8 per thread, 3 stages. Four times as many blocks for the same C.
using SmallTile = TileConfig<64, 64, 16, 32, 32, 4, 8, 3, 4, 1>;

// ---------------------------------------------------------------------------------------
// Two device helpers of the harness do the plumbing. course/async_copy.h: B's tiles go to
// shared memory by cp.async (copy_16_bytes_async, copy_4_bytes_async; commit_copies and
// wait_for_copies<N> group and wait for them), which run in the background while the
// thread goes on with its arithmetic; 0 bytes writes zeros, the zero padding of edge tiles.
// course/block_order.h: grouped_tile<GROUP_M> gives each block its tile of C in groups of
// GROUP_M rows of tiles, so the blocks that run at the same time share more of A and B
// through the L2 cache (the header says why).
// ---------------------------------------------------------------------------------------

// The kernel you write in sgemm_2d_register_tile.cu, declared here for the launcher below.
template <class Tile, bool kVectorized>
__global__ void __launch_bounds__(Tile::kThreads, Tile::MIN_BLOCKS_PER_SM)
    sgemm_2d_kernel(int M, int N, int K, float alpha, const float* __restrict__ A,
                    const float* __restrict__ B, float beta, float* __restrict__ C);

// Launches one tile configuration over the whole of C.
template <class Tile>
void launch_2d(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
               float* C, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(ceil_div(N, Tile::BN)),
                  static_cast<unsigned>(ceil_div(M, Tile::BM)));
  require_grid_y(grid.y, "sgemm_2d_register_tile", "M = " + std::to_string(M));
  // float4 loads of A, float4 copies of B and float4 stores to C need every row of A, B
  // and C to start on a 16-byte boundary (sgemm_2d_uses_float4). Otherwise the same kernel
  // runs with 4-byte loads, copies and stores.
  const bool vectorized = sgemm_2d_uses_float4(N, K, A, B, C);
  if (vectorized) {
    sgemm_2d_kernel<Tile, true><<<grid, Tile::kThreads, 0, stream>>>(M, N, K, alpha, A, B, beta, C);
  } else {
    sgemm_2d_kernel<Tile, false>
        <<<grid, Tile::kThreads, 0, stream>>>(M, N, K, alpha, A, B, beta, C);
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace register_tiling

void sgemm_2d_register_tile(int M, int N, int K, float alpha, const float* A, const float* B,
                            float beta, float* C, cudaStream_t stream) {
  using namespace register_tiling;
  require_gemm_arguments("sgemm_2d_register_tile", M, N, K);
  if (M == 0 || N == 0) return;  // C is empty, and a launch of zero blocks is an error

  // Occupancy: a 128 x 128 tile keeps the FMA units busiest, but a problem with fewer such
  // tiles than the GPU has multiprocessors leaves some of them idle (1024^2 on an H200: 64
  // tiles for 132 multiprocessors). Then the 64 x 64 tile, four times as many blocks, wins.
  int device = 0, multiprocessors = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  const long long large_tiles =
      static_cast<long long>(ceil_div(M, LargeTile::BM)) * ceil_div(N, LargeTile::BN);
  if (large_tiles >= multiprocessors) {
    launch_2d<LargeTile>(M, N, K, alpha, A, B, beta, C, stream);
  } else {
    launch_2d<SmallTile>(M, N, K, alpha, A, B, beta, C, stream);
  }
}

}  // namespace course::COURSE_IMPL
