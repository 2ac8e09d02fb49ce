// GpuTimer: time GPU work with a pair of CUDA events.
//
// Kernel launches return immediately and the GPU runs them later, so a host clock around
// a launch measures the launch, not the kernel. Events are timestamps the GPU itself
// records in stream order:
//
//   GpuTimer timer;
//   timer.start(stream);
//   my_kernel<<<grid, block, 0, stream>>>(...);
//   timer.stop(stream);
//   float ms = timer.elapsed_ms();   // waits for the stop event
#pragma once

#include <cuda_runtime.h>

#include "course/cuda_check.h"

namespace course {

class GpuTimer {
 public:
  GpuTimer() {
    CUDA_CHECK(cudaEventCreate(&start_));
    CUDA_CHECK(cudaEventCreate(&stop_));
  }
  GpuTimer(const GpuTimer&) = delete;
  GpuTimer& operator=(const GpuTimer&) = delete;
  ~GpuTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }

  void start(cudaStream_t stream = nullptr) { CUDA_CHECK(cudaEventRecord(start_, stream)); }
  void stop(cudaStream_t stream = nullptr) { CUDA_CHECK(cudaEventRecord(stop_, stream)); }
  float elapsed_ms() {
    CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return ms;
  }

 private:
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

}  // namespace course
