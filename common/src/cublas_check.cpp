#include "course/cublas_check.h"

#include <sstream>

namespace course {

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  std::ostringstream message;
  message << "cuBLAS error " << cublasGetStatusName(status) << " (" << cublasGetStatusString(status)
          << ") at " << file << ":" << line << " in `" << call << "`";
  throw CublasError(status, message.str());
}

}  // namespace course
