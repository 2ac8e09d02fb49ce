// Given code for exercise m3.05 (conv2d_implicit_gemm.cu): the types your index functions
// return, the two A loaders built on them (part 1's AnalyticLoader, part 2's
// PrecomputedLoader), the choice of tile and main loop, and the launchers. The tile shapes, the
// filter (B) copies and the tensor-core main loop are in implicit_gemm_pipeline.h, part 3's
// wgmma loop in implicit_gemm_wgmma.h. Your skeleton and the reference both include it; the
// functions you write are in conv2d_implicit_gemm.cu.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "course/async_copy.h"
#include "course/conv.h"
#include "course/cuda_check.h"
#include "course/fast_divmod.h"
#include "course/hopper.h"
#include "course/launch.h"
#include "course/requirements.h"
#include "implicit_gemm.h"
#include "implicit_gemm_pipeline.h"
#include "implicit_gemm_wgmma.h"

namespace course::COURSE_IMPL {  // see course/impl.h
namespace {

using namespace course::implicit_gemm;  // ConvTile, ConvProblem, the kernel, stage_offset

// The output pixel of a GEMM row, and the filter tap of a GEMM column.
struct OutputPixel {
  int n, p, q;
};
struct FilterTap {
  int r, s, c;
};

// Part 2's state: where a GEMM row's window starts, decoded once per block. offset is the
// index in x of (n, h, w, channel 0), which may lie in the padding (h or w outside the
// image): only offset + a tap's delta that passed the check is ever read. Rows beyond the
// GEMM (m >= M) get h = w = kOutsideRow, so that every check on them fails.
struct RowStart {
  int offset, h, w;
};
constexpr int kOutsideRow = INT_MIN / 2;

// A thread's position along GEMM k: the column g and its filter tap (r, s, c).
struct FilterWalk {
  int g, r, s, c;
};

__host__ __device__ __forceinline__ FilterWalk filter_walk_start(const ConvProblem& problem,
                                                                 int g) {
  const int rs = g / problem.shape.C;
  return {g, rs / problem.shape.S, rs % problem.shape.S, g - rs * problem.shape.C};
}

// The functions you write in conv2d_implicit_gemm.cu, declared here for the loaders below.
__host__ __device__ __forceinline__ OutputPixel gemm_row_to_pixel(int m, int P, int Q);
__host__ __device__ __forceinline__ FilterTap gemm_k_to_tap(int g, int C, int S);
__host__ __device__ __forceinline__ int input_position(int p, int r, int stride, int pad,
                                                       int dilation);
__host__ __device__ __forceinline__ bool reads_input(const ConvProblem& problem, int m, int g,
                                                     int h, int w);
__host__ __device__ __forceinline__ RowStart row_start(const ConvProblem& problem, int m);
__host__ __device__ __forceinline__ void filter_walk_advance(FilterWalk& walk,
                                                             const ConvProblem& problem, int step);
__host__ __device__ __forceinline__ bool tap_offset(const RowStart& row, const FilterWalk& walk,
                                                    const ConvProblem& problem, int& offset);

// Everything part 1 knows about A[m][g] (course::ImplicitGemmTap, implicit_gemm.h).
__host__ __device__ __forceinline__ ImplicitGemmTap locate(const ConvProblem& problem, int m,
                                                           int g) {
  const ConvShape& s = problem.shape;
  const OutputPixel pixel = gemm_row_to_pixel(m, problem.P, problem.Q);
  const FilterTap tap = gemm_k_to_tap(g, s.C, s.S);
  ImplicitGemmTap t;
  t.n = pixel.n, t.p = pixel.p, t.q = pixel.q;
  t.r = tap.r, t.s = tap.s, t.c = tap.c;
  t.h = input_position(pixel.p, tap.r, s.stride_h, s.pad_h, s.dilation_h);
  t.w = input_position(pixel.q, tap.s, s.stride_w, s.pad_w, s.dilation_w);
  t.inside = reads_input(problem, m, g, t.h, t.w);
  return t;
}

// Part 1's A loader: every copy decodes its row and column from scratch (four divisions).
// kVectorized (C % 8 == 0, x aligned): one 16-byte cp.async per 8 channels of one tap of one
// pixel, all inside or all in the padding, zero-filled there (0 bytes read). Otherwise one
// element at a time, plain loads and stores (the slow path of both parts: C = 3 first layers).
template <class Tile, class Element, bool kVectorized>
struct AnalyticLoader {
  ConvProblem problem;
  const Element* x;
  int block_m;

  __device__ AnalyticLoader(const ConvProblem& problem_, const Element* x_, int block_m_)
      : problem(problem_), x(x_), block_m(block_m_) {}

  __device__ __forceinline__ void copy(Element* As, int k0) const {
    const int tid = static_cast<int>(threadIdx.x);
    if constexpr (kVectorized) {
#pragma unroll
      for (int i = tid; i < Tile::kBlockM * Tile::kChunksK; i += Tile::kThreads) {
        const int row = i / Tile::kChunksK, column = (i % Tile::kChunksK) * 8;
        const ImplicitGemmTap t = locate(problem, block_m + row, k0 + column);
        const Element* source =
            t.inside ? x + conv_input_index(ConvLayout::nhwc, problem.shape, t.n, t.c, t.h, t.w)
                     : x;
        copy_16_bytes_async(shared_address(As + stage_offset<Tile>(row, column)), source,
                            t.inside ? 16 : 0);
      }
    } else {
      for (int i = tid; i < Tile::kBlockM * Tile::kBlockK; i += Tile::kThreads) {
        const int row = i / Tile::kBlockK, column = i % Tile::kBlockK;
        const ImplicitGemmTap t = locate(problem, block_m + row, k0 + column);
        As[stage_offset<Tile>(row, column)] =
            t.inside ? x[conv_input_index(ConvLayout::nhwc, problem.shape, t.n, t.c, t.h, t.w)]
                     : zero_element<Element>();
      }
    }
  }
};

}  // namespace

ImplicitGemmTap implicit_gemm_tap(const ConvShape& shape, int m, int g) {
  require_conv_arguments("implicit_gemm_tap", shape);
  require(m >= 0 && g >= 0, "implicit_gemm_tap", "m and g must be >= 0");
  return locate(make_conv_problem(shape), m, g);
}

namespace {
// Part 2's A loader (the fast path only: C % 8 == 0, x aligned). Thread t always copies chunk
// column t % kChunksK of rows t / kChunksK + j kRowStep (ConvTile), so it decodes its
// kRowsPerThread rows once, in the constructor, and keeps one filter walk for its column.
template <class Tile, class Element, bool kVectorized>
struct PrecomputedLoader {
  static_assert(kVectorized, "part 2's loader is the 16-byte path; the slow path is part 1's");
  ConvProblem problem;
  const Element* x;
  RowStart rows[Tile::kRowsPerThread];
  FilterWalk walk;

  __device__ PrecomputedLoader(const ConvProblem& problem_, const Element* x_, int block_m)
      : problem(problem_), x(x_) {
    const int tid = static_cast<int>(threadIdx.x);
#pragma unroll
    for (int j = 0; j < Tile::kRowsPerThread; ++j) {
      rows[j] = row_start(problem, block_m + tid / Tile::kChunksK + j * Tile::kRowStep);
    }
    walk = filter_walk_start(problem, (tid % Tile::kChunksK) * 8);
  }

  // Tiles come in order (k0 = 0, kBlockK, ...): the walk is already at k0 + this column.
  __device__ __forceinline__ void copy(Element* As, int /*k0*/) {
    const int tid = static_cast<int>(threadIdx.x);
    const int column = (tid % Tile::kChunksK) * 8;
#pragma unroll
    for (int j = 0; j < Tile::kRowsPerThread; ++j) {
      int offset = 0;
      const bool inside = tap_offset(rows[j], walk, problem, offset);
      copy_16_bytes_async(
          shared_address(As +
                         stage_offset<Tile>(tid / Tile::kChunksK + j * Tile::kRowStep, column)),
          inside ? x + offset : x, inside ? 16 : 0);
    }
    filter_walk_advance(walk, problem, Tile::kBlockK);
  }
};

enum class TileChoice { wide, narrow, small };

template <class Tile>
long long blocks_of(const ConvProblem& problem) {
  return static_cast<long long>(ceil_div(problem.M, Tile::kBlockM)) *
         ceil_div(problem.N, Tile::kBlockN);  // <= M * N < 2^31
}

// The largest tile that still gives at least two blocks per SM, so that one block's products
// run while the other waits at a barrier: the wide tile when K > 64 (for K <= 64 it would
// compute zeros), else the narrow one, else the small one (layers with few output pixels and
// many filters, such as ResNet's 14 x 14 and 7 x 7).
inline TileChoice choose_tile(const ConvProblem& problem) {
  int device = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const long long enough = 2LL * sms;
  if (problem.N > 64 && blocks_of<WideTile>(problem) >= enough) return TileChoice::wide;
  if (blocks_of<NarrowTile>(problem) >= enough) return TileChoice::narrow;
  return TileChoice::small;
}

template <class Tile, template <class, class, bool> class FastLoader, class Element>
void launch_tile(const ConvProblem& problem, bool vectorized, const Element* x, const Element* w,
                 const float* bias, float* y, cudaStream_t stream) {
  const long long blocks = blocks_of<Tile>(problem);
  // More than 48 KiB of shared memory per block only after opting in, per kernel.
  const auto kernel = vectorized ? implicit_gemm_kernel<Tile, Element, FastLoader, true>
                                 : implicit_gemm_kernel<Tile, Element, AnalyticLoader, false>;
  allow_dynamic_shared_memory(kernel, Tile::kSharedBytes, "conv2d_implicit_gemm");
  kernel<<<static_cast<unsigned>(blocks), Tile::kThreads, Tile::kSharedBytes, stream>>>(problem, x,
                                                                                        w, bias, y);
  CUDA_CHECK_LAUNCH();
}

// Part 3's kernel (implicit_gemm_wgmma.h), fast path only.
template <class Tile, template <class, class, bool> class FastLoader, class Element>
void launch_wgmma_tile(const ConvProblem& problem, const Element* x, const Element* w,
                       const float* bias, float* y, cudaStream_t stream) {
  const auto kernel = implicit_gemm_wgmma_kernel<Tile, Element, FastLoader>;
  constexpr int bytes = wgmma_shared_bytes<Tile>();
  allow_dynamic_shared_memory(kernel, bytes, "conv2d_implicit_gemm (wgmma)");
  kernel<<<static_cast<unsigned>(blocks_of<Tile>(problem)), Tile::kThreads, bytes, stream>>>(
      problem, x, w, bias, y);
  CUDA_CHECK_LAUNCH();
}

// Whether part 3's wgmma loop runs on the current GPU: a Hopper (compute capability 9.0),
// and this file built for sm_90a, whose machine code the runtime took (CMakeLists.txt adds
// sm_90a; a build for sm_90 alone has machine code without wgmma). course/hopper.h asks the
// attributes of a marker kernel of this file's own: no launch, no synchronisation, so a
// launcher may ask while its stream is being captured into a CUDA graph.
struct ThisFile {};
bool wgmma_runs_here() {
  return hopper::is_hopper_gpu() && hopper::sm90a_code_loaded<ThisFile>();
}

// Which main loop the fast path runs on: the fastest this GPU has (part 3's wgmma on a
// Hopper, else mma.sync), or mma.sync everywhere (part 2 as it was, for the tests and the
// benchmark's comparison).
enum class MainLoop { fastest, mma_sync };

template <template <class, class, bool> class FastLoader, MainLoop kMainLoop, class Element>
void launch_conv(const char* function, const ConvShape& s, const Element* x, const Element* w,
                 const float* bias, float* y, cudaStream_t stream) {
  require_conv_arguments(function, s);
  require_conv_pointers(function, s, x, w, y);
  if constexpr (std::is_same_v<Element, __nv_bfloat16>) {
    // Turing (sm_75) has float16 tensor cores only: a clear error there, never a result.
    require_compute_capability(8, 0, std::string(function) + ": bfloat16 mma.sync");
  }
  if (s.N == 0) return;  // y is empty, and a launch of zero blocks is an error
  const ConvProblem problem = make_conv_problem(s);
  // 16-byte copies of 8 channels need C % 8 == 0 (a chunk never straddles two pixels or two
  // taps; then C R S % 8 == 0 too, for W's rows) and x and w on 16-byte boundaries.
  const bool vectorized = s.C % 8 == 0 && is_aligned(x, 16) && is_aligned(w, 16);
  // Part 3 where there is a main loop to speed up: more than one 64-deep tile of g (a 1 x 1
  // layer of 64 channels has one, and is bound by writing y).
  if constexpr (kMainLoop == MainLoop::fastest) {
    if (vectorized && problem.gemm_k > WgmmaWideTile::kBlockK && wgmma_runs_here()) {
      if (problem.N > 64) {
        return launch_wgmma_tile<WgmmaWideTile, FastLoader>(problem, x, w, bias, y, stream);
      }
      return launch_wgmma_tile<WgmmaNarrowTile, FastLoader>(problem, x, w, bias, y, stream);
    }
  }
  switch (choose_tile(problem)) {
    case TileChoice::wide:
      return launch_tile<WideTile, FastLoader>(problem, vectorized, x, w, bias, y, stream);
    case TileChoice::narrow:
      return launch_tile<NarrowTile, FastLoader>(problem, vectorized, x, w, bias, y, stream);
    case TileChoice::small:
      return launch_tile<SmallTile, FastLoader>(problem, vectorized, x, w, bias, y, stream);
  }
}

}  // namespace

std::vector<std::int64_t> implicit_gemm_precomputed_walk(const ConvShape& shape, int m, int g0,
                                                         int step, int steps) {
  require_conv_arguments("implicit_gemm_precomputed_walk", shape);
  require(m >= 0 && g0 >= 0 && step >= 1 && steps >= 0, "implicit_gemm_precomputed_walk",
          "needs m >= 0, g0 >= 0, step >= 1 and steps >= 0");
  const ConvProblem problem = make_conv_problem(shape);
  const RowStart row = row_start(problem, m);
  FilterWalk walk = filter_walk_start(problem, g0);
  std::vector<std::int64_t> offsets;
  for (int i = 0; i <= steps; ++i) {
    int offset = 0;
    offsets.push_back(tap_offset(row, walk, problem, offset) ? offset : -1);
    if (i < steps) filter_walk_advance(walk, problem, step);
  }
  return offsets;
}

void conv2d_implicit_gemm_analytic_fp16(const ConvShape& shape, const __half* x, const __half* w,
                                        const float* bias, float* y, cudaStream_t stream) {
  launch_conv<AnalyticLoader, MainLoop::mma_sync>("conv2d_implicit_gemm_analytic_fp16", shape, x, w,
                                                  bias, y, stream);
}
void conv2d_implicit_gemm_analytic_bf16(const ConvShape& shape, const __nv_bfloat16* x,
                                        const __nv_bfloat16* w, const float* bias, float* y,
                                        cudaStream_t stream) {
  launch_conv<AnalyticLoader, MainLoop::mma_sync>("conv2d_implicit_gemm_analytic_bf16", shape, x, w,
                                                  bias, y, stream);
}
void conv2d_implicit_gemm_fp16(const ConvShape& shape, const __half* x, const __half* w,
                               const float* bias, float* y, cudaStream_t stream) {
  launch_conv<PrecomputedLoader, MainLoop::fastest>("conv2d_implicit_gemm_fp16", shape, x, w, bias,
                                                    y, stream);
}
void conv2d_implicit_gemm_bf16(const ConvShape& shape, const __nv_bfloat16* x,
                               const __nv_bfloat16* w, const float* bias, float* y,
                               cudaStream_t stream) {
  launch_conv<PrecomputedLoader, MainLoop::fastest>("conv2d_implicit_gemm_bf16", shape, x, w, bias,
                                                    y, stream);
}
void conv2d_implicit_gemm_mma_sync_fp16(const ConvShape& shape, const __half* x, const __half* w,
                                        const float* bias, float* y, cudaStream_t stream) {
  launch_conv<PrecomputedLoader, MainLoop::mma_sync>("conv2d_implicit_gemm_mma_sync_fp16", shape, x,
                                                     w, bias, y, stream);
}
void conv2d_implicit_gemm_mma_sync_bf16(const ConvShape& shape, const __nv_bfloat16* x,
                                        const __nv_bfloat16* w, const float* bias, float* y,
                                        cudaStream_t stream) {
  launch_conv<PrecomputedLoader, MainLoop::mma_sync>("conv2d_implicit_gemm_mma_sync_bf16", shape, x,
                                                     w, bias, y, stream);
}

const char* conv2d_implicit_gemm_main_loop() { return wgmma_runs_here() ? "wgmma" : "mma.sync"; }

}  // namespace course::COURSE_IMPL
