#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>

#include "course/device_info.h"
#include "course/requirements.h"

namespace {

TEST(DeviceInfo, TheoreticalBandwidthOfKnownCards) {
  // H200: HBM3e at 3201 MHz on a 6016-bit bus.
  EXPECT_NEAR(course::theoretical_dram_bandwidth_gbps(3201000, 6016), 4814.3, 0.1);
  // A100 40 GB: HBM2 at 1215 MHz on a 5120-bit bus.
  EXPECT_NEAR(course::theoretical_dram_bandwidth_gbps(1215000, 5120), 1555.2, 0.1);
}

TEST(DeviceInfo, AvailabilityNeverThrowsAndExplainsAbsence) {
  std::string why_not;
  const bool available = course::cuda_device_available(&why_not);
  if (!available) {
    EXPECT_FALSE(why_not.empty());
  } else {
    const course::DeviceFacts facts = course::query_device(0);
    EXPECT_GT(facts.sm_count, 0);
    EXPECT_GT(facts.peak_dram_gbps, 100.0);
    EXPECT_FALSE(facts.name.empty());
  }
}

// COURSE_COMPUTE_CAPABILITY is read strictly: a run meant to emulate a T4 must never run as
// the real GPU because of a typo.
TEST(Requirements, EmulatedComputeCapabilityIsParsedStrictly) {
  const char* saved = std::getenv("COURSE_COMPUTE_CAPABILITY");
  const std::string kept = saved ? saved : "";
  unsetenv("COURSE_COMPUTE_CAPABILITY");
  EXPECT_EQ(course::detail::emulated_compute_capability().major, 0);
  setenv("COURSE_COMPUTE_CAPABILITY", "7.5", 1);
  const course::ComputeCapability t4 = course::detail::emulated_compute_capability();
  EXPECT_EQ(t4.number(), 75);
  EXPECT_EQ(t4.text(), "7.5");
  for (const char* bad : {"75", "sm_75", "7.5x", "7.", "x"}) {
    setenv("COURSE_COMPUTE_CAPABILITY", bad, 1);
    EXPECT_THROW(course::detail::emulated_compute_capability(), std::invalid_argument) << bad;
  }
  if (saved) {
    setenv("COURSE_COMPUTE_CAPABILITY", kept.c_str(), 1);
  } else {
    unsetenv("COURSE_COMPUTE_CAPABILITY");
  }
}

TEST(Requirements, SharedMemoryPerBlockOfTheGpusLearnersHave) {
  EXPECT_EQ(course::detail::shared_memory_per_block_of({7, 5}), 64u * 1024);   // T4
  EXPECT_EQ(course::detail::shared_memory_per_block_of({8, 0}), 163u * 1024);  // A100
  EXPECT_EQ(course::detail::shared_memory_per_block_of({8, 6}), 99u * 1024);   // RTX 3090
  EXPECT_EQ(course::detail::shared_memory_per_block_of({8, 9}), 99u * 1024);   // RTX 4090
  EXPECT_EQ(course::detail::shared_memory_per_block_of({9, 0}), 227u * 1024);  // H100, H200
}

// On a GPU: the checks see the real device, or the older one emulated; a requirement above
// it is a skip reason in the wording ./course grade recognises, and a launcher's error.
TEST(Requirements, ShortfallsNameWhatIsNeededAndWhatTheGpuHas) {
  if (!course::cuda_device_available()) GTEST_SKIP() << "no CUDA GPU on this machine; this test needs one";
  const course::ComputeCapability cc = course::device_compute_capability();
  EXPECT_LE(cc.number(), course::physical_compute_capability().number());
  EXPECT_EQ(course::compute_capability_shortfall(cc.major, cc.minor, "x"), "");
  const std::string above = course::compute_capability_shortfall(cc.major + 1, 0, "a future GPU");
  EXPECT_NE(above.find("needs compute capability " + std::to_string(cc.major + 1) + ".0 (a future GPU)"),
            std::string::npos) << above;
  EXPECT_NE(above.find("this GPU has " + cc.text()), std::string::npos) << above;
  EXPECT_THROW(course::require_compute_capability(cc.major + 1, 0, "a future GPU"),
               course::UnsupportedDevice);
  const std::size_t limit = course::max_shared_memory_per_block();
  EXPECT_GE(limit, 48u * 1024);
  EXPECT_EQ(course::shared_memory_shortfall(limit, "x"), "");
  EXPECT_NE(course::shared_memory_shortfall(limit + 1024, "x").find("KiB of shared memory per block"),
            std::string::npos);
}

}  // namespace
