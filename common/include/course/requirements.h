// What a kernel needs from the GPU, checked in one place.
//
// Every GPU since Turing (compute capability 7.5: T4, RTX 20xx) runs the course, but some
// instructions came later:
//   7.5  ldmatrix, mma.sync m16n8k8 (float16), WMMA                   T4, RTX 20xx
//   8.0  cp.async, mma.sync m16n8k16, bfloat16 tensor cores            A100, RTX 30xx/40xx (8.6/8.9)
//   9.0  wgmma and the TMA (code built for sm_90a only)                H100, H200
// and the shared memory a block may use differs too (64 KiB on a T4, 99 KiB on an RTX
// 3090/4090, 163 KiB on an A100, 227 KiB on an H100/H200).
//
//   course::require_compute_capability(8, 0, "bfloat16 mma.sync");   // a launcher: throws
//   COURSE_REQUIRE_COMPUTE_CAPABILITY(8, 0, "bfloat16 mma.sync");     // a test: skips (testing.h)
//
// Launchers throw course::UnsupportedDevice with the reason, so a GPU too old for a kernel
// gets a clear error instead of a result computed by code that was compiled out. Tests
// skip with the same reason, which ./course grade recognises as "this machine cannot run
// it", not as your mistake.
//
// Emulating an older GPU: COURSE_COMPUTE_CAPABILITY=7.5 (or 8.0, ...) makes every check
// here see that compute capability and that GPU's shared memory limit, as long as it is not
// above the real device's. Build with CUDA_ARCHS=75-virtual (PTX only: the driver compiles
// it for the GPU at load time) and the code paths of a T4 run on a newer GPU. It is for
// testing the course; a learner never needs it.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "course/cuda_check.h"

namespace course {

class UnsupportedDevice : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ComputeCapability {
  int major = 0;
  int minor = 0;
  int number() const { return major * 10 + minor; }  // 7.5 -> 75, as in sm_75
  std::string text() const { return std::to_string(major) + "." + std::to_string(minor); }
};

namespace detail {

// COURSE_COMPUTE_CAPABILITY ("7.5"), or {0, 0} when unset. A malformed value throws rather
// than being ignored: a test run that meant to emulate a T4 must not quietly run as an H200.
inline ComputeCapability emulated_compute_capability() {
  const char* text = std::getenv("COURSE_COMPUTE_CAPABILITY");
  if (text == nullptr || *text == '\0') return {};
  ComputeCapability cc;
  char extra = 0;
  if (std::sscanf(text, "%d.%d%c", &cc.major, &cc.minor, &extra) != 2 || cc.major < 1 ||
      cc.minor < 0 || cc.minor > 9) {
    throw std::invalid_argument(std::string("COURSE_COMPUTE_CAPABILITY must look like 7.5, not '") +
                                text + "'");
  }
  return cc;
}

// The largest dynamic shared memory a block of a GPU of this compute capability may opt in
// to (CUDA C++ Programming Guide, "Technical Specifications per Compute Capability").
inline std::size_t shared_memory_per_block_of(ComputeCapability cc) {
  switch (cc.number()) {
    case 75: return 64 * 1024;
    case 80: return 163 * 1024;
    case 86: case 87: case 89: return 99 * 1024;
    case 90: return 227 * 1024;
    default: return cc.number() < 80 ? 48 * 1024 : 99 * 1024;
  }
}

inline int current_device() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

}  // namespace detail

// The real compute capability of the current GPU.
inline ComputeCapability physical_compute_capability() {
  const int device = detail::current_device();
  ComputeCapability cc;
  CUDA_CHECK(cudaDeviceGetAttribute(&cc.major, cudaDevAttrComputeCapabilityMajor, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&cc.minor, cudaDevAttrComputeCapabilityMinor, device));
  return cc;
}

// True when COURSE_COMPUTE_CAPABILITY asks for an older GPU than this one.
inline bool compute_capability_emulated() {
  const ComputeCapability emulated = detail::emulated_compute_capability();
  return emulated.major != 0 && emulated.number() < physical_compute_capability().number();
}

// The compute capability every check of the course acts on: the GPU's own, or the older one
// COURSE_COMPUTE_CAPABILITY emulates (never a newer one: the hardware could not run it).
inline ComputeCapability device_compute_capability() {
  const ComputeCapability real = physical_compute_capability();
  const ComputeCapability emulated = detail::emulated_compute_capability();
  return (emulated.major != 0 && emulated.number() < real.number()) ? emulated : real;
}

// The dynamic shared memory one block may use (after cudaFuncSetAttribute opts in), capped
// at the emulated GPU's limit under COURSE_COMPUTE_CAPABILITY.
inline std::size_t max_shared_memory_per_block() {
  int bytes = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                    detail::current_device()));
  std::size_t limit = static_cast<std::size_t>(bytes);
  if (compute_capability_emulated()) {
    limit = std::min(limit, detail::shared_memory_per_block_of(device_compute_capability()));
  }
  return limit;
}

// "" when this GPU has compute capability major.minor or newer; otherwise the reason, in the
// form ./course grade recognises: "needs compute capability 8.0 (what); this GPU has 7.5".
inline std::string compute_capability_shortfall(int major, int minor, const std::string& what) {
  const ComputeCapability cc = device_compute_capability();
  if (cc.number() >= major * 10 + minor) return "";
  return "needs compute capability " + std::to_string(major) + "." + std::to_string(minor) +
         " (" + what + "); this GPU has " + cc.text() +
         (compute_capability_emulated() ? " (emulated by COURSE_COMPUTE_CAPABILITY)" : "");
}

// "" when a block may use `bytes` of shared memory here; otherwise the reason.
inline std::string shared_memory_shortfall(std::size_t bytes, const std::string& what) {
  const std::size_t limit = max_shared_memory_per_block();
  if (bytes <= limit) return "";
  return "needs " + std::to_string((bytes + 1023) / 1024) + " KiB of shared memory per block (" +
         what + "); this GPU allows " + std::to_string(limit / 1024) + " KiB";
}

// Throws course::UnsupportedDevice when the GPU is older than major.minor.
inline void require_compute_capability(int major, int minor, const std::string& what) {
  const std::string shortfall = compute_capability_shortfall(major, minor, what);
  if (!shortfall.empty()) throw UnsupportedDevice(shortfall);
}

// Throws course::UnsupportedDevice when a block may not use `bytes` of shared memory.
inline void require_shared_memory_per_block(std::size_t bytes, const std::string& what) {
  const std::string shortfall = shared_memory_shortfall(bytes, what);
  if (!shortfall.empty()) throw UnsupportedDevice(shortfall);
}

// Lets `kernel` use `bytes` of dynamic shared memory per block (above 48 KiB a kernel must opt
// in), after checking that this GPU allows that much: a clear UnsupportedDevice instead of a
// failed launch on a GPU with less shared memory.
template <typename Kernel>
inline void allow_dynamic_shared_memory(Kernel kernel, std::size_t bytes, const std::string& what) {
  require_shared_memory_per_block(bytes, what);
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(bytes)));
}

}  // namespace course
