// Given code for exercise m2.09: the float16 split-K kernel (float16 A and B, float32
// accumulation and C). Your skeleton and the reference both include it (gemm_shapes.cu); the
// parts you write are split_k_tiles (task m2.09a), which this kernel calls, and the
// reduction (task m2.09b).
//
// Where it comes from: m2.07's part 3 (month2/07_wmma/mma_gemm.cu): its tile configuration
// and copies (MmaTile, copy_tiles) come from m2.07's given header mma_gemm_pipeline.h,
// included as it is; its fragment loads, products and epilogue (load_fragments,
// multiply_fragments, store_accumulators, the reference answers of m2.07's
// tasks e and g) are repeated below, because m2.07 keeps them in the file you edit there.
// What changed, and only that:
//   * the main loop runs the k-tiles [range.begin, range.end), range =
//     split_k_tiles(blockIdx.z, gridDim.z, k_tiles), and writes C (one split) or its slice of
//     the workspace (several), as the float32 kernel does (sgemm_split_k.h);
//   * odd sizes (K or N not a multiple of 8, or A, B not 16-byte aligned) no longer fall back
//     to copying one half at a time with the loads waited on before the products. When the
//     workspace has room, the launcher first copies A and B into zero-padded, aligned
//     matrices (pad_copy_kernel below: M x Kp and Kp x Np, gemm_shapes.h's
//     padded_row_length) and runs the aligned kernel on them: the kernel's `ldb` is the
//     length of B's rows (Np),
//     while C keeps its N. Without room, the predicated path below loads each 8-half chunk
//     into registers with per-element bounds (zeros outside A and B), one k-tile ahead, and
//     stores it as one 16-byte chunk after the products of the current tile, so the loads
//     travel while the tensor cores work;
//   * two more tiles: a skinny 32 x 128 tile for M <= 64, and 64 x 32 warp tiles for the
//     predicated path, whose staged chunks need registers that 64 x 64 warp tiles do not
//     leave free.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "07_wmma/mma_gemm_pipeline.h"  // m2.07's MmaTile, SharedLayout, tile_offset, copy_tiles
#include "course/async_copy.h"
#include "course/block_loop.h"
#include "course/block_order.h"
#include "course/mma_sync.h"
#include "gemm_shapes.h"

namespace course::COURSE_IMPL::mma_split_k {

using mma_gemm_pipeline::copy_tiles;
using mma_gemm_pipeline::MmaTile;
using mma_gemm_pipeline::SharedLayout;
using mma_gemm_pipeline::tile_offset;

// The four tiles: {square, skinny} x {cp.async pipeline of 4 stages, predicated register
// loads over 2 stages}.
using SquareTile = mma_gemm_pipeline::TunedTile;  // 128 x 128 x 32, warps 64 x 64, 4 stages
using SkinnyTile = MmaTile<32, 128, 32, 32, 32, 4, SharedLayout::swizzled>;
using SquarePredicatedTile = MmaTile<128, 128, 32, 64, 32, 2, SharedLayout::swizzled>;
using SkinnyPredicatedTile = MmaTile<32, 128, 32, 32, 32, 2, SharedLayout::swizzled>;
static_assert(SquareTile::kBlockM == gemm_shapes::kSquareBlockM &&
                  SkinnyTile::kBlockM == gemm_shapes::kSkinnyBlockM &&
                  SquareTile::kBlockN == gemm_shapes::kBlockN &&
                  SkinnyTile::kBlockN == gemm_shapes::kBlockN &&
                  SquareTile::kBlockK == gemm_shapes::k_tile(gemm_shapes::BlockTile::square,
                                                             gemm_shapes::Precision::fp16) &&
                  SquarePredicatedTile::kBlockK == SquareTile::kBlockK,
              "the chooser's tile sizes (gemm_shapes.h) are the kernels' tile sizes");

// m2.07, part 3: a warp's fragments for the 16-deep slice k of a stage, through ldmatrix.
template <class Tile>
struct Fragments {
  std::uint32_t a[Tile::kTilesM][4];
  std::uint32_t b[Tile::kTilesN][2];
};

template <class Tile>
__device__ __forceinline__ void load_fragments(const __half* stage, int k, int warp_m, int warp_n,
                                               int lane, Fragments<Tile>& f) {
  const __half* As = stage;
  const __half* Bs = stage + Tile::kBlockM * Tile::kLdA;
  const int piece_row = lane % 16, piece_col = (lane / 16) * 8;
#pragma unroll
  for (int i = 0; i < Tile::kTilesM; ++i) {
    load_matrix_x4(f.a[i],
                   shared_address(As + tile_offset<Tile::kLayout, Tile::kBlockK, Tile::kLdA>(
                                           warp_m + i * 16 + piece_row, k + piece_col)));
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

// All kBlockK / 16 slices of one stage: kTilesM x kTilesN products per slice.
template <class Tile>
__device__ __forceinline__ void multiply_stage(const __half* stage, int warp_m, int warp_n,
                                               int lane,
                                               float (&acc)[Tile::kTilesM][Tile::kTilesN][4]) {
#pragma unroll
  for (int k = 0; k < Tile::kBlockK; k += 16) {
    Fragments<Tile> f;
    load_fragments<Tile>(stage, k, warp_m, warp_n, lane, f);
#pragma unroll
    for (int i = 0; i < Tile::kTilesM; ++i) {
#pragma unroll
      for (int j = 0; j < Tile::kTilesN; ++j) mma_16x8x16(acc[i][j], f.a[i], f.b[j]);
    }
  }
}

// The predicated copy, in two halves so that the loads can travel while the products of the
// current tile run. load: this thread's 8-half chunks of the A tile (rows block_m.., columns
// k0..) and the B tile (rows k0.., columns block_n..), each element read only when it is
// inside its matrix, zeros elsewhere; any K, N and any alignment (2-byte loads). store: the
// chunks into `stage`, 16 bytes each, where copy_tiles would have put them.
template <class Tile>
struct StagedChunks {
  static constexpr int kChunksA = Tile::kBlockM * Tile::kBlockK / 8;
  static constexpr int kChunksB = Tile::kBlockK * Tile::kBlockN / 8;
  static constexpr int kPerThreadA = (kChunksA + Tile::kThreads - 1) / Tile::kThreads;
  static constexpr int kPerThreadB = (kChunksB + Tile::kThreads - 1) / Tile::kThreads;
  uint4 a[kPerThreadA];
  uint4 b[kPerThreadB];
};

__device__ __forceinline__ uint4 load_chunk_predicated(const __half* __restrict__ row_start,
                                                       int first_col, int cols, bool row_inside) {
  std::uint16_t h[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const bool inside = row_inside && first_col + j < cols;
    h[j] = inside ? __half_as_ushort(__ldg(row_start + first_col + j)) : std::uint16_t{0};
  }
  return make_uint4(
      h[0] | (static_cast<unsigned>(h[1]) << 16), h[2] | (static_cast<unsigned>(h[3]) << 16),
      h[4] | (static_cast<unsigned>(h[5]) << 16), h[6] | (static_cast<unsigned>(h[7]) << 16));
}

template <class Tile>
__device__ __forceinline__ void load_chunks_predicated(StagedChunks<Tile>& staged,
                                                       const __half* __restrict__ A,
                                                       const __half* __restrict__ B, int M, int N,
                                                       int K, int block_m, int block_n, int k0) {
  using Staged = StagedChunks<Tile>;
  constexpr int kRowChunksA = Tile::kBlockK / 8, kRowChunksB = Tile::kBlockN / 8;
  const int tid = static_cast<int>(threadIdx.x);
#pragma unroll
  for (int p = 0; p < Staged::kPerThreadA; ++p) {
    const int i = tid + p * Tile::kThreads;
    const int r = i / kRowChunksA, c = (i % kRowChunksA) * 8;
    const int row = block_m + r;
    const bool use = i < Staged::kChunksA;
    staged.a[p] = load_chunk_predicated(A + static_cast<std::ptrdiff_t>(row < M ? row : 0) * K,
                                        k0 + c, K, use && row < M);
  }
#pragma unroll
  for (int p = 0; p < Staged::kPerThreadB; ++p) {
    const int i = tid + p * Tile::kThreads;
    const int r = i / kRowChunksB, c = (i % kRowChunksB) * 8;
    const int k = k0 + r;
    const bool use = i < Staged::kChunksB;
    staged.b[p] = load_chunk_predicated(B + static_cast<std::ptrdiff_t>(k < K ? k : 0) * N,
                                        block_n + c, N, use && k < K);
  }
}

template <class Tile>
__device__ __forceinline__ void store_chunks(const StagedChunks<Tile>& staged, __half* stage) {
  using Staged = StagedChunks<Tile>;
  constexpr int kRowChunksA = Tile::kBlockK / 8, kRowChunksB = Tile::kBlockN / 8;
  __half* As = stage;
  __half* Bs = stage + Tile::kBlockM * Tile::kLdA;
  const int tid = static_cast<int>(threadIdx.x);
#pragma unroll
  for (int p = 0; p < Staged::kPerThreadA; ++p) {
    const int i = tid + p * Tile::kThreads;
    if (i >= Staged::kChunksA) continue;
    const int r = i / kRowChunksA, c = (i % kRowChunksA) * 8;
    *reinterpret_cast<uint4*>(As + tile_offset<Tile::kLayout, Tile::kBlockK, Tile::kLdA>(r, c)) =
        staged.a[p];
  }
#pragma unroll
  for (int p = 0; p < Staged::kPerThreadB; ++p) {
    const int i = tid + p * Tile::kThreads;
    if (i >= Staged::kChunksB) continue;
    const int r = i / kRowChunksB, c = (i % kRowChunksB) * 8;
    *reinterpret_cast<uint4*>(Bs + tile_offset<Tile::kLayout, Tile::kBlockN, Tile::kLdB>(r, c)) =
        staged.b[p];
  }
}

// 8 halves of a row, read as two aligned 16-byte words instead of eight 2-byte loads: the
// chunk starting at `first` (2-byte aligned only) lies in the 32 bytes from the 16-byte
// boundary at or below it; the funnel shifts take its 16 bytes out of those 32. The caller
// checks that all 32 bytes are inside the matrix. Neighbouring threads read the same words,
// so the second load mostly hits L1.
__device__ __forceinline__ uint4 load_chunk_from_aligned_words(const __half* first) {
  const std::uintptr_t address = reinterpret_cast<std::uintptr_t>(first);
  const auto* window = reinterpret_cast<const uint4*>(address & ~std::uintptr_t{15});
  const uint4 low = __ldg(window), high = __ldg(window + 1);
  const std::uint32_t words[8] = {low.x, low.y, low.z, low.w, high.x, high.y, high.z, high.w};
  const int skip_words = static_cast<int>(address % 16) / 4;         // 0 .. 3
  const unsigned skip_bits = static_cast<unsigned>(address % 4) * 8;  // 0 or 16
  std::uint32_t w[5];  // words[skip_words ..], selected without indexing (no local memory)
#pragma unroll
  for (int i = 0; i < 5; ++i) {
    w[i] = skip_words == 0   ? words[i]
           : skip_words == 1 ? words[i + 1]
           : skip_words == 2 ? words[i + 2]
                             : words[i + 3];
  }
  return make_uint4(__funnelshift_r(w[0], w[1], skip_bits), __funnelshift_r(w[1], w[2], skip_bits),
                    __funnelshift_r(w[2], w[3], skip_bits), __funnelshift_r(w[3], w[4], skip_bits));
}

// Copies a rows x cols float16 matrix (any alignment) into a padded_rows x padded_cols one
// (padded_cols a multiple of 8, `padded` 16-byte aligned) with zeros in the extra rows and
// columns: what lets odd sizes run the aligned kernel. One thread per 8-half chunk of the
// copy, one 16-byte store; a warp takes 32 consecutive chunks of a row (coalesced). A chunk
// wholly inside its row reads two aligned 16-byte words (load_chunk_from_aligned_words)
// where those lie inside the matrix; a chunk at the end of a row, or at either end of the
// matrix, reads element by element. A grid-stride loop over the chunks.
__global__ void pad_copy_kernel(const __half* __restrict__ source, int rows, int cols,
                                __half* __restrict__ padded, int padded_rows, int padded_cols) {
  const int row_chunks = padded_cols / 8;
  const std::size_t chunks = static_cast<std::size_t>(padded_rows) * row_chunks;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::uintptr_t source_begin = reinterpret_cast<std::uintptr_t>(source);
  const std::uintptr_t source_end =
      source_begin + static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols) * 2;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < chunks; i += stride) {
    const int row = static_cast<int>(i / row_chunks);
    const int first_col = static_cast<int>(i % row_chunks) * 8;
    const __half* row_start = source + static_cast<std::ptrdiff_t>(row < rows ? row : 0) * cols;
    const std::uintptr_t window = reinterpret_cast<std::uintptr_t>(row_start + first_col) &
                                  ~std::uintptr_t{15};
    uint4 chunk;
    if (row < rows && first_col + 8 <= cols && window >= source_begin &&
        window + 32 <= source_end) {
      chunk = load_chunk_from_aligned_words(row_start + first_col);
    } else {
      chunk = load_chunk_predicated(row_start, first_col, cols, row < rows);
    }
    reinterpret_cast<uint4*>(padded)[i] = chunk;
  }
}

// kPredicated == false: m2.07's cp.async pipeline (K % 8 == 0, ldb % 8 == 0, 16-byte aligned
// A and B; the launcher checks). true: the predicated register loads, any size and alignment.
// ldb: the length of B's rows in memory: N, or N rounded up to 8 for a padded copy of B (its
// extra columns are zeros; C is M x N either way).
template <class Tile, bool kPredicated>
__global__ void __launch_bounds__(Tile::kThreads, 1)
    mma_split_k_kernel(int M, int N, int K, float alpha, const __half* __restrict__ A,
                       const __half* __restrict__ B, int ldb, float beta, float* __restrict__ C,
                       float* __restrict__ workspace) {
  extern __shared__ uint4 dynamic_shared[];
  __half* shared = reinterpret_cast<__half*>(dynamic_shared);
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const WarpTileOrigin origin = warp_tile_origin<Tile>(M, N, warp);
  const int block_m = origin.block_m, block_n = origin.block_n;
  const int warp_m = origin.warp_m, warp_n = origin.warp_n;

  float acc[Tile::kTilesM][Tile::kTilesN][4];
  zero_accumulators(acc);

  const int k_tiles = (K + Tile::kBlockK - 1) / Tile::kBlockK;
  const gemm_shapes::KTileRange range =
      split_k_tiles(static_cast<int>(blockIdx.z), static_cast<int>(gridDim.z), k_tiles);
  const int first = range.begin;
  const int num_tiles = range.end > range.begin ? range.end - range.begin : 0;
  auto stage = [&](int index) { return shared + index * Tile::kStageHalves; };
  auto k0_of = [&](int t) {
    return (first + t) * Tile::kBlockK;
  };  // t counts from the split's start

  if constexpr (!kPredicated) {
    // m2.07's pipeline, over this split's tiles.
#pragma unroll
    for (int s = 0; s < Tile::kStages - 1; ++s) {
      if (s < num_tiles)
        copy_tiles<Tile, true>(stage(s), A, B, M, ldb, K, block_m, block_n, k0_of(s));
      commit_copies();
    }
    for (int t = 0; t < num_tiles; ++t) {
      wait_for_copies<Tile::kStages - 2>();
      __syncthreads();
      const int next = t + Tile::kStages - 1;
      if (next < num_tiles) {
        copy_tiles<Tile, true>(stage(next % Tile::kStages), A, B, M, ldb, K, block_m, block_n,
                               k0_of(next));
      }
      commit_copies();
      multiply_stage<Tile>(stage(t % Tile::kStages), warp_m, warp_n, lane, acc);
    }
    wait_for_copies<0>();
  } else {
    // Two stages, one k-tile in flight in registers: at step t the chunks of tile t + 1 are
    // loaded before the products of tile t and stored into the other stage after them. That
    // stage was read at step t - 1, which every thread finished before the barrier that
    // ended step t - 1; the barrier that ends step t publishes it for step t + 1.
    static_assert(Tile::kStages == 2, "the predicated path double-buffers: 2 stages");
    StagedChunks<Tile> staged;
    if (num_tiles > 0) {
      load_chunks_predicated<Tile>(staged, A, B, M, ldb, K, block_m, block_n, k0_of(0));
      store_chunks<Tile>(staged, stage(0));
    }
    __syncthreads();
    for (int t = 0; t < num_tiles; ++t) {
      const bool more = t + 1 < num_tiles;
      if (more) {
        load_chunks_predicated<Tile>(staged, A, B, M, ldb, K, block_m, block_n, k0_of(t + 1));
      }
      multiply_stage<Tile>(stage(t % 2), warp_m, warp_n, lane, acc);
      if (more) store_chunks<Tile>(staged, stage((t + 1) % 2));
      __syncthreads();
    }
  }

  // m2.07's epilogue, into C (one split) or, as it is, into this split's workspace slice.
  float* out = C;
  if (gridDim.z > 1) {
    out = workspace + static_cast<std::ptrdiff_t>(blockIdx.z) * M * N;
    alpha = 1.0f;
    beta = 0.0f;
  }
  const int group = lane / 4, pair = (lane % 4) * 2;
  const bool aligned = pairs_aligned(out, N);
  const int row0 = block_m + warp_m, col0 = block_n + warp_n;
#pragma unroll
  for (int i = 0; i < Tile::kTilesM; ++i) {
#pragma unroll
    for (int j = 0; j < Tile::kTilesN; ++j) {
      const int row = row0 + i * 16 + group, col = col0 + j * 8 + pair;
      store_accumulator_pair(out, M, N, row, col, alpha, beta, acc[i][j][0], acc[i][j][1], aligned);
      store_accumulator_pair(out, M, N, row + 8, col, alpha, beta, acc[i][j][2], acc[i][j][3],
                             aligned);
    }
  }
}

}  // namespace course::COURSE_IMPL::mma_split_k
