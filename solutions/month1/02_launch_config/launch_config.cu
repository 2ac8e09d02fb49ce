// Exercise m1.02: launch configuration, grid-stride loops and float4. (Reference solution.)
//
// What changes from m1.01, and why it should be faster:
//  * vector_add_grid_stride: m1.01 started enough blocks to cover the array once (four
//    elements per thread, n / 1024 blocks), which the GPU schedules wave after wave. Here the grid
//    is just big enough to fill every multiprocessor (SM) once, and each thread walks the array
//    with a stride of the whole grid. The block size becomes a parameter, so the benchmark can
//    sweep it and show what occupancy does to bandwidth.
//  * vector_add_float4: each load and store moves 16 bytes instead of 4, and each thread
//    issues several independent loads before it waits for any of them. More bytes are in
//    flight per thread, which is what a memory-bound kernel needs to reach the bandwidth of
//    the DRAM (Little's law, README.md). It stays correct for any n and any float pointers.
#include "launch_config.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "course/cuda_check.h"
#include "course/launch.h"

namespace course::COURSE_IMPL {  // see course/impl.h

// The float4 kernel always runs with this block size (a fixed size lets it carry
// __launch_bounds__), and each thread keeps this many float4 loads of a and of b in flight.
constexpr int kVectorThreads = 256;
constexpr int kVectorLoadsInFlight = 4;

namespace {

// A block is scheduled as warps of 32 threads. A block of 48 threads still occupies two
// whole warps, one of them half idle, so the course accepts only whole warps; 1024 threads
// is the hardware's limit per block.
void require_block_size(int threads_per_block, const char* function) {
  require(threads_per_block >= 32 && threads_per_block <= 1024 && threads_per_block % 32 == 0,
          function,
          "threads_per_block must be a multiple of 32 in [32, 1024], got " +
              std::to_string(threads_per_block));
}

// SMs times the blocks of `kernel` one SM can hold at once. The occupancy calculator knows
// every limit that applies: threads per SM (2048 on Hopper), blocks per SM (32), registers
// and shared memory per SM, for this kernel as compiled.
template <typename Kernel>
int fill_gpu(Kernel kernel, int threads_per_block) {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  int multiprocessors = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  int blocks_per_multiprocessor = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_multiprocessor, kernel,
                                                           threads_per_block, 0));
  return multiprocessors * std::max(blocks_per_multiprocessor, 1);
}

// How far p sits past the previous 16-byte boundary, in bytes (0 to 15).
std::uintptr_t bytes_past_16(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % alignof(float4);
}

__device__ __forceinline__ float4 add4(float4 x, float4 y) {
  return make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
}

}  // namespace

// No __launch_bounds__ here: the block size is the launcher's parameter (32 to 1024), and
// the kernel needs so few registers that any of them fills an SM.
__global__ void vector_add_grid_stride_kernel(const float* __restrict__ a,
                                              const float* __restrict__ b, float* __restrict__ c,
                                              std::int64_t n) {
  // The grid covers `stride` consecutive elements per round. In every round neighbouring
  // threads still touch neighbouring elements, so each warp's accesses stay coalesced, and
  // a grid of any size covers any n. 64-bit indices: n can pass 2^31.
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  // One element per thread per step, on purpose: left alone, the compiler unrolls this
  // loop and overlaps the loads of several steps, and the block-size sweep would then mix
  // two effects. This way it measures occupancy alone (README.md, "Reading the sweep").
#pragma unroll 1
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    c[i] = a[i] + b[i];
  }
}

// Preconditions (the launcher makes sure): a + head, b + head and c + head lie on a 16-byte
// boundary, and 0 <= head <= min(n, 3).
__global__ void __launch_bounds__(kVectorThreads)
    vector_add_float4_kernel(const float* __restrict__ a, const float* __restrict__ b,
                             float* __restrict__ c, std::int64_t n, int head) {
  const std::int64_t thread = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t threads = static_cast<std::int64_t>(gridDim.x) * blockDim.x;

  // 1. The head: the up to 3 elements before the first 16-byte boundary, one float each.
  if (thread < head) c[thread] = a[thread] + b[thread];

  // 2. The body: whole float4s. One 16-byte load fetches what four 4-byte loads did, and a
  //    warp's float4 load covers 512 contiguous bytes.
  const std::int64_t body = (n - head) / 4;
  const float4* a4 = reinterpret_cast<const float4*>(a + head);
  const float4* b4 = reinterpret_cast<const float4*>(b + head);
  float4* c4 = reinterpret_cast<float4*>(c + head);
  std::int64_t i = thread;
  // Issue all the loads of several grid-strides first, then add and store: the thread waits
  // for memory once per kVectorLoadsInFlight float4s instead of once per float4.
  for (; i + (kVectorLoadsInFlight - 1) * threads < body; i += kVectorLoadsInFlight * threads) {
    float4 va[kVectorLoadsInFlight];
    float4 vb[kVectorLoadsInFlight];
#pragma unroll
    for (int k = 0; k < kVectorLoadsInFlight; ++k) {
      va[k] = a4[i + k * threads];
      vb[k] = b4[i + k * threads];
    }
#pragma unroll
    for (int k = 0; k < kVectorLoadsInFlight; ++k) c4[i + k * threads] = add4(va[k], vb[k]);
  }
  for (; i < body; i += threads) c4[i] = add4(a4[i], b4[i]);  // the last, partial round

  // 3. The tail: the up to 3 elements after the last whole float4, one float each.
  const std::int64_t tail_start = head + 4 * body;
  if (thread < n - tail_start) {
    const std::int64_t t = tail_start + thread;
    c[t] = a[t] + b[t];
  }
}

int blocks_to_fill_gpu(int threads_per_block) {
  require_block_size(threads_per_block, "blocks_to_fill_gpu");
  return fill_gpu(vector_add_grid_stride_kernel, threads_per_block);
}

void vector_add_grid_stride(const float* a, const float* b, float* c, std::int64_t n,
                            int threads_per_block, int blocks, cudaStream_t stream) {
  require(n >= 0, "vector_add_grid_stride", "n must be >= 0, got " + std::to_string(n));
  // Check every argument before the early return, so a bad call fails for any n.
  require_block_size(threads_per_block, "vector_add_grid_stride");
  require(blocks >= 0, "vector_add_grid_stride",
          "blocks must be >= 0 (0 = fill the GPU), got " + std::to_string(blocks));
  if (n == 0) return;  // a launch of zero blocks is an error

  if (blocks == 0) {
    // Fill the GPU once; more blocks would only wait for a free SM. A small n needs fewer.
    const std::int64_t needed = ceil_div<std::int64_t>(n, threads_per_block);
    blocks =
        static_cast<int>(std::min<std::int64_t>(needed, blocks_to_fill_gpu(threads_per_block)));
  }
  vector_add_grid_stride_kernel<<<blocks, threads_per_block, 0, stream>>>(a, b, c, n);
  CUDA_CHECK_LAUNCH();
}

void vector_add_float4(const float* a, const float* b, float* c, std::int64_t n,
                       cudaStream_t stream) {
  require(n >= 0, "vector_add_float4", "n must be >= 0, got " + std::to_string(n));
  if (n == 0) return;
  const std::uintptr_t offset_a = bytes_past_16(a);
  const std::uintptr_t offset_b = bytes_past_16(b);
  const std::uintptr_t offset_c = bytes_past_16(c);
  // A float that does not sit on a 4-byte boundary cannot even be loaded one at a time.
  require(offset_a % sizeof(float) == 0 && offset_b % sizeof(float) == 0 &&
              offset_c % sizeof(float) == 0,
          "vector_add_float4", "a, b and c must be aligned to 4 bytes");

  if (offset_a != offset_c || offset_b != offset_c) {
    // No shift brings all three to a 16-byte boundary at once (say a + 1 with b and c + 0),
    // and a float4 load from an address that is not a multiple of 16 faults. Fall back to
    // one float at a time: still correct, just not vectorised.
    const std::int64_t needed = ceil_div<std::int64_t>(n, kVectorThreads);
    const int blocks = static_cast<int>(
        std::min<std::int64_t>(needed, fill_gpu(vector_add_grid_stride_kernel, kVectorThreads)));
    vector_add_grid_stride_kernel<<<blocks, kVectorThreads, 0, stream>>>(a, b, c, n);
    CUDA_CHECK_LAUNCH();
    return;
  }

  // All three sit the same distance past a boundary: after `head` floats (0 to 3) all three
  // reach the next boundary together, and float4s work from there on.
  const int head = static_cast<int>(
      std::min<std::int64_t>(n, (alignof(float4) - offset_c) % alignof(float4) / sizeof(float)));
  const std::int64_t body = (n - head) / 4;
  // At least one block, whose first threads also do the head and the tail.
  const std::int64_t needed =
      ceil_div<std::int64_t>(std::max<std::int64_t>(body, 1), kVectorThreads);
  const int blocks = static_cast<int>(
      std::min<std::int64_t>(needed, fill_gpu(vector_add_float4_kernel, kVectorThreads)));
  vector_add_float4_kernel<<<blocks, kVectorThreads, 0, stream>>>(a, b, c, n, head);
  CUDA_CHECK_LAUNCH();
}

}  // namespace course::COURSE_IMPL
