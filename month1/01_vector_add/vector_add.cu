// Exercise m1.01: vector add, your first CUDA kernel.
//
// c = a + b, one GPU thread per element. This is torch.add for two float32 tensors,
// written by hand: a __global__ function (the kernel) that every thread runs, and a host
// function (the launcher) that decides how many threads to start. Read README.md first.
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

__global__ void vector_add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                  float* __restrict__ c, std::int64_t n) {
  // TODO(m1.01a): compute this thread's global index from blockIdx.x, blockDim.x and
  // threadIdx.x (as a 64-bit integer), and if it is inside the array (index < n) write
  // c[index] = a[index] + b[index].
}

void vector_add(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream) {
  require(n >= 0, "vector_add", "n must be >= 0, got " + std::to_string(n));
  if (n == 0) return;  // nothing to do, and a launch of zero blocks is an error

  // TODO(m1.01b): launch vector_add_kernel on `stream` with kThreadsPerBlock threads per
  // block and enough blocks to cover all n elements (course::ceil_div helps):
  //   vector_add_kernel<<<blocks, threads, 0, stream>>>(a, b, c, n);

  CUDA_CHECK_LAUNCH();  // a bad launch configuration is reported here
}

}  // namespace course::COURSE_IMPL
