// Given code for exercise m2.07, parts 1 and 2 (wmma_gemm.cu): the fragment types, part 2's
// tile shape and its copies into shared memory, and the two launchers. Your skeleton and the
// reference both include it; the kernels you write are in wmma_gemm.cu.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "course/async_copy.h"
#include "course/block_loop.h"
#include "course/cuda_check.h"
#include "course/gemm.h"
#include "course/launch.h"
#include "wmma_gemm.h"

namespace course::COURSE_IMPL {  // see course/impl.h
namespace {

namespace wmma = nvcuda::wmma;

// The tensor-core tile: a 16 x 16 x 16 product per mma_sync, float16 in, float32 out.
constexpr int kFragment = 16;
using FragmentA = wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major>;
using FragmentB = wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major>;
using Accumulator = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

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

// The kernels you write in wmma_gemm.cu, declared here for the launchers below.
__global__ void wmma_gemm_simple_kernel(int M, int N, int K, float alpha,
                                        const __half* __restrict__ A, const __half* __restrict__ B,
                                        float beta, float* __restrict__ C);
template <bool kVectorized>
__global__ void __launch_bounds__(kThreads)
    wmma_gemm_kernel(int M, int N, int K, float alpha, const __half* __restrict__ A,
                     const __half* __restrict__ B, float beta, float* __restrict__ C);

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
