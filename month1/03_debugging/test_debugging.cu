// Tests for exercise m1.03 (debugging). The same tests grade your skeleton and the
// reference solution.
//
// A kernel that reads or writes outside its arrays can crash (an "illegal address" error
// that breaks every later CUDA call in the program) or silently corrupt other data. So these
// tests never hand row_sum an array of the exact size: they put it inside a larger
// allocation, between guard zones filled with NaN. A read outside the matrix then turns a
// sum into NaN, a write outside `sums` changes a guard, and both are reported as such,
// without crashing and without disturbing the tests that run after.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "course/testing.h"
#include "debugging.h"

namespace {

constexpr const char* kAllocHint =
    "look at TODO(m1.03a) (check the status of cudaMalloc and cudaFree) in "
    "month1/03_debugging/debugging.cu";
constexpr const char* kLaunchHint =
    "look at TODO(m1.03b) (check the launch) in month1/03_debugging/debugging.cu";
constexpr const char* kOutOfBoundsHint =
    "look at TODO(m1.03c) (row_sum_kernel reads outside the matrix) in "
    "month1/03_debugging/debugging.cu; README.md shows how compute-sanitizer finds the line";
constexpr const char* kRowSumHint =
    "look at TODO(m1.03c) (reads outside the matrix) and TODO(m1.03d) (adds up the wrong "
    "elements) in month1/03_debugging/debugging.cu. Which shapes pass and which fail?";

// ---- Part (a): error checks --------------------------------------------------------------

class ErrorChecksTest : public course::GpuTest {};

TEST_F(ErrorChecksTest, FailedAllocationThrowsCudaErrorNamingCudaMalloc) {
  // 2^48 floats are 1 PiB: no GPU has that, so cudaMalloc must fail.
  constexpr std::int64_t kAbsurdCount = std::int64_t{1} << 48;
  try {
    float* pointer = course::impl::allocate_device_floats(kAbsurdCount);
    const cudaError_t unnoticed = cudaGetLastError();
    ADD_FAILURE() << "allocate_device_floats(2^48) returned " << pointer
                  << " without an error, yet cudaMalloc failed with " << cudaGetErrorName(unnoticed)
                  << ". " << kAllocHint;
  } catch (const course::CudaError& error) {
    EXPECT_EQ(error.code(), cudaErrorMemoryAllocation) << error.what();
    EXPECT_NE(std::string(error.what()).find("cudaMalloc"), std::string::npos)
        << "the message should name the failing call: " << error.what();
  }
  // A failed call is also remembered as the "last error", which the next cudaGetLastError()
  // (say, a later launch check) would report as its own. Clear it (README.md explains).
  cudaGetLastError();
}

TEST_F(ErrorChecksTest, FailedFreeThrowsCudaErrorNamingCudaFree) {
  float* pointer = course::impl::allocate_device_floats(1024);
  ASSERT_NE(pointer, nullptr);
  // pointer + 1 is inside the allocation but is not what cudaMalloc returned: cudaFree
  // refuses it and reports an error.
  try {
    course::impl::free_device_floats(pointer + 1);
    const cudaError_t unnoticed = cudaGetLastError();
    ADD_FAILURE() << "free_device_floats(pointer + 1) returned without an error, yet cudaFree "
                  << "failed with " << cudaGetErrorName(unnoticed) << ". " << kAllocHint;
  } catch (const course::CudaError& error) {
    EXPECT_NE(std::string(error.what()).find("cudaFree"), std::string::npos)
        << "the message should name the failing call: " << error.what();
  }
  cudaGetLastError();
  CUDA_CHECK(cudaFree(pointer));
}

TEST_F(ErrorChecksTest, AllocationThatFitsWorks) {
  float* pointer = course::impl::allocate_device_floats(1000);
  ASSERT_NE(pointer, nullptr) << kAllocHint;
  CUDA_CHECK(cudaMemset(pointer, 0, 1000 * sizeof(float)));
  course::impl::free_device_floats(pointer);
}

TEST_F(ErrorChecksTest, NegativeCountIsRejected) {
  try {
    course::impl::allocate_device_floats(-5);
    FAIL() << "allocate_device_floats accepted count = -5";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("-5"), std::string::npos)
        << "the message should show the bad value: " << error.what();
  }
}

// Block sizes CUDA accepts: the kernel writes out[t] = t for every thread t and nothing else.
class LaunchTest : public course::GpuTest, public ::testing::WithParamInterface<int> {};

TEST_P(LaunchTest, ValidBlockSizeRunsAndWritesEveryThreadIndex) {
  const int threads = GetParam();
  constexpr int kSize = 2048;
  course::DeviceBuffer<float> out(kSize);
  out.poison();
  course::impl::launch_with_block_size(out.data(), threads);
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> values = out.to_host();
  std::vector<double> expected(threads);
  for (int t = 0; t < threads; ++t) expected[t] = t;
  EXPECT_TRUE(course::verify(std::vector<float>(values.begin(), values.begin() + threads), expected,
                             course::tolerance_for(course::Dtype::fp32)))
      << kLaunchHint;
  bool rest_untouched = true;
  for (int i = threads; i < kSize; ++i) rest_untouched &= course::is_poison(values[i]);
  EXPECT_TRUE(rest_untouched) << "the kernel wrote past out[" << threads - 1 << "]";
}

INSTANTIATE_TEST_SUITE_P(BlockSizes, LaunchTest, ::testing::Values(1, 32, 1000, 1024),
                         [](const auto& info) { return "threads" + std::to_string(info.param); });

// Block sizes CUDA refuses: more than 1024 threads per block.
class BadLaunchTest : public course::GpuTest, public ::testing::WithParamInterface<int> {};

TEST_P(BadLaunchTest, SurfacesAsCudaErrorFromTheLaunchCheck) {
  const int threads = GetParam();
  course::DeviceBuffer<float> out(4096);
  try {
    course::impl::launch_with_block_size(out.data(), threads);
    const cudaError_t unnoticed = cudaGetLastError();
    ADD_FAILURE() << "launch_with_block_size(" << threads << ") returned normally, but the launch "
                  << "failed with " << cudaGetErrorName(unnoticed) << " ("
                  << cudaGetErrorString(unnoticed) << ") that nobody checked. " << kLaunchHint;
  } catch (const course::CudaError& error) {
    // Which code a too-large block gets depends on the CUDA version: CUDA 12 says
    // cudaErrorInvalidConfiguration, CUDA 13 cudaErrorInvalidValue. Either is right.
    EXPECT_TRUE(error.code() == cudaErrorInvalidConfiguration ||
                error.code() == cudaErrorInvalidValue)
        << "expected cudaErrorInvalidConfiguration or cudaErrorInvalidValue, got "
        << cudaGetErrorName(error.code()) << ": " << error.what();
    const std::string message = error.what();
    EXPECT_NE(message.find("cudaGetLastError"), std::string::npos)
        << "the error should come from the check right after the launch (CUDA_CHECK_LAUNCH): "
        << message;
    EXPECT_NE(message.find("debugging.cu"), std::string::npos)
        << "the message should point at the launcher's file and line: " << message;
    // cudaGetLastError() reads the error and clears it; cudaPeekAtLastError() only reads it.
    EXPECT_EQ(cudaGetLastError(), cudaSuccess)
        << "the launch error is still pending after the check; it would be reported again "
        << "by the next check anywhere in the program. " << kLaunchHint;
  }
  cudaGetLastError();  // leave nothing behind for the next test
}

INSTANTIATE_TEST_SUITE_P(BlockSizes, BadLaunchTest, ::testing::Values(1025, 2048),
                         [](const auto& info) { return "threads" + std::to_string(info.param); });

// ---- Part (b): row sums ------------------------------------------------------------------

struct Shape {
  int rows;
  int cols;
};
std::ostream& operator<<(std::ostream& out, const Shape& s) {
  return out << s.rows << "x" << s.cols;
}

// Small integers, so every sum is exact in float32 whatever the order of the additions
// (|sum| <= 8 * cols, far below 2^24). A wrong element or a missing one changes the sum.
std::vector<float> integer_matrix(const Shape& shape, std::uint64_t seed) {
  std::vector<float> values(static_cast<std::size_t>(shape.rows) * shape.cols);
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<float>(std::floor(17.0 * course::uniform_unit(seed, i)) - 8.0);
  }
  return values;
}

std::vector<double> reference_row_sums(const std::vector<float>& matrix, const Shape& shape) {
  std::vector<double> sums(shape.rows, 0.0);
  for (int r = 0; r < shape.rows; ++r) {
    for (int c = 0; c < shape.cols; ++c)
      sums[r] += matrix[static_cast<std::size_t>(r) * shape.cols + c];
  }
  return sums;
}

struct GuardedRowSum {
  std::vector<float> sums;        // sums[0, rows) as the kernel left them
  std::int64_t stray_write = -1;  // first guard element of `sums` that changed, relative to sums
};

// Runs impl::row_sum with the matrix and the sums each between NaN guard zones. The zone
// after the matrix holds rows + cols + 1024 floats, more than any index a row-sum kernel
// with the usual mistakes can reach, so a wrong index reads NaN instead of faulting.
GuardedRowSum run_guarded_row_sum(const Shape& shape, const std::vector<float>& matrix) {
  using Guarded = course::GuardedBuffer<float>;
  const std::size_t reach = static_cast<std::size_t>(shape.rows) + shape.cols + Guarded::kGuard;
  auto device_matrix = Guarded::from_host(matrix, /*offset=*/0, /*guard_after=*/reach);
  Guarded device_sums(static_cast<std::size_t>(shape.rows));

  course::impl::row_sum(device_matrix.data(), device_sums.data(), shape.rows, shape.cols);
  CUDA_CHECK(cudaDeviceSynchronize());

  auto sums = device_sums.download();
  GuardedRowSum result;
  result.sums = std::move(sums.values);
  result.stray_write = sums.first_stray_write.value_or(-1);
  return result;
}

class RowSumTest : public course::GpuTest, public ::testing::WithParamInterface<Shape> {};

TEST_P(RowSumTest, ReadsOnlyInsideTheMatrixAndWritesOnlySums) {
  const Shape shape = GetParam();
  const auto matrix = integer_matrix(shape, course::test_seed());
  const GuardedRowSum result = run_guarded_row_sum(shape, matrix);

  // The matrix holds no NaN, so a NaN sum means the kernel read a guard element. (A sum
  // that is still the poison pattern was never written at all; that is reported apart.)
  int nan_rows = 0, first_nan = -1, unwritten = 0;
  for (int r = 0; r < shape.rows; ++r) {
    const float value = result.sums[r];
    if (course::is_poison(value)) {
      ++unwritten;
    } else if (std::isnan(value)) {
      if (first_nan < 0) first_nan = r;
      ++nan_rows;
    }
  }
  EXPECT_EQ(nan_rows, 0) << nan_rows << " of " << shape.rows << " sums are NaN (the first is sums["
                         << first_nan << "]) though the " << shape << " matrix holds no NaN: the "
                         << "kernel read outside the matrix, where the test keeps a zone of NaN. "
                         << kOutOfBoundsHint;
  EXPECT_EQ(unwritten, 0) << unwritten << " of " << shape.rows << " sums were never written";
  EXPECT_EQ(result.stray_write, -1) << "the kernel wrote outside sums[0, " << shape.rows
                                    << "): sums[" << result.stray_write << "] changed";
}

TEST_P(RowSumTest, MatchesCpuReference) {
  const Shape shape = GetParam();
  const std::uint64_t seed = course::test_seed();
  const auto matrix = integer_matrix(shape, seed);
  const GuardedRowSum result = run_guarded_row_sum(shape, matrix);
  EXPECT_TRUE(course::verify(result.sums, reference_row_sums(matrix, shape),
                             course::tolerance_for(course::Dtype::fp32)))
      << "shape " << shape << " (rows x cols), seed = " << seed << ": " << kRowSumHint;
}

// One row, one column, square and non-square, transposed pairs (3x5 and 5x3), rows with no
// columns, rows longer than a block (1023, 769), and more rows than fit in one wave.
INSTANTIATE_TEST_SUITE_P(Shapes, RowSumTest,
                         ::testing::Values(Shape{1, 1}, Shape{1, 1000}, Shape{1000, 1}, Shape{3, 5},
                                           Shape{5, 3}, Shape{17, 33}, Shape{33, 17}, Shape{64, 64},
                                           Shape{5, 0}, Shape{1000, 1023}, Shape{4097, 769}),
                         [](const auto& info) {
                           return "r" + std::to_string(info.param.rows) + "_c" +
                                  std::to_string(info.param.cols);
                         });

class RowSumArgumentsTest : public course::GpuTest {};

TEST_F(RowSumArgumentsTest, NegativeShapeIsRejected) {
  course::DeviceBuffer<float> buffer(16);
  for (const Shape& bad : {Shape{-3, 4}, Shape{4, -7}}) {
    try {
      course::impl::row_sum(buffer.data(), buffer.data(), bad.rows, bad.cols);
      ADD_FAILURE() << "row_sum accepted shape " << bad;
    } catch (const std::invalid_argument& error) {
      const std::string value = std::to_string(bad.rows < 0 ? bad.rows : bad.cols);
      EXPECT_NE(std::string(error.what()).find(value), std::string::npos)
          << "the message should show the bad value: " << error.what();
    }
  }
}

// For compute-sanitizer only (README.md): the same row sums with arrays of the exact size,
// as real code has them, so that memcheck sees every access outside them. Disabled because
// without the sanitizer a kernel that reads outside its arrays may crash the test program.
// Run it with --gtest_also_run_disabled_tests --gtest_filter='*ExactSize*'.
TEST_F(RowSumArgumentsTest, DISABLED_ExactSizeArraysForComputeSanitizer) {
  const Shape shape{17, 33};
  const auto matrix = integer_matrix(shape, course::test_seed());
  auto device_matrix = course::DeviceBuffer<float>::from_host(matrix);
  course::DeviceBuffer<float> device_sums(shape.rows);
  device_sums.poison();
  course::impl::row_sum(device_matrix.data(), device_sums.data(), shape.rows, shape.cols);
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(course::verify(device_sums.to_host(), reference_row_sums(matrix, shape),
                             course::tolerance_for(course::Dtype::fp32)))
      << kRowSumHint;
}

}  // namespace
