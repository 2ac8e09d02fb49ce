// Given code for exercise m2.07, part 3 (mma_gemm.cu): the tile configuration, the
// shared-memory layouts and the copies from global to shared memory. Your skeleton and the
// reference both include it; the part you write is in mma_gemm.cu.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "course/async_copy.h"
#include "course/block_loop.h"
#include "course/mma_sync.h"
#include "course/shared_tile.h"

namespace course::mma_gemm_pipeline {

// How a tile is laid out in shared memory (plain, padded or swizzled) and where element
// (row, column) of it lives: course/shared_tile.h, shared with m3.05's convolution.
using course::SharedLayout;
using course::tile_offset;

// The shape of the work. kBlockM x kBlockN of C per block, kBlockK of K per stage, kWarpM x
// kWarpN of C per warp, kStages stages of tiles in shared memory.
template <int kBlockM_, int kBlockN_, int kBlockK_, int kWarpM_, int kWarpN_, int kStages_,
          SharedLayout kLayout_>
struct MmaTile {
  static constexpr int kBlockM = kBlockM_, kBlockN = kBlockN_, kBlockK = kBlockK_;
  static constexpr int kWarpM = kWarpM_, kWarpN = kWarpN_, kStages = kStages_;
  static constexpr SharedLayout kLayout = kLayout_;
  static constexpr int kWarpsN = kBlockN / kWarpN;
  static constexpr int kThreads = 32 * (kBlockM / kWarpM) * kWarpsN;
  static constexpr int kTilesM = kWarpM / 16, kTilesN = kWarpN / 8;  // mma tiles per warp
  // A padded row is 8 halves (one 16-byte chunk) longer: the m2.04 fix, which shifts each
  // row by 4 banks.
  static constexpr int kPad = kLayout == SharedLayout::padded ? 8 : 0;
  static constexpr int kLdA = kBlockK + kPad, kLdB = kBlockN + kPad;
  static constexpr int kStageHalves = kBlockM * kLdA + kBlockK * kLdB;
  static constexpr int kSharedBytes = kStages * kStageHalves * 2;
  static constexpr int kGroupRows = 8;  // course/block_order.h

  static_assert(kBlockM % kWarpM == 0 && kBlockN % kWarpN == 0,
                "the warps must tile the block tile exactly");
  static_assert(kWarpM % 16 == 0 && kWarpN % 16 == 0,
                "a warp tile is made of 16 x 16 pieces (two 16 x 8 mma tiles side by side)");
  static_assert(kBlockK % 16 == 0 && (kBlockK == 32 || kBlockK % 64 == 0),
                "kBlockK: 32, or a multiple of 64 (the rows swizzled_chunk handles)");
  static_assert(kBlockN % 64 == 0, "kBlockN: a multiple of 64 (128-byte rows of B)");
  static_assert(kStages >= 2, "at least 2 stages: one computed on while the next arrives");
  static_assert(kTilesM * kTilesN * 4 <= 128,
                "more than 128 accumulators per thread leave too few registers for the rest");
  static_assert(kSharedBytes <= 227 * 1024, "the stages must fit in 227 KiB of shared memory");
};

// The tile the launcher uses, tuned on an H200 (README.md, part 3).
using TunedTile = MmaTile<128, 128, 32, 64, 64, 4, SharedLayout::swizzled>;

// Copies the tile of A (rows block_m.., columns k0..) and of B (rows k0.., columns block_n..)
// into `stage`, zeros outside the matrices. kVectorized: 16-byte cp.async copies of 8
// halves, which needs K % 8 == 0, N % 8 == 0 and 16-byte aligned A and B, so that a chunk
// is all inside or all outside the matrix; otherwise one half at a time.
template <class Tile, bool kVectorized>
__device__ __forceinline__ void copy_tiles(__half* stage, const __half* __restrict__ A,
                                           const __half* __restrict__ B, int M, int N, int K,
                                           int block_m, int block_n, int k0) {
  constexpr int kBlockM = Tile::kBlockM, kBlockN = Tile::kBlockN, kBlockK = Tile::kBlockK;
  __half* As = stage;
  __half* Bs = stage + kBlockM * Tile::kLdA;
  const int tid = static_cast<int>(threadIdx.x);
  if constexpr (kVectorized) {
    constexpr int kChunksA = kBlockK / 8, kChunksB = kBlockN / 8;
    for_each_block_item<kBlockM * kChunksA, Tile::kThreads>(tid, [&](int i) {
      const int r = i / kChunksA, c = (i % kChunksA) * 8;
      const bool inside = block_m + r < M && k0 + c < K;
      const int offset = tile_offset<Tile::kLayout, kBlockK, Tile::kLdA>(r, c);
      copy_16_bytes_async(shared_address(As + offset),
                          inside ? A + static_cast<std::ptrdiff_t>(block_m + r) * K + k0 + c : A,
                          inside ? 16 : 0);
    });
    for_each_block_item<kBlockK * kChunksB, Tile::kThreads>(tid, [&](int i) {
      const int r = i / kChunksB, c = (i % kChunksB) * 8;
      const bool inside = k0 + r < K && block_n + c < N;
      const int offset = tile_offset<Tile::kLayout, kBlockN, Tile::kLdB>(r, c);
      copy_16_bytes_async(shared_address(Bs + offset),
                          inside ? B + static_cast<std::ptrdiff_t>(k0 + r) * N + block_n + c : B,
                          inside ? 16 : 0);
    });
  } else {
    const __half zero = __float2half(0.0f);
    for (int i = tid; i < kBlockM * kBlockK; i += Tile::kThreads) {
      const int r = i / kBlockK, c = i % kBlockK;
      const bool inside = block_m + r < M && k0 + c < K;
      As[tile_offset<Tile::kLayout, kBlockK, Tile::kLdA>(r, c)] =
          inside ? A[static_cast<std::ptrdiff_t>(block_m + r) * K + k0 + c] : zero;
    }
    for (int i = tid; i < kBlockK * kBlockN; i += Tile::kThreads) {
      const int r = i / kBlockN, c = i % kBlockN;
      const bool inside = k0 + r < K && block_n + c < N;
      Bs[tile_offset<Tile::kLayout, kBlockN, Tile::kLdB>(r, c)] =
          inside ? B[static_cast<std::ptrdiff_t>(k0 + r) * N + block_n + c] : zero;
    }
  }
}

}  // namespace course::mma_gemm_pipeline
