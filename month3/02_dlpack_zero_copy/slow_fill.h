// Given code for exercise m3.02 (you do not edit it): the two kernels the library launches
// on its own stream. No PyTorch headers: this is the library's side of the exchange.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace course::m3_02 {

// data[i] = value for 0 <= i < n, queued on `stream`. Throws course::CudaError when the
// launch fails.
void launch_fill(float* data, std::int64_t n, float value, cudaStream_t stream);

// The same, after every thread has first spun for `spin_ns` nanoseconds: a kernel that is
// still running long after the host call returned. The stream-ordering test uses it to
// leave work pending on the library's stream when the consumer takes the memory.
void launch_spin_then_fill(float* data, std::int64_t n, float value, std::int64_t spin_ns,
                           cudaStream_t stream);

}  // namespace course::m3_02
