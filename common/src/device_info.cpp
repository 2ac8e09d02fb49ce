#include "course/device_info.h"

#include <cuda_runtime.h>

#include "course/cuda_check.h"

namespace course {

bool cuda_device_available(std::string* why_not) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    if (why_not) *why_not = std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
    cudaGetLastError();  // clear the error so it does not surface in a later check
    return false;
  }
  if (count == 0) {
    if (why_not) *why_not = "the CUDA runtime reports 0 devices";
    return false;
  }
  return true;
}

DeviceFacts query_device(int device) {
  DeviceFacts facts;
  facts.index = device;
  cudaDeviceProp props{};
  CUDA_CHECK(cudaGetDeviceProperties(&props, device));
  facts.name = props.name;
  facts.compute_capability_major = props.major;
  facts.compute_capability_minor = props.minor;
  facts.sm_count = props.multiProcessorCount;
  facts.l2_cache_bytes = static_cast<std::size_t>(props.l2CacheSize);
  facts.global_memory_bytes = props.totalGlobalMem;
  // The memory clock left cudaDeviceProp in CUDA 13; the attribute is the portable way.
  CUDA_CHECK(cudaDeviceGetAttribute(&facts.memory_clock_khz, cudaDevAttrMemoryClockRate, device));
  CUDA_CHECK(
      cudaDeviceGetAttribute(&facts.memory_bus_width_bits, cudaDevAttrGlobalMemoryBusWidth, device));
  facts.peak_dram_gbps =
      theoretical_dram_bandwidth_gbps(facts.memory_clock_khz, facts.memory_bus_width_bits);
  return facts;
}

}  // namespace course
