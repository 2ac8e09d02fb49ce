// Given code for exercise m3.02 (you do not edit it): the library's own kernels.
//
// launch_fill writes a value into a buffer; launch_spin_then_fill does the same after a
// deliberate delay, so that the library's stream still has work in flight when a consumer
// (PyTorch, CuPy) takes the memory through DLPack. Without the event wait the learner writes in m3.02d,
// the consumer's kernels then read the buffer before the fill lands.
//
// The delay spins on %globaltimer, the GPU's nanosecond wall clock, rather than on clock64():
// clock64() counts cycles of the multiprocessor's clock, whose rate changes with boost, so
// a cycle count is not a fixed time.
#include "slow_fill.h"

#include "course/cuda_check.h"
#include "course/launch.h"

namespace course::m3_02 {

constexpr int kThreadsPerBlock = 256;

__device__ __forceinline__ std::uint64_t global_timer_ns() {
  std::uint64_t now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

__global__ void __launch_bounds__(kThreadsPerBlock)
    spin_then_fill_kernel(float* __restrict__ data, std::int64_t n, float value, std::int64_t spin_ns) {
  if (spin_ns > 0) {
    const std::uint64_t start = global_timer_ns();
    while (global_timer_ns() - start < static_cast<std::uint64_t>(spin_ns)) {
    }
  }
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    data[i] = value;
  }
}

void launch_spin_then_fill(float* data, std::int64_t n, float value, std::int64_t spin_ns,
                           cudaStream_t stream) {
  require(n >= 0, "launch_spin_then_fill", "n must be >= 0, got " + std::to_string(n));
  require(spin_ns >= 0, "launch_spin_then_fill", "spin_ns must be >= 0, got " + std::to_string(spin_ns));
  if (n == 0) return;
  // A grid-stride loop over at most 1024 blocks: enough to fill memory quickly, and few
  // enough that a spinning launch does not occupy the whole GPU.
  const std::int64_t blocks = std::min<std::int64_t>(ceil_div(n, kThreadsPerBlock), 1024);
  spin_then_fill_kernel<<<static_cast<unsigned int>(blocks), kThreadsPerBlock, 0, stream>>>(data, n, value,
                                                                                             spin_ns);
  CUDA_CHECK_LAUNCH();
}

void launch_fill(float* data, std::int64_t n, float value, cudaStream_t stream) {
  launch_spin_then_fill(data, n, value, 0, stream);
}

}  // namespace course::m3_02
