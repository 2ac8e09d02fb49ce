// The test bodies every forward convolution of month 3 shares (m3.03, m3.04). They take a
// course::ConvCall (course/conv_reference.h): a launcher with ConvFn's signature, or a lambda
// that binds more arguments. An exercise's test file only says which launcher to test and which TODOs to
// point at:
//
//   constexpr const char* kHint = "look at TODO(m3.03a) ... in month3/03_direct_conv/...";
//
//   class NaiveConvTest : public course::GpuTest,
//                         public ::testing::WithParamInterface<course::ConvCase> {};
//   TEST_P(NaiveConvTest, MatchesFloat64Reference) {
//     course::expect_conv_matches_reference(course::impl::conv2d_direct_naive,
//                                           GetParam().shape, /*with_bias=*/false, kHint);
//   }
//   INSTANTIATE_TEST_SUITE_P(Shapes, NaiveConvTest, ::testing::ValuesIn(course::conv_test_cases()),
//                            course::conv_case_name);
//
// What expect_conv_matches_reference checks, and why a wrong kernel cannot pass:
//   * x, w (and the bias) are seeded random values in [-1, 1] (COURSE_SEED picks others),
//     never constants, so reading the wrong element, channel or filter changes the sum.
//   * y starts as NaN (the poison), so an output the kernel never writes fails.
//   * x, w, the bias and y each sit between 1024 NaN guard elements. Writing outside y
//     changes a guard (reported); *using* a value read past the end of x or w turns an
//     output into NaN, even when a zero-filled tile multiplies it by 0.
//   * The result is compared with the float64 CPU reference of course/conv_reference.h
//     within conv_tolerance(fp32, C * R * S) (+ 1 with a bias): every output when the
//     reference costs at most 2^28 multiply-adds, otherwise the outputs of
//     conv_sample_outputs (the edges of every tile, every image and filter at the corners),
//     after every output of y has been checked to be written and finite.
//
// The same bodies test a convolution whose x and w are float16 or bfloat16 (m3.05's implicit
// GEMM, a ConvCallOf<__half>) and whose tensors are NHWC / KRSC: the *_as<Input> forms with
// ConvTestOptions{ConvLayout::nhwc}. The inputs are then rounded to the input type first and
// the reference is computed from the rounded values; the tolerance is
// conv_tolerance(fp16 or bf16, C * R * S). ConvTestOptions::input_offset starts x and w
// that many elements past a 16-byte boundary (a kernel's slow path for unaligned tensors).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "course/conv.h"
#include "course/conv_reference.h"
#include "course/cuda_check.h"
#include "course/device_buffer.h"
#include "course/gemm_reference.h"
#include "course/guarded_buffer.h"
#include "course/random.h"
#include "course/testing.h"
#include "course/verify.h"

namespace course {

// Test names: the ConvCase's own name ("Filter7x7Stride2", "ResNet_C64_56_K64_3x3").
inline std::string conv_case_name(const ::testing::TestParamInfo<ConvCase>& info) {
  return info.param.name;
}

// What a convolution under test takes besides its input type.
struct ConvTestOptions {
  ConvLayout layout = ConvLayout::nchw;  // of x, w and y (course/conv.h)
  std::size_t input_offset = 0;          // x and w start this many elements past 16 bytes
};

// "y[n=1][k=3][p=0][q=12]" for an offset of y in `layout`, for messages.
inline std::string describe_conv_output(const ConvShape& s, std::int64_t index,
                                        ConvLayout layout = ConvLayout::nchw) {
  const std::int64_t Q = s.Q(), P = s.P();
  std::int64_t n, k, p, q;
  if (layout == ConvLayout::nchw) {
    q = index % Q, p = (index / Q) % P, k = (index / Q / P) % s.K, n = index / Q / P / s.K;
  } else {
    k = index % s.K, q = (index / s.K) % Q, p = (index / s.K / Q) % P, n = index / s.K / Q / P;
  }
  return "y[n=" + std::to_string(n) + "][k=" + std::to_string(k) + "][p=" + std::to_string(p) +
         "][q=" + std::to_string(q) + "]";
}

// Whether the check compares every output (a float64 reference of at most 2^28
// multiply-adds: well under a second) or a sample of them.
inline bool conv_check_is_full(const ConvShape& s) {
  return static_cast<double>(s.output_elements()) * static_cast<double>(s.gemm_k()) <= 268435456.0;
}

// Runs `conv` once on seeded random inputs (in options.layout, rounded to Input) and checks y
// and the guards as described at the top of this file. Failures are reported with
// ADD_FAILURE, each ending with `hint`. `stream` is passed to conv, which must finish its
// work there.
template <typename Input>
void expect_conv_matches_reference_as(const ConvCallOf<Input>& conv, const ConvShape& s,
                                      bool with_bias, const char* hint,
                                      cudaStream_t stream = nullptr, ConvTestOptions options = {}) {
  const std::uint64_t seed = test_seed();
  const ConvLayout layout = options.layout;
  std::ostringstream what;
  what << "conv2d (" << to_string(gemm_input_dtype<Input>()) << ", " << to_string(layout)
       << ") of " << to_string(s) << (with_bias ? " with a bias" : " without a bias")
       << (options.input_offset != 0
               ? ", x and w " + std::to_string(options.input_offset * sizeof(Input)) +
                     " bytes past 16-byte boundaries"
               : std::string())
       << " (seed " << seed << ")";

  // The values the kernel gets, and the same values as floats for the reference.
  const auto x = gemm_inputs<Input>(static_cast<std::size_t>(s.input_elements()), seed);
  const auto w = gemm_inputs<Input>(static_cast<std::size_t>(s.weight_elements()), seed + 1);
  const std::vector<float> bias =
      with_bias ? random_uniform<float>(static_cast<std::size_t>(s.K), seed + 2) : std::vector<float>();
  const std::size_t outputs = static_cast<std::size_t>(s.output_elements());

  auto device_x = GuardedBuffer<Input>::from_host(x.device, options.input_offset);
  auto device_w = GuardedBuffer<Input>::from_host(w.device, options.input_offset);
  auto device_bias = GuardedBuffer<float>::from_host(bias);
  GuardedBuffer<float> device_y(outputs);
  // cudaMemset and cudaMemcpy from pageable memory may still be running when they return,
  // and a non-blocking `stream` would not wait for them.
  CUDA_CHECK(cudaDeviceSynchronize());

  try {
    conv(s, device_x.data(), device_w.data(), with_bias ? device_bias.data() : nullptr,
         device_y.data(), stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    CUDA_CHECK(cudaDeviceSynchronize());  // errors inside the kernel surface here
  } catch (const std::exception& error) {
    ADD_FAILURE() << what.str() << ": the convolution failed: " << error.what() << "\n" << hint;
    return;
  }

  const auto contents = device_y.download();
  if (contents.first_stray_write && *contents.first_stray_write < 0) {
    ADD_FAILURE() << what.str() << ": the kernel wrote before the start of y, at y["
                  << *contents.first_stray_write << "] (a negative index?). " << hint;
  } else if (contents.first_stray_write) {
    ADD_FAILURE() << what.str() << ": the kernel wrote past the end of y, at y["
                  << *contents.first_stray_write << "]: outputs with k >= K, p >= P or "
                  << "q >= Q (the spare threads of partial tiles) must not be written. " << hint;
  }
  const std::vector<float>& y = contents.values;

  const bool full = conv_check_is_full(s);
  std::vector<std::int64_t> checked;
  if (full) {
    checked.resize(outputs);
    for (std::size_t i = 0; i < outputs; ++i) checked[i] = static_cast<std::int64_t>(i);
  } else {
    // A sample is compared with the reference; every output must still be written.
    std::size_t unwritten = 0, first = 0;
    for (std::size_t i = 0; i < outputs; ++i) {
      if (!std::isfinite(y[i]) && unwritten++ == 0) first = i;
    }
    if (unwritten > 0) {
      ADD_FAILURE() << what.str() << ": " << unwritten << " of " << outputs
                    << " outputs are not finite, the first "
                    << describe_conv_output(s, static_cast<std::int64_t>(first), layout) << " = "
                    << y[first]
                    << (is_poison(y[first]) ? " (never written: still the poison value)"
                                                    : "")
                    << ". " << hint;
      return;
    }
    checked = conv_sample_outputs(s, layout);
  }

  const std::vector<double> expected =
      reference_conv2d_outputs(s, layout, x.exact, w.exact, bias, checked);
  std::vector<float> got(checked.size());
  for (std::size_t i = 0; i < checked.size(); ++i) got[i] = y[static_cast<std::size_t>(checked[i])];
  const Tolerance tol = conv_tolerance(gemm_input_dtype<Input>(), s.gemm_k() + (with_bias ? 1 : 0));
  const ::testing::AssertionResult match = verify(got, expected, tol);
  if (!match) {
    // Name the first wrong output by its (n, k, p, q), which says which tile went wrong.
    std::size_t first = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double error = std::fabs(static_cast<double>(got[i]) - expected[i]);
      if (!(error <= tol.atol + tol.rtol * std::fabs(expected[i]))) {
        first = i;
        break;
      }
    }
    ADD_FAILURE() << what.str() << ": y differs from the float64 reference"
                  << (full ? "" : " on the sampled outputs (the [indices] count the sample)")
                  << "; the first wrong output is "
                  << describe_conv_output(s, checked[first], layout) << " = " << got[first]
                  << ", expected " << expected[first] << ".\n"
                  << match.message() << "\n" << hint;
  }
}

// The float32 NCHW form (m3.03, m3.04).
inline void expect_conv_matches_reference(const ConvCall& conv, const ConvShape& s, bool with_bias,
                                          const char* hint, cudaStream_t stream = nullptr) {
  expect_conv_matches_reference_as<float>(conv, s, with_bias, hint, stream);
}

namespace detail {

// Calls conv and expects std::invalid_argument whose message holds every one of `wanted`.
template <typename Call>
void expect_conv_rejects(const Call& call, const std::string& what,
                         const std::vector<std::string>& wanted, const char* hint) {
  try {
    call();
    ADD_FAILURE() << "the launcher accepted " << what
                  << "; it must throw std::invalid_argument. " << hint;
  } catch (const std::invalid_argument& error) {
    const std::string message = error.what();
    for (const std::string& part : wanted) {
      EXPECT_NE(message.find(part), std::string::npos)
          << "for " << what << " the message should contain \"" << part
          << "\" (the launcher's name and the bad value); it is: " << message;
    }
  } catch (const std::exception& error) {
    ADD_FAILURE() << what << " should throw std::invalid_argument, got: " << error.what() << " "
                  << hint;
  }
}

}  // namespace detail

// Bad shapes and null pointers are rejected with std::invalid_argument naming `function` and
// the bad value, before anything runs; N == 0 is accepted and does nothing (x and y may be
// null then). The argument checks are given code in the skeletons: this test guards the
// contract (course/conv.h: require_conv_arguments, require_conv_pointers).
// (x and w point into the same float buffer as y, reinterpreted as Input.)
template <typename Input>
void expect_conv_rejects_bad_arguments_as(const ConvCallOf<Input>& conv,
                                          const std::string& function, const char* hint) {
  GuardedBuffer<float> buffer(4096);  // stands in for x, w and y: nothing may touch it
  float* y_buffer = buffer.data();
  Input* p_in = reinterpret_cast<Input*>(y_buffer);
  const ConvShape good = conv_shape(2, 3, 8, 8, 4, 3, 3, 1, 1);
  struct Bad {
    ConvShape shape;
    std::string what;
    std::vector<std::string> wanted;
  };
  std::vector<Bad> bad;
  auto with = [&](auto change) {
    ConvShape s = good;
    change(s);
    return s;
  };
  bad.push_back({with([](ConvShape& s) { s.N = -1; }), "N = -1", {"N must be >= 0, got -1"}});
  bad.push_back({with([](ConvShape& s) { s.C = 0; }), "C = 0", {"C = 0"}});
  bad.push_back({with([](ConvShape& s) { s.H = -5; }), "H = -5", {"H = -5"}});
  bad.push_back({with([](ConvShape& s) { s.K = -2; }), "K = -2", {"K = -2"}});
  bad.push_back({with([](ConvShape& s) { s.S = 0; }), "S = 0", {"S = 0"}});
  bad.push_back({with([](ConvShape& s) { s.stride_w = 0; }), "stride_w = 0", {"stride", "0"}});
  bad.push_back({with([](ConvShape& s) { s.dilation_h = -1; }), "dilation_h = -1", {"dilation", "-1"}});
  bad.push_back({with([](ConvShape& s) { s.pad_h = -1; }), "pad_h = -1", {"padding", "-1"}});
  // A 9 x 9 filter on an 8 x 8 image without padding: P = Q = 0, an empty output.
  bad.push_back({with([](ConvShape& s) { s.R = s.S = 9, s.pad_h = s.pad_w = 0; }),
                 "a 9 x 9 filter on an 8 x 8 image without padding", {"empty", "0 x 0"}});
  for (const Bad& b : bad) {
    std::vector<std::string> wanted = b.wanted;
    wanted.push_back(function);
    detail::expect_conv_rejects([&] { conv(b.shape, p_in, p_in, nullptr, y_buffer, nullptr); }, b.what, wanted,
                                hint);
  }
  detail::expect_conv_rejects([&] { conv(good, p_in, nullptr, nullptr, y_buffer, nullptr); }, "w = null",
                              {function, "w must be a device pointer"}, hint);
  detail::expect_conv_rejects([&] { conv(good, nullptr, p_in, nullptr, y_buffer, nullptr); }, "x = null",
                              {function, "x must be a device pointer"}, hint);
  detail::expect_conv_rejects([&] { conv(good, p_in, p_in, nullptr, nullptr, nullptr); }, "y = null",
                              {function, "y must be a device pointer"}, hint);

  // N == 0: nothing to compute, so nothing may be launched or written, and x, y may be null.
  ConvShape empty = good;
  empty.N = 0;
  try {
    conv(empty, nullptr, p_in, nullptr, nullptr, nullptr);
    conv(empty, p_in, p_in, nullptr, y_buffer, nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
  } catch (const std::exception& error) {
    ADD_FAILURE() << "N = 0 is an empty batch, not an error: " << error.what() << " " << hint;
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto contents = buffer.download();
  bool untouched = !contents.first_stray_write;
  for (const float value : contents.values) untouched = untouched && is_poison(value);
  EXPECT_TRUE(untouched) << "a rejected call or an N = 0 call wrote to memory. " << hint;
}

inline void expect_conv_rejects_bad_arguments(const ConvCall& conv, const std::string& function,
                                              const char* hint) {
  expect_conv_rejects_bad_arguments_as<float>(conv, function, hint);
}

// The launcher must queue its work on the stream it is given: captured into a CUDA graph from
// that stream, the launch must appear in the graph (a kernel launched on the default stream
// would not), and replaying the graph must compute the right y.
template <typename Input>
void expect_conv_runs_on_stream_as(const ConvCallOf<Input>& conv, const char* hint,
                                   ConvShape s = conv_shape(2, 5, 13, 11, 7, 3, 3, 1, 1),
                                   ConvLayout layout = ConvLayout::nchw) {
  const std::uint64_t seed = test_seed() + 7;
  const auto x = gemm_inputs<Input>(static_cast<std::size_t>(s.input_elements()), seed);
  const auto w = gemm_inputs<Input>(static_cast<std::size_t>(s.weight_elements()), seed + 1);
  const auto bias = random_uniform<float>(static_cast<std::size_t>(s.K), seed + 2);
  const std::vector<double> expected = reference_conv2d(s, layout, x.exact, w.exact, bias);
  auto device_x = DeviceBuffer<Input>::from_host(x.device);
  auto device_w = DeviceBuffer<Input>::from_host(w.device);
  auto device_bias = DeviceBuffer<float>::from_host(bias);
  DeviceBuffer<float> device_y(static_cast<std::size_t>(s.output_elements()));
  device_y.poison();
  const ::testing::AssertionResult on_stream = runs_on_given_stream([&](cudaStream_t stream) {
    conv(s, device_x.data(), device_w.data(), device_bias.data(), device_y.data(), stream);
  });
  if (!on_stream) {
    ADD_FAILURE() << to_string(s) << ": " << on_stream.message() << "\n" << hint;
    return;
  }
  EXPECT_TRUE(verify(device_y.to_host(), expected,
                     conv_tolerance(gemm_input_dtype<Input>(), s.gemm_k() + 1)))
      << to_string(s) << " (" << to_string(layout)
      << ") with a bias, run from a CUDA graph captured on a stream. " << hint;
}

inline void expect_conv_runs_on_stream(const ConvCall& conv, const char* hint,
                                       ConvShape s = conv_shape(2, 5, 13, 11, 7, 3, 3, 1, 1)) {
  expect_conv_runs_on_stream_as<float>(conv, hint, s);
}

}  // namespace course
