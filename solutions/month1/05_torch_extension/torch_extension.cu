// Exercise m1.05: your kernels as PyTorch operators, the CUDA half. (Reference solution.)
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
// Compared with a one-element-per-thread kernel, the reference moves 16 bytes per load
// with float4 when the pointers allow it (m1.02): torch.add does the same, and this is
// what it takes to keep pace with it at large sizes.
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>  // at::cuda::getCurrentCUDAStream

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "course/launch.h"  // grid_blocks_1d, is_aligned
#include "torch_extension.h"

namespace course {

// 256 threads per block: a multiple of the warp size that keeps many blocks resident on
// every multiprocessor (m1.01).
constexpr int kThreadsPerBlock = 256;

__device__ __forceinline__ float gelu(float v) { return 0.5f * v * (1.0f + erff(v * kInvSqrt2)); }

__device__ __forceinline__ float4 gelu4(float4 x, float4 w, float4 b) {
  return make_float4(gelu(x.x * w.x + b.x), gelu(x.y * w.y + b.y), gelu(x.z * w.z + b.z),
                     gelu(x.w * w.w + b.w));
}

// One element per thread: for any pointers.
__global__ void __launch_bounds__(kThreadsPerBlock)
    vector_add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                      float* __restrict__ c, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// Four elements per thread with one 16-byte load of a, one of b and one 16-byte store:
// thread i adds elements 4i .. 4i+3. A float4 access needs an address that is a multiple
// of 16, so the launcher uses this kernel only when a, b and c all are. The last n % 4
// elements do not fill a float4: the first n % 4 threads add one of them each.
__global__ void __launch_bounds__(kThreadsPerBlock)
    vector_add_float4_kernel(const float* __restrict__ a, const float* __restrict__ b,
                             float* __restrict__ c, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t n4 = n / 4;
  if (i < n4) {
    const float4 x = reinterpret_cast<const float4*>(a)[i];
    const float4 y = reinterpret_cast<const float4*>(b)[i];
    reinterpret_cast<float4*>(c)[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
  if (i < n - 4 * n4) {
    const std::int64_t tail = 4 * n4 + i;
    c[tail] = a[tail] + b[tail];
  }
}

// y[r, c] = gelu(x[r, c] * w[c] + b[c]), one element per thread, over the flat index.
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

// Four elements per thread, when cols is a multiple of 4 and every pointer is 16-byte
// aligned: then the four elements 4i .. 4i+3 lie in one row, in columns col .. col+3, and
// w[col .. col+3], b[col .. col+3] are one float4 each. (w and b are small and shared by
// every row: they stay in the cache, and the time goes to reading x and writing y.)
__global__ void __launch_bounds__(kThreadsPerBlock)
    fused_gelu_float4_kernel(const float* __restrict__ x, const float* __restrict__ w,
                             const float* __restrict__ b, float* __restrict__ y, std::int64_t n4,
                             std::int64_t cols4) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n4) {
    const std::int64_t col4 = i % cols4;
    reinterpret_cast<float4*>(y)[i] =
        gelu4(reinterpret_cast<const float4*>(x)[i], reinterpret_cast<const float4*>(w)[col4],
              reinterpret_cast<const float4*>(b)[col4]);
  }
}

namespace {

// Blocks of kThreadsPerBlock threads for `threads` threads: course::grid_blocks_1d, its
// std::invalid_argument for a grid too large turned into PyTorch's error (a RuntimeError).
unsigned int blocks_for(std::int64_t threads) {
  try {
    return grid_blocks_1d("torch_extension", threads, kThreadsPerBlock);
  } catch (const std::invalid_argument& error) {
    TORCH_CHECK(false, error.what());
  }
  return 0;  // not reached
}

}  // namespace

at::Tensor vector_add_cuda(const at::Tensor& a, const at::Tensor& b) {
  check_vector_add_inputs(a, b);
  // With several GPUs, the inputs may live on one that is not the current device. The
  // guard makes theirs current until the function returns, so the allocation, the stream
  // and the launch below all belong to it.
  const c10::cuda::CUDAGuard device_guard(a.device());
  at::Tensor c = at::empty_like(a);
  const std::int64_t n = a.numel();
  if (n == 0) return c;  // a launch of zero blocks is an error

  const float* a_data = a.data_ptr<float>();
  const float* b_data = b.data_ptr<float>();
  float* c_data = c.data_ptr<float>();
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  // A tensor's data usually starts on a 16-byte boundary (PyTorch's allocator aligns far
  // more), but a view such as t[1:] starts 4 bytes in: then take the scalar path.
  if (is_aligned(a_data, 16) && is_aligned(b_data, 16) && is_aligned(c_data, 16)) {
    const std::int64_t threads = std::max<std::int64_t>(n / 4, n % 4);
    vector_add_float4_kernel<<<blocks_for(threads), kThreadsPerBlock, 0, stream>>>(a_data, b_data,
                                                                                   c_data, n);
  } else {
    vector_add_kernel<<<blocks_for(n), kThreadsPerBlock, 0, stream>>>(a_data, b_data, c_data, n);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();  // a bad launch becomes a RuntimeError here
  return c;
}

at::Tensor fused_gelu_cuda(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  check_fused_gelu_inputs(x, w, b);
  const c10::cuda::CUDAGuard device_guard(x.device());
  at::Tensor y = at::empty_like(x);
  const std::int64_t n = x.numel();
  const std::int64_t cols = x.size(1);
  if (n == 0) return y;

  const float* x_data = x.data_ptr<float>();
  const float* w_data = w.data_ptr<float>();
  const float* b_data = b.data_ptr<float>();
  float* y_data = y.data_ptr<float>();
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  if (cols % 4 == 0 && is_aligned(x_data, 16) && is_aligned(w_data, 16) && is_aligned(b_data, 16) &&
      is_aligned(y_data, 16)) {
    fused_gelu_float4_kernel<<<blocks_for(n / 4), kThreadsPerBlock, 0, stream>>>(
        x_data, w_data, b_data, y_data, n / 4, cols / 4);
  } else {
    fused_gelu_kernel<<<blocks_for(n), kThreadsPerBlock, 0, stream>>>(x_data, w_data, b_data,
                                                                      y_data, n, cols);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}

// The CUDA kernels, under the CUDA dispatch key: the dispatcher calls them when an input is
// a CUDA tensor. The schemas come from TORCH_LIBRARY in torch_extension.cpp.
COURSE_TORCH_LIBRARY_IMPL(CUDA, m) {
  m.impl("vector_add", &vector_add_cuda);
  m.impl("fused_gelu", &fused_gelu_cuda);
}

}  // namespace course
