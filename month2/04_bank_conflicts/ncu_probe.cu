// ncu_probe: runs one function of exercise m2.04 once, so that Nsight Compute can count its
// shared-memory bank conflicts without profiling anything else.
//
//   m2_04_bank_conflicts_<impl>_ncu_probe transpose_{naive|tiled|padded} ROWS COLS
//   m2_04_bank_conflicts_<impl>_ncu_probe gemm_{conflicted|padded} M N K
// where <impl> is exercise (your version) or solution (the reference).
//
// The inputs are copied from the host, so the only kernels that run are those of the function
// measured. The result is not checked (the other tests do that), and nothing is printed unless
// something fails. test_ncu_bank_conflicts.cu runs it under ncu; README.md shows how to do it
// by hand.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "bank_conflicts.h"
#include "course/device_buffer.h"
#include "course/gemm.h"
#include "course/random.h"

namespace {

int usage(const char* program) {
  std::fprintf(stderr,
               "usage: %s transpose_naive|transpose_tiled|transpose_padded ROWS COLS\n"
               "       %s gemm_conflicted|gemm_padded M N K\n",
               program, program);
  return 2;
}

int parse_size(const char* text) {
  const int value = std::atoi(text);
  if (value <= 0) throw std::invalid_argument(std::string("sizes must be > 0, got '") + text + "'");
  return value;
}

using TransposeFn = void (*)(const float*, float*, int, int, cudaStream_t);

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage(argv[0]);
  const std::string mode = argv[1];
  TransposeFn transpose = nullptr;
  if (mode == "transpose_naive") transpose = course::impl::transpose_naive;
  if (mode == "transpose_tiled") transpose = course::impl::transpose_tiled;
  if (mode == "transpose_padded") transpose = course::impl::transpose_padded;
  course::GemmFn gemm = nullptr;
  if (mode == "gemm_conflicted") gemm = course::impl::gemm_conflicted;
  if (mode == "gemm_padded") gemm = course::impl::gemm_padded;
  try {
    if (transpose != nullptr && argc == 4) {
      const int rows = parse_size(argv[2]);
      const int cols = parse_size(argv[3]);
      const std::size_t n = static_cast<std::size_t>(rows) * cols;
      auto in = course::DeviceBuffer<float>::from_host(course::random_uniform<float>(n, 1));
      course::DeviceBuffer<float> out(n);
      transpose(in.data(), out.data(), rows, cols, nullptr);
    } else if (gemm != nullptr && argc == 5) {
      const int M = parse_size(argv[2]);
      const int N = parse_size(argv[3]);
      const int K = parse_size(argv[4]);
      const std::size_t m = M, n = N, k = K;
      auto A = course::DeviceBuffer<float>::from_host(course::random_uniform<float>(m * k, 1));
      auto B = course::DeviceBuffer<float>::from_host(course::random_uniform<float>(k * n, 2));
      course::DeviceBuffer<float> C(m * n);
      gemm(M, N, K, 1.0f, A.data(), B.data(), 0.0f, C.data(), nullptr);
    } else {
      return usage(argv[0]);
    }
    CUDA_CHECK(cudaDeviceSynchronize());
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s %s: %s\n", argv[0], mode.c_str(), error.what());
    return 1;
  }
  return 0;
}
