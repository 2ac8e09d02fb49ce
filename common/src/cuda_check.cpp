#include "course/cuda_check.h"

#include <sstream>

namespace course {

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  throw CudaError(code, detail::check_failure_message("CUDA", cudaGetErrorName(code),
                                                      cudaGetErrorString(code), call, file, line));
}

namespace detail {

std::string check_failure_message(const char* library, const char* name, const char* description,
                                  const char* call, const char* file, int line) {
  std::ostringstream message;
  message << library << " error " << name << " (" << description << ") at " << file << ":" << line
          << " in `" << call << "`";
  return message.str();
}

}  // namespace detail
}  // namespace course
