// Tests for exercise m2.06 (warp primitives). The same tests grade your skeleton and the
// reference solution.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/testing.h"
#include "warp_primitives.h"

namespace {

constexpr const char* kTreeHint =
    "look at TODO(m2.06a) (the shared-memory tree: store, halve with __syncthreads, atomicAdd "
    "of the block's sum) in month2/06_warp_primitives/reduce.cu";
constexpr const char* kShuffleHint =
    "look at TODO(m2.06b) (warp_reduce_sum with __shfl_down_sync, and block_reduce_sum: warp "
    "sums through shared memory to warp 0) in month2/06_warp_primitives/reduce.cu";
constexpr const char* kSoftmaxHint =
    "look at TODO(m2.06c) (warp_all_reduce_max / warp_all_reduce_sum with __shfl_xor_sync), "
    "TODO(m2.06d) (rows of up to 4096 floats, held in registers: the row's max, exp and sum) "
    "and TODO(m2.06e) (longer rows: RunningSoftmax::add and combining the 32 lanes) in "
    "month2/06_warp_primitives/softmax.cu";

// Inputs and outputs sit between NaN guard zones (course::GuardedBuffer): the front guard is
// 4096 bytes, so data placed `offset` floats after it is 4 * offset bytes past a 16-byte
// boundary.

// --- Part 1: the sum ---------------------------------------------------------------------

using ReduceFn = void (*)(const float*, std::int64_t, float*, cudaStream_t);
struct Reduction {
  const char* name;
  ReduceFn reduce;
  const char* hint;
};
const Reduction kReductions[] = {
    {"shared_tree", course::impl::reduce_sum_shared_tree, kTreeHint},
    {"warp_shuffle", course::impl::reduce_sum_warp_shuffle, kShuffleHint},
};

// Integers from {-8, ..., -1, 1, ..., 8}, as floats. Every partial sum of them is an integer
// far below 2^24, which float32 holds exactly, so any order of additions gives the exact
// sum: a missing, doubled or misread element cannot hide inside a tolerance.
std::vector<float> nonzero_small_integers(std::int64_t n, std::uint64_t seed) {
  std::vector<float> values = course::random_uniform<float>(n, seed, 0.0, 16.0);
  for (float& v : values) {
    const int k = static_cast<int>(v);  // 0 .. 15
    v = static_cast<float>(k < 8 ? k - 8 : k - 7);
  }
  return values;
}

// Runs `reduce` on `values` placed `offset` floats past a 16-byte boundary, with the result
// in the middle of a NaN-poisoned guard buffer. Returns the result; checks the guards.
float run_reduction(const Reduction& r, const std::vector<float>& values, int offset) {
  const std::int64_t n = static_cast<std::int64_t>(values.size());
  auto x = course::GuardedBuffer<float>::from_host(values, offset);
  course::GuardedBuffer<float> sum(1);
  r.reduce(x.data(), n, sum.data(), nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto out = sum.download();
  EXPECT_FALSE(out.first_stray_write)
      << r.name << " wrote next to *sum (n = " << n << "): at [" << out.first_stray_write.value_or(0)
      << "] relative to it. " << r.hint;
  return out.values[0];
}

struct ReduceCase {
  int variant;
  std::int64_t n;
  int offset;  // floats past a 16-byte boundary
};
std::string reduce_case_name(const ::testing::TestParamInfo<ReduceCase>& info) {
  return std::string(kReductions[info.param.variant].name) + "_n" + std::to_string(info.param.n) +
         "_offset" + std::to_string(info.param.offset);
}

class ReduceSumTest : public course::GpuTest,
                      public ::testing::WithParamInterface<ReduceCase> {};

TEST_P(ReduceSumTest, IntegerInputsSumExactly) {
  const Reduction& r = kReductions[GetParam().variant];
  const std::int64_t n = GetParam().n;
  const std::uint64_t seed = course::test_seed();
  const std::vector<float> values = nonzero_small_integers(n, seed);
  std::int64_t expected = 0;
  for (float v : values) expected += static_cast<std::int64_t>(v);
  const float got = run_reduction(r, values, GetParam().offset);
  EXPECT_EQ(got, static_cast<float>(expected))
      << r.name << " of n = " << n << " integers (x starts " << 4 * GetParam().offset
      << " bytes past a 16-byte boundary, seed " << seed << ") should be exactly " << expected
      << (std::isnan(got) ? "; the result is NaN: *sum was never written" : "") << ". " << r.hint;
}

// Random floats in [-1, 1): the float32 sum may differ from the exact one by rounding, at
// most a few units of 1e-7 times the sum of |x| for the ~100 sequential additions a thread
// makes plus the tree; 1e-5 leaves room and still catches a lost element of any size
// (the integer test catches every one exactly).
TEST_P(ReduceSumTest, RandomFloatsMatchFloat64) {
  const Reduction& r = kReductions[GetParam().variant];
  const std::int64_t n = GetParam().n;
  const std::uint64_t seed = course::test_seed() + 1;
  const std::vector<float> values = course::random_uniform<float>(n, seed);
  double expected = 0.0, magnitude = 0.0;
  for (float v : values) {
    expected += v;
    magnitude += std::fabs(v);
  }
  const float got = run_reduction(r, values, GetParam().offset);
  EXPECT_NEAR(got, expected, 1e-5 * magnitude + 1e-6)
      << r.name << " of n = " << n << " random floats (seed " << seed << "). " << r.hint;
}

std::vector<ReduceCase> reduce_cases() {
  std::vector<ReduceCase> cases;
  for (int variant = 0; variant < 2; ++variant) {
    for (std::int64_t n : {std::int64_t{0}, std::int64_t{1}, std::int64_t{31}, std::int64_t{32},
                           std::int64_t{33}, std::int64_t{255}, std::int64_t{256},
                           std::int64_t{257}, std::int64_t{1000}, std::int64_t{(1 << 20) + 7},
                           std::int64_t{1} << 24}) {
      cases.push_back({variant, n, 0});
    }
    for (int offset = 1; offset < 4; ++offset) {  // the head and tail paths around float4s
      for (std::int64_t n : {std::int64_t{3}, std::int64_t{7}, std::int64_t{1000003}}) {
        cases.push_back({variant, n, offset});
      }
    }
  }
  return cases;
}
INSTANTIATE_TEST_SUITE_P(Sizes, ReduceSumTest, ::testing::ValuesIn(reduce_cases()),
                         reduce_case_name);

class ReduceArgumentsTest : public course::GpuTest,
                            public ::testing::WithParamInterface<int> {};

TEST_P(ReduceArgumentsTest, BadArgumentsAreRejectedWithAClearError) {
  const Reduction& r = kReductions[GetParam()];
  course::DeviceBuffer<float> buffer(8);
  EXPECT_THROW(r.reduce(buffer.data(), -1, buffer.data(), nullptr), std::invalid_argument)
      << r.name << " must reject n = -1. " << r.hint;
  EXPECT_THROW(r.reduce(buffer.data(), 8, nullptr, nullptr), std::invalid_argument)
      << r.name << " must reject a null sum pointer. " << r.hint;
  EXPECT_THROW(r.reduce(nullptr, 8, buffer.data(), nullptr), std::invalid_argument)
      << r.name << " must reject a null x with n > 0. " << r.hint;
}

TEST_P(ReduceArgumentsTest, RunsOnTheGivenStream) {
  const Reduction& r = kReductions[GetParam()];
  const std::int64_t n = 100003;
  const std::vector<float> values = nonzero_small_integers(n, course::test_seed() + 2);
  std::int64_t expected = 0;
  for (float v : values) expected += static_cast<std::int64_t>(v);
  auto x = course::DeviceBuffer<float>::from_host(values);
  course::DeviceBuffer<float> sum(1);
  sum.poison();
  EXPECT_TRUE(course::runs_on_given_stream([&](cudaStream_t stream) {
    r.reduce(x.data(), n, sum.data(), stream);
  })) << r.name << ": " << r.hint << " (the memset and the launch go on `stream`)";
  EXPECT_EQ(sum.to_host()[0], static_cast<float>(expected)) << r.name << ": " << r.hint;
}

INSTANTIATE_TEST_SUITE_P(Variants, ReduceArgumentsTest, ::testing::Values(0, 1),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(kReductions[info.param].name);
                         });

// --- Part 2: the row softmax ---------------------------------------------------------------

struct SoftmaxCase {
  std::int64_t rows;
  std::int64_t cols;
  double scale;        // inputs are uniform in [-scale, scale)
  bool masked;         // about one entry in 8 is -inf (never a whole row)
  int offset;          // floats past a 16-byte boundary, for x and y
};
std::string softmax_case_name(const ::testing::TestParamInfo<SoftmaxCase>& info) {
  const SoftmaxCase& c = info.param;
  return "r" + std::to_string(c.rows) + "_c" + std::to_string(c.cols) + "_scale" +
         std::to_string(static_cast<int>(c.scale)) + (c.masked ? "_masked" : "") +
         (c.offset ? "_offset" + std::to_string(c.offset) : "");
}

// The float64 softmax of each row of the float32 inputs.
std::vector<double> reference_softmax(const std::vector<float>& x, std::int64_t rows,
                                      std::int64_t cols) {
  std::vector<double> y(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* in = x.data() + r * cols;
    double row_max = -INFINITY;
    for (std::int64_t c = 0; c < cols; ++c) row_max = std::fmax(row_max, in[c]);
    double sum = 0.0;
    for (std::int64_t c = 0; c < cols; ++c) sum += std::exp(in[c] - row_max);
    for (std::int64_t c = 0; c < cols; ++c) y[r * cols + c] = std::exp(in[c] - row_max) / sum;
  }
  return y;
}

class SoftmaxRowsTest : public course::GpuTest,
                        public ::testing::WithParamInterface<SoftmaxCase> {};

TEST_P(SoftmaxRowsTest, MatchesFloat64Reference) {
  const SoftmaxCase& c = GetParam();
  const std::int64_t count = c.rows * c.cols;
  const std::uint64_t seed = course::test_seed() + 3;
  std::vector<float> x = course::random_uniform<float>(count, seed, -c.scale, c.scale);
  if (c.masked) {
    const std::vector<float> pick = course::random_uniform<float>(count, seed + 1, 0.0, 1.0);
    for (std::int64_t i = 0; i < count; ++i) {
      // Mask about 1 in 8, but never the first entry of a row: no row is all -inf.
      if (i % c.cols != 0 && pick[i] < 0.125f) x[i] = -INFINITY;
    }
  }
  const std::vector<double> expected = reference_softmax(x, c.rows, c.cols);

  auto device_x = course::GuardedBuffer<float>::from_host(x, c.offset);
  course::GuardedBuffer<float> device_y(static_cast<std::size_t>(count), c.offset);
  course::impl::softmax_rows(device_x.data(), device_y.data(), c.rows, c.cols, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());

  const auto out = device_y.download();
  const std::vector<float>& y = out.values;
  // Each output is exp(v - max) / sum: a few float32 roundings of exp and of the sum of a
  // row, relative to the value. rtol 2e-5 is ~170 float32 ulps; a row sum that missed one
  // element of 4099 is already 2.4e-4 off. atol only covers results below float32's
  // normal range (exp(-90) and smaller), which lose relative precision.
  EXPECT_TRUE(course::verify(y, expected, course::Tolerance{1e-36, 2e-5}))
      << "softmax of " << c.rows << " x " << c.cols << " inputs in [-" << c.scale << ", "
      << c.scale << ")" << (c.masked ? " with -inf entries" : "") << ", seed " << seed << ". "
      << kSoftmaxHint;

  EXPECT_FALSE(out.first_stray_write)
      << "softmax_rows wrote outside y: y[" << out.first_stray_write.value_or(0)
      << "] relative to its start changed. " << kSoftmaxHint;
}

// Rows of up to 4096 floats are held in registers; longer
// ones take the online path (see softmax.cu). Both are tested, with each kind of input.
INSTANTIATE_TEST_SUITE_P(
    Shapes, SoftmaxRowsTest,
    ::testing::Values(SoftmaxCase{1, 1, 5.0, false, 0},     // a single element: y = 1
                      SoftmaxCase{3, 31, 5.0, false, 0},    // fewer columns than lanes
                      SoftmaxCase{5, 32, 5.0, false, 0}, SoftmaxCase{7, 33, 5.0, false, 0},
                      SoftmaxCase{1000, 1000, 5.0, false, 0},  // float4s, many rows
                      SoftmaxCase{129, 1024, 5.0, false, 0},
                      SoftmaxCase{17, 4096, 5.0, true, 0},     // the longest row in registers
                      SoftmaxCase{33, 2047, 5.0, false, 0},    // one float at a time, in registers
                      SoftmaxCase{17, 4095, 5.0, true, 0},
                      SoftmaxCase{65, 4099, 5.0, false, 0},    // one float at a time, online
                      SoftmaxCase{9, 5000, 5.0, false, 0},     // float4s, online
                      SoftmaxCase{64, 1024, 300.0, false, 0},  // exp(300) overflows: needs the max
                      SoftmaxCase{64, 1001, 300.0, false, 0},
                      SoftmaxCase{9, 6000, 300.0, false, 0},
                      SoftmaxCase{64, 1024, 5.0, true, 0},     // -inf entries (a mask)
                      SoftmaxCase{64, 999, 5.0, true, 0},
                      SoftmaxCase{9, 4100, 5.0, true, 0}, SoftmaxCase{5, 3001, 5.0, true, 0},
                      SoftmaxCase{33, 1024, 5.0, false, 1},    // rows not 16-byte aligned
                      SoftmaxCase{33, 1024, 5.0, false, 2}),
    softmax_case_name);

class SoftmaxArgumentsTest : public course::GpuTest {};

TEST_F(SoftmaxArgumentsTest, BadArgumentsAreRejectedWithAClearError) {
  course::DeviceBuffer<float> buffer(8);
  EXPECT_THROW(course::impl::softmax_rows(buffer.data(), buffer.data() + 4, -1, 4, nullptr),
               std::invalid_argument)
      << "softmax_rows must reject rows = -1. " << kSoftmaxHint;
  EXPECT_THROW(course::impl::softmax_rows(buffer.data(), buffer.data() + 4, 1, -4, nullptr),
               std::invalid_argument)
      << "softmax_rows must reject cols = -4. " << kSoftmaxHint;
  EXPECT_THROW(course::impl::softmax_rows(nullptr, buffer.data(), 2, 4, nullptr),
               std::invalid_argument)
      << "softmax_rows must reject a null x. " << kSoftmaxHint;
}

TEST_F(SoftmaxArgumentsTest, EmptyMatricesWriteNothing) {
  course::DeviceBuffer<float> y(8);
  y.poison();
  course::impl::softmax_rows(y.data(), y.data(), 0, 8, nullptr);
  course::impl::softmax_rows(y.data(), y.data(), 8, 0, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  for (float v : y.to_host()) EXPECT_TRUE(course::is_poison(v)) << kSoftmaxHint;
}

TEST_F(SoftmaxArgumentsTest, RunsOnTheGivenStream) {
  const std::int64_t rows = 100, cols = 256;
  const std::vector<float> x =
      course::random_uniform<float>(rows * cols, course::test_seed() + 5, -4.0, 4.0);
  const std::vector<double> expected = reference_softmax(x, rows, cols);
  auto device_x = course::DeviceBuffer<float>::from_host(x);
  course::DeviceBuffer<float> device_y(rows * cols);
  device_y.poison();
  EXPECT_TRUE(course::runs_on_given_stream([&](cudaStream_t stream) {
    course::impl::softmax_rows(device_x.data(), device_y.data(), rows, cols, stream);
  })) << kSoftmaxHint << " (launch on `stream`, the fourth launch parameter)";
  EXPECT_TRUE(course::verify(device_y.to_host(), expected, course::Tolerance{1e-36, 2e-5}))
      << kSoftmaxHint;
}

}  // namespace
