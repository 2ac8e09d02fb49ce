// Exercise m2.05, part 2: a 2D register tile.
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
// course/async_copy.h; the pipeline in the kernel below. Fill in TODO(m2.05d) to (h), then run
// `./course grade m2_05`: the tests, and the check of the machine code (128-bit loads,
// no spills), grade your work.
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
    // TODO(m2.05d), part 1: load this thread's share of the next tile of A into a_staged.
    // For each pass < Tile::kAPasses: the 4 values A[row][k .. k+3] start at a_source[pass].
    //  * When kVectorized: one float4, __ldg(reinterpret_cast<const float4*>(a_source[pass])),
    //    or zeros when the row is outside (!a_row_inside[pass]) or, for tile 0 only
    //    (`first`), when k_first + a_k < 0. (K % 4 == 0, so the 4 values are all at k < 0
    //    or none is.)
    //  * Otherwise: 4 separate __ldg(a_source[pass] + j), each zero when outside (row, or
    //    k_first + a_k + j < 0 on tile 0), packed with make_float4.
    // Then move on by a tile: a_source[pass] += BK.
    (void)first, (void)a_source, (void)a_row_inside;
    for (auto& staged : a_staged) staged = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  };
  auto store_a_tile = [&](int stage) {
    // TODO(m2.05d), part 2: store a_staged into `stage`, transposed. For each pass, the 4
    // values A[row][k + j] (j = 0..3: .x, .y, .z, .w) go to As[k + j][row], which is
    //   a_dest + stage * kAStage + pass * Tile::kARowsPerPass + j * kLdA
    // (four floats down a column of As, kLdA floats apart).
    (void)stage, (void)a_dest;
  };
  // B is copied asynchronously, straight into `stage`: cp.async of 16 bytes (or 4 x 4 when
  // not vectorized), 0 bytes (zeros) outside the matrix. Then the source moves on by a tile.
  auto copy_b_tile = [&](int stage, bool first) {
    const std::uint32_t b_stage = b_dest + stage * (kBStage * 4);
    // TODO(m2.05d), part 3: issue this thread's copies of one tile of B into the stage at
    // b_stage (a shared-memory byte address), then move the source on by one tile.
    //  * For each pass < Tile::kBPasses: the float4 at b_source + pass * b_pass_stride goes
    //    to b_stage + pass * Tile::kBRowsPerPass * BN * 4. When kVectorized, one
    //    copy_16_bytes_async(dest, source, b_bytes[0]); otherwise four
    //    copy_4_bytes_async(dest + j * 4, source + j, b_bytes[j]).
    //  * When `first` is true (tile 0 only), a row with k_first + b_row +
    //    pass * Tile::kBRowsPerPass < 0 lies at k < 0: pass 0 bytes (zeros) and a valid
    //    pointer (B itself) instead.
    //  * Then b_source += b_tile_stride.
    (void)b_stage, (void)first, (void)b_bytes, (void)b_source, (void)b_pass_stride;
    (void)b_tile_stride;
  };

  // --- The thread tile: TM x TN accumulators, and two sets of fragments (the values of A
  // --- and B for one k) so the loads for step k + 1 are in flight while step k computes.
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i) {
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  }
  [[maybe_unused]] float a_frag[2][TM], b_frag[2][TN];
  // The thread's rows are warp_m + lane_m * 4 + {0..3} + i * (kLanesM * 4) for i < TM / 4:
  // groups of 4 contiguous rows, so each group is one float4, and the lanes of a warp read
  // neighbouring float4s. The same for columns.
  const float* const a_frag_base = As + warp_m + lane_m * 4;
  const float* const b_frag_base = Bs + warp_n + lane_n * 4;
  auto load_fragments = [&](int stage, int k, int slot) {
    const float* a = a_frag_base + stage * kAStage + k * kLdA;
    const float* b = b_frag_base + stage * kBStage + k * BN;
    // TODO(m2.05e): read this thread's fragments for step k as float4s:
    //   a_frag[slot][4 * i .. 4 * i + 3] = the float4 at a + i * Tile::kLanesM * 4, i < TM / 4
    //   b_frag[slot][4 * j .. 4 * j + 3] = the float4 at b + j * Tile::kLanesN * 4, j < TN / 4
    // e.g. *reinterpret_cast<float4*>(&a_frag[slot][i * 4]) =
    //          *reinterpret_cast<const float4*>(...);
    (void)a, (void)b, (void)slot;
  };
  // The outer product of the two fragments: TM * TN FMAs from TM + TN loaded values.
  auto multiply_fragments = [&](int slot) {
    // TODO(m2.05f): the outer product: acc[i][j] += a_frag[slot][i] * b_frag[slot][j] for
    // every i < TM, j < TN (fmaf), with #pragma unroll on both loops so that acc, a_frag and
    // b_frag stay in registers.
    (void)slot;
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
  // TODO(m2.05g): write the thread tile. acc[4 * i + r][4 * j + c] (i < TM / 4, r < 4,
  // j < TN / 4, c < 4) belongs to
  //   row    block_m + warp_m + i * Tile::kLanesM * 4 + lane_m * 4 + r
  //   column block_n + warp_n + j * Tile::kLanesN * 4 + lane_n * 4 + c
  // (the same layout load_fragments reads). Write alpha * acc + beta * C where row < M
  // and column < N, and do not read C when beta == 0. When kVectorized (N % 4 == 0 and C
  // 16-byte aligned), the 4 columns c = 0..3 are inside or outside together: write them
  // as one float4. Otherwise check and write each element.
  (void)alpha, (void)beta, (void)C, (void)M, (void)N;
}

}  // namespace register_tiling

bool sgemm_2d_uses_float4(int N, int K, const float* A, const float* B, const float* C) {
  // TODO(m2.05h): allow the float4 path only when it is legal: K % 4 == 0, N % 4 == 0, and
  // A, B and C 16-byte aligned (course::is_aligned(pointer, 16)).
  (void)N, (void)K, (void)A, (void)B, (void)C;
  return false;
}

}  // namespace course::COURSE_IMPL
