// Exercise m3.06, given code: everything of the CUDA half but grad_bias_kernel (yours, in
// autograd_conv.cu, which includes this header once). Both your skeleton and the reference
// solution compile this one copy.
//
// The CUDA kernels of the six operators (schemas in autograd_conv.cpp), templated on the
// scalar type so that float64 versions exist for gradcheck on the GPU:
//   forward          float32: the first kernel of the forward table below that fits:
//                    m3.04's im2col + cuBLAS GEMM restructured (a wider im2col, one GEMM for
//                    the whole batch), m3.04 itself for the 1 x 1 layers, or
//                    m3.03's tiled direct convolution where X_col would not fit its budget;
//                    float16 and bfloat16: m3.05's implicit GEMM on the tensor cores, in
//                    channels_last (NHWC) layout, accumulating in float32;
//                    float64: one thread per output over forward_at (conv_backward.h).
//   grad-input       conv2d_grad_input_gather: the GATHER kernel, one thread per dx element
//                    over grad_input_at (your task m3.06a); deterministic, no atomics, any
//                    stride. conv2d_grad_input: float16, bfloat16, and float32 with C >= 16
//                    input channels by STRIDE PHASES (conv_split.h): for each of the
//                    stride_h x stride_w phases of dx, a stride-1 forward through the forward
//                    table on dy with the phase's taps, flipped and transposed (float16 and
//                    bfloat16 on m3.05's tensor cores), its rows written into the phase's
//                    strided places of dx: each dx element once, no atomics. For stride 1 the
//                    one phase is dx itself (README.md). float32 with C < 16 (an RGB stem, whose
//                    phase GEMMs would be C = 3 rows in tiles of 32 or more) by COLUMNS
//                    (conv_grad_input_cols.h): per chunk of images a cuBLAS GEMM in true
//                    float32, dX_col = dy^T * W, then a col2im GATHER, one thread per dx
//                    element summing its own entries in a fixed order.
//                    float64: the forward table for stride 1 (padding <= dilation * (R - 1)),
//                    the gather otherwise, so that gradcheck grades the gather.
//   grad-weight      conv2d_grad_weight_direct: one block per dw element, the block's
//                    threads each summing a strided part of the N * P * Q products
//                    (grad_weight_partial, your task m3.06b), then one block reduction in a
//                    fixed order. conv2d_grad_weight: dw = dY * im2col(x)^T as a GEMM: the
//                    reduction over N * P * Q is what a GEMM is built for; cuBLAS splits
//                    it (split-K) so that the small K x CRS output fills the GPU. float32
//                    and float64: one cuBLAS GEMM per chunk of images, in true float32
//                    (float64), X_col written by the given im2col (NCHW, 16-byte stores);
//                    bfloat16 (m2.09 has no bfloat16 GEMM): the same from float32 copies of
//                    dy and x, rounded once.
//                    float16: m2.09's split-K GEMM on the tensor cores (conv_grad_weight_tc.h),
//                    dW[K x RSC] = dYt[K x NPQ] * X_col[NPQ x RSC] with X_col from x in NHWC,
//                    accumulating in float32 and rounding once (the float32 path where this GPU
//                    cannot run m2.09's kernel).
//   grad-bias        a few blocks per output channel, each a strided sum per thread and
//                    m2.06's warp reduction (grad_bias_kernel, your task m3.06c), then the
//                    parts added in a fixed order.
// The float16 and bfloat16 grad-bias is summed in float32 from float32 copies, rounded once.
// A batch whose tensors reach 2^31 elements runs as slices of whole images (conv_split.h);
// dw and db add the slices' partial sums in slice order.
// Tuning and test knobs, environment variables read at every call (conv_split.h, where a
// malformed value is an error naming the variable): COURSE_CONV_MAX_ELEMENTS lowers the slice
// limit; COURSE_CONV_IM2COL_BUDGET_BYTES, COURSE_CONV_WGRAD_COLUMN_BUDGET_BYTES and
// COURSE_CONV_DGRAD_COLUMN_BUDGET_BYTES set the bytes of the forward's X_col, grad-weight's
// X_col and grad-input's dX_col (how many images one GEMM takes).
// Every launch runs on PyTorch's current stream and is checked (C10_CUDA_KERNEL_LAUNCH_CHECK).
#pragma once

#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>  // at::cuda::getCurrentCUDABlasHandle
#include <ATen/ops/add.h>
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
#include "conv_split.h"  // grad-input by stride phases, the batch in slices, the budgets
#include "conv_grad_input_cols.h"  // float32 grad-input, few input channels: GEMM + col2im
#include "conv_grad_weight_tc.h"   // float16 grad-weight on m2.09's tensor-core GEMM
#include "course/requirements.h"  // compute_capability_shortfall: bfloat16 on m3.05

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

// The filters of grad-input phase `phase` (conv_split.h), [C][K][taps_h][taps_w]:
//   w2[c][k][i][j] = w[k][c][first_tap_h + (taps_h - 1 - i) tap_step_h][.. the same for j]
// the phase's taps, reversed and transposed. For stride 1 that is every tap, flipped:
// w2[c][k][r][t] = w[k][c][R - 1 - r][S - 1 - t], the filters of the transposed convolution.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    phase_filters_kernel(ConvShape s, GradInputPhase phase, const T* __restrict__ w,
                         T* __restrict__ w2) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= std::int64_t{s.C} * s.K * phase.h.taps * phase.w.taps) return;
  w2[i] = w[phase_filter_source(s, phase, i)];
}

// Puts grad-input phase `phase` of images n0 .. n0 + images - 1 into its places of dx (NCHW):
//   dx[n][c][phase_h + stride_h a][phase_w + stride_w b] = y[n - n0][c][a + shift_h][b + shift_w]
// for a < rows_h, b < rows_w, y being the phase's forward output (`kLayout`, shape
// phase.forward with forward.N = images), or 0 where y is null (no tap reaches the phase).
// One thread per element, in the order of y's layout (phase_scatter_index), so that
// consecutive threads read consecutive values.
template <typename T, ConvLayout kLayout>
__global__ void __launch_bounds__(kThreads)
    scatter_phase_kernel(ConvShape s, GradInputPhase phase, int n0, const T* __restrict__ y,
                         T* __restrict__ dx) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= std::int64_t{phase.forward.N} * s.C * phase.h.rows * phase.w.rows) return;
  const PhaseScatterIndex at = phase_scatter_index(s, phase, kLayout, n0, i);
  dx[at.dx] = y != nullptr ? y[at.y] : T(0);
}

// im2col of images n0 .. n0 + images - 1 (x NCHW): col[(c * R + r) * S + t][j] is
// x[n][c][h(p, r)][w(q, t)], or 0 in the padding, for column j = (n - n0) * P * Q + p * Q + q.
// m3.04's im2col, made wider: a thread writes kVector consecutive columns (4 floats or 2
// doubles, one 16-byte store, when the row length is a multiple of kVector; else 1) of
// every row of its channel, so a warp stores 512 contiguous bytes per instruction instead of
// 128, and the divisions that find a column's (n, p, q) are paid once per thread, not per
// element. The channels are blockIdx.y and every gridDim.y-th after it.
template <typename T, int kVector>
struct alignas(sizeof(T) * kVector) ColumnPack {
  T value[kVector];
};

template <typename T, int kVector>
__global__ void __launch_bounds__(kThreads)
    im2col_kernel(ConvShape s, const T* __restrict__ x, int n0, int images, T* __restrict__ col) {
  const int P = s.P(), Q = s.Q();
  const std::int64_t pixels = std::int64_t{P} * Q;
  const std::int64_t columns = pixels * images;
  const std::int64_t first =
      (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVector;
  if (first >= columns) return;  // columns % kVector == 0: the others are all inside
  // Each column's image and the input pixel of its tap (0, 0), negative in the padding.
  int image[kVector], h0[kVector], w0[kVector];
  int n = static_cast<int>(first / pixels);
  const int pq = static_cast<int>(first - n * pixels);
  int p = pq / Q, q = pq - p * Q;
  for (int e = 0; e < kVector; ++e) {
    image[e] = n0 + n;
    h0[e] = p * s.stride_h - s.pad_h;
    w0[e] = q * s.stride_w - s.pad_w;
    if (++q == Q) {  // the next column starts the next row of the output, or image
      q = 0;
      if (++p == P) p = 0, ++n;
    }
  }
  const std::int64_t plane = std::int64_t{s.H} * s.W;
  for (int c = static_cast<int>(blockIdx.y); c < s.C; c += static_cast<int>(gridDim.y)) {
    T* out = col + std::int64_t{c} * s.R * s.S * columns + first;
    for (int r = 0; r < s.R; ++r) {
      for (int t = 0; t < s.S; ++t) {
        ColumnPack<T, kVector> pack;
        for (int e = 0; e < kVector; ++e) {
          const int h = h0[e] + r * s.dilation_h, w = w0[e] + t * s.dilation_w;
          const bool inside = h >= 0 && h < s.H && w >= 0 && w < s.W;
          pack.value[e] =
              inside ? x[(std::int64_t{image[e]} * s.C + c) * plane + std::int64_t{h} * s.W + w]
                     : T(0);
        }
        *reinterpret_cast<ColumnPack<T, kVector>*>(out) = pack;  // 16-byte aligned when wide
        out += columns;  // the next row of X_col, the same columns
      }
    }
  }
}

// `batch` column-major products C_i[m x n] = op_a(A_i)[m x k] * op_b(B_i)[k x n], float or
// double (op: CUBLAS_OP_N as stored, CUBLAS_OP_T transposed), with A_i = a + i * stride_a
// (lda), B_i = b + i * stride_b (ldb), C_i = c + i * stride_c (ldc). A stride of 0 uses the
// same matrix for every product. accumulate: C_i += the product instead of C_i = it.
template <typename T>
cublasStatus_t gemm_strided_batched(cublasHandle_t handle, cublasOperation_t op_a,
                                    cublasOperation_t op_b, int m, int n, int k, const T* a,
                                    int lda, long long stride_a, const T* b, int ldb,
                                    long long stride_b, T* c, int ldc, long long stride_c,
                                    int batch, bool accumulate = false) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "float or double");
  const T alpha = 1, beta = accumulate ? 1 : 0;  // beta = 0: C is only written
  if constexpr (std::is_same_v<T, float>) {
    return cublasSgemmStridedBatched(handle, op_a, op_b, m, n, k, &alpha, a, lda, stride_a, b,
                                     ldb, stride_b, &beta, c, ldc, stride_c, batch);
  } else {
    return cublasDgemmStridedBatched(handle, op_a, op_b, m, n, k, &alpha, a, lda, stride_a, b,
                                     ldb, stride_b, &beta, c, ldc, stride_c, batch);
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

// X_col of images n0 .. n0 + images - 1 (im2col_kernel above), float32 or float64; `col` is
// at::empty's memory (aligned to far more than 16 bytes), rows of images * P * Q values.
template <typename T>
void run_im2col(const char* op, const ConvShape& s, const T* x, int n0, int images, T* col,
                cudaStream_t stream) {
  constexpr int kWide = 16 / sizeof(T);
  const std::int64_t columns = std::int64_t{images} * s.P() * s.Q();
  if (columns == 0) return;
  const unsigned int channel_blocks = static_cast<unsigned int>(std::min<int>(s.C, kMaxGridY));
  if (columns % kWide == 0) {
    const dim3 grid(blocks_for(op, columns / kWide, kThreads), channel_blocks);
    im2col_kernel<T, kWide><<<grid, kThreads, 0, stream>>>(s, x, n0, images, col);
  } else {
    const dim3 grid(blocks_for(op, columns, kThreads), channel_blocks);
    im2col_kernel<T, 1><<<grid, kThreads, 0, stream>>>(s, x, n0, images, col);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// ---- The forward's choice of kernel ----
// Every forward kernel the op can run on CUDA, in order of preference: the first whose fits()
// accepts the problem runs. m3.05 (implicit GEMM on the tensor cores) takes float16 and
// bfloat16; for float32, im2col + one cuBLAS GEMM (NCHW) comes first, m3.04 (im2col + cuBLAS,
// one GEMM per image) takes the 1 x 1 layers, and m3.03's direct
// convolution what the im2col workspace budget cannot hold. A new kernel is one more row;
// nothing else changes. The grad-input phases run through the same table, so they
// speed up with it. x, w, y are contiguous tensors of the problem's dtype in the row's
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

// cuBLAS's math mode set to `mode` for the guard's lifetime, whatever PyTorch had (restored
// also when an error leaves the scope early).
class CublasMathModeGuard {
 public:
  CublasMathModeGuard(const char* op, cublasHandle_t handle, cublasMath_t mode) : handle_(handle) {
    TORCH_CHECK(cublasGetMathMode(handle_, &saved_) == CUBLAS_STATUS_SUCCESS, op,
                ": cublasGetMathMode failed");
    TORCH_CHECK(cublasSetMathMode(handle_, mode) == CUBLAS_STATUS_SUCCESS, op,
                ": cublasSetMathMode failed");
  }
  ~CublasMathModeGuard() { cublasSetMathMode(handle_, saved_); }
  CublasMathModeGuard(const CublasMathModeGuard&) = delete;
  CublasMathModeGuard& operator=(const CublasMathModeGuard&) = delete;

 private:
  cublasHandle_t handle_;
  cublasMath_t saved_ = CUBLAS_DEFAULT_MATH;
};

// m3.04 with cuBLAS. Its workspace (X_col) comes from PyTorch's caching allocator on the
// op's stream: no cudaMalloc per call, and the next op reuses the memory once this one is
// queued. The whole batch goes in one pass where that fits the budget (1 GiB,
// kIm2colWorkspaceBudgetBytes, or COURSE_CONV_IM2COL_BUDGET_BYTES: conv_split.h), else as
// many images per pass as fit; a layer whose one image does not fit goes to m3.03.
std::size_t im2col_workspace_budget();  // below, with the other budgets
bool fits_m3_04(const ConvShape& s, at::ScalarType dtype) {
  return dtype == at::kFloat && impl::conv2d_im2col_min_workspace_bytes(s, Im2colGemm::cublas) <=
                                    im2col_workspace_budget();
}

void run_m3_04_cublas(const ConvShape& s, const at::Tensor& x, const at::Tensor& w,
                      const at::Tensor* bias, at::Tensor& y, cudaStream_t stream) {
  const std::size_t bytes = std::min(impl::conv2d_im2col_workspace_bytes(s, Im2colGemm::cublas),
                                     im2col_workspace_budget());
  // at::empty's memory is aligned to far more than the 16 bytes m3.04 asks for.
  const at::Tensor workspace =
      at::empty({static_cast<std::int64_t>(bytes)}, x.options().dtype(at::kByte));
  impl::conv2d_im2col_gemm(s, x.data_ptr<float>(), w.data_ptr<float>(),
                           bias ? bias->data_ptr<float>() : nullptr, y.data_ptr<float>(),
                           Im2colGemm::cublas, bytes == 0 ? nullptr : workspace.data_ptr(), bytes,
                           stream);
}

// float32: m3.04's im2col + GEMM, restructured: the given im2col (4 columns per thread, above)
// then ONE cuBLAS GEMM per pass of images, not one per image:
//   Y_tmp[K x L] = W[K x CRS] * X_col[CRS x L],  L = images * P * Q,
// then y[n][k][p q] = Y_tmp[k][n P Q + p q] (+ bias[k]) in one PyTorch copy (the two first
// dimensions swapped, rows of P Q contiguous). m3.04's launcher runs the batch as P Q x K
// products, one per image (a strided-batched call): a 28 x 28 layer gives each product 784
// rows, not a multiple of cuBLAS's tiles, and cuBLAS picks another kernel for a batch than
// for one long product. One GEMM over images * P * Q columns costs Y_tmp (K P Q floats per
// image) and the copy; on ResNet-18's 3 x 3 layers it was the faster of the two on the
// H200. The workspace is X_col and Y_tmp, from PyTorch's caching allocator, the whole batch
// where that fits the budget (the same as m3.04's), else as many images per pass as fit.
// 1 x 1 layers stay with m3.04: their GEMM is short (C R S = C), so the call is over in tens
// of microseconds, and there the extra tensor, copy and cuBLAS call of this path cost more
// time on the CPU than the GEMM saves on the GPU (a 1 x 1, stride-1 layer without padding
// needs no X_col at all: m3.04 reads x in place).
std::int64_t one_gemm_bytes_per_image(const ConvShape& s) {
  return (s.gemm_k() + s.K) * std::int64_t{s.P()} * s.Q() * std::int64_t{sizeof(float)};
}
bool fits_one_gemm(const ConvShape& s, at::ScalarType dtype) {
  return dtype == at::kFloat && s.R * s.S > 1 &&
         one_gemm_bytes_per_image(s) <= static_cast<std::int64_t>(im2col_workspace_budget());
}

void run_im2col_one_gemm(const ConvShape& s, const at::Tensor& x, const at::Tensor& w,
                         const at::Tensor* bias, at::Tensor& y, cudaStream_t stream) {
  constexpr const char* op = "conv2d";
  const std::int64_t pixels = std::int64_t{s.P()} * s.Q(), crs = s.gemm_k();
  const int per_pass = static_cast<int>(std::min<std::int64_t>(
      s.N, static_cast<std::int64_t>(im2col_workspace_budget()) / one_gemm_bytes_per_image(s)));
  TORCH_CHECK(std::int64_t{per_pass} * pixels <= std::numeric_limits<int>::max(), op,
              ": images * P * Q must fit in int, got ", std::to_string(per_pass * pixels));
  at::Tensor col = at::empty({crs, per_pass * pixels}, x.options());
  at::Tensor y_tmp = at::empty({s.K, per_pass * pixels}, x.options());
  cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();  // bound to `stream`
  const CublasMathModeGuard math_mode(op, handle, CUBLAS_DEFAULT_MATH);  // true float32
  for (int n0 = 0; n0 < s.N; n0 += per_pass) {
    const int images = std::min(per_pass, s.N - n0);
    const int columns = static_cast<int>(images * pixels);
    run_im2col(op, s, x.data_ptr<float>(), n0, images, col.data_ptr<float>(), stream);
    // Row-major Y_tmp [K x L] is column-major [L x K]: cuBLAS computes Y_tmp^T = X_col^T W^T,
    // X_col^T column-major [L x CRS] (ld L), W^T column-major [CRS x K] (ld CRS).
    const cublasStatus_t status = gemm_strided_batched(
        handle, CUBLAS_OP_N, CUBLAS_OP_N, columns, s.K, static_cast<int>(crs),
        col.data_ptr<float>(), columns, 0, w.data_ptr<float>(), static_cast<int>(crs), 0,
        y_tmp.data_ptr<float>(), columns, 0, 1);
    TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, op, ": the cuBLAS GEMM failed with status ",
                std::to_string(static_cast<int>(status)));
    // This pass's Y_tmp is its first K * columns floats (ld = columns, as written).
    const at::Tensor product = y_tmp.view(-1)
                                   .narrow(0, 0, s.K * std::int64_t{columns})
                                   .view({s.K, images, pixels})
                                   .transpose(0, 1);
    at::Tensor out = y.narrow(0, n0, images).view({images, s.K, pixels});
    if (bias) {
      at::add_out(out, product, bias->view({1, s.K, 1}));
    } else {
      out.copy_(product);
    }
  }
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
    {"im2col_one_gemm", fits_one_gemm, &run_im2col_one_gemm, at::MemoryFormat::Contiguous},
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

// ---- The batch in slices ----
// The kernels index a tensor with int: a batch whose tensors have 2^31 elements or more (or
// more than COURSE_CONV_MAX_ELEMENTS) runs as slices of whole images (conv_split.h). Each
// operator says how many elements one image has in the largest tensor it touches;
// for_each_batch_slice calls body(n0, images) for the slices, in order.
int batch_chunk(const char* op, int N, std::int64_t elements_per_image) {
  try {
    return conv_batch_chunk(op, N, elements_per_image);
  } catch (const std::invalid_argument& error) {
    TORCH_CHECK(false, error.what());
  }
  return 0;  // not reached
}

// The workspace budgets (conv_split.h, part 3), a malformed environment variable reported as
// a RuntimeError naming it.
template <typename Read>
std::int64_t read_budget(Read read) {
  try {
    return read();
  } catch (const std::invalid_argument& error) {
    TORCH_CHECK(false, error.what());
  }
  return 0;  // not reached
}
std::size_t im2col_workspace_budget() {
  return static_cast<std::size_t>(read_budget(
      [] { return im2col_budget_bytes(static_cast<std::int64_t>(kIm2colWorkspaceBudgetBytes)); }));
}
std::int64_t wgrad_column_budget() { return read_budget(wgrad_column_budget_bytes); }
std::int64_t dgrad_column_budget() { return read_budget(dgrad_column_budget_bytes); }

template <typename Body>
void for_each_batch_slice(const char* op, int N, std::int64_t elements_per_image, Body&& body) {
  const int chunk = batch_chunk(op, N, elements_per_image);
  for (int n0 = 0; n0 < N; n0 += chunk) body(n0, std::min(chunk, N - n0));
}

// The largest of x's and y's elements per image (w is not sliced: check_conv_arguments
// bounds it).
std::int64_t activation_elements_per_image(const ConvShape& s) {
  return std::max(std::int64_t{s.C} * s.H * s.W, std::int64_t{s.K} * s.P() * s.Q());
}

ConvShape batch_slice(ConvShape s, int images) {
  s.N = images;
  return s;
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
  // Images are the outermost dimension in both layouts: a slice of x or y is a contiguous
  // view, and the kernels read and write it in place.
  for_each_batch_slice("conv2d", s.N, activation_elements_per_image(s), [&](int n0, int images) {
    at::Tensor y_slice = y.narrow(0, n0, images);
    run_forward("conv2d", kernel, batch_slice(s, images), x.narrow(0, n0, images), w,
                b ? &b_contiguous : nullptr, y_slice);
  });
  // The output in the input's layout, as nn.Conv2d returns it (autograd_conv.h): channels_last
  // in, channels_last out (no copy for m3.05).
  return y.contiguous(output_memory_format(input));
}

// dx by the gather kernel (grad_input_at, your task m3.06a), float32 or float64, NCHW.
at::Tensor grad_input_gather(const char* op, const ConvShape& s, const at::Tensor& dy,
                             const at::Tensor& w) {
  at::Tensor dx = at::empty({s.N, s.C, s.H, s.W}, dy.options());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  for_each_batch_slice(op, s.N, activation_elements_per_image(s), [&](int n0, int images) {
    const ConvShape slice = batch_slice(s, images);
    AT_DISPATCH_FLOATING_TYPES(dy.scalar_type(), "conv2d_grad_input_gather", [&] {
      grad_input_gather_kernel<scalar_t>
          <<<blocks_for(op, slice.input_elements(), kThreads), kThreads, 0, stream>>>(
              slice, dy.data_ptr<scalar_t>() + n0 * (std::int64_t{s.K} * s.P() * s.Q()),
              w.data_ptr<scalar_t>(), dx.data_ptr<scalar_t>() + n0 * (std::int64_t{s.C} * s.H * s.W));
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  });
  return dx;
}

// dx by stride phases (conv_split.h): for each phase (ph, pw), the phase's taps reversed and
// transposed (phase_filters_kernel), a stride-1 forward of dy with them through the forward
// table (im2col + GEMM / m3.03 in float32 on NCHW, m3.05's tensor cores in float16 and bfloat16 on
// NHWC, the direct kernel in float64), and scatter_phase_kernel putting its rows into dx's
// strided places. Every dx element is written once (or zeroed first, where a phase has no
// taps, then written): deterministic, no atomics. For stride 1
// the one phase is dx itself and the forward writes dx directly (NCHW kernels). Returns dx
// NCHW in dy's dtype.
at::Tensor grad_input_by_phases(const char* op, const ConvShape& s, const at::Tensor& grad_output,
                                const at::Tensor& weight) {
  const at::ScalarType dtype = grad_output.scalar_type();
  at::Tensor dx = at::empty({s.N, s.C, s.H, s.W}, grad_output.options());
  if (s.N == 0) return dx;
  const at::Tensor w = weight.contiguous();
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const int chunk = batch_chunk(op, s.N,
                                std::max(activation_elements_per_image(s),
                                         grad_input_phase_elements_per_image(s)));
  at::Tensor dy_nchw, dy_nhwc;  // dy in the layouts the phases' kernels read, made once
  // Phases without taps (a 1 x 1 filter at stride 2: three of the four) are zeros: one fill
  // of dx first, instead of a scatter of zeros per phase, and the other phases overwrite it.
  const bool zeros_written = grad_input_has_zero_phases(s);
  if (zeros_written) dx.zero_();
  for (int ph = 0; ph < s.stride_h; ++ph) {
    for (int pw = 0; pw < s.stride_w; ++pw) {
      const GradInputPhase phase = plan_grad_input_phase(s, ph, pw);
      if (!phase.has_rows()) continue;  // ph >= H: no dx row is this phase's
      if (zeros_written && !phase.has_taps()) continue;  // zeros already
      const ForwardKernel* kernel = nullptr;
      at::Tensor w2, dy;
      if (phase.has_taps()) {
        kernel = &choose_forward(op, phase.forward, dtype);
        w2 = at::empty({s.C, s.K, phase.h.taps, phase.w.taps}, w.options());
        AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "phase_filters", [&] {
          phase_filters_kernel<scalar_t>
              <<<blocks_for(op, w2.numel(), kThreads), kThreads, 0, stream>>>(
                  s, phase, w.data_ptr<scalar_t>(), w2.data_ptr<scalar_t>());
          C10_CUDA_KERNEL_LAUNCH_CHECK();
        });
        w2 = w2.contiguous(kernel->memory_format);
        at::Tensor& cached =
            kernel->memory_format == at::MemoryFormat::ChannelsLast ? dy_nhwc : dy_nchw;
        if (!cached.defined()) cached = grad_output.contiguous(kernel->memory_format);
        dy = cached;
      }
      for (int n0 = 0; n0 < s.N; n0 += chunk) {
        const int images = std::min(chunk, s.N - n0);
        GradInputPhase slice = phase;
        slice.forward.N = images;
        const at::Tensor dy_slice = kernel ? dy.narrow(0, n0, images) : at::Tensor();
        if (kernel && phase.is_whole(s) && kernel->memory_format == at::MemoryFormat::Contiguous) {
          at::Tensor dx_slice = dx.narrow(0, n0, images);
          run_forward(op, *kernel, slice.forward, dy_slice, w2, nullptr, dx_slice);
          continue;
        }
        at::Tensor y;
        if (kernel) {
          y = at::empty({images, s.C, slice.forward.P(), slice.forward.Q()},
                        dx.options().memory_format(kernel->memory_format));
          run_forward(op, *kernel, slice.forward, dy_slice, w2, nullptr, y);
        }
        const bool nhwc = kernel && kernel->memory_format == at::MemoryFormat::ChannelsLast;
        const std::int64_t elements = std::int64_t{images} * s.C * phase.h.rows * phase.w.rows;
        AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "scatter_phase", [&] {
          const scalar_t* y_data = kernel ? y.data_ptr<scalar_t>() : nullptr;
          if (nhwc) {
            scatter_phase_kernel<scalar_t, ConvLayout::nhwc>
                <<<blocks_for(op, elements, kThreads), kThreads, 0, stream>>>(
                    s, slice, n0, y_data, dx.data_ptr<scalar_t>());
          } else {
            scatter_phase_kernel<scalar_t, ConvLayout::nchw>
                <<<blocks_for(op, elements, kThreads), kThreads, 0, stream>>>(
                    s, slice, n0, y_data, dx.data_ptr<scalar_t>());
          }
          C10_CUDA_KERNEL_LAUNCH_CHECK();
        });
      }
    }
  }
  return dx;
}

// dx by columns (conv_grad_input_cols.h): float32 layers with few input channels, where the
// phases' GEMMs would be mostly empty tiles. Per chunk of images (as many as fit the dgrad
// column budget, so that dX_col is still in L2 when the gather reads it):
//   1. one strided-batched cuBLAS GEMM in true float32 (no TF32, whatever PyTorch's handle
//      says), per image n:  dX_col_n[P Q x C R S] = dy_n^T[P Q x K] * W[K x C R S].
//      Column-major, that is C = A * B^T with A = dy_n (NCHW: the column-major [P Q x K]
//      matrix, ld P Q) and B = W (KCRS: the column-major [C R S x K] matrix, ld C R S); every
//      image uses the same W (stride 0). dX_col_n lands as the row-major [C R S][P Q] matrix,
//      each tap's row of P Q outputs contiguous, which the gather reads along q.
//   2. col2im_gather_kernel: each dx element the sum of its own entries, in a fixed order.
// dX_col is a workspace from PyTorch's caching allocator, one chunk's worth, reused by the
// chunks in stream order. The batch slices (for_each_batch_slice) bound dy and dx; dX_col
// is indexed with 64 bits, and where one image's alone is over the budget it holds one image
// (at most kColumnsMaxImageBytes: grad_input_by_columns_fits).
at::Tensor grad_input_by_columns(const char* op, const ConvShape& s, const at::Tensor& grad_output,
                                 const at::Tensor& weight) {
  at::Tensor dx = at::empty({s.N, s.C, s.H, s.W}, grad_output.options());
  if (s.N == 0) return dx;
  const int chunk = grad_input_column_chunk(s, dgrad_column_budget());
  const at::Tensor dy = grad_output.contiguous();
  const at::Tensor w = weight.contiguous();
  const ColumnAxis along_h = plan_column_axis(s.H, s.P(), s.R, s.stride_h, s.pad_h, s.dilation_h);
  const ColumnAxis along_w = plan_column_axis(s.W, s.Q(), s.S, s.stride_w, s.pad_w, s.dilation_w);
  const std::int64_t pixels = std::int64_t{s.P()} * s.Q(), crs = s.gemm_k();
  const std::int64_t dy_per_image = s.K * pixels, dx_per_image = std::int64_t{s.C} * s.H * s.W;
  at::Tensor columns = at::empty({std::min(chunk, s.N) * crs * pixels}, dy.options());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();  // bound to `stream`
  const CublasMathModeGuard math_mode(op, handle, CUBLAS_DEFAULT_MATH);
  for_each_batch_slice(op, s.N, activation_elements_per_image(s), [&](int first, int count) {
    for (int n0 = first; n0 < first + count; n0 += chunk) {
      const int images = std::min(chunk, first + count - n0);
      // Image i: dX_col_i [P Q x C R S] = dY_i [P Q x K] * W^T (dY_i is NCHW's [K][P Q], W one
      // matrix for all: stride 0), column-major, which is row-major [C R S][P Q].
      const cublasStatus_t status = gemm_strided_batched(
          handle, CUBLAS_OP_N, CUBLAS_OP_T, static_cast<int>(pixels), static_cast<int>(crs), s.K,
          dy.data_ptr<float>() + n0 * dy_per_image, static_cast<int>(pixels), dy_per_image,
          w.data_ptr<float>(), static_cast<int>(crs), 0, columns.data_ptr<float>(),
          static_cast<int>(pixels), crs * pixels, images);
      TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, op,
                  ": the cuBLAS GEMM of dX_col failed with status ",
                  std::to_string(static_cast<int>(status)));
      const ConvShape chunk_shape = batch_slice(s, images);
      col2im_gather_kernel<<<blocks_for(op, chunk_shape.input_elements(), kCol2imThreads),
                             kCol2imThreads, 0, stream>>>(
          chunk_shape, along_h, along_w, columns.data_ptr<float>(),
          dx.data_ptr<float>() + n0 * dx_per_image);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
  });
  return dx;
}

// The float64 grad-input keeps its reference paths: the forward table's direct kernel where
// the transposed convolution is a forward one with padding >= 0 (stride 1, padding <=
// dilation * (R - 1)), the gather everywhere else, so that gradcheck on the GPU grades
// your grad_input_at (task m3.06a) on every strided case.
bool float64_grad_input_as_forward(const ConvShape& s) {
  return s.stride_h == 1 && s.stride_w == 1 && s.pad_h <= s.dilation_h * (s.R - 1) &&
         s.pad_w <= s.dilation_w * (s.S - 1);
}

// bfloat16 runs on m3.05's tensor cores from compute capability 8.0 only; older GPUs take the
// float32 phases instead (the result is the same float32 sum, rounded once).
bool phases_run_in(at::ScalarType dtype) {
  return dtype != at::kBFloat16 || compute_capability_shortfall(8, 0, "bfloat16 mma.sync").empty();
}

at::Tensor conv2d_grad_input_cuda(const at::Tensor& grad_output, const at::Tensor& input,
                                  const at::Tensor& weight, at::IntArrayRef stride,
                                  at::IntArrayRef padding, at::IntArrayRef dilation) {
  const char* op = "conv2d_grad_input";
  const ConvShape s = check_conv_arguments(op, input, weight, {}, stride, padding, dilation);
  check_grad_output(op, s, grad_output, input);
  const at::ScalarType dtype = input.scalar_type();
  if (!phases_run_in(dtype)) {
    return conv2d_grad_input_cuda(grad_output.to(at::kFloat), float32_shape_of(input),
                                  weight.to(at::kFloat), stride, padding, dilation)
        .to(dtype);
  }
  const c10::cuda::CUDAGuard device_guard(input.device());
  if (dtype == at::kFloat && grad_input_by_columns_fits(s)) {
    return grad_input_by_columns(op, s, grad_output, weight);
  }
  if (dtype == at::kDouble && !float64_grad_input_as_forward(s)) {
    return grad_input_gather(op, s, grad_output.contiguous(), weight.contiguous());
  }
  return grad_input_by_phases(op, s, grad_output, weight);
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

// The dtype the gradients of weight and bias are summed in: float64 for float64, float32
// for the others (float16 and bfloat16 are converted a slice at a time, and the sum rounded
// once at the end).
at::ScalarType accumulation_dtype(at::ScalarType dtype) {
  return dtype == at::kDouble ? at::kDouble : at::kFloat;
}

// A batch slice of t, contiguous (NCHW) in `dtype`: a view when t already is, else a copy of
// the slice only.
at::Tensor slice_as(const at::Tensor& t, int n0, int images, at::ScalarType dtype) {
  return t.narrow(0, n0, images).to(dtype).contiguous();
}

at::Tensor conv2d_grad_weight_direct_cuda(const at::Tensor& grad_output, const at::Tensor& input,
                                          const at::Tensor& weight, at::IntArrayRef stride,
                                          at::IntArrayRef padding, at::IntArrayRef dilation) {
  const char* op = "conv2d_grad_weight_direct";
  const ConvShape s = check_conv_arguments(op, input, weight, {}, stride, padding, dilation);
  check_grad_output(op, s, grad_output, input);
  const c10::cuda::CUDAGuard device_guard(input.device());
  const at::ScalarType dtype = accumulation_dtype(input.scalar_type());
  const int chunk = batch_chunk(op, s.N, activation_elements_per_image(s));
  const int slices = s.N == 0 ? 1 : (s.N + chunk - 1) / chunk;
  // One slice (the usual case): the kernel writes dw. Several: each writes its partial dw,
  // added in slice order (add_partials_kernel).
  at::Tensor partials = slices == 1 ? at::empty({s.K, s.C, s.R, s.S}, grad_output.options().dtype(dtype))
                                    : at::empty({slices, s.K, s.C, s.R, s.S}, grad_output.options().dtype(dtype));
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  for (int i = 0; i < slices; ++i) {
    const int n0 = i * chunk, images = std::min(chunk, s.N - n0);
    const at::Tensor dy = slice_as(grad_output, n0, images, dtype);
    const at::Tensor x = slice_as(input, n0, images, dtype);
    AT_DISPATCH_FLOATING_TYPES(dtype, "conv2d_grad_weight_direct", [&] {
      grad_weight_direct_kernel<scalar_t>
          <<<blocks_for(op, s.weight_elements(), 1), kReduceThreads, 0, stream>>>(
              batch_slice(s, images), dy.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(),
              partials.data_ptr<scalar_t>() + i * s.weight_elements());
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  }
  at::Tensor dw = partials;
  if (slices > 1) {
    dw = at::empty({s.K, s.C, s.R, s.S}, partials.options());
    AT_DISPATCH_FLOATING_TYPES(dtype, "conv2d_grad_weight_direct", [&] {
      add_partials_kernel<scalar_t>
          <<<blocks_for(op, s.weight_elements(), kThreads), kThreads, 0, stream>>>(
              partials.data_ptr<scalar_t>(), slices, s.weight_elements(), false,
              dw.data_ptr<scalar_t>());
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  }
  return dw.to(input.scalar_type());
}

// dw (+)= dY * im2col(x)^T for one batch slice s (dy, x contiguous NCHW of s.N >= 1 images):
// dw[K x CRS] = dY[K x NPQ] * im2col(x)^T[NPQ x CRS], one cuBLAS GEMM per chunk of images
// whose im2col matrix fits the column budget, each chunk adding its product to the previous
// chunks' (beta = 1), in chunk order. Row-major dw is the column-major [CRS x K] matrix, so
// cuBLAS computes
//   dw^T[CRS x K] = col[CRS x L] * dYchunk^T[L x K],  col given as its column-major transpose.
// That GEMM has a small output (CRS x K: 1152 x 128 for a 3 x 3, 128-channel layer, nine
// 128 x 128 tiles) and a long reduction (L = images * P * Q, 25,088 there): too few tiles for
// the GPU's SMs, so the reduction has to be split. cuBLAS does that itself for a shape like
// this (its split-K kernels, which add their parts in a fixed order: the same bits every
// run), and on the H200 one call was faster than any split of our own into strided-batched
// slices plus a reduction kernel, from 2 to 128 slices (the `split-K` of m2.09, one level up).
// accumulate: add to dw (a later batch slice) instead of overwriting it.
template <typename scalar_t>
cublasStatus_t grad_weight_gemm(const char* op, const ConvShape& s, const at::Tensor& dy,
                                const at::Tensor& x, at::Tensor& dw, bool accumulate,
                                cublasHandle_t handle, cudaStream_t stream) {
  // 256 MiB by default, or COURSE_CONV_WGRAD_COLUMN_BUDGET_BYTES (conv_split.h, part 3).
  const std::int64_t column_budget = wgrad_column_budget() / std::int64_t{sizeof(scalar_t)};
  const std::int64_t pixels = std::int64_t{s.P()} * s.Q(), crs = s.gemm_k();
  const std::int64_t npq = pixels * s.N;
  TORCH_CHECK(npq <= std::numeric_limits<int>::max(), op, ": N * P * Q must fit in int, got ",
              std::to_string(npq));
  const int chunk = static_cast<int>(
      std::max<std::int64_t>(1, std::min<std::int64_t>(s.N, column_budget / (crs * pixels))));
  // dY as the [K x N P Q] matrix: dy's [N][K][P Q] with its first two dimensions swapped
  // (PyTorch's copy kernel; every row of P Q values stays contiguous).
  const at::Tensor rows = dy.view({s.N, s.K, pixels}).transpose(0, 1).contiguous();
  at::Tensor col = at::empty({crs, chunk * pixels}, dy.options());
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  for (int n0 = 0; n0 < s.N && status == CUBLAS_STATUS_SUCCESS; n0 += chunk) {
    const int images = std::min(chunk, s.N - n0);
    const std::int64_t columns = images * pixels;
    run_im2col(op, s, x.data_ptr<scalar_t>(), n0, images, col.data_ptr<scalar_t>(), stream);
    // col's columns are rows of its column-major transpose (ld = columns); the chunk's
    // columns of dY start at n0 * P * Q (ld = N P Q).
    status = gemm_strided_batched(
        handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(crs), s.K, static_cast<int>(columns),
        col.data_ptr<scalar_t>(), static_cast<int>(columns), 0,
        rows.data_ptr<scalar_t>() + n0 * pixels, static_cast<int>(npq), 0,
        dw.data_ptr<scalar_t>(), static_cast<int>(crs), 0, 1,
        /*accumulate=*/accumulate || n0 > 0);
  }
  return status;
}

// float16 dw on the tensor cores (conv_grad_weight_tc.h): x in NHWC (copied only when it is
// not), dy as it comes when NHWC, else NCHW; one batch slice after another, each adding its dw
// into the float32 dw32 in slice order, rounded to float16 once at the end. Returns an
// undefined tensor where this GPU cannot run m2.09's kernel (course::UnsupportedDevice): the
// caller then takes the float32 path.
at::Tensor grad_weight_fp16_tensor_cores(const char* op, const ConvShape& s,
                                         const at::Tensor& grad_output, const at::Tensor& input) {
  if (s.N == 0) return at::zeros({s.K, s.C, s.R, s.S}, input.options());
  const at::Tensor x = input.contiguous(at::MemoryFormat::ChannelsLast);
  const bool dy_nhwc =
      grad_output.is_contiguous(at::MemoryFormat::ChannelsLast) && !grad_output.is_contiguous();
  const at::Tensor dy = dy_nhwc ? grad_output : grad_output.contiguous();
  at::Tensor dw32 = at::empty({s.K, grad_weight_tc_columns(s)}, input.options().dtype(at::kFloat));
  try {
    for_each_batch_slice(op, s.N, activation_elements_per_image(s), [&](int n0, int images) {
      grad_weight_tc_slice(op, batch_slice(s, images), dy.narrow(0, n0, images), dy_nhwc,
                           x.narrow(0, n0, images), dw32, n0 > 0);
    });
  } catch (const UnsupportedDevice&) {
    return at::Tensor();
  }
  return grad_weight_from_padded(s, dw32);
}

// dw by cuBLAS GEMMs in true float32 (float64 for float64), one batch slice after another
// (grad_weight_gemm), each adding its dw to the previous ones' in slice order. float16 runs
// on the tensor cores instead (grad_weight_fp16_tensor_cores), unless this GPU cannot run
// m2.09's kernel; bfloat16 (m2.09 has no bfloat16 GEMM) is converted to float32 a slice at a
// time, and its dw rounded once at the end.
at::Tensor conv2d_grad_weight_cuda(const at::Tensor& grad_output, const at::Tensor& input,
                                   const at::Tensor& weight, at::IntArrayRef stride,
                                   at::IntArrayRef padding, at::IntArrayRef dilation) {
  const char* op = "conv2d_grad_weight";
  const ConvShape s = check_conv_arguments(op, input, weight, {}, stride, padding, dilation);
  check_grad_output(op, s, grad_output, input);
  const c10::cuda::CUDAGuard device_guard(input.device());
  if (input.scalar_type() == at::kHalf) {
    const at::Tensor dw = grad_weight_fp16_tensor_cores(op, s, grad_output, input);
    if (dw.defined()) return dw;
  }
  const at::ScalarType dtype = accumulation_dtype(input.scalar_type());
  at::Tensor dw = at::zeros({s.K, s.C, s.R, s.S}, grad_output.options().dtype(dtype));
  if (s.N == 0) return dw.to(input.scalar_type());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();  // bound to `stream`
  // True float32: no TF32, whatever PyTorch's handle was set to (restored after).
  const CublasMathModeGuard math_mode(op, handle, CUBLAS_DEFAULT_MATH);
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  for_each_batch_slice(op, s.N, activation_elements_per_image(s), [&](int n0, int images) {
    if (status != CUBLAS_STATUS_SUCCESS) return;
    const at::Tensor dy = slice_as(grad_output, n0, images, dtype);
    const at::Tensor x = slice_as(input, n0, images, dtype);
    AT_DISPATCH_FLOATING_TYPES(dtype, "conv2d_grad_weight", [&] {
      status = grad_weight_gemm<scalar_t>(op, batch_slice(s, images), dy, x, dw, n0 > 0, handle,
                                          stream);
    });
  });
  TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, op, ": the cuBLAS GEMM failed with status ",
              std::to_string(static_cast<int>(status)));
  return dw.to(input.scalar_type());
}

// db by grad_bias_kernel (your task m3.06c): each batch slice adds its parts of each channel
// into its own rows of `partials`, then add_partials_kernel adds all the parts of a channel
// in a fixed order. float16 and bfloat16 are summed in float32 and rounded once.
at::Tensor conv2d_grad_bias_cuda(const at::Tensor& grad_output) {
  const char* op = "conv2d_grad_bias";
  TORCH_CHECK(grad_output.defined() && grad_output.dim() == 4, op,
              ": grad_output must be 4-D [N, K, P, Q], got shape ",
              shape_string(grad_output.sizes()));
  TORCH_CHECK(grad_output.scalar_type() == at::kFloat || grad_output.scalar_type() == at::kDouble ||
                  is_reduced_precision(grad_output.scalar_type()),
              op, ": grad_output must be float32, float64, float16 or bfloat16, got ",
              grad_output.dtype());
  for (const std::int64_t size : grad_output.sizes()) {
    TORCH_CHECK(size <= std::numeric_limits<int>::max(), op, ": sizes must fit in int, got ",
                shape_string(grad_output.sizes()));
  }
  const c10::cuda::CUDAGuard device_guard(grad_output.device());
  const at::ScalarType dtype = accumulation_dtype(grad_output.scalar_type());
  const int N = static_cast<int>(grad_output.size(0)), K = static_cast<int>(grad_output.size(1));
  const std::int64_t pixels = grad_output.size(2) * grad_output.size(3);
  if (N == 0 || K == 0 || pixels == 0) {
    return at::zeros({K}, grad_output.options());
  }
  const int chunk = batch_chunk(op, N, K * pixels);
  const int batch_slices = (N + chunk - 1) / chunk;
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  // One block per channel would leave most SMs idle when K is small (64 blocks of a 132-SM
  // GPU, each streaming 100k values of a 56 x 56 layer one load per thread at a time): split
  // each channel into parts, enough for about four blocks per SM, each part at least four
  // values per thread; the parts are then added in a fixed order.
  constexpr int kMaxParts = 65535;  // gridDim.y's limit
  const std::int64_t sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const std::int64_t per_channel = std::int64_t{chunk} * pixels;
  const int parts = static_cast<int>(std::max<std::int64_t>(
      1, std::min<std::int64_t>(
             {(4 * sms + K - 1) / K, per_channel / (4 * kReduceThreads), kMaxParts})));
  at::Tensor partials = at::empty({batch_slices * parts, K}, grad_output.options().dtype(dtype));
  at::Tensor db = at::empty({K}, partials.options());
  for (int i = 0; i < batch_slices; ++i) {
    const int n0 = i * chunk, images = std::min(chunk, N - n0);
    const at::Tensor dy = slice_as(grad_output, n0, images, dtype);
    AT_DISPATCH_FLOATING_TYPES(dtype, "conv2d_grad_bias", [&] {
      grad_bias_kernel<scalar_t>
          <<<dim3(static_cast<unsigned>(K), static_cast<unsigned>(parts)), kReduceThreads, 0,
             stream>>>(dy.data_ptr<scalar_t>(),
                       partials.data_ptr<scalar_t>() + std::int64_t{i} * parts * K, images, K,
                       pixels);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  }
  AT_DISPATCH_FLOATING_TYPES(dtype, "conv2d_grad_bias", [&] {
    add_partials_kernel<scalar_t>
        <<<blocks_for(op, K, kThreads), kThreads, 0, stream>>>(
            partials.data_ptr<scalar_t>(), batch_slices * parts, K, false,
            db.data_ptr<scalar_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return db.to(grad_output.scalar_type());
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
