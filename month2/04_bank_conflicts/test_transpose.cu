// Tests for exercise m2.04, part 1: the three transposes. The same tests grade your skeleton
// and the reference solution.
#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "bank_conflicts.h"
#include "course/testing.h"

namespace {

using TransposeFn = void (*)(const float* in, float* out, int rows, int cols, cudaStream_t stream);

struct Variant {
  const char* name;
  TransposeFn transpose;
  const char* hint;
};

const Variant kVariants[] = {
    {"naive", course::impl::transpose_naive,
     "transpose_naive is given complete: if it fails, look at the launcher (launch_transpose "
     "and check_transpose_arguments) in month2/04_bank_conflicts/transpose.cu"},
    {"tiled", course::impl::transpose_tiled,
     "look at TODO(m2.04a) (the tiled kernel: load the tile, __syncthreads, store it "
     "transposed, skipping elements outside the matrix) in month2/04_bank_conflicts/transpose.cu"},
    {"padded", course::impl::transpose_padded,
     "transpose_padded runs the kernel of TODO(m2.04a) with the padding of TODO(m2.04b): look "
     "at both in month2/04_bank_conflicts/transpose.cu"},
};

struct Shape {
  int rows;
  int cols;
};

// How GoogleTest shows the parameters of a failing test.
void PrintTo(const Variant& variant, std::ostream* out) { *out << "transpose_" << variant.name; }
void PrintTo(const Shape& shape, std::ostream* out) { *out << shape.rows << " x " << shape.cols; }

// Exact: a transpose moves bits and computes nothing, so every element must be identical.
constexpr course::Tolerance kExact{0.0, 0.0};

std::vector<float> reference_transpose(const std::vector<float>& in, int rows, int cols) {
  std::vector<float> out(in.size());
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      out[static_cast<std::size_t>(c) * rows + r] = in[static_cast<std::size_t>(r) * cols + c];
    }
  }
  return out;
}

bool all_poison(const std::vector<float>& values, std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i) {
    if (!course::is_poison(values[i])) return false;
  }
  return true;
}

class TransposeTest : public course::GpuTest,
                      public ::testing::WithParamInterface<std::tuple<Variant, Shape>> {};

TEST_P(TransposeTest, MatchesTheCpuTransposeAndWritesNothingElse) {
  const auto& [variant, shape] = GetParam();
  const int rows = shape.rows, cols = shape.cols;
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  const std::uint64_t seed = course::test_seed();
  const std::vector<float> in = course::random_uniform<float>(n, seed);
  const std::vector<float> expected = reference_transpose(in, rows, cols);

  auto device_in = course::DeviceBuffer<float>::from_host(in);
  // NaN everywhere, guards included: an element the kernel skips fails the comparison.
  course::GuardedBuffer<float> device_out(n);

  variant.transpose(device_in.data(), device_out.data(), rows, cols, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());  // errors inside the kernel surface here

  const auto out = device_out.download();
  EXPECT_TRUE(course::verify(out.values, expected, kExact))
      << "transpose_" << variant.name << " of a " << rows << " x " << cols
      << " matrix (out is " << cols << " x " << rows << ", out[c * rows + r] = in[r * cols + c]), "
      << "seed " << seed << ": " << variant.hint;
  EXPECT_FALSE(out.first_stray_write)
      << "transpose_" << variant.name << " wrote outside out (" << rows << " x " << cols
      << "): threads whose element is outside the matrix must do nothing. " << variant.hint;
}

// 1 x 1; a single row and a single column (one tile wide, many tiles long); exactly one
// tile; one more than a tile in both directions, and odd; just under and over a multiple of
// the tile with a non-square shape; and a large rectangle whose sides are 2^k + 1.
INSTANTIATE_TEST_SUITE_P(
    Shapes, TransposeTest,
    ::testing::Combine(::testing::ValuesIn(kVariants),
                       ::testing::Values(Shape{1, 1}, Shape{1, 1000}, Shape{1000, 1},
                                         Shape{32, 32}, Shape{33, 65}, Shape{31, 97},
                                         Shape{1023, 1025}, Shape{4097, 2049})),
    [](const auto& info) {
      const Variant& variant = std::get<0>(info.param);
      const Shape& shape = std::get<1>(info.param);
      return std::string(variant.name) + "_" + std::to_string(shape.rows) + "x" +
             std::to_string(shape.cols);
    });

class TransposeArgumentsTest : public course::GpuTest,
                               public ::testing::WithParamInterface<Variant> {};

// Calls the transpose and returns the std::invalid_argument message, or fails.
std::string rejection(const Variant& variant, const float* in, float* out, int rows, int cols) {
  try {
    variant.transpose(in, out, rows, cols, nullptr);
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  ADD_FAILURE() << "transpose_" << variant.name << " accepted rows = " << rows
                << ", cols = " << cols << " (in = " << in << ", out = " << out << ")";
  return "";
}

TEST_P(TransposeArgumentsTest, RejectsBadArgumentsWithAClearError) {
  const Variant& variant = GetParam();
  course::DeviceBuffer<float> in(64 * 64);
  course::DeviceBuffer<float> out(64 * 64);

  const std::string negative_rows = rejection(variant, in.data(), out.data(), -3, 64);
  EXPECT_NE(negative_rows.find("-3"), std::string::npos)
      << "the message should show the bad value: " << negative_rows;
  const std::string negative_cols = rejection(variant, in.data(), out.data(), 64, -7);
  EXPECT_NE(negative_cols.find("-7"), std::string::npos)
      << "the message should show the bad value: " << negative_cols;
  rejection(variant, nullptr, out.data(), 64, 64);
  rejection(variant, in.data(), nullptr, 64, 64);
  // In place, and overlapping by part of the matrix: a one-pass transpose would read
  // elements it has already overwritten.
  rejection(variant, in.data(), in.data(), 64, 64);
  rejection(variant, in.data(), in.data() + 100, 32, 64);
  rejection(variant, in.data() + 100, in.data(), 32, 64);
  // More rows than a grid can hold (65535 blocks in y): rejected before any memory is used.
  rejection(variant, in.data(), out.data(), 65535 * 32 + 1, 1);
}

TEST_P(TransposeArgumentsTest, AnEmptyMatrixIsANoOp) {
  const Variant& variant = GetParam();
  course::DeviceBuffer<float> out(64);
  out.poison();
  course::DeviceBuffer<float> in(64);
  variant.transpose(in.data(), out.data(), 0, 64, nullptr);
  variant.transpose(in.data(), out.data(), 64, 0, nullptr);
  variant.transpose(nullptr, nullptr, 0, 0, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> host = out.to_host();
  EXPECT_TRUE(all_poison(host, 0, host.size()))
      << "transpose_" << variant.name << " wrote to out for an empty matrix";
}

TEST_P(TransposeArgumentsTest, RunsOnTheGivenStream) {
  const Variant& variant = GetParam();
  const int rows = 513, cols = 1031;
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  const std::vector<float> in = course::random_uniform<float>(n, course::test_seed() + 1);
  auto device_in = course::DeviceBuffer<float>::from_host(in);
  course::DeviceBuffer<float> device_out(n);
  device_out.poison();

  EXPECT_TRUE(course::runs_on_given_stream([&](cudaStream_t stream) {
    variant.transpose(device_in.data(), device_out.data(), rows, cols, stream);
  })) << variant.hint << " (launch on `stream`, the fourth launch parameter)";
  EXPECT_TRUE(course::verify(device_out.to_host(), reference_transpose(in, rows, cols), kExact))
      << variant.hint << " (launch on `stream`, the fourth launch parameter)";
}

INSTANTIATE_TEST_SUITE_P(Variants, TransposeArgumentsTest, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
