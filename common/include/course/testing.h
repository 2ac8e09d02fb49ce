// GoogleTest support for GPU tests.
//
//   class VectorAddTest : public course::GpuTest {};
//   TEST_F(VectorAddTest, AddsEveryElement) { ... }
//
// GpuTest skips the test (reported as skipped, never as passed) when there is no usable
// GPU, and after each test waits for the GPU and fails the test if a kernel it launched
// crashed, so the error is blamed on the test that caused it.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "course/cuda_check.h"
#include "course/device_buffer.h"
#include "course/device_info.h"
#include "course/impl.h"
#include "course/random.h"
#include "course/verify.h"

namespace course {

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
};

}  // namespace course
