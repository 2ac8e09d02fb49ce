// Exercise m2.05, part 1: a 1D register tile. (Reference solution.)
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
  __shared__ float As[BM][BK];
  __shared__ float Bs[BK][BN];

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

  float acc[TM] = {};  // the register tile: TM elements of C
  for (int k0 = 0; k0 < K; k0 += BK) {
    // Copy the tiles, with zeros outside the matrices so the loop below needs no checks.
    const int a_m = block_m + a_row, a_k = k0 + a_col;
    As[a_row][a_col] =
        a_m < M && a_k < K ? __ldg(A + static_cast<std::ptrdiff_t>(a_m) * K + a_k) : 0.0f;
    const int b_k = k0 + b_row, b_n = block_n + b_col;
    Bs[b_row][b_col] =
        b_k < K && b_n < N ? __ldg(B + static_cast<std::ptrdiff_t>(b_k) * N + b_n) : 0.0f;
    __syncthreads();

    // One value of B, kept in a register, for TM multiply-adds.
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float b = Bs[k][col];
#pragma unroll
      for (int i = 0; i < TM; ++i) acc[i] = fmaf(As[row0 + i][k], b, acc[i]);
    }
    __syncthreads();  // everyone is done with the tiles before they are overwritten
  }

  const int c_n = block_n + col;
  if (c_n >= N) return;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int c_m = block_m + row0 + i;
    if (c_m >= M) break;
    float* out = C + static_cast<std::ptrdiff_t>(c_m) * N + c_n;
    *out = beta == 0.0f ? alpha * acc[i] : alpha * acc[i] + beta * *out;
  }
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
