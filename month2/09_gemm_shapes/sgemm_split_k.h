// Given code for exercise m2.09: the float32 split-K kernel. Your skeleton and the reference
// both include it (gemm_shapes.cu); the parts you write are split_k_tiles (task m2.09a),
// which this kernel calls, and the reduction (task m2.09b).
//
// Where it comes from: the main loop is m2.05's 2D register tile (month2/05_register_tiling/
// sgemm_2d_register_tile.cu, part 2: A through registers and stored transposed, B by
// cp.async, 8 x 16 per thread, the short k-tile first), lifted out of that kernel so that it
// runs over a range of k-tiles instead of all of K. What changed, and only that:
//   * the k-tiles it runs are [range.begin, range.end), range = split_k_tiles(blockIdx.z,
//     gridDim.z, k_tiles): the sources start range.begin tiles in, and only k-tile 0 (the
//     short one) checks k >= 0;
//   * the result goes to C (one split: alpha * acc + beta * C) or, with several splits, as
//     it is (alpha 1, beta 0, C never read) to split blockIdx.z's slice of the workspace;
//   * a second tile, 32 x 128 (SkinnyTile), for M <= 64.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "course/async_copy.h"
#include "course/block_order.h"
#include "gemm_shapes.h"

namespace course::COURSE_IMPL::sgemm_split_k {

// m2.05's TileConfig (its README explains every field), with the checks that matter here.
template <int BM_, int BN_, int BK_, int WM_, int WN_, int TM_, int TN_, int STAGES_,
          int MIN_BLOCKS_PER_SM_, int GROUP_M_>
struct TileConfig {
  static constexpr int BM = BM_, BN = BN_, BK = BK_;
  static constexpr int WM = WM_, WN = WN_, TM = TM_, TN = TN_;
  static constexpr int STAGES = STAGES_, MIN_BLOCKS_PER_SM = MIN_BLOCKS_PER_SM_;
  static constexpr int GROUP_M = GROUP_M_;
  static constexpr int kWarpsM = BM / WM, kWarpsN = BN / WN;
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int kLanesM = WM / TM, kLanesN = WN / TN;
  static constexpr int kLdA = BM + 4;  // A transposed, rows padded by 4 floats (m2.04)
  static constexpr int kAStageFloats = BK * kLdA, kBStageFloats = BK * BN;
  static constexpr std::size_t kSharedBytes =
      sizeof(float) * STAGES * (kAStageFloats + kBStageFloats);
  static constexpr int kARowsPerPass = kThreads / (BK / 4);
  static constexpr int kAPasses = BM / kARowsPerPass;
  static constexpr int kBRowsPerPass = kThreads / (BN / 4);
  static constexpr int kBPasses = BK / kBRowsPerPass;

  static_assert(BM % WM == 0 && BN % WN == 0 && WM % TM == 0 && WN % TN == 0,
                "block, warp and thread tiles must nest exactly");
  static_assert(kLanesM * kLanesN == 32, "a warp tile must hold exactly 32 thread tiles");
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0 && BN % 4 == 0,
                "float4 loads: TM, TN, BK and BN must be multiples of 4");
  static_assert(kAPasses * kARowsPerPass == BM && kBPasses * kBRowsPerPass == BK,
                "the A and B tiles must split evenly over the threads, one float4 each");
  static_assert(STAGES >= 2 && kSharedBytes <= 48 * 1024,
                "2 or more stages, in the 48 KiB a block gets without opting in");
  static_assert(TM * TN <= 128, "more than 128 accumulators per thread spill");
};

// m2.05's large tile, and a skinny one: 32 x 128, four warps of 16 x 64, 4 x 8 per thread.
using SquareTile = TileConfig<128, 128, 16, 64, 64, 8, 16, 2, 2, 8>;
using SkinnyTile = TileConfig<32, 128, 16, 16, 64, 4, 8, 2, 4, 1>;
static_assert(SquareTile::BM == gemm_shapes::kSquareBlockM &&
                  SkinnyTile::BM == gemm_shapes::kSkinnyBlockM &&
                  SquareTile::BN == gemm_shapes::kBlockN &&
                  SkinnyTile::BN == gemm_shapes::kBlockN &&
                  SquareTile::BK == gemm_shapes::k_tile(gemm_shapes::BlockTile::square,
                                                        gemm_shapes::Precision::fp32),
              "the chooser's tile sizes (gemm_shapes.h) are the kernels' tile sizes");

// kVectorized: float4 loads, copies and stores (K % 4 == 0, N % 4 == 0, 16-byte aligned A,
// B, C and workspace; the launcher checks); otherwise 4 bytes at a time.
template <class Tile, bool kVectorized>
__global__ void __launch_bounds__(Tile::kThreads, Tile::MIN_BLOCKS_PER_SM)
    sgemm_split_k_kernel(int M, int N, int K, float alpha, const float* __restrict__ A,
                         const float* __restrict__ B, float beta, float* __restrict__ C,
                         float* __restrict__ workspace) {
  constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, TM = Tile::TM, TN = Tile::TN;
  constexpr int STAGES = Tile::STAGES, kLdA = Tile::kLdA;
  constexpr int kAStage = Tile::kAStageFloats, kBStage = Tile::kBStageFloats;

  __shared__ float4 shared_storage[Tile::kSharedBytes / sizeof(float4)];
  float* const As = reinterpret_cast<float*>(shared_storage);
  float* const Bs = As + STAGES * kAStage;

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int warp_m = (warp / Tile::kWarpsN) * Tile::WM;
  const int warp_n = (warp % Tile::kWarpsN) * Tile::WN;
  const int lane_m = lane / Tile::kLanesN, lane_n = lane % Tile::kLanesN;
  const int tiles_n = static_cast<int>(gridDim.x), tiles_m = static_cast<int>(gridDim.y);
  const int launch_index = static_cast<int>(blockIdx.y) * tiles_n + static_cast<int>(blockIdx.x);
  const TileIndex tile = grouped_tile<Tile::GROUP_M>(launch_index, tiles_m, tiles_n);
  const int block_m = tile.row * BM;
  const int block_n = tile.col * BN;

  // K in BK-deep k-tiles, the short one first (m2.05): k-tile t covers
  // [k_first + t BK, k_first + (t + 1) BK), -BK < k_first <= 0. This split runs `range`.
  const int k_tiles = (K + BK - 1) / BK;
  const int k_first = K - k_tiles * BK;
  const gemm_shapes::KTileRange range =
      split_k_tiles(static_cast<int>(blockIdx.z), static_cast<int>(gridDim.z), k_tiles);
  const int num_tiles = range.end > range.begin ? range.end - range.begin : 0;
  const int k_start = k_first + range.begin * BK;  // the first k of this split's first tile
  const bool starts_short = range.begin == 0;      // its first tile is k-tile 0

  const int a_row = tid / (BK / 4), a_k = (tid % (BK / 4)) * 4;
  const int b_row = tid / (BN / 4), b_col = (tid % (BN / 4)) * 4;
  const float* a_source[Tile::kAPasses];
  bool a_row_inside[Tile::kAPasses];
#pragma unroll
  for (int pass = 0; pass < Tile::kAPasses; ++pass) {
    const int row = block_m + a_row + pass * Tile::kARowsPerPass;
    a_row_inside[pass] = row < M;
    a_source[pass] = A + (static_cast<std::ptrdiff_t>(row < M ? row : 0) * K + a_k + k_start);
  }
  const int col = block_n + b_col;
  int b_bytes[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) b_bytes[j] = kVectorized ? (col < N ? 16 : 0) : (col + j < N ? 4 : 0);
  const float* b_source =
      B + (static_cast<std::ptrdiff_t>(b_row + k_start) * N + (col < N ? col : 0));
  const std::ptrdiff_t b_pass_stride = static_cast<std::ptrdiff_t>(Tile::kBRowsPerPass) * N;
  const std::ptrdiff_t b_tile_stride = static_cast<std::ptrdiff_t>(BK) * N;
  float* const a_dest = As + a_k * kLdA + a_row;
  const std::uint32_t b_dest = shared_address(Bs + b_row * BN + b_col);

  // `first`: this is k-tile 0, whose k < 0 part is zeros.
  float4 a_staged[Tile::kAPasses];
  auto load_a_tile = [&](bool first) {
#pragma unroll
    for (int pass = 0; pass < Tile::kAPasses; ++pass) {
      const float* source = a_source[pass];
      if (kVectorized) {
        const bool inside = a_row_inside[pass] && (!first || k_first + a_k >= 0);
        a_staged[pass] = inside ? __ldg(reinterpret_cast<const float4*>(source))
                                : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      } else {
        float value[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const bool inside = a_row_inside[pass] && (!first || k_first + a_k + j >= 0);
          value[j] = inside ? __ldg(source + j) : 0.0f;
        }
        a_staged[pass] = make_float4(value[0], value[1], value[2], value[3]);
      }
      a_source[pass] += BK;
    }
  };
  auto store_a_tile = [&](int stage) {
#pragma unroll
    for (int pass = 0; pass < Tile::kAPasses; ++pass) {
      float* dest = a_dest + stage * kAStage + pass * Tile::kARowsPerPass;
      dest[0 * kLdA] = a_staged[pass].x;
      dest[1 * kLdA] = a_staged[pass].y;
      dest[2 * kLdA] = a_staged[pass].z;
      dest[3 * kLdA] = a_staged[pass].w;
    }
  };
  auto copy_b_tile = [&](int stage, bool first) {
    const std::uint32_t b_stage = b_dest + stage * (kBStage * 4);
#pragma unroll
    for (int pass = 0; pass < Tile::kBPasses; ++pass) {
      const bool inside = !first || k_first + b_row + pass * Tile::kBRowsPerPass >= 0;
      const float* source = inside ? b_source + pass * b_pass_stride : B;
      const std::uint32_t dest = b_stage + pass * Tile::kBRowsPerPass * BN * 4;
      if (kVectorized) {
        copy_16_bytes_async(dest, source, inside ? b_bytes[0] : 0);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          copy_4_bytes_async(dest + j * 4, source + j, inside ? b_bytes[j] : 0);
      }
    }
    b_source += b_tile_stride;
  };

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i) {
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  }
  float a_frag[2][TM], b_frag[2][TN];
  const float* const a_frag_base = As + warp_m + lane_m * 4;
  const float* const b_frag_base = Bs + warp_n + lane_n * 4;
  auto load_fragments = [&](int stage, int k, int slot) {
    const float* a = a_frag_base + stage * kAStage + k * kLdA;
    const float* b = b_frag_base + stage * kBStage + k * BN;
#pragma unroll
    for (int i = 0; i < TM / 4; ++i) {
      *reinterpret_cast<float4*>(&a_frag[slot][i * 4]) =
          *reinterpret_cast<const float4*>(a + i * Tile::kLanesM * 4);
    }
#pragma unroll
    for (int j = 0; j < TN / 4; ++j) {
      *reinterpret_cast<float4*>(&b_frag[slot][j * 4]) =
          *reinterpret_cast<const float4*>(b + j * Tile::kLanesN * 4);
    }
  };
  auto multiply_fragments = [&](int slot) {
#pragma unroll
    for (int i = 0; i < TM; ++i) {
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a_frag[slot][i], b_frag[slot][j], acc[i][j]);
    }
  };

  // m2.05's pipeline over this split's num_tiles k-tiles.
#pragma unroll
  for (int stage = 0; stage < STAGES; ++stage) {
    if (stage < num_tiles) {
      load_a_tile(stage == 0 && starts_short);
      store_a_tile(stage);
      copy_b_tile(stage, stage == 0 && starts_short);
    }
    commit_copies();
  }
  wait_for_copies<STAGES - 1>();
  __syncthreads();
  load_fragments(0, 0, 0);

  int stage = 0;
  for (int t = 0; t < num_tiles; ++t) {
    const bool refill = t + STAGES < num_tiles;
    if (refill) load_a_tile(false);
#pragma unroll
    for (int k = 0; k < BK - 1; ++k) {
      load_fragments(stage, k + 1, (k + 1) % 2);
      multiply_fragments(k % 2);
    }
    wait_for_copies<STAGES - 2>();
    __syncthreads();
    if (refill) {
      store_a_tile(stage);
      copy_b_tile(stage, false);
    }
    commit_copies();
    stage = stage + 1 == STAGES ? 0 : stage + 1;
    load_fragments(stage, 0, 0);
    multiply_fragments((BK - 1) % 2);
  }
  wait_for_copies<0>();

  // One split: C = alpha * acc + beta * C. Several: this split's partial C, as it is, into
  // its slice of the workspace (the reduction applies alpha and beta once, to the sum).
  float* out = C;
  if (gridDim.z > 1) {
    out = workspace + static_cast<std::ptrdiff_t>(blockIdx.z) * M * N;
    alpha = 1.0f;
    beta = 0.0f;
  }
#pragma unroll
  for (int i = 0; i < TM / 4; ++i) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int row = block_m + warp_m + i * Tile::kLanesM * 4 + lane_m * 4 + r;
      if (row >= M) continue;
#pragma unroll
      for (int j = 0; j < TN / 4; ++j) {
        const int c0 = block_n + warp_n + j * Tile::kLanesN * 4 + lane_n * 4;
        float* dest = out + static_cast<std::ptrdiff_t>(row) * N + c0;
        const float* v = &acc[i * 4 + r][j * 4];
        if (kVectorized) {
          if (c0 >= N) continue;
          float4 result = make_float4(alpha * v[0], alpha * v[1], alpha * v[2], alpha * v[3]);
          if (beta != 0.0f) {
            const float4 old = *reinterpret_cast<const float4*>(dest);
            result.x += beta * old.x;
            result.y += beta * old.y;
            result.z += beta * old.z;
            result.w += beta * old.w;
          }
          *reinterpret_cast<float4*>(dest) = result;
        } else {
#pragma unroll
          for (int c = 0; c < 4; ++c) {
            if (c0 + c >= N) continue;
            dest[c] = beta == 0.0f ? alpha * v[c] : alpha * v[c] + beta * dest[c];
          }
        }
      }
    }
  }
}

}  // namespace course::COURSE_IMPL::sgemm_split_k
