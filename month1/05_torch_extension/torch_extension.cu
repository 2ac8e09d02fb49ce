// Exercise m1.05: your kernels as PyTorch operators, the CUDA half.
//
// The kernels are the ones you know (m1.01 vector add, m1.04 fused GELU); what is new is
// the host code around them, which is what every PyTorch CUDA operator does:
//   1. check the inputs (the checks shared with the CPU kernels, in torch_extension.cpp);
//   2. make the inputs' GPU the current device for this call (c10::cuda::CUDAGuard);
//   3. allocate the output through PyTorch (at::empty_like), so its caching allocator and
//      autograd see an ordinary tensor;
//   4. launch on PyTorch's current stream (at::cuda::getCurrentCUDAStream()), so the
//      kernel is ordered after whatever produced the inputs and before whatever reads the
//      output, whichever stream the caller works on;
//   5. check the launch (C10_CUDA_KERNEL_LAUNCH_CHECK), which raises a RuntimeError.
// The registration at the bottom makes these the operators' kernels for CUDA tensors.
//
// This file is compiled only when PyTorch and the machine have CUDA; without a GPU the
// CUDA tests report themselves skipped. Fill in TODO(m1.05d), then `./course grade m1_05`.
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>  // at::cuda::getCurrentCUDAStream

#include <cstdint>
#include <limits>
#include <string>

#include "torch_extension.h"

namespace course {

// 256 threads per block: a multiple of the warp size that keeps many blocks resident on
// every multiprocessor (m1.01).
constexpr int kThreadsPerBlock = 256;

__device__ __forceinline__ float gelu(float v) { return 0.5f * v * (1.0f + erff(v * kInvSqrt2)); }

// c[i] = a[i] + b[i], one element per thread: launch ceil(n / kThreadsPerBlock) blocks.
__global__ void __launch_bounds__(kThreadsPerBlock)
    vector_add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                      float* __restrict__ c, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// y[r, c] = gelu(x[r, c] * w[c] + b[c]), one element per thread over the flat index
// (n = rows * cols elements): launch ceil(n / kThreadsPerBlock) blocks.
__global__ void __launch_bounds__(kThreadsPerBlock)
    fused_gelu_kernel(const float* __restrict__ x, const float* __restrict__ w,
                      const float* __restrict__ b, float* __restrict__ y, std::int64_t n,
                      std::int64_t cols) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    const std::int64_t col = i % cols;
    y[i] = gelu(x[i] * w[col] + b[col]);
  }
}

// Blocks of kThreadsPerBlock threads needed for `threads` threads (at least one each).
unsigned int blocks_for(std::int64_t threads) {
  const std::int64_t blocks = (threads + kThreadsPerBlock - 1) / kThreadsPerBlock;
  TORCH_CHECK(blocks <= std::numeric_limits<int>::max(), "too many elements for one launch: ",
              std::to_string(threads));
  return static_cast<unsigned int>(blocks);
}

at::Tensor vector_add_cuda(const at::Tensor& a, const at::Tensor& b) {
  check_vector_add_inputs(a, b);
  // TODO(m1.05d): run vector_add_kernel on these tensors and return the result:
  //   1. const c10::cuda::CUDAGuard device_guard(a.device());   (a's GPU is current until return)
  //   2. at::Tensor c = at::empty_like(a);  and return it at once when a.numel() == 0
  //      (a launch of zero blocks is an error);
  //   3. const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  //      vector_add_kernel<<<blocks_for(n), kThreadsPerBlock, 0, stream>>>(
  //          a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), n);
  //   4. C10_CUDA_KERNEL_LAUNCH_CHECK();
  return at::empty_like(a);  // placeholder: an output nobody wrote
}

at::Tensor fused_gelu_cuda(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  check_fused_gelu_inputs(x, w, b);
  // TODO(m1.05d): the same four steps for fused_gelu_kernel, on x's GPU, with
  // n = x.numel() and cols = x.size(1).
  return at::empty_like(x);  // placeholder: an output nobody wrote
}

// The CUDA kernels, under the CUDA dispatch key: the dispatcher calls them when an input is
// a CUDA tensor. The schemas come from TORCH_LIBRARY in torch_extension.cpp.
COURSE_TORCH_LIBRARY_IMPL(CUDA, m) {
  // TODO(m1.05d): register vector_add_cuda and fused_gelu_cuda, as TODO(m1.05a) did for
  // the CPU kernels.
}

}  // namespace course
