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
  // The solution: thread j of part `part` adds the elements part * 256 + j, then every
  // parts * 256 further, of the channel's N * pixels values (element i is image i / pixels,
  // pixel i % pixels: consecutive threads read consecutive addresses), then block_reduce_sum
  // adds the 256 sums in a fixed order, warp by warp with shuffles (m2.06), and thread 0
  // writes the part's sum.
  const int k = blockIdx.x, part = blockIdx.y;
  const std::int64_t step = std::int64_t{gridDim.y} * kReduceThreads;
  T sum = T(0);
  for (std::int64_t i = std::int64_t{part} * kReduceThreads + threadIdx.x; i < N * pixels;
       i += step) {
    const std::int64_t n = i / pixels, j = i % pixels;
    sum += dy[(n * K + k) * pixels + j];
  }
  sum = block_reduce_sum(sum);
  if (threadIdx.x == 0) partials[std::int64_t{part} * K + k] = sum;
}

}  // namespace
}  // namespace course
