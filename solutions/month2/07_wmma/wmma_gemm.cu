// Exercise m2.07: tensor cores through the WMMA API. (Reference solution.)
//
// What changes from m2.05: the multiply-adds leave the CUDA cores. A tensor core multiplies
// small matrices: one warp-wide instruction, mma_sync, computes a 16 x 16 x 16 product
// (4096 multiply-adds) from two "fragments" of float16 and accumulates it in float32. The
// WMMA API (nvcuda::wmma, <mma.h>) hands those fragments to the warp as opaque objects:
// load_matrix_sync fills one from memory, mma_sync multiplies, store_matrix_sync writes the
// result. Which lane holds which element is the hardware's business.
//  * wmma_gemm_simple (part 1): one warp per 16 x 16 tile of C, straight from global
//    memory. Short, and faster than m2.01 to m2.04; but every fragment is read from global
//    memory (or L2) by every warp that needs it and used once, so it stays behind m2.05's
//    register-tiled SGEMM: a faster unit does not help a kernel that cannot feed it.
//  * wmma_gemm (part 2): m2.03's idea again, one level up. A block stages 128 x 32 of A and
//    32 x 128 of B in shared memory (copied asynchronously, one tile ahead), and each of its
//    8 warps computes 64 x 32 of C from there: 4 x 2 accumulator fragments, so every A
//    fragment it loads is used twice and every B fragment four times (m2.05's register
//    tiling, with fragments for registers). The shared tiles are padded (m2.04): without
//    it, the rows that load_matrix_sync reads would all start in the same banks.
// README.md explains each piece, and what the benchmark shows.
#include "wmma_gemm.h"

// ---- given: the same in the skeleton and the solution (./course check compares) ----
#include <mma.h>

#include <cstdint>
#include <string>

#include "course/async_copy.h"
#include "course/block_loop.h"
#include "course/cuda_check.h"
#include "course/gemm.h"
#include "course/launch.h"

namespace course::COURSE_IMPL {  // see course/impl.h
namespace {

namespace wmma = nvcuda::wmma;

// The tensor-core tile: a 16 x 16 x 16 product per mma_sync, float16 in, float32 out.
constexpr int kFragment = 16;
using FragmentA = wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major>;
using FragmentB = wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major>;
using Accumulator = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;
// ---- end of given ----

// alpha * acc + beta * C for one fragment, written where C's fragment is (a 16 x 16 tile
// with leading dimension ldc). An accumulator's elements sit in the same lanes whatever
// memory they came from, so loading C into a second accumulator and combining the two
// element by element (acc.x[i]) is legal, although nobody says which (row, column) x[i] is.
__device__ __forceinline__ void store_scaled(Accumulator& acc, float alpha, float beta, float* c,
                                             int ldc) {
  if (beta != 0.0f) {
    Accumulator old;
    wmma::load_matrix_sync(old, c, ldc, wmma::mem_row_major);
    for (int i = 0; i < acc.num_elements; ++i) acc.x[i] = alpha * acc.x[i] + beta * old.x[i];
  } else {
    for (int i = 0; i < acc.num_elements; ++i) acc.x[i] = alpha * acc.x[i];
  }
  wmma::store_matrix_sync(c, acc, ldc, wmma::mem_row_major);
}

// --- Part 1 -------------------------------------------------------------------------------
// Warp w of the grid computes the tile of C at (tile_row, tile_col) = (w / tiles_n, w % tiles_n).
__global__ void wmma_gemm_simple_kernel(int M, int N, int K, float alpha,
                                        const __half* __restrict__ A, const __half* __restrict__ B,
                                        float beta, float* __restrict__ C) {
  const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32);
  const int tiles_n = N / kFragment;
  if (warp >= (M / kFragment) * tiles_n) return;  // the whole warp leaves together
  const int row = (warp / tiles_n) * kFragment;
  const int col = (warp % tiles_n) * kFragment;

  Accumulator acc;
  wmma::fill_fragment(acc, 0.0f);
  FragmentA a;
  FragmentB b;
  for (int k = 0; k < K; k += kFragment) {
    // A[row .. row+15][k .. k+15] (leading dimension K) and B[k .. k+15][col .. col+15] (N).
    wmma::load_matrix_sync(a, A + static_cast<std::ptrdiff_t>(row) * K + k, K);
    wmma::load_matrix_sync(b, B + static_cast<std::ptrdiff_t>(k) * N + col, N);
    wmma::mma_sync(acc, a, b, acc);  // acc += a * b, 16 x 16 x 16 on the tensor cores
  }
  store_scaled(acc, alpha, beta, C + static_cast<std::ptrdiff_t>(row) * N + col, N);
}

// ---- given: the same in the skeleton and the solution (./course check compares) ----
// --- Part 2 -------------------------------------------------------------------------------
constexpr int kBlockM = 128, kBlockN = 128, kBlockK = 32;
constexpr int kWarpM = 64, kWarpN = 32;  // a warp's part of the block tile
constexpr int kWarpsN = kBlockN / kWarpN;
constexpr int kThreads = 32 * (kBlockM / kWarpM) * kWarpsN;                        // 8 warps
constexpr int kFragmentsM = kWarpM / kFragment, kFragmentsN = kWarpN / kFragment;  // 4 x 2
// Shared tiles, row-major, padded by 8 halves (16 bytes) per row. load_matrix_sync reads 16
// rows of 16 halves (32 bytes) each: with rows of 32 or 128 halves (64 or 256 bytes) those
// row starts would fall into the same few banks; 40 and 136 halves spread them. The
// padding keeps every row 16-byte aligned for the copies, and every fragment 32-byte
// aligned, as load_matrix_sync requires.
constexpr int kLdA = kBlockK + 8, kLdB = kBlockN + 8;
constexpr int kStageHalves = kBlockM * kLdA + kBlockK * kLdB;
constexpr int kStages = 2;
// The epilogue reuses the shared memory: one 16 x 16 float scratch tile per warp.
static_assert(kStages * kStageHalves * 2 >= kThreads / 32 * 256 * 4,
              "the epilogue's scratch tiles must fit in the shared memory of the stages");

// The 16-byte asynchronous copies (cp.async) of m2.05, from course/async_copy.h:
// copy_16_bytes_async writes zeros when bytes == 0; on GPUs older than sm_80 it is an
// ordinary load and store.

// Copies the tile of A (rows block_m.., columns k0..) and of B (rows k0.., columns
// block_n..) into `stage`, zeros outside the matrices. kVectorized: 8 halves (16 bytes) per
// copy, which needs K % 8 == 0, N % 8 == 0 and 16-byte aligned A and B, so that a group of 8
// is all inside or all outside; otherwise one half at a time with ordinary loads.
template <bool kVectorized>
__device__ __forceinline__ void copy_tiles(__half* stage, const __half* __restrict__ A,
                                           const __half* __restrict__ B, int M, int N, int K,
                                           int block_m, int block_n, int k0) {
  __half* As = stage;
  __half* Bs = stage + kBlockM * kLdA;
  const int tid = static_cast<int>(threadIdx.x);
  if (kVectorized) {
    // A: 128 rows x 4 groups of 8; B: 32 rows x 16 groups of 8. 512 copies each, 2 per thread.
    constexpr int kCopiesA = kBlockM * (kBlockK / 8), kCopiesB = kBlockK * (kBlockN / 8);
    for_each_block_item<kCopiesA, kThreads>(tid, [&](int i) {
      const int r = i / (kBlockK / 8), c = (i % (kBlockK / 8)) * 8;
      const bool inside = block_m + r < M && k0 + c < K;
      copy_16_bytes_async(shared_address(As + r * kLdA + c),
                          inside ? A + static_cast<std::ptrdiff_t>(block_m + r) * K + k0 + c : A,
                          inside ? 16 : 0);
    });
    for_each_block_item<kCopiesB, kThreads>(tid, [&](int i) {
      const int r = i / (kBlockN / 8), c = (i % (kBlockN / 8)) * 8;
      const bool inside = k0 + r < K && block_n + c < N;
      copy_16_bytes_async(shared_address(Bs + r * kLdB + c),
                          inside ? B + static_cast<std::ptrdiff_t>(k0 + r) * N + block_n + c : B,
                          inside ? 16 : 0);
    });
  } else {
    const __half zero = __float2half(0.0f);
    for (int i = tid; i < kBlockM * kBlockK; i += kThreads) {
      const int r = i / kBlockK, c = i % kBlockK;
      const bool inside = block_m + r < M && k0 + c < K;
      As[r * kLdA + c] = inside ? A[static_cast<std::ptrdiff_t>(block_m + r) * K + k0 + c] : zero;
    }
    for (int i = tid; i < kBlockK * kBlockN; i += kThreads) {
      const int r = i / kBlockN, c = i % kBlockN;
      const bool inside = k0 + r < K && block_n + c < N;
      Bs[r * kLdB + c] = inside ? B[static_cast<std::ptrdiff_t>(k0 + r) * N + block_n + c] : zero;
    }
  }
}
// ---- end of given ----

template <bool kVectorized>
__global__ void __launch_bounds__(kThreads)
    wmma_gemm_kernel(int M, int N, int K, float alpha, const __half* __restrict__ A,
                     const __half* __restrict__ B, float beta, float* __restrict__ C) {
  __shared__ __align__(128) __half shared[kStages * kStageHalves];
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int block_m = static_cast<int>(blockIdx.y) * kBlockM;
  const int block_n = static_cast<int>(blockIdx.x) * kBlockN;
  const int warp_m = (warp / kWarpsN) * kWarpM;  // this warp's tile inside the block tile
  const int warp_n = (warp % kWarpsN) * kWarpN;

  Accumulator acc[kFragmentsM][kFragmentsN];
#pragma unroll
  for (int i = 0; i < kFragmentsM; ++i) {
#pragma unroll
    for (int j = 0; j < kFragmentsN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  }

  // Double buffering: tile t is computed from one stage while tile t + 1 is copied into
  // the other.
  const int num_tiles = (K + kBlockK - 1) / kBlockK;
  if (num_tiles > 0) copy_tiles<kVectorized>(shared, A, B, M, N, K, block_m, block_n, 0);
  commit_copies();
  for (int t = 0; t < num_tiles; ++t) {
    __half* stage = shared + (t % kStages) * kStageHalves;
    if (t + 1 < num_tiles) {
      copy_tiles<kVectorized>(shared + ((t + 1) % kStages) * kStageHalves, A, B, M, N, K, block_m,
                              block_n, (t + 1) * kBlockK);
    }
    commit_copies();
    wait_for_copies<1>();  // tile t has landed (this thread's copies) ...
    __syncthreads();       // ... and everyone's

    const __half* As = stage + warp_m * kLdA;
    const __half* Bs = stage + kBlockM * kLdA + warp_n;
    for (int k = 0; k < kBlockK; k += kFragment) {
      FragmentA a[kFragmentsM];
      FragmentB b[kFragmentsN];
#pragma unroll
      for (int i = 0; i < kFragmentsM; ++i) {
        wmma::load_matrix_sync(a[i], As + i * kFragment * kLdA + k, kLdA);
      }
#pragma unroll
      for (int j = 0; j < kFragmentsN; ++j) {
        wmma::load_matrix_sync(b[j], Bs + k * kLdB + j * kFragment, kLdB);
      }
      // 8 tensor-core products from 6 loaded fragments.
#pragma unroll
      for (int i = 0; i < kFragmentsM; ++i) {
#pragma unroll
        for (int j = 0; j < kFragmentsN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
      }
    }
    __syncthreads();  // everyone is done with this stage before it is refilled
  }

  // Epilogue. Which (row, column) an accumulator element belongs to is not specified, so to
  // check the edges of C each fragment goes through a 16 x 16 scratch tile in shared memory
  // (store_matrix_sync), and the lanes write it out element by element: 8 each.
  float* scratch = reinterpret_cast<float*>(shared) + warp * kFragment * kFragment;
#pragma unroll
  for (int i = 0; i < kFragmentsM; ++i) {
#pragma unroll
    for (int j = 0; j < kFragmentsN; ++j) {
      wmma::store_matrix_sync(scratch, acc[i][j], kFragment, wmma::mem_row_major);
      __syncwarp();  // the fragment is in scratch, for every lane
      const int row0 = block_m + warp_m + i * kFragment;
      const int col0 = block_n + warp_n + j * kFragment;
      for (int e = lane; e < kFragment * kFragment; e += 32) {
        const int row = row0 + e / kFragment, col = col0 + e % kFragment;
        if (row < M && col < N) {
          float* c = C + static_cast<std::ptrdiff_t>(row) * N + col;
          *c = beta == 0.0f ? alpha * scratch[e] : alpha * scratch[e] + beta * *c;
        }
      }
      __syncwarp();  // everyone has read scratch before the next fragment overwrites it
    }
  }
}

// ---- given: the same in the skeleton and the solution (./course check compares) ----
}  // namespace

void wmma_gemm_simple(int M, int N, int K, float alpha, const __half* A, const __half* B,
                      float beta, float* C, cudaStream_t stream) {
  const char* function = "wmma_gemm_simple";
  require_gemm_arguments(function, M, N, K);
  require(C != nullptr && (K == 0 || (A != nullptr && B != nullptr)), function,
          "A, B and C must be device pointers, got null");
  require(M % kFragment == 0 && N % kFragment == 0 && K % kFragment == 0, function,
          "M, N and K must be multiples of 16 (the tensor-core tile), got " + std::to_string(M) +
              " x " + std::to_string(N) + " x " + std::to_string(K) + "; wmma_gemm takes any size");
  require(is_aligned(A, 32) && is_aligned(B, 32) && is_aligned(C, 32), function,
          "A, B and C must be 32-byte aligned (load_matrix_sync requires it); wmma_gemm "
          "takes any alignment");
  if (M == 0 || N == 0) return;  // C is empty, and a launch of zero blocks is an error
  // K == 0 is not special: the loop runs zero times and C = beta * C.
  const long long warps = static_cast<long long>(M / kFragment) * (N / kFragment);
  constexpr int kSimpleThreads = 128;  // 4 warps, 4 tiles of C per block
  const long long blocks = (warps * 32 + kSimpleThreads - 1) / kSimpleThreads;
  require(blocks <= 2147483647LL, function, "too many tiles of C for one grid");
  wmma_gemm_simple_kernel<<<static_cast<unsigned>(blocks), kSimpleThreads, 0, stream>>>(
      M, N, K, alpha, A, B, beta, C);
  CUDA_CHECK_LAUNCH();
}

void wmma_gemm(int M, int N, int K, float alpha, const __half* A, const __half* B, float beta,
               float* C, cudaStream_t stream) {
  const char* function = "wmma_gemm";
  require_gemm_arguments(function, M, N, K);
  if (M == 0 || N == 0) return;  // C is empty, and a launch of zero blocks is an error
  require(C != nullptr && (K == 0 || (A != nullptr && B != nullptr)), function,
          "A, B and C must be device pointers, got null");
  const dim3 grid(static_cast<unsigned>(ceil_div(N, kBlockN)),
                  static_cast<unsigned>(ceil_div(M, kBlockM)));
  require_grid_y(grid.y, function, "M = " + std::to_string(M));
  // 16-byte copies of 8 halves need every row of A and B to start on a 16-byte boundary.
  const bool vectorized = K % 8 == 0 && N % 8 == 0 && is_aligned(A, 16) && is_aligned(B, 16);
  if (vectorized) {
    wmma_gemm_kernel<true><<<grid, kThreads, 0, stream>>>(M, N, K, alpha, A, B, beta, C);
  } else {
    wmma_gemm_kernel<false><<<grid, kThreads, 0, stream>>>(M, N, K, alpha, A, B, beta, C);
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace course::COURSE_IMPL
// ---- end of given ----
