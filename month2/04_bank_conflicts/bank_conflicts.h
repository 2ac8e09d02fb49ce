// The interface of exercise m2.04 (shared-memory bank conflicts). Your skeleton
// (month2/04_bank_conflicts/*.cu) and the reference (solutions/month2/04_bank_conflicts/*.cu)
// both implement it.
#pragma once

#include <cuda_runtime.h>

#include "course/impl.h"

namespace course {

// A float tile in shared memory, as a kernel declares it:
//   __shared__ float tile[rows][row_stride];
// Element (r, c) is the 4-byte word r * row_stride + c of the tile, so it lives in bank
// (r * row_stride + c) % 32. row_stride is cols plus the padding; the tests use it to count,
// on the CPU, how many words one warp's access puts in the same bank.
struct SharedTile {
  int rows;
  int cols;        // the columns the kernel uses
  int row_stride;  // words from the start of one row to the start of the next
};

}  // namespace course

COURSE_DECLARE_IMPLS(
    // Matrix transpose: `in` is rows x cols, row-major; `out` is cols x rows, row-major, and
    // out[c * rows + r] = in[r * cols + c]. Both are device pointers to separate memory (an
    // in-place transpose is a different algorithm). The work is queued on `stream`.
    // Throws std::invalid_argument for negative sizes, null or overlapping pointers, or more
    // than 65535 * 32 rows; course::CudaError if the launch fails. 0 rows or 0 columns: no-op.
    //
    // transpose_naive: one pass, no shared memory. Reads rows of `in` (coalesced) and writes
    // columns of `out` (every thread of a warp in a different 128-byte line).
    void transpose_naive(const float* in, float* out, int rows, int cols,
                         cudaStream_t stream = nullptr);
    // transpose_tiled: through a 32 x 32 tile in shared memory, so both global accesses are
    // coalesced; the tile is read along a column: 32-way bank conflicts.
    void transpose_tiled(const float* in, float* out, int rows, int cols,
                         cudaStream_t stream = nullptr);
    // transpose_padded: the same, with the tile padded to 32 x 33: no bank conflicts.
    void transpose_padded(const float* in, float* out, int rows, int cols,
                          cudaStream_t stream = nullptr);

    // The shared-memory tiles the two tiled transposes declare.
    SharedTile transpose_tiled_tile();
    SharedTile transpose_padded_tile();

    // SGEMM, row-major: C[M x N] = alpha * A[M x K] * B[K x N] + beta * C, with 32 x 32 tiles
    // of A and B in shared memory. The B tile is kept transposed (column n of the B tile is row
    // n of the shared array), so the inner loop reads it down a column.
    // beta == 0 means C is not read (it may hold NaN). Device pointers; queued on `stream`.
    // Throws std::invalid_argument for negative sizes or null pointers; M, N or K == 0 are
    // handled (K == 0 gives C = beta * C).
    //
    // gemm_conflicted: the transposed B tile is 32 x 32: 32-way bank conflicts.
    void gemm_conflicted(int M, int N, int K, float alpha, const float* A, const float* B,
                         float beta, float* C, cudaStream_t stream);
    // gemm_padded: the transposed B tile is padded to 32 x 33: no bank conflicts.
    void gemm_padded(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                     float* C, cudaStream_t stream);

    // The transposed B tiles the two GEMMs declare.
    SharedTile gemm_conflicted_b_tile();
    SharedTile gemm_padded_b_tile();)
