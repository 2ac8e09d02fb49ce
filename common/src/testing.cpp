#include "course/testing.h"

#include <exception>

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

::testing::AssertionResult runs_on_given_stream(const std::function<void(cudaStream_t)>& launch) {
  CUDA_CHECK(cudaDeviceSynchronize());
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t runnable = nullptr;
  std::string failure;
  try {
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    try {
      launch(stream);
    } catch (const std::exception& error) {
      failure = std::string("the launcher failed while its stream was being captured: ") +
                error.what() + " (a launcher only queues work on `stream`: no synchronizing, "
                "no launch on the default stream)";
    }
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    cudaGetLastError();  // a failed capture leaves an error behind; it is reported here
    if (failure.empty() && ended != cudaSuccess) {
      failure = std::string("capturing the stream failed: ") + cudaGetErrorName(ended) +
                " (work was sent to another stream, such as the default one)";
    }
    std::size_t nodes = 0;
    if (failure.empty()) {
      CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
      if (nodes == 0) {
        failure = "nothing was queued on `stream`: launch the kernel with "
                  "<<<blocks, threads, shared_memory_bytes, stream>>>";
      }
    }
    if (failure.empty()) {
      CUDA_CHECK(cudaGraphInstantiate(&runnable, graph, 0));
      CUDA_CHECK(cudaGraphLaunch(runnable, stream));
      CUDA_CHECK(cudaStreamSynchronize(stream));
    }
  } catch (const std::exception& error) {
    failure = error.what();
  }
  if (runnable != nullptr) cudaGraphExecDestroy(runnable);
  if (graph != nullptr) cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  if (!failure.empty()) return ::testing::AssertionFailure() << failure;
  return ::testing::AssertionSuccess();
}

}  // namespace course
