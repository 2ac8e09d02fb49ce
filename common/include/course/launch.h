// Small helpers every launcher uses.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace course {

// Number of blocks of `divisor` items needed to cover `count` items, rounding up:
// ceil_div(1000, 256) == 4. The last block usually has threads with nothing to do,
// which is why every kernel checks its index against the size.
template <typename T>
constexpr T ceil_div(T count, T divisor) {
  return (count + divisor - 1) / divisor;
}

// Throws std::invalid_argument("<function>: <message>") when `condition` is false.
// Launchers use it to reject bad sizes before anything touches the GPU.
inline void require(bool condition, const char* function, const std::string& message) {
  if (!condition) throw std::invalid_argument(std::string(function) + ": " + message);
}

}  // namespace course
