#include "course/random.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace course {

std::uint64_t test_seed() {
  constexpr std::uint64_t kDefaultSeed = 20240611;
  const char* from_env = std::getenv("COURSE_SEED");
  if (from_env == nullptr || *from_env == '\0') return kDefaultSeed;
  try {
    return std::stoull(from_env);
  } catch (const std::exception&) {
    throw std::invalid_argument(std::string("COURSE_SEED must be a number, got '") + from_env + "'");
  }
}

}  // namespace course
