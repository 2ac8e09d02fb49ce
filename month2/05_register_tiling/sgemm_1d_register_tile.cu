// Exercise m2.05, part 1: a 1D register tile.
//
// What changed from the shared-memory tiled GEMM (m2.03): there every thread computed one
// element of C and, for every k, read one value of A and one of B from shared memory for
// a single multiply-add: two shared-memory loads per FMA, so shared memory, not the FMA
// units, set the pace. Here each thread computes TM = 8 elements of one column of C
// (thread coarsening). For every k it reads the value of B once, keeps it in a register,
// and multiplies it with 8 values of A: 9 loads for 8 FMAs, and the 8 accumulators live
// in registers (a "register tile"). The block tile grows to 64 x 64, so each value loaded
// from global memory is reused 64 times instead of 32.
//
// The loads from global memory go through the read-only data path: the pointers are
// `const float* __restrict__` (this kernel never writes A or B, and nothing else aliases
// them) and the loads use __ldg. README.md explains both.
//
// Fill in TODO(m2.05a), (b) and (c), then run `./course grade m2_05` to check your work
// (the tests of part 2, the 2D register tile, fail until you have done it too).
#include <cstddef>
#include <string>

// ---- given: the same in the skeleton and the solution (./course check compares) ----
#include "course/cuda_check.h"
#include "course/gemm.h"
#include "course/launch.h"
#include "register_tiling.h"

namespace course::COURSE_IMPL {  // see course/impl.h
namespace register_tiling_1d {

// The tile: a BM x BN block of C per block, BK deep steps, TM rows of C per thread.
constexpr int BM = 64, BN = 64, BK = 8, TM = 8;
constexpr int kThreads = (BM / TM) * BN;  // 512: one thread per (group of TM rows, column)
static_assert(BM % TM == 0, "a thread computes TM consecutive rows: BM must be a multiple of TM");
static_assert(kThreads <= 1024,
              "a block may have at most 1024 threads: raise TM or shrink the tile");
// ---- end of given ----
static_assert(BM * BK == kThreads && BK * BN == kThreads,
              "each thread copies exactly one element of the A tile (BM x BK) and one of the B "
              "tile (BK x BN): both must have as many elements as the block has threads");

__global__ void __launch_bounds__(kThreads)
    sgemm_1d_kernel(int M, int N, int K, float alpha, const float* __restrict__ A,
                    const float* __restrict__ B, float beta, float* __restrict__ C) {
  [[maybe_unused]] __shared__ float As[BM][BK];
  [[maybe_unused]] __shared__ float Bs[BK][BN];

  const int tid = static_cast<int>(threadIdx.x);
  const int block_m = static_cast<int>(blockIdx.y) * BM;
  const int block_n = static_cast<int>(blockIdx.x) * BN;
  // This thread's column of C, and the first of its TM rows, inside the block tile.
  // Neighbouring threads take neighbouring columns, so a warp reads 32 consecutive floats
  // of a row of Bs (no bank conflicts) and one broadcast value of As.
  const int col = tid % BN;
  const int row0 = (tid / BN) * TM;
  // The element of the A and B tiles this thread copies.
  const int a_row = tid / BK, a_col = tid % BK;
  const int b_row = tid / BN, b_col = tid % BN;

  [[maybe_unused]] float acc[TM] = {};  // the register tile: TM elements of C
  // (Silences "declared but never referenced" until the TODOs use these.)
  (void)As, (void)Bs, (void)block_m, (void)block_n, (void)acc, (void)col, (void)row0;
  (void)a_row, (void)a_col, (void)b_row, (void)b_col;
  for (int k0 = 0; k0 < K; k0 += BK) {
    // TODO(m2.05a): copy this thread's element of each tile into shared memory:
    //   As[a_row][a_col] = A[block_m + a_row][k0 + a_col]
    //   Bs[b_row][b_col] = B[k0 + b_row][block_n + b_col]
    // with 0.0f where the element lies outside the matrix (row >= M or k >= K for A,
    // k >= K or column >= N for B), so the loop below needs no checks. Read through the
    // read-only path: __ldg(A + index). Compute the index in 64 bits
    // (static_cast<std::ptrdiff_t>(row) * K + k): M * K may not fit in an int product.
    __syncthreads();

    // TODO(m2.05b): the register tile. For each k in 0 .. BK-1, read Bs[k][col] once into a
    // register and add it, times As[row0 + i][k], to acc[i] for i = 0 .. TM-1 (fmaf).
    // Example: TM = 2, row0 = 0, k = 0: b = Bs[0][col]; acc[0] += As[0][0] * b;
    // acc[1] += As[1][0] * b. Write the loops with compile-time bounds (BK, TM) and
    // #pragma unroll, so acc[i] stays in registers.
    __syncthreads();  // everyone is done with the tiles before they are overwritten
  }

  // TODO(m2.05c): write the TM results: for i = 0 .. TM-1, the element
  //   C[block_m + row0 + i][block_n + col] = alpha * acc[i] + beta * C[...]
  // if it is inside C (row < M, column < N). When beta == 0, write alpha * acc[i] without
  // reading C: it may hold garbage, and NaN * 0 is NaN.
}

}  // namespace register_tiling_1d

// ---- given: the same in the skeleton and the solution (./course check compares) ----
void sgemm_1d_register_tile(int M, int N, int K, float alpha, const float* A, const float* B,
                            float beta, float* C, cudaStream_t stream) {
  using namespace register_tiling_1d;
  // Bad sizes throw; an empty C (M == 0 or N == 0) leaves nothing to launch.
  if (!gemm_launch_needed("sgemm_1d_register_tile", M, N, K, GridY::rows, BM)) return;

  // x over the column tiles, y over the row tiles.
  const dim3 grid(static_cast<unsigned>(ceil_div(N, BN)), static_cast<unsigned>(ceil_div(M, BM)));
  sgemm_1d_kernel<<<grid, kThreads, 0, stream>>>(M, N, K, alpha, A, B, beta, C);
  CUDA_CHECK_LAUNCH();
}

}  // namespace course::COURSE_IMPL
// ---- end of given ----
