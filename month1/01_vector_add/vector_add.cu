// Exercise m1.01: vector add, your first CUDA kernel.
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
//
// Fill in the two TODOs, then run `./course grade m1_01` to check your work.
#include "vector_add.h"

#include <string>

#include "course/cuda_check.h"
#include "course/launch.h"

namespace course::COURSE_IMPL {  // see course/impl.h

// 256 threads per block: a multiple of the warp size (32) that lets the GPU keep many
// blocks resident on each multiprocessor. README.md explains the choice.
constexpr int kThreadsPerBlock = 256;
constexpr int kElementsPerThread = 4;
// [[maybe_unused]]: the skeleton does not use it yet, and the compiler would warn.
[[maybe_unused]] constexpr int kElementsPerBlock = kThreadsPerBlock * kElementsPerThread;

__global__ void __launch_bounds__(kThreadsPerBlock)
    vector_add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                      float* __restrict__ c, std::int64_t n) {
  // TODO(m1.01a): block number blockIdx.x owns elements
  //   [blockIdx.x * kElementsPerBlock, (blockIdx.x + 1) * kElementsPerBlock).
  // Compute the first element of this thread (block start + threadIdx.x) as a 64-bit
  // integer, then for k = 0 .. kElementsPerThread - 1 handle element first + k * blockDim.x:
  // if it is inside the array (< n), write c[i] = a[i] + b[i].
  // Example: with 256 threads, thread 3 of block 1 handles 1027, 1283, 1539 and 1795.
}

void vector_add(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream) {
  require(n >= 0, "vector_add", "n must be >= 0, got " + std::to_string(n));
  if (n == 0) return;  // nothing to do, and a launch of zero blocks is an error

  // TODO(m1.01b): launch vector_add_kernel on `stream` with kThreadsPerBlock threads per
  // block and enough blocks of kElementsPerBlock elements to cover all n (course::ceil_div):
  //   vector_add_kernel<<<blocks, threads, shared_memory_bytes, stream>>>(a, b, c, n);

  CUDA_CHECK_LAUNCH();  // a bad launch configuration is reported here
}

}  // namespace course::COURSE_IMPL
