// Exercise m3.03, part 2: direct convolution from shared-memory tiles, several outputs per
// thread.
//
// What changes from part 1 (one thread per output): a block of 128 threads computes a tile
// of outputs, an 8 x 8 patch of output pixels of one image for 64 output channels (4096
// outputs), in steps of `chunk` input channels (up to 8). In each step the block copies into
// shared memory
//   - the input patch those 8 x 8 outputs read, with its halo: for stride u, dilation d and
//     an R-row filter, (8 - 1) * u + (R - 1) * d + 1 rows (10 for 3 x 3, stride 1), and
//     columns alike, zero where the patch lies in the padding; and
//   - the slice of the weights for the block's 64 filters and these channels,
// waits (__syncthreads), and then every thread accumulates 8 output channels x 4 output
// pixels = 32 outputs in registers.
//
// Why it should be faster: every input value of the patch is loaded from global memory once
// per block and then used by 64 filters and up to R * S taps; every weight once per block
// and used by 64 pixels; and a thread turns 12 shared-memory loads into 32 multiply-adds.
// README.md ("The tiled kernel") draws the tile.
//
// The tile shapes, the shared-memory layout, the block's position and each thread's outputs
// are given. Fill in TODO(m3.03d), (e), (f) and (g), then run `./course grade m3_03`.
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

  // Silences "declared but never referenced" until the TODOs use these.
  (void)patch_pixels, (void)taps, (void)h0, (void)w0;
  (void)q_local, (void)p_local0, (void)k_local0, (void)warp, (void)lane;
  (void)x, (void)w, (void)bias, (void)y, (void)n, (void)k0;

  for (int c0 = 0; c0 < s.C; c0 += config.chunk) {
    const int chunk = min(config.chunk, s.C - c0);  // the last step may hold fewer channels
    (void)chunk;

    // TODO(m3.03d): copy the input patch of channels c0 .. c0 + chunk - 1 into `patch`,
    // halo included: element i = (c * patch_h + row) * patch_w + col, for i = tid, tid +
    // kThreads, ... below chunk * patch_pixels, holds x[n][c0 + c][h0 + row][w0 + col]
    // (conv_input_index(ConvLayout::nchw, s, ...), read with __ldg), or 0.0f where that
    // position lies outside the image (the padding: h0 + row < 0 or >= H, and the same for
    // the columns). Never read x outside the image. Example: 3 x 3, stride 1, pad 1: the
    // first tile has h0 = w0 = -1, so its patch row 0 and column 0 are zeros.

    // TODO(m3.03e): copy the weights of filters k0 .. k0 + kTileK - 1 for these channels:
    // weights[k * config.weight_stride + e] = w[k0 + k][c0 ..][*][*] flattened, for e below
    // chunk * taps. For one filter those values are contiguous in memory, starting at
    // w + conv_weight_index(ConvLayout::nchw, s, k0 + k, c0, 0, 0): let warp `warp` take
    // filters k = warp, warp + kWarps, ... and its lanes e = lane, lane + 32, ... (coalesced).
    // Store 0.0f for filters past the last one (k0 + k >= K), without reading w there.

    // Barrier 1: the patch and the weights are complete before anyone reads them.
    __syncthreads();

    // TODO(m3.03f): the register tile. For c < chunk, r < R, t < S, with tap = (c * R + r) *
    // S + t: read the 8 weights wv[j] = weights[(k_local0 + j) * config.weight_stride + tap]
    // and the 4 input values xv[i] = patch[c][(p_local0 + i) * stride_h + r * dilation_h]
    //                                      [q_local * stride_w + t * dilation_w]
    // into registers, then acc[j][i] += wv[j] * xv[i] for all j < 8, i < 4 (fmaf, loops
    // with #pragma unroll so acc stays in registers).

    // Barrier 2: everyone is done with this step's patch and weights before the next step
    // overwrites them.
    __syncthreads();
  }

  // TODO(m3.03g): write the thread's outputs: for j < 8 and i < 4,
  //   y[n][k0 + k_local0 + j][p0 + p_local0 + i][q0 + q_local] = acc[j][i] + bias[k]
  // (no bias term when bias is null), only where the output exists: k < K, p < P, q < Q (the
  // tiles at the bottom and right edges and past the last filter are partial). Use
  // conv_output_index(ConvLayout::nchw, s, n, k, p, q).
  (void)p0, (void)q0;
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
