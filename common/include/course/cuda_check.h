// Error checking for CUDA calls (cuBLAS calls: course/cublas_check.h).
//
// Every CUDA API call returns a status. Ignoring it is the most common way to get a
// program that "runs" and prints garbage: a failed launch or copy is silent otherwise.
//
//   CUDA_CHECK(cudaMalloc(&ptr, bytes));   // throws course::CudaError on failure
//   my_kernel<<<grid, block>>>(...);
//   CUDA_CHECK_LAUNCH();                   // a bad launch configuration shows up here
//   CUDA_CHECK(cudaDeviceSynchronize());   // errors *inside* the kernel show up here
//
// The error message names the failing call, the file and the line. Helpers throw
// instead of calling exit(): exit() would kill the whole test program, and the test
// that caused the error could not report it.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace course {

class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

// Builds the message and throws. Out of line so the macros stay small.
[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line);

}  // namespace course

#define CUDA_CHECK(call)                                                    \
  do {                                                                      \
    const cudaError_t course_status_ = (call);                              \
    if (course_status_ != cudaSuccess) {                                    \
      ::course::throw_cuda_error(course_status_, #call, __FILE__, __LINE__); \
    }                                                                       \
  } while (0)

// A kernel launch returns nothing; a bad configuration (too many threads per block,
// too much shared memory, no GPU) is recorded and read back by cudaGetLastError().
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
