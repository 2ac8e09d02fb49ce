// The GoogleTest side of course::verify (course/verify.h): a VerifyResult used where
// GoogleTest wants an AssertionResult keeps its message, so
//
//   EXPECT_TRUE(course::verify(out, ref, tol)) << "see TODO(m1.01) in vector_add.cu";
//
// prints what differs. Test code only: course/testing.h includes it. Kernel libraries and
// benchmarks use VerifyResult as it is and link no GoogleTest.
#pragma once

#include <gtest/gtest.h>

#include "course/verify.h"

namespace course {

inline VerifyResult::operator ::testing::AssertionResult() const {
  if (passed_) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << message_;
}

}  // namespace course
