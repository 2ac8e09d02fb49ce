#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "course/launch.h"

namespace {

TEST(CeilDiv, RoundsUp) {
  EXPECT_EQ(course::ceil_div(0, 256), 0);
  EXPECT_EQ(course::ceil_div(1, 256), 1);
  EXPECT_EQ(course::ceil_div(256, 256), 1);
  EXPECT_EQ(course::ceil_div(257, 256), 2);
  EXPECT_EQ(course::ceil_div<std::int64_t>((1ll << 40) + 1, 1024), (1ll << 30) + 1);
}

TEST(CeilDiv, MixesIntegerTypesInTheWiderOne) {
  // A 64-bit element count over an int block size, as every launcher writes it.
  const std::int64_t n = (std::int64_t{1} << 40) + 1;
  constexpr int kElementsPerBlock = 1024;
  static_assert(std::is_same_v<decltype(course::ceil_div(n, kElementsPerBlock)), std::int64_t>,
                "ceil_div(int64_t, int) must compute in 64 bits");
  EXPECT_EQ(course::ceil_div(n, kElementsPerBlock), (std::int64_t{1} << 30) + 1);
  EXPECT_EQ(course::ceil_div(1000, std::int64_t{256}), 4);
  static_assert(course::ceil_div(std::int64_t{1000}, 256) == 4, "ceil_div is constexpr");
}

TEST(Require, ThrowsWithTheFunctionName) {
  EXPECT_NO_THROW(course::require(true, "f", "never shown"));
  try {
    course::require(false, "vector_add", "n must be >= 0, got -3");
    FAIL() << "require(false, ...) did not throw";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "vector_add: n must be >= 0, got -3");
  }
}

TEST(GridBlocks1d, RoundsUpAndChecksTheLimitInX) {
  EXPECT_EQ(course::grid_blocks_1d("f", 0, 256), 0u);
  EXPECT_EQ(course::grid_blocks_1d("f", 1, 256), 1u);
  EXPECT_EQ(course::grid_blocks_1d("f", 1000, 256), 4u);
  // The most a grid may hold in x, and one block more.
  EXPECT_EQ(course::grid_blocks_1d("f", course::kMaxGridBlocksX * 256, 256), 2147483647u);
  try {
    course::grid_blocks_1d("conv", course::kMaxGridBlocksX * 256 + 1, 256);
    FAIL() << "a grid of 2^31 blocks was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("conv: "), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("2147483648 blocks"), std::string::npos) << error.what();
  }
  EXPECT_THROW(course::grid_blocks_1d("f", -1, 256), std::invalid_argument);
  EXPECT_THROW(course::grid_blocks_1d("f", 10, 0), std::invalid_argument);
}

}  // namespace
