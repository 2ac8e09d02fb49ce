// Exercise m2.09: GEMMs that stay fast off the square. (Reference solution.)
//
// What changes from m2.05 and m2.07, and why it is faster off the square: their kernels give
// each block one tile of C and all of K. A 16 x 4096 C is 32 tiles of 128 x 128 for 132
// multiprocessors, a 1024 x 1024 C 64: most of the GPU waits while a few blocks walk a long K.
//  * Split-K: the grid's z dimension cuts K into `splits` ranges of k-tiles
//    (split_k_tiles, task m2.09a), so tiles x splits blocks share the work. Each split
//    writes its partial C, in float32, to a workspace [splits][M][N]; a second kernel adds
//    the partials (task m2.09b).
//  * Determinism: the reduction adds split 0, then 1, then 2, ... for every element, in one
//    thread, and no two blocks ever write the same address: no atomics, so the order of the
//    float32 additions, and so every bit of C, is the same on every run.
//  * A skinny 32 x 128 block tile for M <= 64: four times as many blocks as the 128 x 128 one
//    for the same C, and no 96 rows of zeros multiplied per block.
//  * Odd sizes on the float16 path: predicated loads (mma_split_k.h) instead of m2.07's
//    one-half-at-a-time fallback.
//  * The chooser (shape_chooser.cu, task m2.09c) picks the tile and the number of splits
//    from the count of output tiles against the count of multiprocessors.
// The kernels are in the given headers sgemm_split_k.h and mma_split_k.h; README.md explains.
#include "gemm_shapes.h"

// ---- given: the same in the skeleton and the solution (./course check compares) ----
#include <cuda_fp16.h>

#include <cstddef>
#include <memory>
#include <string>

#include "course/cuda_check.h"
#include "course/device_buffer.h"
#include "course/gemm.h"
#include "course/launch.h"
#include "course/requirements.h"

#include "mma_split_k.h"    // the float16 kernel (m2.07's main loop on a range of K)
#include "sgemm_split_k.h"  // the float32 kernel (m2.05's main loop on a range of K)

namespace course::COURSE_IMPL {  // see course/impl.h
// ---- end of given ----

// The k-tiles [begin, end) that split `split` (0 .. splits - 1) runs, out of k_tiles. The
// ranges of splits 0, 1, 2, ... follow each other without gap or overlap, cover
// [0, k_tiles), and differ in length by at most one tile: split s starts at
// floor(s * k_tiles / splits). With more splits than k-tiles some ranges are empty (their
// split writes a partial C of zeros). 64-bit product: s * k_tiles can pass INT_MAX.
__host__ __device__ gemm_shapes::KTileRange split_k_tiles(int split, int splits, int k_tiles) {
  const long long begin = static_cast<long long>(split) * k_tiles / splits;
  const long long end = static_cast<long long>(split + 1) * k_tiles / splits;
  return {static_cast<int>(begin), static_cast<int>(end)};
}

namespace {

// C = alpha * (partial 0 + partial 1 + ... + partial splits-1) + beta * C, one element per
// thread step (a grid-stride loop over the M * N elements). The partials are added in split
// order, each to the running sum, in float32: the same additions in the same order on every
// run, whatever order the blocks of the first kernel ran in. C is not read when beta == 0.
// Consecutive threads take consecutive elements, so every load of a split's slice coalesces.
__global__ void reduce_splits_kernel(int M, int N, int splits, const float* __restrict__ workspace,
                                     float alpha, float beta, float* __restrict__ C) {
  const std::size_t count = static_cast<std::size_t>(M) * N;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    float sum = 0.0f;
    for (int s = 0; s < splits; ++s) sum += workspace[static_cast<std::size_t>(s) * count + i];
    C[i] = beta == 0.0f ? alpha * sum : alpha * sum + beta * C[i];
  }
}

}  // namespace

// ---- given: the same in the skeleton and the solution (./course check compares) ----
namespace {

// The checks both planned launchers start with. False when C is empty (nothing to launch).
bool planned_launch_needed(const char* function, const gemm_shapes::GemmPlan& plan, int M, int N,
                           int K, const void* A, const void* B, const float* C,
                           const float* workspace, std::size_t workspace_floats) {
  require_gemm_arguments(function, M, N, K);
  require(plan.splits >= 1 && plan.splits <= gemm_shapes::kMaxPlannedSplits, function,
          "plan.splits must be 1 .. " + std::to_string(gemm_shapes::kMaxPlannedSplits) + ", got " +
              std::to_string(plan.splits));
  if (M == 0 || N == 0) return false;
  require(C != nullptr && (K == 0 || (A != nullptr && B != nullptr)), function,
          "A, B and C must be device pointers, got null");
  const std::size_t needed = gemm_shapes::workspace_floats(plan, M, N);
  require(needed == 0 || (workspace != nullptr && workspace_floats >= needed), function,
          std::to_string(plan.splits) + " splits of a " + std::to_string(M) + " x " +
              std::to_string(N) + " C need a workspace of " + std::to_string(needed) +
              " floats, got " + std::to_string(workspace != nullptr ? workspace_floats : 0));
  return true;
}

// The second kernel of a split GEMM: a few blocks per multiprocessor, each thread looping.
void launch_reduce(const char* function, int M, int N, int splits, const float* workspace,
                   float alpha, float beta, float* C, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const std::int64_t count = static_cast<std::int64_t>(M) * N;
  const unsigned blocks =
      grid_blocks_1d(function, count < 65536LL * kThreads ? count : 65536LL * kThreads, kThreads);
  reduce_splits_kernel<<<blocks, kThreads, 0, stream>>>(M, N, splits, workspace, alpha, beta, C);
  CUDA_CHECK_LAUNCH();
}

template <class Tile>
void launch_sgemm_tile(const char* function, int splits, int M, int N, int K, float alpha,
                       const float* A, const float* B, float beta, float* C, float* workspace,
                       cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(ceil_div(N, Tile::BN)),
                  static_cast<unsigned>(ceil_div(M, Tile::BM)), static_cast<unsigned>(splits));
  require_grid_y(grid.y, function, "M = " + std::to_string(M));
  const bool vectorized = K % 4 == 0 && N % 4 == 0 && is_aligned(A, 16) && is_aligned(B, 16) &&
                          is_aligned(C, 16) && (splits == 1 || is_aligned(workspace, 16));
  const auto kernel = vectorized ? sgemm_split_k::sgemm_split_k_kernel<Tile, true>
                                 : sgemm_split_k::sgemm_split_k_kernel<Tile, false>;
  kernel<<<grid, Tile::kThreads, 0, stream>>>(M, N, K, alpha, A, B, beta, C, workspace);
  CUDA_CHECK_LAUNCH();
}

template <class Tile, class PredicatedTile>
void launch_hgemm_tile(const char* function, int splits, int M, int N, int K, float alpha,
                       const __half* A, const __half* B, float beta, float* C, float* workspace,
                       cudaStream_t stream) {
  // 16-byte cp.async copies of 8 halves need every row of A and B on a 16-byte boundary;
  // anything else takes the predicated path (mma_split_k.h).
  const bool predicated = !(K % 8 == 0 && N % 8 == 0 && is_aligned(A, 16) && is_aligned(B, 16));
  auto launch = [&](auto kernel, auto tile) {
    using T = decltype(tile);
    const long long blocks =
        static_cast<long long>(ceil_div(M, T::kBlockM)) * ceil_div(N, T::kBlockN);
    allow_dynamic_shared_memory(kernel, T::kSharedBytes, function);
    kernel<<<dim3(static_cast<unsigned>(blocks), 1, static_cast<unsigned>(splits)), T::kThreads,
             T::kSharedBytes, stream>>>(M, N, K, alpha, A, B, beta, C, workspace);
    CUDA_CHECK_LAUNCH();
  };
  if (predicated) {
    launch(mma_split_k::mma_split_k_kernel<PredicatedTile, true>, PredicatedTile{});
  } else {
    launch(mma_split_k::mma_split_k_kernel<Tile, false>, Tile{});
  }
}

// The 64 MiB workspace of the *_shapes functions, one per device, made at the first call
// that needs one (cudaMalloc is slow and synchronizes: never once per GEMM).
constexpr std::size_t kSharedWorkspaceFloats = std::size_t{16} << 20;
int current_device() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

float* shared_workspace() {
  constexpr int kMaxDevices = 64;
  static std::unique_ptr<DeviceBuffer<float>> buffers[kMaxDevices];
  const int device = current_device();
  require(device >= 0 && device < kMaxDevices, "gemm_shapes", "device index out of range");
  if (!buffers[device])
    buffers[device] = std::make_unique<DeviceBuffer<float>>(kSharedWorkspaceFloats);
  return buffers[device]->data();
}

int multiprocessor_count() {
  int count = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, current_device()));
  return count;
}

}  // namespace

void sgemm_planned(const gemm_shapes::GemmPlan& plan, int M, int N, int K, float alpha,
                   const float* A, const float* B, float beta, float* C, float* workspace,
                   std::size_t workspace_floats, cudaStream_t stream) {
  constexpr const char* kFunction = "sgemm_planned";
  if (!planned_launch_needed(kFunction, plan, M, N, K, A, B, C, workspace, workspace_floats))
    return;
  if (plan.tile == gemm_shapes::BlockTile::square) {
    launch_sgemm_tile<sgemm_split_k::SquareTile>(kFunction, plan.splits, M, N, K, alpha, A, B, beta,
                                                 C, workspace, stream);
  } else {
    launch_sgemm_tile<sgemm_split_k::SkinnyTile>(kFunction, plan.splits, M, N, K, alpha, A, B, beta,
                                                 C, workspace, stream);
  }
  if (plan.splits > 1)
    launch_reduce(kFunction, M, N, plan.splits, workspace, alpha, beta, C, stream);
}

void hgemm_planned(const gemm_shapes::GemmPlan& plan, int M, int N, int K, float alpha,
                   const __half* A, const __half* B, float beta, float* C, float* workspace,
                   std::size_t workspace_floats, cudaStream_t stream) {
  constexpr const char* kFunction = "hgemm_planned";
  if (!planned_launch_needed(kFunction, plan, M, N, K, A, B, C, workspace, workspace_floats))
    return;
  if (plan.tile == gemm_shapes::BlockTile::square) {
    launch_hgemm_tile<mma_split_k::SquareTile, mma_split_k::SquarePredicatedTile>(
        kFunction, plan.splits, M, N, K, alpha, A, B, beta, C, workspace, stream);
  } else {
    launch_hgemm_tile<mma_split_k::SkinnyTile, mma_split_k::SkinnyPredicatedTile>(
        kFunction, plan.splits, M, N, K, alpha, A, B, beta, C, workspace, stream);
  }
  if (plan.splits > 1)
    launch_reduce(kFunction, M, N, plan.splits, workspace, alpha, beta, C, stream);
}

void sgemm_shapes(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                  float* C, cudaStream_t stream) {
  require_gemm_arguments("sgemm_shapes", M, N, K);
  if (M == 0 || N == 0) return;
  const gemm_shapes::GemmPlan plan = choose_gemm_plan(
      M, N, K, gemm_shapes::Precision::fp32, multiprocessor_count(), kSharedWorkspaceFloats);
  float* workspace = plan.splits > 1 ? shared_workspace() : nullptr;
  sgemm_planned(plan, M, N, K, alpha, A, B, beta, C, workspace, kSharedWorkspaceFloats, stream);
}

void hgemm_shapes(int M, int N, int K, float alpha, const __half* A, const __half* B, float beta,
                  float* C, cudaStream_t stream) {
  require_gemm_arguments("hgemm_shapes", M, N, K);
  if (M == 0 || N == 0) return;
  const gemm_shapes::GemmPlan plan = choose_gemm_plan(
      M, N, K, gemm_shapes::Precision::fp16, multiprocessor_count(), kSharedWorkspaceFloats);
  float* workspace = plan.splits > 1 ? shared_workspace() : nullptr;
  hgemm_planned(plan, M, N, K, alpha, A, B, beta, C, workspace, kSharedWorkspaceFloats, stream);
}

}  // namespace course::COURSE_IMPL
// ---- end of given ----
