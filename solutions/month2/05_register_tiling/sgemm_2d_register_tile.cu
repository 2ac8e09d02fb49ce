// Exercise m2.05, part 2: a 2D register tile. (Reference solution.)
//
// What changed from the 1D register tile (part 1, sgemm_1d_register_tile.cu): each thread
// now owns a TM x TN = 8 x 16 block of C instead of a column of 8, so every value it
// reads from shared memory is used 16 or 8 times instead of once or 8 times. Per step k
// the thread reads 8 values of A and 16 of B (six 128-bit float4 loads) and does 128 fused
// multiply-adds: shared memory traffic is no longer what limits the kernel, the FMA units
// are. On top of that:
//   * the block tile is 128 x 128, computed by 4 warps of 64 x 64; inside a warp the
//     thread tiles are laid out so that a warp reads few distinct shared-memory addresses
//     (broadcasts, no bank conflicts);
//   * A is stored transposed in shared memory (As[k][m]), so a thread's 8 values of A for
//     one k are contiguous and load as two float4s, like B's;
//   * A goes through registers: each thread loads the next tile's A as float4s from global
//     memory while the current tile is computed, and stores them transposed into shared
//     memory after the barrier;
//   * B is copied asynchronously (cp.async, 16 bytes at a time, sm_80 and up), straight
//     from global to shared memory, one tile ahead of the arithmetic;
//   * BK = 16: one __syncthreads per 16 steps of k instead of per 8;
//   * blocks take their tiles of C in groups of 8 tile rows, so that the blocks running at
//     the same time share more of A and B in the L2 cache;
//   * __launch_bounds__(128, 2) lets a thread have up to 255 registers (it needs about 230)
//     while two blocks still fit on a multiprocessor.
// README.md explains each step and what it buys.
//
// The tile shapes and the launcher are given, in
// month2/05_register_tiling/sgemm_2d_register_tile_given.cuh; the copy helpers in
// course/async_copy.h; the pipeline in the kernel below.
#include <cstddef>
#include <cstdint>

#include "register_tiling.h"
#include "sgemm_2d_register_tile_given.cuh"

namespace course::COURSE_IMPL {  // see course/impl.h
namespace register_tiling {

// The tile shape is a TileConfig (sgemm_2d_register_tile_given.cuh), every size a
// compile-time constant:
//   BM x BN   the block tile: the part of C one thread block computes
//   BK        the depth of one step: how many columns of A / rows of B a stage holds
//   WM x WN   the warp tile (kWarpsN warp tiles across the block tile)
//   TM x TN   the thread tile, in registers (a warp's threads as kLanesM x kLanesN)
//   STAGES    how many BK-deep tiles of A and B are in shared memory at once
//   kLdA      the row length of the transposed A tile, As[k][m]: BM + 4 (padding, m2.04)
//   kAPasses, kARowsPerPass; kBPasses, kBRowsPerPass   how the threads split the copies
//             of a tile: one float4 of a row of A or B a thread per pass
// The launcher picks LargeTile (128 x 128, 8 x 16 per thread) or SmallTile (64 x 64).

// ---------------------------------------------------------------------------------------
// The kernel. kVectorized: A and B are read and C written as float4s, which needs
// K % 4 == 0, N % 4 == 0 and 16-byte aligned A, B and C (the launcher checks); otherwise
// 4-byte loads, copies and stores.
// ---------------------------------------------------------------------------------------
template <class Tile, bool kVectorized>
__global__ void __launch_bounds__(Tile::kThreads, Tile::MIN_BLOCKS_PER_SM)
    sgemm_2d_kernel(int M, int N, int K, float alpha, const float* __restrict__ A,
                    const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, TM = Tile::TM, TN = Tile::TN;
  constexpr int STAGES = Tile::STAGES, kLdA = Tile::kLdA;
  constexpr int kAStage = Tile::kAStageFloats, kBStage = Tile::kBStageFloats;

  // Shared memory: STAGES tiles of A (transposed, As[k][m]) and then STAGES tiles of B
  // (Bs[k][n]). Declared as float4 so the compiler knows it is 16-byte aligned.
  __shared__ float4 shared_storage[Tile::kSharedBytes / sizeof(float4)];
  float* const As = reinterpret_cast<float*>(shared_storage);
  float* const Bs = As + STAGES * kAStage;

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  // This warp's tile inside the block tile, and this thread's place inside the warp tile.
  const int warp_m = (warp / Tile::kWarpsN) * Tile::WM;
  const int warp_n = (warp % Tile::kWarpsN) * Tile::WN;
  const int lane_m = lane / Tile::kLanesN, lane_n = lane % Tile::kLanesN;
  // M * N <= INT_MAX (require_gemm_arguments), so the number of tiles fits an int.
  const int tiles_n = static_cast<int>(gridDim.x), tiles_m = static_cast<int>(gridDim.y);
  const int launch_index = static_cast<int>(blockIdx.y) * tiles_n + static_cast<int>(blockIdx.x);
  const TileIndex tile = grouped_tile<Tile::GROUP_M>(launch_index, tiles_m, tiles_n);
  const int block_m = tile.row * BM;
  const int block_n = tile.col * BN;

  // K is cut into BK-deep tiles. When BK does not divide K, the short tile is the *first*
  // one: tile t covers k in [k_first + t * BK, k_first + (t + 1) * BK), with
  // -BK < k_first <= 0, and the k < 0 part of tile 0 is filled with zeros. Every later tile
  // is full, so the main loop needs no bounds checks in k.
  const int num_tiles = (K + BK - 1) / BK;
  const int k_first = K - num_tiles * BK;

  // --- What this thread copies (see TileConfig): A[row][k .. k+3] for kAPasses rows, and
  // --- one float4 of B per pass. Rows past M and columns past N read nothing (zeros).
  const int a_row = tid / (BK / 4), a_k = (tid % (BK / 4)) * 4;
  const int b_row = tid / (BN / 4), b_col = (tid % (BN / 4)) * 4;
  const float* a_source[Tile::kAPasses];
  bool a_row_inside[Tile::kAPasses];
#pragma unroll
  for (int pass = 0; pass < Tile::kAPasses; ++pass) {
    const int row = block_m + a_row + pass * Tile::kARowsPerPass;
    a_row_inside[pass] = row < M;
    a_source[pass] = A + (static_cast<std::ptrdiff_t>(row < M ? row : 0) * K + a_k + k_first);
  }
  const int col = block_n + b_col;
  int b_bytes[4];  // per column when not vectorized; b_bytes[0] covers the float4 otherwise
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    if (kVectorized)
      b_bytes[j] = col < N ? 16 : 0;
    else
      b_bytes[j] = col + j < N ? 4 : 0;
  }
  const float* b_source =
      B + (static_cast<std::ptrdiff_t>(b_row + k_first) * N + (col < N ? col : 0));
  const std::ptrdiff_t b_pass_stride = static_cast<std::ptrdiff_t>(Tile::kBRowsPerPass) * N;
  const std::ptrdiff_t b_tile_stride = static_cast<std::ptrdiff_t>(BK) * N;
  // Where this thread's values land in stage 0: A[row][k] goes to As[k][row], transposed;
  // B's float4 to its own place in Bs (a 32-bit address in the shared window, for cp.async).
  float* const a_dest = As + a_k * kLdA + a_row;
  const std::uint32_t b_dest = shared_address(Bs + b_row * BN + b_col);

  // A goes through registers: load_a_tile reads this thread's part of the next tile of A
  // from global memory into a_staged, and store_a_tile writes it, transposed, into a stage.
  // In the main loop the load is issued before the arithmetic of a tile and the store
  // after it, so the loads have a whole tile's worth of FMAs to arrive. `first` adds the
  // k >= 0 check that only tile 0 needs.
  float4 a_staged[Tile::kAPasses];
  auto load_a_tile = [&](bool first) {
#pragma unroll
    for (int pass = 0; pass < Tile::kAPasses; ++pass) {
      const float* source = a_source[pass];
      if (kVectorized) {
        // K % 4 == 0, so k_first % 4 == 0 as well: the 4 values are all at k < 0 or all at
        // k >= 0, and one 16-byte load (LDG.E.128) reads them.
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
      // A[row][k + j] goes to As[k + j][row]: the 4 values go down a column of As.
      float* dest = a_dest + stage * kAStage + pass * Tile::kARowsPerPass;
      dest[0 * kLdA] = a_staged[pass].x;
      dest[1 * kLdA] = a_staged[pass].y;
      dest[2 * kLdA] = a_staged[pass].z;
      dest[3 * kLdA] = a_staged[pass].w;
    }
  };
  // B is copied asynchronously, straight into `stage`: cp.async of 16 bytes (or 4 x 4 when
  // not vectorized), 0 bytes (zeros) outside the matrix. Then the source moves on by a tile.
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

  // --- The thread tile: TM x TN accumulators, and two sets of fragments (the values of A
  // --- and B for one k) so the loads for step k + 1 are in flight while step k computes.
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i) {
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  }
  float a_frag[2][TM], b_frag[2][TN];
  // The thread's rows are warp_m + lane_m * 4 + {0..3} + i * (kLanesM * 4) for i < TM / 4:
  // groups of 4 contiguous rows, so each group is one float4, and the lanes of a warp read
  // neighbouring float4s. The same for columns.
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
  // The outer product of the two fragments: TM * TN FMAs from TM + TN loaded values.
  auto multiply_fragments = [&](int slot) {
#pragma unroll
    for (int i = 0; i < TM; ++i) {
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a_frag[slot][i], b_frag[slot][j], acc[i][j]);
    }
  };

  // --- The pipeline. Fill stages 0 .. STAGES-1 with tiles 0 .. STAGES-1, one commit group
  // --- of B copies per tile (an empty group past the last tile keeps the counting uniform).
#pragma unroll
  for (int stage = 0; stage < STAGES; ++stage) {
    if (stage < num_tiles) {
      load_a_tile(stage == 0);
      store_a_tile(stage);
      copy_b_tile(stage, stage == 0);
    }
    commit_copies();
  }
  wait_for_copies<STAGES - 1>();  // tile 0's B has landed (for this thread's copies) ...
  __syncthreads();                // ... and for every thread's, and so has its A
  load_fragments(0, 0, 0);

  int stage = 0;  // the stage that holds tile t
  for (int t = 0; t < num_tiles; ++t) {
    // Tile t + STAGES will go into this stage once tile t is read. Its A is loaded into
    // registers now, and travels while the FMAs of tile t run.
    const bool refill = t + STAGES < num_tiles;
    if (refill) load_a_tile(false);
#pragma unroll
    for (int k = 0; k < BK - 1; ++k) {
      load_fragments(stage, k + 1, (k + 1) % 2);  // in flight while ...
      multiply_fragments(k % 2);                  // ... step k computes
    }
    // Every value of tile t is in registers now. Wait for tile t + 1's B, then one barrier
    // both publishes tile t + 1 and tells everyone that `stage` may be refilled.
    wait_for_copies<STAGES - 2>();
    __syncthreads();
    if (refill) {
      store_a_tile(stage);
      copy_b_tile(stage, false);
    }
    commit_copies();
    stage = stage + 1 == STAGES ? 0 : stage + 1;
    load_fragments(stage, 0, 0);  // step 0 of tile t + 1 (unused after the last tile)
    multiply_fragments((BK - 1) % 2);
  }
  wait_for_copies<0>();  // no copy may still be writing when the block exits

  // --- Write the thread tile: C = alpha * acc + beta * C, without reading C when beta == 0.
#pragma unroll
  for (int i = 0; i < TM / 4; ++i) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int row = block_m + warp_m + i * Tile::kLanesM * 4 + lane_m * 4 + r;
      if (row >= M) continue;
#pragma unroll
      for (int j = 0; j < TN / 4; ++j) {
        const int c0 = block_n + warp_n + j * Tile::kLanesN * 4 + lane_n * 4;
        float* out = C + static_cast<std::ptrdiff_t>(row) * N + c0;
        const float* v = &acc[i * 4 + r][j * 4];
        if (kVectorized) {
          if (c0 >= N) continue;  // N % 4 == 0: the float4 is all inside or all outside
          float4 result = make_float4(alpha * v[0], alpha * v[1], alpha * v[2], alpha * v[3]);
          if (beta != 0.0f) {
            const float4 old = *reinterpret_cast<const float4*>(out);
            result.x += beta * old.x;
            result.y += beta * old.y;
            result.z += beta * old.z;
            result.w += beta * old.w;
          }
          *reinterpret_cast<float4*>(out) = result;
        } else {
#pragma unroll
          for (int c = 0; c < 4; ++c) {
            if (c0 + c >= N) continue;
            out[c] = beta == 0.0f ? alpha * v[c] : alpha * v[c] + beta * out[c];
          }
        }
      }
    }
  }
}

}  // namespace register_tiling

bool sgemm_2d_uses_float4(int N, int K, const float* A, const float* B, const float* C) {
  // Every row of A starts K floats after the previous one, every row of B and C N floats:
  // all rows are 16-byte aligned when the base pointers are and K, N are multiples of 4.
  return K % 4 == 0 && N % 4 == 0 && is_aligned(A, 16) && is_aligned(B, 16) && is_aligned(C, 16);
}

}  // namespace course::COURSE_IMPL
