// Exercise m3.06, given code: the float16 grad-weight on the tensor cores, as one GEMM per
// chunk of images on m2.09's split-K kernel (autograd_conv_given.cuh calls it for each batch
// slice).
//
//   dW[K x (R S C)] = dYt[K x L] * X_col[L x (R S C)],   L = images * P * Q
//
// Row k of dYt is output channel k of dy over the chunk's L output pixels; row l of X_col is
// the receptive field of pixel l, tap by tap, channel fastest (x's NHWC order); so dW comes
// out in KRSC order, the filters' channels_last layout. What changed from the float32 path
// (conv2d_grad_weight's cuBLAS GEMMs over m3.04's im2col, in NCHW), and why it is faster:
//  * float16 operands on the tensor cores (m2.09's hgemm_planned: m2.07's mma.sync main loop,
//    split-K over L), float32 accumulation and a float32 dW, rounded to float16 once at the
//    end. The float32 path first converted dy and x to float32 copies and multiplied them in
//    true float32: twice the bytes, and no tensor cores.
//  * X_col from x in NHWC: one row of X_col is R x S runs of C channels, each run contiguous
//    both in x and in X_col, so a warp reads and writes consecutive addresses (16 bytes per
//    thread when C % 8 == 0). Each thread works out its column's (r, s, c) once and steps
//    through its rows' (n, p, q) with additions: no division per element.
//  * m2.09's fast path wants K and N of its GEMM (here L and R S C) multiples of 8, for its
//    16-byte copies: both are padded up with zeros (rows of X_col and columns of dYt past L;
//    columns of X_col past R S C, whose dW columns are dropped at the end). The padding adds
//    nothing to any sum.
//  * A 1 x 1 filter with stride 1 and no padding reads every pixel of x once, in order: its
//    X_col is x itself (NHWC, [L x C]), and no copy is made.
// Deterministic: m2.09 adds its splits in a fixed order, and the chunks of images add into dW
// one after another (beta = 1): no atomics, so two runs give the same bits.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>  // getCurrentCUDAStream, getCurrentDeviceProperties
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <limits>
#include <type_traits>

#include "course/conv.h"
#include "course/launch.h"        // ceil_div, kMaxGridY
#include "course/requirements.h"  // course::UnsupportedDevice
#include "gemm_shapes.h"          // m2.09: choose_gemm_plan, hgemm_planned (yours or the reference)

namespace course {
namespace {

// m2.09's 16-byte copies read 8 halves at a time: the GEMM's K (L) and N (R S C) are padded to
// multiples of this.
constexpr int kGemmAlignment = 8;

// X_col and dYt of one chunk of images together hold at most this many float16 values
// (256 MiB, the float32 path's X_col budget); a chunk is at least one image.
constexpr std::int64_t kChunkElements = std::int64_t{1} << 27;


std::int64_t round_up_to_gemm_alignment(std::int64_t value) {
  return (value + kGemmAlignment - 1) / kGemmAlignment * kGemmAlignment;
}

// The halves one thread moves at a time, as one load and one store: 16 bytes when C % 8 == 0
// (a run of 8 channels never crosses a tap), down to one half.
template <int kVector>
using HalfChunk = std::conditional_t<
    kVector == 8, uint4,
    std::conditional_t<kVector == 4, uint2,
                       std::conditional_t<kVector == 2, std::uint32_t, std::uint16_t>>>;

constexpr int kIm2colThreads = 256;      // a block: column threads x row threads
constexpr int kIm2colRowsPerThread = 8;  // a thread's run of rows: (n, p, q) stepped, not divided

// X_col [rows_padded][columns_padded] of the chunk of images x (NHWC, s.N images):
//   X_col[l][(r S + t) C + c] = x[n][h][w][c],  l = (n P + p) Q + q,
//   h = p stride_h - pad_h + r dilation_h,  w = q stride_w - pad_w + t dilation_w,
// zero where (h, w) is in the padding, and in the padding rows (l >= rows) and columns
// (>= R S C) of the GEMM. Columns go in groups of kVector, one load and one store each.
// Thread (x, y) of block (bx, by) takes group by * blockDim.x + x (and every
// gridDim.y * blockDim.x-th group after) in kIm2colRowsPerThread consecutive rows: it divides
// once for its group's (r, t, c) and once for its first row's (n, p, q), then steps q, p, n.
// Consecutive threads take consecutive groups of a row (blockDim.x of them, 32 unless the row
// has fewer groups), so a warp's reads of a tap's C channels and its writes are contiguous.
template <int kVector>
__global__ void __launch_bounds__(kIm2colThreads)
    im2col_nhwc_kernel(ConvShape s, const __half* __restrict__ x, int rows, int rows_padded,
                       int columns, int columns_padded, __half* __restrict__ col) {
  using Chunk = HalfChunk<kVector>;
  const std::int64_t first =
      (std::int64_t{blockIdx.x} * blockDim.y + threadIdx.y) * kIm2colRowsPerThread;
  if (first >= rows_padded) return;
  const int first_row = static_cast<int>(first);
  const int last_row =
      static_cast<int>(std::min<std::int64_t>(first + kIm2colRowsPerThread, rows_padded));
  const int P = s.P(), Q = s.Q();
  const int groups = columns_padded / kVector;
  for (int group = blockIdx.y * blockDim.x + threadIdx.x; group < groups;
       group += gridDim.y * blockDim.x) {
    const int j = group * kVector;
    const bool real_column = j < columns;  // not the GEMM's padding
    const int c = j % s.C, tap = j / s.C;
    const int dh = (tap / s.S) * s.dilation_h - s.pad_h;
    const int dw = (tap % s.S) * s.dilation_w - s.pad_w;
    int q = first_row % Q, p = (first_row / Q) % P, n = first_row / (P * Q);
    for (int row = first_row; row < last_row; ++row) {
      const int h = p * s.stride_h + dh, w = q * s.stride_w + dw;
      Chunk value{};  // zeros
      if (real_column && row < rows && h >= 0 && h < s.H && w >= 0 && w < s.W) {
        value =
            *reinterpret_cast<const Chunk*>(x + ((std::int64_t{n} * s.H + h) * s.W + w) * s.C + c);
      }
      *reinterpret_cast<Chunk*>(col + std::int64_t{row} * columns_padded + j) = value;
      if (++q == Q) {  // the next pixel: (n, p, q + 1), carried into p and n
        q = 0;
        if (++p == P) {
          p = 0;
          ++n;
        }
      }
    }
  }
}

// dYt [K][rows_padded] from dy in NHWC, which is the row-major [rows x K] matrix: a transpose.
// Each block moves 32 x 32 tiles through shared memory, read along k (dy's rows) and written
// along l (dYt's rows), so both sides are coalesced; columns l >= rows get zeros. The tile's
// rows are 34 halves (17 words) apart: reading a column of it, the 32 lanes hit 32 banks.
constexpr int kTransposeTile = 32;
constexpr int kTransposeRowThreads = 8;

__global__ void __launch_bounds__((kTransposeTile * kTransposeRowThreads))
    output_rows_from_nhwc_kernel(const __half* __restrict__ dy, int rows, int rows_padded, int K,
                                 __half* __restrict__ dyt) {
  __shared__ std::uint16_t tile[kTransposeTile][kTransposeTile + 2];
  const auto* in = reinterpret_cast<const std::uint16_t*>(dy);
  auto* out = reinterpret_cast<std::uint16_t*>(dyt);
  const std::int64_t l0 = std::int64_t{blockIdx.x} * kTransposeTile;
  for (int k0 = blockIdx.y * kTransposeTile; k0 < K; k0 += gridDim.y * kTransposeTile) {
    for (int i = threadIdx.y; i < kTransposeTile; i += kTransposeRowThreads) {
      const std::int64_t l = l0 + i;
      const int k = k0 + threadIdx.x;
      tile[i][threadIdx.x] = l < rows && k < K ? in[l * K + k] : std::uint16_t{0};
    }
    __syncthreads();
    for (int i = threadIdx.y; i < kTransposeTile; i += kTransposeRowThreads) {
      const int k = k0 + i;
      const std::int64_t l = l0 + threadIdx.x;
      if (k < K && l < rows_padded) out[std::int64_t{k} * rows_padded + l] = tile[threadIdx.x][i];
    }
    __syncthreads();  // the tile is refilled for the next k0
  }
}

// dYt [K][rows_padded] from dy in NCHW ([images][K][pixels]): dYt[k][n pixels + j] =
// dy[n][k][j], dy's first two dimensions swapped, with the padding columns zeroed. Thread l divides
// once for its (n, j), then copies its column of every gridDim.y-th channel: consecutive
// threads read and write consecutive addresses.
constexpr int kRowsThreads = 256;
constexpr int kRowsChannelBlocks = 16;  // gridDim.y at most: each thread does K / 16 channels

__global__ void __launch_bounds__(kRowsThreads)
    output_rows_from_nchw_kernel(const __half* __restrict__ dy, int pixels, int rows,
                                 int rows_padded, int K, __half* __restrict__ dyt) {
  const std::int64_t l = std::int64_t{blockIdx.x} * kRowsThreads + threadIdx.x;
  if (l >= rows_padded) return;
  const auto* in = reinterpret_cast<const std::uint16_t*>(dy);
  auto* out = reinterpret_cast<std::uint16_t*>(dyt);
  const int n = static_cast<int>(l / pixels), j = static_cast<int>(l % pixels);
  for (int k = blockIdx.y; k < K; k += gridDim.y) {
    out[std::int64_t{k} * rows_padded + l] =
        l < rows ? in[(std::int64_t{n} * K + k) * pixels + j] : std::uint16_t{0};
  }
}

// The widest group of halves that divides C and keeps x's 16-byte (8-, 4-byte) alignment.
int im2col_vector_width(const ConvShape& s, const void* x) {
  for (int width : {8, 4, 2}) {
    if (s.C % width == 0 && reinterpret_cast<std::uintptr_t>(x) % (2 * width) == 0) return width;
  }
  return 1;
}

void launch_im2col_nhwc(const char* op, const ConvShape& s, const __half* x, int rows,
                        int rows_padded, int columns, int columns_padded, __half* col,
                        cudaStream_t stream) {
  const int width = im2col_vector_width(s, x);
  const int groups = columns_padded / width;
  int column_threads = 32;  // fewer for a short row (a 1 x 1 filter over 64 channels: 8 groups)
  while (column_threads / 2 >= groups) column_threads /= 2;
  const int row_threads = kIm2colThreads / column_threads;
  const std::int64_t row_blocks =
      ceil_div(std::int64_t{rows_padded}, std::int64_t{row_threads} * kIm2colRowsPerThread);
  const std::int64_t column_blocks = ceil_div(groups, column_threads);
  TORCH_CHECK(row_blocks <= std::numeric_limits<int>::max(), op, ": X_col has too many rows");
  const dim3 grid(static_cast<unsigned>(row_blocks),
                  static_cast<unsigned>(std::min<std::int64_t>(column_blocks, kMaxGridY)));
  const dim3 block(column_threads, row_threads);
  auto launch = [&](auto kernel) {
    kernel<<<grid, block, 0, stream>>>(s, x, rows, rows_padded, columns, columns_padded, col);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  };
  switch (width) {
    case 8: launch(im2col_nhwc_kernel<8>); break;
    case 4: launch(im2col_nhwc_kernel<4>); break;
    case 2: launch(im2col_nhwc_kernel<2>); break;
    default: launch(im2col_nhwc_kernel<1>); break;
  }
}

// dYt [K][rows_padded] of the chunk dy (its images), NHWC or NCHW.
void launch_output_rows(const char* op, const ConvShape& s, const __half* dy, bool dy_nhwc,
                        int rows, int rows_padded, __half* dyt, cudaStream_t stream) {
  if (dy_nhwc) {
    const std::int64_t l_tiles = ceil_div(std::int64_t{rows_padded}, kTransposeTile);
    TORCH_CHECK(l_tiles <= std::numeric_limits<int>::max(), op, ": dy has too many pixels");
    const dim3 grid(static_cast<unsigned>(l_tiles), static_cast<unsigned>(std::min<std::int64_t>(
                                                        ceil_div(s.K, kTransposeTile), kMaxGridY)));
    output_rows_from_nhwc_kernel<<<grid, dim3(kTransposeTile, kTransposeRowThreads), 0, stream>>>(
        dy, rows, rows_padded, s.K, dyt);
  } else {
    const dim3 grid(static_cast<unsigned>(ceil_div(std::int64_t{rows_padded}, kRowsThreads)),
                    static_cast<unsigned>(std::min(s.K, kRowsChannelBlocks)));
    output_rows_from_nchw_kernel<<<grid, kRowsThreads, 0, stream>>>(dy, s.P() * s.Q(), rows,
                                                                    rows_padded, s.K, dyt);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// The columns of the padded dW, [K][grad_weight_tc_columns(s)] in float32: R S C rounded up.
std::int64_t grad_weight_tc_columns(const ConvShape& s) {
  return round_up_to_gemm_alignment(s.gemm_k());
}

// True where X_col is x itself: a 1 x 1 filter, stride 1, no padding (dilation changes
// nothing), C a multiple of 8 (X_col's rows are not padded then), x 16-byte aligned.
bool x_is_its_own_x_col(const ConvShape& s, const void* x) {
  return s.R == 1 && s.S == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_h == 0 &&
         s.pad_w == 0 && s.C % kGemmAlignment == 0 && reinterpret_cast<std::uintptr_t>(x) % 16 == 0;
}

// m2.09's planned float16 GEMM, C[M x N] = A[M x K] B[K x N] + beta C, split as its chooser
// says for this GPU's SMs (at most m2.09's own 64 MiB of partials; its wgmma tile where that
// runs: a Hopper, with m2.09 built for sm_90a), with the workspace from PyTorch's caching
// allocator on the current stream (the padded copies' room too, should A or B ever be
// misaligned: gemm_shapes.h, hgemm_workspace_floats). m2.09 throws course::UnsupportedDevice
// where this GPU cannot run its kernel (shared memory): that goes through, so that the caller
// can fall back; its other errors become PyTorch errors.
void planned_hgemm(const char* op, int M, int N, int K, const __half* A, const __half* B,
                   float beta, float* C, const at::TensorOptions& device, cudaStream_t stream) {
  const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const gemm_shapes::GemmPlan plan =
      impl::choose_gemm_plan(M, N, K, gemm_shapes::Precision::fp16, sms,
                             gemm_shapes::kSharedWorkspaceFloats, impl::wgmma_capacity_here());
  const std::size_t floats = gemm_shapes::hgemm_workspace_floats(plan, M, N, K, A, B);
  at::Tensor workspace;
  if (floats > 0) {
    workspace = at::empty({static_cast<std::int64_t>(floats)}, device.dtype(at::kFloat));
  }
  try {
    impl::hgemm_planned(plan, M, N, K, 1.0f, A, B, beta, C,
                        floats > 0 ? workspace.data_ptr<float>() : nullptr, floats, stream);
  } catch (const UnsupportedDevice&) {
    throw;
  } catch (const std::exception& error) {  // std::invalid_argument, course::CudaError
    TORCH_CHECK(false, op, ": m2.09's hgemm_planned failed: ", error.what());
  }
}

// dw32 (+)= the grad-weight of one batch slice s: dy (its s.N images, NHWC if dy_nhwc, else
// NCHW, contiguous) and x (NHWC, contiguous), both float16; dw32 is float32
// [K][grad_weight_tc_columns(s)], overwritten unless `accumulate`. The slice runs in chunks of
// whole images whose X_col and dYt fit kChunkElements; each chunk is one GEMM, and every chunk
// after the first adds into dw32 (beta = 1), in chunk order.
void grad_weight_tc_slice(const char* op, const ConvShape& s, const at::Tensor& dy, bool dy_nhwc,
                          const at::Tensor& x, at::Tensor& dw32, bool accumulate) {
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const std::int64_t pixels = std::int64_t{s.P()} * s.Q();
  const std::int64_t columns = s.gemm_k(), columns_padded = grad_weight_tc_columns(s);
  const auto* x_data = reinterpret_cast<const __half*>(x.data_ptr<at::Half>());
  const auto* dy_data = reinterpret_cast<const __half*>(dy.data_ptr<at::Half>());
  // X_col is x itself for the chunks whose rows need no padding (every chunk when P Q % 8 == 0).
  const bool direct = x_is_its_own_x_col(s, x_data);
  const bool never_copied = direct && pixels % kGemmAlignment == 0;
  const std::int64_t per_image = pixels * ((never_copied ? 0 : columns_padded) + s.K);
  const int chunk = static_cast<int>(
      std::max<std::int64_t>(1, std::min<std::int64_t>(s.N, kChunkElements / per_image)));
  const std::int64_t max_rows = round_up_to_gemm_alignment(chunk * pixels);
  TORCH_CHECK(max_rows <= std::numeric_limits<int>::max() &&
                  columns_padded <= std::numeric_limits<int>::max(),
              op, ": the float16 grad-weight GEMM's sizes must fit in int, got P * Q = ", pixels,
              " and C * R * S = ", columns);
  at::Tensor dyt = at::empty({s.K, max_rows}, x.options());
  at::Tensor col;  // X_col, made at the first chunk that needs it
  for (int n0 = 0; n0 < s.N; n0 += chunk) {
    const int images = std::min(chunk, s.N - n0);
    const int rows = static_cast<int>(images * pixels);
    const int rows_padded = static_cast<int>(round_up_to_gemm_alignment(rows));
    ConvShape part = s;
    part.N = images;
    auto* dyt_data = reinterpret_cast<__half*>(dyt.data_ptr<at::Half>());
    launch_output_rows(op, part, dy_data + n0 * pixels * s.K, dy_nhwc, rows, rows_padded, dyt_data,
                       stream);
    const __half* x_chunk = x_data + std::int64_t{n0} * s.H * s.W * s.C;
    const __half* b = x_chunk;  // X_col: x itself, when that needs no padding rows
    if (!direct || rows != rows_padded) {
      if (!col.defined()) col = at::empty({max_rows, columns_padded}, x.options());
      auto* col_data = reinterpret_cast<__half*>(col.data_ptr<at::Half>());
      launch_im2col_nhwc(op, part, x_chunk, rows, rows_padded, static_cast<int>(columns),
                         static_cast<int>(columns_padded), col_data, stream);
      b = col_data;
    }
    planned_hgemm(op, s.K, static_cast<int>(columns_padded), rows_padded, dyt_data, b,
                  accumulate || n0 > 0 ? 1.0f : 0.0f, dw32.data_ptr<float>(), dw32.options(),
                  stream);
  }
}

// dw [K, C, R, S] float16, contiguous, from the padded float32 dw32 [K][R S C (padded)]: the
// padding columns dropped, (r, s, c) reordered to (c, r, s), rounded once. Contiguous, the
// layout the operator's fake kernel promises (torch.compile plans with it), whatever x's.
at::Tensor grad_weight_from_padded(const ConvShape& s, const at::Tensor& dw32) {
  at::Tensor dw = at::empty({s.K, s.C, s.R, s.S}, dw32.options().dtype(at::kHalf));
  dw.copy_(dw32.narrow(1, 0, s.gemm_k()).view({s.K, s.R, s.S, s.C}).permute({0, 3, 1, 2}));
  return dw;
}

}  // namespace
}  // namespace course
