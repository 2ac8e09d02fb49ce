// Asynchronous copies from global to shared memory (cp.async, sm_80 and newer), for kernels
// that stage tiles in shared memory while they compute on the previous ones.
//
// A copy runs in the background: the thread goes on with its arithmetic and waits only
// when it needs the data. Copies are grouped: commit_copies() closes the group of copies
// this thread issued since the last commit, and wait_for_copies<N>() waits until at most N
// of this thread's groups are still in flight. Other threads' copies are visible only after
// a __syncthreads() that follows the wait.
//
// `bytes` is how many of the copy's bytes to really read: 0 writes zeros instead, without
// touching global memory (the zero padding of the tiles that hang over the matrix edges).
// On GPUs older than sm_80 the same helpers do an ordinary load and store.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace course {

// The 32-bit shared-memory address of `pointer`, the form cp.async, ldmatrix and the other
// shared-memory instructions take.
__device__ __forceinline__ std::uint32_t shared_address(const void* pointer) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(pointer));
}

// 4 bytes (one float); `global` must be 4-byte aligned.
__device__ __forceinline__ void copy_4_bytes_async(std::uint32_t shared, const void* global,
                                                   int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(shared), "l"(global),
               "r"(bytes));
#else
  const unsigned value = bytes != 0 ? *static_cast<const unsigned*>(global) : 0u;
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(shared), "r"(value));
#endif
}

// 16 bytes (a float4, or 8 halves); `global` and the shared address must be 16-byte aligned.
// The .cg form bypasses L1: each tile is read once per block, so keeping it there is no use.
__device__ __forceinline__ void copy_16_bytes_async(std::uint32_t shared, const void* global,
                                                    int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared), "l"(global),
               "r"(bytes));
#else
  const uint4 value = bytes != 0 ? *static_cast<const uint4*>(global) : uint4{0, 0, 0, 0};
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(shared), "r"(value.x),
               "r"(value.y), "r"(value.z), "r"(value.w));
#endif
}

// Closes the group of copies this thread issued since the last commit.
__device__ __forceinline__ void commit_copies() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// Waits until at most `kPending` of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void wait_for_copies() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
#endif
}

}  // namespace course
