#include "course/cuda_check.h"

#include <sstream>

namespace course {

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  std::ostringstream message;
  message << "CUDA error " << cudaGetErrorName(code) << " (" << cudaGetErrorString(code)
          << ") at " << file << ":" << line << " in `" << call << "`";
  throw CudaError(code, message.str());
}

}  // namespace course
