// Given code for exercise m3.05, part 3: the same convolution, the same A loaders (yours),
// on Hopper's wgmma instead of mma.sync. Your skeleton and the reference both include it;
// the launchers take it on an H100 or H200 (README.md, "Part 3").
//
// What changes from implicit_gemm_kernel (implicit_gemm_pipeline.h), and why it is faster:
//  * wgmma (m2.08) instead of ldmatrix + mma.sync. A warpgroup (4 warps, 128 threads) issues
//    one 64 x kBlockN x 16 product that reads A and B straight from shared memory: no
//    fragments loaded into registers, and the tensor cores run at Hopper's full rate, which
//    mma.sync cannot reach. Each warpgroup owns 64 rows of the block tile.
//  * Nothing else. The stages are 64 of g deep, so each row of a stage's tiles is 128 bytes,
//    and course::swizzled_chunk's pattern for such rows (chunk ^ row % 8) is exactly the
//    128-byte swizzle wgmma reads: the A loaders and the filter copies write the tiles as
//    they do for mma.sync. B stays [filters][g], which wgmma reads as a "K-major" B.
//  * One fence. cp.async writes shared memory on the ordinary ("generic") path; wgmma reads
//    it on its own ("async proxy"). Each thread fences its landed copies before the barrier
//    that publishes the stage (course::hopper::fence_shared_for_async_proxy).
//
// Unlike m2.08 there is no TMA and no warp specialisation: every thread gathers (a TMA box
// cannot follow the convolution window; its im2col mode is where cuDNN goes further).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "course/async_copy.h"
#include "course/block_order.h"
#include "course/hopper.h"
#include "course/mma_sync.h"
#include "implicit_gemm_pipeline.h"

namespace course::implicit_gemm {

// The tiles of the wgmma loop: ConvTiles 64 of g deep with 128 threads (one warpgroup) per
// 64 rows, 4 stages. (The warp shape of a ConvTile only sets its thread count here, which
// the A loaders and the filter copies use.) 128 x 128 (128 KiB of shared memory, one block
// per SM) when K > 64; 128 x 64 (96 KiB, two per SM) for K <= 64 filters.
using WgmmaWideTile = ConvTile<128, 128, 64, 64, 32, 4>;
using WgmmaNarrowTile = ConvTile<128, 64, 64, 32, 32, 4>;

// Shared memory for a tile's stages, plus room to start them on a 1024-byte boundary (the
// 128-byte swizzle repeats every 8 rows of 128 bytes: wgmma's descriptors assume it).
template <class Tile>
constexpr int wgmma_shared_bytes() {
  return Tile::kSharedBytes + 1024;
}

// The kernel, for the fast path only (16-byte copies). ALoader: an A loader of
// conv2d_implicit_gemm_given.cuh, with the contract of implicit_gemm_kernel's.
template <class Tile, class Element, template <class, class, bool> class ALoader>
__global__ void __launch_bounds__(Tile::kThreads)
    implicit_gemm_wgmma_kernel(const ConvProblem problem, const Element* __restrict__ x,
                               const Element* __restrict__ w, const float* __restrict__ bias,
                               float* __restrict__ y) {
  static_assert(Tile::kBlockK == 64, "rows of 128 bytes: the 128-byte swizzle");
  static_assert(Tile::kThreads == 128 * (Tile::kBlockM / 64), "one warpgroup per 64 rows");
  // One group of products stays in flight while the next tile's are issued, so the stage a
  // step refills is the one read two steps before: tiles are requested kStages - 2 ahead.
  constexpr int kAhead = Tile::kStages - 2;
  static_assert(kAhead >= 1, "at least 3 stages");
#if defined(COURSE_HAVE_WGMMA)
  constexpr int kBlockM = Tile::kBlockM, kBlockN = Tile::kBlockN, kStages = Tile::kStages;
  extern __shared__ uint4 dynamic_shared[];  // the name and type implicit_gemm_kernel uses
  unsigned char* unaligned = reinterpret_cast<unsigned char*>(dynamic_shared);
  unsigned char* base = unaligned + (1024 - hopper::smem(unaligned) % 1024) % 1024;
  Element* shared = reinterpret_cast<Element*>(base);
  const int warpgroup = static_cast<int>(threadIdx.x) / 128;
  const int thread = static_cast<int>(threadIdx.x) % 128;
  const TileIndex tile = grouped_tile<Tile::kGroupRows>(static_cast<int>(blockIdx.x),
                                                        (problem.M + kBlockM - 1) / kBlockM,
                                                        (problem.N + kBlockN - 1) / kBlockN);
  const int block_m = tile.row * kBlockM, block_n = tile.col * kBlockN;

  float acc[kBlockN / 2];  // this thread's share of its warpgroup's 64 x kBlockN
#pragma unroll
  for (int i = 0; i < kBlockN / 2; ++i) acc[i] = 0.0f;

  ALoader<Tile, Element, true> a_loader(problem, x, block_m);
  auto stage_a = [&](int index) { return shared + index * Tile::kStageHalves; };
  auto stage_b = [&](int index) { return stage_a(index) + kBlockM * Tile::kBlockK; };
  auto request = [&](int index, int tile_k) {
    a_loader.copy(stage_a(index), tile_k * Tile::kBlockK);
    copy_filter_tile<Tile, true>(stage_b(index), w, problem, block_n, tile_k * Tile::kBlockK);
  };

  const int num_tiles = (problem.gemm_k + Tile::kBlockK - 1) / Tile::kBlockK;
#pragma unroll
  for (int s = 0; s < kAhead; ++s) {
    if (s < num_tiles) request(s, s);
    commit_copies();
  }
  for (int t = 0; t < num_tiles; ++t) {
    wait_for_copies<kAhead - 1>();           // this thread's copies of tile t have landed,
    hopper::fence_shared_for_async_proxy();  // are visible to wgmma,
    __syncthreads();                         // and so are everyone's
    // Refill the stage tile t - 2 used: its products finished at step t - 1's wait.
    const int next = t + kAhead;
    if (next < num_tiles) request(next % kStages, next);
    commit_copies();
    // 16 of g are 32 bytes along each 128-byte row; groups of 8 rows are 1024 bytes apart.
    const unsigned char* As =
        reinterpret_cast<const unsigned char*>(stage_a(t % kStages)) + warpgroup * 64 * 128;
    const unsigned char* Bs = reinterpret_cast<const unsigned char*>(stage_b(t % kStages));
    hopper::wgmma_fence();
#pragma unroll
    for (int k = 0; k < Tile::kBlockK; k += 16) {
      hopper::wgmma_64xNx16<kBlockN, false, Element>(
          acc, hopper::matrix_descriptor(As + k * 2, 16, 1024),
          hopper::matrix_descriptor(Bs + k * 2, 16, 1024));
    }
    hopper::wgmma_commit();
    hopper::wgmma_wait<1>();  // tile t - 1's products are done: its stage may be refilled
  }
  hopper::wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < kBlockN / 2; ++i) hopper::fence_accumulator(acc[i]);

  // y = acc + bias. Thread t of warp w holds, per 8 columns j, rows 16 w + t / 4 and 8 further
  // down, columns 8 j + 2 (t % 4) and the next (course/hopper.h): acc[4 j .. 4 j + 3] is one
  // 16 x 8 tile, stored as the mma.sync loop stores its tiles (implicit_gemm_pipeline.h).
  const int warp = thread / 32, lane = thread % 32;
  const int row = block_m + warpgroup * 64 + warp * 16 + lane / 4;
  const bool aligned = pairs_aligned(y, problem.N);
#pragma unroll
  for (int j = 0; j < kBlockN / 8; ++j) {
    const int col = block_n + j * 8 + (lane % 4) * 2;
    const float2 b = bias_pair(bias, problem.N, col);
    store_output_tile(acc + 4 * j, b, problem, y, row, col, aligned);
  }
#else
  // Built for a GPU without wgmma: the launchers never start this kernel there
  // (conv2d_implicit_gemm_given.cuh, wgmma_runs_here).
  (void)problem, (void)x, (void)w, (void)bias, (void)y;
  __trap();
#endif
}

}  // namespace course::implicit_gemm
