#include <gtest/gtest.h>

#include <cstdint>
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

}  // namespace
