// Exercise m2.05, part 2: a 2D register tile.
//
// What changed from the 1D register tile (part 1, sgemm_1d_register_tile.cu): each thread
// now owns a TM x TN = 8 x 8 block of C instead of a column of 8, so every value it
// reads from shared memory is used 8 times instead of once or 8 times. Per step k the
// thread reads 8 values of A and 8 of B (four 128-bit float4 loads) and does 64 fused
// multiply-adds: shared memory traffic is no longer what limits the kernel, the FMA units
// are. On top of that:
//   * the block tile is 128 x 128 and its 256 threads are grouped into warp tiles, so that
//     a warp reads few distinct shared-memory addresses (broadcasts, no bank conflicts);
//   * A is stored transposed in shared memory (As[k][m]), so a thread's 8 values of A for
//     one k are contiguous and load as two float4s, like B's;
//   * the copies from global to shared memory are asynchronous (cp.async, sm_80 and up)
//     and run STAGES tiles ahead of the arithmetic, so the FMA units never wait for DRAM;
//   * B is copied with 16-byte (float4) copies; A with 4-byte copies, which transpose it on
//     the way in;
//   * __launch_bounds__(256, 2) caps the registers at 128 per thread so that two blocks
//     (16 warps) fit on a multiprocessor.
// README.md explains each step and what it buys.
//
// The tile shapes, the copy helpers and the pipeline are given. Fill in TODO(m2.05d) to
// (h), then run `./course grade m2_05`: the tests, and the check of the machine code
// (128-bit loads, no spills), grade your work.
#include <cstddef>
#include <cstdint>
#include <string>

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
// ---------------------------------------------------------------------------------------
template <int BM_, int BN_, int BK_, int WM_, int WN_, int TM_, int TN_, int STAGES_,
          int MIN_BLOCKS_PER_SM_>
struct TileConfig {
  static constexpr int BM = BM_, BN = BN_, BK = BK_;
  static constexpr int WM = WM_, WN = WN_, TM = TM_, TN = TN_;
  static constexpr int STAGES = STAGES_, MIN_BLOCKS_PER_SM = MIN_BLOCKS_PER_SM_;

  static constexpr int kWarpsM = BM / WM, kWarpsN = BN / WN;
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int kLanesM = WM / TM, kLanesN = WN / TN;  // a warp's threads, as a grid
  // A is stored transposed, As[k][m]. The rows are padded by 4 floats: the 4-byte copies
  // that transpose A then land in different banks, and every row still starts on a
  // 16-byte boundary, as float4 loads need.
  static constexpr int kLdA = BM + 4;
  static constexpr int kAStageFloats = BK * kLdA, kBStageFloats = BK * BN;
  static constexpr std::size_t kSharedBytes =
      sizeof(float) * STAGES * (kAStageFloats + kBStageFloats);
  // How the threads split the copies: a thread copies 4 consecutive k of one row of A and
  // one float4 (4 consecutive n) of one row of B, as often as it takes to cover the tile.
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
                "BK must be a multiple of 4: a thread copies 4 consecutive k of a row of A");
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
};

// The tile used for large problems, tuned on an H200 (README.md has the measurements):
// 128 x 128 x 8, eight warps of 64 x 32, 8 x 8 per thread, 3 stages (25 KiB of shared
// memory), two blocks per multiprocessor.
using LargeTile = TileConfig<128, 128, 8, 64, 32, 8, 8, 3, 2>;
// For problems whose 128 x 128 grid would leave multiprocessors idle: 64 x 64 x 8, four
// warps of 32 x 32, 4 x 8 per thread. Four times as many blocks for the same C.
using SmallTile = TileConfig<64, 64, 8, 32, 32, 4, 8, 3, 4>;

// ---------------------------------------------------------------------------------------
// Asynchronous copies from global to shared memory (cp.async, sm_80 and newer). The copy
// runs in the background; the thread goes on with its arithmetic. `bytes` is how many
// bytes to really read: 0 writes zeros instead (the zero-padding of edge tiles) without
// touching global memory. On older GPUs the same helpers do an ordinary load and store.
// ---------------------------------------------------------------------------------------
__device__ __forceinline__ void copy_4_bytes_async(std::uint32_t shared_address,
                                                   const float* global, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(shared_address),
               "l"(global), "r"(bytes));
#else
  const float value = bytes != 0 ? __ldg(global) : 0.0f;
  asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(shared_address), "f"(value));
#endif
}

__device__ __forceinline__ void copy_16_bytes_async(std::uint32_t shared_address,
                                                    const float* global, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address),
               "l"(global), "r"(bytes));
#else
  const float4 value = bytes != 0 ? __ldg(reinterpret_cast<const float4*>(global))
                                  : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(shared_address),
               "f"(value.x), "f"(value.y), "f"(value.z), "f"(value.w));
#endif
}

// Closes the group of copies issued since the last commit.
__device__ __forceinline__ void commit_copies() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// Waits until at most `kPending` of this thread's committed groups are still in flight.
// Other threads' copies are only visible after a __syncthreads() that follows.
template <int kPending>
__device__ __forceinline__ void wait_for_copies() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
#endif
}

// ---------------------------------------------------------------------------------------
// The kernel. kVectorized: B is copied and C written as float4s, which needs N % 4 == 0
// and 16-byte aligned B and C (the launcher checks); otherwise 4-byte copies and stores.
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
  const int block_m = static_cast<int>(blockIdx.y) * BM;
  const int block_n = static_cast<int>(blockIdx.x) * BN;

  // K is cut into BK-deep tiles. When BK does not divide K, the short tile is the *first*
  // one: tile t covers k in [k_first + t * BK, k_first + (t + 1) * BK), with
  // -BK < k_first <= 0, and the k < 0 part of tile 0 is filled with zeros. Every later tile
  // is full, so the main loop needs no bounds checks in k.
  const int num_tiles = (K + BK - 1) / BK;
  const int k_first = K - num_tiles * BK;

  // --- What this thread copies (see TileConfig): A[row][k .. k+3] for kAPasses rows, and
  // --- one float4 of B per pass. Rows past M and columns past N read nothing (bytes = 0).
  const int a_row = tid / (BK / 4), a_k = (tid % (BK / 4)) * 4;
  const int b_row = tid / (BN / 4), b_col = (tid % (BN / 4)) * 4;
  const float* a_source[Tile::kAPasses];
  int a_bytes[Tile::kAPasses];
#pragma unroll
  for (int pass = 0; pass < Tile::kAPasses; ++pass) {
    const int row = block_m + a_row + pass * Tile::kARowsPerPass;
    a_bytes[pass] = row < M ? 4 : 0;
    a_source[pass] = A + (static_cast<std::ptrdiff_t>(row < M ? row : 0) * K + a_k + k_first);
  }
  const int col = block_n + b_col;
  int b_bytes[4];  // per column when not vectorized; b_bytes[0] covers the float4 otherwise
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    if (kVectorized) b_bytes[j] = col < N ? 16 : 0;
    else b_bytes[j] = col + j < N ? 4 : 0;
  }
  const float* b_source =
      B + (static_cast<std::ptrdiff_t>(b_row + k_first) * N + (col < N ? col : 0));
  const std::ptrdiff_t b_pass_stride = static_cast<std::ptrdiff_t>(Tile::kBRowsPerPass) * N;
  const std::ptrdiff_t b_tile_stride = static_cast<std::ptrdiff_t>(BK) * N;
  // Shared-memory addresses (32-bit, in the shared window) of this thread's copies in stage 0.
  const auto a_dest = static_cast<std::uint32_t>(__cvta_generic_to_shared(As + a_k * kLdA + a_row));
  const auto b_dest = static_cast<std::uint32_t>(__cvta_generic_to_shared(Bs + b_row * BN + b_col));

  // Issues the copies of the next tile of A and B into `stage` and moves the sources on by
  // one tile. `first` adds the k >= 0 check that only tile 0 needs.
  auto copy_tile = [&](int stage, bool first) {
    const std::uint32_t a_stage = a_dest + stage * (kAStage * 4);
    const std::uint32_t b_stage = b_dest + stage * (kBStage * 4);
    // TODO(m2.05d): issue this thread's copies of one tile into the stage at a_stage /
    // b_stage (shared-memory byte addresses), then move the sources on by one tile.
    //  * A, for each pass < Tile::kAPasses and j < 4: A[row][k + j], which is at
    //    a_source[pass] + j, goes to As[a_k + j][a_row + pass * Tile::kARowsPerPass], which
    //    is a_stage + (j * kLdA + pass * Tile::kARowsPerPass) * 4: transposed on the way in.
    //    copy_4_bytes_async(dest, source, a_bytes[pass]). Then a_source[pass] += BK.
    //  * B, for each pass < Tile::kBPasses: the float4 at b_source + pass * b_pass_stride
    //    goes to b_stage + pass * Tile::kBRowsPerPass * BN * 4. When kVectorized, one
    //    copy_16_bytes_async(dest, source, b_bytes[0]); otherwise four
    //    copy_4_bytes_async(dest + j * 4, source + j, b_bytes[j]). Then b_source += b_tile_stride.
    //  * When `first` is true (tile 0 only), part of the tile may lie at k < 0 (see
    //    k_first): an A copy with k_first + a_k + j < 0, or a B copy with
    //    k_first + b_row + pass * Tile::kBRowsPerPass < 0, must pass 0 bytes (zeros) and a
    //    valid pointer (A or B itself) instead.
    (void)a_stage, (void)b_stage, (void)first, (void)a_source, (void)a_bytes, (void)b_bytes;
    (void)b_source, (void)b_pass_stride, (void)b_tile_stride;
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
    // TODO(m2.05e): read this thread's fragments for step k as float4s:
    //   a_frag[slot][4 * i .. 4 * i + 3] = the float4 at a + i * Tile::kLanesM * 4, i < TM / 4
    //   b_frag[slot][4 * j .. 4 * j + 3] = the float4 at b + j * Tile::kLanesN * 4, j < TN / 4
    // e.g. *reinterpret_cast<float4*>(&a_frag[slot][i * 4]) = *reinterpret_cast<const float4*>(...);
    (void)a, (void)b, (void)slot;
  };
  // The outer product of the two fragments: TM * TN FMAs from TM + TN loaded values.
  auto multiply_fragments = [&](int slot) {
    // TODO(m2.05f): the outer product: acc[i][j] += a_frag[slot][i] * b_frag[slot][j] for
    // every i < TM, j < TN (fmaf), with #pragma unroll on both loops so that acc, a_frag and
    // b_frag stay in registers.
    (void)slot;
  };

  // --- The pipeline. Start copying tiles 0 .. STAGES-1, one commit group per tile (an
  // --- empty group past the last tile keeps the counting uniform).
  if (num_tiles > 0) copy_tile(0, true);
  commit_copies();
#pragma unroll
  for (int stage = 1; stage < STAGES; ++stage) {
    if (stage < num_tiles) copy_tile(stage, false);
    commit_copies();
  }
  wait_for_copies<STAGES - 1>();  // tile 0 has landed (for this thread's copies) ...
  __syncthreads();                // ... and for every thread's
  load_fragments(0, 0, 0);

  int stage = 0;  // the stage that holds tile t
  for (int t = 0; t < num_tiles; ++t) {
#pragma unroll
    for (int k = 0; k < BK - 1; ++k) {
      load_fragments(stage, k + 1, (k + 1) % 2);  // in flight while ...
      multiply_fragments(k % 2);                  // ... step k computes
    }
    // Every value of tile t is in registers now. Wait for tile t + 1, then one barrier
    // both publishes it and tells everyone that `stage` has been read and may be refilled.
    wait_for_copies<STAGES - 2>();
    __syncthreads();
    if (t + STAGES < num_tiles) copy_tile(stage, false);  // tile t + STAGES
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

bool is_aligned_16(const void* pointer) {
  return reinterpret_cast<std::uintptr_t>(pointer) % 16 == 0;
}

// Launches one tile configuration over the whole of C.
template <class Tile>
void launch_2d(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
               float* C, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(ceil_div(N, Tile::BN)),
                  static_cast<unsigned>(ceil_div(M, Tile::BM)));
  require(grid.y <= 65535u, "sgemm_2d_register_tile",
          "M = " + std::to_string(M) + " needs more than 65535 blocks in y, the grid's limit");
  // float4 copies of B and float4 stores to C need every row of B and C to start on a
  // 16-byte boundary: N % 4 == 0 and aligned base pointers. (A is copied 4 bytes at a time
  // and may have any K.) Otherwise the same kernel runs with 4-byte copies and stores.
  // TODO(m2.05h): allow the float4 path only when it is legal: N % 4 == 0 and B and C
  // 16-byte aligned (is_aligned_16).
  const bool vectorized = false;
  (void)is_aligned_16;
  if (vectorized) {
    sgemm_2d_kernel<Tile, true><<<grid, Tile::kThreads, 0, stream>>>(M, N, K, alpha, A, B, beta, C);
  } else {
    sgemm_2d_kernel<Tile, false><<<grid, Tile::kThreads, 0, stream>>>(M, N, K, alpha, A, B, beta, C);
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
  const long long large_tiles = static_cast<long long>(ceil_div(M, LargeTile::BM)) *
                                ceil_div(N, LargeTile::BN);
  if (large_tiles >= multiprocessors) {
    launch_2d<LargeTile>(M, N, K, alpha, A, B, beta, C, stream);
  } else {
    launch_2d<SmallTile>(M, N, K, alpha, A, B, beta, C, stream);
  }
}

}  // namespace course::COURSE_IMPL
