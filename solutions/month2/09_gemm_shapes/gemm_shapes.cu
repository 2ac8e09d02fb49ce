// Exercise m2.09: GEMMs that stay fast off the square. (Reference solution.)
//
// What changes from m2.05 and m2.07, and why it is faster off the square: their kernels give
// each block one tile of C and all of K. A 16 x 4096 C is 32 tiles of 128 x 128 for 132
// multiprocessors, a 1024 x 1024 C 64: most of the GPU waits while a few blocks walk a long K.
//  * Split-K: the grid's z dimension cuts K into `splits` ranges of k-tiles
//    (split_k_tiles, task m2.09a), so tiles x splits blocks share the work. Each split
//    writes its partial C, in float32, to a workspace [splits][M][N]; a second kernel adds
//    the partials (task m2.09b).
//  * Determinism: the reduction adds split 0, then 1, then 2, ... for every element, in one
//    thread, and no two blocks ever write the same address: no atomics, so the order of the
//    float32 additions, and so every bit of C, is the same on every run.
//  * A skinny 32 x 128 block tile for M <= 64: a block multiplies 32 rows of A, not 128, so
//    far fewer rows of zeros (16 instead of 112 at M = 16).
//  * Odd sizes on the float16 path: A and B copied into zero-padded, aligned matrices in the
//    workspace, then the aligned kernel (or, without room, predicated loads, mma_split_k.h),
//    instead of m2.07's one-half-at-a-time fallback.
//  * On a Hopper (H100, H200), float16 runs a wide 128 x 256 tile on m2.08's wgmma + TMA
//    main loop (wgmma_split_k.h), split the same way: mma.sync cannot feed Hopper's tensor
//    cores at their rate.
//  * The chooser (shape_chooser.cu, task m2.09c) picks the tile and the number of splits
//    from the count of output tiles against the count of multiprocessors.
// The kernels are in the given headers sgemm_split_k.h, mma_split_k.h and wgmma_split_k.h;
// README.md explains.
#include "gemm_shapes.h"

// ---- given: the same in the skeleton and the solution (./course check compares) ----
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "course/cuda_check.h"
#include "course/device_buffer.h"
#include "course/gemm.h"
#include "course/launch.h"
#include "course/requirements.h"

#include "mma_split_k.h"    // the float16 kernel (m2.07's main loop on a range of K)
#include "sgemm_split_k.h"  // the float32 kernel (m2.05's main loop on a range of K)
#include "wgmma_split_k.h"  // the float16 kernel on a Hopper (m2.08's main loop, a range of K)

namespace course::COURSE_IMPL {  // see course/impl.h
// ---- end of given ----

// The k-tiles [begin, end) that split `split` (0 .. splits - 1) runs, out of k_tiles. The
// ranges of splits 0, 1, 2, ... follow each other without gap or overlap, cover
// [0, k_tiles), and differ in length by at most one tile: split s starts at
// floor(s * k_tiles / splits). With more splits than k-tiles some ranges are empty (their
// split writes a partial C of zeros). 64-bit product: s * k_tiles can pass INT_MAX.
__host__ __device__ gemm_shapes::KTileRange split_k_tiles(int split, int splits, int k_tiles) {
  const long long begin = static_cast<long long>(split) * k_tiles / splits;
  const long long end = static_cast<long long>(split + 1) * k_tiles / splits;
  return {static_cast<int>(begin), static_cast<int>(end)};
}

namespace {

// C = alpha * (partial 0 + partial 1 + ... + partial splits-1) + beta * C, one element per
// thread step (a grid-stride loop over the M * N elements). The partials are added in split
// order, each to the running sum, in float32: the same additions in the same order on every
// run, whatever order the blocks of the first kernel ran in. C is not read when beta == 0.
// Consecutive threads take consecutive elements, so every load of a split's slice coalesces.
__global__ void reduce_splits_kernel(int M, int N, int splits, const float* __restrict__ workspace,
                                     float alpha, float beta, float* __restrict__ C) {
  const std::size_t count = static_cast<std::size_t>(M) * N;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    float sum = 0.0f;
    for (int s = 0; s < splits; ++s) sum += workspace[static_cast<std::size_t>(s) * count + i];
    C[i] = beta == 0.0f ? alpha * sum : alpha * sum + beta * C[i];
  }
}

}  // namespace

// ---- given: the same in the skeleton and the solution (./course check compares) ----
// The launchers that run your kernels, and the entry points that ask your chooser:
#include "gemm_shapes_given.cuh"  // here, after your kernels, which it calls

}  // namespace course::COURSE_IMPL
// ---- end of given ----
