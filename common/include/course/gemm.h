// The GEMM family's interface, shared by every month-2 step: the function type, the shape,
// and the argument checks every launcher starts with. Kernel code includes this; the
// float64 reference, the inputs and the tolerance are in course/gemm_reference.h, cuBLAS as
// a row-major baseline in course/gemm_cublas.h (tests and benchmarks only).
//
// Every GEMM in the course computes, for row-major matrices (element (i, j) of an R x C
// matrix X is X[i * C + j], as in a contiguous torch tensor),
//
//   C[M x N] = alpha * A[M x K] * B[K x N] + beta * C
//
// with the BLAS rule for beta: when beta == 0, C is write-only. Its old contents are never
// read, so whatever garbage (even NaN) it holds does not leak into the result.
// (NaN * 0 is NaN, so `beta * C[i]` is not the same thing as not reading C.)
//
// Each step implements a function with this signature (see GemmFn), e.g.
//
//   void tiled_gemm(int M, int N, int K, float alpha, const float* A, const float* B,
//                   float beta, float* C, cudaStream_t stream);
//
// so that one test body (course/gemm_testing.h) and one benchmark (course/gemm_benchmark.h)
// serve every step.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "course/launch.h"

namespace course {

// Row-major C[M x N] = alpha * A[M x K] * B[K x N] + beta * C on `stream`. A, B and C are
// device pointers. M, N or K == 0 is allowed (K == 0 gives C = beta * C); a negative size
// throws std::invalid_argument.
using GemmFn = void (*)(int M, int N, int K, float alpha, const float* A, const float* B,
                        float beta, float* C, cudaStream_t stream);
// The same for a GEMM whose A and B hold `Input` elements (float, or __half for m2.07); C is
// float. GemmFnOf<float> is GemmFn.
template <typename Input>
using GemmFnOf = void (*)(int M, int N, int K, float alpha, const Input* A, const Input* B,
                          float beta, float* C, cudaStream_t stream);

struct GemmShape {
  int M, N, K;
};

inline std::string to_string(const GemmShape& shape) {
  return std::to_string(shape.M) + "x" + std::to_string(shape.N) + "x" + std::to_string(shape.K);
}

// The checks every GEMM launcher starts with: no negative size, and every matrix small
// enough for the 32-bit indices the course's kernels use. Throws std::invalid_argument
// naming `function` and the bad value.
inline void require_gemm_arguments(const char* function, int M, int N, int K) {
  // The messages are lambdas: made only when a check fails (course/launch.h).
  require(M >= 0 && N >= 0 && K >= 0, function, [&] {
    return "sizes must be >= 0, got M = " + std::to_string(M) + ", N = " + std::to_string(N) +
           ", K = " + std::to_string(K);
  });
  constexpr std::int64_t kMaxElements = 2147483647;  // INT_MAX: the largest 32-bit index + 1
  const std::int64_t m = M, n = N, k = K;
  require(m * k <= kMaxElements && k * n <= kMaxElements && m * n <= kMaxElements, function, [&] {
    return "every matrix must have fewer than 2^31 elements (the kernels index with int), got " +
           to_string(GemmShape{M, N, K});
  });
}

// Which size of C a launcher's grid covers in y, one block per `per_block` rows or columns:
// the M rows (most steps), or the N columns (m2.01, whose x walks down the rows).
enum class GridY { rows, columns };

// The start of every GEMM launcher with one block per tile of C: checks the sizes
// (require_gemm_arguments) and that the tiles fit the grid's y (require_grid_y), and says
// whether there is anything to launch: false when C is empty (M == 0 or N == 0), where a
// launch of zero blocks would be an error.
//
//   if (!gemm_launch_needed("tiled_gemm", M, N, K, GridY::rows, kTileDim)) return;
inline bool gemm_launch_needed(const char* function, int M, int N, int K, GridY y, int per_block) {
  require_gemm_arguments(function, M, N, K);
  if (M == 0 || N == 0) return false;
  const bool rows = y == GridY::rows;
  require_grid_y(ceil_div(rows ? M : N, per_block), function,
                 std::string(rows ? "M = " : "N = ") + std::to_string(rows ? M : N));
  return true;
}

}  // namespace course
