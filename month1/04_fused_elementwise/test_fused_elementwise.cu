// Tests for exercise m1.04 (fused element-wise kernel). The same tests grade your skeleton
// and the reference solution.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "course/testing.h"
#include "fused_elementwise.h"

namespace {

constexpr const char* kFusedHint =
    "look at TODO(m1.04a) (affine_gelu_kernel: one thread's elements, w and b per column) and "
    "TODO(m1.04b) (the launch in affine_gelu) in month1/04_fused_elementwise/fused_elementwise.cu";
constexpr const char* kUnfusedHint =
    "the provided unfused chain is wrong: compare month1/04_fused_elementwise/"
    "fused_elementwise.cu with the reference in solutions/";

// Every array sits between guard zones the kernels must leave alone (course::GuardedBuffer):
// the front guard is 4096 bytes, so an array placed `offset` floats after it is exactly
// 4 * offset bytes past a 16-byte boundary.

struct Problem {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  // Where each array starts, in floats past a 16-byte boundary.
  int x_offset = 0;
  int w_offset = 0;
  int b_offset = 0;
  int y_offset = 0;
};
std::ostream& operator<<(std::ostream& out, const Problem& p) {
  out << p.rows << "x" << p.cols;
  if (p.x_offset || p.w_offset || p.b_offset || p.y_offset) {
    out << " with x+" << p.x_offset << ", w+" << p.w_offset << ", b+" << p.b_offset << ", y+"
        << p.y_offset;
  }
  return out;
}
std::string name_of(const Problem& p) {
  std::string name = "r" + std::to_string(p.rows) + "_c" + std::to_string(p.cols);
  if (p.x_offset || p.w_offset || p.b_offset || p.y_offset) {
    name += "_offsets" + std::to_string(p.x_offset) + std::to_string(p.w_offset) +
            std::to_string(p.b_offset) + std::to_string(p.y_offset);
  }
  return name;
}

// The reference: float64 throughout, from the float32 inputs the kernel sees, with the
// exact (erf) GELU.
double reference_affine_gelu(float x, float w, float b) {
  const double v = static_cast<double>(x) * w + b;
  return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
}

// v = x * w + b lands in about [-5.5, 5.5]: the curved middle of GELU and both tails.
// The default fp32 tolerance (|out - ref| <= 1e-5 + 1.3e-6 * |ref|) holds without loosening.
// erff is within 2 ulp of erf, about 1.2e-7 absolute near erf = -1, where 1 + erf(v / sqrt(2))
// cancels; times 0.5 * |v| <= 2.75 that stays below 1e-6, far inside atol. The roundings of
// v = x * w + b add at most about 5e-7 absolute, the final products about 1.2e-7 relative.
using AffineGelu = std::function<void(const float* x, const float* w, const float* b, float* y,
                                      std::int64_t rows, std::int64_t cols)>;

void check_affine_gelu(const Problem& p, const AffineGelu& run, const std::string& hint) {
  const std::uint64_t seed = course::test_seed();
  const std::int64_t count = p.rows * p.cols;
  const auto x = course::random_uniform<float>(count, seed, -3.0, 3.0);
  const auto w = course::random_uniform<float>(p.cols, seed + 1, -1.5, 1.5);
  const auto b = course::random_uniform<float>(p.cols, seed + 2, -1.0, 1.0);
  std::vector<double> expected(count);
  for (std::int64_t r = 0; r < p.rows; ++r) {
    for (std::int64_t c = 0; c < p.cols; ++c) {
      expected[r * p.cols + c] = reference_affine_gelu(x[r * p.cols + c], w[c], b[c]);
    }
  }

  // Every array: [guard | offset | values | guard], all poisoned (NaN) before the copy.
  auto device_x = course::GuardedBuffer<float>::from_host(x, p.x_offset);
  auto device_w = course::GuardedBuffer<float>::from_host(w, p.w_offset);
  auto device_b = course::GuardedBuffer<float>::from_host(b, p.b_offset);
  course::GuardedBuffer<float> device_y(static_cast<std::size_t>(count), p.y_offset);

  run(device_x.data(), device_w.data(), device_b.data(), device_y.data(), p.rows, p.cols);
  CUDA_CHECK(cudaDeviceSynchronize());  // errors inside the kernel surface here

  const auto y = device_y.download();
  EXPECT_TRUE(course::verify(y.values, expected, course::tolerance_for(course::Dtype::fp32)))
      << "shape " << p << " (rows x cols), seed = " << seed << ": " << hint;
  EXPECT_FALSE(y.first_stray_write)
      << "the kernel wrote outside y (shape " << p << "): y[" << y.first_stray_write.value_or(0)
      << "] relative to its start changed. " << hint;
}

void run_fused(const float* x, const float* w, const float* b, float* y, std::int64_t rows,
               std::int64_t cols) {
  course::impl::affine_gelu(x, w, b, y, rows, cols);
}

void run_unfused(const float* x, const float* w, const float* b, float* y, std::int64_t rows,
                 std::int64_t cols) {
  course::DeviceBuffer<float> scratch(static_cast<std::size_t>(rows * cols));
  course::impl::affine_gelu_unfused(x, w, b, y, scratch.data(), rows, cols);
  CUDA_CHECK(cudaDeviceSynchronize());  // before scratch is freed
}

// --- the fused kernel ---------------------------------------------------------------------

class FusedTest : public course::GpuTest, public ::testing::WithParamInterface<Problem> {};

TEST_P(FusedTest, MatchesFloat64ReferenceAndWritesNothingElse) {
  check_affine_gelu(GetParam(), run_fused, kFusedHint);
}

// Odd shapes (1x1, 3x5, 17x33, 1000x1023, 4097x769), one column and one row, column counts
// that are multiples of 4 (where a float4 kernel runs: 3x4, 257x4, 64x128, 1000x1024), and
// empty matrices (nothing to do, nothing written).
INSTANTIATE_TEST_SUITE_P(Shapes, FusedTest,
                         ::testing::Values(Problem{1, 1}, Problem{3, 5}, Problem{17, 33},
                                           Problem{1000, 1023}, Problem{4097, 769},
                                           Problem{1000, 1}, Problem{1, 1000}, Problem{3, 4},
                                           Problem{257, 4}, Problem{64, 128}, Problem{1000, 1024},
                                           Problem{0, 5}, Problem{5, 0}, Problem{0, 0}),
                         [](const auto& info) { return name_of(info.param); });

// A float4 kernel may only run when every row and w and b start on a 16-byte boundary.
// Here cols is a multiple of 4 but one array (or all) starts 4 or 8 bytes past one.
INSTANTIATE_TEST_SUITE_P(
    MisalignedPointers, FusedTest,
    ::testing::Values(Problem{33, 1024, 1, 0, 0, 0}, Problem{33, 1024, 0, 1, 0, 0},
                      Problem{33, 1024, 0, 0, 1, 0}, Problem{33, 1024, 0, 0, 0, 1},
                      Problem{33, 1024, 2, 2, 2, 2}, Problem{7, 12, 3, 1, 2, 3}),
    [](const auto& info) { return name_of(info.param); });

// --- the provided unfused chain (the benchmark's baseline) --------------------------------

class UnfusedTest : public course::GpuTest, public ::testing::WithParamInterface<Problem> {};

TEST_P(UnfusedTest, MatchesFloat64ReferenceAndWritesNothingElse) {
  check_affine_gelu(GetParam(), run_unfused, kUnfusedHint);
}

INSTANTIATE_TEST_SUITE_P(Shapes, UnfusedTest,
                         ::testing::Values(Problem{1, 1}, Problem{3, 5}, Problem{17, 33},
                                           Problem{1000, 1}, Problem{1000, 1023}, Problem{64, 128},
                                           Problem{0, 5}),
                         [](const auto& info) { return name_of(info.param); });

// --- arguments and streams ----------------------------------------------------------------

class AffineGeluArgumentsTest : public course::GpuTest {};

TEST_F(AffineGeluArgumentsTest, NegativeShapeIsRejectedWithTheValueInTheMessage) {
  course::DeviceBuffer<float> buffer(64);
  for (const auto& [rows, cols, bad] :
       std::vector<std::tuple<std::int64_t, std::int64_t, std::string>>{{-2, 8, "-2"},
                                                                        {8, -7, "-7"}}) {
    for (const bool fused : {true, false}) {
      const char* name = fused ? "affine_gelu" : "affine_gelu_unfused";
      try {
        if (fused) {
          course::impl::affine_gelu(buffer.data(), buffer.data(), buffer.data(), buffer.data(),
                                    rows, cols);
        } else {
          course::impl::affine_gelu_unfused(buffer.data(), buffer.data(), buffer.data(),
                                            buffer.data(), buffer.data(), rows, cols);
        }
        ADD_FAILURE() << name << " accepted rows = " << rows << ", cols = " << cols;
      } catch (const std::invalid_argument& error) {
        EXPECT_NE(std::string(error.what()).find(bad), std::string::npos)
            << "the message should show the bad value: " << error.what();
      }
    }
  }
}

TEST_F(AffineGeluArgumentsTest, RunsOnTheGivenStream) {
  const std::int64_t rows = 513, cols = 256;
  const std::uint64_t seed = course::test_seed() + 7;
  const auto x = course::random_uniform<float>(rows * cols, seed, -3.0, 3.0);
  const auto w = course::random_uniform<float>(cols, seed + 1, -1.5, 1.5);
  const auto b = course::random_uniform<float>(cols, seed + 2, -1.0, 1.0);
  std::vector<double> expected(rows * cols);
  for (std::int64_t i = 0; i < rows * cols; ++i) {
    expected[i] = reference_affine_gelu(x[i], w[i % cols], b[i % cols]);
  }
  auto device_x = course::DeviceBuffer<float>::from_host(x);
  auto device_w = course::DeviceBuffer<float>::from_host(w);
  auto device_b = course::DeviceBuffer<float>::from_host(b);
  course::DeviceBuffer<float> device_y(rows * cols);
  device_y.poison();

  EXPECT_TRUE(course::runs_on_given_stream([&](cudaStream_t stream) {
    course::impl::affine_gelu(device_x.data(), device_w.data(), device_b.data(), device_y.data(),
                              rows, cols, stream);
  })) << kFusedHint << " (launch on `stream`, the fourth launch parameter)";
  EXPECT_TRUE(
      course::verify(device_y.to_host(), expected, course::tolerance_for(course::Dtype::fp32)))
      << kFusedHint << " (launch on `stream`, the fourth launch parameter)";
}

}  // namespace
