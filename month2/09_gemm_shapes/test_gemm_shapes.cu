// Tests for exercise m2.09 (GEMMs off the square). The same tests grade your skeleton and the
// reference solution.
//  * CPU tests (no GPU needed): the K ranges of split_k_tiles (TODO(m2.09a)) and the
//    chooser's decisions on a table of shapes (TODO(m2.09c)).
//  * GPU tests: every tile x number of splits on skinny, long-K and odd shapes, float32 and
//    float16 inputs, against the float64 reference (course/gemm_testing.h: seeded inputs, C
//    poisoned, NaN guards around every matrix); the workspace is poisoned and guarded too, so
//    a split that leaves its slice unwritten shows as NaN and a write past it is caught.
//    Float16 odd sizes run twice: with room for the zero-padded copies of A and B (the
//    aligned kernel on the copies; the test checks the copies were made) and without (the
//    predicated kernel). Then the chooser's pick on the whole month-2 list, misaligned
//    pointers, and determinism: two runs with many splits must give the same bits.
//  * The wide tile (m2.08's wgmma kernel, wgmma_split_k.h): the same checks on a Hopper built
//    with sm_90a, and that the float16 entry point takes it there; elsewhere (another GPU,
//    COURSE_COMPUTE_CAPABILITY=8.0, a build without 90) those tests skip, saying why, and a
//    plan with the wide tile must be refused, never run on something else.
#include <gtest/gtest.h>

#include <cuda_fp16.h>

#include <algorithm>
#include <cstddef>
#include <climits>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "course/device_info.h"  // query_device: the SM count
#include "course/gemm_testing.h"
#include "course/guarded_buffer.h"
#include "course/requirements.h"
#include "gemm_shapes.h"

// CMakeLists.txt says whether this build has the wide tile's sm_90a machine code.
#if !defined(COURSE_M2_09_HAS_SM90A)
#define COURSE_M2_09_HAS_SM90A 0
#endif

namespace {

using course::gemm_shapes::BlockTile;
using course::gemm_shapes::GemmPlan;
using course::gemm_shapes::Precision;
using course::gemm_shapes::kWgmmaTiles;
using course::gemm_shapes::tile_name;

constexpr const char* kRangeHint =
    "look at TODO(m2.09a) (split_k_tiles: the k-tiles of one split) in "
    "month2/09_gemm_shapes/gemm_shapes.cu";
constexpr const char* kSplitHint =
    "look at TODO(m2.09a) (split_k_tiles: the k-tiles of one split) and TODO(m2.09b) "
    "(reduce_splits_kernel: the partials added in split order, then alpha and beta) in "
    "month2/09_gemm_shapes/gemm_shapes.cu";
constexpr const char* kChooserHint =
    "look at TODO(m2.09c) (choose_gemm_plan: tiles, splits from the multiprocessors, the "
    "k-tile, workspace and cluster caps, then the width of a wgmma tile by how much of a wave "
    "it fills) in month2/09_gemm_shapes/shape_chooser.cu";
constexpr const char* kAllHint =
    "look at TODO(m2.09a) and TODO(m2.09b) in month2/09_gemm_shapes/gemm_shapes.cu and "
    "TODO(m2.09c) in month2/09_gemm_shapes/shape_chooser.cu";

// Why the wide tile cannot run here, or "" when it can: it needs a Hopper (compute capability
// 9.0, as COURSE_COMPUTE_CAPABILITY lets it look) and this build's sm_90a machine code.
std::string wide_tile_absent_reason() {
  if (!COURSE_M2_09_HAS_SM90A) {
    return "this build has no sm_90a machine code (CMAKE_CUDA_ARCHITECTURES without 90): the "
           "wide tile's wgmma kernel is not built, float16 runs on mma.sync";
  }
  const course::ComputeCapability cc = course::device_compute_capability();
  if (cc.number() != 90) {
    return "the wide tile's wgmma kernel needs compute capability 9.0 (a Hopper: H100, H200); "
           "this GPU has " +
           cc.text() +
           (course::compute_capability_emulated() ? " (emulated by COURSE_COMPUTE_CAPABILITY)"
                                                  : "");
  }
  return "";
}

// --- CPU: the K ranges ------------------------------------------------------------------------

TEST(SplitKTiles, RangesCoverKInOrderWithoutGapsAndBalanced) {
  for (int k_tiles : {0, 1, 2, 7, 10, 31, 256, 1000}) {
    for (int splits = 1; splits <= 16; ++splits) {
      int expected_begin = 0;
      for (int s = 0; s < splits; ++s) {
        const course::gemm_shapes::KTileRange r = course::impl::split_k_tiles(s, splits, k_tiles);
        const int length = r.end - r.begin;
        ASSERT_EQ(r.begin, expected_begin)
            << "split " << s << " of " << splits << " over " << k_tiles
            << " k-tiles must start where split " << s - 1 << " ended. " << kRangeHint;
        ASSERT_TRUE(length == k_tiles / splits || length == k_tiles / splits + 1)
            << "split " << s << " of " << splits << " over " << k_tiles << " k-tiles runs ["
            << r.begin << ", " << r.end << "): every split should get " << k_tiles / splits
            << " or " << k_tiles / splits + 1 << " k-tiles. " << kRangeHint;
        expected_begin = r.end;
      }
      ASSERT_EQ(expected_begin, k_tiles)
          << splits << " splits over " << k_tiles << " k-tiles must end at k-tile " << k_tiles
          << ". " << kRangeHint;
    }
  }
  // The worked example of the TODO, and a product past INT_MAX.
  const auto third = course::impl::split_k_tiles(2, 4, 10);
  EXPECT_TRUE(third.begin == 5 && third.end == 7)
      << "10 k-tiles in 4 splits: split 2 runs [5, 7), got [" << third.begin << ", " << third.end
      << "). " << kRangeHint;
  const auto last = course::impl::split_k_tiles(15, 16, 200000000);
  EXPECT_TRUE(last.begin == 187500000 && last.end == 200000000)
      << "split 15 of 16 over 2e8 k-tiles runs [187500000, 200000000), got [" << last.begin << ", "
      << last.end << "): 15 x 2e8 passes INT_MAX. " << kRangeHint;
}

// --- CPU: the chooser's decisions -------------------------------------------------------------

using course::gemm_shapes::WgmmaCapacity;

// No wgmma tiles: a GPU other than a Hopper, or float32.
const WgmmaCapacity kNoWgmma{};
// An H200 (132 SMs): the clusters of 2 .. 8 blocks of the wgmma kernel that run at once, as
// cudaOccupancyMaxActiveClusters gave them (wgmma_capacity_here()).
const WgmmaCapacity kH200{true, {0, 0, 66, 39, 30, 22, 17, 15, 15}};
// A smaller Hopper, 108 SMs, with fewer clusters of each size.
const WgmmaCapacity kSmallerHopper{true, {0, 0, 54, 32, 24, 18, 14, 12, 12}};

struct ChooserCase {
  int M, N, K;
  Precision precision;
  int multiprocessors;
  std::size_t workspace_floats;
  BlockTile tile;
  int splits;
  const char* why;
  const WgmmaCapacity* wgmma = &kNoWgmma;
};

constexpr std::size_t kBig = course::gemm_shapes::kSharedWorkspaceFloats;  // of the *_shapes

TEST(ShapeChooser, DecisionsOnATableOfShapes) {
  const WgmmaCapacity* const h200 = &kH200;
  const std::vector<ChooserCase> cases = {
      // Enough tiles: no split.
      {4096, 4096, 4096, Precision::fp32, 132, kBig, BlockTile::square, 1, "1024 tiles >= 132"},
      {4096, 11008, 4096, Precision::fp16, 132, kBig, BlockTile::square, 1, "2752 tiles"},
      {3000, 5000, 2000, Precision::fp32, 132, kBig, BlockTile::square, 1, "960 tiles"},
      {4093, 4099, 4097, Precision::fp16, 132, kBig, BlockTile::square, 1, "1056 tiles"},
      // Between the two: 13 x 16 = 208 tiles, and one wave of 264 blocks holds no second split.
      {1600, 2048, 4096, Precision::fp32, 132, kBig, BlockTile::square, 1, "208 tiles"},
      // Long K: 64 tiles, two square blocks per SM: floor(264 / 64) = 4 splits.
      {1024, 1024, 8192, Precision::fp32, 132, kBig, BlockTile::square, 4, "64 tiles"},
      {1024, 1024, 8192, Precision::fp16, 132, kBig, BlockTile::square, 4, "64 tiles"},
      // Few rows: skinny tiles (32 of them for N = 4096), then floor(264 / 32) = 8 splits.
      {16, 4096, 4096, Precision::fp32, 132, kBig, BlockTile::skinny, 8, "32 skinny tiles"},
      {16, 4096, 4096, Precision::fp16, 132, kBig, BlockTile::skinny, 8, "32 skinny tiles"},
      {64, 4096, 4096, Precision::fp16, 132, kBig, BlockTile::skinny, 4, "2 x 32 skinny tiles"},
      // M = 128 is one square tile row: 32 tiles, 8 splits.
      {128, 4096, 4096, Precision::fp32, 132, kBig, BlockTile::square, 8, "32 tiles"},
      // Small: 16 tiles want 16 splits; K = 512 is 32 fp32 k-tiles (16 splits of 2 fit) but
      // 16 fp16 k-tiles (at most 8 splits of 2).
      {512, 512, 512, Precision::fp32, 132, kBig, BlockTile::square, 16, "16 tiles, fp32"},
      {512, 512, 512, Precision::fp16, 132, kBig, BlockTile::square, 8, "k-tile cap, fp16"},
      // Short K: 13 k-tiles allow 6 splits of 2; 3 k-tiles allow none.
      {16, 4096, 200, Precision::fp32, 132, kBig, BlockTile::skinny, 6, "13 k-tiles"},
      {16, 4096, 40, Precision::fp32, 132, kBig, BlockTile::skinny, 1, "3 k-tiles"},
      // The workspace caps: 1024 x 1024 partials, room for 2.
      {1024, 1024, 8192, Precision::fp32, 132, std::size_t{2} << 20, BlockTile::square, 2,
       "workspace for 2 partials"},
      {1024, 1024, 8192, Precision::fp32, 132, std::size_t{1} << 20, BlockTile::square, 1,
       "workspace for 1 partial"},
      // A single tile and a very long K: kMaxSplits.
      {8, 8, 1 << 20, Precision::fp32, 132, kBig, BlockTile::skinny, 16, "kMaxSplits"},
      // Another GPU: 108 SMs (A100), 64 tiles: floor(216 / 64) = 3 splits.
      {1024, 1024, 8192, Precision::fp32, 108, kBig, BlockTile::square, 3, "108 SMs"},
      // Empty problems.
      {0, 4096, 4096, Precision::fp32, 132, kBig, BlockTile::skinny, 1, "M = 0"},
      {1024, 1024, 0, Precision::fp32, 132, kBig, BlockTile::square, 1, "K = 0"},
      // An H200: float16 on the wgmma tiles (k-tiles of 64), one block per SM, so the splits
      // stop at one wave: floor(132 / tiles). Enough wide tiles for a wave: wide, no split.
      {4096, 4096, 4096, Precision::fp16, 132, kBig, BlockTile::wide, 1, "512 wide tiles", h200},
      {4096, 11008, 4096, Precision::fp16, 132, kBig, BlockTile::wide, 1, "1376 wide tiles",
       h200},
      {3000, 5000, 2000, Precision::fp16, 132, kBig, BlockTile::wide, 1, "480 wide tiles", h200},
      {4093, 4099, 4097, Precision::fp16, 132, kBig, BlockTile::wide, 1, "544 wide tiles", h200},
      {2048, 2048, 2048, Precision::fp16, 132, kBig, BlockTile::wide, 1,
       "128 wide tiles fill 96% of the wave", h200},
      {512, 4608, 1568, Precision::fp16, 132, kBig, BlockTile::wide, 1,
       "72 wide tiles fill 54%, but 144 half-wide or 288 narrow ones need two waves", h200},
      // Too few wide tiles: the splits' clusters must fit, then the first width that fills
      // three quarters of the wave.
      {1024, 1024, 8192, Precision::fp16, 132, kBig, BlockTile::half_wide, 2,
       "32 wide tiles: 4 splits, but 32 clusters of 4 do not fit (30), 3 fill 72%; 64 "
       "half-wide tiles: floor(132 / 64) = 2 splits, 96%",
       h200},
      {128, 4096, 4096, Precision::fp16, 132, kBig, BlockTile::narrow, 2,
       "16 wide tiles: 64 k-tiles allow 4 splits, 48%; 32 half-wide ones: 4, clusters cap "
       "3, 72%; 64 narrow ones: 2 splits, 96%",
       h200},
      {256, 2304, 6272, Precision::fp16, 132, kBig, BlockTile::half_wide, 3,
       "18 wide tiles: 6 splits, 17 clusters of 6 fit, 5: 68%; 36 half-wide: 3 splits, 81%",
       h200},
      // None fills three quarters: the one that fills the most, the wider of equals.
      {512, 512, 512, Precision::fp16, 132, kBig, BlockTile::narrow, 1,
       "8 k-tiles of 64: no split; 8, 16 or 32 tiles: the narrow tile's 32", h200},
      {256, 1024, 8192, Precision::fp16, 132, kBig, BlockTile::half_wide, 6,
       "8 wide tiles x 8 splits: 48%; 16 half-wide: 8 splits, clusters cap 6: 72%; 32 narrow: "
       "4, clusters cap 3: 72%",
       h200},
      // More than kMaxClusterSplits splits go through the workspace: no clusters to fit.
      {200, 200, 1 << 15, Precision::fp16, 132, kBig, BlockTile::narrow, 16,
       "2 x 4 narrow tiles, 512 k-tiles allow 32 splits: kMaxSplits, 97%", h200},
      {1024, 1024, 8192, Precision::fp16, 108, kBig, BlockTile::wide, 3,
       "108 SMs, 32 wide tiles: 3 splits fill 88%", &kSmallerHopper},
      {1024, 1024, 8192, Precision::fp16, 132, std::size_t{1} << 20, BlockTile::narrow, 1,
       "workspace for 1 partial: no split; 128 narrow tiles fill 96%", h200},
      // C narrower than half a tile: the narrower tile, the same tiles with fewer zeros.
      {128, 64, 25088, Precision::fp16, 132, kBig, BlockTile::narrow, 16,
       "N = 64: one tile of any width; 392 k-tiles allow 24 splits, kMaxSplits", h200},
      {256, 100, 6272, Precision::fp16, 132, kBig, BlockTile::narrow, 6,
       "N = 100: no wide tile (256 >= 200); 2 half-wide tiles x 6 or 4 narrow ones x 6", h200},
      {1024, 1024, 0, Precision::fp16, 132, kBig, BlockTile::wide, 1, "wide, K = 0", h200},
      // ... but few rows stay on the skinny tile, and float32 on its own tiles.
      {16, 4096, 4096, Precision::fp16, 132, kBig, BlockTile::skinny, 8, "M = 16, Hopper", h200},
      {1024, 1024, 8192, Precision::fp32, 132, kBig, BlockTile::square, 4, "fp32, Hopper", h200},
  };
  for (const ChooserCase& c : cases) {
    const GemmPlan plan =
        course::impl::choose_gemm_plan(c.M, c.N, c.K, c.precision, c.multiprocessors,
                                       c.workspace_floats, *c.wgmma);
    EXPECT_TRUE(plan.tile == c.tile && plan.splits == c.splits)
        << c.M << " x " << c.N << " x " << c.K << " "
        << (c.precision == Precision::fp32 ? "fp32" : "fp16") << " on " << c.multiprocessors
        << " SMs" << (c.wgmma->runs ? " of a Hopper" : "") << ", workspace "
        << c.workspace_floats << " floats (" << c.why << "): expected "
        << tile_name(c.tile) << " x " << c.splits << " splits, got " << tile_name(plan.tile)
        << " x " << plan.splits << " splits. " << kChooserHint;
  }
}

TEST(ShapeChooser, PlansAlwaysFitTheirWorkspaceAndTheirClusters) {
  namespace gs = course::gemm_shapes;
  for (int M : {1, 16, 64, 65, 128, 1000, 4096}) {
    for (int N : {1, 100, 4096}) {
      for (int K : {1, 100, 8192, 100000}) {
        for (std::size_t workspace : {std::size_t{0}, std::size_t{1} << 16, kBig}) {
          for (const WgmmaCapacity* wgmma : {&kNoWgmma, &kH200, &kSmallerHopper}) {
            const Precision precision = wgmma->runs ? Precision::fp16 : Precision::fp32;
            const GemmPlan plan =
                course::impl::choose_gemm_plan(M, N, K, precision, 132, workspace, *wgmma);
            const long long tiles = static_cast<long long>((M + gs::block_m(plan.tile) - 1) /
                                                           gs::block_m(plan.tile)) *
                                    ((N + gs::block_n(plan.tile) - 1) / gs::block_n(plan.tile));
            const bool clustered = gs::is_wgmma_tile(plan.tile) && plan.splits >= 2 &&
                                   plan.splits <= gs::kMaxClusterSplits;
            EXPECT_TRUE(plan.splits >= 1 && plan.splits <= gs::kMaxSplits &&
                        gs::workspace_floats(plan, M, N) <= workspace &&
                        (gs::is_wgmma_tile(plan.tile) == (wgmma->runs && M > gs::kSkinnyMaxM)) &&
                        (!clustered || tiles <= wgmma->concurrent_clusters[plan.splits]))
                << M << " x " << N << " x " << K << (wgmma->runs ? " fp16 on a Hopper" : " fp32")
                << ", workspace " << workspace << " floats: got " << tile_name(plan.tile) << " x "
                << plan.splits << " splits (" << tiles
                << " tiles); the splits must fit the workspace, and 2 .. kMaxClusterSplits "
                   "splits of a wgmma tile their clusters. "
                << kChooserHint;
          }
        }
      }
    }
  }
}

TEST(GemmWorkspace, RoomForPaddedCopiesOnlyWhereFloat16RowsAreMisaligned) {
  // Host addresses stand in for device ones: hgemm_workspace_floats only looks at them.
  alignas(16) static __half matrix[16];
  namespace gs = course::gemm_shapes;
  GemmPlan plan;
  plan.splits = 4;
  const std::size_t partials = gs::workspace_floats(plan, 64, 256);
  EXPECT_EQ(gs::hgemm_workspace_floats(plan, 64, 256, 512, matrix, matrix), partials)
      << "aligned rows need no copies";
  EXPECT_EQ(gs::hgemm_workspace_floats(plan, 64, 256, 513, matrix, matrix),
            partials + gs::padded_copies_floats(64, 256, 513))
      << "an odd K misaligns the rows of A and B";
  EXPECT_EQ(gs::hgemm_workspace_floats(plan, 64, 257, 512, matrix, matrix),
            gs::workspace_floats(plan, 64, 257) + gs::padded_copies_floats(64, 257, 512))
      << "an odd N misaligns the rows of B";
  EXPECT_EQ(gs::hgemm_workspace_floats(plan, 64, 256, 512, matrix + 1, matrix),
            partials + gs::padded_copies_floats(64, 256, 512))
      << "A off a 16-byte boundary";
  EXPECT_EQ(gs::hgemm_workspace_floats(plan, 64, 256, 0, matrix + 1, matrix + 1), partials)
      << "K = 0 reads nothing";
  GemmPlan one;
  EXPECT_EQ(gs::hgemm_workspace_floats(one, 1, 8, INT_MAX - 3, matrix, matrix), std::size_t{0})
      << "copies whose K8 would not fit in int are never planned";
}

TEST(GemmWorkspace, MidSectorRowsOfBAreReadWhereTheyAreByPairsOfWgmmaTiles) {
  alignas(32) static __half matrix[32];
  namespace gs = course::gemm_shapes;
  const GemmPlan wide{BlockTile::wide, 1};
  // B's rows of 520 halves (1040 bytes: 16 mod 32) start every other one mid-sector. Aligned
  // to 16 bytes, the TMA reads them where they are: no copies.
  EXPECT_EQ(gs::hgemm_workspace_floats(wide, 1921, 520, 512, matrix, matrix), std::size_t{0})
      << "B's rows of 520 halves are 16-byte aligned: read where they are, not copied";
  for (BlockTile tile : kWgmmaTiles) {
    EXPECT_TRUE(gs::tiles_pair_up_for_b(tile, 129, matrix, 520))
        << tile_name(tile) << " tile: 2 rows of tiles read B's mid-sector rows: in pairs";
    EXPECT_FALSE(gs::tiles_pair_up_for_b(tile, 128, matrix, 520))
        << tile_name(tile) << " tile: one row of tiles has no partner";
    EXPECT_FALSE(gs::tiles_pair_up_for_b(tile, 4096, matrix, 512))
        << tile_name(tile) << " tile: rows of 1024 bytes start on whole sectors: alone";
    EXPECT_TRUE(gs::tiles_pair_up_for_b(tile, 4096, matrix + 8, 512))
        << tile_name(tile) << " tile: B 16 but not 32-byte aligned starts mid-sector: in pairs";
    EXPECT_FALSE(gs::tiles_pair_up_for_b(tile, 4096, matrix + 4, 512))
        << tile_name(tile) << " tile: B 8-byte aligned is not read by the TMA where it is";
    EXPECT_FALSE(gs::tiles_pair_up_for_b(tile, 4096, matrix, 516))
        << tile_name(tile) << " tile: rows of 516 halves are copied first (padded)";
  }
  EXPECT_FALSE(gs::tiles_pair_up_for_b(BlockTile::square, 4096, matrix, 520))
      << "only the wgmma tiles (their TMA) run in pairs";
}

// --- GPU: every tile x splits on skinny, long-K and odd shapes --------------------------------

// The plan and workspace the trampolines below run with (expect_gemm_matches_reference takes a
// plain function).
GemmPlan g_plan;
course::GuardedBuffer<float>* g_workspace = nullptr;

// The workspace a planned float16 GEMM gets: the partials, and with `padded_room` the
// zero-padded copies of A and B that odd sizes and misaligned operands need.
std::size_t planned_hgemm_workspace(const GemmPlan& plan, course::GemmShape shape,
                                   bool padded_room) {
  return course::gemm_shapes::workspace_floats(plan, shape.M, shape.N) +
         (padded_room ? course::gemm_shapes::padded_copies_floats(shape.M, shape.N, shape.K) : 0);
}

void sgemm_with_plan(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                     float* C, cudaStream_t stream) {
  course::impl::sgemm_planned(g_plan, M, N, K, alpha, A, B, beta, C, g_workspace->data(),
                              g_workspace->size(), stream);
}
void hgemm_with_plan(int M, int N, int K, float alpha, const __half* A, const __half* B, float beta,
                     float* C, cudaStream_t stream) {
  course::impl::hgemm_planned(g_plan, M, N, K, alpha, A, B, beta, C, g_workspace->data(),
                              g_workspace->size(), stream);
}

using PlannedCase = std::tuple<course::GemmCase, BlockTile, int>;

std::string planned_case_name(const ::testing::TestParamInfo<PlannedCase>& info) {
  const course::GemmCase& c = std::get<0>(info.param);
  const ::testing::TestParamInfo<course::GemmCase> inner(c, info.index);
  return course::gemm_case_name(inner) + "_" + tile_name(std::get<1>(info.param)) + "_splits" +
         std::to_string(std::get<2>(info.param));
}

class PlannedGemmTest : public course::GpuTest, public ::testing::WithParamInterface<PlannedCase> {
 protected:
  // padded_room (float16): room for the padded copies beyond the partials.
  template <typename Input>
  void check(course::GemmFnOf<Input> gemm, bool padded_room = false) {
    const auto& [c, tile, splits] = GetParam();
    g_plan = GemmPlan{tile, splits};
    // The workspace is poisoned: a split that skips its slice leaves NaN in the sum. It sits
    // between guards (a write past its end is caught) and, in float16 with an odd number of
    // splits, starts 4 bytes past a 16-byte boundary (the padded copies must find their own;
    // float32 keeps it aligned, or its float4 path would never see a split).
    const std::size_t partials =
        course::gemm_shapes::workspace_floats(g_plan, c.shape.M, c.shape.N);
    const std::size_t floats = planned_hgemm_workspace(g_plan, c.shape, padded_room);
    const std::size_t offset = std::is_same_v<Input, __half> ? splits % 2 : 0;
    course::GuardedBuffer<float> workspace(std::max<std::size_t>(1, floats), offset);
    g_workspace = &workspace;
    std::ostringstream hint;
    hint << "(plan: " << tile_name(tile) << " tile, " << splits << " splits"
         << (padded_room ? ", room for padded copies" : "") << ") " << kSplitHint;
    const std::string text = hint.str();
    course::expect_gemm_matches_reference(gemm, c.shape, c.alpha, c.beta, text.c_str());
    g_workspace = nullptr;

    const auto contents = workspace.download();
    EXPECT_FALSE(contents.first_stray_write)
        << "the GEMM wrote outside its workspace of " << floats << " floats, at index "
        << contents.first_stray_write.value_or(0) << ". " << text;
    // The wgmma tiles with 2 .. kMaxClusterSplits splits add their partials in a cluster
    // (wgmma_split_k.h) where all the clusters fit on the GPU at once: here, where their
    // blocks are at most half the SMs. Where the wgmma kernel ran (K > 0, and aligned rows or
    // room for the copies), the workspace's partial slices then stay as they were.
    const bool wgmma_ran = course::gemm_shapes::is_wgmma_tile(tile) && c.shape.K > 0 &&
                           (padded_room || (c.shape.K % 8 == 0 && c.shape.N % 8 == 0));
    const long long tiles =
        static_cast<long long>(course::ceil_div(c.shape.M, course::gemm_shapes::block_m(tile))) *
        course::ceil_div(c.shape.N, course::gemm_shapes::block_n(tile));
    if (wgmma_ran && splits >= 2 && splits <= course::gemm_shapes::kMaxClusterSplits &&
        tiles * splits <= course::query_device().sm_count / 2) {
      std::size_t written = 0;
      for (std::size_t i = 0; i < partials; ++i) written += !course::is_poison(contents.values[i]);
      EXPECT_EQ(written, 0u) << "M x N x K = " << course::to_string(c.shape) << ", " << splits
                             << " splits of the " << tile_name(tile)
                             << " tile: they must add their partials in "
                                "their cluster, but " << written << " floats of the "
                                "workspace's partials were written (wgmma_split_k.h, "
                                "splits_reduce_in_cluster)";
    }
    if (padded_room && c.shape.K > 0) {
      // Which path ran: the copies land after the partials exactly when a row of A or B does
      // not start on a 16-byte boundary (A and B are aligned here, so K or N decides). B's
      // rows that start mid-sector (N = 8 mod 16) are read where they are.
      const bool odd = c.shape.K % 8 != 0 || c.shape.N % 8 != 0;
      bool copies_written = false;
      for (std::size_t i = partials; i < contents.values.size(); ++i)
        copies_written = copies_written || !course::is_poison(contents.values[i]);
      EXPECT_EQ(copies_written, odd)
          << "M x N x K = " << course::to_string(c.shape) << ": "
          << (odd ? "odd K or N must run on zero-padded copies of A and B in the workspace"
                  : "K and N are multiples of 8: A and B must be read where they are")
          << ". " << text;
    }
  }
};

class PlannedSgemmTest : public PlannedGemmTest {};
class PlannedHgemmTest : public PlannedGemmTest {};
class PredicatedHgemmTest : public PlannedGemmTest {};

TEST_P(PlannedSgemmTest, MatchesFloat64Reference) { check<float>(sgemm_with_plan); }
// Float16 with room for the padded copies (odd sizes run the aligned kernel on them).
TEST_P(PlannedHgemmTest, MatchesFloat64Reference) { check<__half>(hgemm_with_plan, true); }
// Float16 with room for the partials only: odd sizes take the predicated kernel.
TEST_P(PredicatedHgemmTest, MatchesFloat64Reference) { check<__half>(hgemm_with_plan, false); }

// The wide tile (m2.08's wgmma kernel, wgmma_split_k.h), on a Hopper built with sm_90a only.
class WideHgemmTest : public PlannedGemmTest {
 protected:
  void SetUp() override {
    PlannedGemmTest::SetUp();
    if (IsSkipped()) return;
    const std::string reason = wide_tile_absent_reason();
    if (!reason.empty()) GTEST_SKIP() << reason;
  }
};
class WidePredicatedHgemmTest : public WideHgemmTest {};

// With room for the padded copies: odd sizes run the wgmma kernel on them (its TMA copies
// need aligned rows).
TEST_P(WideHgemmTest, MatchesFloat64Reference) { check<__half>(hgemm_with_plan, true); }
// Without: the TMA cannot read odd rows, so the square tile's predicated kernel runs.
TEST_P(WidePredicatedHgemmTest, MatchesFloat64Reference) {
  check<__half>(hgemm_with_plan, false);
}

// Scaled-down versions of the benchmark's off-square shapes: a few rows and a long K (16 x
// 4096 x 4096 -> 16 x 1024 x 2048), one tile row (128 x ...), long K on a small C (1024^2 x
// 8192 -> 256 x 256 x 4096), odd sizes everywhere (17 x 33 x 1001; 4093 x 4099 x 4097 ->
// 509 x 263 x 1001), and alpha, beta.
std::vector<course::GemmCase> planned_shapes() {
  return {
      {{16, 1024, 2048}, 1.0f, 0.0f},   {{128, 640, 1536}, 1.0f, 0.0f},
      {{256, 256, 4096}, 1.0f, 0.0f},   {{17, 33, 1001}, 1.0f, 0.0f},
      {{509, 263, 1001}, 0.5f, -0.75f}, {{1, 300, 777}, 1.5f, 0.0f},
      {{64, 136, 520}, 1.0f, 1.0f},
  };
}
const auto kPlannedCases = ::testing::Combine(
    ::testing::ValuesIn(planned_shapes()), ::testing::Values(BlockTile::square, BlockTile::skinny),
    ::testing::Values(1, 2, 3, 7, 16));
INSTANTIATE_TEST_SUITE_P(Shapes, PlannedSgemmTest, kPlannedCases, planned_case_name);
INSTANTIATE_TEST_SUITE_P(Shapes, PlannedHgemmTest, kPlannedCases, planned_case_name);
// The odd shapes without room for the copies: the predicated kernel, both tiles, 1 and 3 splits.
INSTANTIATE_TEST_SUITE_P(
    OddShapes, PredicatedHgemmTest,
    ::testing::Combine(::testing::Values(course::GemmCase{{17, 33, 1001}, 1.0f, 0.0f},
                                         course::GemmCase{{509, 263, 1001}, 0.5f, -0.75f},
                                         course::GemmCase{{1, 300, 777}, 1.5f, 0.0f}),
                       ::testing::Values(BlockTile::square, BlockTile::skinny),
                       ::testing::Values(1, 3)),
    planned_case_name);

// More splits than k-tiles (empty ranges write zeros), K = 0 (C = beta * C), and the edges.
std::vector<course::GemmCase> edge_shapes() {
  return {{{40, 72, 24}, 1.0f, 0.0f}, {{37, 45, 0}, 1.0f, 0.5f}, {{129, 257, 72}, 1.0f, 0.0f}};
}
const auto kEdgeCases =
    ::testing::Combine(::testing::ValuesIn(edge_shapes()),
                       ::testing::Values(BlockTile::square, BlockTile::skinny),
                       ::testing::Values(1, 5, 64));
INSTANTIATE_TEST_SUITE_P(Edges, PlannedSgemmTest, kEdgeCases, planned_case_name);
INSTANTIATE_TEST_SUITE_P(Edges, PlannedHgemmTest, kEdgeCases, planned_case_name);

// The wgmma tiles (wide, half-wide, narrow) on the same shapes and edges, splits 1 .. 16 and
// the most the launchers take, plus a few shapes of their own with partial tiles at the right
// and bottom edges.
std::vector<course::GemmCase> wide_shapes() {
  std::vector<course::GemmCase> shapes = planned_shapes();
  shapes.push_back({{300, 600, 1000}, 1.0f, 0.5f});
  shapes.push_back({{260, 520, 3000}, 1.0f, 0.0f});
  return shapes;
}
INSTANTIATE_TEST_SUITE_P(Shapes, WideHgemmTest,
                         ::testing::Combine(::testing::ValuesIn(wide_shapes()),
                                            ::testing::ValuesIn(kWgmmaTiles),
                                            ::testing::Values(1, 2, 3, 7, 16)),
                         planned_case_name);
INSTANTIATE_TEST_SUITE_P(Edges, WideHgemmTest,
                         ::testing::Combine(::testing::ValuesIn(edge_shapes()),
                                            ::testing::ValuesIn(kWgmmaTiles),
                                            ::testing::Values(1, 5, 64)),
                         planned_case_name);
INSTANTIATE_TEST_SUITE_P(
    OddShapes, WidePredicatedHgemmTest,
    ::testing::Combine(::testing::Values(course::GemmCase{{17, 33, 1001}, 1.0f, 0.0f},
                                         course::GemmCase{{509, 263, 1001}, 0.5f, -0.75f}),
                       ::testing::Values(BlockTile::wide), ::testing::Values(1, 3)),
    planned_case_name);
// B's rows of 520 halves start every other one mid-sector, and 17 rows of tiles read it: the
// wgmma tiles run in pairs that share B (gemm_shapes.h, tiles_pair_up_for_b), the last pair's
// second block below C; with 3 splits, in pairs that write the workspace.
const auto kMidSectorCases =
    ::testing::Combine(::testing::Values(course::GemmCase{{2049, 520, 264}, 1.0f, -0.5f}),
                       ::testing::ValuesIn(kWgmmaTiles),
                       ::testing::Values(1, 3));
INSTANTIATE_TEST_SUITE_P(MidSectorRows, WideHgemmTest, kMidSectorCases, planned_case_name);
INSTANTIATE_TEST_SUITE_P(MidSectorRows, WidePredicatedHgemmTest, kMidSectorCases,
                         planned_case_name);

// --- GPU: the chooser's pick on the month-2 list ------------------------------------------------

class ShapesGemmTest : public course::GpuTest,
                       public ::testing::WithParamInterface<course::GemmCase> {};

TEST_P(ShapesGemmTest, SgemmMatchesFloat64Reference) {
  course::expect_gemm_matches_reference(course::impl::sgemm_shapes, GetParam(), kAllHint);
}
TEST_P(ShapesGemmTest, HgemmMatchesFloat64Reference) {
  course::expect_gemm_matches_reference(course::impl::hgemm_shapes, GetParam(), kAllHint);
}
INSTANTIATE_TEST_SUITE_P(Month2Shapes, ShapesGemmTest,
                         ::testing::ValuesIn(course::gemm_test_cases()), course::gemm_case_name);
INSTANTIATE_TEST_SUITE_P(OffSquare, ShapesGemmTest,
                         ::testing::Values(course::GemmCase{{16, 4096, 4096}, 1.0f, 0.0f},
                                           course::GemmCase{{128, 4096, 4096}, 1.0f, 0.0f},
                                           course::GemmCase{{1024, 1024, 8192}, 1.0f, 0.0f},
                                           course::GemmCase{{4093, 4099, 4097}, 1.0f, 0.0f}),
                         course::gemm_case_name);

class ShapesArgumentsTest : public course::GpuTest {};

TEST_F(ShapesArgumentsTest, NegativeSizesAreRejectedWithAClearError) {
  course::expect_gemm_rejects_negative_sizes(course::impl::sgemm_shapes, kAllHint);
  course::expect_gemm_rejects_negative_sizes(course::impl::hgemm_shapes, kAllHint);
}

TEST_F(ShapesArgumentsTest, RunsOnTheGivenStream) {
  course::expect_gemm_runs_on_stream(course::impl::sgemm_shapes, kAllHint);
  course::expect_gemm_runs_on_stream(course::impl::hgemm_shapes, kAllHint);
}

// Both kernels' float4 / 16-byte paths need aligned rows: odd offsets take the 4-byte
// (float32) path and the padded copies (float16; with room for them) or the predicated
// kernel (without), here with 3 splits and a workspace that starts 4 bytes past a 16-byte
// boundary too.
TEST_F(ShapesArgumentsTest, MisalignedPointersAreHandled) {
  const course::GemmShape shape{48, 264, 2048};
  course::expect_gemm_handles_misaligned_pointers(course::impl::sgemm_shapes, shape, {1, 3, 4},
                                                  kAllHint);
  course::expect_gemm_handles_misaligned_pointers(course::impl::hgemm_shapes, shape, {1, 3, 4},
                                                  kAllHint);
  std::vector<BlockTile> tiles = {BlockTile::skinny};
  if (wide_tile_absent_reason().empty()) tiles.push_back(BlockTile::wide);
  for (BlockTile tile : tiles) {
    g_plan = GemmPlan{tile, 3};
    for (bool padded_room : {true, false}) {
      course::GuardedBuffer<float> workspace(planned_hgemm_workspace(g_plan, shape, padded_room),
                                             1);
      g_workspace = &workspace;
      course::expect_gemm_handles_misaligned_pointers(hgemm_with_plan, shape, {1, 3, 4},
                                                      kSplitHint);
      g_workspace = nullptr;
      EXPECT_FALSE(workspace.download().first_stray_write)
          << "misaligned A, B and C, " << tile_name(tile) << " tile, 3 splits"
          << (padded_room ? ", room for padded copies" : "")
          << ": the GEMM wrote outside its workspace. " << kSplitHint;
    }
  }
}

// A split plan queued on a captured stream: both kernels, the GEMM and the reduction.
TEST_F(ShapesArgumentsTest, SplitPlansRunOnTheGivenStream) {
  g_plan = GemmPlan{BlockTile::skinny, 3};
  course::GuardedBuffer<float> workspace(
      planned_hgemm_workspace(g_plan, course::GemmShape{67, 45, 500}, true));
  g_workspace = &workspace;
  course::expect_gemm_runs_on_stream(sgemm_with_plan, kSplitHint, course::GemmShape{67, 45, 500});
  course::expect_gemm_runs_on_stream(hgemm_with_plan, kSplitHint, course::GemmShape{67, 45, 500});
  if (wide_tile_absent_reason().empty()) {  // the wide tile, through the padded copies
    g_plan = GemmPlan{BlockTile::wide, 3};
    course::expect_gemm_runs_on_stream(hgemm_with_plan, kSplitHint,
                                       course::GemmShape{67, 45, 500});
  }
  g_workspace = nullptr;
}

TEST_F(ShapesArgumentsTest, BadPlansAreRejected) {
  course::DeviceBuffer<float> buffer(64 * 64);
  const float* f = buffer.data();
  const auto* h = reinterpret_cast<const __half*>(buffer.data());
  for (int splits : {0, -1, course::gemm_shapes::kMaxPlannedSplits + 1}) {
    EXPECT_THROW(course::impl::sgemm_planned({BlockTile::square, splits}, 8, 8, 64, 1.0f, f, f,
                                             0.0f, buffer.data(), buffer.data(), buffer.size()),
                 std::invalid_argument)
        << splits << " splits";
  }
  // 4 splits of 64 x 64 need 16384 floats.
  EXPECT_THROW(course::impl::hgemm_planned({BlockTile::square, 4}, 64, 64, 64, 1.0f, h, h, 0.0f,
                                           buffer.data(), buffer.data(), buffer.size()),
               std::invalid_argument);
  EXPECT_THROW(course::impl::hgemm_planned({BlockTile::square, 2}, 64, 64, 64, 1.0f, h, h, 0.0f,
                                           buffer.data(), nullptr, 0),
               std::invalid_argument);
  // The wgmma tiles are float16's wgmma kernel only.
  for (const BlockTile tile : kWgmmaTiles) {
    EXPECT_THROW(course::impl::sgemm_planned({tile, 1}, 8, 8, 64, 1.0f, f, f, 0.0f, buffer.data(),
                                             buffer.data(), buffer.size()),
                 std::invalid_argument)
        << "sgemm_planned must refuse the " << tile_name(tile) << " tile";
  }
  CUDA_CHECK(cudaDeviceSynchronize());
}

// Which float16 kernel runs: on a Hopper built with sm_90a, the chooser's plan for a large
// GEMM is the wide tile (m2.08's wgmma kernel) and hgemm_shapes runs that plan: its C has the
// same bits as hgemm_planned's with the wide tile. Anywhere else (another GPU, one that
// COURSE_COMPUTE_CAPABILITY makes look older, a build without 90) wide_tile_runs_here() says
// no and a plan with the wide tile is refused rather than run on another kernel.
std::vector<float> run_half_gemm(course::GemmFnOf<__half> gemm, course::GemmShape shape) {
  const std::uint64_t seed = course::test_seed() + 31;
  const auto A = course::gemm_inputs<__half>(static_cast<std::size_t>(shape.M) * shape.K, seed);
  const auto B = course::gemm_inputs<__half>(static_cast<std::size_t>(shape.K) * shape.N, seed + 1);
  auto device_a = course::DeviceBuffer<__half>::from_host(A.device);
  auto device_b = course::DeviceBuffer<__half>::from_host(B.device);
  course::DeviceBuffer<float> device_c(static_cast<std::size_t>(shape.M) * shape.N);
  gemm(shape.M, shape.N, shape.K, 1.0f, device_a.data(), device_b.data(), 0.0f, device_c.data(),
       nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  return device_c.to_host();
}

TEST_F(ShapesArgumentsTest, OnAHopperFloat16RunsAWgmmaTile) {
  const std::string reason = wide_tile_absent_reason();
  const bool runs = course::impl::wide_tile_runs_here();
  if (!reason.empty()) {
    EXPECT_FALSE(runs) << "wide_tile_runs_here() says yes, but " << reason;
    course::DeviceBuffer<float> buffer(64 * 64);
    const auto* h = reinterpret_cast<const __half*>(buffer.data());
    for (const BlockTile tile : kWgmmaTiles) {
      EXPECT_THROW(course::impl::hgemm_planned({tile, 1}, 64, 64, 64, 1.0f, h, h, 0.0f,
                                               buffer.data(), nullptr, 0),
                   course::UnsupportedDevice)
          << "a plan with the " << tile_name(tile)
          << " tile where the wgmma kernel cannot run must be refused";
    }
    GTEST_SKIP() << reason;
  }
  ASSERT_TRUE(runs) << "a Hopper and a build with sm_90a, but wide_tile_runs_here() says no: it "
                       "asks which machine code the runtime loaded for gemm_shapes.cu "
                       "(CMakeLists.txt adds sm_90a where CMAKE_CUDA_ARCHITECTURES has 90)";
  const int sms = course::query_device().sm_count;
  const course::GemmShape shape{512, 1024, 4096};
  const GemmPlan plan = course::impl::choose_gemm_plan(
      shape.M, shape.N, shape.K, Precision::fp16, sms, kBig, course::impl::wgmma_capacity_here());
  ASSERT_TRUE(course::gemm_shapes::is_wgmma_tile(plan.tile))
      << "on a Hopper the chooser takes a wgmma tile for float16 and M > 64, got "
      << tile_name(plan.tile) << ". " << kChooserHint;
  g_plan = plan;
  course::GuardedBuffer<float> workspace(planned_hgemm_workspace(plan, shape, true));
  g_workspace = &workspace;
  const std::vector<float> planned = run_half_gemm(hgemm_with_plan, shape);
  g_workspace = nullptr;
  const std::vector<float> shapes = run_half_gemm(course::impl::hgemm_shapes, shape);
  EXPECT_EQ(std::memcmp(planned.data(), shapes.data(), planned.size() * sizeof(float)), 0)
      << course::to_string(shape) << ": hgemm_shapes must run the chooser's plan (the "
      << tile_name(plan.tile) << " tile, " << plan.splits << " splits) on a Hopper, giving the same bits as hgemm_planned. "
      << kChooserHint;
}

// --- GPU: determinism --------------------------------------------------------------------------

// Runs `gemm` twice on the same inputs and a C that starts the same, and compares the bits.
template <typename Input>
void expect_bitwise_reproducible(course::GemmFnOf<Input> gemm, course::GemmShape shape,
                                 const char* hint) {
  const std::size_t MN = static_cast<std::size_t>(shape.M) * shape.N;
  const std::uint64_t seed = course::test_seed() + 21;
  const auto A = course::gemm_inputs<Input>(static_cast<std::size_t>(shape.M) * shape.K, seed);
  const auto B = course::gemm_inputs<Input>(static_cast<std::size_t>(shape.K) * shape.N, seed + 1);
  const auto C0 = course::random_uniform<float>(MN, seed + 2);
  auto device_a = course::DeviceBuffer<Input>::from_host(A.device);
  auto device_b = course::DeviceBuffer<Input>::from_host(B.device);
  std::vector<std::vector<float>> runs;
  for (int run = 0; run < 2; ++run) {
    auto device_c = course::DeviceBuffer<float>::from_host(C0);
    gemm(shape.M, shape.N, shape.K, 0.75f, device_a.data(), device_b.data(), 0.5f, device_c.data(),
         nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    runs.push_back(device_c.to_host());
  }
  std::size_t differ = 0, first = MN;
  for (std::size_t i = 0; i < MN; ++i) {
    if (std::memcmp(&runs[0][i], &runs[1][i], sizeof(float)) != 0) {
      ++differ;
      if (first == MN) first = i;
    }
  }
  EXPECT_EQ(differ, 0u) << "M x N x K = " << course::to_string(shape) << ", " << g_plan.splits
                        << " splits: two runs differ in " << differ << " elements of C, the first "
                        << "C[" << first / shape.N << "][" << first % shape.N << "] ("
                        << (first < MN ? runs[0][first] : 0.0f) << " then "
                        << (first < MN ? runs[1][first] : 0.0f) << "): the partials must be added "
                        << "in the same order on every run, without atomics. " << hint;
}

TEST_F(ShapesArgumentsTest, SplitResultsAreBitwiseReproducible) {
  // An aligned shape, and an odd one (float16: through the padded copies).
  for (const course::GemmShape shape : {course::GemmShape{48, 520, 3000},
                                        course::GemmShape{45, 517, 3001}}) {
    for (int splits : {5, 16}) {
      g_plan = GemmPlan{BlockTile::skinny, splits};
      course::GuardedBuffer<float> workspace(planned_hgemm_workspace(g_plan, shape, true));
      g_workspace = &workspace;
      expect_bitwise_reproducible<float>(sgemm_with_plan, shape, kSplitHint);
      expect_bitwise_reproducible<__half>(hgemm_with_plan, shape, kSplitHint);
      if (wide_tile_absent_reason().empty()) {  // the wide tile's partials, same reduction
        g_plan = GemmPlan{BlockTile::wide, splits};
        expect_bitwise_reproducible<__half>(hgemm_with_plan, shape, kSplitHint);
      }
      g_workspace = nullptr;
    }
  }
}

}  // namespace
