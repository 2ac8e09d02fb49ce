// The benchmark every forward convolution of month 3 shares (m3.03, m3.04).
//
//   int main(int argc, char** argv) {
//     course::bench::register_conv_rows(
//         "conv_fp32",
//         {{"m3_03_naive/solution", course::solution::conv2d_direct_naive, ""},
//          {"m3_03_tiled/solution", course::solution::conv2d_direct_tiled,
//          "m3_03_naive/solution"}},
//         course::conv_resnet_layers());
//     return course::bench::run_benchmarks(argc, argv);
//   }
//
// registers, for every layer in turn, one row per entry, named "<family>/<row>/<layer>", e.g.
// conv_fp32/m3_03_tiled/solution/ResNet_C64_56_K64_3x3. The family names the precision
// (conv_fp32: float32 inputs, float32 accumulation, no TF32). A row name "<step>/<who>" is
// the ladder form tools/run_benchmarks.py tables with a "speedup over" column; a row whose
// third field names an earlier row of the same layer also gets the counter
//   speedup   that row's time divided by this row's, measured in this same run;
// a row with a fourth field, `counters`, adds the counters it returns for the layer's shape.
//
// Every row verifies before it times: y starts as NaN, the convolution runs once (without a
// bias), every output must be finite, and the outputs of conv_sample_outputs must match the
// float64 reference of course/conv_reference.h within conv_tolerance(fp32, C * R * S). The
// inputs and the sampled reference are made once per layer and shared by its rows. Then it
// times with course::bench::measure (warm-up, L2 flushed before every iteration, CUDA events)
// and reports TFLOPS = 2 N K P Q C R S / time and GBps = the fewest bytes (x, w read once, y
// written once) / time.
//
// register_conv_rows_as<Input>(family, rows, layers, layout) does the same for kernels whose x
// and w are float16 or bfloat16 (ConvRowOf<__half>, m3.05) and/or whose tensors are NHWC /
// KRSC: the inputs are rounded to Input before the reference, the check uses
// conv_tolerance(fp16 or bf16, C R S), and the bytes count 2-byte x and w. A row may compare
// with a row of another family (compare_family, e.g. m3.05's conv_fp16 rows with m3.04's
// conv_fp32 ones): its counter is then named speedup_vs_<that family>, so the difference of
// precision is in the name.
//
// Rows this GPU cannot run (course/benchmark.h): a launcher that throws
// course::UnsupportedDevice (m3.05's bfloat16 kernels below compute capability 8.0, say)
// makes its row not runnable: it says why, is not timed and is not a failure.
#pragma once

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cmath>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "course/benchmark.h"
#include "course/conv.h"
#include "course/conv_reference.h"
#include "course/cuda_check.h"
#include "course/device_buffer.h"
#include "course/gemm_reference.h"
#include "course/random.h"
#include "course/verify.h"

namespace course::bench {

// (No default member initializers: GCC 12 fails, an internal compiler error, on one for a
// std::function member of this class template. Fields left out of a brace initializer are
// empty all the same.)
template <typename Input>
struct ConvRowOf {
  std::string name;        // "<step>/<who>", e.g. "m3_03_tiled/solution"
  ConvCallOf<Input> conv;  // a ConvFn (course/conv.h) or ConvFnOf<Input>, or a lambda binding more
  std::string compare_with;  // an earlier row's name, for the speedup counter, or empty
  // Extra counters of the row, worked out from the layer's shape (e.g. m3.04's X_col bytes);
  // empty: none.
  std::function<std::map<std::string, double>(const ConvShape&)> counters;
  // The family of the compare_with row, when it is not this row's own (another precision).
  std::string compare_family;
};
using ConvRow = ConvRowOf<float>;  // NCHW float32 (m3.03, m3.04)

// The fewest DRAM bytes of one forward convolution: read x and w once (input_bytes each
// element), write y once (output_bytes each: float32 for the course's kernels).
inline double conv_min_bytes(const ConvShape& s, double input_bytes = 4.0,
                             double output_bytes = 4.0) {
  return input_bytes *
             (static_cast<double>(s.input_elements()) + static_cast<double>(s.weight_elements())) +
         output_bytes * static_cast<double>(s.output_elements());
}

namespace detail {

template <typename Input>
struct ConvBenchProblem {
  ConvShape shape{};
  Dtype dtype = Dtype::fp32;
  std::vector<Input> x, w;            // in the layout the rows take
  std::vector<std::int64_t> sampled;  // conv_sample_outputs
  std::vector<double> reference;      // at the sampled outputs
};

template <typename Input>
const ConvBenchProblem<Input>& conv_bench_problem(const ConvCase& layer, ConvLayout layout) {
  static std::map<std::string, std::unique_ptr<ConvBenchProblem<Input>>> cache;
  auto& entry = cache[std::string(layer.name) + "/" + to_string(layout)];
  if (!entry) {
    auto problem = std::make_unique<ConvBenchProblem<Input>>();
    const ConvShape& s = layer.shape;
    problem->shape = s;
    problem->dtype = gemm_input_dtype<Input>();
    const auto x = gemm_inputs<Input>(static_cast<std::size_t>(s.input_elements()), 3000);
    const auto w = gemm_inputs<Input>(static_cast<std::size_t>(s.weight_elements()), 4000);
    problem->x = x.device;
    problem->w = w.device;
    problem->sampled = conv_sample_outputs(s, layout);
    problem->reference =
        reference_conv2d_outputs(s, layout, x.exact, w.exact, {}, problem->sampled);
    entry = std::move(problem);
  }
  return *entry;
}

// An empty string when every output of y (downloaded) is finite, else which one is not.
inline std::string first_non_finite_output(const std::vector<float>& y) {
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (!std::isfinite(y[i])) {
      return "output " + std::to_string(i) + " is " +
             (course::is_poison(y[i]) ? "never written (still NaN)" : "inf or NaN");
    }
  }
  return "";
}

// An empty string when y (downloaded) passes, else what is wrong.
template <typename Input>
std::string check_conv_bench_result(const ConvBenchProblem<Input>& p, const std::vector<float>& y) {
  if (std::string problem = first_non_finite_output(y); !problem.empty()) return problem;
  std::vector<float> got(p.sampled.size());
  for (std::size_t i = 0; i < got.size(); ++i) got[i] = y[static_cast<std::size_t>(p.sampled[i])];
  const VerifyResult check = verify(got, p.reference, conv_tolerance(p.dtype, p.shape.gemm_k()));
  if (!check)
    return std::string("sampled outputs (the [indices] count the sample): ") + check.message();
  return "";
}

// Seconds per run of the rows measured so far: key "<family>/<row>/<layer>".
inline std::map<std::string, double>& conv_bench_seconds() {
  static std::map<std::string, double> results;
  return results;
}

template <typename Input>
void run_conv_row(benchmark::State& state, const std::string& family, const ConvRowOf<Input>& row,
                  const ConvCase& layer, ConvLayout layout) {
  state.SetLabel(precision_label<Input>());  // every row names its precision, run or not
  try {
    const ConvBenchProblem<Input>& p = conv_bench_problem<Input>(layer, layout);
    const ConvShape& s = p.shape;
    auto x = DeviceBuffer<Input>::from_host(p.x);
    auto w = DeviceBuffer<Input>::from_host(p.w);
    DeviceBuffer<float> y(static_cast<std::size_t>(s.output_elements()));
    y.poison();

    // Verify before timing: a fast wrong kernel is not a result.
    row.conv(s, x.data(), w.data(), nullptr, y.data(), nullptr);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::string problem = check_conv_bench_result(p, y.to_host());
    if (!problem.empty()) return fail(state, "wrong result for " + to_string(s) + ": " + problem);

    const Work work{conv_min_bytes(s, sizeof(Input)), s.flops(), precision_label<Input>()};
    measure(state, work, [&](cudaStream_t stream) {
      row.conv(s, x.data(), w.data(), nullptr, y.data(), stream);
    });

    const auto tflops = state.counters.find("TFLOPS");
    if (tflops == state.counters.end() || tflops->second.value <= 0) return;  // measure() failed
    const double seconds = s.flops() / (tflops->second.value * 1e12);
    auto& results = conv_bench_seconds();
    results[family + "/" + row.name + "/" + layer.name] = seconds;
    if (!row.compare_with.empty()) {
      const std::string other = row.compare_family.empty() ? family : row.compare_family;
      const auto earlier = results.find(other + "/" + row.compare_with + "/" + layer.name);
      const std::string counter = other == family ? "speedup" : "speedup_vs_" + other;
      if (earlier != results.end()) state.counters[counter] = earlier->second / seconds;
    }
    if (row.counters) {
      for (const auto& [name, value] : row.counters(s)) state.counters[name] = value;
    }
  } catch (const std::exception& error) {
    fail(state, error);  // not runnable for a course::UnsupportedDevice, failed otherwise
  }
}

}  // namespace detail

// Registers the rows described at the top of this file: for each layer, each row in order,
// with x, w and y in `layout`.
template <typename Input>
void register_conv_rows_as(const std::string& family, const std::vector<ConvRowOf<Input>>& rows,
                           const std::vector<ConvCase>& layers,
                           ConvLayout layout = ConvLayout::nchw) {
  for (const ConvCase& layer : layers) {
    for (const ConvRowOf<Input>& row : rows) {
      auto* bench = benchmark::RegisterBenchmark(
          (family + "/" + row.name + "/" + layer.name).c_str(),
          [family, row, layer, layout](benchmark::State& state) {
            detail::run_conv_row<Input>(state, family, row, layer, layout);
          });
      bench->UseManualTime()->Unit(benchmark::kMillisecond);
    }
  }
}

// The float32 NCHW rows of m3.03 and m3.04.
inline void register_conv_rows(const std::string& family, const std::vector<ConvRow>& rows,
                               const std::vector<ConvCase>& layers) {
  register_conv_rows_as<float>(family, rows, layers);
}

}  // namespace course::bench
