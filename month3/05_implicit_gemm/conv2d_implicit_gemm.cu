// Exercise m3.05: convolution as an implicit GEMM on the tensor cores.
//
// Fill in TODO(m3.05a) to TODO(m3.05c) (part 1) and TODO(m3.05d) (part 2), then run
// `./course grade m3_05`. The IndexMath tests check each TODO on the CPU; the kernel tests
// check the convolutions on the GPU. README.md explains the mapping; hints.md has hints.
//
// What changes from m3.04 (im2col + a GEMM), and why it is faster:
//  * No X_col. m3.04 wrote the R S / stride^2 times larger X_col to DRAM and read it back for
//    the GEMM. Here the GEMM's A tiles are gathered from x straight into shared memory, each
//    tile when the main loop needs it: x is read (mostly from L2: neighbouring windows
//    overlap), never X_col.
//  * The tensor cores. m2.07's part-3 main loop (implicit_gemm_pipeline.h): float16 or
//    bfloat16 inputs, float32 accumulation, 128 x 128, 128 x 64 or 64 x 64 tiles, 2 or 4
//    stages of cp.async, swizzled shared memory, ldmatrix and mma.sync. m3.04 ran in true
//    float32 on the CUDA cores.
//  * NHWC. The 8 channels c .. c + 7 of one input pixel are 16 contiguous bytes, and so are
//    8 consecutive GEMM k (g = (r S + s) C + c) when C % 8 == 0: one 16-byte cp.async per 8
//    elements of A, like a row-major matrix. In NCHW those 8 elements are H W apart.
// Part 1 computes every index of every copy in place (CUTLASS's "analytic" iterator); part 2
// decodes each GEMM row once per block with fast division and walks the filter taps from
// tile to tile without dividing (CUTLASS's "optimized" iterator). Part 3 is given: on a
// Hopper, the launchers run part 2's loader on wgmma instead of mma.sync
// (implicit_gemm_wgmma.h). README.md shows what each step bought on the reference GPU.
//
// The loaders that call your functions, the choice of tile and main loop, and the launchers
// are given, in month3/05_implicit_gemm/conv2d_implicit_gemm_given.cuh.
#include "conv2d_implicit_gemm_given.cuh"
#include "course/conv.h"
#include "course/fast_divmod.h"
#include "implicit_gemm.h"

namespace course::COURSE_IMPL {  // see course/impl.h
namespace {

// From conv2d_implicit_gemm_given.cuh (and implicit_gemm_pipeline.h): a ConvProblem holds
// the ConvShape `shape` (N, H, W, C; K, R, S; stride, padding, dilation), the output size
// P x Q, the GEMM's M = N P Q rows, N = K columns and gemm_k = R S C depth, and the fast
// divisions by_pq and by_q. The results of your functions:
//   struct OutputPixel { int n, p, q; };    the output pixel of a GEMM row
//   struct FilterTap { int r, s, c; };      the filter tap of a GEMM column
//   struct RowStart { int offset, h, w; };  part 2: where row m's window starts in x
//   struct FilterWalk { int g, r, s, c; };  part 2: a thread's column g and its tap
// Rows past the GEMM (m >= M) start at h = w = kOutsideRow, where every check fails.

// ---------------------------------------------------------------------------------------
// Part 1: the indices, computed in place.
// ---------------------------------------------------------------------------------------

// GEMM row m = (n P + p) Q + q: one output pixel, in y's NHWC order.
__host__ __device__ __forceinline__ OutputPixel gemm_row_to_pixel(int m, int P, int Q) {
  // TODO(m3.05a): undo m = (n P + p) Q + q into the image n and the output pixel (p, q).
  //   Example: P = 4, Q = 5 (20 pixels per image): m = 47 is image 2, pixel 7 = (1, 2).
  (void)m, (void)P, (void)Q;
  return {0, 0, 0};
}

// GEMM column g = (r S + s) C + c: KRSC's order, channels fastest, so 8 consecutive g are 8
// channels of one tap when C % 8 == 0.
__host__ __device__ __forceinline__ FilterTap gemm_k_to_tap(int g, int C, int S) {
  // TODO(m3.05b): undo g = (r S + s) C + c. Example: C = 16, S = 3: g = 100 is c = 4 of
  // rs = 6, i.e. (r, s) = (2, 0).
  (void)g, (void)C, (void)S;
  return {0, 0, 0};
}

// The input row (or column) that output row p reads through filter row r: the window starts
// at p * stride - pad (negative in the top padding) and filter row r sits r * dilation below.
// Cross-correlation, as PyTorch: no flip of the filter.
__host__ __device__ __forceinline__ int input_position(int p, int r, int stride, int pad,
                                                       int dilation) {
  // TODO(m3.05b): the input row output row p reads through filter row r (stride, padding,
  // dilation; m3.03's formula). Example: stride 2, pad 3, dilation 1: p = 0, r = 1 reads
  // row -2, padding.
  (void)p, (void)r, (void)stride, (void)pad, (void)dilation;
  return 0;
}

// Whether A[m][g] reads x: a real row and column of the GEMM (the last tiles stick out), and
// an input position inside the image (outside it is the zero padding).
__host__ __device__ __forceinline__ bool reads_input(const ConvProblem& problem, int m, int g,
                                                     int h, int w) {
  // TODO(m3.05c): true when A[m][g] reads x at (h, w). The last tiles stick out of the GEMM
  // (problem.M rows, problem.gemm_k columns), and (h, w) may be in the padding around the
  // problem.shape.H x problem.shape.W image: those elements are zeros, and x must not be
  // read for them (there may be nothing there).
  (void)problem, (void)m, (void)g, (void)h, (void)w;
  return false;
}

// ---------------------------------------------------------------------------------------
// Part 2: decode once, then walk.
// ---------------------------------------------------------------------------------------

// Row m's window, once per block: fast division (course/fast_divmod.h: a multiply-high, an
// add and a shift) undoes m = (n P + p) Q + q; the window starts at (h, w) = (p stride_h -
// pad_h, q stride_w - pad_w) of image n, at offset ((n H + h) W + w) C of x.
__host__ __device__ __forceinline__ RowStart row_start(const ConvProblem& problem, int m) {
  // TODO(m3.05d): row m's start, once per block. Rows m >= problem.M get
  // {0, kOutsideRow, kOutsideRow}. Otherwise decode m with problem.by_pq and problem.by_q
  // (FastDivmod::divmod: no division instruction), and return the window's top-left input
  // position (h, w) = (p stride_h - pad_h, q stride_w - pad_w) and its NHWC offset
  // ((n H + h) W + w) C (it may point into the padding; only checked taps are read).
  (void)problem, (void)m;
  return {0, kOutsideRow, kOutsideRow};
}

// g += step without a division: the channel moves on by step; each time it passes C, the tap
// moves one column s to the right, and past S, to the next filter row r. The loop runs
// step / C times or once more (at most once per tile when C >= step, the tile depth).
__host__ __device__ __forceinline__ void filter_walk_advance(FilterWalk& walk,
                                                             const ConvProblem& problem, int step) {
  // TODO(m3.05d): move the walk from g to g + step and keep (r, s, c) the tap of g, with no
  // division: c grows by step; while c >= C, take C off and move s on (and past S - 1, back
  // to 0 and r on). Example: C = 64, S = 3, step 32: (r, s, c) = (0, 2, 32) becomes (1, 0, 0).
  (void)walk, (void)problem, (void)step;
}

// Whether the element of row `row` at the walk's tap reads x, and where: the tap moves the
// window's start by r dilation_h rows and s dilation_w columns, i.e. by
// (r dilation_h W + s dilation_w) C + c elements of x, the same delta for every row.
// The unsigned compare tests 0 <= h < H in one go (a negative h is a huge unsigned).
__host__ __device__ __forceinline__ bool tap_offset(const RowStart& row, const FilterWalk& walk,
                                                    const ConvProblem& problem, int& offset) {
  // TODO(m3.05d): the tap (r, s, c) reads input (row.h + r dilation_h, row.w + s dilation_w)
  // at offset row.offset + (r dilation_h W + s dilation_w) C + c. Set `offset`, and return
  // whether it may be read: walk.g < problem.gemm_k and the position inside the image.
  (void)row, (void)walk, (void)problem;
  offset = 0;
  return false;
}

}  // namespace
}  // namespace course::COURSE_IMPL
