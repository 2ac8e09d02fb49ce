// Exercise m2.04, part 2: the same bank conflict inside a GEMM, and the same fix.
//
// C = alpha * A * B + beta * C, row-major, float32, with 32 x 32 tiles of A and B staged in
// shared memory as in m2.03. What changes from m2.03: the B tile is stored transposed,
// Bt[n][k] = B[k][n], so that every thread's dot product walks along a row of As and a row of
// Bt, the way C[m][n] = sum_k A[m][k] * B[k][n] reads on paper (row m of A times column n of
// B, with that column now laid out as a row).
//
// The cost shows in the inner loop. In one step k the 32 threads of a warp (one value of ty,
// tx = 0..31) read Bt[tx][k]: 32 words, one tile row apart, a column of Bt.
//   gemm_conflicted  Bt is [32][32]: a row is 32 words, so the column is all in bank k % 32.
//                    Every read of Bt is a 32-way conflict (32 passes instead of 1); the
//                    store of the transposed tile is another one.
//   gemm_padded      Bt is [32][33]: the column spreads over the 32 banks. One pass; the
//                    kernel is back at about the speed of m2.03's tiled GEMM.
// (The tile of A is read as As[ty][k]: one address for the whole warp, a broadcast, which
// costs one pass whatever the layout.)
//
// Fill in TODO(m2.04c) (the transposed B tile) and TODO(m2.04d) (its padding), then run
// `./course grade m2_04` to check your work.
#include <climits>
#include <cstdint>
#include <string>

#include "bank_conflicts.h"
#include "course/cuda_check.h"
#include "course/gemm.h"
#include "course/launch.h"

namespace course::COURSE_IMPL {  // see course/impl.h
namespace {

// A kTile x kTile block of threads computes a kTile x kTile tile of C, one element each.
constexpr int kTile = 32;

// TODO(m2.04d): the padding of the rows of the transposed B tile, in floats, for gemm_padded.
// 0 reproduces the conflicts of gemm_conflicted; pick the value that fixed the transpose.
constexpr int kPadding = 0;

// Block (bx, by) computes C rows by * TILE + ty, columns bx * TILE + tx; thread (tx, ty) one
// element of it. Tiles that stick out past M, N or K are filled with zeros, which add nothing
// to the dot products.
template <int TILE, int PAD>
__global__ void __launch_bounds__((TILE * TILE))
    gemm_transposed_tile_kernel(int M, int N, int K, float alpha, const float* __restrict__ A,
                                const float* __restrict__ B, float beta, float* __restrict__ C) {
  static_assert(TILE == 32,
                "TILE must be the warp size (32): a warp is one row of the tile, "
                "and TILE * TILE threads must fit in a block");
  static_assert(PAD >= 0, "PAD is a number of extra floats per tile row");
  __shared__ float As[TILE][TILE];  // As[m][k] = A[by * TILE + m][k0 + k]
  // TODO(m2.04c), part 1: declare the transposed B tile,
  //   __shared__ float Bt[TILE][TILE + PAD];   // Bt[n][k] = B[k0 + k][bx * TILE + n]

  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty;  // of C and A
  const int col = blockIdx.x * TILE + tx;  // of C and B

  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    // A tile: the warp reads 32 consecutive floats of row `row` of A (coalesced) and stores
    // them along row ty of As: no conflict.
    const int a_k = k0 + tx;
    As[ty][tx] = (row < M && a_k < K) ? A[static_cast<std::int64_t>(row) * K + a_k] : 0.0f;
    // TODO(m2.04c), part 2: thread (tx, ty) reads B[k0 + ty][col] (0.0f when k0 + ty >= K or
    // col >= N) and stores it in Bt[tx][ty]. Example: thread (tx = 5, ty = 2) of block
    // (1, 0), with k0 = 32, stores B[34][37] in Bt[5][2].
    __syncthreads();  // the tiles are complete

    // TODO(m2.04c), part 3: add this thread's share of the tile's dot product,
    //   acc += As[ty][k] * Bt[tx][k]   for k = 0 .. TILE - 1.
    __syncthreads();  // everyone is done reading before the next tiles overwrite these
  }

  if (row < M && col < N) {
    float* c = &C[static_cast<std::int64_t>(row) * N + col];
    // beta == 0: C is not read, so a C full of NaN (or never initialised) gives alpha * A * B.
    *c = (beta == 0.0f) ? alpha * acc : alpha * acc + beta * *c;
  }
}

// ---- given: the same in the skeleton and the solution (./course check compares) ----
// One launcher for both kernels: the checks, the grid (one block per kTile x kTile tile of C)
// and the launch.
template <typename Kernel>
void launch_gemm(Kernel kernel, const char* function, int M, int N, int K, float alpha,
                 const float* A, const float* B, float beta, float* C, cudaStream_t stream) {
  require_gemm_arguments(function, M, N, K);  // sizes >= 0, every matrix indexable with int
  if (M == 0 || N == 0) return;               // C is empty; a launch of 0 blocks is an error
  require(C != nullptr, function, "C must be a device pointer, got null");
  require(K == 0 || (A != nullptr && B != nullptr), function,
          "A and B must be device pointers, got null");
  // One block per kTile rows in y (kMaxGridY at most); blockIdx.x * kTile + threadIdx.x and
  // k0 + kTile are ints.
  require_grid_y(ceil_div(M, kTile), function, "M = " + std::to_string(M));
  require(N <= INT_MAX - kTile && K <= INT_MAX - kTile, function,
          "N and K must be at most INT_MAX - " + std::to_string(kTile) +
              ", got N = " + std::to_string(N) + ", K = " + std::to_string(K));
  const dim3 block(kTile, kTile);
  const dim3 grid(ceil_div(N, kTile), ceil_div(M, kTile));
  kernel<<<grid, block, 0, stream>>>(M, N, K, alpha, A, B, beta, C);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void gemm_conflicted(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                     float* C, cudaStream_t stream) {
  launch_gemm(gemm_transposed_tile_kernel<kTile, 0>, "gemm_conflicted", M, N, K, alpha, A, B, beta,
              C, stream);
}

void gemm_padded(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                 float* C, cudaStream_t stream) {
  launch_gemm(gemm_transposed_tile_kernel<kTile, kPadding>, "gemm_padded", M, N, K, alpha, A, B,
              beta, C, stream);
}

SharedTile gemm_conflicted_b_tile() { return {kTile, kTile, kTile}; }
SharedTile gemm_padded_b_tile() { return {kTile, kTile, kTile + kPadding}; }

}  // namespace course::COURSE_IMPL
// ---- end of given ----
