// Exercise m2.06, part 1: a sum reduction, first with a shared-memory tree, then with warp
// shuffles.
//
// Both kernels have the same outer shape: a grid just large enough to fill the GPU walks x
// (16-byte float4 loads where x is aligned), each thread keeps a running sum in a register,
// each block reduces its 256 running sums to one, and one thread per block adds that to
// *sum with an atomicAdd. They differ in the block reduction, the subject of this part:
//  * reduce_sum_shared_tree: the 256 values go to shared memory and are added in pairs,
//    128 + 128, 64 + 64, ..., 1 + 1: eight rounds, each ending at a __syncthreads() that the
//    whole block waits for, with fewer threads working every round.
//  * reduce_sum_warp_shuffle: the 32 threads of a warp add their values with
//    __shfl_down_sync, reading each other's registers directly: five steps, no shared
//    memory, no barrier. Shared memory only carries the 8 warp sums to warp 0, behind one
//    __syncthreads(), and warp 0 adds those with the same shuffles.
// README.md explains why the second is faster, and when it makes no difference.
//
// The loads, the launch and the atomicAdd are given. Fill in TODO(m2.06a) (the tree) and
// TODO(m2.06b) (the warp and block reductions), then run `./course grade m2_06`.
#include <algorithm>
#include <cstdint>
#include <string>

// ---- given: the same in the skeleton and the solution (./course check compares) ----
#include "course/cuda_check.h"
#include "course/launch.h"
#include "warp_primitives.h"

namespace course::COURSE_IMPL {  // see course/impl.h
namespace {

constexpr int kThreads = 256;  // threads per block, 8 warps
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFullMask = 0xffffffffu;  // every lane of the warp takes part

// This thread's share of x[0 .. n), added up in a register. The grid walks x with a stride
// of the whole grid, one float4 per thread per step, where x is 16-byte aligned; the up to
// 3 floats before the first 16-byte boundary and the up to 3 after the last whole float4
// are added one at a time by the first threads of the grid (as in m1.02).
__device__ float sum_of_this_threads_share(const float* __restrict__ x, std::int64_t n) {
  const std::int64_t thread = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t threads = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const auto bytes_past_16 = static_cast<int>(reinterpret_cast<std::uintptr_t>(x) % 16);
  const std::int64_t floats_to_boundary = (16 - bytes_past_16) % 16 / 4;
  const std::int64_t head = floats_to_boundary < n ? floats_to_boundary : n;

  float sum = 0.0f;
  if (thread < head) sum += x[thread];
  const std::int64_t body = (n - head) / 4;
  const float4* x4 = reinterpret_cast<const float4*>(x + head);
  // Unrolled so each thread has several float4 loads in flight before it needs the first.
#pragma unroll 4
  for (std::int64_t i = thread; i < body; i += threads) {
    const float4 v = __ldg(x4 + i);
    sum += (v.x + v.y) + (v.z + v.w);
  }
  const std::int64_t tail_start = head + 4 * body;
  if (thread < n - tail_start) sum += x[tail_start + thread];
  return sum;
}
// ---- end of given ----

// --- Version 1: the shared-memory tree ---------------------------------------------------
__global__ void __launch_bounds__(kThreads)
    reduce_sum_shared_tree_kernel(const float* __restrict__ x, std::int64_t n, float* sum) {
  const float mine = sum_of_this_threads_share(x, n);
  // TODO(m2.06a): reduce the block's kThreads values of `mine` in shared memory, then add
  // the block's total to *sum.
  //  1. Declare __shared__ float partial[kThreads]; store mine at partial[threadIdx.x];
  //     __syncthreads() so that every value is there before anyone reads.
  //  2. For half = kThreads / 2, kThreads / 4, ..., 1: the threads with threadIdx.x < half
  //     add partial[threadIdx.x + half] into partial[threadIdx.x]; then every thread (not
  //     only those that added) calls __syncthreads().
  //  3. Thread 0 adds partial[0] to *sum: atomicAdd(sum, partial[0]) (other blocks add
  //     theirs at the same time, so a plain += would lose some).
  (void)mine, (void)sum;
}

// --- Version 2: warp shuffles ------------------------------------------------------------
// The sum of `value` over the 32 lanes of the warp, in lane 0. __shfl_down_sync(mask, v, d)
// returns the v of the lane d places up (lane + d); lanes past 31 get their own v back,
// which only lanes whose result is discarded ever add. After the steps d = 16, 8, 4, 2, 1,
// lane 0 holds the sum of all 32. Every lane named in the mask must execute the call.
__device__ __forceinline__ float warp_reduce_sum(float value) {
  // TODO(m2.06b), part 1: five steps, offset = 16, 8, 4, 2, 1:
  //   value += __shfl_down_sync(kFullMask, value, offset);
  // (#pragma unroll on the loop: the offsets are constants, the compiler unrolls it.)
  (void)kFullMask;
  return value;
}

// The sum of `value` over the block, in thread 0: each warp reduces its own 32 values, lane
// 0 of each warp leaves the warp's sum in shared memory, and warp 0 reduces those 8.
__device__ __forceinline__ float block_reduce_sum(float value) {
  // TODO(m2.06b), part 2: with lane = threadIdx.x % 32 and warp = threadIdx.x / 32:
  //  1. value = warp_reduce_sum(value): lane 0 of each warp now holds its warp's sum;
  //  2. lane 0 stores it in __shared__ float warp_sums[kWarps], at warp_sums[warp];
  //  3. __syncthreads(), the one barrier;
  //  4. warp 0 reduces the kWarps sums: lane < kWarps reads warp_sums[lane], the other
  //     lanes use 0, and warp_reduce_sum adds them. Return that (thread 0's is the block's
  //     sum; what the other threads return is not used).
  (void)kWarps, (void)warp_reduce_sum;
  return value;
}

// ---- given: the same in the skeleton and the solution (./course check compares) ----
__global__ void __launch_bounds__(kThreads)
    reduce_sum_warp_shuffle_kernel(const float* __restrict__ x, std::int64_t n, float* sum) {
  const float block_sum = block_reduce_sum(sum_of_this_threads_share(x, n));
  if (threadIdx.x == 0) atomicAdd(sum, block_sum);
}

// Both versions launch the same way: *sum = 0, then a grid that fills the GPU once (a
// larger grid would only add blocks, and atomicAdds, that wait for a free multiprocessor),
// or fewer blocks when n is small.
template <typename Kernel>
void launch_reduction(Kernel kernel, const char* function, const float* x, std::int64_t n,
                      float* sum, cudaStream_t stream) {
  require(n >= 0, function, "n must be >= 0, got " + std::to_string(n));
  require(sum != nullptr, function, "sum must be a device pointer, got null");
  require(n == 0 || x != nullptr, function, "x must be a device pointer, got null");
  // The blocks add their partial sums into *sum, so it starts at zero.
  CUDA_CHECK(cudaMemsetAsync(sum, 0, sizeof(float), stream));
  if (n == 0) return;  // the sum of nothing is 0, and a launch of zero blocks is an error
  const std::int64_t needed = ceil_div<std::int64_t>(n, std::int64_t{kThreads} * 4);
  const int blocks = static_cast<int>(
      std::min<std::int64_t>(needed, resident_blocks_to_fill_gpu(kernel, kThreads)));
  kernel<<<blocks, kThreads, 0, stream>>>(x, n, sum);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void reduce_sum_shared_tree(const float* x, std::int64_t n, float* sum, cudaStream_t stream) {
  launch_reduction(reduce_sum_shared_tree_kernel, "reduce_sum_shared_tree", x, n, sum, stream);
}

void reduce_sum_warp_shuffle(const float* x, std::int64_t n, float* sum, cudaStream_t stream) {
  launch_reduction(reduce_sum_warp_shuffle_kernel, "reduce_sum_warp_shuffle", x, n, sum, stream);
}

}  // namespace course::COURSE_IMPL
// ---- end of given ----
