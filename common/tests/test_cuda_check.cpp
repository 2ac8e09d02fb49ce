// The error macros must turn a failing call into an exception that names the call, the
// file and the line, on any machine: with no GPU the runtime fails too, just differently.
#include <gtest/gtest.h>

#include "course/cublas_check.h"
#include "course/cuda_check.h"

namespace {

TEST(CudaCheck, SuccessDoesNotThrow) { EXPECT_NO_THROW(CUDA_CHECK(cudaSuccess)); }

TEST(CudaCheck, FailureThrowsWithCallFileAndLine) {
  try {
    CUDA_CHECK(cudaSetDevice(-1));
    FAIL() << "CUDA_CHECK did not throw for an invalid device";
  } catch (const course::CudaError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("cudaSetDevice(-1)"), std::string::npos) << message;
    EXPECT_NE(message.find("test_cuda_check.cpp:"), std::string::npos) << message;
    EXPECT_NE(error.code(), cudaSuccess);
  }
}

TEST(CudaCheck, ReportsTheErrorName) {
  try {
    CUDA_CHECK(cudaErrorInvalidValue);
    FAIL() << "CUDA_CHECK did not throw";
  } catch (const course::CudaError& error) {
    EXPECT_NE(std::string(error.what()).find("cudaErrorInvalidValue"), std::string::npos);
    EXPECT_EQ(error.code(), cudaErrorInvalidValue);
  }
}

TEST(CublasCheck, FailureThrowsWithStatusName) {
  try {
    CUBLAS_CHECK(CUBLAS_STATUS_INVALID_VALUE);
    FAIL() << "CUBLAS_CHECK did not throw";
  } catch (const course::CublasError& error) {
    EXPECT_NE(std::string(error.what()).find("CUBLAS_STATUS_INVALID_VALUE"), std::string::npos)
        << error.what();
    EXPECT_EQ(error.status(), CUBLAS_STATUS_INVALID_VALUE);
  }
}

}  // namespace
