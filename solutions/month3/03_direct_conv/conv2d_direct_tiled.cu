// Exercise m3.03, part 2: direct convolution from shared-memory tiles, several outputs per
// thread. (Reference solution.)
//
// What changed from part 1 (one thread per output): a block of 128 threads computes a tile
// of outputs, an 8 x 8 patch of output pixels of one image for 64 output channels (4096
// outputs), and it does so in steps of `chunk` input channels (up to 8). In each step the
// block copies into shared memory
//   - the input patch those 8 x 8 outputs read, with its halo: for stride u, dilation d and
//     an R-row filter, (8 - 1) * u + (R - 1) * d + 1 rows (10 for 3 x 3, stride 1), and
//     columns alike, zero where the patch lies in the padding; and
//   - the slice of the weights for the block's 64 filters and these channels,
// waits (__syncthreads), and then every thread accumulates 8 output channels x 4 output
// pixels = 32 outputs in registers: for each (c, r, s) it reads 8 weights and 4 input
// values from shared memory and does 32 multiply-adds with them.
//
// Why it should be faster: part 1 issued two loads (from L1/L2 at best) per multiply-add.
// Here every input value of the patch is loaded from global memory once per block and then
// used by 64 filters and up to R * S taps; every weight is loaded once per block and used by
// 64 pixels. Inside the block, a thread turns 12 shared-memory loads into 32 multiply-adds:
// the register tile of m2.05, with weights as one operand and input pixels as the other.
// README.md ("The tiled kernel") draws the tile; "When tiling does not help" says where the
// reuse runs out (1 x 1 filters, few channels, tiny images).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

// ---- given: the same in the skeleton and the solution (./course check compares) ----
#include "course/conv.h"
#include "course/cuda_check.h"
#include "course/launch.h"
#include "direct_conv.h"

namespace course::COURSE_IMPL {  // see course/impl.h
namespace direct_tiled {

// The block's tile of outputs: kTileP x kTileQ output pixels of one image, kTileK channels.
constexpr int kTileP = 8, kTileQ = 8, kTileK = 64;
// What one thread computes: kPixelsPerThread pixels (rows p_local0 .. p_local0 + 3 of one
// column q_local of the tile) for kChannelsPerThread output channels (k_local0 .. + 7).
constexpr int kPixelsPerThread = 4, kChannelsPerThread = 8;
constexpr int kPixelGroups = kTileP * kTileQ / kPixelsPerThread;  // 16
constexpr int kChannelGroups = kTileK / kChannelsPerThread;       // 8
constexpr int kThreads = kPixelGroups * kChannelGroups;           // 128
[[maybe_unused]] constexpr int kWarps = kThreads / 32;            // the warps copy the weights
// Input channels per step, and the shared memory a block may use (48 KiB: the most a block
// gets without opting in; smaller also lets more blocks share a multiprocessor).
constexpr int kMaxChannelChunk = 8;
constexpr std::int64_t kSharedBudgetBytes = 48 * 1024;
// __launch_bounds__'s second argument: keep room for 4 blocks (16 warps) per multiprocessor,
// i.e. at most 128 registers per thread. The 32 accumulators, 8 weights and 4 inputs need
// about 96; with the block size alone as a bound, ptxas chose 80 and spilled to local memory.
constexpr int kMinBlocksPerMultiprocessor = 4;

static_assert(kTileP % kPixelsPerThread == 0,
              "a thread computes kPixelsPerThread rows of one column: they must divide kTileP");
static_assert(kTileK % kChannelsPerThread == 0,
              "a thread computes kChannelsPerThread output channels: they must divide kTileK");
static_assert(kThreads % 32 == 0 && kThreads <= 1024,
              "the block must be whole warps, at most 1024 threads");

// The shared-memory layout for a shape, the same for every block:
//   patch   [chunk][patch_h][patch_w]   x[n][c0 + c][h0 + i][w0 + j], 0 in the padding
//   weights [kTileK][weight_stride]      w[k0 + k][c0 .. c0 + chunk)[R][S], flattened
// weight_stride is chunk * R * S rounded up to an odd number, so the two channel groups of a
// warp, which read rows 8 apart, hit different banks (8 * odd is not a multiple of 32).
struct TiledConfig {
  int chunk = 0;  // input channels per step; 0: even one channel does not fit
  int patch_h = 0, patch_w = 0;
  int weight_stride = 0;
  std::size_t shared_bytes = 0;
};

inline TiledConfig tiled_config(const ConvShape& s) {
  TiledConfig config;
  // 64 bits: a huge dilation or stride must not wrap around into a small, wrong size.
  const std::int64_t patch_h =
      std::int64_t{kTileP - 1} * s.stride_h + std::int64_t{s.R - 1} * s.dilation_h + 1;
  const std::int64_t patch_w =
      std::int64_t{kTileQ - 1} * s.stride_w + std::int64_t{s.S - 1} * s.dilation_w + 1;
  const std::int64_t taps = std::int64_t{s.R} * s.S;
  for (int chunk = std::min(s.C, kMaxChannelChunk); chunk >= 1; --chunk) {
    const std::int64_t stride = (chunk * taps) | 1;
    const std::int64_t floats = chunk * patch_h * patch_w + kTileK * stride;
    if (floats * static_cast<std::int64_t>(sizeof(float)) <= kSharedBudgetBytes) {
      config.chunk = chunk;
      config.patch_h = static_cast<int>(patch_h);
      config.patch_w = static_cast<int>(patch_w);
      config.weight_stride = static_cast<int>(stride);
      config.shared_bytes = static_cast<std::size_t>(floats) * sizeof(float);
      return config;
    }
  }
  return config;  // chunk == 0
}

__global__ void __launch_bounds__(kThreads, kMinBlocksPerMultiprocessor)
    conv2d_direct_tiled_kernel(ConvShape s, TiledConfig config, const float* __restrict__ x,
                               const float* __restrict__ w, const float* __restrict__ bias,
                               float* __restrict__ y) {
  extern __shared__ float shared[];
  [[maybe_unused]] float* patch = shared;  // [chunk][patch_h][patch_w]
  [[maybe_unused]] float* weights =
      shared + config.chunk * config.patch_h * config.patch_w;  // [kTileK][weight_stride]
  const int patch_pixels = config.patch_h * config.patch_w;
  const int taps = s.R * s.S;

  // Which tile: blockIdx.x = ((n * tiles_k + tile_k) * tiles_p + tile_p) * tiles_q + tile_q,
  // so neighbouring blocks share the same filters and neighbouring input patches.
  const int P = s.P(), Q = s.Q();
  const int tiles_q = ceil_div(Q, kTileQ), tiles_p = ceil_div(P, kTileP);
  const int tiles_k = ceil_div(s.K, kTileK);
  int block = static_cast<int>(blockIdx.x);
  const int tile_q = block % tiles_q;
  block /= tiles_q;
  const int tile_p = block % tiles_p;
  block /= tiles_p;
  const int tile_k = block % tiles_k;
  const int n = block / tiles_k;
  const int p0 = tile_p * kTileP, q0 = tile_q * kTileQ, k0 = tile_k * kTileK;
  // The input position of patch element [0][0]: output (p0, q0) with tap (0, 0). It is
  // negative in the first tiles when there is padding.
  const int h0 = p0 * s.stride_h - s.pad_h;
  const int w0 = q0 * s.stride_w - s.pad_w;

  // This thread's outputs: pixels (p_local0 + i, q_local) for i < 4, channels k_local0 + j
  // for j < 8, all inside the block's tile. A warp holds 16 pixel groups of two channel
  // groups: its 16 different input values are conflict-free, its weights two broadcasts.
  const int tid = static_cast<int>(threadIdx.x);
  const int pixel_group = tid % kPixelGroups;
  const int channel_group = tid / kPixelGroups;
  const int q_local = pixel_group % kTileQ;
  const int p_local0 = (pixel_group / kTileQ) * kPixelsPerThread;
  const int k_local0 = channel_group * kChannelsPerThread;
  const int warp = tid / 32, lane = tid % 32;

  [[maybe_unused]] float acc[kChannelsPerThread][kPixelsPerThread] =
      {};  // the register tile, y before bias
           // ---- end of given ----

  for (int c0 = 0; c0 < s.C; c0 += config.chunk) {
    const int chunk = min(config.chunk, s.C - c0);  // the last step may hold fewer channels

    // The input patch of channels c0 .. c0 + chunk - 1, halo included. Consecutive threads
    // take consecutive elements of a patch row, i.e. consecutive columns of x: coalesced.
    // Where the patch lies outside the image (the padding) it holds 0, so the loop below
    // needs no checks, and x is never read out of bounds.
    for (int i = tid; i < chunk * patch_pixels; i += kThreads) {
      const int c = i / patch_pixels;
      const int rest = i - c * patch_pixels;
      const int row = rest / config.patch_w;
      const int col = rest - row * config.patch_w;
      const int h = h0 + row, wc = w0 + col;
      patch[i] = (h >= 0 && h < s.H && wc >= 0 && wc < s.W)
                     ? __ldg(x + conv_input_index(ConvLayout::nchw, s, n, c0 + c, h, wc))
                     : 0.0f;
    }

    // The weights of filters k0 .. k0 + 63 for these channels: for each filter the
    // chunk * R * S values w[k][c0 .. c0 + chunk)[*][*] are contiguous in memory. One warp
    // copies one filter's row at a time (32 consecutive floats per step: coalesced, and
    // consecutive shared-memory words: no conflicts). Filters past K are zeros.
    const int slice = chunk * taps;
    for (int k = warp; k < kTileK; k += kWarps) {
      const bool inside = k0 + k < s.K;
      const float* source =
          w + conv_weight_index(ConvLayout::nchw, s, inside ? k0 + k : 0, c0, 0, 0);
      for (int e = lane; e < slice; e += 32) {
        weights[k * config.weight_stride + e] = inside ? __ldg(source + e) : 0.0f;
      }
    }

    // Barrier 1: the patch and the weights are complete before anyone reads them.
    __syncthreads();

    // The register tile. For each (c, r, t): 8 weights (one per output channel of this
    // thread) and 4 input values (one per pixel) from shared memory, then their 32
    // products. Output pixel (p_local, q_local) with tap (r, t) reads patch row
    // p_local * stride_h + r * dilation_h and column q_local * stride_w + t * dilation_w.
    const float* my_weights = weights + k_local0 * config.weight_stride;
    for (int c = 0; c < chunk; ++c) {
      const float* patch_c = patch + c * patch_pixels;
      for (int r = 0; r < s.R; ++r) {
        for (int t = 0; t < s.S; ++t) {
          const int tap = (c * s.R + r) * s.S + t;
          float wv[kChannelsPerThread];
#pragma unroll
          for (int j = 0; j < kChannelsPerThread; ++j)
            wv[j] = my_weights[j * config.weight_stride + tap];
          const int col = q_local * s.stride_w + t * s.dilation_w;
          float xv[kPixelsPerThread];
#pragma unroll
          for (int i = 0; i < kPixelsPerThread; ++i) {
            const int row = (p_local0 + i) * s.stride_h + r * s.dilation_h;
            xv[i] = patch_c[row * config.patch_w + col];
          }
#pragma unroll
          for (int j = 0; j < kChannelsPerThread; ++j) {
#pragma unroll
            for (int i = 0; i < kPixelsPerThread; ++i) acc[j][i] = fmaf(wv[j], xv[i], acc[j][i]);
          }
        }
      }
    }

    // Barrier 2: everyone is done with this step's patch and weights before the next step
    // overwrites them.
    __syncthreads();
  }

  // Write the 32 outputs, plus the bias, where they exist: a tile at the right or bottom
  // edge of the image, or past the last filter, is partial.
#pragma unroll
  for (int j = 0; j < kChannelsPerThread; ++j) {
    const int k = k0 + k_local0 + j;
    if (k >= s.K) break;  // the channels only grow with j
    const float b = bias != nullptr ? __ldg(bias + k) : 0.0f;
    const int q = q0 + q_local;
#pragma unroll
    for (int i = 0; i < kPixelsPerThread; ++i) {
      const int p = p0 + p_local0 + i;
      if (p < P && q < Q) y[conv_output_index(ConvLayout::nchw, s, n, k, p, q)] = acc[j][i] + b;
    }
  }
}

}  // namespace direct_tiled

// ---- given: the same in the skeleton and the solution (./course check compares) ----
bool conv2d_direct_tiled_fits(const ConvShape& shape) {
  return direct_tiled::tiled_config(shape).chunk >= 1;
}

void conv2d_direct_tiled(const ConvShape& shape, const float* x, const float* w, const float* bias,
                         float* y, cudaStream_t stream) {
  using namespace direct_tiled;
  constexpr const char* function = "conv2d_direct_tiled";
  require_conv_arguments(function, shape);
  require_conv_pointers(function, shape, x, w, y);
  if (shape.N == 0) return;  // nothing to compute, and a grid of zero blocks is an error

  const TiledConfig config = tiled_config(shape);
  if (config.chunk == 0) {
    // Even one channel of the patch and of the weights needs more than 48 KiB (a filter
    // larger than 13 x 13, or a dilation in the tens): such layers are rare, and part 1
    // computes them correctly, so the tiled launcher hands them over.
    conv2d_direct_naive(shape, x, w, bias, y, stream);
    return;
  }
  // One block per (image, 64 filters, 8 x 8 pixels), all in x: that is at most one block
  // per output element, N * K * P * Q < 2^31, within x's limit of 2^31 - 1 blocks.
  const std::int64_t blocks = std::int64_t{shape.N} * ceil_div(shape.K, kTileK) *
                              ceil_div(shape.P(), kTileP) * ceil_div(shape.Q(), kTileQ);
  require(blocks <= kMaxGridBlocksX, function,
          std::to_string(blocks) + " blocks do not fit in a grid (" + to_string(shape) + ")");
  conv2d_direct_tiled_kernel<<<static_cast<unsigned int>(blocks), kThreads, config.shared_bytes,
                               stream>>>(shape, config, x, w, bias, y);
  CUDA_CHECK_LAUNCH();
}

}  // namespace course::COURSE_IMPL
// ---- end of given ----
