#include "course/testing.h"

namespace course {

void GpuTest::SetUp() {
  std::string why_not;
  if (!cuda_device_available(&why_not)) {
    GTEST_SKIP() << "no CUDA GPU on this machine (" << why_not << "); this test needs one";
  }
}

void GpuTest::TearDown() {
  if (IsSkipped()) return;
  const cudaError_t status = cudaDeviceSynchronize();
  if (status != cudaSuccess) {
    ADD_FAILURE() << "a kernel launched by this test failed: " << cudaGetErrorName(status) << " ("
                  << cudaGetErrorString(status) << "). Run the test under compute-sanitizer "
                  << "to find the faulting access.";
  }
}

}  // namespace course
