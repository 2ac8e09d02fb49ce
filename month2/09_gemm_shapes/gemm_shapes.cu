// Exercise m2.09: GEMMs that stay fast off the square. (Skeleton: the TODOs are yours.)
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

// task m2.09a: the k-tiles [begin, end) that split `split` (0 .. splits - 1) runs, out of
// k_tiles. The ranges of splits 0, 1, 2, ... must follow each other without gap or overlap,
// cover [0, k_tiles), and differ in length by at most one tile (so that no split waits for
// a longer one). With more splits than k-tiles some ranges are empty. Example: 10 k-tiles
// in 4 splits are [0, 2), [2, 5), [5, 7), [7, 10). Compute s * k_tiles in 64 bits: it can
// pass INT_MAX.
__host__ __device__ gemm_shapes::KTileRange split_k_tiles(int split, int splits, int k_tiles) {
  (void)split;
  (void)splits;
  (void)k_tiles;
  return {0, 0};
}

namespace {

// task m2.09b: C = alpha * (partial 0 + partial 1 + ... + partial splits-1) + beta * C.
// Partial s of element i (= row * N + column) is workspace[s * M * N + i]. Add the partials
// in split order (0, 1, 2, ...) in one float32 running sum per element, so that every run
// adds the same numbers in the same order: bitwise the same C. Use a grid-stride loop over
// the M * N elements (the launcher starts at most 65536 blocks of 256 threads); count in
// std::size_t; do not read C when beta == 0 (it may hold NaN).
__global__ void reduce_splits_kernel(int M, int N, int splits, const float* __restrict__ workspace,
                                     float alpha, float beta, float* __restrict__ C) {
  (void)M;
  (void)N;
  (void)splits;
  (void)workspace;
  (void)alpha;
  (void)beta;
  (void)C;
}

}  // namespace

// ---- given: the same in the skeleton and the solution (./course check compares) ----
// The launchers that run your kernels, and the entry points that ask your chooser:
#include "gemm_shapes_given.cuh"  // here, after your kernels, which it calls

}  // namespace course::COURSE_IMPL
// ---- end of given ----
