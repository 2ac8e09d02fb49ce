// Exercise m1.02: launch configuration, grid-stride loops and float4.
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
//
// Read README.md first. Fill in the four TODOs, then run `./course grade m1_02`.
#include "launch_config.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "course/cuda_check.h"
#include "course/launch.h"

namespace course::COURSE_IMPL {  // see course/impl.h

// The float4 kernel always runs with this block size (a fixed size lets it carry
// __launch_bounds__), and each thread can keep this many float4 loads of a and of b in flight.
constexpr int kVectorThreads = 256;
[[maybe_unused]] constexpr int kVectorLoadsInFlight = 4;

namespace {

// How far p sits past the previous 16-byte boundary, in bytes (0 to 15).
[[maybe_unused]] std::uintptr_t bytes_past_16(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % alignof(float4);
}

[[maybe_unused]] __device__ __forceinline__ float4 add4(float4 x, float4 y) {
  return make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
}

}  // namespace

__global__ void vector_add_grid_stride_kernel(const float* __restrict__ a,
                                              const float* __restrict__ b, float* __restrict__ c,
                                              std::int64_t n) {
  // TODO(m1.02a): write the grid-stride loop. Start at this thread's global index (64-bit,
  // as in m1.01) and step by the number of threads in the whole grid
  // (gridDim.x * blockDim.x) while the index is < n:
  //   #pragma unroll 1   // one element per thread per step (README.md, "Reading the sweep")
  //   for (std::int64_t i = <global index>; i < n; i += <threads in the grid>) c[i] = a[i] + b[i];
}

// Preconditions (your launcher makes sure): a + head, b + head and c + head lie on a
// 16-byte boundary, and 0 <= head <= min(n, 3).
__global__ void __launch_bounds__(kVectorThreads)
    vector_add_float4_kernel(const float* __restrict__ a, const float* __restrict__ b,
                             float* __restrict__ c, std::int64_t n, int head) {
  // TODO(m1.02c): add the three parts of the array, with `thread` this thread's global
  // index and `threads` the number of threads in the grid:
  //   1. the head, elements [0, head): threads with thread < head add one float each;
  //   2. the body, body = (n - head) / 4 whole float4s starting at a + head, b + head and
  //      c + head: reinterpret_cast those to const float4* / float4* and add them in a
  //      grid-stride loop, c4[i] = add4(a4[i], b4[i]). For full speed, load the float4s of
  //      kVectorLoadsInFlight strides into registers first, then add and store them all;
  //   3. the tail, elements [head + 4 * body, n): at most 3, one float each, like the head.
  // Worked example: n = 10, c = (base + 1 float): head = 3, body = 1 (elements 3..6),
  // tail = elements 7, 8, 9.
}

int blocks_to_fill_gpu(int threads_per_block) {
  // TODO(m1.02b): reject a threads_per_block that is not a multiple of 32 in [32, 1024]
  // (course::require, with the value in the message), then return
  //   (number of SMs) * (blocks of vector_add_grid_stride_kernel one SM can hold):
  //   int device = 0;            CUDA_CHECK(cudaGetDevice(&device));
  //   int multiprocessors = 0;   CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors,
  //                                  cudaDevAttrMultiProcessorCount, device));
  //   int per_multiprocessor = 0;
  //   CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor,
  //                  vector_add_grid_stride_kernel, threads_per_block, 0));
  return 0;
}

void vector_add_grid_stride(const float* a, const float* b, float* c, std::int64_t n,
                            int threads_per_block, int blocks, cudaStream_t stream) {
  require(n >= 0, "vector_add_grid_stride", "n must be >= 0, got " + std::to_string(n));

  // TODO(m1.02b): own the launch configuration:
  //   1. reject a threads_per_block that is not a multiple of 32 in [32, 1024] and a
  //      negative `blocks`, with std::invalid_argument naming the value:
  //        require(<condition>, "vector_add_grid_stride",
  //                "threads_per_block must be ..., got " + std::to_string(threads_per_block));
  //      (check before any early return, so a bad call fails for every n);
  //   2. return when n == 0 (a launch of zero blocks is an error);
  //   3. blocks == 0 means "pick": blocks_to_fill_gpu(threads_per_block), but no more than
  //      ceil_div(n, threads_per_block), the blocks that n elements need;
  //   4. vector_add_grid_stride_kernel<<<blocks, threads_per_block, 0, stream>>>(a, b, c, n);

  CUDA_CHECK_LAUNCH();  // a bad launch configuration is reported here
}

void vector_add_float4(const float* a, const float* b, float* c, std::int64_t n,
                       cudaStream_t stream) {
  require(n >= 0, "vector_add_float4", "n must be >= 0, got " + std::to_string(n));
  if (n == 0) return;

  // TODO(m1.02d): choose the path from where the pointers sit (bytes_past_16 helps):
  //   * if a, b and c are not all the same distance past a 16-byte boundary, no shift makes
  //     all three aligned, and a float4 access at an address that is not a multiple of 16
  //     faults: launch vector_add_grid_stride_kernel with kVectorThreads threads instead;
  //   * otherwise head = (16 - bytes_past_16(c)) % 16 / sizeof(float) elements (at most n)
  //     bring all three to the boundary: launch vector_add_float4_kernel with kVectorThreads
  //     threads per block and enough blocks for the body, at least one, and no more than
  //     fill the GPU (cudaOccupancyMaxActiveBlocksPerMultiprocessor works for this kernel too).

  CUDA_CHECK_LAUNCH();  // a bad launch configuration is reported here
}

}  // namespace course::COURSE_IMPL
