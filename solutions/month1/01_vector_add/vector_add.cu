// Exercise m1.01: vector add, your first CUDA kernel. (Reference solution.)
//
// c = a + b. This is torch.add for two float32 tensors, written by hand: a __global__
// function (the kernel) that every GPU thread runs, and a host function (the launcher)
// that decides how many threads to start. Read README.md first.
//
// Each thread adds kElementsPerThread elements, blockDim.x apart. One element per
// thread is the textbook first kernel, and it is correct, but each thread then has a
// single load in flight and the memory system sits partly idle: on an H200 it reaches
// about 80% of what cudaMemcpy moves. Four independent loads per thread keep enough
// bytes in flight to reach the copy bandwidth (README.md, "How fast can it go?").
// Spacing them blockDim.x apart keeps every load instruction of a warp on 32
// consecutive floats, so each one is a single coalesced 128-byte access.
#include "vector_add.h"

#include <string>

#include "course/cuda_check.h"
#include "course/launch.h"

namespace course::COURSE_IMPL {  // see course/impl.h

// 256 threads per block: a multiple of the warp size (32) that lets the GPU keep many
// blocks resident on each multiprocessor. README.md explains the choice.
constexpr int kThreadsPerBlock = 256;
constexpr int kElementsPerThread = 4;
constexpr int kElementsPerBlock = kThreadsPerBlock * kElementsPerThread;

__global__ void __launch_bounds__(kThreadsPerBlock)
    vector_add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                      float* __restrict__ c, std::int64_t n) {
  // The product is taken in 64 bits: in 32 bits it overflows past 2^31 elements.
  const std::int64_t first =
      static_cast<std::int64_t>(blockIdx.x) * kElementsPerBlock + threadIdx.x;
  // The loop has a constant trip count, so the compiler unrolls it and issues all the
  // loads before the first add: that is what puts four loads per thread in flight.
#pragma unroll
  for (int k = 0; k < kElementsPerThread; ++k) {
    const std::int64_t i = first + static_cast<std::int64_t>(k) * blockDim.x;
    // The last block sticks out past the end when n is not a multiple of its size;
    // those threads must not touch memory.
    if (i < n) c[i] = a[i] + b[i];
  }
}

void vector_add(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream) {
  require(n >= 0, "vector_add", "n must be >= 0, got " + std::to_string(n));
  if (n == 0) return;  // nothing to do, and a launch of zero blocks is an error

  // Whole blocks of kElementsPerBlock elements, rounded up; no shared memory.
  const std::int64_t blocks = ceil_div(n, kElementsPerBlock);
  vector_add_kernel<<<static_cast<unsigned int>(blocks), kThreadsPerBlock, 0, stream>>>(a, b, c, n);

  CUDA_CHECK_LAUNCH();  // a bad launch configuration is reported here
}

}  // namespace course::COURSE_IMPL
