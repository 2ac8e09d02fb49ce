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

namespace detail {

// "<library> error <name> (<description>) at <file>:<line> in `<call>`": the message of
// every failed check (CUDA_CHECK here, CUBLAS_CHECK in course/cublas_check.h).
std::string check_failure_message(const char* library, const char* name, const char* description,
                                  const char* call, const char* file, int line);

}  // namespace detail
}  // namespace course

// The shape of every check macro: evaluates `call` once, and hands a status other than
// `success` to `thrower` with the call as written (`text`), the file and the line.
#define COURSE_CHECK_STATUS(type, success, thrower, call, text) \
  do {                                                          \
    const type course_status_ = (call);                         \
    if (course_status_ != (success)) {                          \
      thrower(course_status_, text, __FILE__, __LINE__);        \
    }                                                           \
  } while (0)

#define CUDA_CHECK(call) \
  COURSE_CHECK_STATUS(cudaError_t, cudaSuccess, ::course::throw_cuda_error, call, #call)

// A kernel launch returns nothing; a bad configuration (too many threads per block,
// too much shared memory, no GPU) is recorded and read back by cudaGetLastError().
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
