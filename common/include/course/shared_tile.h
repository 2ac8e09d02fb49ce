// How a tile staged in shared memory is laid out, for the tensor-core kernels that copy tiles
// with cp.async and read them with ldmatrix (m2.07's GEMM, m3.05's implicit-GEMM convolution).
#pragma once

#include <cuda_runtime.h>

#include "course/mma_sync.h"

namespace course {

// Rows as they are, rows padded by one 16-byte chunk (m2.04's fix), or rows whose chunks are
// swizzled (course/mma_sync.h, swizzled_chunk).
enum class SharedLayout { plain, padded, swizzled };

// Offset, in 16-bit elements, of element (row, column) of a shared tile with kRowHalves
// elements per logical row and leading dimension kLd, in the layout the tile uses.
template <SharedLayout kLayout, int kRowHalves, int kLd>
__device__ __forceinline__ int tile_offset(int row, int column) {
  if constexpr (kLayout == SharedLayout::swizzled) {
    return row * kLd + swizzled_chunk<kRowHalves / 8>(row, column / 8) * 8 + column % 8;
  } else {
    return row * kLd + column;
  }
}

}  // namespace course
