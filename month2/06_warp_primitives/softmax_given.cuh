// Given code for exercise m2.06, part 2 (softmax.cu): the block shape, how a row is read and
// written (RowUnit), and the launchers, which pick a kernel for the row length. Your skeleton
// and the reference both include it; the kernels you write are in softmax.cu.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "course/cuda_check.h"
#include "course/launch.h"
#include "warp_primitives.h"

namespace course::COURSE_IMPL {  // see course/impl.h
namespace {

constexpr int kThreads = 256;  // 8 warps: 8 rows at a time per block
constexpr int kWarpsPerBlock = kThreads / 32;

// A row is read and written in units of kWidth floats: 4 (a float4) when every row starts
// on a 16-byte boundary, else 1. Unit u of a row is floats [u * kWidth, u * kWidth + kWidth).
template <int kWidth>
struct RowUnit {
  float v[kWidth];

  __device__ static RowUnit load(const float* row, std::int64_t unit) {
    RowUnit u;
    if constexpr (kWidth == 4) {
      const float4 f = __ldg(reinterpret_cast<const float4*>(row) + unit);
      u.v[0] = f.x, u.v[1] = f.y, u.v[2] = f.z, u.v[3] = f.w;
    } else {
      u.v[0] = __ldg(row + unit);
    }
    return u;
  }
  __device__ void store(float* row, std::int64_t unit) const {
    if constexpr (kWidth == 4) {
      reinterpret_cast<float4*>(row)[unit] = make_float4(v[0], v[1], v[2], v[3]);
    } else {
      row[unit] = v[0];
    }
  }
};

// The kernels you write in softmax.cu, declared here for the launchers below.
template <int kUnitsPerLane, int kWidth>
__global__ void __launch_bounds__(kThreads)
    softmax_rows_in_registers(const float* __restrict__ x, float* __restrict__ y, std::int64_t rows,
                              std::int64_t cols);
template <int kWidth>
__global__ void __launch_bounds__(kThreads)
    softmax_rows_online(const float* __restrict__ x, float* __restrict__ y, std::int64_t rows,
                        std::int64_t cols);

// Enough blocks to fill the GPU once (the grid-stride loops hand out the remaining rows),
// or fewer when there are few rows.
template <typename Kernel>
void launch_rows(Kernel kernel, const float* x, float* y, std::int64_t rows, std::int64_t cols,
                 cudaStream_t stream) {
  const std::int64_t needed = ceil_div<std::int64_t>(rows, kWarpsPerBlock);
  const int blocks = static_cast<int>(
      std::min<std::int64_t>(needed, resident_blocks_to_fill_gpu(kernel, kThreads)));
  kernel<<<blocks, kThreads, 0, stream>>>(x, y, rows, cols);
  CUDA_CHECK_LAUNCH();
}

// The most floats of a row one lane holds in registers: 128, rows of up to 4096 floats. That
// takes about 250 of the 255 registers a thread can have; one more step and the compiler
// would spill the row to local memory.
constexpr int kMaxFloatsPerLane = 128;

// The register kernel with the fewest units per lane that hold the row (kUnitsPerLane
// doubles from the first call: a warp that held more would spend registers and loads on
// -inf padding); the online kernel for longer rows.
template <int kWidth, int kUnitsPerLane>
void launch_softmax(const float* x, float* y, std::int64_t rows, std::int64_t cols,
                    cudaStream_t stream) {
  if constexpr (kUnitsPerLane * kWidth > kMaxFloatsPerLane) {
    launch_rows(softmax_rows_online<kWidth>, x, y, rows, cols, stream);
  } else {
    const std::int64_t units_per_lane = ceil_div<std::int64_t>(cols / kWidth, 32);
    if (units_per_lane <= kUnitsPerLane) {
      launch_rows(softmax_rows_in_registers<kUnitsPerLane, kWidth>, x, y, rows, cols, stream);
    } else {
      launch_softmax<kWidth, 2 * kUnitsPerLane>(x, y, rows, cols, stream);
    }
  }
}

}  // namespace

void softmax_rows(const float* x, float* y, std::int64_t rows, std::int64_t cols,
                  cudaStream_t stream) {
  const char* function = "softmax_rows";
  require(rows >= 0 && cols >= 0, function,
          "rows and cols must be >= 0, got " + std::to_string(rows) + " x " + std::to_string(cols));
  if (rows == 0 || cols == 0) return;  // nothing to write
  require(x != nullptr && y != nullptr, function, "x and y must be device pointers, got null");
  // float4 units need every row to start on a 16-byte boundary: cols % 4 == 0 and aligned
  // x and y. Otherwise single floats.
  if (cols % 4 == 0 && is_aligned(x, 16) && is_aligned(y, 16)) {
    launch_softmax<4, 1>(x, y, rows, cols, stream);  // rows of up to 128, 256, ... 4096 floats
  } else {
    launch_softmax<1, 4>(x, y, rows, cols, stream);
  }
}

}  // namespace course::COURSE_IMPL
