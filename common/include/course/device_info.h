// Facts about the GPU, read from the device itself rather than typed in.
#pragma once

#include <cstddef>
#include <string>

namespace course {

struct DeviceFacts {
  int index = 0;
  std::string name;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int sm_count = 0;               // streaming multiprocessors
  int memory_clock_khz = 0;       // peak memory clock
  int memory_bus_width_bits = 0;  // width of the DRAM interface
  std::size_t l2_cache_bytes = 0;
  std::size_t global_memory_bytes = 0;
  double peak_dram_gbps = 0.0;  // theoretical DRAM bandwidth, GB/s (1e9 bytes per second)
};

// True when a CUDA GPU can be used; otherwise false, with the reason in *why_not
// (no driver, no device, ...). Never throws.
bool cuda_device_available(std::string* why_not = nullptr);

// Reads the facts of one device. Throws course::CudaError when there is none.
DeviceFacts query_device(int device = 0);

// Theoretical DRAM bandwidth in GB/s: the memory transfers data on both clock edges
// (double data rate), so bytes per second = 2 * clock * bus width in bytes.
// H200: 2 * 3201 MHz * 6016 bit / 8 = 4814 GB/s.
constexpr double theoretical_dram_bandwidth_gbps(int memory_clock_khz, int bus_width_bits) {
  return 2.0 * (memory_clock_khz * 1e3) * (bus_width_bits / 8.0) / 1e9;
}

}  // namespace course
