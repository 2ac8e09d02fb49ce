// verify() is what grades every exercise, so it is tested first: it must pass what is
// within tolerance, fail what is not, fail every NaN, and say where the error is.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <vector>

#include "course/verify_gtest.h"

namespace {

using course::Dtype;
using course::tolerance_for;
using course::verify;

std::string failure_message(const course::VerifyResult& result) { return result.message(); }

TEST(Verify, PassesIdenticalValues) {
  const std::vector<float> values = {1.0f, -2.5f, 3.25f};
  EXPECT_TRUE(verify(values, values, tolerance_for(Dtype::fp32)));
}

TEST(Verify, PassesWithinRelativeTolerance) {
  const std::vector<double> expected = {1000.0, -1000.0};
  const std::vector<float> actual = {1000.001f, -1000.001f};  // 1e-6 relative
  EXPECT_TRUE(verify(actual, expected, course::Tolerance{0.0, 2e-6}));
  EXPECT_FALSE(verify(actual, expected, course::Tolerance{0.0, 1e-7}));
}

TEST(Verify, AbsoluteToleranceMattersNearZero) {
  const std::vector<double> expected = {0.0};
  const std::vector<float> actual = {1e-6f};
  EXPECT_TRUE(verify(actual, expected, course::Tolerance{1e-5, 0.0}));
  EXPECT_FALSE(verify(actual, expected, course::Tolerance{1e-7, 1.0}));
}

TEST(Verify, NanNeverPasses) {
  const std::vector<double> expected = {1.0, 2.0};
  const std::vector<float> actual = {1.0f, std::numeric_limits<float>::quiet_NaN()};
  const auto result = verify(actual, expected, course::Tolerance{1e30, 1e30});
  EXPECT_FALSE(result);
  EXPECT_NE(failure_message(result).find("[1] got nan"), std::string::npos) << failure_message(result);
}

TEST(Verify, NamesPoisonedElementsAsNeverWritten) {
  std::vector<float> actual(4, 1.0f);
  std::memset(&actual[2], 0xFF, sizeof(float));  // what DeviceBuffer::poison() writes
  const std::vector<double> expected(4, 1.0);
  const auto result = verify(actual, expected, tolerance_for(Dtype::fp32));
  EXPECT_FALSE(result);
  EXPECT_NE(failure_message(result).find("never written"), std::string::npos)
      << failure_message(result);
}

TEST(Verify, ReportsCountFirstMismatchesAndLargestError) {
  std::vector<float> actual(100, 0.5f);
  const std::vector<double> expected(100, 0.5);
  actual[7] = 0.75f;
  actual[42] = 3.5f;
  const auto result = verify(actual, expected, tolerance_for(Dtype::fp32));
  ASSERT_FALSE(result);
  const std::string message = failure_message(result);
  EXPECT_NE(message.find("2 of 100 elements differ"), std::string::npos) << message;
  EXPECT_NE(message.find("[7] got 0.75, expected 0.5"), std::string::npos) << message;
  EXPECT_NE(message.find("largest error: 3 at [42]"), std::string::npos) << message;
}

TEST(Verify, LimitsTheNumberOfReportedMismatches) {
  const std::vector<float> actual(50, 1.0f);
  const std::vector<double> expected(50, 2.0);
  const std::string message = failure_message(verify(actual, expected, tolerance_for(Dtype::fp32), 3));
  EXPECT_NE(message.find("[2]"), std::string::npos) << message;
  EXPECT_EQ(message.find("[3] got"), std::string::npos) << message;
}

TEST(Verify, SizeMismatchFails) {
  const std::vector<float> actual(3, 1.0f);
  const std::vector<double> expected(4, 1.0);
  const auto result = verify(actual, expected, tolerance_for(Dtype::fp32));
  EXPECT_FALSE(result);
  EXPECT_NE(failure_message(result).find("3 elements"), std::string::npos);
}

TEST(Verify, EmptyOutputsMatch) {
  EXPECT_TRUE(verify(std::vector<float>{}, std::vector<double>{}, tolerance_for(Dtype::fp32)));
}

TEST(Verify, ToleranceTableLoosensWithPrecision) {
  EXPECT_LT(tolerance_for(Dtype::fp64).rtol, tolerance_for(Dtype::fp32).rtol);
  EXPECT_LT(tolerance_for(Dtype::fp32).rtol, tolerance_for(Dtype::tf32).rtol);
  EXPECT_LE(tolerance_for(Dtype::fp16).rtol, tolerance_for(Dtype::bf16).rtol);
  EXPECT_STREQ(course::to_string(Dtype::bf16), "bf16");
}

}  // namespace
