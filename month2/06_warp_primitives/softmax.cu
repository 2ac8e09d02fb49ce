// Exercise m2.06, part 2: a row softmax, one warp per row, with warp shuffles.
//
// y[r][c] = exp(x[r][c] - m) / sum_j exp(x[r][j] - m), with m the largest x of the row:
// subtracting m changes nothing mathematically and keeps exp() from overflowing (exp(89)
// is already infinite in float32). A row needs two reductions, a max and a sum, and here a
// row belongs to one warp, so both are warp reductions: the 32 lanes combine their values
// with __shfl_xor_sync, no shared memory, no __syncthreads.
//
// Two kernels, chosen by the row length:
//  * softmax_rows_in_registers, for rows of up to 4096 floats: the warp loads its row once
//    into registers (each lane a fixed number of values, a compile-time constant), takes
//    the max, then exp and the sum, then writes. x is read once and y written once: the
//    least a softmax can move.
//  * softmax_rows_online, for longer rows: the row does not fit in registers, so each lane
//    walks its part of the row keeping a running max and a running sum of exp(v - max),
//    rescaling the sum whenever the max grows (the "online softmax"); then the warp
//    combines the 32 (max, sum) pairs and walks the row again to write. x is read twice,
//    and with thousands of long rows in flight the second read mostly misses the L2 cache.
//
// The loads, the loops and the launch are given: the loops in the kernels below, the
// row units and the launchers in month2/06_warp_primitives/softmax_given.cuh. Fill in
// TODO(m2.06c) (the warp all-reductions), TODO(m2.06d) (the row in registers) and
// TODO(m2.06e) (the online softmax), then run `./course grade m2_06`.
#include <cmath>
#include <cstdint>

#include "softmax_given.cuh"
#include "warp_primitives.h"

namespace course::COURSE_IMPL {  // see course/impl.h
namespace {

// From softmax_given.cuh: a block has kThreads = 256 threads, kWarpsPerBlock = 8 warps, one
// row a warp at a time. RowUnit<kWidth> is kWidth floats of a row (kWidth = 4, a float4,
// when every row is 16-byte aligned, else 1): RowUnit<kWidth>::load(row, u) reads unit u
// (floats u * kWidth ..) into .v[0 .. kWidth), .store(row, u) writes it back.
constexpr unsigned kFullMask = 0xffffffffu;  // all 32 lanes take part in a shuffle

// The max of `value` over the 32 lanes, in every lane. __shfl_xor_sync(mask, v, d) returns
// the v of lane (lane XOR d): with d = 16, 8, 4, 2, 1 every lane meets every other lane's
// value through a "butterfly", so all 32 end with the result; __shfl_down_sync would leave
// it in lane 0 only, and every lane of the row needs it.
__device__ __forceinline__ float warp_all_reduce_max(float value) {
  // TODO(m2.06c), part 1: for offset = 16, 8, 4, 2, 1:
  //   value = fmaxf(value, __shfl_xor_sync(kFullMask, value, offset));
  (void)kFullMask;
  return value;
}

// The sum of `value` over the 32 lanes, in every lane.
__device__ __forceinline__ float warp_all_reduce_sum(float value) {
  // TODO(m2.06c), part 2: the same butterfly, adding instead of taking the max.
  return value;
}

// --- Rows that fit in registers -----------------------------------------------------------
// Lane l holds units l, l + 32, l + 64, ... of its row: kUnitsPerLane of them, so a warp
// holds rows of up to 32 * kUnitsPerLane * kWidth floats. At every step the 32 lanes touch
// 32 neighbouring units: coalesced loads and stores. Units past the end of the row hold
// -inf, which adds nothing to the max and exp(-inf) = 0 to the sum.
template <int kUnitsPerLane, int kWidth>
__global__ void __launch_bounds__(kThreads)
    softmax_rows_in_registers(const float* __restrict__ x, float* __restrict__ y, std::int64_t rows,
                              std::int64_t cols) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  // 32-bit unit indices: a row here has at most 4096 floats, and 64-bit ones would cost
  // registers that the row needs. (kWidth divides cols: the launcher checks.)
  const int units = static_cast<int>(cols / kWidth);
  const std::int64_t first_row =
      static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const std::int64_t warps_in_grid = static_cast<std::int64_t>(gridDim.x) * kWarpsPerBlock;

  // A grid-stride loop over rows, one warp per row. The whole warp takes the same rows, so
  // the shuffles always find all 32 lanes, as the full mask promises.
  for (std::int64_t row = first_row; row < rows; row += warps_in_grid) {
    const float* in = x + row * cols;
    float* out = y + row * cols;

    // 1. Load the row (all loads issued before any is used) and take this lane's max.
    RowUnit<kWidth> held[kUnitsPerLane];
    float lane_max = -INFINITY;
#pragma unroll
    for (int k = 0; k < kUnitsPerLane; ++k) {
      const int unit = lane + 32 * k;
      if (unit < units) {
        held[k] = RowUnit<kWidth>::load(in, unit);
      } else {
#pragma unroll
        for (int i = 0; i < kWidth; ++i) held[k].v[i] = -INFINITY;
      }
#pragma unroll
      for (int i = 0; i < kWidth; ++i) lane_max = fmaxf(lane_max, held[k].v[i]);
    }
    // TODO(m2.06d): steps 2 and 3.
    //  2. row_max: the max of lane_max over the warp (warp_all_reduce_max).
    //  3. Replace every held value v (held[k].v[i], k < kUnitsPerLane, i < kWidth, both
    //     loops with #pragma unroll so `held` stays in registers) by expf(v - row_max), and
    //     add them up into lane_sum; then inverse_sum = 1 / (the warp's sum of lane_sum,
    //     warp_all_reduce_sum). (The -inf padding becomes expf(-inf) = 0.)
    (void)warp_all_reduce_max, (void)warp_all_reduce_sum;
    const float inverse_sum = 1.0f;
    // 4. Scale and write.
#pragma unroll
    for (int k = 0; k < kUnitsPerLane; ++k) {
      const int unit = lane + 32 * k;
      if (unit < units) {
#pragma unroll
        for (int i = 0; i < kWidth; ++i) held[k].v[i] *= inverse_sum;
        held[k].store(out, unit);
      }
    }
  }
}

// --- Longer rows: the online softmax --------------------------------------------------------
// One lane's running state over the values it has seen: their max, and the sum of
// exp(v - max) over them. Adding values that raise the max rescales the sum so far by
// exp(old max - new max): exp(v - old) * exp(old - new) = exp(v - new).
struct RunningSoftmax {
  float max = -INFINITY;
  float sum = 0.0f;

  // Adds `count` values at once (the floats of one unit): one rescale for the group.
  __device__ __forceinline__ void add(const float* values, int count) {
    // TODO(m2.06e), part 1: fold values[0 .. count) into (max, sum).
    //  1. new_max = the largest of max and the values (fmaxf).
    //  2. If new_max is still -INFINITY (only -inf seen so far), return: there is nothing
    //     to add, and exp(-inf - -inf) would be NaN.
    //  3. sum = sum * expf(max - new_max) + (expf(values[i] - new_max) for every i); then
    //     max = new_max. (The first time, max is -inf and expf(-inf) = 0.)
    (void)values, (void)count;
  }
};

template <int kWidth>
__global__ void __launch_bounds__(kThreads)
    softmax_rows_online(const float* __restrict__ x, float* __restrict__ y, std::int64_t rows,
                        std::int64_t cols) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t units = cols / kWidth;
  const std::int64_t first_row =
      static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const std::int64_t warps_in_grid = static_cast<std::int64_t>(gridDim.x) * kWarpsPerBlock;

  for (std::int64_t row = first_row; row < rows; row += warps_in_grid) {
    const float* in = x + row * cols;
    float* out = y + row * cols;

    // Pass 1: this lane's running max and sum over its units of the row.
    RunningSoftmax mine;
#pragma unroll 4
    for (std::int64_t unit = lane; unit < units; unit += 32) {
      const RowUnit<kWidth> u = RowUnit<kWidth>::load(in, unit);
      mine.add(u.v, kWidth);
    }
    // The warp combines its 32 (max, sum) pairs: the row's max, then each lane's sum
    // brought to that max, added up. A lane that saw only -inf (or nothing) adds 0.
    // TODO(m2.06e), part 2: row_max, the warp's max of mine.max; row_sum, the warp's sum of
    // each lane's mine.sum brought to row_max: mine.sum * expf(mine.max - row_max), where
    // a lane with mine.max == -INFINITY adds 0.
    const float row_max = mine.max;
    const float row_sum = mine.sum;
    const float inverse_sum = 1.0f / row_sum;

    // Pass 2: read the row again and write exp(v - max) / sum.
#pragma unroll 4
    for (std::int64_t unit = lane; unit < units; unit += 32) {
      RowUnit<kWidth> u = RowUnit<kWidth>::load(in, unit);
#pragma unroll
      for (int i = 0; i < kWidth; ++i) u.v[i] = expf(u.v[i] - row_max) * inverse_sum;
      u.store(out, unit);
    }
  }
}

}  // namespace
}  // namespace course::COURSE_IMPL
