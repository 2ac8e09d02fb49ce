#include "course/cublas_check.h"

namespace course {

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw CublasError(status,
                    detail::check_failure_message("cuBLAS", cublasGetStatusName(status),
                                                  cublasGetStatusString(status), call, file, line));
}

}  // namespace course
