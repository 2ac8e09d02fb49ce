// Error checking for cuBLAS calls, the counterpart of CUDA_CHECK (course/cuda_check.h) for
// the code that calls cuBLAS: the tests' and benchmarks' baselines, and the one launcher
// whose GEMM is cuBLAS (m3.04's im2col + GEMM). Other kernel code does not include it.
//
//   CUBLAS_CHECK(cublasSgemm(handle, ...));   // throws course::CublasError on failure
#pragma once

#include <cublas_v2.h>

#include <stdexcept>
#include <string>

#include "course/cuda_check.h"

namespace course {

class CublasError : public std::runtime_error {
 public:
  CublasError(cublasStatus_t status, const std::string& what)
      : std::runtime_error(what), status_(status) {}
  cublasStatus_t status() const { return status_; }

 private:
  cublasStatus_t status_;
};

// Builds the message and throws. Out of line so the macro stays small.
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file,
                                     int line);

}  // namespace course

#define CUBLAS_CHECK(call)                                                                 \
  COURSE_CHECK_STATUS(cublasStatus_t, CUBLAS_STATUS_SUCCESS, ::course::throw_cublas_error, call, \
                      #call)
