// Which tile of C a block computes, for GEMM-shaped kernels (the month-2 GEMMs, the
// implicit-GEMM convolution).
//
// The GPU starts blocks in the order of their launch index, and the blocks that run at the
// same time share, through the L2 cache, the tiles of A and B they read. Taken row by row,
// the resident blocks span all the columns of C: a few rows of tiles of A, but the whole of
// B. Taken in groups of kGroupRows rows of tiles, down each column of the group before the
// next column, they form a squarer patch of C and read less of A and B between them.
#pragma once

#include <cuda_runtime.h>

namespace course {

struct TileIndex {
  int row, col;  // in tiles, not elements
};

// The tile for launch index `launch_index` of a grid of tiles_m x tiles_n tiles.
template <int kGroupRows>
__host__ __device__ __forceinline__ TileIndex grouped_tile(int launch_index, int tiles_m,
                                                           int tiles_n) {
  static_assert(kGroupRows >= 1, "grouped_tile: a group holds one row of tiles or more");
  const int blocks_per_group = kGroupRows * tiles_n;
  const int first_row = (launch_index / blocks_per_group) * kGroupRows;
  const int rows = tiles_m - first_row < kGroupRows ? tiles_m - first_row : kGroupRows;
  const int index_in_group = launch_index % blocks_per_group;  // the last group may be short
  return TileIndex{first_row + index_in_group % rows, index_in_group / rows};
}

// Where this block's tile of C starts (block_m, block_n: grouped_tile's order) and where this
// warp's tile starts inside it (warp_m, warp_n: warps in row-major order over the block
// tile), for a tile shape with kBlockM, kBlockN, kWarpM, kWarpN, kWarpsN and kGroupRows
// (m2.07's MmaTile, m3.05's implicit-GEMM tiles) on an M x N output.
struct WarpTileOrigin {
  int block_m, block_n, warp_m, warp_n;
};

template <class Tile>
__device__ __forceinline__ WarpTileOrigin warp_tile_origin(int M, int N, int warp) {
  const TileIndex tile = grouped_tile<Tile::kGroupRows>(static_cast<int>(blockIdx.x),
                                                        (M + Tile::kBlockM - 1) / Tile::kBlockM,
                                                        (N + Tile::kBlockN - 1) / Tile::kBlockN);
  return {tile.row * Tile::kBlockM, tile.col * Tile::kBlockN, (warp / Tile::kWarpsN) * Tile::kWarpM,
          (warp % Tile::kWarpsN) * Tile::kWarpN};
}

}  // namespace course
