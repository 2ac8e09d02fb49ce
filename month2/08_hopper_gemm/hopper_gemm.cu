// Exercise m2.08 (bonus, sm_90): the Hopper path cuBLAS takes. (Skeleton: the TODOs are yours.)
//
// What changes from m2.07's mma_gemm, and why it is faster on an H100 or H200:
//  * wgmma instead of mma.sync. One instruction of a warpgroup (4 warps) computes a
//    64 x 256 x 16 product, reading A and B straight from shared memory: no ldmatrix, no
//    fragments in registers, and the tensor cores run at Hopper's full rate, which mma.sync
//    cannot reach. It is asynchronous: the warps issue a tile's products and go on.
//  * The TMA instead of cp.async. One thread copies a whole tile with one instruction,
//    swizzled as wgmma wants it, zeros outside the matrix; the copy completes on an mbarrier.
//    The other threads do not spend a single instruction on addresses.
//  * Warp specialisation. Warpgroup 0 is the producer: one of its threads keeps the four
//    stages of shared memory filled. Warpgroups 1 and 2 are consumers: each multiplies 64
//    rows of the 128 x 256 block tile. They talk through two barriers per stage: "full"
//    (the TMA has delivered it) and "empty" (both consumers are done with it). The producer
//    needs few registers and gives them to the consumers (setmaxnreg), which hold
//    128 accumulators each.
// README.md explains each piece and shows what the benchmark measured.
#include "hopper_gemm.h"

// ---- given: the same in the skeleton and the solution (./course check compares) ----
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "course/block_order.h"
#include "course/cuda_check.h"
#include "course/gemm.h"
#include "course/hopper.h"
#include "course/launch.h"
#include "course/mma_sync.h"

namespace course::COURSE_IMPL {  // see course/impl.h
namespace {

namespace hw = course::hopper;

constexpr int kBlockM = 128, kBlockN = 256, kBlockK = 64;  // 64 halves: one 128-byte row
constexpr int kStages = 4;
constexpr int kConsumers = 2;  // warpgroups that multiply, 64 rows each
constexpr int kThreads = 128 * (1 + kConsumers);
constexpr int kBoxN = 64;  // B arrives in 4 boxes of 64 columns (128 bytes)
constexpr int kATileBytes = kBlockM * kBlockK * 2;           // 16 KiB
constexpr int kBBoxBytes = kBlockK * kBoxN * 2;              // 8 KiB
constexpr int kBTileBytes = kBBoxBytes * (kBlockN / kBoxN);  // 32 KiB
constexpr int kStageBytes = kATileBytes + kBTileBytes;
// The tiles, 1024-byte aligned (the 128-byte swizzle repeats every 8 rows), then the barriers.
constexpr int kSharedBytes = kStages * kStageBytes + 2 * kStages * 8 + 1024;
static_assert(kSharedBytes <= 227 * 1024, "the stages must fit in 227 KiB of shared memory");
// ---- end of given ----
constexpr int kGroupRows = 16;  // course/block_order.h

template <typename Element>
__global__ void __launch_bounds__(kThreads, 1)
    hopper_gemm_kernel(const __grid_constant__ CUtensorMap a_map,
                       const __grid_constant__ CUtensorMap b_map, int M, int N, int K, float alpha,
                       float beta, float* __restrict__ C) {
  extern __shared__ unsigned char dynamic_shared[];
  // Round the base up to 1024 bytes (the launcher asked for 1024 more).
  unsigned char* base = dynamic_shared + ((1024 - hw::smem(dynamic_shared) % 1024) % 1024);
  auto a_tile = [&](int stage) { return base + stage * kStageBytes; };
  auto b_tile = [&](int stage) { return base + stage * kStageBytes + kATileBytes; };
  auto* full = reinterpret_cast<std::uint64_t*>(base + kStages * kStageBytes);
  std::uint64_t* empty = full + kStages;

  const int warpgroup = static_cast<int>(threadIdx.x) / 128;
  const int thread = static_cast<int>(threadIdx.x) % 128;
  const TileIndex tile = grouped_tile<kGroupRows>(
      static_cast<int>(blockIdx.x), (M + kBlockM - 1) / kBlockM, (N + kBlockN - 1) / kBlockN);
  const int block_m = tile.row * kBlockM, block_n = tile.col * kBlockN;
  const int num_tiles = (K + kBlockK - 1) / kBlockK;  // tiles of K

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      hw::barrier_init(&full[s], 1);                  // the producer's arrival + the bytes
      hw::barrier_init(&empty[s], kConsumers * 128);  // every consumer thread
    }
    hw::fence_barrier_init();
  }
  __syncthreads();

  if (warpgroup == 0) {
    // The producer. Round r of stage s is tile t = r * kStages + s; before refilling a
    // stage, wait for the consumers to have emptied it in round r - 1.
    hw::release_registers<40>();
    if (thread == 0) {
      // TODO(m2.08a): for every tile t of K (num_tiles of them): its stage s = t % kStages
      // and round t / kStages. From round 1 on, wait until the consumers have emptied the
      // stage: hw::wait_for_phase(&empty[s], (round - 1) % 2). Then announce the bytes on
      // the stage's full barrier, hw::arrive_expecting_bytes(&full[s], kStageBytes), and
      // issue the copies that deliver them there: A's tile at (block_m, k0 = t * kBlockK)
      // into a_tile(s), hw::copy_tile_async(a_tile(s), &a_map, block_m, k0, &full[s]);
      // then B's four boxes of 64 columns, (k0, block_n + 64 box), into
      // b_tile(s) + box * kBBoxBytes.
      (void)num_tiles;
      (void)block_m;
      (void)block_n;
    }
    return;
  }

  // A consumer: 64 rows (consumer * 64 ..) x 256 columns of the block tile.
  hw::claim_registers<232>();
  const int consumer = warpgroup - 1;
  float acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0.0f;

  for (int t = 0; t < num_tiles; ++t) {
    // TODO(m2.08b): wait for tile t's stage s = t % kStages to be full (phase parity
    // (t / kStages) % 2), then hw::wgmma_fence() and, for each 16-deep slice k of the tile,
    // hw::wgmma_64x256x16<Element>(acc, a, b) with the descriptors of this consumer's part of it:
    //   a = hw::matrix_descriptor(a_tile(s) + consumer * 64 * 128 + k * 2, 16, 1024)
    //       (64 rows of 128 bytes down, k halves in; 8-row groups 1024 bytes apart)
    //   b = hw::matrix_descriptor(b_tile(s) + k * 128, kBBoxBytes, 1024)
    //       (k rows of 128 bytes down; boxes of 64 columns kBBoxBytes apart)
    // Then hw::wgmma_commit(), hw::wgmma_wait<1>() (this tile's products may still run;
    // the previous tile's are done), and give the previous tile's stage back:
    // hw::arrive(&empty[(t - 1) % kStages]) when t > 0.
    (void)consumer;
  }
  hw::wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < 128; ++i) hw::fence_accumulator(acc[i]);

  // Epilogue, straight from the accumulators (layout: course/hopper.h).
  const int warp = thread / 32, lane = thread % 32;
  const int row = block_m + consumer * 64 + warp * 16 + lane / 4;
  const bool aligned = pairs_aligned(C, N);
#pragma unroll
  for (int j = 0; j < kBlockN / 8; ++j) {
    const int col = block_n + j * 8 + (lane % 4) * 2;
    store_accumulator_pair(C, M, N, row, col, alpha, beta, acc[4 * j], acc[4 * j + 1], aligned);
    store_accumulator_pair(C, M, N, row + 8, col, alpha, beta, acc[4 * j + 2], acc[4 * j + 3],
                           aligned);
  }
}

// ---- given: the same in the skeleton and the solution (./course check compares) ----
// C = beta * C (C = 0 when beta == 0, never reading C), for K == 0.
__global__ void scale_c_kernel(long long count, float beta, float* __restrict__ C) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) C[i] = beta == 0.0f ? 0.0f : beta * C[i];
}

void scale_c(int M, int N, float beta, float* C, cudaStream_t stream) {
  const long long count = static_cast<long long>(M) * N;
  scale_c_kernel<<<static_cast<unsigned>(ceil_div(count, 256LL)), 256, 0, stream>>>(count, beta, C);
  CUDA_CHECK_LAUNCH();
}

template <typename Element>
void launch_hopper_gemm(const char* function, CUtensorMapDataType type, int M, int N, int K,
                        float alpha, const Element* A, const Element* B, float beta, float* C,
                        cudaStream_t stream) {
  require_gemm_arguments(function, M, N, K);
  hw::require_hopper_gpu(function);
  if (M == 0 || N == 0) return;  // C is empty, and a launch of zero blocks is an error
  require(C != nullptr && (K == 0 || (A != nullptr && B != nullptr)), function,
          "A, B and C must be device pointers, got null");
  require(K % 8 == 0 && N % 8 == 0, function,
          "the TMA copies rows whose length is a multiple of 16 bytes: K and N must be "
          "multiples of 8, got " +
              to_string(GemmShape{M, N, K}) + "; m2.07's mma_gemm takes any shape");
  require(is_aligned(A, 16) && is_aligned(B, 16), function,
          "the TMA needs A and B 16-byte aligned; m2.07's mma_gemm takes any alignment");
  if (K == 0) {  // nothing to multiply, and a tensor map of zero columns is an error
    scale_c(M, N, beta, C, stream);
    return;
  }
  // The tensor maps: A in boxes of 128 rows x 64 columns; B in boxes of 64 rows (K) x 64
  // columns (N). Built per call: a few microseconds on the host.
  const CUtensorMap a_map = hw::make_tensor_map_2d(A, type, M, K, kBlockM, kBlockK);
  const CUtensorMap b_map =
      hw::make_tensor_map_2d(B, type, static_cast<std::uint64_t>(K), N, kBlockK, kBoxN);
  const long long blocks =
      static_cast<long long>(ceil_div(M, kBlockM)) * ceil_div(N, kBlockN);  // <= M * N
  CUDA_CHECK(cudaFuncSetAttribute(hopper_gemm_kernel<Element>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize, kSharedBytes));
  hopper_gemm_kernel<Element><<<static_cast<unsigned>(blocks), kThreads, kSharedBytes, stream>>>(
      a_map, b_map, M, N, K, alpha, beta, C);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void hopper_gemm(int M, int N, int K, float alpha, const __half* A, const __half* B, float beta,
                 float* C, cudaStream_t stream) {
  launch_hopper_gemm("hopper_gemm", CU_TENSOR_MAP_DATA_TYPE_FLOAT16, M, N, K, alpha, A, B, beta, C,
                     stream);
}

void hopper_gemm_bf16(int M, int N, int K, float alpha, const __nv_bfloat16* A,
                      const __nv_bfloat16* B, float beta, float* C, cudaStream_t stream) {
  launch_hopper_gemm("hopper_gemm_bf16", CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, M, N, K, alpha, A, B,
                     beta, C, stream);
}

}  // namespace course::COURSE_IMPL
// ---- end of given ----
