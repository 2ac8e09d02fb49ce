// Given code for exercise m2.09 (the same for your version and the reference): the launchers
// of the split GEMMs, which run your split_k_tiles (task m2.09a) through the kernels of
// sgemm_split_k.h, mma_split_k.h and wgmma_split_k.h, then your reduce_splits_kernel (task
// m2.09b), and the entry points sgemm_shapes / hgemm_shapes, which ask your chooser (task
// m2.09c) for a plan.
// gemm_shapes.cu includes it after your kernels, inside namespace course::COURSE_IMPL, so it
// has no includes of its own.
#pragma once

namespace {

// The checks both planned launchers start with. False when C is empty (nothing to launch).
bool planned_launch_needed(const char* function, const gemm_shapes::GemmPlan& plan, int M, int N,
                           int K, const void* A, const void* B, const float* C,
                           const float* workspace, std::size_t workspace_floats) {
  require_gemm_arguments(function, M, N, K);
  // The messages are lambdas: made only when a check fails (course/launch.h).
  require(plan.splits >= 1 && plan.splits <= gemm_shapes::kMaxPlannedSplits, function, [&] {
    return "plan.splits must be 1 .. " + std::to_string(gemm_shapes::kMaxPlannedSplits) +
           ", got " + std::to_string(plan.splits);
  });
  if (M == 0 || N == 0) return false;
  require(C != nullptr && (K == 0 || (A != nullptr && B != nullptr)), function,
          "A, B and C must be device pointers, got null");
  const std::size_t needed = gemm_shapes::workspace_floats(plan, M, N);
  require(needed == 0 || (workspace != nullptr && workspace_floats >= needed), function, [&] {
    return std::to_string(plan.splits) + " splits of a " + std::to_string(M) + " x " +
           std::to_string(N) + " C need a workspace of " + std::to_string(needed) +
           " floats, got " + std::to_string(workspace != nullptr ? workspace_floats : 0);
  });
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

// How the float16 kernel reads A and B. 16-byte cp.async copies of 8 halves need every row
// of A and B on a 16-byte boundary: K and N multiples of 8, A and B 16-byte aligned (direct).
// Otherwise the launcher copies the operands that are not, zero-padded, into the workspace
// after the partials (padded; gemm_shapes.h, padded_copies_floats), or, where they do not
// fit, the kernel loads them element by element (predicated, mma_split_k.h). A function of
// the arguments alone: the same call always takes the same path, so the same bits.
enum class HalfOperands { direct, padded, predicated };

HalfOperands half_operands(int M, int N, int K, const __half* A, const __half* B,
                           std::size_t partial_floats, std::size_t workspace_floats) {
  const bool aligned = gemm_shapes::half_operands_aligned(N, K, A, B);
  if (aligned) return HalfOperands::direct;
  const bool fits = K <= gemm_shapes::kMaxPaddedLength && N <= gemm_shapes::kMaxPaddedLength &&
                    workspace_floats >= partial_floats &&
                    workspace_floats - partial_floats >= gemm_shapes::padded_copies_floats(M, N, K);
  return fits ? HalfOperands::padded : HalfOperands::predicated;
}

// pad_copy_kernel (mma_split_k.h) on one matrix: a few blocks per multiprocessor, looping.
void launch_pad_copy(const char* function, const __half* source, int rows, int cols,
                     __half* padded, int padded_rows, int padded_cols, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const std::int64_t chunks = static_cast<std::int64_t>(padded_rows) * (padded_cols / 8);
  if (chunks == 0) return;
  const unsigned blocks = grid_blocks_1d(
      function, chunks < 65536LL * kThreads ? chunks : 65536LL * kThreads, kThreads);
  mma_split_k::pad_copy_kernel<<<blocks, kThreads, 0, stream>>>(source, rows, cols, padded,
                                                                padded_rows, padded_cols);
  CUDA_CHECK_LAUNCH();
}

// Runs `run_aligned(k, a, b, ldb)` (a kernel launch on A [M x k], B [k x ldb] with every row
// on a 16-byte boundary) on A and B where they are, or on their zero-padded copies in the
// workspace after the partials. False when neither is possible (no room for the copies):
// then the caller takes a predicated kernel.
template <class RunAligned>
bool run_on_aligned_operands(const char* function, int splits, int M, int N, int K, const __half* A,
                             const __half* B, float* workspace, std::size_t workspace_floats,
                             cudaStream_t stream, RunAligned run_aligned) {
  const std::size_t partial_floats =  // the same for every tile
      gemm_shapes::workspace_floats(gemm_shapes::GemmPlan{gemm_shapes::BlockTile::square, splits},
                                    M, N);
  const HalfOperands operands =
      half_operands(M, N, K, A, B, partial_floats, workspace != nullptr ? workspace_floats : 0);
  if (operands == HalfOperands::direct) {
    run_aligned(K, A, B, N);
    return true;
  }
  if (operands == HalfOperands::predicated) return false;
  // The copies start at the first 128-byte boundary after the partials: A' (M x Kp), then
  // B' (Kp x Np), whole numbers of 16-byte chunks (gemm_shapes.h, padded_row_length). An
  // operand whose rows are already aligned is used as it is; B needs its copy whenever A's
  // is longer than K (rows K .. Kp - 1 of B must be zeros).
  const bool copy_a = !gemm_shapes::half_rows_aligned(A, K);
  const int k = copy_a ? gemm_shapes::padded_row_length(K) : K;
  const bool copy_b = k != K || !gemm_shapes::half_rows_aligned(B, N);
  const int ldb = copy_b ? gemm_shapes::padded_row_length(N) : N;
  const std::uintptr_t after_partials =
      reinterpret_cast<std::uintptr_t>(workspace + partial_floats);
  auto* padded_a = reinterpret_cast<__half*>((after_partials + 127) / 128 * 128);
  __half* padded_b = padded_a + (copy_a ? static_cast<std::size_t>(M) * k : 0);
  if (copy_a) launch_pad_copy(function, A, M, K, padded_a, M, k, stream);
  if (copy_b) launch_pad_copy(function, B, K, N, padded_b, k, ldb, stream);
  run_aligned(k, copy_a ? padded_a : A, copy_b ? padded_b : B, ldb);
  return true;
}

template <class Tile, class PredicatedTile>
void launch_hgemm_tile(const char* function, int splits, int M, int N, int K, float alpha,
                       const __half* A, const __half* B, float beta, float* C, float* workspace,
                       std::size_t workspace_floats, cudaStream_t stream) {
  auto launch = [&](auto kernel, auto tile, int k, const __half* a, const __half* b, int ldb) {
    using T = decltype(tile);
    const long long blocks =
        static_cast<long long>(ceil_div(M, T::kBlockM)) * ceil_div(N, T::kBlockN);
    allow_dynamic_shared_memory(kernel, T::kSharedBytes, function);
    kernel<<<dim3(static_cast<unsigned>(blocks), 1, static_cast<unsigned>(splits)), T::kThreads,
             T::kSharedBytes, stream>>>(M, N, k, alpha, a, b, ldb, beta, C, workspace);
    CUDA_CHECK_LAUNCH();
  };
  const bool ran = run_on_aligned_operands(
      function, splits, M, N, K, A, B, workspace, workspace_floats, stream,
      [&](int k, const __half* a, const __half* b, int ldb) {
        launch(mma_split_k::mma_split_k_kernel<Tile, false>, Tile{}, k, a, b, ldb);
      });
  if (!ran) {
    launch(mma_split_k::mma_split_k_kernel<PredicatedTile, true>, PredicatedTile{}, K, A, B, N);
  }
}

// The wgmma tiles (wide, half-wide, narrow): m2.08's wgmma kernel (wgmma_split_k.h) on a
// Hopper. Its TMA copies need aligned rows, so odd sizes go through the padded copies;
// without room for them, and for K == 0 (nothing to multiply, and a tensor map of zero
// columns is an error), the square tile's kernels run instead: the same arguments still
// always take the same path.
// With 2 .. 8 splits whose clusters all fit on the GPU at once, the kernel adds the partials
// itself (wgmma_split_k.h); otherwise your reduction does.
void launch_hgemm_wgmma(const char* function, gemm_shapes::BlockTile tile, int splits, int M,
                        int N, int K, float alpha, const __half* A, const __half* B, float beta,
                        float* C, float* workspace, std::size_t workspace_floats,
                        cudaStream_t stream) {
  if (!wide_tile_runs_here()) {
    throw UnsupportedDevice(
        std::string(function) +
        ": the wide, half-wide and narrow tiles run m2.08's wgmma kernel, " +
        (hopper::is_hopper_gpu()
             ? "but this build has no sm_90a machine code for it (configure with 90 in "
               "CMAKE_CUDA_ARCHITECTURES)"
             : "which needs a Hopper GPU (compute capability 9.0: H100, H200)") +
        "; plan with choose_gemm_plan(..., wgmma_capacity_here())");
  }
  bool reduced = false;  // the kernel added its splits in clusters
  const bool ran =
      K > 0 && run_on_aligned_operands(function, splits, M, N, K, A, B, workspace,
                                       workspace_floats, stream,
                                       [&](int k, const __half* a, const __half* b, int ldb) {
                                         reduced = wgmma_split_k::launch(
                                             function, gemm_shapes::block_n(tile), splits, M, N,
                                             k, alpha, a, b, ldb, beta, C, workspace, stream);
                                       });
  if (!ran) {
    launch_hgemm_tile<mma_split_k::SquareTile, mma_split_k::SquarePredicatedTile>(
        function, splits, M, N, K, alpha, A, B, beta, C, workspace, workspace_floats, stream);
  }
  if (splits > 1 && !reduced)
    launch_reduce(function, M, N, splits, workspace, alpha, beta, C, stream);
}

// The workspace of the *_shapes functions, one per device, kept between calls (cudaMalloc is
// slow and synchronizes: never once per GEMM). The chooser plans its partials within
// kSharedWorkspaceFloats (64 MiB); float16 operands that need padded copies need room beyond
// that, as large as A and B themselves: the buffer grows to the largest size asked for so far.
using gemm_shapes::kSharedWorkspaceFloats;
int current_device() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

struct Workspace {
  float* data = nullptr;
  std::size_t floats = 0;
};

// At least `wanted` floats, except on a stream that is being captured into a CUDA graph,
// where nothing can be allocated: there the buffer as it is (none before the first call that
// needed one), and the caller plans with what it got.
Workspace shared_workspace(std::size_t wanted, cudaStream_t stream) {
  constexpr int kMaxDevices = 64;
  static std::unique_ptr<DeviceBuffer<float>> buffers[kMaxDevices];
  const int device = current_device();
  require(device >= 0 && device < kMaxDevices, "gemm_shapes", "device index out of range");
  std::unique_ptr<DeviceBuffer<float>>& buffer = buffers[device];
  if (wanted > 0 && (!buffer || buffer->size() < wanted)) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
    if (capture == cudaStreamCaptureStatusNone) {
      buffer.reset();  // frees the old one (cudaFree waits for the kernels that use it)
      buffer = std::make_unique<DeviceBuffer<float>>(std::max(wanted, kSharedWorkspaceFloats));
    }
  }
  return buffer ? Workspace{buffer->data(), buffer->size()} : Workspace{};
}

int multiprocessor_count() {
  int count = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, current_device()));
  return count;
}

}  // namespace

bool wide_tile_runs_here() {
  return hopper::is_hopper_gpu() && wgmma_split_k::sm90a_code_loaded();
}

gemm_shapes::WgmmaCapacity wgmma_capacity_here() {
  gemm_shapes::WgmmaCapacity capacity;
  capacity.runs = wide_tile_runs_here();
  if (!capacity.runs) return capacity;
  // Every wgmma width takes the same 192 KiB of stages and one SM per block, so the wide
  // kernel's count stands for all three.
  for (int splits = 2; splits <= gemm_shapes::kMaxClusterSplits; ++splits) {
    capacity.concurrent_clusters[splits] =
        wgmma_split_k::concurrent_clusters<gemm_shapes::kWideBlockN>(splits);
  }
  return capacity;
}

void sgemm_planned(const gemm_shapes::GemmPlan& plan, int M, int N, int K, float alpha,
                   const float* A, const float* B, float beta, float* C, float* workspace,
                   std::size_t workspace_floats, cudaStream_t stream) {
  constexpr const char* kFunction = "sgemm_planned";
  if (!planned_launch_needed(kFunction, plan, M, N, K, A, B, C, workspace, workspace_floats))
    return;
  require(!gemm_shapes::is_wgmma_tile(plan.tile), kFunction,
          "the wide, half-wide and narrow tiles are the float16 wgmma kernel's; float32 runs the "
          "square or skinny one");
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
  if (gemm_shapes::is_wgmma_tile(plan.tile)) {  // reduces its splits itself
    launch_hgemm_wgmma(kFunction, plan.tile, plan.splits, M, N, K, alpha, A, B, beta, C,
                       workspace, workspace_floats, stream);
    return;
  }
  if (plan.tile == gemm_shapes::BlockTile::square) {
    launch_hgemm_tile<mma_split_k::SquareTile, mma_split_k::SquarePredicatedTile>(
        kFunction, plan.splits, M, N, K, alpha, A, B, beta, C, workspace, workspace_floats,
        stream);
  } else {
    launch_hgemm_tile<mma_split_k::SkinnyTile, mma_split_k::SkinnyPredicatedTile>(
        kFunction, plan.splits, M, N, K, alpha, A, B, beta, C, workspace, workspace_floats,
        stream);
  }
  if (plan.splits > 1)
    launch_reduce(kFunction, M, N, plan.splits, workspace, alpha, beta, C, stream);
}

void sgemm_shapes(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                  float* C, cudaStream_t stream) {
  require_gemm_arguments("sgemm_shapes", M, N, K);
  if (M == 0 || N == 0) return;
  gemm_shapes::GemmPlan plan =
      choose_gemm_plan(M, N, K, gemm_shapes::Precision::fp32, multiprocessor_count(),
                       kSharedWorkspaceFloats, gemm_shapes::WgmmaCapacity{});
  const Workspace workspace = shared_workspace(gemm_shapes::workspace_floats(plan, M, N), stream);
  if (workspace.floats < gemm_shapes::workspace_floats(plan, M, N)) {  // captured, none yet
    plan = choose_gemm_plan(M, N, K, gemm_shapes::Precision::fp32, multiprocessor_count(),
                            workspace.floats, gemm_shapes::WgmmaCapacity{});
  }
  sgemm_planned(plan, M, N, K, alpha, A, B, beta, C, workspace.data, workspace.floats, stream);
}

void hgemm_shapes(int M, int N, int K, float alpha, const __half* A, const __half* B, float beta,
                  float* C, cudaStream_t stream) {
  require_gemm_arguments("hgemm_shapes", M, N, K);
  if (M == 0 || N == 0) return;
  // On a Hopper built for it, the chooser may take a wgmma tile (m2.08's kernel).
  const gemm_shapes::WgmmaCapacity wgmma = wgmma_capacity_here();
  gemm_shapes::GemmPlan plan = choose_gemm_plan(
      M, N, K, gemm_shapes::Precision::fp16, multiprocessor_count(), kSharedWorkspaceFloats, wgmma);
  // Odd sizes and misaligned operands: room for the padded copies after the partials.
  const std::size_t partials = gemm_shapes::workspace_floats(plan, M, N);
  const Workspace workspace =
      shared_workspace(gemm_shapes::hgemm_workspace_floats(plan, M, N, K, A, B), stream);
  if (workspace.floats < partials) {  // captured, none yet
    plan = choose_gemm_plan(M, N, K, gemm_shapes::Precision::fp16, multiprocessor_count(),
                            workspace.floats, wgmma);
  }
  hgemm_planned(plan, M, N, K, alpha, A, B, beta, C, workspace.data, workspace.floats, stream);
}
