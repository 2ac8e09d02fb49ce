// Tests for exercise m2.04 that need no GPU: the bank arithmetic of the shared-memory tiles.
//
// Shared memory is 32 banks of 4-byte words; word w is in bank w % 32. When the 32 threads
// of a warp touch words in the same bank, the access is split into as many passes as that
// bank has different words (threads reading the same word share it: a broadcast). These
// tests replay, on the CPU, the accesses the kernels make to the tiles they declare and count
// the passes. test_ncu_bank_conflicts.cu measures the same thing on the GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "bank_conflicts.h"
#include "course/impl.h"

namespace {

constexpr int kBanks = 32;
constexpr int kWarpSize = 32;

// The passes shared memory needs for one warp access in which lane l touches element
// element_of(l) = (row, col) of `tile`.
template <typename ElementOfLane>
int passes(const course::SharedTile& tile, ElementOfLane element_of) {
  std::map<int, std::set<long long>> words_in_bank;
  for (int lane = 0; lane < kWarpSize; ++lane) {
    const auto [row, col] = element_of(lane);
    const long long word = static_cast<long long>(row) * tile.row_stride + col;
    words_in_bank[static_cast<int>(word % kBanks)].insert(word);
  }
  int most = 0;
  for (const auto& [bank, words] : words_in_bank) {
    most = std::max(most, static_cast<int>(words.size()));
  }
  return most;
}

// The worst case, over the tile's columns, of a warp reading one column (lane l: row l).
int column_access_passes(const course::SharedTile& tile) {
  int worst = 0;
  for (int col = 0; col < tile.cols; ++col) {
    const int column_passes =
        passes(tile, [&](int lane) { return std::pair{lane % tile.rows, col}; });
    worst = std::max(worst, column_passes);
  }
  return worst;
}

// The worst case, over the tile's rows, of a warp reading one row (lane l: column l).
int row_access_passes(const course::SharedTile& tile) {
  int worst = 0;
  for (int row = 0; row < tile.rows; ++row) {
    const int row_passes =
        passes(tile, [&](int lane) { return std::pair{row, lane % tile.cols}; });
    worst = std::max(worst, row_passes);
  }
  return worst;
}

std::string describe(const course::SharedTile& tile) {
  return "[" + std::to_string(tile.rows) + "][" + std::to_string(tile.row_stride) + "] (" +
         std::to_string(tile.row_stride - tile.cols) + " words of padding per row)";
}

TEST(SharedTileBanks, TheModelCountsA32WayConflictForAnUnpaddedColumn) {
  // The case every lesson on bank conflicts starts from: float tile[32][32], read down a
  // column. Word l * 32 + c is in bank c for every lane l.
  const course::SharedTile tile{32, 32, 32};
  EXPECT_EQ(column_access_passes(tile), 32);
  EXPECT_EQ(row_access_passes(tile), 1);
}

TEST(SharedTileBanks, TiledTransposeIsTheConflictedBaseline) {
  const course::SharedTile tile = course::impl::transpose_tiled_tile();
  EXPECT_EQ(tile.row_stride, tile.cols)
      << "transpose_tiled is the before picture: its tile stays unpadded, " << describe(tile);
  EXPECT_GT(column_access_passes(tile), 1) << describe(tile);
}

TEST(SharedTileBanks, PaddedTransposeTileIsConflictFreeInBothDirections) {
  const course::SharedTile tile = course::impl::transpose_padded_tile();
  EXPECT_EQ(row_access_passes(tile), 1)
      << "the load stores along a row of the tile: " << describe(tile);
  EXPECT_EQ(column_access_passes(tile), 1)
      << "a warp reading a column of the tile " << describe(tile) << " needs "
      << column_access_passes(tile) << " passes instead of 1: some banks hold several of the "
      << "column's words. Choose the padding in TODO(m2.04b) (month2/04_bank_conflicts/"
      << "transpose.cu) so that the 32 words of a column fall in 32 different banks.";
}

TEST(SharedTileBanks, ConflictedGemmIsTheConflictedBaseline) {
  const course::SharedTile tile = course::impl::gemm_conflicted_b_tile();
  EXPECT_EQ(tile.row_stride, tile.cols)
      << "gemm_conflicted is the before picture: its B tile stays unpadded, " << describe(tile);
  EXPECT_GT(column_access_passes(tile), 1) << describe(tile);
}

TEST(SharedTileBanks, PaddedGemmBTileIsConflictFreeDownAColumn) {
  // Both the store of the transposed B tile (Bt[tx][ty]) and the inner loop's read
  // (Bt[tx][k]) have lane tx on row tx: column accesses.
  const course::SharedTile tile = course::impl::gemm_padded_b_tile();
  EXPECT_EQ(column_access_passes(tile), 1)
      << "the inner loop reads a column of the transposed B tile " << describe(tile) << " in "
      << column_access_passes(tile) << " passes instead of 1. Choose the padding in "
      << "TODO(m2.04d) (month2/04_bank_conflicts/gemm_transposed_tile.cu).";
}

}  // namespace
