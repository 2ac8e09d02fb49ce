// Exercise m1.01: vector add, your first CUDA kernel. (Reference solution.)
//
// c = a + b, one GPU thread per element. This is torch.add for two float32 tensors,
// written by hand: a __global__ function (the kernel) that every thread runs, and a host
// function (the launcher) that decides how many threads to start. Read README.md first.
#include "vector_add.h"

#include <string>

#include "course/cuda_check.h"
#include "course/launch.h"

namespace course::COURSE_IMPL {  // see course/impl.h

// 256 threads per block: a multiple of the warp size (32) that lets the GPU keep many
// blocks resident on each multiprocessor. README.md explains the choice.
constexpr int kThreadsPerBlock = 256;

__global__ void vector_add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                  float* __restrict__ c, std::int64_t n) {
  // Block b covers elements [b * blockDim.x, (b + 1) * blockDim.x). The product is taken
  // in 64 bits: in 32 bits it overflows past 2^31 elements.
  const std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  // The last block sticks out past the end when n is not a multiple of the block size;
  // its extra threads must not touch memory.
  if (index < n) c[index] = a[index] + b[index];
}

void vector_add(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream) {
  require(n >= 0, "vector_add", "n must be >= 0, got " + std::to_string(n));
  if (n == 0) return;  // nothing to do, and a launch of zero blocks is an error

  // One thread per element, rounded up to whole blocks.
  const std::int64_t blocks = ceil_div<std::int64_t>(n, kThreadsPerBlock);
  vector_add_kernel<<<static_cast<unsigned int>(blocks), kThreadsPerBlock, 0, stream>>>(a, b, c, n);

  CUDA_CHECK_LAUNCH();  // a bad launch configuration is reported here
}

}  // namespace course::COURSE_IMPL
