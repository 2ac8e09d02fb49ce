// Exercise m3.06, given code: everything of the CUDA half but grad_bias_kernel (yours, in
// autograd_conv.cu, which includes this header once). Both your skeleton and the reference
// solution compile this one copy.
//
// The CUDA kernels of the six operators (schemas in autograd_conv.cpp), templated on the
// scalar type so that float64 versions exist for gradcheck on the GPU:
//   forward          float32: the first kernel of the forward table below that fits: m3.04's
//                    im2col + cuBLAS GEMM, or m3.03's tiled direct convolution where m3.04's
//                    workspace would not fit its budget;
//                    float16 and bfloat16: m3.05's implicit GEMM on the tensor cores, in
//                    channels_last (NHWC) layout, accumulating in float32;
//                    float64: one thread per output over forward_at (conv_backward.h).
//   grad-input       the GATHER kernel: one thread per dx element over grad_input_at (your
//                    task m3.06a); deterministic, no atomics, any stride. For stride 1 (and
//                    padding <= dilation * (R - 1)) conv2d_grad_input instead runs the
//                    forward table on dy with the flipped, transposed filters: the
//                    transposed convolution IS a forward convolution then (README.md).
//   grad-weight      conv2d_grad_weight_direct: one block per dw element, the block's
//                    threads each summing a strided part of the N * P * Q products
//                    (grad_weight_partial, your task m3.06b), then one block reduction in a
//                    fixed order. conv2d_grad_weight: dw = dY * im2col(x)^T as cuBLAS GEMMs
//                    in true float32 (or float64), X_col written by m3.04's im2col: the
//                    reduction over N * P * Q is what a GEMM is built for, split into slices
//                    whose partial dw are added in a fixed order (split-K), so that the
//                    small K x CRS output fills the GPU.
//   grad-bias        a few blocks per output channel, each a strided sum per thread and
//                    m2.06's warp reduction (grad_bias_kernel, your task m3.06c), then the
//                    parts added in a fixed order.
// float16 and bfloat16 gradients are computed by the float32 operators from float32 copies
// and rounded once: correct, not fast (a tensor-core backward is a next step, README.md).
// Every launch runs on PyTorch's current stream and is checked (C10_CUDA_KERNEL_LAUNCH_CHECK).
#pragma once

#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>  // at::cuda::getCurrentCUDABlasHandle
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cublas_v2.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "autograd_conv.h"
// <>, not "": this header lives in month3/06_autograd_conv, so "conv_backward.h" would find the
// skeleton's copy beside it first even in the solution's build; <> searches the include path,
// where load_extension.py puts the version's own folder first.
#include <conv_backward.h>
#include "course/launch.h"
#include "direct_conv.h"  // m3.03: conv2d_direct_tiled (yours or the reference, load_extension.py)
#include "im2col_gemm.h"  // m3.04: conv2d_im2col_gemm (yours or the reference, load_extension.py)
#include "implicit_gemm.h"  // m3.05: conv2d_implicit_gemm_fp16 / _bf16 (the same)

namespace course {
namespace {

constexpr int kThreads = 256;        // one-thread-per-element kernels
constexpr int kReduceThreads = 256;  // the reductions: 8 warps per block
static_assert(kReduceThreads % 32 == 0 && kReduceThreads <= 1024,
              "a reduction block must be whole warps, at most 1024 threads");

// m2.06's warp reduction, for float and double: after five shuffle steps lane 0 holds the
// sum of the 32 lanes' values.
template <typename T>
__device__ __forceinline__ T warp_reduce_sum(T value) {
  for (int offset = 16; offset > 0; offset /= 2)
    value += __shfl_down_sync(0xffffffffu, value, offset);
  return value;
}

// The sum of `value` over the kReduceThreads threads of the block, in thread 0 (the other
// threads get a part). Every run adds in the same order: the result is bitwise reproducible.
// Call it from every thread of the block (it synchronises).
template <typename T>
__device__ __forceinline__ T block_reduce_sum(T value) {
  __shared__ T warp_sums[kReduceThreads / 32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  value = warp_reduce_sum(value);
  if (lane == 0) warp_sums[warp] = value;
  __syncthreads();
  if (warp == 0) value = warp_reduce_sum(lane < kReduceThreads / 32 ? warp_sums[lane] : T(0));
  return value;
}

// Forward, one thread per output element (float64, and the fallback).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    forward_direct_kernel(ConvShape s, const T* __restrict__ x, const T* __restrict__ w,
                          const T* __restrict__ bias, T* __restrict__ y) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= std::int64_t{s.N} * s.K * s.P() * s.Q()) return;
  const int q = static_cast<int>(i % s.Q());
  const int p = static_cast<int>((i / s.Q()) % s.P());
  const int k = static_cast<int>((i / (std::int64_t{s.Q()} * s.P())) % s.K);
  const int n = static_cast<int>(i / (std::int64_t{s.Q()} * s.P() * s.K));
  y[i] = forward_at(s, x, w, bias, n, k, p, q);
}

// dx by the gather, one thread per input element: consecutive threads take consecutive
// columns, so their dy reads are consecutive and their w reads the same address.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    grad_input_gather_kernel(ConvShape s, const T* __restrict__ dy, const T* __restrict__ w,
                             T* __restrict__ dx) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= std::int64_t{s.N} * s.C * s.H * s.W) return;
  const int col = static_cast<int>(i % s.W);
  const int h = static_cast<int>((i / s.W) % s.H);
  const int c = static_cast<int>((i / (std::int64_t{s.W} * s.H)) % s.C);
  const int n = static_cast<int>(i / (std::int64_t{s.W} * s.H * s.C));
  dx[i] = grad_input_at(s, dy, w, n, c, h, col);
}

// dw, one block per element dw[k][c][r][t] (blockIdx.x = ((k * C + c) * R + r) * S + t):
// thread j sums the pixels j, j + kReduceThreads, ... (consecutive threads read consecutive
// columns of dy and x), then the block adds the parts.
template <typename T>
__global__ void __launch_bounds__(kReduceThreads)
    grad_weight_direct_kernel(ConvShape s, const T* __restrict__ dy, const T* __restrict__ x,
                              T* __restrict__ dw) {
  const std::int64_t e = blockIdx.x;
  const int t = static_cast<int>(e % s.S);
  const int r = static_cast<int>((e / s.S) % s.R);
  const int c = static_cast<int>((e / (std::int64_t{s.S} * s.R)) % s.C);
  const int k = static_cast<int>(e / (std::int64_t{s.S} * s.R * s.C));
  const T part = grad_weight_partial(s, dy, x, k, c, r, t, threadIdx.x, kReduceThreads);
  const T sum = block_reduce_sum(part);
  if (threadIdx.x == 0) dw[e] = sum;
}

// db's first pass, K x parts blocks of kReduceThreads threads: yours (task m3.06c), defined
// in autograd_conv.cu after this header; conv2d_grad_bias_cuda below launches it.
template <typename T>
__global__ void __launch_bounds__(kReduceThreads)
    grad_bias_kernel(const T* __restrict__ dy, T* __restrict__ partials, int N, int K,
                     std::int64_t pixels);

// w2[c][k][r][t] = w[k][c][R - 1 - r][S - 1 - t]: the filters of the transposed convolution.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    flip_transpose_kernel(ConvShape s, const T* __restrict__ w, T* __restrict__ w2) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= std::int64_t{s.K} * s.C * s.R * s.S) return;
  const int t = static_cast<int>(i % s.S);
  const int r = static_cast<int>((i / s.S) % s.R);
  const int k = static_cast<int>((i / (std::int64_t{s.S} * s.R)) % s.K);
  const int c = static_cast<int>(i / (std::int64_t{s.S} * s.R * s.K));  // w2 is [C][K][R][S]
  w2[i] = w[conv_weight_index(ConvLayout::nchw, s, k, c, s.R - 1 - r, s.S - 1 - t)];
}

// im2col of images n0 .. n0 + images - 1: col[(c * R + r) * S + t][j], j = (n - n0) * P * Q +
// p * Q + q, is x[n][c][h(p, r)][w(q, t)] or 0 in the padding. One thread per element, every
// index worked out again in 64 bits: simple, and slow (a 64-bit division is a few dozen
// instructions). Only the float64 grad-weight (gradcheck's small shapes) uses it; float32 runs
// m3.04's im2col (run_im2col below), which pays its divisions once per column.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    im2col_kernel(ConvShape s, const T* __restrict__ x, int n0, int images, T* __restrict__ col) {
  const std::int64_t pixels = std::int64_t{s.P()} * s.Q();
  const std::int64_t columns = pixels * images;
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= columns * s.C * s.R * s.S) return;
  const std::int64_t j = i % columns, row = i / columns;
  const int t = static_cast<int>(row % s.S);
  const int r = static_cast<int>((row / s.S) % s.R);
  const int c = static_cast<int>(row / (std::int64_t{s.S} * s.R));
  const int n = n0 + static_cast<int>(j / pixels);
  const int p = static_cast<int>((j % pixels) / s.Q()), q = static_cast<int>(j % s.Q());
  const int h = p * s.stride_h - s.pad_h + r * s.dilation_h;
  const int w = q * s.stride_w - s.pad_w + t * s.dilation_w;
  const bool inside = h >= 0 && h < s.H && w >= 0 && w < s.W;
  col[i] = inside ? x[conv_input_index(ConvLayout::nchw, s, n, c, h, w)] : T(0);
}

// dyT[k][n * P * Q + j] = dy[n][k][j]: dY as the [K x N P Q] matrix of the GEMM.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    output_to_rows_kernel(const T* __restrict__ dy, T* __restrict__ dyT, int N, int K,
                          std::int64_t pixels) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= std::int64_t{N} * K * pixels) return;
  const std::int64_t j = i % pixels, k = (i / pixels) % K, n = i / (pixels * K);
  dyT[k * N * pixels + n * pixels + j] = dy[i];
}

// `batch` column-major products C_i[m x n] = A_i^T[m x k] * B_i[k x n], float or double, with
// A_i = a + i * stride_a (lda), B_i = b + i * stride_b (ldb), C_i = c + i * stride_c (ldc).
template <typename T>
cublasStatus_t gemm_tn_batched(cublasHandle_t handle, int m, int n, int k, const T* a, int lda,
                               long long stride_a, const T* b, int ldb, long long stride_b, T* c,
                               int ldc, long long stride_c, int batch) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "float or double");
  const T alpha = 1, beta = 0;
  if constexpr (std::is_same_v<T, float>) {
    return cublasSgemmStridedBatched(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, a, lda,
                                     stride_a, b, ldb, stride_b, &beta, c, ldc, stride_c, batch);
  } else {
    return cublasDgemmStridedBatched(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, a, lda,
                                     stride_a, b, ldb, stride_b, &beta, c, ldc, stride_c, batch);
  }
}

// dw[e] (+)= partials[0][e] + partials[1][e] + ... + partials[count - 1][e], in that order
// (bitwise reproducible); each partial holds `elements` values. One thread per element.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    add_partials_kernel(const T* __restrict__ partials, int count, std::int64_t elements,
                        bool accumulate, T* __restrict__ dw) {
  const std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= elements) return;
  T sum = accumulate ? dw[e] : T(0);
  for (int i = 0; i < count; ++i) sum += partials[i * elements + e];
  dw[e] = sum;
}

unsigned int blocks_for(const char* op, std::int64_t items, int threads) {
  try {
    return grid_blocks_1d(op, items, threads);
  } catch (const std::invalid_argument& error) {
    TORCH_CHECK(false, error.what());
  }
  return 0;  // not reached
}

const at::Tensor* defined_or_null(const c10::optional<at::Tensor>& t) {
  return t.has_value() && t->defined() ? &*t : nullptr;
}

// For the float16 and bfloat16 gradients, which the float32 operators compute: a float32
// tensor of t's shape whose values the operator does not read (dx reads only x's shape, dw
// only w's), so nothing is copied.
at::Tensor float32_shape_of(const at::Tensor& t) {
  return at::empty(t.sizes(), t.options().dtype(at::kFloat));
}

// X_col of images n0 .. n0 + images - 1 for the grad-weight GEMM: m3.04's im2col for float32
// (the layout is the same, im2col_gemm.h), the generic kernel above for float64.
void run_im2col(const char* op, const ConvShape& s, const float* x, int n0, int images, float* col,
                cudaStream_t stream) {
  try {
    impl::im2col(s, x, n0, images, col, stream);
  } catch (const std::exception& error) {  // std::invalid_argument, course::CudaError
    TORCH_CHECK(false, op, ": m3.04's im2col failed: ", error.what());
  }
}
void run_im2col(const char* op, const ConvShape& s, const double* x, int n0, int images,
                double* col, cudaStream_t stream) {
  const std::int64_t elements = std::int64_t{images} * s.P() * s.Q() * s.gemm_k();
  im2col_kernel<double>
      <<<blocks_for(op, elements, kThreads), kThreads, 0, stream>>>(s, x, n0, images, col);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// ---- The forward's choice of kernel ----
// Every forward kernel the op can run on CUDA, in order of preference: the first whose fits()
// accepts the problem runs. m3.05 (implicit GEMM on the tensor cores) takes float16 and
// bfloat16; for float32, m3.04 (im2col + cuBLAS, NCHW) comes first, and m3.03's direct
// convolution takes what m3.04's workspace budget cannot hold. A new kernel is one more row;
// nothing else changes. The stride-1 grad-input path runs through the same table, so it
// speeds up with it. x, w, y are contiguous tensors of the problem's dtype in the row's
// memory_format (Contiguous: NCHW and KCRS; ChannelsLast: NHWC and KRSC, m3.05's layouts);
// bias is null or K values of the same dtype.
using ForwardRun = void (*)(const ConvShape& s, const at::Tensor& x, const at::Tensor& w,
                            const at::Tensor* bias, at::Tensor& y, cudaStream_t stream);
struct ForwardKernel {
  const char* name;
  bool (*fits)(const ConvShape& s, at::ScalarType dtype);
  ForwardRun run;
  at::MemoryFormat memory_format;
};

bool is_reduced_precision(at::ScalarType dtype) {
  return dtype == at::kHalf || dtype == at::kBFloat16;
}

bool is_float32(const ConvShape&, at::ScalarType dtype) { return dtype == at::kFloat; }
bool is_float64(const ConvShape&, at::ScalarType dtype) { return dtype == at::kDouble; }

void run_m3_03_tiled(const ConvShape& s, const at::Tensor& x, const at::Tensor& w,
                     const at::Tensor* bias, at::Tensor& y, cudaStream_t stream) {
  // m3.03's launcher checks the shape and launches (it hands shapes whose patch does not fit
  // its shared memory to m3.03's naive kernel itself).
  impl::conv2d_direct_tiled(s, x.data_ptr<float>(), w.data_ptr<float>(),
                            bias ? bias->data_ptr<float>() : nullptr, y.data_ptr<float>(), stream);
}

// m3.04 with cuBLAS. Its workspace (X_col) comes from PyTorch's caching allocator on the
// op's stream: no cudaMalloc per call, and the next op reuses the memory once this one is
// queued. The whole batch goes in one pass where that fits kIm2colWorkspaceBudgetBytes,
// else as many images per pass as fit; a layer whose one image does not fit goes to m3.03.
bool fits_m3_04(const ConvShape& s, at::ScalarType dtype) {
  return dtype == at::kFloat && impl::conv2d_im2col_min_workspace_bytes(s, Im2colGemm::cublas) <=
                                    kIm2colWorkspaceBudgetBytes;
}

void run_m3_04_cublas(const ConvShape& s, const at::Tensor& x, const at::Tensor& w,
                      const at::Tensor* bias, at::Tensor& y, cudaStream_t stream) {
  const std::size_t bytes = std::min(impl::conv2d_im2col_workspace_bytes(s, Im2colGemm::cublas),
                                     kIm2colWorkspaceBudgetBytes);
  // at::empty's memory is aligned to far more than the 16 bytes m3.04 asks for.
  const at::Tensor workspace =
      at::empty({static_cast<std::int64_t>(bytes)}, x.options().dtype(at::kByte));
  impl::conv2d_im2col_gemm(s, x.data_ptr<float>(), w.data_ptr<float>(),
                           bias ? bias->data_ptr<float>() : nullptr, y.data_ptr<float>(),
                           Im2colGemm::cublas, bytes == 0 ? nullptr : workspace.data_ptr(), bytes,
                           stream);
}

// m3.05: x NHWC and w KRSC in float16 or bfloat16, y accumulated in float32 (m3.05 writes
// float32 NHWC), then rounded once into y's dtype. m3.05's own launcher takes the fast path
// (C % 8 == 0, 16-byte aligned rows: at::empty's memory always is) or the element-by-element
// one.
bool fits_m3_05(const ConvShape&, at::ScalarType dtype) { return is_reduced_precision(dtype); }

void run_m3_05(const ConvShape& s, const at::Tensor& x, const at::Tensor& w, const at::Tensor* bias,
               at::Tensor& y, cudaStream_t stream) {
  at::Tensor y32 = at::empty_like(y, y.options().dtype(at::kFloat));  // y's NHWC strides
  const at::Tensor b32 = bias ? bias->to(at::kFloat) : at::Tensor();
  const float* b = bias ? b32.data_ptr<float>() : nullptr;
  if (x.scalar_type() == at::kHalf) {
    impl::conv2d_implicit_gemm_fp16(s, reinterpret_cast<const __half*>(x.data_ptr<at::Half>()),
                                    reinterpret_cast<const __half*>(w.data_ptr<at::Half>()), b,
                                    y32.data_ptr<float>(), stream);
  } else {
    impl::conv2d_implicit_gemm_bf16(
        s, reinterpret_cast<const __nv_bfloat16*>(x.data_ptr<at::BFloat16>()),
        reinterpret_cast<const __nv_bfloat16*>(w.data_ptr<at::BFloat16>()), b,
        y32.data_ptr<float>(), stream);
  }
  y.copy_(y32);  // on the current stream, the same as m3.05's
}

template <typename T>
void run_direct(const ConvShape& s, const at::Tensor& x, const at::Tensor& w,
                const at::Tensor* bias, at::Tensor& y, cudaStream_t stream) {
  forward_direct_kernel<T>
      <<<blocks_for("conv2d", s.output_elements(), kThreads), kThreads, 0, stream>>>(
          s, x.data_ptr<T>(), w.data_ptr<T>(), bias ? bias->data_ptr<T>() : nullptr,
          y.data_ptr<T>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

const ForwardKernel kForwardKernels[] = {
    {"m3_05_implicit_gemm", fits_m3_05, &run_m3_05, at::MemoryFormat::ChannelsLast},
    {"m3_04_im2col_cublas", fits_m3_04, &run_m3_04_cublas, at::MemoryFormat::Contiguous},
    {"m3_03_direct_tiled", is_float32, &run_m3_03_tiled, at::MemoryFormat::Contiguous},
    {"direct_fp64", is_float64, &run_direct<double>, at::MemoryFormat::Contiguous},
};

const ForwardKernel& choose_forward(const char* op, const ConvShape& s, at::ScalarType dtype) {
  for (const ForwardKernel& kernel : kForwardKernels) {
    if (kernel.fits(s, dtype)) return kernel;
  }
  TORCH_CHECK(false, op, ": no CUDA forward kernel for ", c10::toString(dtype), " (", to_string(s),
              ")");
  return kForwardKernels[0];  // not reached
}

// y = conv(x, w) + bias by `kernel`, with x, w and y already in its memory format.
void run_forward(const char* op, const ForwardKernel& kernel, const ConvShape& s,
                 const at::Tensor& x, const at::Tensor& w, const at::Tensor* bias, at::Tensor& y) {
  if (s.N == 0) return;
  try {
    kernel.run(s, x, w, bias, y, at::cuda::getCurrentCUDAStream());
  } catch (const c10::Error&) {
    throw;
  } catch (const std::exception& error) {  // std::invalid_argument, course::CudaError
    TORCH_CHECK(false, op, ": the forward kernel ", kernel.name, " failed: ", error.what());
  }
}

// ---- The operators ----
at::Tensor conv2d_cuda(const at::Tensor& input, const at::Tensor& weight,
                       const c10::optional<at::Tensor>& bias, at::IntArrayRef stride,
                       at::IntArrayRef padding, at::IntArrayRef dilation) {
  const ConvShape s =
      check_conv_arguments("conv2d", input, weight, bias, stride, padding, dilation);
  const c10::cuda::CUDAGuard device_guard(input.device());
  // The kernel first: it decides the layout its inputs are copied into (none when they are
  // in it already).
  const ForwardKernel& kernel = choose_forward("conv2d", s, input.scalar_type());
  const at::Tensor x = input.contiguous(kernel.memory_format);
  const at::Tensor w = weight.contiguous(kernel.memory_format);
  const at::Tensor* b = defined_or_null(bias);
  const at::Tensor b_contiguous = b ? b->contiguous() : at::Tensor();
  at::Tensor y =
      at::empty({s.N, s.K, s.P(), s.Q()}, x.options().memory_format(kernel.memory_format));
  run_forward("conv2d", kernel, s, x, w, b ? &b_contiguous : nullptr, y);
  // The output in the input's layout, as nn.Conv2d returns it (autograd_conv.h): channels_last
  // in, channels_last out (no copy for m3.05).
  return y.contiguous(output_memory_format(input));
}

at::Tensor grad_input_gather(const char* op, const ConvShape& s, const at::Tensor& dy,
                             const at::Tensor& w) {
  at::Tensor dx = at::empty({s.N, s.C, s.H, s.W}, dy.options());
  if (s.N == 0) return dx;
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES(dy.scalar_type(), "conv2d_grad_input_gather", [&] {
    grad_input_gather_kernel<scalar_t>
        <<<blocks_for(op, s.input_elements(), kThreads), kThreads, 0, stream>>>(
            s, dy.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(), dx.data_ptr<scalar_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return dx;
}

// For stride 1, dx[n][c][h][w] = sum_{k,r,s} dy[n][k][h + pad - r d][..] w[k][c][r][s] is the
// forward convolution of dy (K channels, P x Q) with w2[c][k][r][s] = w[k][c][R-1-r][S-1-s],
// padding d (R - 1) - pad and the same dilation: its output is H x W again. That needs a
// padding >= 0, i.e. pad <= d (R - 1).
bool grad_input_as_forward_fits(const ConvShape& s) {
  return s.stride_h == 1 && s.stride_w == 1 && s.pad_h <= s.dilation_h * (s.R - 1) &&
         s.pad_w <= s.dilation_w * (s.S - 1);
}

at::Tensor grad_input_as_forward(const char* op, const ConvShape& s, const at::Tensor& dy,
                                 const at::Tensor& w) {
  ConvShape t = s;
  t.C = s.K, t.H = s.P(), t.W = s.Q(), t.K = s.C;
  t.pad_h = s.dilation_h * (s.R - 1) - s.pad_h, t.pad_w = s.dilation_w * (s.S - 1) - s.pad_w;
  TORCH_INTERNAL_ASSERT(t.P() == s.H && t.Q() == s.W, op, ": the transposed shape is wrong");
  at::Tensor w2 = at::empty({s.C, s.K, s.R, s.S}, w.options());
  at::Tensor dx = at::empty({s.N, s.C, s.H, s.W}, dy.options());
  if (s.N == 0) return dx;
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES(w.scalar_type(), "flip_transpose", [&] {
    flip_transpose_kernel<scalar_t>
        <<<blocks_for(op, s.weight_elements(), kThreads), kThreads, 0, stream>>>(
            s, w.data_ptr<scalar_t>(), w2.data_ptr<scalar_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  const ForwardKernel& kernel = choose_forward(op, t, dy.scalar_type());
  TORCH_INTERNAL_ASSERT(kernel.memory_format == at::MemoryFormat::Contiguous, op,
                        ": the gradients run on NCHW float32 and float64 only");
  run_forward(op, kernel, t, dy, w2, nullptr, dx);
  return dx;
}

at::Tensor conv2d_grad_input_cuda(const at::Tensor& grad_output, const at::Tensor& input,
                                  const at::Tensor& weight, at::IntArrayRef stride,
                                  at::IntArrayRef padding, at::IntArrayRef dilation) {
  const char* op = "conv2d_grad_input";
  const ConvShape s = check_conv_arguments(op, input, weight, {}, stride, padding, dilation);
  check_grad_output(op, s, grad_output, input);
  if (is_reduced_precision(input.scalar_type())) {
    return conv2d_grad_input_cuda(grad_output.to(at::kFloat), float32_shape_of(input),
                                  weight.to(at::kFloat), stride, padding, dilation)
        .to(input.scalar_type());
  }
  const c10::cuda::CUDAGuard device_guard(input.device());
  const at::Tensor dy = grad_output.contiguous(), w = weight.contiguous();
  return grad_input_as_forward_fits(s) ? grad_input_as_forward(op, s, dy, w)
                                       : grad_input_gather(op, s, dy, w);
}

at::Tensor conv2d_grad_input_gather_cuda(const at::Tensor& grad_output, const at::Tensor& input,
                                         const at::Tensor& weight, at::IntArrayRef stride,
                                         at::IntArrayRef padding, at::IntArrayRef dilation) {
  const char* op = "conv2d_grad_input_gather";
  const ConvShape s = check_conv_arguments(op, input, weight, {}, stride, padding, dilation);
  check_grad_output(op, s, grad_output, input);
  if (is_reduced_precision(input.scalar_type())) {
    return conv2d_grad_input_gather_cuda(grad_output.to(at::kFloat), float32_shape_of(input),
                                         weight.to(at::kFloat), stride, padding, dilation)
        .to(input.scalar_type());
  }
  const c10::cuda::CUDAGuard device_guard(input.device());
  return grad_input_gather(op, s, grad_output.contiguous(), weight.contiguous());
}

at::Tensor conv2d_grad_weight_direct_cuda(const at::Tensor& grad_output, const at::Tensor& input,
                                          const at::Tensor& weight, at::IntArrayRef stride,
                                          at::IntArrayRef padding, at::IntArrayRef dilation) {
  const char* op = "conv2d_grad_weight_direct";
  const ConvShape s = check_conv_arguments(op, input, weight, {}, stride, padding, dilation);
  check_grad_output(op, s, grad_output, input);
  if (is_reduced_precision(input.scalar_type())) {
    return conv2d_grad_weight_direct_cuda(grad_output.to(at::kFloat), input.to(at::kFloat),
                                          float32_shape_of(weight), stride, padding, dilation)
        .to(input.scalar_type());
  }
  const c10::cuda::CUDAGuard device_guard(input.device());
  const at::Tensor dy = grad_output.contiguous(), x = input.contiguous();
  at::Tensor dw = at::empty({s.K, s.C, s.R, s.S}, dy.options());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES(dy.scalar_type(), "conv2d_grad_weight_direct", [&] {
    grad_weight_direct_kernel<scalar_t>
        <<<blocks_for(op, s.weight_elements(), 1), kReduceThreads, 0, stream>>>(
            s, dy.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), dw.data_ptr<scalar_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return dw;
}

// dw[K x CRS] = dY[K x NPQ] * im2col(x)^T[NPQ x CRS], in chunks of images whose im2col
// matrix holds at most kColumnBudget elements. Row-major dw is the column-major [CRS x K]
// matrix, so cuBLAS computes
//   dw^T[CRS x K] = col[CRS x L] * dYchunk^T[L x K],  col given as its column-major transpose.
// That GEMM has a small output (CRS x K: 576 x 64 for a 3 x 3, 64-channel layer, a handful of
// cuBLAS's tiles) and a long reduction (L = images * P * Q, 10^5 here): one GEMM would keep a
// few SMs busy for the whole of L. So the reduction is split: `slices` GEMMs of one
// strided-batched call each take L / slices columns and write their own partial dw, and
// add_partials_kernel adds the partials in a fixed order (split-K, as CUTLASS calls it; no
// atomics, so the result is reproducible). Columns left over by the split get one more GEMM.
at::Tensor conv2d_grad_weight_cuda(const at::Tensor& grad_output, const at::Tensor& input,
                                   const at::Tensor& weight, at::IntArrayRef stride,
                                   at::IntArrayRef padding, at::IntArrayRef dilation) {
  const char* op = "conv2d_grad_weight";
  const ConvShape s = check_conv_arguments(op, input, weight, {}, stride, padding, dilation);
  check_grad_output(op, s, grad_output, input);
  if (is_reduced_precision(input.scalar_type())) {
    return conv2d_grad_weight_cuda(grad_output.to(at::kFloat), input.to(at::kFloat),
                                   float32_shape_of(weight), stride, padding, dilation)
        .to(input.scalar_type());
  }
  const c10::cuda::CUDAGuard device_guard(input.device());
  const at::Tensor dy = grad_output.contiguous(), x = input.contiguous();
  at::Tensor dw = at::zeros({s.K, s.C, s.R, s.S}, dy.options());
  if (s.N == 0) return dw;
  constexpr std::int64_t kColumnBudget = std::int64_t{1} << 26;  // 256 MiB of float32
  constexpr std::int64_t kMinSliceColumns = 512;  // shorter slices: more partials than products
  constexpr std::int64_t kOutputTile = 64;        // an estimate of cuBLAS's tile of CRS x K
  const std::int64_t pixels = std::int64_t{s.P()} * s.Q(), crs = s.gemm_k();
  const std::int64_t npq = pixels * s.N, dw_elements = crs * s.K;
  TORCH_CHECK(npq <= std::numeric_limits<int>::max(), op, ": N * P * Q must fit in int, got ",
              std::to_string(npq));
  const int chunk = static_cast<int>(
      std::max<std::int64_t>(1, std::min<std::int64_t>(s.N, kColumnBudget / (crs * pixels))));
  // Enough slices for two tiles per SM, none shorter than kMinSliceColumns.
  const std::int64_t tiles =
      ((crs + kOutputTile - 1) / kOutputTile) * ((s.K + kOutputTile - 1) / kOutputTile);
  const std::int64_t wanted =
      (2 * at::cuda::getCurrentDeviceProperties()->multiProcessorCount + tiles - 1) / tiles;
  const int max_slices = static_cast<int>(
      std::max<std::int64_t>(1, std::min<std::int64_t>(wanted, chunk * pixels / kMinSliceColumns)));
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  at::Tensor rows = at::empty({s.K, npq}, dy.options());
  at::Tensor col = at::empty({crs, chunk * pixels}, dy.options());
  at::Tensor partials = at::empty({max_slices + 1, dw_elements}, dy.options());
  cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();  // bound to `stream`
  // True float32: no TF32, whatever PyTorch's handle was set to (restored below).
  cublasMath_t math_mode = CUBLAS_DEFAULT_MATH;
  TORCH_CHECK(cublasGetMathMode(handle, &math_mode) == CUBLAS_STATUS_SUCCESS, op,
              ": cublasGetMathMode failed");
  TORCH_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH) == CUBLAS_STATUS_SUCCESS, op,
              ": cublasSetMathMode failed");
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  AT_DISPATCH_FLOATING_TYPES(dy.scalar_type(), "conv2d_grad_weight", [&] {
    scalar_t* part = partials.data_ptr<scalar_t>();
    output_to_rows_kernel<scalar_t><<<blocks_for(op, npq * s.K, kThreads), kThreads, 0, stream>>>(
        dy.data_ptr<scalar_t>(), rows.data_ptr<scalar_t>(), s.N, s.K, pixels);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    for (int n0 = 0; n0 < s.N && status == CUBLAS_STATUS_SUCCESS; n0 += chunk) {
      const int images = std::min(chunk, s.N - n0);
      const std::int64_t columns = images * pixels;
      run_im2col(op, s, x.data_ptr<scalar_t>(), n0, images, col.data_ptr<scalar_t>(), stream);
      const int slices = static_cast<int>(std::max<std::int64_t>(
          1, std::min<std::int64_t>(max_slices, columns / kMinSliceColumns)));
      const std::int64_t slice = columns / slices, rest = columns - slice * slices;
      const scalar_t* chunk_rows = rows.data_ptr<scalar_t>() + n0 * pixels;
      // Slice i: col's columns [i * slice, (i + 1) * slice) (rows of its column-major
      // transpose, ld = columns) and the same columns of dY (ld = npq), into partial i.
      status = gemm_tn_batched(handle, static_cast<int>(crs), s.K, static_cast<int>(slice),
                               col.data_ptr<scalar_t>(), static_cast<int>(columns), slice,
                               chunk_rows, static_cast<int>(npq), slice, part,
                               static_cast<int>(crs), dw_elements, slices);
      if (rest > 0 && status == CUBLAS_STATUS_SUCCESS) {
        status =
            gemm_tn_batched(handle, static_cast<int>(crs), s.K, static_cast<int>(rest),
                            col.data_ptr<scalar_t>() + slice * slices, static_cast<int>(columns), 0,
                            chunk_rows + slice * slices, static_cast<int>(npq), 0,
                            part + slices * dw_elements, static_cast<int>(crs), 0, 1);
      }
      add_partials_kernel<scalar_t><<<blocks_for(op, dw_elements, kThreads), kThreads, 0, stream>>>(
          part, slices + (rest > 0 ? 1 : 0), dw_elements, n0 > 0, dw.data_ptr<scalar_t>());
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
  });
  cublasSetMathMode(handle, math_mode);
  TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, op, ": the cuBLAS GEMM failed with status ",
              std::to_string(static_cast<int>(status)));
  return dw;
}

at::Tensor conv2d_grad_bias_cuda(const at::Tensor& grad_output) {
  const char* op = "conv2d_grad_bias";
  TORCH_CHECK(grad_output.defined() && grad_output.dim() == 4, op,
              ": grad_output must be 4-D [N, K, P, Q], got shape ",
              shape_string(grad_output.sizes()));
  if (is_reduced_precision(grad_output.scalar_type())) {
    return conv2d_grad_bias_cuda(grad_output.to(at::kFloat)).to(grad_output.scalar_type());
  }
  TORCH_CHECK(grad_output.scalar_type() == at::kFloat || grad_output.scalar_type() == at::kDouble,
              op, ": grad_output must be float32, float64, float16 or bfloat16, got ",
              grad_output.dtype());
  TORCH_CHECK(grad_output.numel() <= std::numeric_limits<int>::max(), op,
              ": grad_output must have fewer than 2^31 elements");
  const c10::cuda::CUDAGuard device_guard(grad_output.device());
  const at::Tensor dy = grad_output.contiguous();
  const int N = static_cast<int>(dy.size(0)), K = static_cast<int>(dy.size(1));
  const std::int64_t pixels = dy.size(2) * dy.size(3);
  at::Tensor db = at::empty({K}, dy.options());
  if (K == 0) return db;
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  // One block per channel would leave most SMs idle when K is small (64 blocks of a 132-SM
  // GPU, each streaming 100k values of a 56 x 56 layer one load per thread at a time): split
  // each channel into parts, enough for about four blocks per SM, each part at least four
  // values per thread; the parts are then added in a fixed order.
  constexpr int kMaxParts = 65535;  // gridDim.y's limit
  const std::int64_t sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const std::int64_t per_channel = N * pixels;
  const int parts = static_cast<int>(std::max<std::int64_t>(
      1, std::min<std::int64_t>(
             {(4 * sms + K - 1) / K, per_channel / (4 * kReduceThreads), kMaxParts})));
  at::Tensor partials = at::empty({parts, K}, dy.options());
  AT_DISPATCH_FLOATING_TYPES(dy.scalar_type(), "conv2d_grad_bias", [&] {
    grad_bias_kernel<scalar_t>
        <<<dim3(static_cast<unsigned>(K), static_cast<unsigned>(parts)), kReduceThreads, 0,
           stream>>>(dy.data_ptr<scalar_t>(), partials.data_ptr<scalar_t>(), N, K, pixels);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    add_partials_kernel<scalar_t>
        <<<blocks_for("conv2d_grad_bias", K, kThreads), kThreads, 0, stream>>>(
            partials.data_ptr<scalar_t>(), parts, K, false, db.data_ptr<scalar_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return db;
}

}  // namespace

COURSE_TORCH_LIBRARY_IMPL(CUDA, m) {
  m.impl("conv2d", &conv2d_cuda);
  m.impl("conv2d_grad_input", &conv2d_grad_input_cuda);
  m.impl("conv2d_grad_input_gather", &conv2d_grad_input_gather_cuda);
  m.impl("conv2d_grad_weight", &conv2d_grad_weight_cuda);
  m.impl("conv2d_grad_weight_direct", &conv2d_grad_weight_direct_cuda);
  m.impl("conv2d_grad_bias", &conv2d_grad_bias_cuda);
}

}  // namespace course
