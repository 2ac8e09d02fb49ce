// Given code for exercise m2.09 (the same for your version and the reference): the launchers
// of the split GEMMs, which run your split_k_tiles (task m2.09a) through the kernels of
// sgemm_split_k.h and mma_split_k.h, then your reduce_splits_kernel (task m2.09b), and the
// entry points sgemm_shapes / hgemm_shapes, which ask your chooser (task m2.09c) for a plan.
// gemm_shapes.cu includes it after your kernels, inside namespace course::COURSE_IMPL, so it
// has no includes of its own.
#pragma once

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
