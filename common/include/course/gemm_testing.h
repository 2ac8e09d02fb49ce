// The one test body every month-2 GEMM step shares.
//
// A step's test file only says which function to test and which TODOs to point at:
//
//   constexpr const char* kHint = "look at TODO(m2.03a) ... in month2/03_tiled_gemm/tiled_gemm.cu";
//
//   class TiledGemmTest : public course::GpuTest,
//                         public ::testing::WithParamInterface<course::GemmCase> {};
//   TEST_P(TiledGemmTest, MatchesFloat64Reference) {
//     course::expect_gemm_matches_reference(course::impl::tiled_gemm, GetParam(), kHint);
//   }
//   INSTANTIATE_TEST_SUITE_P(Shapes, TiledGemmTest,
//                            ::testing::ValuesIn(course::gemm_test_cases()),
//                            course::gemm_case_name);
//
//   class TiledGemmArgumentsTest : public course::GpuTest {};
//   TEST_F(TiledGemmArgumentsTest, NegativeSizesAreRejected) {
//     course::expect_gemm_rejects_negative_sizes(course::impl::tiled_gemm, kHint);
//   }
//   TEST_F(TiledGemmArgumentsTest, RunsOnTheGivenStream) {
//     course::expect_gemm_runs_on_stream(course::impl::tiled_gemm, kHint);
//   }
//
// What expect_gemm_matches_reference checks, and why a wrong kernel cannot pass:
//   * A, B (and C when beta != 0) are seeded random values in [-1, 1], never constants.
//   * When beta == 0, C starts as NaN (DeviceBuffer::poison). A kernel that reads C anyway
//     (beta * C is NaN * 0 = NaN) or skips an element leaves a NaN, which never passes.
//   * A, B and C sit inside larger buffers whose extra "guard" elements before and after
//     the matrix are NaN. Writing outside C changes a guard (reported); *using* a value
//     read just past the end of A or B turns a result into NaN, even when it is multiplied
//     by a zero-filled tile element (NaN * 0 = NaN).
//   * The result is compared with a float64 CPU reference (course/gemm.h) within
//     gemm_tolerance(fp32, K): every element when M * N * K <= 2^30, otherwise every column
//     of a sample of rows chosen to hit every row tile (gemm_sample_rows), and then every
//     element of C must still have been written with a finite value.
//
// The same functions test a GEMM whose A and B are float16 (__half), such as the tensor-core
// GEMM of m2.07: the inputs are rounded to float16 first, the reference is computed from the
// rounded values, and the tolerance is gemm_tolerance(fp16, K).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "course/cuda_check.h"
#include "course/device_buffer.h"
#include "course/guarded_buffer.h"
#include "course/gemm.h"
#include "course/gemm_reference.h"
#include "course/random.h"
#include "course/testing.h"
#include "course/verify_gtest.h"

namespace course {

// One test problem: the shape and the scalars.
struct GemmCase {
  GemmShape shape;
  float alpha = 1.0f;
  float beta = 0.0f;
};

inline std::ostream& operator<<(std::ostream& out, const GemmCase& c) {
  return out << to_string(c.shape) << " alpha=" << c.alpha << " beta=" << c.beta;
}

// The shapes every GEMM step must get right (M x N x K).
inline std::vector<GemmShape> gemm_test_shapes() {
  return {
      {1, 1, 1},         // the smallest problem: one thread, one product
      {17, 33, 65},      // nothing a multiple of anything, and M != N != K (catches swapped sizes)
      {1, 300, 129},     // a single row of C (a vector times a matrix)
      {300, 1, 129},     // a single column of C (a matrix times a vector)
      {64, 48, 1},       // K = 1: an outer product, a single partial tile
      {31, 31, 31},      // one below, at and one above the warp size / a 32 x 32 tile
      {32, 32, 32},
      {33, 33, 33},
      {127, 127, 127},   // around 128, a common block tile
      {128, 128, 128},
      {129, 129, 129},
      {255, 255, 255},   // around 256
      {256, 256, 256},
      {257, 257, 257},
      {1000, 40, 72},    // tall and thin
      {40, 1000, 72},    // short and wide
      {128, 128, 33},    // K not a multiple of the tile: the last tile is one column wide
      {128, 128, 65},
      {96, 80, 1000},    // K = 1000: 31 full tiles of 32 and a partial one
      {64, 64, 4099},    // a long, odd K: many rounding steps and a ragged last tile
      {512, 768, 1024},  // larger rectangular: many blocks
      {1024, 1024, 1024},
      {4093, 4091, 4099},  // large and prime-ish: every edge is ragged (sampled rows)
  };
}

// The problems the tests run: every shape with alpha = 1, beta = 0 (C = A B); the empty
// cases; and other alpha / beta on a few shapes (beta != 0 reads a random C).
inline std::vector<GemmCase> gemm_test_cases() {
  std::vector<GemmCase> cases;
  for (const GemmShape& shape : gemm_test_shapes()) cases.push_back({shape, 1.0f, 0.0f});
  // Empty problems: nothing to do for M or N == 0 (and nothing may be written); K == 0 is
  // an empty sum, so C = beta * C (all zeros when beta == 0, without reading C).
  for (const GemmShape& shape : {GemmShape{0, 5, 7}, GemmShape{5, 0, 7}, GemmShape{0, 0, 0}}) {
    cases.push_back({shape, 1.0f, 0.0f});
  }
  cases.push_back({{37, 45, 0}, 1.0f, 0.0f});
  cases.push_back({{37, 45, 0}, 1.0f, 0.5f});
  // alpha scales the product; beta != 0 reads C.
  for (const GemmShape& shape : {GemmShape{17, 33, 65}, GemmShape{129, 129, 129}}) {
    cases.push_back({shape, 1.5f, 0.0f});
  }
  for (const GemmShape& shape : {GemmShape{17, 33, 65}, GemmShape{129, 129, 129},
                                 GemmShape{1000, 40, 72}, GemmShape{257, 255, 33}}) {
    cases.push_back({shape, 0.5f, -0.75f});
  }
  cases.push_back({{64, 64, 64}, 1.0f, 1.0f});  // C += A B, the accumulate form
  return cases;
}

namespace detail {

// "1.5" -> "1p5", "-0.75" -> "m0p75": test names may only hold letters, digits and '_'.
inline std::string gemm_scalar_name(float value) {
  std::ostringstream text;
  text << value;
  std::string name;
  for (char ch : text.str()) name += ch == '-' ? 'm' : ch == '.' ? 'p' : ch;
  return name;
}

}  // namespace detail

// Test names such as "M17_N33_K65" or "M129_N129_K129_alpha0p5_betam0p75".
inline std::string gemm_case_name(const ::testing::TestParamInfo<GemmCase>& info) {
  const GemmCase& c = info.param;
  std::string name = "M" + std::to_string(c.shape.M) + "_N" + std::to_string(c.shape.N) + "_K" +
                     std::to_string(c.shape.K);
  if (c.alpha != 1.0f || c.beta != 0.0f) {
    name += "_alpha" + detail::gemm_scalar_name(c.alpha) + "_beta" +
            detail::gemm_scalar_name(c.beta);
  }
  return name;
}

// Runs `gemm` once on seeded random inputs and checks C (and the guards) against the
// float64 reference, as described at the top of this file. Reports failures with
// ADD_FAILURE, each ending with `hint`. `stream` is passed to gemm, which must finish its
// work there.
template <typename Input>
void expect_gemm_matches_reference(GemmFnOf<Input> gemm, GemmShape shape, float alpha,
                                   float beta, const char* hint, cudaStream_t stream = nullptr) {
  const int M = shape.M, N = shape.N, K = shape.K;
  const std::size_t MN = static_cast<std::size_t>(M) * N;
  const std::uint64_t seed = test_seed();
  std::ostringstream what;
  what << "C = alpha * A * B + beta * C with M x N x K = " << to_string(shape) << ", alpha = "
       << alpha << ", beta = " << beta << " (seed " << seed << ")";

  const auto inputs_a = gemm_inputs<Input>(static_cast<std::size_t>(M) * K, seed);
  const auto inputs_b = gemm_inputs<Input>(static_cast<std::size_t>(K) * N, seed + 1);
  const std::vector<float>& A = inputs_a.exact;
  const std::vector<float>& B = inputs_b.exact;
  // With beta == 0, C stays NaN: the kernel must not read it.
  const std::vector<float> C0 =
      beta != 0.0f ? random_uniform<float>(MN, seed + 2) : std::vector<float>();

  // Each matrix between NaN guards (course/guarded_buffer.h; all-ones bytes are a NaN in
  // float16 and bfloat16 too), at the allocation's alignment, so float4 loads stay legal.
  auto device_a = GuardedBuffer<Input>::from_host(inputs_a.device);
  auto device_b = GuardedBuffer<Input>::from_host(inputs_b.device);
  auto device_c = beta != 0.0f ? GuardedBuffer<float>::from_host(C0) : GuardedBuffer<float>(MN);
  // cudaMemset and cudaMemcpy from pageable memory may still be running when they return,
  // and a non-blocking `stream` would not wait for them.
  CUDA_CHECK(cudaDeviceSynchronize());

  try {
    gemm(M, N, K, alpha, device_a.data(), device_b.data(), beta, device_c.data(), stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    CUDA_CHECK(cudaDeviceSynchronize());  // errors inside the kernel surface here
  } catch (const std::exception& error) {
    ADD_FAILURE() << what.str() << ": the GEMM failed: " << error.what() << "\n" << hint;
    return;
  }

  const auto result = device_c.download();
  const float* c = result.values.data();
  if (result.first_stray_write && *result.first_stray_write < 0) {
    ADD_FAILURE() << what.str() << ": the kernel wrote before the start of C (a negative "
                  << "index?). " << hint;
  } else if (result.first_stray_write) {
    ADD_FAILURE() << what.str() << ": the kernel wrote past the end of C: threads whose row is "
                  << ">= M or column is >= N must not write. " << hint;
  }
  if (MN == 0) return;

  // Full check, or every column of the sampled rows (see gemm_sample_rows).
  const bool full = static_cast<double>(M) * N * K <= 1073741824.0;  // 2^30
  std::vector<int> rows;
  if (full) {
    rows.resize(M);
    for (int i = 0; i < M; ++i) rows[i] = i;
  } else {
    rows = gemm_sample_rows(M);
  }
  const std::vector<double> expected = full ? reference_gemm(shape, alpha, A, B, beta, C0)
                                            : reference_gemm_rows(shape, alpha, A, B, beta, C0, rows);
  const Tolerance tol = gemm_tolerance(gemm_input_dtype<Input>(), K);

  std::size_t bad_rows = 0;
  bool saw_nan = false;
  std::string first_bad;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::size_t row = static_cast<std::size_t>(rows[r]);
    const std::vector<float> got(c + row * N, c + (row + 1) * N);
    const std::vector<double> want(expected.begin() + r * N, expected.begin() + (r + 1) * N);
    const VerifyResult check = verify(got, want, tol);
    if (check) continue;
    for (float value : got) saw_nan |= std::isnan(value);
    if (bad_rows == 0) {
      first_bad = "row " + std::to_string(row) + " of C (the [indices] are columns): " +
                  check.message();
    }
    ++bad_rows;
  }
  if (bad_rows > 0) {
    ADD_FAILURE() << what.str() << ": " << bad_rows << " of the " << rows.size()
                  << (full ? " rows" : " sampled rows") << " of C differ from the float64 "
                  << "reference. The first is " << first_bad << "\n"
                  << (saw_nan ? "A NaN in C means the element was never written, or the kernel "
                                "used a value it must not read: C itself when beta == 0, or an "
                                "element past the edge of A or B.\n"
                              : "")
                  << hint;
  }

  if (!full) {
    // The sampled rows passed or not; every element must at least have been written.
    std::size_t unwritten = 0, non_finite = 0, first = MN;
    for (std::size_t i = 0; i < MN; ++i) {
      if (std::isfinite(c[i])) continue;
      if (is_poison(c[i])) ++unwritten; else ++non_finite;
      if (first == MN) first = i;
    }
    if (first != MN) {
      ADD_FAILURE() << what.str() << ": " << unwritten << " elements of C were never written "
                    << "(still NaN) and " << non_finite << " are inf or NaN; the first is C["
                    << first / N << "][" << first % N << "]. " << hint;
    }
  }
}

template <typename Input>
void expect_gemm_matches_reference(GemmFnOf<Input> gemm, const GemmCase& c, const char* hint) {
  expect_gemm_matches_reference(gemm, c.shape, c.alpha, c.beta, hint);
}

// A negative M, N or K must throw std::invalid_argument whose message shows the bad value,
// before anything is launched.
template <typename Input>
void expect_gemm_rejects_negative_sizes(GemmFnOf<Input> gemm, const char* hint) {
  DeviceBuffer<float> buffer(64);
  const auto* inputs = reinterpret_cast<const Input*>(buffer.data());
  for (const GemmShape& shape : {GemmShape{-1, 4, 4}, GemmShape{4, -1, 4}, GemmShape{4, 4, -1}}) {
    try {
      gemm(shape.M, shape.N, shape.K, 1.0f, inputs, inputs, 0.0f, buffer.data(), nullptr);
      ADD_FAILURE() << "the GEMM accepted M x N x K = " << to_string(shape)
                    << "; a negative size must throw std::invalid_argument. " << hint;
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find("-1"), std::string::npos)
          << "the message should show the bad value: " << error.what();
    } catch (const std::exception& error) {
      ADD_FAILURE() << "M x N x K = " << to_string(shape)
                    << " should throw std::invalid_argument, got: " << error.what() << " " << hint;
    }
  }
  CUDA_CHECK(cudaDeviceSynchronize());
}

// Matrices that start a few elements past a 16-byte boundary (slices of larger tensors)
// must still come out right: a GEMM that uses 16-byte loads or stores has to notice and take
// its element-by-element path. For every offset, A, B and C each start `offset` elements
// into their buffers; alpha and beta are not 1 and 0, so C is read as well as written.
template <typename Input>
void expect_gemm_handles_misaligned_pointers(GemmFnOf<Input> gemm, GemmShape shape,
                                             const std::vector<std::size_t>& offsets,
                                             const char* hint) {
  const std::size_t MN = static_cast<std::size_t>(shape.M) * shape.N;
  const std::uint64_t seed = test_seed() + 11;
  const auto A = gemm_inputs<Input>(static_cast<std::size_t>(shape.M) * shape.K, seed);
  const auto B = gemm_inputs<Input>(static_cast<std::size_t>(shape.K) * shape.N, seed + 1);
  const auto C0 = random_uniform<float>(MN, seed + 2);
  const float alpha = 1.25f, beta = -0.5f;
  const std::vector<double> expected = reference_gemm(shape, alpha, A.exact, B.exact, beta, C0);

  for (const std::size_t offset : offsets) {
    // `offset` spare elements in front of the matrix, a few behind.
    auto placed = [offset](const auto& values) {
      using T = typename std::decay_t<decltype(values)>::value_type;
      std::vector<T> padded(values.size() + offset + 8, T(0.0f));
      std::copy(values.begin(), values.end(), padded.begin() + static_cast<std::ptrdiff_t>(offset));
      return DeviceBuffer<T>::from_host(padded);
    };
    auto device_a = placed(A.device);
    auto device_b = placed(B.device);
    auto device_c = placed(C0);
    gemm(shape.M, shape.N, shape.K, alpha, device_a.data() + offset, device_b.data() + offset,
         beta, device_c.data() + offset, nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float> all = device_c.to_host();
    const std::vector<float> c(all.begin() + static_cast<std::ptrdiff_t>(offset),
                               all.begin() + static_cast<std::ptrdiff_t>(offset + MN));
    EXPECT_TRUE(verify(c, expected, gemm_tolerance(gemm_input_dtype<Input>(), shape.K)))
        << "M x N x K = " << to_string(shape) << ", A and B start " << offset * sizeof(Input)
        << " bytes and C " << offset * sizeof(float) << " bytes past a 16-byte boundary: "
        << "16-byte accesses are not allowed there (a misaligned 16-byte load faults or reads "
        << "the wrong bytes). " << hint;
  }
}

// The GEMM must queue its work on the stream it is given: captured into a CUDA graph from
// that stream, the launch must appear in the graph (a kernel launched on the default stream
// would not), and replaying the graph must compute the right C.
// `shape` must suit the GEMM (m2.07's simple kernel takes only multiples of 16).
template <typename Input>
void expect_gemm_runs_on_stream(GemmFnOf<Input> gemm, const char* hint,
                                GemmShape shape = GemmShape{67, 45, 31}) {
  const std::size_t MN = static_cast<std::size_t>(shape.M) * shape.N;
  const std::uint64_t seed = test_seed() + 7;
  const auto A = gemm_inputs<Input>(static_cast<std::size_t>(shape.M) * shape.K, seed);
  const auto B = gemm_inputs<Input>(static_cast<std::size_t>(shape.K) * shape.N, seed + 1);
  const std::vector<double> expected = reference_gemm(shape, 1.0f, A.exact, B.exact, 0.0f, {});
  auto device_a = DeviceBuffer<Input>::from_host(A.device);
  auto device_b = DeviceBuffer<Input>::from_host(B.device);
  DeviceBuffer<float> device_c(MN);
  device_c.poison();
  const ::testing::AssertionResult on_stream = runs_on_given_stream([&](cudaStream_t stream) {
    gemm(shape.M, shape.N, shape.K, 1.0f, device_a.data(), device_b.data(), 0.0f,
         device_c.data(), stream);
  });
  if (!on_stream) {
    ADD_FAILURE() << "M x N x K = " << to_string(shape) << ": "
                  << on_stream.message() << "\n" << hint;
    return;
  }
  EXPECT_TRUE(verify(device_c.to_host(), expected,
                     gemm_tolerance(gemm_input_dtype<Input>(), shape.K)))
      << "M x N x K = " << to_string(shape) << ", run from a CUDA graph captured on a stream. "
      << hint;
}

}  // namespace course
