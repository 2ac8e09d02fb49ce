// The GEMM family's test side: the float64 CPU reference, row sampling for large problems,
// seeded inputs in float32, float16 or bfloat16, and the tolerance. Tests and benchmarks
// include this (through course/gemm_testing.h and course/gemm_benchmark.h); kernels include
// course/gemm.h only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "course/gemm.h"
#include "course/random.h"
#include "course/verify.h"

namespace course {

namespace detail {

// Rows [first, last) of the reference, written to out[(r - first) * N ...]. Accumulates in
// float64 in i-k-j order: the innermost loop walks a row of B and a row of the result
// contiguously, which the compiler vectorises; the textbook i-j-k order strides through B
// by N and is several times slower on the CPU.
inline void reference_gemm_row(const GemmShape& s, double alpha, const std::vector<float>& A,
                               const std::vector<float>& B, double beta,
                               const std::vector<float>& C, int row, double* out) {
  const std::size_t N = static_cast<std::size_t>(s.N);
  const std::size_t K = static_cast<std::size_t>(s.K);
  std::fill(out, out + N, 0.0);
  const float* a = A.data() + static_cast<std::size_t>(row) * K;
  for (std::size_t k = 0; k < K; ++k) {
    const double a_ik = a[k];
    const float* b = B.data() + k * N;
    for (std::size_t j = 0; j < N; ++j) out[j] += a_ik * static_cast<double>(b[j]);
  }
  const float* c = C.data() + static_cast<std::size_t>(row) * N;
  for (std::size_t j = 0; j < N; ++j) {
    // beta == 0: C is not read (BLAS semantics), so a NaN there does not matter.
    out[j] = alpha * out[j] + (beta == 0.0 ? 0.0 : beta * static_cast<double>(c[j]));
  }
}

inline void check_reference_sizes(const GemmShape& s, const std::vector<float>& A,
                                  const std::vector<float>& B, float beta,
                                  const std::vector<float>& C) {
  require(s.M >= 0 && s.N >= 0 && s.K >= 0, "reference_gemm", "negative size " + to_string(s));
  const std::size_t M = s.M, N = s.N, K = s.K;
  require(A.size() == M * K && B.size() == K * N, "reference_gemm",
          "A must hold M*K and B K*N floats for shape " + to_string(s));
  require(beta == 0.0f || C.size() == M * N, "reference_gemm",
          "C must hold M*N floats when beta != 0, for shape " + to_string(s));
}

}  // namespace detail

// The reference: alpha * A * B + beta * C computed in float64 on the CPU from the same
// float32 inputs the kernel gets, as a row-major M x N vector. When beta == 0, C is not
// read and may be empty. About 1 s for 1024^3 on one core: keep full checks to
// M * N * K <= 2^30 and use reference_gemm_rows beyond that.
inline std::vector<double> reference_gemm(const GemmShape& shape, float alpha,
                                          const std::vector<float>& A,
                                          const std::vector<float>& B, float beta,
                                          const std::vector<float>& C) {
  detail::check_reference_sizes(shape, A, B, beta, C);
  std::vector<double> out(static_cast<std::size_t>(shape.M) * shape.N);
  for (int i = 0; i < shape.M; ++i) {
    detail::reference_gemm_row(shape, alpha, A, B, beta, C, i,
                               out.data() + static_cast<std::size_t>(i) * shape.N);
  }
  return out;
}

// The same reference for a few rows of C only: rows.size() x N values, row rows[r] at
// out[r * N ...]. Costs N * K per row, so large problems are checked on a sample of rows.
inline std::vector<double> reference_gemm_rows(const GemmShape& shape, float alpha,
                                               const std::vector<float>& A,
                                               const std::vector<float>& B, float beta,
                                               const std::vector<float>& C,
                                               const std::vector<int>& rows) {
  detail::check_reference_sizes(shape, A, B, beta, C);
  std::vector<double> out(rows.size() * static_cast<std::size_t>(shape.N));
  for (std::size_t r = 0; r < rows.size(); ++r) {
    require(rows[r] >= 0 && rows[r] < shape.M, "reference_gemm_rows",
            "row " + std::to_string(rows[r]) + " is outside C for shape " + to_string(shape));
    detail::reference_gemm_row(shape, alpha, A, B, beta, C, rows[r],
                               out.data() + r * static_cast<std::size_t>(shape.N));
  }
  return out;
}

// The rows of C a sampled check compares when M * N * K is too large for a full CPU
// reference: the first two and last two rows, and one row in every block of 32 rows, at an
// offset inside the block that changes from block to block (5, 18, 31, 12, 25, ...). Every
// 32-row tile of the grid (and so every 64- and 128-row tile) is hit, at many different
// positions inside the tile, so a wrong row index, a missed edge or a block that never runs
// shows up. Every column of a sampled row is compared, so the column direction is checked
// in full. About M / 32 rows: 132 for M = 4096. Sorted, no duplicates.
inline std::vector<int> gemm_sample_rows(int M) {
  std::vector<int> rows;
  if (M <= 0) return rows;
  for (int r : {0, 1, M - 2, M - 1}) {
    if (r >= 0 && r < M) rows.push_back(r);
  }
  for (int block = 0; block * 32 < M; ++block) {
    const int r = block * 32 + (block * 13 + 5) % 32;
    if (r < M) rows.push_back(r);
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

// The inputs of a GEMM with `Input` elements: seeded random values in [-1, 1], as the
// kernel sees them (`device`) and as exact floats for the reference (`exact`: float16
// values are exactly representable in float).
template <typename Input>
struct GemmInputs {
  std::vector<Input> device;
  std::vector<float> exact;
};
// One float as an `Input` element (float, __half or __nv_bfloat16), rounded to nearest,
// and back.
template <typename Input>
Input gemm_input_from_float(float value) {
  if constexpr (std::is_same_v<Input, float>) {
    return value;
  } else if constexpr (std::is_same_v<Input, __half>) {
    return __float2half(value);
  } else {
    static_assert(std::is_same_v<Input, __nv_bfloat16>, "GEMM inputs: float, __half or bf16");
    return __float2bfloat16(value);
  }
}
template <typename Input>
float gemm_input_to_float(Input value) {
  if constexpr (std::is_same_v<Input, float>) {
    return value;
  } else if constexpr (std::is_same_v<Input, __half>) {
    return __half2float(value);
  } else {
    return __bfloat162float(value);
  }
}

// `values` as `Input` elements. For float16 and bfloat16 the values must already be values
// of that type (as gemm_inputs makes them): the conversion is then exact.
template <typename Input>
std::vector<Input> gemm_inputs_as(const std::vector<float>& values) {
  std::vector<Input> converted(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) converted[i] = gemm_input_from_float<Input>(values[i]);
  return converted;
}

template <typename Input>
GemmInputs<Input> gemm_inputs(std::size_t count, std::uint64_t seed) {
  GemmInputs<Input> inputs;
  inputs.exact = random_uniform<float>(count, seed);
  // Round to the input type, and keep for the reference what each value became.
  for (float& value : inputs.exact) {
    value = gemm_input_to_float(gemm_input_from_float<Input>(value));
  }
  inputs.device = gemm_inputs_as<Input>(inputs.exact);
  return inputs;
}

// The precision the inputs carry, for gemm_tolerance.
template <typename Input>
constexpr Dtype gemm_input_dtype() {
  if constexpr (std::is_same_v<Input, float>) {
    return Dtype::fp32;
  } else if constexpr (std::is_same_v<Input, __half>) {
    return Dtype::fp16;
  } else {
    return Dtype::bf16;
  }
}

// The tolerance for comparing a GEMM with the float64 reference, for inputs in [-1, 1]
// (what the tests and benchmarks use) and |alpha|, |beta| <= 2.
//
// Why it grows with K: each output is a sum of K products, accumulated in float32 (the
// course's fp16/bf16/tf32 GEMMs accumulate in float32 too). Every addition rounds, with an
// error of at most u = 2^-24 times the running sum. For zero-mean inputs the running sum
// is a random walk whose size grows like sqrt(k), so the K rounding errors add up to
// about u * K in the worst order (one long sequential sum; splitting the sum into
// independent partial sums, as tiled kernels and cuBLAS do, makes it several times
// smaller). Crucially the error does not shrink with the result: an output that happens to
// be close to 0 after cancellation still carries it. So the absolute part of the tolerance
// is proportional to K: atol = 8 * u * K on top of the dtype's own atol. Simulating 400 000
// sequential float32 sums (alpha = 1.5) gives a largest error of 1.4 to 2.3 * u * K for K
// from 33 to 16384, so 8 leaves a margin of 3.5x; yet at K = 4096 atol is 2e-3, while
// dropping a single product (of typical size 0.25) or a partial tile is off by far more.
//
// The relative part is the dtype's (tolerance_for): for fp16 / bf16 / tf32 it covers
// rounding the inputs and output to that type, provided the reference is computed from
// inputs *already rounded* to the kernel's dtype, as it must be. fp64 accumulates with
// u = 2^-53.
inline Tolerance gemm_tolerance(Dtype dtype, int K) {
  const Tolerance base = tolerance_for(dtype);
  const double unit_roundoff = dtype == Dtype::fp64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  const double k = std::max(K, 1);
  return Tolerance{base.atol + 8.0 * unit_roundoff * k, base.rtol};
}

}  // namespace course
