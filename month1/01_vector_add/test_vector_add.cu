// Tests for exercise m1.01 (vector add). The same tests grade your skeleton and the
// reference solution.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "course/testing.h"
#include "vector_add.h"

namespace {

constexpr const char* kHint =
    "look at TODO(m1.01a) (the kernel body: index, bounds check, add) and TODO(m1.01b) "
    "(the launch: blocks and threads) in month1/01_vector_add/vector_add.cu";

class VectorAddTest : public course::GpuTest, public ::testing::WithParamInterface<std::int64_t> {};

TEST_P(VectorAddTest, MatchesCpuReferenceAndWritesNothingPastTheEnd) {
  const std::int64_t n = GetParam();
  const std::uint64_t seed = course::test_seed();
  const std::vector<float> a = course::random_uniform<float>(n, seed);
  const std::vector<float> b = course::random_uniform<float>(n, seed + 1);

  // The reference in float64, from the same float32 inputs.
  std::vector<double> expected(n);
  for (std::int64_t i = 0; i < n; ++i) expected[i] = static_cast<double>(a[i]) + b[i];

  auto device_a = course::DeviceBuffer<float>::from_host(a);
  auto device_b = course::DeviceBuffer<float>::from_host(b);
  // NaN everywhere, guards included: an element the kernel skips fails the comparison.
  course::GuardedBuffer<float> device_c(n);

  course::impl::vector_add(device_a.data(), device_b.data(), device_c.data(), n);
  CUDA_CHECK(cudaDeviceSynchronize());  // errors inside the kernel surface here

  const auto c = device_c.download();
  EXPECT_TRUE(course::verify(c.values, expected, course::tolerance_for(course::Dtype::fp32)))
      << "n = " << n << ", seed = " << seed << ": " << kHint;
  EXPECT_FALSE(c.first_stray_write)
      << "the kernel wrote outside c (n = " << n << "): c[" << c.first_stray_write.value_or(0)
      << "] changed; threads with index >= n must do nothing. " << kHint;
}

// 0 and 1: the smallest cases. 511, 512, 513: one below, at and above a multiple of the
// block size, where a missing bounds check or a grid rounded down shows. 2^20 + 7: many
// blocks and a ragged tail. 2^26: a size that fills the GPU many times over.
INSTANTIATE_TEST_SUITE_P(Sizes, VectorAddTest,
                         ::testing::Values(0, 1, 511, 512, 513, (1 << 20) + 7, 1 << 26),
                         [](const auto& info) { return "n" + std::to_string(info.param); });

class VectorAddArgumentsTest : public course::GpuTest {};

TEST_F(VectorAddArgumentsTest, NegativeSizeIsRejectedWithAClearError) {
  course::DeviceBuffer<float> buffer(16);
  try {
    course::impl::vector_add(buffer.data(), buffer.data(), buffer.data(), -5);
    FAIL() << "vector_add accepted n = -5";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("-5"), std::string::npos)
        << "the message should show the bad value: " << error.what();
  }
}

TEST_F(VectorAddArgumentsTest, RunsOnTheGivenStream) {
  const std::int64_t n = 100003;
  const auto a = course::random_uniform<float>(n, course::test_seed() + 2);
  const auto b = course::random_uniform<float>(n, course::test_seed() + 3);
  std::vector<double> expected(n);
  for (std::int64_t i = 0; i < n; ++i) expected[i] = static_cast<double>(a[i]) + b[i];

  auto device_a = course::DeviceBuffer<float>::from_host(a);
  auto device_b = course::DeviceBuffer<float>::from_host(b);
  course::DeviceBuffer<float> device_c(n);
  device_c.poison();

  EXPECT_TRUE(course::runs_on_given_stream([&](cudaStream_t stream) {
    course::impl::vector_add(device_a.data(), device_b.data(), device_c.data(), n, stream);
  })) << kHint << " (launch on `stream`, the fourth launch parameter)";
  EXPECT_TRUE(course::verify(device_c.to_host(), expected, course::tolerance_for(course::Dtype::fp32)))
      << kHint;
}

}  // namespace
