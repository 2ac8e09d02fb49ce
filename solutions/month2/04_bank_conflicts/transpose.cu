// Exercise m2.04, part 1: matrix transpose three ways, and shared-memory bank conflicts.
// (Reference solution.)
//
// out = in.T for a rows x cols float32 matrix (torch: in.t().contiguous()). There is no
// arithmetic at all, so the only question is how fast the bytes move; cudaMemcpy of the same
// bytes is the ceiling.
//
// What changes from step to step, and what it costs or saves:
//   transpose_naive   reads rows of `in` (coalesced) but writes columns of `out`: every warp
//                     store touches 32 different 128-byte lines for 128 useful bytes.
//   transpose_tiled   stages a 32 x 32 tile in shared memory: the block reads the tile's rows
//                     from `in` and writes the transposed tile's rows to `out`, both coalesced.
//                     The transposition happens in shared memory, where a warp reads the tile
//                     down a column: all 32 words sit in the same bank (32-way conflict), so
//                     each such read takes 32 passes instead of 1.
//   transpose_padded  declares the tile [32][33]. The unused 33rd column shifts every row by
//                     one bank, so a column's 32 words fall in 32 different banks: 1 pass.
// README.md works through the bank arithmetic.
#include <climits>
#include <cstdint>
#include <string>

#include "bank_conflicts.h"
#include "course/cuda_check.h"
#include "course/launch.h"

namespace course::COURSE_IMPL {  // see course/impl.h
namespace {

// One block moves one kTile x kTile tile with kTile x kBlockRows threads, so each thread moves
// kTile / kBlockRows = 4 elements. Four independent loads per thread before the
// __syncthreads() keep enough bytes in flight to approach copy bandwidth (m1.01).
constexpr int kTile = 32;
constexpr int kBlockRows = 8;

// The padding of the tile's rows, in floats. One word makes the row stride 33, an odd
// number, so the 32 words of a tile column land in 32 different banks (see README.md).
constexpr int kPadding = 1;

// ---- given: the same in the skeleton and the solution (./course check compares) ----
// Block (bx, by) covers rows [by * TILE, by * TILE + TILE) and columns
// [bx * TILE, bx * TILE + TILE) of `in`. Thread (tx, ty) handles column bx * TILE + tx and the
// rows ty, ty + BLOCK_ROWS, ... of the tile. (Given complete: it is the starting point.)
template <int TILE, int BLOCK_ROWS>
__global__ void __launch_bounds__((TILE * BLOCK_ROWS))
    transpose_naive_kernel(const float* __restrict__ in, float* __restrict__ out, int rows,
                           int cols) {
  static_assert(TILE % 32 == 0, "TILE must be a multiple of the warp size (32)");
  static_assert(TILE % BLOCK_ROWS == 0, "TILE must be a multiple of BLOCK_ROWS");
  const int col = blockIdx.x * TILE + threadIdx.x;
  if (col >= cols) return;
#pragma unroll
  for (int j = 0; j < TILE; j += BLOCK_ROWS) {
    const int row = blockIdx.y * TILE + threadIdx.y + j;
    if (row < rows) {
      // A warp reads 32 consecutive floats of one row of `in` (one 128-byte line) and writes
      // them down a column of `out`, `rows` floats apart: 32 lines.
      out[static_cast<std::int64_t>(col) * rows + row] =
          in[static_cast<std::int64_t>(row) * cols + col];
    }
  }
}
// ---- end of given ----

// transpose_tiled (PAD = 0) and transpose_padded (PAD = kPadding): the same kernel with a
// different row stride for the shared tile.
template <int TILE, int BLOCK_ROWS, int PAD>
__global__ void __launch_bounds__((TILE * BLOCK_ROWS))
    transpose_tile_kernel(const float* __restrict__ in, float* __restrict__ out, int rows,
                          int cols) {
  static_assert(TILE % 32 == 0,
                "TILE must be a multiple of the warp size (32): a warp covers "
                "one row of the tile");
  static_assert(TILE % BLOCK_ROWS == 0,
                "TILE must be a multiple of BLOCK_ROWS: each thread "
                "moves TILE / BLOCK_ROWS rows of the tile");
  static_assert(PAD >= 0, "PAD is a number of extra floats per tile row");
  __shared__ float tile[TILE][TILE + PAD];

  // Load. Tile row i (i = ty, ty + BLOCK_ROWS, ...) is row by * TILE + i of `in`: the warp
  // reads 32 consecutive floats of it (coalesced) and stores them along tile row i (32
  // consecutive words: 32 different banks, no conflict).
  const int in_col = blockIdx.x * TILE + threadIdx.x;
#pragma unroll
  for (int j = 0; j < TILE; j += BLOCK_ROWS) {
    const int i = threadIdx.y + j;
    const int in_row = blockIdx.y * TILE + i;
    if (in_row < rows && in_col < cols) {
      tile[i][threadIdx.x] = in[static_cast<std::int64_t>(in_row) * cols + in_col];
    }
  }

  // Every thread reads elements other threads stored: wait until the whole tile is in.
  __syncthreads();

  // Store. Row r of `out` is column r of `in`, so row i of the transposed tile is out row
  // bx * TILE + i, columns by * TILE + tx: 32 consecutive floats per warp (coalesced). Its
  // values are tile[tx][i]: the warp reads the tile down column i. Those 32 words are
  // TILE + PAD apart: with PAD = 0 all of them sit in bank i % 32 (a 32-way conflict); with
  // PAD = 1 they sit in banks (tx + i) % 32, all different.
  const int out_col = blockIdx.y * TILE + threadIdx.x;  // a row of `in`
#pragma unroll
  for (int j = 0; j < TILE; j += BLOCK_ROWS) {
    const int i = threadIdx.y + j;
    const int out_row = blockIdx.x * TILE + i;  // a column of `in`
    if (out_row < cols && out_col < rows) {
      out[static_cast<std::int64_t>(out_row) * rows + out_col] = tile[threadIdx.x][i];
    }
  }
}

// ---- given: the same in the skeleton and the solution (./course check compares) ----
// The checks every transpose launcher makes. Returns false when there is nothing to do.
bool check_transpose_arguments(const char* function, const float* in, const float* out, int rows,
                               int cols) {
  require(rows >= 0, function, "rows must be >= 0, got " + std::to_string(rows));
  require(cols >= 0, function, "cols must be >= 0, got " + std::to_string(cols));
  if (rows == 0 || cols == 0) return false;  // an empty matrix; a launch of 0 blocks is an error
  require(in != nullptr && out != nullptr, function,
          "in and out must be device pointers, got null");
  // The kernels compute indices in int: keep blockIdx * kTile + threadIdx below INT_MAX.
  require(rows <= INT_MAX - kTile && cols <= INT_MAX - kTile, function,
          "rows and cols must be at most INT_MAX - " + std::to_string(kTile));
  require_grid_y(ceil_div(rows, kTile), function, "rows = " + std::to_string(rows));
  const auto elements = static_cast<std::uintptr_t>(rows) * static_cast<std::uintptr_t>(cols);
  const auto in_begin = reinterpret_cast<std::uintptr_t>(in);
  const auto out_begin = reinterpret_cast<std::uintptr_t>(out);
  const bool overlap = in_begin < out_begin + elements * sizeof(float) &&
                       out_begin < in_begin + elements * sizeof(float);
  require(!overlap, function,
          "in and out overlap: this transpose works out of place only (rows = " +
              std::to_string(rows) + ", cols = " + std::to_string(cols) + ")");
  return true;
}

// One launcher for the three kernels: they share the grid (one block per kTile x kTile tile)
// and the block (kTile x kBlockRows threads).
template <typename Kernel>
void launch_transpose(Kernel kernel, const char* function, const float* in, float* out, int rows,
                      int cols, cudaStream_t stream) {
  if (!check_transpose_arguments(function, in, out, rows, cols)) return;
  const dim3 block(kTile, kBlockRows);
  const dim3 grid(ceil_div(cols, kTile), ceil_div(rows, kTile));
  kernel<<<grid, block, 0, stream>>>(in, out, rows, cols);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void transpose_naive(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  launch_transpose(transpose_naive_kernel<kTile, kBlockRows>, "transpose_naive", in, out, rows,
                   cols, stream);
}

void transpose_tiled(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  launch_transpose(transpose_tile_kernel<kTile, kBlockRows, 0>, "transpose_tiled", in, out, rows,
                   cols, stream);
}

void transpose_padded(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  launch_transpose(transpose_tile_kernel<kTile, kBlockRows, kPadding>, "transpose_padded", in, out,
                   rows, cols, stream);
}

SharedTile transpose_tiled_tile() { return {kTile, kTile, kTile}; }
SharedTile transpose_padded_tile() { return {kTile, kTile, kTile + kPadding}; }

}  // namespace course::COURSE_IMPL
// ---- end of given ----
