// Given code for exercise m2.09: the float16 split-K kernel of the wide tile (128 x 256), the
// half-wide one (128 x 128) and the narrow one (128 x 64), for Hopper GPUs (H100, H200). Your
// skeleton and the reference both include it (gemm_shapes.cu); the parts you write are
// split_k_tiles (task m2.09a), which this kernel calls, and the reduction (task m2.09b), which
// adds its partials.
//
// Where it comes from: m2.08's hopper_gemm_kernel (month2/08_hopper_gemm/hopper_gemm.cu):
// the same 128 x 256 x 64 block tile, 4 stages that the TMA fills, one producer warpgroup
// and two consumer warpgroups that multiply with wgmma, on the hardware wrappers of
// course/hopper.h, included as they are. Its producer and consumer loops, the reference
// answers of m2.08's tasks a and b, are repeated below, because m2.08 keeps them in the file
// you edit there. What changed, and only that:
//   * both loops run the k-tiles [range.begin, range.end) of this block's split, range =
//     split_k_tiles(blockIdx.z, gridDim.z, k_tiles), counted in this kernel's 64-deep
//     k-tiles: the producer asks the TMA for k-tile t at column t * 64 of A and row t * 64 of
//     B, and a stage's rounds count from the split's first k-tile;
//   * the epilogue writes C (one split) or, as it is, this split's slice of the workspace
//     (several), as mma_split_k.h does;
//   * or, for 2 .. kMaxClusterSplits splits, the splits of one tile run as one thread block
//     cluster (a Hopper feature: blocks that run at the same time on nearby SMs and can read
//     each other's shared memory) and add their partials there, with no workspace and no
//     second kernel (reduce_in_cluster below);
//   * the block tile's width is a template parameter: 256, 128 for the half-wide tile, whose
//     consumers each multiply 64 x 128 (wgmma's m64n128k16) from a B tile of two boxes, or 64
//     for the narrow one (m64n64k16, one box). A narrower stage is smaller, so the same shared
//     memory holds more of them: 4 stages of 48 KiB, 6 of 32 KiB, 8 of 24 KiB. The deeper
//     pipeline keeps the narrow tile's smaller products fed;
//   * or, where B's rows start mid-sector (gemm_shapes.h, tiles_pair_up_for_b), two tiles
//     one above the other (rows 2p and 2p + 1 of tiles, the same columns) run as a cluster
//     of 2 blocks that share their B tile: each block's TMA reads half of it (32 of the 64
//     rows of K) and delivers it to both ("multicast"). A stage is refilled only when the
//     consumers of both blocks are done with it, so each consumer warp arrives on the
//     "empty" barriers of both;
//   * float16 only (m2.08 has bfloat16 too), and the grid is (tiles, 1, splits).
// The TMA reads rows whose length is a multiple of 16 bytes from 16-byte aligned addresses:
// the launcher (gemm_shapes_given.cuh) hands it A and B where they are when they allow that,
// else their zero-padded copies. wgmma exists only in machine code built for sm_90a:
// CMakeLists.txt adds it where CMAKE_CUDA_ARCHITECTURES has a 90, and sm90a_code_loaded()
// below tells whether the runtime took it on this GPU.
#pragma once

#include <cuda.h>  // CUtensorMap
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "course/block_order.h"
#include "course/cuda_check.h"
#include "course/hopper.h"
#include "course/launch.h"
#include "course/mma_sync.h"  // store_accumulator_pair, pairs_aligned
#include "course/requirements.h"
#include "gemm_shapes.h"

namespace course::COURSE_IMPL::wgmma_split_k {

namespace hw = course::hopper;

// m2.08's tile. The block tile's width, kBlockN, is a template parameter: 256 (the wide tile,
// m2.08's), 128 or 64 (the half-wide and narrow tiles, for shapes with too few wide tiles to
// fill the GPU: each consumer warpgroup multiplies 64 x 128 or 64 x 64 instead of 64 x 256).
constexpr int kBlockM = 128, kBlockK = 64;  // 64 halves: one 128-byte row
// The stages of every width together: m2.08's 4 stages of the wide tile's 48 KiB.
constexpr int kStagesBytes = 192 * 1024;
constexpr int kConsumers = 2;  // warpgroups that multiply, 64 rows each
constexpr int kThreads = 128 * (1 + kConsumers);
constexpr int kBoxN = 64;  // B arrives in boxes of 64 columns (128 bytes)
constexpr int kATileBytes = kBlockM * kBlockK * 2;  // 16 KiB
constexpr int kBBoxBytes = kBlockK * kBoxN * 2;     // 8 KiB
constexpr int kGroupRows = 16;                      // course/block_order.h
// The splits of one tile the launcher runs as a cluster: at most 8 blocks, the cluster size
// every Hopper GPU guarantees (more needs an opt-in, and fewer clusters fit at once).
constexpr int kMaxClusterSplits = gemm_shapes::kMaxClusterSplits;
static_assert(kMaxClusterSplits <= 8, "8 blocks is the largest portable cluster");

template <int kBlockN>
struct Tile {
  static_assert(kBlockN == 256 || kBlockN == 128 || kBlockN == 64,
                "the wide (256), half-wide (128) or narrow (64) tile");
  static constexpr int kBTileBytes = kBBoxBytes * (kBlockN / kBoxN);  // 32, 16 or 8 KiB
  static constexpr int kStageBytes = kATileBytes + kBTileBytes;       // 48, 32 or 24 KiB
  static constexpr int kStages = kStagesBytes / kStageBytes;          // 4, 6 or 8
  // The tiles, 1024-byte aligned (the 128-byte swizzle repeats every 8 rows), then the
  // barriers.
  static constexpr int kSharedBytes = kStages * kStageBytes + 2 * kStages * 8 + 1024;
  // A partial in shared memory: 128 rows of kBlockN floats, rows kBlockN + 8 floats apart.
  // The 8 extra floats (32 bytes) shift each row by 8 banks, so the 8 rows of one warp's
  // 8-byte stores hit every bank twice, the fewest passes for 256 bytes, instead of one 8-bank
  // group 8 times.
  static constexpr int kPartialPitch = kBlockN + 8;
  static_assert(kBlockM * kPartialPitch * 4 <= kStages * kStageBytes,
                "a block's partial must fit in the shared memory its stages free");
  static_assert(kSharedBytes <= 227 * 1024, "the stages must fit in 227 KiB of shared memory");
};
// The chooser's tiles (gemm_shapes.h) are this kernel's.
template <gemm_shapes::BlockTile kTile, int kBlockN>
constexpr bool is_this_kernels_tile() {
  return gemm_shapes::is_wgmma_tile(kTile) && gemm_shapes::block_m(kTile) == kBlockM &&
         gemm_shapes::block_n(kTile) == kBlockN &&
         gemm_shapes::k_tile(kTile, gemm_shapes::Precision::fp16) == kBlockK;
}
static_assert(is_this_kernels_tile<gemm_shapes::BlockTile::wide, 256>() &&
                  is_this_kernels_tile<gemm_shapes::BlockTile::half_wide, 128>() &&
                  is_this_kernels_tile<gemm_shapes::BlockTile::narrow, 64>(),
              "the chooser's wgmma tiles (gemm_shapes.h) are this kernel's tiles");

struct TileOrigin {
  int row, col;  // the block tile's first row and column in C
};

// How the blocks of one launch work together (the kernel's second template parameter).
enum class Cluster {
  none,       // each block on its own
  splits,     // clusters of 1 x 1 x splits: a tile's splits add their partials there
  row_pairs,  // clusters of 2 x 1 x 1: two tiles, one above the other, share their B tile
};
constexpr int kPairBlocks = 2;
constexpr std::uint16_t kBothBlocks = 0b11;          // the multicast's receivers: ranks 0 and 1
constexpr int kHalfBoxRows = kBlockK / kPairBlocks;  // each block of a pair reads 32 rows of K

#if defined(COURSE_HAVE_WGMMA)
// The epilogue of a tile whose splits run as one cluster (cluster dimensions 1 x 1 x splits:
// block rank s of the cluster is split s), called by the consumer threads of every block;
// the producer's threads meet them at the two cluster_syncs (the kernel).
//  1. (Before, in the kernel.) Each block has written its partial, 128 x kBlockN floats, into
//     its own shared memory, which its stages no longer need once every wgmma has read them.
//  2. cluster_sync(): every block's partial is written and visible to the whole cluster.
//  3. Block s adds rows [s * 128 / splits, (s + 1) * 128 / splits) of the tile: for each
//     element, the partials of split 0, 1, 2, ... read from each block's shared memory
//     (cluster_shared_address gives the address of the same variable in another block of the
//     cluster), in that order, in float32, from 0: the additions of reduce_splits_kernel, in
//     the same order, so the same bits on every run. Then alpha and beta, and C is written
//     with 16-byte stores along rows, which coalesce.
//  4. cluster_sync() again: no block may finish, and free its shared memory, while another
//     still reads its partial.
template <int kBlockN>
__device__ __forceinline__ void reduce_in_cluster(unsigned char* shared,
                                                  TileOrigin tile, int M, int N, float alpha,
                                                  float beta, float* __restrict__ C) {
  constexpr int kPartialPitch = Tile<kBlockN>::kPartialPitch;
  auto* partial = reinterpret_cast<float*>(shared);
  const int thread = static_cast<int>(threadIdx.x) - 128;  // consumers: 0 .. 255
  hw::cluster_sync();
  const int splits = hw::cluster_blocks();
  const int split = hw::cluster_block_rank();
  const int first_row = split * kBlockM / splits, end_row = (split + 1) * kBlockM / splits;
  const bool vector_stores = N % 4 == 0 && reinterpret_cast<std::uintptr_t>(C) % 16 == 0;
  // Every split's partial, as this block reaches it: the same variable in block s of the
  // cluster.
  std::uint32_t partials[kMaxClusterSplits];
#pragma unroll
  for (int s = 0; s < kMaxClusterSplits; ++s)
    partials[s] = hw::cluster_shared_address(partial, s < splits ? s : 0);
  constexpr int kQuads = kBlockN / 4;  // 4 floats each
  for (int i = first_row * kQuads + thread; i < end_row * kQuads; i += 256) {
    const int r = i / kQuads, c = (i % kQuads) * 4;
    // All the loads first, then the sums: the reads of another SM's shared memory travel
    // together instead of one round trip per split.
    float4 parts[kMaxClusterSplits];
#pragma unroll
    for (int s = 0; s < kMaxClusterSplits; ++s) {
      if (s < splits)
        parts[s] = hw::load_cluster_float4(partials[s] + (r * kPartialPitch + c) * 4);
    }
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int s = 0; s < kMaxClusterSplits; ++s) {
      if (s < splits) {
        sum.x += parts[s].x;
        sum.y += parts[s].y;
        sum.z += parts[s].z;
        sum.w += parts[s].w;
      }
    }
    const int row = tile.row + r, col = tile.col + c;
    if (row >= M || col >= N) continue;
    float* out = C + static_cast<std::ptrdiff_t>(row) * N + col;
    const float sums[4] = {sum.x, sum.y, sum.z, sum.w};
    if (vector_stores) {  // N % 4 == 0: the 4 columns are all inside
      float4 value = make_float4(alpha * sum.x, alpha * sum.y, alpha * sum.z, alpha * sum.w);
      if (beta != 0.0f) {
        const float4 old = *reinterpret_cast<const float4*>(out);
        value = make_float4(alpha * sum.x + beta * old.x, alpha * sum.y + beta * old.y,
                            alpha * sum.z + beta * old.z, alpha * sum.w + beta * old.w);
      }
      *reinterpret_cast<float4*>(out) = value;
    } else {
      for (int e = 0; e < 4 && col + e < N; ++e)
        out[e] = beta == 0.0f ? alpha * sums[e] : alpha * sums[e] + beta * out[e];
    }
  }
  hw::cluster_sync();
}
#endif

// A: M x K, B: K x ldb, both float16, behind the tensor maps; C: M x N float32. K and ldb are
// multiples of 8 (the TMA's rows), ldb >= N; the TMA delivers zeros outside A and B, so edge
// tiles need no code. kCluster == splits: the grid's z dimension (the splits) is one
// cluster, which adds the partials itself (reduce_in_cluster); the workspace is not touched.
// kCluster == row_pairs: blocks 2p and 2p + 1 along x are one cluster, a pair of tiles, and
// b_map's boxes are 32 rows (kHalfBoxRows) deep instead of 64.
template <int kBlockN, Cluster kCluster>
__global__ void __launch_bounds__(kThreads, 1)
    wgmma_split_k_kernel(const __grid_constant__ CUtensorMap a_map,
                         const __grid_constant__ CUtensorMap b_map, int M, int N, int K,
                         float alpha, float beta, float* __restrict__ C,
                         float* __restrict__ workspace) {
#if defined(COURSE_HAVE_WGMMA)
  constexpr int kStageBytes = Tile<kBlockN>::kStageBytes;
  constexpr int kStages = Tile<kBlockN>::kStages;
  extern __shared__ unsigned char dynamic_shared[];
  // Round the base up to 1024 bytes (the launcher asked for 1024 more).
  unsigned char* base = dynamic_shared + ((1024 - hw::smem(dynamic_shared) % 1024) % 1024);
  auto a_tile = [&](int stage) { return base + stage * kStageBytes; };
  auto b_tile = [&](int stage) { return base + stage * kStageBytes + kATileBytes; };
  auto* full = reinterpret_cast<std::uint64_t*>(base + kStages * kStageBytes);
  std::uint64_t* empty = full + kStages;

  const int warpgroup = static_cast<int>(threadIdx.x) / 128;
  const int thread = static_cast<int>(threadIdx.x) % 128;
  constexpr bool kSplitsInCluster = kCluster == Cluster::splits;
  constexpr bool kRowPairs = kCluster == Cluster::row_pairs;
  const int tiles_m = (M + kBlockM - 1) / kBlockM, tiles_n = (N + kBlockN - 1) / kBlockN;
  TileIndex tile{};
  int rank = 0;  // in the pair
  if constexpr (kRowPairs) {
    // The same order of tiles, taken two rows at a time: pair p holds rows 2p and 2p + 1.
    // Where tiles_m is odd, the last pair's second block is past the bottom of C: it loads
    // the last row's A again (its coordinates stay inside A) and writes nothing.
    rank = hw::cluster_block_rank();
    const TileIndex pair = grouped_tile<kGroupRows / kPairBlocks>(
        static_cast<int>(blockIdx.x) / kPairBlocks, (tiles_m + 1) / kPairBlocks, tiles_n);
    tile = TileIndex{pair.row * kPairBlocks + rank, pair.col};
  } else {
    tile = grouped_tile<kGroupRows>(static_cast<int>(blockIdx.x), tiles_m, tiles_n);
  }
  const int block_m = tile.row * kBlockM, block_n = tile.col * kBlockN;
  const int a_row = (tile.row < tiles_m ? tile.row : tiles_m - 1) * kBlockM;
  // This block's split: k-tiles [first, first + num_tiles) of the k_tiles of K.
  const int k_tiles = (K + kBlockK - 1) / kBlockK;
  const gemm_shapes::KTileRange range =
      split_k_tiles(static_cast<int>(blockIdx.z), static_cast<int>(gridDim.z), k_tiles);
  const int first = range.begin;
  const int num_tiles = range.end > range.begin ? range.end - range.begin : 0;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      hw::barrier_init(&full[s], 1);                  // the producer's arrival + the bytes
      // Every consumer thread; in a pair, one thread per consumer warp of either block.
      hw::barrier_init(&empty[s], kRowPairs ? kPairBlocks * kConsumers * 4 : kConsumers * 128);
    }
    hw::fence_barrier_init();
  }
  // In a pair, the other block's TMA and consumers use this block's barriers: both blocks'
  // must be ready before either starts.
  if constexpr (kRowPairs) {
    hw::cluster_sync();
  } else {
    __syncthreads();
  }

  if (warpgroup == 0) {
    // The producer. Round r of stage s is the split's k-tile t = r * kStages + s; before
    // refilling a stage, wait for the consumers to have emptied it in round r - 1.
    hw::release_registers<40>();
    if (thread == 0) {
      for (int t = 0; t < num_tiles; ++t) {
        const int s = t % kStages, round = t / kStages;
        if (round > 0) hw::wait_for_phase(&empty[s], (round - 1) % 2);
        hw::arrive_expecting_bytes(&full[s], kStageBytes);
        const int k0 = (first + t) * kBlockK;  // the TMA coordinate of the split's k-tile t
        hw::copy_tile_async(a_tile(s), &a_map, a_row, k0, &full[s]);
        for (int box = 0; box < kBlockN / kBoxN; ++box) {
          if constexpr (kRowPairs) {
            // This block's half of each box (rows rank * 32 ..), into both blocks' stage s;
            // the other block sends the other half. full[s] expects the whole stage either way.
            constexpr int kHalfBoxBytes = kBBoxBytes / kPairBlocks;
            hw::copy_tile_to_cluster_async(b_tile(s) + box * kBBoxBytes + rank * kHalfBoxBytes,
                                           &b_map, k0 + rank * kHalfBoxRows, block_n + box * kBoxN,
                                           &full[s], kBothBlocks);
          } else {
            hw::copy_tile_async(b_tile(s) + box * kBBoxBytes, &b_map, k0, block_n + box * kBoxN,
                                &full[s]);
          }
        }
      }
    }
    // With the cluster's reduction, the producer's threads still take part in its barriers:
    // the __syncthreads before the consumers write their partials, and reduce_in_cluster's
    // two cluster_syncs. Only those: after release_registers, 40 registers are all they have.
    if constexpr (kSplitsInCluster) {
      __syncthreads();
      hw::cluster_sync();
      hw::cluster_sync();
    }
    if constexpr (kRowPairs) {
      // Thread 0 rejoins its warp first: the cluster barrier is taken by whole warps. Then
      // the consumers' last one, below.
      __syncwarp();
      hw::cluster_sync();
    }
    return;
  }

  // A consumer: 64 rows (consumer * 64 ..) x kBlockN columns of the block tile.
  hw::claim_registers<232>();
  const int consumer = warpgroup - 1;
  constexpr int kAccumulators = kBlockN / 2;  // 64 x kBlockN floats over 128 threads
  float acc[kAccumulators];
#pragma unroll
  for (int i = 0; i < kAccumulators; ++i) acc[i] = 0.0f;

  for (int t = 0; t < num_tiles; ++t) {
    const int s = t % kStages;
    hw::wait_for_phase(&full[s], (t / kStages) % 2);
    hw::wgmma_fence();
#pragma unroll
    for (int k = 0; k < kBlockK; k += 16) {
      // A: this consumer's 64 rows (64 x 128 bytes down), 16 halves (32 bytes) in; groups
      // of 8 rows are 1024 bytes apart. B: 16 rows of K (16 x 128 bytes) down; its 64-column
      // boxes are kBBoxBytes apart, groups of 8 rows 1024 bytes.
      const std::uint64_t a =
          hw::matrix_descriptor(a_tile(s) + consumer * 64 * 128 + k * 2, 16, 1024);
      const std::uint64_t b = hw::matrix_descriptor(b_tile(s) + k * 128, kBBoxBytes, 1024);
      hw::wgmma_64xNx16<kBlockN, true, __half>(acc, a, b);
    }
    hw::wgmma_commit();
    // Keep this tile's products in flight; the previous tile's are done once at most one
    // group is pending, and its stage can be refilled.
    hw::wgmma_wait<1>();
    if (t > 0) {
      if constexpr (kRowPairs) {
        // The stage is refilled by both blocks' TMA: tell both. The warp's wgmma reads are
        // done (wgmma_wait is warp-wide), so one thread speaks for the warp.
        __syncwarp();
        if (thread % 32 == 0) {
          for (int block = 0; block < kPairBlocks; ++block)
            hw::arrive_in_block(&empty[(t - 1) % kStages], block);
        }
      } else {
        hw::arrive(&empty[(t - 1) % kStages]);
      }
    }
  }
  hw::wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < kAccumulators; ++i) hw::fence_accumulator(acc[i]);

  if constexpr (kSplitsInCluster) {
    // This split's partial into this block's shared memory, in m2.08's accumulator layout
    // (the epilogue below), rows kPartialPitch floats apart; then the cluster adds.
    __syncthreads();  // every consumer is past its last wgmma: the stages are free
    constexpr int kPartialPitch = Tile<kBlockN>::kPartialPitch;
    auto* partial = reinterpret_cast<float*>(base);
    const int lane = thread % 32;
    const int row = consumer * 64 + (thread / 32) * 16 + lane / 4;
#pragma unroll
    for (int j = 0; j < kBlockN / 8; ++j) {
      const int col = j * 8 + (lane % 4) * 2;
      *reinterpret_cast<float2*>(&partial[row * kPartialPitch + col]) =
          make_float2(acc[4 * j], acc[4 * j + 1]);
      *reinterpret_cast<float2*>(&partial[(row + 8) * kPartialPitch + col]) =
          make_float2(acc[4 * j + 2], acc[4 * j + 3]);
    }
    reduce_in_cluster<kBlockN>(base, TileOrigin{block_m, block_n}, M, N, alpha, beta, C);
    return;
  }
  // m2.08's epilogue, into C (one split) or, as it is, into this split's workspace slice (an
  // empty split writes its zeros there).
  float* out = C;
  if (gridDim.z > 1) {
    out = workspace + static_cast<std::ptrdiff_t>(blockIdx.z) * M * N;
    alpha = 1.0f;
    beta = 0.0f;
  }
  const int warp = thread / 32, lane = thread % 32;
  const int row = block_m + consumer * 64 + warp * 16 + lane / 4;
  const bool aligned = pairs_aligned(out, N);
#pragma unroll
  for (int j = 0; j < kBlockN / 8; ++j) {
    const int col = block_n + j * 8 + (lane % 4) * 2;
    store_accumulator_pair(out, M, N, row, col, alpha, beta, acc[4 * j], acc[4 * j + 1], aligned);
    store_accumulator_pair(out, M, N, row + 8, col, alpha, beta, acc[4 * j + 2], acc[4 * j + 3],
                           aligned);
  }
  // No block of a pair may finish, and free its shared memory and barriers, while the other
  // may still arrive there.
  if constexpr (kRowPairs) hw::cluster_sync();
#else
  // Machine code without wgmma (not sm_90a): the launcher never starts this kernel there
  // (sm90a_code_loaded); should anything else, stop with an error rather than leave C as it is.
  (void)a_map, (void)b_map, (void)M, (void)N, (void)K, (void)alpha, (void)beta, (void)C,
      (void)workspace;
  __trap();
#endif
}

namespace {
struct ThisFile {};

// True when the runtime took this file's sm_90a machine code on the current GPU
// (course/hopper.h: the attributes of a marker kernel of this file's own, no launch).
inline bool sm90a_code_loaded() { return hw::sm90a_code_loaded<ThisFile>(); }
}  // namespace

// A launch of `grid` in clusters of `cluster` blocks of the kBlockN-wide kernel (a launch
// attribute: the size is the plan's, not the kernel's). `attribute` must outlive the launch
// call.
template <int kBlockN>
cudaLaunchConfig_t cluster_config(dim3 grid, dim3 cluster, cudaStream_t stream,
                                  cudaLaunchAttribute& attribute) {
  attribute = {};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = cluster.x;
  attribute.val.clusterDim.y = cluster.y;
  attribute.val.clusterDim.z = cluster.z;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = Tile<kBlockN>::kSharedBytes;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return config;
}

// How many clusters of `splits` blocks of the kBlockN-wide kernel (one SM each) the current
// GPU runs at once. The blocks of a cluster must share one group of SMs (a GPC), so this can
// be less than SMs / splits: SMs left over in each group stay out of clusters. Asked once per
// device, width and split count, without a launch; 0 outside 2 .. kMaxClusterSplits.
template <int kBlockN>
int concurrent_clusters(int splits) {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> answers[kMaxDevices][kMaxClusterSplits + 1];  // count + 1; 0: not asked
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  if (device < 0 || device >= kMaxDevices || splits < 2 || splits > kMaxClusterSplits) return 0;
  std::atomic<int>& answer = answers[device][splits];
  if (answer.load() == 0) {
    const auto kernel = wgmma_split_k_kernel<kBlockN, Cluster::splits>;
    allow_dynamic_shared_memory(kernel, Tile<kBlockN>::kSharedBytes, "wgmma_split_k");
    cudaLaunchAttribute cluster;
    const cudaLaunchConfig_t config =
        cluster_config<kBlockN>(dim3(1, 1, static_cast<unsigned>(splits)),
                                dim3(1, 1, static_cast<unsigned>(splits)), nullptr, cluster);
    int clusters = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
    answer.store(clusters + 1);
  }
  return answer.load() - 1;
}

// True when launch() runs the splits of each M x N tile as one cluster that adds the
// partials itself (then the workspace is not touched and no reduction kernel follows): 2 ..
// kMaxClusterSplits splits, and every tile's cluster running at once. A cluster that has to
// wait for another to finish would hold its SMs idle until all its blocks can start: with
// more clusters than fit, the partials go to the workspace. A function of the arguments and
// the GPU: the same call always takes the same path.
template <int kBlockN>
bool splits_reduce_in_cluster(int splits, int M, int N) {
  if (splits < 2 || splits > kMaxClusterSplits || !sm90a_code_loaded()) return false;
  const long long tiles = static_cast<long long>(ceil_div(M, kBlockM)) * ceil_div(N, kBlockN);
  return tiles <= concurrent_clusters<kBlockN>(splits);
}

// The chooser's tile of this width.
template <int kBlockN>
constexpr gemm_shapes::BlockTile kTileOfWidth = kBlockN == 256   ? gemm_shapes::BlockTile::wide
                                                : kBlockN == 128 ? gemm_shapes::BlockTile::half_wide
                                                                 : gemm_shapes::BlockTile::narrow;

// True when launch() runs the tiles in pairs that share B (Cluster::row_pairs): where B's
// rows start mid-sector and two rows of tiles or more read it (gemm_shapes.h,
// tiles_pair_up_for_b), the splits do not add in clusters, and pairs fit on every SM (a GPC
// with an odd number of SMs would leave one out: then the tiles run alone). The pair kernel
// takes the same shared memory as the splits' clusters, so their count of 2-block clusters
// is its own.
template <int kBlockN>
bool tiles_run_in_pairs(int splits, int M, int N, const __half* B, int ldb) {
  if (!gemm_shapes::tiles_pair_up_for_b(kTileOfWidth<kBlockN>, M, B, ldb) ||
      splits_reduce_in_cluster<kBlockN>(splits, M, N))
    return false;
  int multiprocessors = 0, device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  return kPairBlocks * concurrent_clusters<kBlockN>(kPairBlocks) >= multiprocessors;
}

// Runs the kBlockN-wide kernel: A [M x k] and B [k x ldb] float16 with rows on 16-byte
// boundaries (k and ldb multiples of 8, A and B 16-byte aligned), k > 0; `splits` blocks per
// tile along z, which one cluster holds where splits_reduce_in_cluster; else pairs of tiles
// along x where tiles_run_in_pairs. Returns true when the kernel added the splits' partials
// itself (C is final), false when they are in the workspace for the reduction kernel
// (splits > 1) or C is final already (splits == 1).
template <int kBlockN>
bool launch_tile(const char* function, int splits, int M, int N, int k, const __half* A,
                 const __half* B, int ldb, float alpha, float beta, float* C, float* workspace,
                 cudaStream_t stream) {
  constexpr int kSharedBytes = Tile<kBlockN>::kSharedBytes;
  const int tiles_m = ceil_div(M, kBlockM), tiles_n = ceil_div(N, kBlockN);
  const bool in_cluster = splits_reduce_in_cluster<kBlockN>(splits, M, N);
  const bool pairs = tiles_run_in_pairs<kBlockN>(splits, M, N, B, ldb);
  // A in boxes of 128 rows x 64 columns; B in boxes of 64 rows (K) x 64 columns (N), or 32
  // rows for a block of a pair. Built per call: a few microseconds on the host.
  const CUtensorMap a_map =
      hw::make_tensor_map_2d(A, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, static_cast<std::uint64_t>(M),
                             static_cast<std::uint64_t>(k), kBlockM, kBlockK);
  const CUtensorMap b_map = hw::make_tensor_map_2d(
      B, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, static_cast<std::uint64_t>(k),
      static_cast<std::uint64_t>(ldb), pairs ? kHalfBoxRows : kBlockK, kBoxN);
  cudaLaunchAttribute cluster;
  if (pairs) {
    const long long blocks =
        static_cast<long long>(ceil_div(tiles_m, kPairBlocks)) * kPairBlocks * tiles_n;
    const auto kernel = wgmma_split_k_kernel<kBlockN, Cluster::row_pairs>;
    allow_dynamic_shared_memory(kernel, kSharedBytes, function);
    const cudaLaunchConfig_t config = cluster_config<kBlockN>(
        dim3(static_cast<unsigned>(blocks), 1, static_cast<unsigned>(splits)),
        dim3(kPairBlocks, 1, 1), stream, cluster);
    CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, a_map, b_map, M, N, k, alpha, beta, C,
                                  workspace));
    CUDA_CHECK_LAUNCH();
    return false;
  }
  const long long tiles = static_cast<long long>(tiles_m) * tiles_n;
  const dim3 grid(static_cast<unsigned>(tiles), 1, static_cast<unsigned>(splits));
  if (!in_cluster) {
    const auto kernel = wgmma_split_k_kernel<kBlockN, Cluster::none>;
    allow_dynamic_shared_memory(kernel, kSharedBytes, function);
    kernel<<<grid, kThreads, kSharedBytes, stream>>>(a_map, b_map, M, N, k, alpha, beta, C,
                                                      workspace);
    CUDA_CHECK_LAUNCH();
    return false;
  }
  // The splits of a tile as one cluster.
  const auto kernel = wgmma_split_k_kernel<kBlockN, Cluster::splits>;
  allow_dynamic_shared_memory(kernel, kSharedBytes, function);
  const cudaLaunchConfig_t config = cluster_config<kBlockN>(
      grid, dim3(1, 1, static_cast<unsigned>(splits)), stream, cluster);
  CUDA_CHECK(
      cudaLaunchKernelEx(&config, kernel, a_map, b_map, M, N, k, alpha, beta, C, workspace));
  CUDA_CHECK_LAUNCH();
  return true;
}

// The launcher's entry: the kernel of `block_n` columns (256, the wide tile; 128, the
// half-wide one; 64, the narrow one). The caller has checked the GPU (wide_tile_runs_here)
// and the workspace.
inline bool launch(const char* function, int block_n, int splits, int M, int N, int k,
                   float alpha, const __half* A, const __half* B, int ldb, float beta, float* C,
                   float* workspace, cudaStream_t stream) {
  switch (block_n) {
    case 256:
      return launch_tile<256>(function, splits, M, N, k, A, B, ldb, alpha, beta, C, workspace,
                              stream);
    case 128:
      return launch_tile<128>(function, splits, M, N, k, A, B, ldb, alpha, beta, C, workspace,
                              stream);
    case 64:
      return launch_tile<64>(function, splits, M, N, k, A, B, ldb, alpha, beta, C, workspace,
                             stream);
    default:
      throw std::logic_error(std::string(function) + ": no wgmma tile is " +
                             std::to_string(block_n) + " columns wide");
  }
}

}  // namespace course::COURSE_IMPL::wgmma_split_k
