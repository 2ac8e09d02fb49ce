#include <gtest/gtest.h>

#include <cstdint>

#include "course/launch.h"

namespace {

TEST(CeilDiv, RoundsUp) {
  EXPECT_EQ(course::ceil_div(0, 256), 0);
  EXPECT_EQ(course::ceil_div(1, 256), 1);
  EXPECT_EQ(course::ceil_div(256, 256), 1);
  EXPECT_EQ(course::ceil_div(257, 256), 2);
  EXPECT_EQ(course::ceil_div<std::int64_t>((1ll << 40) + 1, 1024), (1ll << 30) + 1);
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
