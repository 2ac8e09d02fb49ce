// Seeded random inputs.
//
// Tests never use zeros or constants: a kernel that writes nothing, copies its input or
// reads the wrong element can still match on such data. They use random values from a
// fixed seed, so a failure reproduces exactly. Set COURSE_SEED=<number> to try others.
//
//   std::vector<float> x = course::random_uniform<float>(n, course::test_seed() + 1);
//
// The generator is a counter-based hash (splitmix64): element i depends only on (seed, i),
// so the values are the same on every compiler and standard library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace course {

// The seed the tests start from: COURSE_SEED from the environment, or a fixed default.
std::uint64_t test_seed();

// A well-mixed 64-bit hash of (seed, index).
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in [0, 1), with 53 random bits.
constexpr double uniform_unit(std::uint64_t seed, std::uint64_t index) {
  return static_cast<double>(splitmix64(seed * 0x2545F4914F6CDD1Dull + index) >> 11) *
         (1.0 / 9007199254740992.0);
}

// n values uniform in [low, high), converted to T (float, double, __half, ...).
template <typename T>
std::vector<T> random_uniform(std::size_t n, std::uint64_t seed, double low = -1.0,
                              double high = 1.0) {
  std::vector<T> values(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double u = uniform_unit(seed, i);
    values[i] = static_cast<T>(static_cast<float>(low + (high - low) * u));
  }
  return values;
}

}  // namespace course
