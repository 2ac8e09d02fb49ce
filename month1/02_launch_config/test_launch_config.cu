// Tests for exercise m1.02 (launch configuration). The same tests grade your skeleton and
// the reference solution.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "course/testing.h"
#include "launch_config.h"

namespace {

constexpr const char* kGridStrideHint =
    "look at TODO(m1.02a) (the grid-stride loop in vector_add_grid_stride_kernel) and "
    "TODO(m1.02b) (vector_add_grid_stride: checks, grid size, launch) in "
    "month1/02_launch_config/launch_config.cu";
constexpr const char* kFillHint =
    "look at TODO(m1.02b) (blocks_to_fill_gpu) in month1/02_launch_config/launch_config.cu";
constexpr const char* kFloat4Hint =
    "look at TODO(m1.02c) (vector_add_float4_kernel: scalar head, float4 body, scalar tail) "
    "and TODO(m1.02d) (vector_add_float4: alignment and launch) in "
    "month1/02_launch_config/launch_config.cu";

// Every array sits between guard zones the kernel must leave alone (course::GuardedBuffer):
// the front guard is 4096 bytes, so an array placed `offset` floats after it is exactly
// 4 * offset bytes past a 16-byte boundary (cudaMalloc returns 256-byte aligned memory).

// Where each array starts, in floats past a 16-byte boundary.
struct Offsets {
  int a = 0;
  int b = 0;
  int c = 0;
};
std::ostream& operator<<(std::ostream& out, const Offsets& o) {
  return out << "{a+" << o.a << ", b+" << o.b << ", c+" << o.c << "}";
}

using AddFn = std::function<void(const float* a, const float* b, float* c, std::int64_t n)>;

// Random inputs for one size and their float64 sums, made once per test.
struct Inputs {
  explicit Inputs(std::int64_t count)
      : n(count),
        seed(course::test_seed()),
        a(course::random_uniform<float>(count, seed)),
        b(course::random_uniform<float>(count, seed + 1)),
        expected(count) {
    for (std::int64_t i = 0; i < n; ++i) expected[i] = static_cast<double>(a[i]) + b[i];
  }
  std::int64_t n;
  std::uint64_t seed;
  std::vector<float> a;
  std::vector<float> b;
  std::vector<double> expected;
};

// Runs `add` on the inputs placed at `offsets`, between poisoned guard zones, and checks the
// result against the float64 reference and the guards for stray writes.
void check_vector_add(const Inputs& in, Offsets offsets, const AddFn& add,
                      const std::string& hint) {
  const std::int64_t n = in.n;
  // Every buffer: [guard | offset | n elements | guard], all poisoned (NaN) first.
  auto device_a = course::GuardedBuffer<float>::from_host(in.a, offsets.a);
  auto device_b = course::GuardedBuffer<float>::from_host(in.b, offsets.b);
  course::GuardedBuffer<float> device_c(static_cast<std::size_t>(n), offsets.c);

  add(device_a.data(), device_b.data(), device_c.data(), n);
  CUDA_CHECK(cudaDeviceSynchronize());  // errors inside the kernel surface here

  const auto c = device_c.download();
  EXPECT_TRUE(course::verify(c.values, in.expected, course::tolerance_for(course::Dtype::fp32)))
      << "n = " << n << ", pointers " << offsets << ", seed = " << in.seed << ": " << hint;
  EXPECT_FALSE(c.first_stray_write)
      << "the kernel wrote outside c[0, n) (n = " << n << ", pointers " << offsets << "): element "
      << c.first_stray_write.value_or(0) << " relative to c was changed. " << hint;
}

// 0 and 1: the smallest cases. 3, 4, 5: less than, exactly and just over one float4.
// 511, 512, 513: around a multiple of the block size. 2^20 + 7: many blocks and a ragged
// tail. 2^26: a size where each thread of a GPU-filling grid loops many times.
const std::vector<std::int64_t> kSizes = {0, 1, 3, 4, 5, 511, 512, 513, (1 << 20) + 7, 1 << 26};

// --- vector_add_grid_stride ---------------------------------------------------------------

class GridStrideTest : public course::GpuTest,
                       public ::testing::WithParamInterface<std::int64_t> {};

TEST_P(GridStrideTest, MatchesCpuReferenceForEveryBlockSize) {
  const Inputs inputs(GetParam());
  for (const int threads : {32, 64, 128, 256, 512, 1024}) {
    SCOPED_TRACE("threads_per_block = " + std::to_string(threads));
    check_vector_add(
        inputs, {},
        [threads](const float* a, const float* b, float* c, std::int64_t n) {
          course::impl::vector_add_grid_stride(a, b, c, n, threads);
        },
        std::string(kGridStrideHint) + " (threads_per_block = " + std::to_string(threads) + ")");
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, GridStrideTest, ::testing::ValuesIn(kSizes),
                         [](const auto& info) { return "n" + std::to_string(info.param); });

// A grid much smaller than the array: only a loop that strides over the whole grid reaches
// every element. A grid larger than needed: the extra threads must do nothing.
class GridStrideBlocksTest : public course::GpuTest, public ::testing::WithParamInterface<int> {};

TEST_P(GridStrideBlocksTest, AnyGridSizeCoversTheWholeArray) {
  const int blocks = GetParam();
  check_vector_add(
      Inputs((1 << 20) + 7), {},
      [blocks](const float* a, const float* b, float* c, std::int64_t n) {
        course::impl::vector_add_grid_stride(a, b, c, n, 128, blocks);
      },
      std::string(kGridStrideHint) + " (128 threads per block, blocks = " + std::to_string(blocks) +
          ": with few blocks each thread must loop)");
}

INSTANTIATE_TEST_SUITE_P(Blocks, GridStrideBlocksTest, ::testing::Values(1, 3, 1000, 20000),
                         [](const auto& info) { return "blocks" + std::to_string(info.param); });

// --- blocks_to_fill_gpu -------------------------------------------------------------------

class FillGpuTest : public course::GpuTest, public ::testing::WithParamInterface<int> {};

TEST_P(FillGpuTest, IsMultiprocessorsTimesResidentBlocks) {
  const int threads = GetParam();
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  int multiprocessors = 0, max_blocks_per_sm = 0, max_threads_per_sm = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  CUDA_CHECK(
      cudaDeviceGetAttribute(&max_blocks_per_sm, cudaDevAttrMaxBlocksPerMultiprocessor, device));
  CUDA_CHECK(
      cudaDeviceGetAttribute(&max_threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device));
  // An SM holds at most max_blocks_per_sm blocks and max_threads_per_sm threads (32 and
  // 2048 on Hopper). Registers can lower that: 65536 per SM are 32 per thread at 2048
  // threads, and how many a kernel needs depends on the compiler. The grid-stride kernel
  // needs far fewer than 64, so at least 1024 threads per SM always fit.
  const int most = std::min(max_blocks_per_sm, max_threads_per_sm / threads);
  const int fewest = std::min(most, (1024 + threads - 1) / threads);
  const int blocks = course::impl::blocks_to_fill_gpu(threads);
  EXPECT_TRUE(blocks > 0 && blocks % multiprocessors == 0 && blocks / multiprocessors >= fewest &&
              blocks / multiprocessors <= most)
      << "blocks_to_fill_gpu(" << threads << ") = " << blocks << ", expected " << multiprocessors
      << " SMs times the blocks one SM holds: at most min(" << max_blocks_per_sm << " blocks, "
      << max_threads_per_sm << " / " << threads << " threads) = " << most
      << " (fewer only if registers run out, never fewer than " << fewest
      << " for this kernel); the occupancy calculator knows the exact number. " << kFillHint;
}

INSTANTIATE_TEST_SUITE_P(BlockSizes, FillGpuTest, ::testing::Values(32, 64, 128, 256, 512, 1024),
                         [](const auto& info) { return "threads" + std::to_string(info.param); });

// --- argument checks ----------------------------------------------------------------------

// 0 and negative: no threads. 16: less than a warp. 48 and 1000: CUDA would run them, but
// the last warp of each block is partly idle. 1025 and 2048: more than a block can hold.
class BadBlockSizeTest : public course::GpuTest, public ::testing::WithParamInterface<int> {};

TEST_P(BadBlockSizeTest, IsRejectedBeforeLaunchWithTheValueInTheMessage) {
  const int threads = GetParam();
  const std::int64_t n = 1000;
  course::DeviceBuffer<float> a(n), b(n), c(n);
  a.poison();
  b.poison();
  try {
    course::impl::vector_add_grid_stride(a.data(), b.data(), c.data(), n, threads);
    CUDA_CHECK(cudaDeviceSynchronize());
    ADD_FAILURE() << "vector_add_grid_stride accepted threads_per_block = " << threads
                  << "; it should throw std::invalid_argument. " << kGridStrideHint;
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find(std::to_string(threads)), std::string::npos)
        << "the message should show the bad value: " << error.what();
  } catch (const course::CudaError& error) {
    ADD_FAILURE() << "CUDA rejected the launch (" << error.what() << "), but the launcher "
                  << "should reject threads_per_block = " << threads << " itself, before "
                  << "launching, with std::invalid_argument. " << kGridStrideHint;
  }
  cudaGetLastError();  // leave no launch error behind for the next test
}

INSTANTIATE_TEST_SUITE_P(BlockSizes, BadBlockSizeTest,
                         ::testing::Values(0, -32, 16, 48, 1000, 1025, 2048), [](const auto& info) {
                           return info.param < 0 ? "minus" + std::to_string(-info.param)
                                                 : std::to_string(info.param);
                         });

class LaunchConfigArgumentsTest : public course::GpuTest {};

TEST_F(LaunchConfigArgumentsTest, BlocksToFillGpuRejectsABadBlockSize) {
  try {
    course::impl::blocks_to_fill_gpu(48);
    FAIL() << "blocks_to_fill_gpu accepted threads_per_block = 48. " << kFillHint;
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("48"), std::string::npos)
        << "the message should show the bad value: " << error.what();
  }
}

TEST_F(LaunchConfigArgumentsTest, NegativeBlocksIsRejected) {
  course::DeviceBuffer<float> buffer(16);
  try {
    course::impl::vector_add_grid_stride(buffer.data(), buffer.data(), buffer.data(), 16, 256, -3);
    FAIL() << "vector_add_grid_stride accepted blocks = -3. " << kGridStrideHint;
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("-3"), std::string::npos)
        << "the message should show the bad value: " << error.what();
  }
  cudaGetLastError();
}

TEST_F(LaunchConfigArgumentsTest, NegativeSizeIsRejected) {
  course::DeviceBuffer<float> buffer(16);
  for (const auto& [name, call] : std::vector<std::pair<std::string, std::function<void()>>>{
           {"vector_add_grid_stride",
            [&] {
              course::impl::vector_add_grid_stride(buffer.data(), buffer.data(), buffer.data(), -5,
                                                   256);
            }},
           {"vector_add_float4", [&] {
              course::impl::vector_add_float4(buffer.data(), buffer.data(), buffer.data(), -5);
            }}}) {
    try {
      call();
      ADD_FAILURE() << name << " accepted n = -5";
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find("-5"), std::string::npos)
          << "the message should show the bad value: " << error.what();
    }
  }
}

// --- vector_add_float4 --------------------------------------------------------------------

class Float4Test : public course::GpuTest, public ::testing::WithParamInterface<std::int64_t> {};

// Aligned; all three 1, 2 or 3 floats past a 16-byte boundary (a head of 3, 2 or 1 floats
// brings them to the next one); and mixes that no shift aligns at once (float4 impossible).
TEST_P(Float4Test, MatchesCpuReferenceForEveryAlignment) {
  const Inputs inputs(GetParam());
  for (const Offsets& offsets :
       {Offsets{0, 0, 0}, Offsets{1, 1, 1}, Offsets{2, 2, 2}, Offsets{3, 3, 3}, Offsets{1, 2, 3},
        Offsets{0, 0, 1}, Offsets{2, 0, 0}}) {
    std::ostringstream trace;
    trace << "pointers " << offsets;
    SCOPED_TRACE(trace.str());
    check_vector_add(
        inputs, offsets,
        [](const float* a, const float* b, float* c, std::int64_t n) {
          course::impl::vector_add_float4(a, b, c, n);
        },
        kFloat4Hint);
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, Float4Test, ::testing::ValuesIn(kSizes),
                         [](const auto& info) { return "n" + std::to_string(info.param); });

TEST_F(LaunchConfigArgumentsTest, Float4RunsOnTheGivenStream) {
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
    course::impl::vector_add_float4(device_a.data(), device_b.data(), device_c.data(), n, stream);
  })) << kFloat4Hint << " (launch on `stream`, the fourth launch parameter)";
  EXPECT_TRUE(
      course::verify(device_c.to_host(), expected, course::tolerance_for(course::Dtype::fp32)))
      << kFloat4Hint << " (launch on `stream`, the fourth launch parameter)";
}

}  // namespace
