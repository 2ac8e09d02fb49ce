// verify: compare a kernel's output with a reference, element by element.
//
// An element passes when |actual - expected| <= atol + rtol * |expected|, the rule of
// torch.testing.assert_close. NaN never passes, so a poisoned output element that the
// kernel never wrote always fails. The result is a course::VerifyResult: true or false,
// and on failure a message that says how many elements differ, the first few (index,
// value, expected value), whether a value is still the poison (never written), and the
// largest error over the whole output.
//
// It has no GoogleTest in it, so benchmarks use it too:
//
//   const auto check = course::verify(out, ref, course::tolerance_for(course::Dtype::fp32));
//   if (!check) return course::bench::fail(state, "wrong result: " + check.message());
//
// Tests include course/verify_gtest.h (course/testing.h does), which makes it a GoogleTest
// AssertionResult, message included:
//
//   EXPECT_TRUE(course::verify(out, ref, course::tolerance_for(course::Dtype::fp32)))
//       << "see TODO(m1.01) in vector_add.cu";
#pragma once

#include <cmath>
#include <cstddef>
#include <cstring>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace testing {
class AssertionResult;  // GoogleTest's; defined only where a test includes GoogleTest
}  // namespace testing

namespace course {

// What verify() found: passed, or failed with a message saying where and by how much.
class VerifyResult {
 public:
  static VerifyResult pass() { return VerifyResult(true, ""); }
  static VerifyResult fail(std::string message) { return VerifyResult(false, std::move(message)); }

  explicit operator bool() const { return passed_; }
  bool passed() const { return passed_; }
  const std::string& message() const { return message_; }

  // The GoogleTest adapter, defined in course/verify_gtest.h: a test that includes that
  // header can write EXPECT_TRUE(verify(...)) and see the message on failure.
  inline operator ::testing::AssertionResult() const;

 private:
  VerifyResult(bool passed, std::string message) : passed_(passed), message_(std::move(message)) {}
  bool passed_;
  std::string message_;
};

struct Tolerance {
  double atol;
  double rtol;
};

// The precision the kernel computes in, which decides how close it can get.
enum class Dtype { fp64, fp32, tf32, fp16, bf16 };

const char* to_string(Dtype dtype);

// Default tolerances per dtype, from torch.testing.assert_close where it has one.
// tf32 keeps 10 mantissa bits, like fp16, and gets fp16's relative tolerance.
constexpr Tolerance tolerance_for(Dtype dtype) {
  switch (dtype) {
    case Dtype::fp64: return {1e-7, 1e-7};
    case Dtype::fp32: return {1e-5, 1.3e-6};
    case Dtype::tf32: return {1e-5, 1e-3};
    case Dtype::fp16: return {1e-5, 1e-3};
    case Dtype::bf16: return {1e-5, 1.6e-2};
  }
  return {0.0, 0.0};
}

// Whether `value` is still the poison DeviceBuffer::poison() writes (every byte 0xFF: a NaN
// in float, half and bfloat16), i.e. an element nothing has written since.
template <typename T>
bool is_poison(const T& value) {
  unsigned char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  for (unsigned char b : bytes) {
    if (b != 0xFF) return false;
  }
  return true;
}

namespace detail {

template <typename T>
double to_double(const T& value) {
  return static_cast<double>(static_cast<float>(value));
}
inline double to_double(double value) { return value; }

std::string describe_mismatch_header(std::size_t mismatches, std::size_t total, Tolerance tol);

}  // namespace detail

template <typename T, typename R>
VerifyResult verify(const std::vector<T>& actual, const std::vector<R>& expected, Tolerance tol,
                    std::size_t max_reported = 5) {
  if (actual.size() != expected.size()) {
    return VerifyResult::fail("output has " + std::to_string(actual.size()) +
                              " elements, the reference has " + std::to_string(expected.size()));
  }
  std::size_t mismatches = 0;
  std::size_t worst_index = 0;
  double worst_error = 0.0;
  std::ostringstream first;
  first.precision(9);
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double got = detail::to_double(actual[i]);
    const double want = detail::to_double(expected[i]);
    const double error = std::fabs(got - want);
    // Written so that NaN fails: every comparison with NaN is false.
    const bool ok = error <= tol.atol + tol.rtol * std::fabs(want);
    // The largest error, where a NaN (once seen) counts as the largest.
    if (!std::isnan(worst_error) && (std::isnan(error) || error > worst_error)) {
      worst_error = error;
      worst_index = i;
    }
    if (ok) continue;
    if (mismatches < max_reported) {
      first << "\n  [" << i << "] got " << got;
      if (is_poison(actual[i])) first << " (never written: still the poison value)";
      first << ", expected " << want;
    }
    ++mismatches;
  }
  if (mismatches == 0) return VerifyResult::pass();
  std::ostringstream message;
  message.precision(6);
  message << detail::describe_mismatch_header(mismatches, actual.size(), tol) << first.str();
  if (mismatches > max_reported) message << "\n  ...";
  message << "\n  largest error: " << worst_error << " at [" << worst_index << "]";
  return VerifyResult::fail(message.str());
}

}  // namespace course
