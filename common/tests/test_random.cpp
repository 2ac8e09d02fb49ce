#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "course/random.h"

namespace {

TEST(Random, SameSeedSameValues) {
  EXPECT_EQ(course::random_uniform<float>(1000, 7), course::random_uniform<float>(1000, 7));
}

TEST(Random, DifferentSeedsDifferentValues) {
  EXPECT_NE(course::random_uniform<float>(1000, 7), course::random_uniform<float>(1000, 8));
}

TEST(Random, ValuesStayInRangeAndAreNotConstant) {
  const auto values = course::random_uniform<double>(10000, 3, -2.0, 5.0);
  const auto [low, high] = std::minmax_element(values.begin(), values.end());
  EXPECT_GE(*low, -2.0);
  EXPECT_LT(*high, 5.0);
  EXPECT_LT(*low, -1.9);  // spread over the whole range, not bunched
  EXPECT_GT(*high, 4.9);
  EXPECT_GT(std::set<double>(values.begin(), values.end()).size(), 9990u);
}

TEST(Random, PrefixIsStableWhenTheSizeGrows) {
  // Element i depends on (seed, i) only, so a test that grows a size keeps its first values.
  const auto small = course::random_uniform<float>(10, 11);
  const auto large = course::random_uniform<float>(100, 11);
  EXPECT_TRUE(std::equal(small.begin(), small.end(), large.begin()));
}

TEST(Random, SeedComesFromTheEnvironment) {
  ::setenv("COURSE_SEED", "12345", 1);
  EXPECT_EQ(course::test_seed(), 12345u);
  ::setenv("COURSE_SEED", "not-a-number", 1);
  EXPECT_THROW(course::test_seed(), std::invalid_argument);
  ::unsetenv("COURSE_SEED");
  EXPECT_NE(course::test_seed(), 0u);
}

}  // namespace
