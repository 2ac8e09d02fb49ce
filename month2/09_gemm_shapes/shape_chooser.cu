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
                                       bool wide_tile_available) {
  using namespace gemm_shapes;
  GemmPlan plan;
  // ---- given: the same in the skeleton and the solution (./course check compares) ----
  // Few rows: a 128-row tile would multiply mostly zeros; a 32-row one multiplies far fewer
  // (the blocks for the SMs come from the splits below). Otherwise float16 takes the wide
  // wgmma tile where this GPU runs it (a Hopper), the square mma.sync one elsewhere.
  if (M <= kSkinnyMaxM) {
    plan.tile = BlockTile::skinny;
  } else if (precision == Precision::fp16 && wide_tile_available) {
    plan.tile = BlockTile::wide;
  } else {
    plan.tile = BlockTile::square;
  }
  plan.splits = 1;
  if (M <= 0 || N <= 0 || K <= 0 || multiprocessors <= 0) return plan;
  // ---- end of given ----

  // TODO(m2.09c): the number of splits, plan.splits, from the occupancy arithmetic:
  //  1. tiles = the output tiles of plan.tile:
  //     ceil(M / block_m(plan.tile)) x ceil(N / block_n(plan.tile));
  //  2. splits = ceil(multiprocessors / tiles), so that tiles x splits blocks cover every
  //     multiprocessor (1 when there are tiles enough); but for a tile that fills a
  //     multiprocessor alone (tile_fills_multiprocessor(plan.tile): the wide one),
  //     floor(multiprocessors / tiles), at least 1, so that all the blocks run in one wave
  //     (133 such blocks on 132 SMs take twice as long as 132);
  //  3. at most k_tiles / kMinKTilesPerSplit (but at least 1), k_tiles = ceil(K /
  //     k_tile(plan.tile, precision)): every split keeps kMinKTilesPerSplit k-tiles or more;
  //  4. at most workspace_floats / (M x N) (but at least 1): the partials must fit;
  //  5. at most kMaxSplits.
  // Examples (132 SMs, a large workspace): 16 x 4096 x 4096 in fp32 is skinny, 1 x 32 tiles,
  // ceil(132 / 32) = 5 splits; 256 k-tiles allow 32; so 5. 1024 x 1024 x 8192 in fp16 on the
  // wide tile is 8 x 4 tiles, floor(132 / 32) = 4 splits; 128 k-tiles of 64 allow 16; so 4.
  // Count in long long: M x N can be near 2^31.
  (void)precision;
  (void)workspace_floats;
  return plan;
}

}  // namespace course::COURSE_IMPL
