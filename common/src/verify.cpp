#include "course/verify.h"

namespace course {

const char* to_string(Dtype dtype) {
  switch (dtype) {
    case Dtype::fp64: return "fp64";
    case Dtype::fp32: return "fp32";
    case Dtype::tf32: return "tf32";
    case Dtype::fp16: return "fp16";
    case Dtype::bf16: return "bf16";
  }
  return "unknown";
}

namespace detail {

std::string describe_mismatch_header(std::size_t mismatches, std::size_t total, Tolerance tol) {
  std::ostringstream message;
  message << mismatches << " of " << total << " elements differ from the reference (pass: "
          << "|out - ref| <= " << tol.atol << " + " << tol.rtol << " * |ref|). First ones:";
  return message.str();
}

}  // namespace detail
}  // namespace course
