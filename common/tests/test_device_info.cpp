#include <gtest/gtest.h>

#include "course/device_info.h"

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

}  // namespace
