// CublasHandle: a cuBLAS context that destroys itself.
//
// Creating a handle is slow (it allocates workspace), so create one and reuse it.
//
//   CublasHandle cublas;
//   CUBLAS_CHECK(cublasSgemm(cublas.get(), ...));
#pragma once

#include <cublas_v2.h>

#include "course/cublas_check.h"

namespace course {

class CublasHandle {
 public:
  CublasHandle() { CUBLAS_CHECK(cublasCreate(&handle_)); }
  explicit CublasHandle(cudaStream_t stream) : CublasHandle() {
    CUBLAS_CHECK(cublasSetStream(handle_, stream));
  }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  ~CublasHandle() { cublasDestroy(handle_); }

  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

}  // namespace course
