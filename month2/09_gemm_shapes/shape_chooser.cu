// Exercise m2.09: the shape chooser. (Skeleton: the TODOs are yours.)
//
// Host code: given M, N, K and the GPU's multiprocessor count, which block tile and how many
// splits of K. The arithmetic is occupancy: a GEMM is fast when every multiprocessor has a
// block to run, and each block has enough k-steps to get its pipeline going. README.md works
// through the shapes of the benchmark.
#include <algorithm>
#include <cstddef>

#include "gemm_shapes.h"

namespace course::COURSE_IMPL {  // see course/impl.h

gemm_shapes::GemmPlan choose_gemm_plan(int M, int N, int K, gemm_shapes::Precision precision,
                                       int multiprocessors, std::size_t workspace_floats,
                                       const gemm_shapes::WgmmaCapacity& wgmma) {
  using namespace gemm_shapes;
  GemmPlan plan;
  // ---- given: the same in the skeleton and the solution (./course check compares) ----
  // Few rows: a 128-row tile would multiply mostly zeros; a 32-row one multiplies far fewer
  // (the blocks for the SMs come from the splits below). Otherwise float16 takes the wide
  // wgmma tile where this GPU runs it (a Hopper), the square mma.sync one elsewhere.
  if (M <= kSkinnyMaxM) {
    plan.tile = BlockTile::skinny;
  } else if (precision == Precision::fp16 && wgmma.runs) {
    plan.tile = BlockTile::wide;
  } else {
    plan.tile = BlockTile::square;
  }
  plan.splits = 1;
  if (M <= 0 || N <= 0 || K <= 0 || multiprocessors <= 0) return plan;
  // ---- end of given ----

  // TODO(m2.09c): the plan from the occupancy arithmetic. Write it as a helper, splits for a
  // tile, since the wgmma tiles below need it for three tiles:
  //  1. tiles = the output tiles of the tile:
  //     ceil(M / block_m(tile)) x ceil(N / block_n(tile));
  //  2. splits = floor(blocks per wave / tiles), at least 1, with blocks per wave =
  //     blocks_per_multiprocessor(tile) x multiprocessors: as many splits as still run in one
  //     wave (1 when there are tiles enough; one block more than a wave holds would run alone
  //     in a second one);
  //  3. at most k_tiles / min_k_tiles_per_split(tile) (but at least 1), k_tiles =
  //     ceil(K / k_tile(tile, precision)): every split keeps that many k-tiles or more;
  //  4. at most workspace_floats / (M x N) (but at least 1): the partials must fit;
  //  5. at most kMaxSplits;
  //  6. a wgmma tile (is_wgmma_tile) with 2 .. kMaxClusterSplits splits: one less while
  //     tiles > wgmma.concurrent_clusters[splits], down to 1: every tile's cluster must fit
  //     at once, or the partials go through the workspace.
  // plan.splits = that for plan.tile. A square or skinny tile's plan is then done. For the
  // wide tile, try kWgmmaTiles in order (wide, half_wide, narrow), each with its own splits:
  // take the first whose blocks (tiles x splits) fill at least kMinWaveFillPercent of one
  // wave (multiprocessors blocks); if none does, the one that fills the most, the wider of
  // equals, counting a plan of more blocks than one wave as 0 (so the wide tile on a large C).
  // Skip a tile other than the narrow one when block_n(tile) >= 2 x N: the next narrower tile
  // has the same one column of tiles, with fewer columns of zeros.
  // Examples (132 SMs, a large workspace): 16 x 4096 x 4096 in fp32 is skinny, 1 x 32 tiles,
  // 2 x 132 = 264 blocks per wave, floor(264 / 32) = 8 splits; 256 k-tiles allow 128; so 8.
  // 1024 x 1024 x 8192 in fp16 on an H200: the wide tile is 8 x 4 tiles, floor(132 / 32) = 4
  // splits; 128 k-tiles of 64 allow 8; 32 clusters of 4 do not fit (30 do), 3 do: 96 blocks,
  // 72% of the wave. The half-wide tile: 64 tiles, 2 splits, 128 blocks, 96%: taken.
  // Count in long long: M x N can be near 2^31.
  (void)N, (void)K, (void)precision, (void)workspace_floats;
  return plan;
}

}  // namespace course::COURSE_IMPL
