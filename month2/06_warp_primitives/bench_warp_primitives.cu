// Benchmark for exercise m2.06: warp shuffles against a shared-memory tree, and a row
// softmax against the memory's speed.
//
// Rows, in the order they run:
//   reduce_sum/memcpy/n:...                cudaMemcpy device to device of n floats: the
//                                          practical bandwidth ceiling
//   reduce_sum/step_shared_tree/n:...      the reference shared-memory tree (part 1, first half)
//   reduce_sum/solution/n:...              the reference warp-shuffle reduction
//   reduce_sum/exercise/n:...              your warp-shuffle reduction
//   reduce_sum_tree/exercise/n:...         your shared-memory tree
//   softmax_rows/memcpy/rows:.../cols:...  cudaMemcpy of the same matrix
//   softmax_rows/step_block_tree/...       the way before warp shuffles: a block of 256
//                                          threads per row, shared-memory tree reductions
//                                          for the max and the sum (defined below)
//   softmax_rows/solution/rows:.../cols:...
//   softmax_rows/exercise/rows:.../cols:...
// GBps counts the fewest bytes each must move through DRAM: a reduction reads n floats; a
// softmax reads x once and writes y once. Every row checks its result before it is timed.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "course/benchmark.h"
#include "course/device_buffer.h"
#include "course/launch.h"
#include "course/random.h"
#include "course/verify.h"
#include "warp_primitives.h"

namespace {

// --- The sum ---------------------------------------------------------------------------

// 2^26 floats, 256 MiB: far larger than the L2 cache.
const std::vector<std::int64_t> kReduceSizes = {std::int64_t{1} << 26};

struct ReduceInput {
  course::DeviceBuffer<float> x;
  std::int64_t exact_sum = 0;
};

// Integers from {-8, ..., 8} without 0: the float32 sum is exact in any order (see the tests).
const ReduceInput& reduce_input(std::int64_t n) {
  static course::bench::ProblemCache<std::int64_t, ReduceInput> cache;
  return cache.get(n, [&](ReduceInput& slot) {
    std::vector<float> values = course::random_uniform<float>(n, 7, 0.0, 16.0);
    for (float& v : values) {
      const int k = static_cast<int>(v);
      v = static_cast<float>(k < 8 ? k - 8 : k - 7);
      slot.exact_sum += static_cast<std::int64_t>(v);
    }
    slot.x = course::DeviceBuffer<float>::from_host(values);
  });
}

using ReduceFn = void (*)(const float*, std::int64_t, float*, cudaStream_t);

template <ReduceFn reduce>
void bm_reduce(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  try {
    const ReduceInput& in = reduce_input(n);
    course::DeviceBuffer<float> sum(1);
    sum.poison();
    reduce(in.x.data(), n, sum.data(), nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    const float got = sum.to_host()[0];
    if (got != static_cast<float>(in.exact_sum)) {
      return course::bench::fail(state, "wrong result: the sum is " + std::to_string(got) +
                                            ", should be exactly " + std::to_string(in.exact_sum));
    }
    course::bench::measure(state, course::bench::Work{4.0 * static_cast<double>(n)},
                           [&](cudaStream_t stream) { reduce(in.x.data(), n, sum.data(), stream); });
    state.SetItemsProcessed(state.iterations() * n);
  } catch (const std::exception& error) {
    course::bench::fail(state, error);
  }
}

// --- The softmax -----------------------------------------------------------------------

// 256 MiB matrices: rows held in registers (1024 and 4096 floats), a row too long for
// registers (16384: the online path), and an odd width (one float at a time, in registers).
const std::vector<std::vector<std::int64_t>> kSoftmaxShapes = {
    {65536, 1024}, {16384, 4096}, {4096, 16384}, {16384, 4095}};

// The comparison: one block of 256 threads per row, the max and the sum each reduced with a
// shared-memory tree (as in part 1) and three passes over the row. Every reduction costs
// eight __syncthreads, and a short row leaves most of the 256 threads idle.
constexpr int kBlockTreeThreads = 256;

__device__ float block_tree_reduce(float value, float* scratch, bool take_max) {
  scratch[threadIdx.x] = value;
  __syncthreads();
  for (int half = kBlockTreeThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) {
      const float other = scratch[threadIdx.x + half];
      scratch[threadIdx.x] = take_max ? fmaxf(scratch[threadIdx.x], other)
                                      : scratch[threadIdx.x] + other;
    }
    __syncthreads();
  }
  const float result = scratch[0];
  __syncthreads();  // everyone has read scratch[0] before the next reduction overwrites it
  return result;
}

__global__ void __launch_bounds__(kBlockTreeThreads)
    softmax_block_tree_kernel(const float* __restrict__ x, float* __restrict__ y,
                              std::int64_t rows, std::int64_t cols) {
  __shared__ float scratch[kBlockTreeThreads];
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* in = x + row * cols;
    float* out = y + row * cols;
    float thread_max = -INFINITY;
    for (std::int64_t c = threadIdx.x; c < cols; c += kBlockTreeThreads) {
      thread_max = fmaxf(thread_max, __ldg(in + c));
    }
    const float row_max = block_tree_reduce(thread_max, scratch, true);
    float thread_sum = 0.0f;
    for (std::int64_t c = threadIdx.x; c < cols; c += kBlockTreeThreads) {
      thread_sum += expf(__ldg(in + c) - row_max);
    }
    const float inverse_sum = 1.0f / block_tree_reduce(thread_sum, scratch, false);
    for (std::int64_t c = threadIdx.x; c < cols; c += kBlockTreeThreads) {
      out[c] = expf(__ldg(in + c) - row_max) * inverse_sum;
    }
  }
}

void softmax_block_tree(const float* x, float* y, std::int64_t rows, std::int64_t cols,
                        cudaStream_t stream) {
  const int blocks = static_cast<int>(std::min<std::int64_t>(
      rows, course::resident_blocks_to_fill_gpu(softmax_block_tree_kernel, kBlockTreeThreads)));
  softmax_block_tree_kernel<<<blocks, kBlockTreeThreads, 0, stream>>>(x, y, rows, cols);
  CUDA_CHECK_LAUNCH();
}

struct SoftmaxInput {
  course::DeviceBuffer<float> x;
  std::vector<float> host_x;
};

const SoftmaxInput& softmax_input(std::int64_t rows, std::int64_t cols) {
  static course::bench::ProblemCache<std::pair<std::int64_t, std::int64_t>, SoftmaxInput> cache;
  return cache.get({rows, cols}, [&](SoftmaxInput& slot) {
    slot.host_x = course::random_uniform<float>(rows * cols, 8, -8.0, 8.0);
    slot.x = course::DeviceBuffer<float>::from_host(slot.host_x);
  });
}

// Checks every 97th row against a float64 softmax (all rows would take a while on the CPU).
std::string check_softmax(const SoftmaxInput& in, const std::vector<float>& y, std::int64_t rows,
                          std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; r += 97) {
    const float* x = in.host_x.data() + r * cols;
    double row_max = -INFINITY, sum = 0.0;
    for (std::int64_t c = 0; c < cols; ++c) row_max = std::fmax(row_max, x[c]);
    for (std::int64_t c = 0; c < cols; ++c) sum += std::exp(x[c] - row_max);
    std::vector<double> want(cols);
    for (std::int64_t c = 0; c < cols; ++c) want[c] = std::exp(x[c] - row_max) / sum;
    const std::vector<float> got(y.begin() + r * cols, y.begin() + (r + 1) * cols);
    const auto check = course::verify(got, want, course::Tolerance{1e-36, 2e-5});
    if (!check) return "row " + std::to_string(r) + ": " + check.message();
  }
  return "";
}

using SoftmaxFn = void (*)(const float*, float*, std::int64_t, std::int64_t, cudaStream_t);

template <SoftmaxFn softmax>
void bm_softmax(benchmark::State& state) {
  const std::int64_t rows = state.range(0), cols = state.range(1);
  try {
    const SoftmaxInput& in = softmax_input(rows, cols);
    course::DeviceBuffer<float> y(rows * cols);
    y.poison();
    softmax(in.x.data(), y.data(), rows, cols, nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::string problem = check_softmax(in, y.to_host(), rows, cols);
    if (!problem.empty()) return course::bench::fail(state, "wrong result: " + problem);
    course::bench::measure(state,
                           course::bench::Work{2.0 * 4.0 * static_cast<double>(rows * cols)},
                           [&](cudaStream_t stream) {
                             softmax(in.x.data(), y.data(), rows, cols, stream);
                           });
    state.SetItemsProcessed(state.iterations() * rows * cols);
  } catch (const std::exception& error) {
    course::bench::fail(state, error);
  }
}

// cudaMemcpy of a matrix of the same shape: the ceiling for a kernel that reads it once and
// writes it once.
void bm_softmax_memcpy(benchmark::State& state) {
  course::bench::measure_memcpy(state, state.range(0) * state.range(1));
}

void register_rows() {
  namespace sol = course::solution;
  namespace ex = course::exercise;
  course::bench::register_memcpy_baseline("reduce_sum/memcpy", kReduceSizes);
  for (auto* row : {
           course::bench::register_row("reduce_sum/step_shared_tree",
                                       bm_reduce<sol::reduce_sum_shared_tree>),
           course::bench::register_row("reduce_sum/solution", bm_reduce<sol::reduce_sum_warp_shuffle>),
           course::bench::register_row("reduce_sum/exercise", bm_reduce<ex::reduce_sum_warp_shuffle>),
           course::bench::register_row("reduce_sum_tree/exercise",
                                       bm_reduce<ex::reduce_sum_shared_tree>),
       }) {
    row->ArgName("n")->UseManualTime()->Unit(benchmark::kMicrosecond);
    for (std::int64_t n : kReduceSizes) row->Arg(n);
  }
  for (auto* row : {
           course::bench::register_row("softmax_rows/memcpy", bm_softmax_memcpy),
           course::bench::register_row("softmax_rows/step_block_tree", bm_softmax<softmax_block_tree>),
           course::bench::register_row("softmax_rows/solution", bm_softmax<sol::softmax_rows>),
           course::bench::register_row("softmax_rows/exercise", bm_softmax<ex::softmax_rows>),
       }) {
    row->ArgNames({"rows", "cols"})->UseManualTime()->Unit(benchmark::kMicrosecond);
    for (const auto& shape : kSoftmaxShapes) row->Args(shape);
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_rows();
  return course::bench::run_benchmarks(argc, argv);
}
