// Given code for exercise m3.05: everything of the implicit-GEMM convolution except the A
// loaders (conv2d_implicit_gemm_given.cuh, on the index functions you write in
// conv2d_implicit_gemm.cu). Your skeleton and the reference both include it. It is m2.07's
// part-3 main loop (stages of cp.async, swizzled shared memory, ldmatrix, mma.sync m16n8k16,
// the epilogue straight from the accumulators) with two changes:
//
//  * B is the filters. KRSC weights w[K][R][S][C] are, as they lie in memory, a row-major
//    K x (C R S) matrix W whose row k is filter k and whose column g = (r S + s) C + c is the
//    GEMM's k index. The GEMM needs B = W^T (C R S x K), so a stage keeps W's tile as it is,
//    [kBlockN rows of filters][kBlockK of g], like A's [kBlockM rows][kBlockK of g]. Both
//    tiles have g contiguous, the same swizzle, and the same ldmatrix (not .trans): an 8 x 8
//    piece of rows n, columns g is, per lane, exactly mma.sync's "col" B fragment.
//  * A is not in memory. The kernel asks an A loader (yours) to fill each stage's A tile,
//    [kBlockM GEMM rows (output pixels)][kBlockK of g], from x in NHWC; nothing else knows
//    it is a convolution.
//
// The output y[N][P][Q][K] (NHWC) is the GEMM's row-major M x N float32 C, M = N P Q.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "course/async_copy.h"
#include "course/block_loop.h"
#include "course/block_order.h"
#include "course/conv.h"
#include "course/fast_divmod.h"
#include "course/mma_sync.h"
#include "course/shared_tile.h"

namespace course::implicit_gemm {

// The shape of the work: kBlockM x kBlockN of y per block (kBlockM output pixels, kBlockN
// filters), kBlockK of g = (r, s, c) per stage, kWarpM x kWarpN per warp, kStages stages.
template <int kBlockM_, int kBlockN_, int kBlockK_, int kWarpM_, int kWarpN_, int kStages_>
struct ConvTile {
  static constexpr int kBlockM = kBlockM_, kBlockN = kBlockN_, kBlockK = kBlockK_;
  static constexpr int kWarpM = kWarpM_, kWarpN = kWarpN_, kStages = kStages_;
  static constexpr SharedLayout kLayout = SharedLayout::swizzled;
  static constexpr int kWarpsN = kBlockN / kWarpN;
  static constexpr int kThreads = 32 * (kBlockM / kWarpM) * kWarpsN;
  static constexpr int kTilesM = kWarpM / 16, kTilesN = kWarpN / 8;  // mma tiles per warp
  static constexpr int kChunksK = kBlockK / 8;  // 16-byte chunks in a row of a stage's tiles
  static constexpr int kStageHalves = (kBlockM + kBlockN) * kBlockK;
  static constexpr int kSharedBytes = kStages * kStageHalves * 2;
  static constexpr int kGroupRows = 8;  // course/block_order.h
  // The 16-byte A copies, chunk i = threadIdx.x + j kThreads: every thread copies the same
  // chunk column (threadIdx.x % kChunksK) of kRowsPerThread rows, kRowStep rows apart.
  static constexpr int kRowsPerThread = kBlockM * kChunksK / kThreads;
  static constexpr int kRowStep = kThreads / kChunksK;

  static_assert(kBlockM % kWarpM == 0 && kBlockN % kWarpN == 0,
                "the warps must tile the block tile exactly");
  static_assert(kWarpM % 16 == 0 && kWarpN % 16 == 0,
                "a warp tile is made of 16 x 16 pieces (two 16 x 8 mma tiles side by side)");
  static_assert(kBlockK == 32 || kBlockK % 64 == 0,
                "kBlockK: 32 or a multiple of 64 (the rows swizzled_chunk handles)");
  static_assert(kThreads % kChunksK == 0 && (kBlockM * kChunksK) % kThreads == 0,
                "each thread copies whole chunk columns of A: kThreads must divide the chunks");
  static_assert(kStages >= 2, "at least 2 stages: one computed on while the next arrives");
  static_assert(kTilesM * kTilesN * 4 <= 128,
                "more than 128 accumulators per thread leave too few registers for the rest");
  static_assert(kSharedBytes <= 227 * 1024, "the stages must fit in 227 KiB of shared memory");
};

// The tiles the launchers use (README.md, "The tiles"), each four warps: 128 x 128 with
// 64 x 64 warps, 4 stages of 32 of g (64 KiB of shared memory); 128 x 64 with 64 x 32 warps
// for layers with K <= 64 filters or too few blocks of the wide tile, 4 stages of 32 (48 KiB);
// and 64 x 64 with 32 x 32 warps for layers with too few blocks of either, 2 stages of 64
// (32 KiB): the same shared memory as 4 stages of 32, so as many blocks on each SM to cover
// the copies, and half as many barriers per column of g.
using WideTile = ConvTile<128, 128, 32, 64, 64, 4>;
using NarrowTile = ConvTile<128, 64, 32, 64, 32, 4>;
using SmallTile = ConvTile<64, 64, 64, 32, 32, 2>;

// What a block needs to know of the convolution, worked out once on the host.
struct ConvProblem {
  ConvShape shape;
  int P = 0, Q = 0;
  int M = 0;               // GEMM rows: N P Q output pixels
  int N = 0;               // GEMM columns: K filters
  int gemm_k = 0;          // GEMM depth: C R S
  FastDivmod by_pq, by_q;  // for the GEMM row -> (n, p, q) decode of part 2
};

inline ConvProblem make_conv_problem(const ConvShape& s) {
  ConvProblem problem;
  problem.shape = s;
  problem.P = s.P();
  problem.Q = s.Q();
  problem.M = s.N * problem.P * problem.Q;  // < 2^31: require_conv_arguments bounds y
  problem.N = s.K;
  problem.gemm_k = s.C * s.R * s.S;  // < 2^31: bounded by w
  problem.by_pq = FastDivmod(problem.P * problem.Q);
  problem.by_q = FastDivmod(problem.Q);
  return problem;
}

// 0 as an Element.
template <class Element>
__device__ __forceinline__ Element zero_element() {
  if constexpr (std::is_same_v<Element, __half>) {
    return __float2half(0.0f);
  } else {
    return __float2bfloat16(0.0f);
  }
}

// Element (row, column) of a stage's A or B tile: rows of kBlockK, swizzled.
template <class Tile>
__device__ __forceinline__ int stage_offset(int row, int column) {
  return tile_offset<Tile::kLayout, Tile::kBlockK, Tile::kBlockK>(row, column);
}

// B: rows block_n .. of W (filters), columns k0 .. (g), zeros outside W. kVectorized:
// 16-byte copies of 8 consecutive g of one filter, which needs C R S % 8 == 0 (so a chunk is
// all inside or all outside a row) and w 16-byte aligned; otherwise one element at a time.
template <class Tile, bool kVectorized, class Element>
__device__ __forceinline__ void copy_filter_tile(Element* Bs, const Element* __restrict__ w,
                                                 const ConvProblem& problem, int block_n, int k0) {
  const int tid = static_cast<int>(threadIdx.x);
  if constexpr (kVectorized) {
    for_each_block_item<Tile::kBlockN * Tile::kChunksK, Tile::kThreads>(tid, [&](int i) {
      const int row = i / Tile::kChunksK, column = (i % Tile::kChunksK) * 8;
      const bool inside = block_n + row < problem.N && k0 + column < problem.gemm_k;
      const Element* source =
          inside ? w + static_cast<std::int64_t>(block_n + row) * problem.gemm_k + k0 + column : w;
      copy_16_bytes_async(shared_address(Bs + stage_offset<Tile>(row, column)), source,
                          inside ? 16 : 0);
    });
  } else {
    for (int i = tid; i < Tile::kBlockN * Tile::kBlockK; i += Tile::kThreads) {
      const int row = i / Tile::kBlockK, column = i % Tile::kBlockK;
      const bool inside = block_n + row < problem.N && k0 + column < problem.gemm_k;
      Bs[stage_offset<Tile>(row, column)] =
          inside ? w[static_cast<std::int64_t>(block_n + row) * problem.gemm_k + k0 + column]
                 : zero_element<Element>();
    }
  }
}

// A warp's fragments for the 16-deep slice k of a stage, through ldmatrix x4: lane l gives
// the address of row l % 16 of a 16 x 16 piece, in its left (l < 16) or right 8 columns.
// For A (rows: pixels) that is a[0..3] of one 16 x 16 fragment. For B (rows: filters) the
// four 8 x 8 pieces are: filters 0-7 / g 0-7, filters 8-15 / g 0-7, filters 0-7 / g 8-15,
// filters 8-15 / g 8-15, i.e. b[0] of mma tile j, b[0] of j + 1, b[1] of j, b[1] of j + 1.
template <class Tile>
struct Fragments {
  std::uint32_t a[Tile::kTilesM][4];
  std::uint32_t b[Tile::kTilesN][2];
};

template <class Tile, class Element>
__device__ __forceinline__ void load_fragments(const Element* As, const Element* Bs, int k,
                                               int warp_m, int warp_n, int lane,
                                               Fragments<Tile>& f) {
  const int piece_row = lane % 16, piece_col = (lane / 16) * 8;
#pragma unroll
  for (int i = 0; i < Tile::kTilesM; ++i) {
    load_matrix_x4(f.a[i], shared_address(As + stage_offset<Tile>(warp_m + i * 16 + piece_row,
                                                                  k + piece_col)));
  }
#pragma unroll
  for (int j = 0; j < Tile::kTilesN; j += 2) {
    std::uint32_t r[4];
    load_matrix_x4(
        r, shared_address(Bs + stage_offset<Tile>(warp_n + j * 8 + piece_row, k + piece_col)));
    f.b[j][0] = r[0];
    f.b[j + 1][0] = r[1];
    f.b[j][1] = r[2];
    f.b[j + 1][1] = r[3];
  }
}

template <class Tile, class Element>
__device__ __forceinline__ void multiply_fragments(const Fragments<Tile>& f,
                                                   float (&acc)[Tile::kTilesM][Tile::kTilesN][4]) {
#pragma unroll
  for (int i = 0; i < Tile::kTilesM; ++i) {
#pragma unroll
    for (int j = 0; j < Tile::kTilesN; ++j) {
      mma_16x8x16<Element>(acc[i][j], f.a[i], f.b[j]);
    }
  }
}

// The epilogue's one store, shared by both main loops (mma.sync here, wgmma in
// implicit_gemm_wgmma.h): y = acc + bias for one 16 x 8 accumulator tile whose lane holds
// y[row][col .. col + 1] and the same 8 rows down (c[0..1], c[2..3]; course/mma_sync.h and
// course/hopper.h lay the lanes out alike). Two neighbouring filters of one pixel, one 8-byte
// store where store_accumulator_pair can. b holds bias[col] and bias[col + 1] (bias_pair),
// loaded once for all the tiles of a column.
__device__ __forceinline__ void store_output_tile(const float* c, float2 b,
                                                  const ConvProblem& problem, float* __restrict__ y,
                                                  int row, int col, bool aligned) {
  store_accumulator_pair(y, problem.M, problem.N, row, col, 1.0f, 0.0f, c[0] + b.x, c[1] + b.y,
                         aligned);
  store_accumulator_pair(y, problem.M, problem.N, row + 8, col, 1.0f, 0.0f, c[2] + b.x, c[3] + b.y,
                         aligned);
}

// bias[col] and bias[col + 1], 0 outside the K filters or without a bias.
__device__ __forceinline__ float2 bias_pair(const float* __restrict__ bias, int K, int col) {
  return make_float2(bias != nullptr && col < K ? bias[col] : 0.0f,
                     bias != nullptr && col + 1 < K ? bias[col + 1] : 0.0f);
}

// Epilogue: y = acc + bias for the warp's tile, whose first element is (row0, col0) of the
// M x K matrix y (NHWC). Lane (group, thread) holds, per mma tile, y[group][2 thread ..
// 2 thread + 1] and the same 8 rows down (course/mma_sync.h).
template <class Tile>
__device__ __forceinline__ void store_outputs(const float (&acc)[Tile::kTilesM][Tile::kTilesN][4],
                                              const ConvProblem& problem,
                                              const float* __restrict__ bias, float* __restrict__ y,
                                              int row0, int col0, int lane) {
  const int group = lane / 4, pair = (lane % 4) * 2;
  const bool aligned = pairs_aligned(y, problem.N);
#pragma unroll
  for (int j = 0; j < Tile::kTilesN; ++j) {
    const int col = col0 + j * 8 + pair;
    const float2 b = bias_pair(bias, problem.N, col);
#pragma unroll
    for (int i = 0; i < Tile::kTilesM; ++i) {
      store_output_tile(acc[i][j], b, problem, y, row0 + i * 16 + group, col, aligned);
    }
  }
}

// The kernel. ALoader<Tile, Element, kVectorized> is an A loader of conv2d_implicit_gemm_given.cuh:
// constructed once per block, ALoader(problem, x, block_m), then copy(As, k0) fills the A
// tile of stage As with GEMM rows block_m .. block_m + kBlockM - 1 and GEMM k k0 .. k0 +
// kBlockK - 1, zeros outside the problem and in the padding. copy is called for k0 = 0,
// kBlockK, 2 kBlockK, ... in that order, once each, so a loader may keep state from one
// tile to the next.
template <class Tile, class Element, template <class, class, bool> class ALoader, bool kVectorized>
__global__ void __launch_bounds__(Tile::kThreads)
    implicit_gemm_kernel(const ConvProblem problem, const Element* __restrict__ x,
                         const Element* __restrict__ w, const float* __restrict__ bias,
                         float* __restrict__ y) {
  extern __shared__ uint4 dynamic_shared[];  // uint4: 16-byte aligned, for cp.async
  Element* shared = reinterpret_cast<Element*>(dynamic_shared);
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  // This block's tile of the output (block_m, block_n) and this warp's inside it.
  const WarpTileOrigin origin = warp_tile_origin<Tile>(problem.M, problem.N, warp);
  const int block_m = origin.block_m, block_n = origin.block_n;
  const int warp_m = origin.warp_m, warp_n = origin.warp_n;

  float acc[Tile::kTilesM][Tile::kTilesN][4];
  zero_accumulators(acc);

  ALoader<Tile, Element, kVectorized> a_loader(problem, x, block_m);
  auto stage_a = [&](int index) { return shared + index * Tile::kStageHalves; };
  auto stage_b = [&](int index) {
    return shared + index * Tile::kStageHalves + Tile::kBlockM * Tile::kBlockK;
  };
  auto request = [&](int index, int tile_k) {
    a_loader.copy(stage_a(index), tile_k * Tile::kBlockK);
    copy_filter_tile<Tile, kVectorized>(stage_b(index), w, problem, block_n,
                                        tile_k * Tile::kBlockK);
  };

  // m2.07's pipeline: tiles 0 .. kStages - 2 before the loop; at step t, tile t + kStages - 1
  // into the stage step t - 1 read, then tile t multiplied 16 of g at a time. One commit per
  // step, even an empty one, keeps the group count of wait_for_copies right.
  const int num_tiles = (problem.gemm_k + Tile::kBlockK - 1) / Tile::kBlockK;
#pragma unroll
  for (int s = 0; s < Tile::kStages - 1; ++s) {
    if (s < num_tiles) request(s, s);
    commit_copies();
  }
  for (int t = 0; t < num_tiles; ++t) {
    wait_for_copies<Tile::kStages - 2>();  // this thread's copies of tile t have landed ...
    __syncthreads();  // ... and everyone's; and everyone is done with step t - 1's stage
    const int next = t + Tile::kStages - 1;
    if (next < num_tiles) request(next % Tile::kStages, next);
    commit_copies();
    const Element* As = stage_a(t % Tile::kStages);
    const Element* Bs = stage_b(t % Tile::kStages);
#pragma unroll
    for (int k = 0; k < Tile::kBlockK; k += 16) {
      Fragments<Tile> f;
      load_fragments<Tile>(As, Bs, k, warp_m, warp_n, lane, f);
      multiply_fragments<Tile, Element>(f, acc);
    }
  }

  store_outputs<Tile>(acc, problem, bias, y, block_m + warp_m, block_n + warp_n, lane);
}

}  // namespace course::implicit_gemm
