// The benchmark every forward convolution of month 3 shares (m3.03, m3.04).
//
//   int main(int argc, char** argv) {
//     course::bench::register_conv_rows(
//         "conv_fp32",
//         {{"m3_03_naive/solution", course::solution::conv2d_direct_naive, ""},
//          {"m3_03_tiled/solution", course::solution::conv2d_direct_tiled, "m3_03_naive/solution"}},
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
#include "course/random.h"
#include "course/verify.h"

namespace course::bench {

struct ConvRow {
  std::string name;        // "<step>/<who>", e.g. "m3_03_tiled/solution"
  ConvCall conv;           // NCHW float32: a ConvFn (course/conv.h), or a lambda binding more
  std::string compare_with = "";  // an earlier row's name, for the speedup counter, or ""
  // Extra counters of the row, worked out from the layer's shape (e.g. m3.04's X_col bytes);
  // empty: none.
  std::function<std::map<std::string, double>(const ConvShape&)> counters = {};
};

// The fewest DRAM bytes of one forward convolution in float32: read x and w once, write y.
inline double conv_min_bytes(const ConvShape& s) {
  return 4.0 * (static_cast<double>(s.input_elements()) + static_cast<double>(s.weight_elements()) +
                static_cast<double>(s.output_elements()));
}

namespace detail {

struct ConvBenchProblem {
  ConvShape shape{};
  std::vector<float> x, w;
  std::vector<std::int64_t> sampled;  // conv_sample_outputs
  std::vector<double> reference;      // at the sampled outputs
};

inline const ConvBenchProblem& conv_bench_problem(const ConvCase& layer) {
  static std::map<std::string, std::unique_ptr<ConvBenchProblem>> cache;
  auto& entry = cache[layer.name];
  if (!entry) {
    auto problem = std::make_unique<ConvBenchProblem>();
    const ConvShape& s = layer.shape;
    problem->shape = s;
    problem->x = random_uniform<float>(static_cast<std::size_t>(s.input_elements()), 3000);
    problem->w = random_uniform<float>(static_cast<std::size_t>(s.weight_elements()), 4000);
    problem->sampled = conv_sample_outputs(s, ConvLayout::nchw);
    problem->reference =
        reference_conv2d_outputs(s, ConvLayout::nchw, problem->x, problem->w, {}, problem->sampled);
    entry = std::move(problem);
  }
  return *entry;
}

// An empty string when y (downloaded) passes, else what is wrong.
inline std::string check_conv_bench_result(const ConvBenchProblem& p, const std::vector<float>& y) {
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (!std::isfinite(y[i])) {
      return "output " + std::to_string(i) + " is " +
             (course::is_poison(y[i]) ? "never written (still NaN)" : "inf or NaN");
    }
  }
  std::vector<float> got(p.sampled.size());
  for (std::size_t i = 0; i < got.size(); ++i) got[i] = y[static_cast<std::size_t>(p.sampled[i])];
  const VerifyResult check =
      verify(got, p.reference, conv_tolerance(Dtype::fp32, p.shape.gemm_k()));
  if (!check) return std::string("sampled outputs (the [indices] count the sample): ") + check.message();
  return "";
}

// Seconds per run of the rows measured so far: key "<family>/<row>/<layer>".
inline std::map<std::string, double>& conv_bench_seconds() {
  static std::map<std::string, double> results;
  return results;
}

inline void run_conv_row(benchmark::State& state, const std::string& family, const ConvRow& row,
                         const ConvCase& layer) {
  try {
    const ConvBenchProblem& p = conv_bench_problem(layer);
    const ConvShape& s = p.shape;
    auto x = DeviceBuffer<float>::from_host(p.x);
    auto w = DeviceBuffer<float>::from_host(p.w);
    DeviceBuffer<float> y(static_cast<std::size_t>(s.output_elements()));
    y.poison();

    // Verify before timing: a fast wrong kernel is not a result.
    row.conv(s, x.data(), w.data(), nullptr, y.data(), nullptr);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::string problem = check_conv_bench_result(p, y.to_host());
    if (!problem.empty()) return fail(state, "wrong result for " + to_string(s) + ": " + problem);

    measure(state, Work{conv_min_bytes(s), s.flops()}, [&](cudaStream_t stream) {
      row.conv(s, x.data(), w.data(), nullptr, y.data(), stream);
    });

    const auto tflops = state.counters.find("TFLOPS");
    if (tflops == state.counters.end() || tflops->second.value <= 0) return;  // measure() failed
    const double seconds = s.flops() / (tflops->second.value * 1e12);
    auto& results = conv_bench_seconds();
    results[family + "/" + row.name + "/" + layer.name] = seconds;
    if (!row.compare_with.empty()) {
      const auto earlier = results.find(family + "/" + row.compare_with + "/" + layer.name);
      if (earlier != results.end()) state.counters["speedup"] = earlier->second / seconds;
    }
    if (row.counters) {
      for (const auto& [name, value] : row.counters(s)) state.counters[name] = value;
    }
  } catch (const std::exception& error) {
    fail(state, error.what());
  }
}

}  // namespace detail

// Registers the rows described at the top of this file: for each layer, each row in order.
inline void register_conv_rows(const std::string& family, const std::vector<ConvRow>& rows,
                               const std::vector<ConvCase>& layers) {
  for (const ConvCase& layer : layers) {
    for (const ConvRow& row : rows) {
      auto* bench = benchmark::RegisterBenchmark(
          (family + "/" + row.name + "/" + layer.name).c_str(),
          [family, row, layer](benchmark::State& state) {
            detail::run_conv_row(state, family, row, layer);
          });
      bench->UseManualTime()->Unit(benchmark::kMillisecond);
    }
  }
}

}  // namespace course::bench
