// Exercise m2.09: the shape chooser. (Reference solution.)
//
// Host code: given M, N, K and the GPU's multiprocessor count, which block tile and how many
// splits of K. The arithmetic is occupancy: a GEMM is fast when every multiprocessor has a
// block to run, and each block has enough k-steps to get its pipeline going. README.md works
// through the shapes of the benchmark.
#include <algorithm>
#include <cstddef>

#include "gemm_shapes.h"

namespace course::COURSE_IMPL {  // see course/impl.h

namespace {

// The rule's thresholds, in one place. Each is a measured decision, set from the table of the
// sweep (sweep_gemm_plans.cu: m2_09_gemm_shapes_sweep times every tile x splits on every
// shape of the benchmark against cuBLAS), not from the arithmetic alone; where the sweep's
// fastest plan (<) and the chooser's pick (*) differ, one of these is what to move, and the
// test's table of decisions (ShapeChooser.DecisionsOnATableOfShapes) and the README's table
// move with it:
//  * kSkinnyMaxM (gemm_shapes.h, used in the given part below): up to which M the skinny
//    tile's row of the table beats the square's;
//  * blocks_per_multiprocessor (gemm_shapes.h): the blocks of a tile one SM runs at once,
//    so that the splits fill one wave. On the H200 the sweep's fastest square-tile rows are
//    those with 2 x 132 blocks or just under (1024 x 1024 x 8192: 4 splits of 64 tiles;
//    128 x 4096 x 4096: 8 of 32), and 3 or 6 splits of 64 tiles (192, 384 blocks) are slower;
//  * min_k_tiles_per_split (gemm_shapes.h): the shortest split worth its partial: along a
//    row, where more splits stop paying (512 x 512 x 512 in float32 still gains at 16 splits
//    of 2 k-tiles);
//  * kMaxSplits (gemm_shapes.h): the most splits, where even long K stops gaining;
//  * kMinWaveFillPercent (gemm_shapes.h): how full a wave a wgmma tile's plan must be to keep
//    that width (1024 x 1024 x 8192: 3 wide splits of 32 tiles, 96 blocks of 132, ran slower
//    than 2 half-wide ones of 64, 128 blocks; 512 x 4608 x 1568: the wide tile's 72 blocks in
//    one wave ran faster than the narrower tiles' two waves).

// The output tiles of `tile` on an M x N C: one block each when K is not split.
long long output_tiles(gemm_shapes::BlockTile tile, int M, int N) {
  using namespace gemm_shapes;
  return static_cast<long long>((M + block_m(tile) - 1) / block_m(tile)) *
         ((N + block_n(tile) - 1) / block_n(tile));
}

// The number of splits of K for `tile`: as many as still run in one wave, within the limits.
int splits_for(gemm_shapes::BlockTile tile, int M, int N, int K, gemm_shapes::Precision precision,
               int multiprocessors, std::size_t workspace_floats,
               const gemm_shapes::WgmmaCapacity& wgmma) {
  using namespace gemm_shapes;
  // When one wave of the GPU has room for more blocks than there are tiles, split K into as
  // many ranges as still run in that one wave: floor(blocks per wave / tiles), at least 1 (a
  // block more than a wave holds would run alone in a second one).
  const long long tiles = output_tiles(tile, M, N);
  const long long blocks_per_wave =
      static_cast<long long>(blocks_per_multiprocessor(tile)) * multiprocessors;
  long long splits = std::max(1LL, blocks_per_wave / tiles);
  // Each split must keep at least min_k_tiles_per_split k-tiles: a shorter one spends its
  // time filling and draining the pipeline and writing its partial C.
  const long long k_tiles = (K + k_tile(tile, precision) - 1) / k_tile(tile, precision);
  splits = std::min(splits, std::max(1LL, k_tiles / min_k_tiles_per_split(tile)));
  // Every split's partial C must fit the workspace: splits x M x N floats.
  const long long per_split = static_cast<long long>(M) * N;
  splits = std::min(splits, std::max(1LL, static_cast<long long>(workspace_floats) / per_split));
  splits = std::min<long long>(splits, kMaxSplits);
  // A wgmma tile's 2 .. kMaxClusterSplits splits add up in their clusters only when every
  // tile's cluster fits at once: fewer splits until they do (down to 1). More splits than a
  // cluster holds go through the workspace anyway.
  if (is_wgmma_tile(tile)) {
    while (splits >= 2 && splits <= kMaxClusterSplits &&
           tiles > wgmma.concurrent_clusters[splits]) {
      --splits;
    }
  }
  return static_cast<int>(splits);
}

// The blocks of `plan` (tiles x splits) as a percentage of one wave; 0 where they need more
// than one wave.
long long wave_fill_percent(const gemm_shapes::GemmPlan& plan, int M, int N, int multiprocessors) {
  const long long blocks = output_tiles(plan.tile, M, N) * plan.splits;
  const long long blocks_per_wave =
      static_cast<long long>(gemm_shapes::blocks_per_multiprocessor(plan.tile)) * multiprocessors;
  return blocks <= blocks_per_wave ? 100 * blocks / blocks_per_wave : 0;
}

}  // namespace

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

  if (!is_wgmma_tile(plan.tile)) {
    plan.splits =
        splits_for(plan.tile, M, N, K, precision, multiprocessors, workspace_floats, wgmma);
    return plan;
  }
  // The wgmma tiles, widest first: the first whose plan fills kMinWaveFillPercent of one wave
  // or more; where none does, the one that fills the most (the wider of equals). A plan that
  // needs more than one wave counts 0, so a wide tile that fills the GPU stays wide. A tile at
  // least twice as wide as N is skipped: the next narrower one has the same single column of
  // tiles, with fewer columns of zeros to multiply.
  GemmPlan best = plan;  // replaced by the first tile tried (the narrow one is never skipped)
  long long best_fill = -1;
  for (const BlockTile tile : kWgmmaTiles) {
    if (tile != BlockTile::narrow && block_n(tile) >= 2LL * N) continue;
    const GemmPlan candidate{
        tile, splits_for(tile, M, N, K, precision, multiprocessors, workspace_floats, wgmma)};
    const long long fill = wave_fill_percent(candidate, M, N, multiprocessors);
    if (fill >= kMinWaveFillPercent) return candidate;
    if (fill > best_fill) {
      best = candidate;
      best_fill = fill;
    }
  }
  return best;
}

}  // namespace course::COURSE_IMPL
