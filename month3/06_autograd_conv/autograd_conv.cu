// Exercise m3.06: an autograd-capable convolution, the CUDA half.
//
// One kernel here is yours (task m3.06c): grad_bias_kernel, the first pass of db = the sum
// of dy over the images and pixels of each output channel. Everything else of the CUDA half
// is given, in autograd_conv_given.cuh: the forward table (m3.05's tensor cores, m3.04's
// im2col + GEMM, m3.03), the gradient paths that call your tasks m3.06a and m3.06b
// (conv_backward.h), the launchers, and the operators' registration.
//
// Fill in the TODO below (and those of conv_backward.h), then run `./course grade m3_06` on
// a machine with a GPU.
#include "autograd_conv_given.cuh"  // block_reduce_sum, kReduceThreads, the launcher

namespace course {
namespace {

// db[k] = sum over n, p, q of dy[n][k][p][q], in two passes: this kernel runs on a grid of
// K x parts blocks of kReduceThreads threads, block (k, part) = (blockIdx.x, blockIdx.y) adds
// part `part` of channel k's N * P * Q values into partials[part * K + k], and the given
// launcher then adds each channel's parts in a fixed order. dy is [N][K][pixels], pixels = P * Q.
template <typename T>
__global__ void __launch_bounds__(kReduceThreads)
    grad_bias_kernel(const T* __restrict__ dy, T* __restrict__ partials, int N, int K,
                     std::int64_t pixels) {
  // TODO(m3.06c): k = blockIdx.x, part = blockIdx.y, parts = gridDim.y. Each thread
  // j = threadIdx.x adds the elements i = part * kReduceThreads + j, then i + parts *
  // kReduceThreads, ... (i < N * pixels) of the channel, element i being
  // dy[(n * K + k) * pixels + p] with n = i / pixels, p = i % pixels (consecutive threads then
  // read consecutive addresses). Then every thread calls block_reduce_sum(its sum)
  // (autograd_conv_given.cuh: m2.06's warp shuffles, then the 8 warps' sums), and thread 0 writes
  // partials[part * K + k]. No atomics: the order of the additions is fixed, so two runs give
  // the same bits.
  (void)dy, (void)partials, (void)N, (void)K, (void)pixels;
}

}  // namespace
}  // namespace course
