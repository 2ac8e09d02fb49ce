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

#include <functional>
#include <string>

#include "course/cuda_check.h"
#include "course/device_buffer.h"
#include "course/device_info.h"
#include "course/guarded_buffer.h"
#include "course/impl.h"
#include "course/random.h"
#include "course/requirements.h"
#include "course/verify_gtest.h"

namespace course {

// Skips the calling test, with the reason, when the GPU is older than major.minor (or
// COURSE_COMPUTE_CAPABILITY emulates an older one). A macro, because GTEST_SKIP() returns
// from the function it is written in:
//   COURSE_REQUIRE_COMPUTE_CAPABILITY(8, 0, "bfloat16 mma.sync");
#define COURSE_REQUIRE_COMPUTE_CAPABILITY(major, minor, what)                          \
  do {                                                                                   \
    const std::string course_shortfall_ = ::course::compute_capability_shortfall(      \
        (major), (minor), (what));                                                       \
    if (!course_shortfall_.empty()) GTEST_SKIP() << course_shortfall_;                   \
  } while (0)

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
};

// Checks that `launch(stream)` queues its work on the stream it is given, and runs it.
//
// It first waits for the whole GPU (so copies and memsets made on the default stream are
// done), then calls launch(stream) on a new non-blocking stream while that stream is being
// captured into a CUDA graph: work queued on `stream` becomes graph nodes, work sent to the
// default stream is an error during a capture, and a launcher that queued nothing leaves an
// empty graph. If all is well the graph is run and waited for, so the caller can check the
// output next; otherwise the failure says which of those went wrong.
//
//   EXPECT_TRUE(course::runs_on_given_stream([&](cudaStream_t stream) {
//     impl::vector_add(a.data(), b.data(), c.data(), n, stream);
//   })) << kHint;
::testing::AssertionResult runs_on_given_stream(const std::function<void(cudaStream_t)>& launch);

}  // namespace course
