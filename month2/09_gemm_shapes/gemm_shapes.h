// The interface of exercise m2.09. Your skeleton (month2/09_gemm_shapes/gemm_shapes.cu and
// shape_chooser.cu) and the reference (the same files under solutions/) both implement it.
//
// Every GEMM here computes row-major C[M x N] = alpha * A[M x K] * B[K x N] + beta * C with
// the month-2 conventions (course/gemm.h): float32 C and accumulation, A and B in float32
// (sgemm_*, m2.05's register-tiled main loop) or float16 (hgemm_*, m2.07's mma.sync main
// loop, or on a Hopper GPU m2.08's wgmma one); when beta == 0, C is only written, never
// read; any M, N, K >= 0 and any alignment of the pointers. They throw
// std::invalid_argument for bad arguments (the message says which), course::UnsupportedDevice
// where this GPU cannot run the kernel (shared memory; the wide tile off a Hopper), and
// course::CudaError if a launch fails.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstddef>
#include <vector>

#include "course/gemm.h"  // GemmShape
#include "course/impl.h"
#include "course/launch.h"  // is_aligned

namespace course::gemm_shapes {

// A and B's element type; C and the accumulation are float32 in both.
enum class Precision { fp32, fp16 };

// The block tile: the part of C one thread block computes.
//   square  128 x 128: the most reuse of every loaded value (m2.05's and m2.07's tile).
//   skinny   32 x 128: for M <= 64, where a 128-row tile would be mostly zeros: a block
//                      multiplies 32 rows, not 128 (for M = 33 .. 64, two blocks per column
//                      of tiles instead of one; the blocks for the SMs come from split-K).
//   wide    128 x 256: float16 on a Hopper GPU (H100, H200) only: m2.08's wgmma + TMA main
//                      loop (wgmma_split_k.h), which mma.sync cannot keep up with there. Its
//                      4 stages of 48 KiB fill a multiprocessor's shared memory: one block
//                      per SM.
//   half_wide 128 x 128: the same kernel at half the width, for shapes with too few wide
//                      tiles to fill the GPU (a batch of 128 rows: 16 wide tiles of 4096
//                      columns, 32 half-wide ones). One block per SM too (its registers).
//   narrow  128 x 64:  the same kernel at a quarter of the width (64 narrow tiles of 4096
//                      columns), with a deeper pipeline: 8 stages of 24 KiB.
enum class BlockTile { square, skinny, wide, half_wide, narrow };

// The tiles of m2.08's wgmma kernel (a Hopper built with sm_90a only), widest first: the one
// list the sweep and the tests go through.
inline constexpr BlockTile kWgmmaTiles[] = {BlockTile::wide, BlockTile::half_wide,
                                            BlockTile::narrow};
__host__ __device__ constexpr bool is_wgmma_tile(BlockTile tile) {
  return tile == BlockTile::wide || tile == BlockTile::half_wide || tile == BlockTile::narrow;
}

// The tile's name, for messages and benchmark rows.
inline const char* tile_name(BlockTile tile) {
  switch (tile) {
    case BlockTile::square: return "square";
    case BlockTile::skinny: return "skinny";
    case BlockTile::wide: return "wide";
    case BlockTile::half_wide: return "half_wide";
    case BlockTile::narrow: return "narrow";
  }
  return "unknown";
}

inline constexpr int kSquareBlockM = 128;
inline constexpr int kSkinnyBlockM = 32;
inline constexpr int kWideBlockM = 128;
inline constexpr int kBlockN = 128;           // the square and skinny tiles
inline constexpr int kWideBlockN = 256;       // the wide tile
inline constexpr int kHalfWideBlockN = 128;   // the half-wide tile
inline constexpr int kNarrowBlockN = 64;      // the narrow tile
inline constexpr int kSkinnyMaxM = 64;        // the chooser takes the skinny tile up to this M
inline constexpr int kMaxSplits = 16;         // the chooser never splits K more often
inline constexpr int kMaxPlannedSplits = 64;  // the planned launchers accept up to this
// The wgmma tiles' splits of one tile run as a thread block cluster up to this many, and add
// their partials there (wgmma_split_k.h): no workspace, no second kernel.
inline constexpr int kMaxClusterSplits = 8;

// What the chooser knows of the wgmma tiles on a GPU (wgmma_capacity_here() asks the current
// one): whether they run there at all, and how many clusters of s blocks each run at once
// there, for s = 2 .. kMaxClusterSplits splits of one tile. The blocks of a cluster must
// share one group of SMs (a GPC), so fewer fit than SMs / s: on the H200's 132 SMs, 66
// clusters of 2, 39 of 3, 30 of 4, 22 of 5, 17 of 6, 15 of 7 and 15 of 8. A plan whose
// clusters do not all fit at once sends its partials through the workspace and a second
// kernel instead, which the sweep measured slower (README.md, "The chooser").
struct WgmmaCapacity {
  bool runs = false;
  int concurrent_clusters[kMaxClusterSplits + 1] = {};  // [s]; entries 0 and 1 unused
};

// The share of one wave (blocks per wave = SMs, one wgmma block each) a plan of a wgmma tile
// must fill, in percent, for the chooser to keep that tile rather than try the next narrower
// one. A narrower tile reuses each loaded value less (a 128 x 64 tile reads B's 64 columns
// for 128 rows, a 128 x 256 one for the same rows and four times the columns), so it pays
// only where it fills SMs that would be idle: measured with the sweep on the H200.
inline constexpr int kMinWaveFillPercent = 75;
// The workspace sgemm_shapes and hgemm_shapes plan their partials in: 64 MiB per device.
inline constexpr std::size_t kSharedWorkspaceFloats = std::size_t{16} << 20;

__host__ __device__ constexpr int block_m(BlockTile tile) {
  return tile == BlockTile::skinny ? kSkinnyBlockM
                                   : (is_wgmma_tile(tile) ? kWideBlockM : kSquareBlockM);
}
__host__ __device__ constexpr int block_n(BlockTile tile) {
  switch (tile) {
    case BlockTile::wide: return kWideBlockN;
    case BlockTile::half_wide: return kHalfWideBlockN;
    case BlockTile::narrow: return kNarrowBlockN;
    default: return kBlockN;
  }
}

// The depth of one k-tile, the unit a split's K range is counted in: 16 for m2.05's float32
// main loop, 32 for m2.07's float16 one, 64 for m2.08's wgmma one (the wide tile: 64 halves
// are one 128-byte row of the TMA's swizzled tiles; the half-wide and narrow tiles too).
__host__ __device__ constexpr int k_tile(BlockTile tile, Precision precision) {
  return precision == Precision::fp32 ? 16 : (is_wgmma_tile(tile) ? 64 : 32);
}

// True for a tile of which one block fills a multiprocessor (the wgmma ones: 384 threads that
// claim 232 registers each in the consumers, and 192 KiB of stages): there, a grid of one
// block more than the SMs runs in two waves, the second with one block. The square and
// skinny tiles fit two or more blocks per SM, so a few blocks over the SMs still run at once.
__host__ __device__ constexpr bool tile_fills_multiprocessor(BlockTile tile) {
  return is_wgmma_tile(tile);
}

// The blocks of a tile that one multiprocessor runs at the same time, as the chooser counts
// them: one block of a wgmma tile; two square or skinny ones (a square block is 128 threads
// of about 240 registers, 30,000 of an SM's 65,536, and a skinny one less), so a GPU with 132
// SMs runs 264 of those in one wave.
__host__ __device__ constexpr int blocks_per_multiprocessor(BlockTile tile) {
  return tile_fills_multiprocessor(tile) ? 1 : 2;
}

// The fewest k-tiles a split runs: a shorter split spends its time filling and draining the
// pipeline and writing its partial C. 2 for the square and skinny tiles (32 deep in float32,
// 64 in float16), 16 for the wgmma ones (1024 deep: their pipeline of 192 KiB takes longer to
// fill, and each of their partials is a 128 x 256, 128 x 128 or 128 x 64 block of floats to
// write and add again). Both are measured: m2_09_gemm_shapes_sweep's rows on the H200
// (README.md, "The chooser").
__host__ __device__ constexpr int min_k_tiles_per_split(BlockTile tile) {
  return is_wgmma_tile(tile) ? 16 : 2;
}

// How to run one GEMM: which block tile, and into how many ranges of K (splits) the grid's z
// dimension cuts the work. splits == 1 writes C directly; splits > 1 writes one float32
// partial C per split into a workspace [splits][M][N], then a second kernel adds the
// partials in a fixed order (split 0, 1, 2, ...) and applies alpha and beta. (The wide tile
// with 2 .. kMaxClusterSplits splits adds them in the same order without the workspace.)
struct GemmPlan {
  BlockTile tile = BlockTile::square;
  int splits = 1;
};

// The floats of workspace a plan needs for an M x N C: splits * M * N when splits > 1, else 0.
inline std::size_t workspace_floats(const GemmPlan& plan, int M, int N) {
  if (plan.splits <= 1) return 0;
  return static_cast<std::size_t>(plan.splits) * static_cast<std::size_t>(M) *
         static_cast<std::size_t>(N);
}

// float16 only. The floats of workspace for zero-padded copies of A and B: the 16-byte
// cp.async copies of the mma.sync kernel and the TMA copies of the wgmma one need every row
// of A and B to start on a 16-byte boundary, which K or N not a multiple of 8, or a
// misaligned A or B, do not give. Then hgemm_planned, given this much workspace beyond the
// partials, copies A into an M x Kp matrix and B into a Kp x Np one (Kp, Np: K and N
// padded by padded_row_length; zeros in the extra rows and columns, whose products add
// nothing) and runs the aligned kernel on the copies. The extra 31 floats let the copies
// start on a 128-byte boundary wherever the workspace starts.
//
// padded_row_length: rounded up to 8 halves (16 bytes), and rows of 512 halves or more to 64
// (a whole 128-byte line, at most 1/8 more). A row pitch that is a multiple of 16 bytes but
// not of 128 starts most rows partway into a 128-byte line, and such a row of a tile the
// kernels load touches one more 32-byte sector (cp.async) or one more line (the TMA) than
// the same row of an aligned matrix (README.md, "Odd sizes on the tensor cores").
inline constexpr int kMaxPaddedLength = INT_MAX - 64;  // longer rows are never copied
inline int padded_row_length(int length) {
  const int to_16_bytes = (length + 7) / 8 * 8;
  return to_16_bytes < 512 ? to_16_bytes : (length + 63) / 64 * 64;
}
inline std::size_t padded_copies_floats(int M, int N, int K) {
  if (M <= 0 || N <= 0 || K <= 0) return 0;
  const std::size_t kp = static_cast<std::size_t>(padded_row_length(K));
  const std::size_t np = static_cast<std::size_t>(padded_row_length(N));
  return (static_cast<std::size_t>(M) * kp + kp * np) / 2 + 31;  // 2 halves per float
}

// float16 only. True when hgemm_planned can read A [M x K] and B [K x N] where they are,
// with 16-byte copies of 8 halves: every row starts on a 16-byte boundary (K and N multiples
// of 8, A and B 16-byte aligned), or K == 0 (nothing to read). Otherwise it needs room for
// the padded copies above, or falls back to element-by-element loads.
inline bool half_rows_aligned(const void* matrix, int row_length) {
  return row_length % 8 == 0 && is_aligned(matrix, 16);
}
inline bool half_operands_aligned(int N, int K, const void* A, const void* B) {
  return K == 0 || (half_rows_aligned(A, K) && half_rows_aligned(B, N));
}

// The wgmma tiles only: whether B's rows start in the middle of a 32-byte sector every other
// row: rows 16 bytes apart but not 32 (a pitch of 8 mod 16 halves), or B 16 but not 32-byte
// aligned. The TMA reads each 128-byte row of a box in 32-byte sectors, so such rows cost it
// five sectors for four sectors' worth of data. Where two rows of tiles or more read B, the
// launcher then runs the tiles in pairs, one above the other, that load their common B tile
// once for both (wgmma_split_k.h, Cluster::row_pairs): each SM's TMA reads half of it.
// Measured on the H200 with the sweep (m2_09_gemm_shapes_sweep --shapes=...,
// --benchmark_filter=wide_splits1): 3000 x 5000 x 2000 ran faster in pairs than with every
// tile alone, and faster than with B first copied to whole lines (one read and one write of
// B) and read from there. Pairs do not pay where B's rows are whole sectors (3072 x 5120 x
// 2000, 2048^3: slower in pairs): the two blocks of a pair wait for each other at every stage.
inline bool half_rows_sector_aligned(const void* matrix, int row_length) {
  return row_length % 16 == 0 && is_aligned(matrix, 32);
}
inline bool tiles_pair_up_for_b(BlockTile tile, int M, const void* B, int ldb) {
  const int rows_of_tiles = (M + block_m(tile) - 1) / block_m(tile);
  return is_wgmma_tile(tile) && rows_of_tiles >= 2 && half_rows_aligned(B, ldb) &&
         !half_rows_sector_aligned(B, ldb);
}

// The workspace with which hgemm_planned runs `plan` on its fast path: the partials, plus room
// for the padded copies when A or B are not aligned and the copies' Kp and Np fit in int.
inline std::size_t hgemm_workspace_floats(const GemmPlan& plan, int M, int N, int K, const void* A,
                                          const void* B) {
  const bool copies =
      !half_operands_aligned(N, K, A, B) && K <= kMaxPaddedLength && N <= kMaxPaddedLength;
  return workspace_floats(plan, M, N) + (copies ? padded_copies_floats(M, N, K) : 0);
}

// The shapes the benchmark (bench_gemm_shapes.cu) and the chooser's sweep
// (sweep_gemm_plans.cu) time: the square the course is tuned on, an LLM's MLP projection, a
// long K on a small C, a batch of 128 and of 16 rows, a small square, a large non-square, and
// odd sizes. (m3.01's benchmark times the same list from Python.)
inline const std::vector<GemmShape>& benchmark_shapes() {
  static const std::vector<GemmShape> shapes = {
      {4096, 4096, 4096}, {4096, 11008, 4096}, {1024, 1024, 8192}, {128, 4096, 4096},
      {16, 4096, 4096},   {512, 512, 512},     {3000, 5000, 2000}, {4093, 4099, 4097},
  };
  return shapes;
}

// The k-tiles [begin, end) one split runs.
struct KTileRange {
  int begin = 0, end = 0;
};

}  // namespace course::gemm_shapes

COURSE_DECLARE_IMPLS(
    // Yours, in gemm_shapes.cu (m2.09a): the k-tiles that split `split` of `splits` runs when K
    // is cut into `k_tiles` k-tiles. Host and device code: the kernels call it with
    // blockIdx.z, the tests on the CPU.
    __host__ __device__ gemm_shapes::KTileRange split_k_tiles(int split, int splits, int k_tiles);

    // Yours, in shape_chooser.cu (m2.09c): the plan for an M x N x K GEMM in `precision` on a GPU
    // with `multiprocessors` SMs, when `workspace_floats` floats of workspace are available.
    // `wgmma`: whether the wgmma tiles run on that GPU, and how many of their clusters fit
    // (pass wgmma_capacity_here() for the current one, WgmmaCapacity{} for none); the given
    // part of the chooser then takes the wide tile for float16 unless M is small, and your
    // part may narrow it. Host code, no GPU needed: the tests check its decisions on a table
    // of shapes.
    gemm_shapes::GemmPlan choose_gemm_plan(int M, int N, int K, gemm_shapes::Precision precision,
                                           int multiprocessors, std::size_t workspace_floats,
                                           const gemm_shapes::WgmmaCapacity& wgmma);

    // Given (wgmma_split_k.h): whether hgemm_planned can run the wgmma tiles (wide, half_wide,
    // narrow) on the current GPU:
    // a Hopper (compute capability 9.0, as course/requirements.h sees it, so
    // COURSE_COMPUTE_CAPABILITY=8.0 says no), and this library built with sm_90a machine code
    // (CMAKE_CUDA_ARCHITECTURES with 90 in it), which the runtime loaded. Needs a GPU.
    bool wide_tile_runs_here();

    // Given (gemm_shapes_given.cuh): the current GPU's WgmmaCapacity: runs =
    // wide_tile_runs_here(), and where it runs, cudaOccupancyMaxActiveClusters for the wgmma
    // kernel in clusters of 2 .. kMaxClusterSplits blocks (asked once per device, then kept).
    // Needs a GPU.
    gemm_shapes::WgmmaCapacity wgmma_capacity_here();

    // One GEMM run as `plan` says. `workspace` (device memory, workspace_floats(plan, M, N)
    // floats or more; may be null when splits == 1) holds the partial products. plan.splits
    // must be 1 .. kMaxPlannedSplits. hgemm_planned, when A or B cannot be read in 16-byte
    // chunks (K or N not a multiple of 8, A or B not 16-byte aligned): with
    // padded_copies_floats(M, N, K) more floats of workspace it copies them, zero-padded,
    // after the partials and runs the aligned kernel; with less, it loads them element by
    // element (the predicated kernel, slower; for the wgmma tiles, whose TMA copies cannot, the
    // square tile's). The wgmma tiles (wide, half_wide, narrow) are float16's only:
    // sgemm_planned rejects them, and hgemm_planned throws course::UnsupportedDevice where
    // wide_tile_runs_here() is false.
    // The same arguments always take the same path.
    void sgemm_planned(const gemm_shapes::GemmPlan& plan, int M, int N, int K, float alpha,
                       const float* A, const float* B, float beta, float* C, float* workspace,
                       std::size_t workspace_floats, cudaStream_t stream = nullptr);
    void hgemm_planned(const gemm_shapes::GemmPlan& plan, int M, int N, int K, float alpha,
                       const __half* A, const __half* B, float beta, float* C, float* workspace,
                       std::size_t workspace_floats, cudaStream_t stream = nullptr);

    // The chooser's pick for this GPU, with a workspace of the process's own (64 MiB per
    // device, allocated at the first call that needs one and kept; hgemm_shapes pads odd
    // sizes there first when the copies fit, see hgemm_planned; calls that run at the
    // same time on different streams would share it: use the planned launchers with your
    // own workspace there). The signature of every month-2 GEMM (course/gemm.h).
    void sgemm_shapes(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                      float* C, cudaStream_t stream = nullptr);
    void hgemm_shapes(int M, int N, int K, float alpha, const __half* A, const __half* B,
                      float beta, float* C, cudaStream_t stream = nullptr);)
