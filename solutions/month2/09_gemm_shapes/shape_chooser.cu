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
//  * kMaxSplits (gemm_shapes.h): the most splits, where even long K stops gaining.
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

  // Blocks without splitting: one per output tile. When one wave of the GPU has room for
  // more blocks than there are tiles, split K into as many ranges as still run in that one
  // wave: floor(blocks per wave / tiles), at least 1 (a block more than a wave holds would
  // run alone in a second one).
  const long long tiles =
      static_cast<long long>((M + block_m(plan.tile) - 1) / block_m(plan.tile)) *
      ((N + block_n(plan.tile) - 1) / block_n(plan.tile));
  const long long blocks_per_wave =
      static_cast<long long>(blocks_per_multiprocessor(plan.tile)) * multiprocessors;
  long long splits = std::max(1LL, blocks_per_wave / tiles);
  // Each split must keep at least min_k_tiles_per_split k-tiles: a shorter one spends its
  // time filling and draining the pipeline and writing its partial C.
  const long long k_tiles = (K + k_tile(plan.tile, precision) - 1) / k_tile(plan.tile, precision);
  splits = std::min(splits, std::max(1LL, k_tiles / min_k_tiles_per_split(plan.tile)));
  // Every split's partial C must fit the workspace: splits x M x N floats.
  const long long per_split = static_cast<long long>(M) * N;
  splits = std::min(splits, std::max(1LL, static_cast<long long>(workspace_floats) / per_split));
  plan.splits = static_cast<int>(std::min<long long>(splits, kMaxSplits));
  return plan;
}

}  // namespace course::COURSE_IMPL
