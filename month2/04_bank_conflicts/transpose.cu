// Exercise m2.04, part 1: matrix transpose three ways, and shared-memory bank conflicts.
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
//
// transpose_naive is given complete. Fill in TODO(m2.04a) (the tiled kernel) and
// TODO(m2.04b) (the padding), then run `./course grade m2_04` to check your work.
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

// TODO(m2.04b): the padding of the tile's rows, in floats, for transpose_padded. With 0 the
// tile is [32][32] and a tile column is 32 words that all sit in one bank. Choose the padding
// that puts the 32 words of a column in 32 different banks (bank = word index % 32).
constexpr int kPadding = 0;

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

  // TODO(m2.04a): move this block's tile of `in` to its transposed place in `out` through
  // shared memory, so that both global accesses are coalesced:
  //   - declare the tile: __shared__ float tile[TILE][TILE + PAD];
  //   - load: each warp copies whole rows of the block's tile of `in` into rows of `tile`.
  //     Thread (tx, ty) reads column blockIdx.x * TILE + tx of `in`, tile rows i = ty + j for
  //     j = 0, BLOCK_ROWS, 2 * BLOCK_ROWS, ... < TILE, into tile[i][tx]; it skips elements
  //     outside the matrix;
  //   - __syncthreads(): each thread is about to read elements that other threads loaded;
  //   - store: each warp writes whole rows of `out`. Row i of the transposed tile is row
  //     blockIdx.x * TILE + i of `out`; thread tx writes its column blockIdx.y * TILE + tx,
  //     whose value is tile[tx][i] (a read down a column of `tile`). Skip elements outside
  //     `out`, which is cols x rows.
  //   Compute flat indices in 64 bits: static_cast<std::int64_t>(row) * cols + col.
  //   Example, rows = cols = 64: block (1, 0) holds in[0..31][32..63]. Thread (3, 2) loads
  //   in[2][35] into tile[2][3] (then in[10][35], in[18][35], in[26][35]); after the barrier
  //   it writes tile[3][2], which is in[3][34], to out[34][3] (then tile[3][10] to out[42][3]...).
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
