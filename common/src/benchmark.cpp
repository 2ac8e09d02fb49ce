#include "course/benchmark.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <set>
#include <sstream>
#include <utility>

#include "course/cuda_check.h"
#include "course/device_buffer.h"
#include "course/gpu_timer.h"

namespace course::bench {
namespace {

bool g_any_failed = false;
// Why rows were not runnable on this GPU (a row runs once per repetition: a set).
std::set<std::string> g_not_runnable;

// Launches before timing: the first launch of a kernel pays for loading it.
constexpr int kWarmupLaunches = 3;

// Writing a buffer twice the size of L2 evicts whatever the previous iteration left there.
class L2Flusher {
 public:
  L2Flusher() : buffer_(2 * std::max<std::size_t>(device().l2_cache_bytes, 1 << 20)) {}
  void flush(cudaStream_t stream) {
    CUDA_CHECK(cudaMemsetAsync(buffer_.data(), 0, buffer_.bytes(), stream));
  }

 private:
  DeviceBuffer<unsigned char> buffer_;
};

L2Flusher& l2_flusher() {
  static L2Flusher flusher;
  return flusher;
}

}  // namespace

const DeviceFacts& device() {
  static const DeviceFacts facts = query_device(0);
  return facts;
}

void fail(benchmark::State& state, const std::string& reason) {
  // Google Benchmark takes one verdict per run: a row already marked keeps its first.
  if (state.error_occurred()) return;
  g_any_failed = true;
  state.SkipWithError(reason.c_str());
}

void not_runnable(benchmark::State& state, const std::string& reason) {
  if (state.error_occurred()) return;
  g_not_runnable.insert(reason);
  state.SkipWithError((std::string(kNotRunnablePrefix) + reason).c_str());
}

void fail(benchmark::State& state, const std::exception& error) {
  if (dynamic_cast<const UnsupportedDevice*>(&error) != nullptr) {
    not_runnable(state, error.what());
  } else {
    fail(state, std::string(error.what()));
  }
}

benchmark::internal::Benchmark* register_row(const std::string& name,
                                             std::function<void(benchmark::State&)> body) {
  return benchmark::RegisterBenchmark(
      name.c_str(), [body = std::move(body)](benchmark::State& state) {
        try {
          body(state);
        } catch (const std::exception& error) {
          fail(state, error);
        }
      });
}

void measure(benchmark::State& state, Work work, const std::function<void(cudaStream_t)>& launch,
             L2Cache l2) {
  cudaStream_t stream = nullptr;  // the default stream
  if (work.precision != nullptr && *work.precision != '\0') state.SetLabel(work.precision);
  try {
    for (int i = 0; i < kWarmupLaunches; ++i) launch(stream);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaStreamSynchronize(stream));

    GpuTimer timer;
    double total_seconds = 0.0;
    std::int64_t iterations = 0;
    for (auto _ : state) {
      if (l2 == L2Cache::flush) l2_flusher().flush(stream);
      timer.start(stream);
      launch(stream);
      timer.stop(stream);
      const double seconds = timer.elapsed_ms() / 1e3;
      state.SetIterationTime(seconds);
      total_seconds += seconds;
      ++iterations;
    }
    CUDA_CHECK_LAUNCH();
    if (iterations == 0 || total_seconds <= 0.0) return;
    const double mean_seconds = total_seconds / static_cast<double>(iterations);
    if (work.bytes > 0) {
      const double gbps = work.bytes / mean_seconds / 1e9;
      state.counters["GBps"] = gbps;
      state.counters["peak_pct"] = 100.0 * gbps / device().peak_dram_gbps;
    }
    if (work.flops > 0) state.counters["TFLOPS"] = work.flops / mean_seconds / 1e12;
  } catch (const std::exception& error) {
    fail(state, error);
  }
}

void measure_memcpy(benchmark::State& state, std::int64_t float_count) {
  try {
    DeviceBuffer<float> source(static_cast<std::size_t>(float_count));
    DeviceBuffer<float> destination(static_cast<std::size_t>(float_count));
    CUDA_CHECK(cudaMemset(source.data(), 0x3C, source.bytes()));
    // Bytes moved: every byte is read once and written once.
    measure(state, Work{2.0 * static_cast<double>(source.bytes())}, [&](cudaStream_t stream) {
      CUDA_CHECK(cudaMemcpyAsync(destination.data(), source.data(), source.bytes(),
                                 cudaMemcpyDeviceToDevice, stream));
    });
    state.SetItemsProcessed(state.iterations() * float_count);
  } catch (const std::exception& error) {
    fail(state, error);
  }
}

void register_memcpy_baseline(const std::string& name, const std::vector<std::int64_t>& float_counts) {
  auto* registered = register_row(name, [](benchmark::State& state) {
    measure_memcpy(state, state.range(0));
  });
  registered->ArgName("n")->UseManualTime()->Unit(benchmark::kMicrosecond);
  for (std::int64_t count : float_counts) registered->Arg(count);
}

namespace {

// The repetitions and minimum time of every row, ahead of the command line's own flags so
// that those win (Google Benchmark keeps the last value of a flag). Google Benchmark 1.8
// wants a unit on the minimum time; 1.7 (Ubuntu's package) takes a plain number.
std::vector<std::string> default_flags() {
  std::ostringstream min_time;
  min_time << "--benchmark_min_time=" << kMinTimeSeconds;
#if COURSE_BENCHMARK_MIN_TIME_HAS_UNIT
  min_time << "s";
#endif
  return {"--benchmark_repetitions=" + std::to_string(kRepetitions),
          "--benchmark_report_aggregates_only=true", min_time.str()};
}

// The repetitions the run will use: the last --benchmark_repetitions= given.
int repetitions_in(const std::vector<char*>& args) {
  const std::string flag = "--benchmark_repetitions=";
  int repetitions = 1;
  for (const char* arg : args) {
    if (std::string(arg).rfind(flag, 0) == 0) repetitions = std::atoi(arg + flag.size());
  }
  return repetitions;
}

}  // namespace

int run_benchmarks(int argc, char** argv) {
  std::string why_not;
  if (!cuda_device_available(&why_not)) {
    std::fprintf(stderr, "%s: no CUDA GPU on this machine (%s); benchmarks need one.\n", argv[0],
                 why_not.c_str());
    return 2;
  }
  try {
    const DeviceFacts& facts = device();
    std::ostringstream cc;
    cc << facts.compute_capability_major << "." << facts.compute_capability_minor;
    benchmark::AddCustomContext("gpu", facts.name);
    benchmark::AddCustomContext("compute_capability", cc.str());
    benchmark::AddCustomContext("sm_count", std::to_string(facts.sm_count));
    benchmark::AddCustomContext("l2_cache_bytes", std::to_string(facts.l2_cache_bytes));
    benchmark::AddCustomContext("peak_dram_gbps", std::to_string(facts.peak_dram_gbps));
    int runtime_version = 0;
    CUDA_CHECK(cudaRuntimeGetVersion(&runtime_version));
    benchmark::AddCustomContext("cuda_runtime", std::to_string(runtime_version));

    std::vector<std::string> defaults = default_flags();
    std::vector<char*> args = {argv[0]};
    for (std::string& flag : defaults) args.push_back(flag.data());
    args.insert(args.end(), argv + 1, argv + argc);
    const int repetitions = repetitions_in(args);
    // With one repetition Google Benchmark reports the run itself: the mean of its iterations.
    benchmark::AddCustomContext(kStatisticContextKey, repetitions > 1 ? "median" : "mean");
    benchmark::AddCustomContext("repetitions", std::to_string(repetitions));

    int count = static_cast<int>(args.size());
    args.push_back(nullptr);
    benchmark::Initialize(&count, args.data());
    if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 2;
    benchmark::RunSpecifiedBenchmarks();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: %s\n", argv[0], error.what());
    return 1;
  }
  if (!g_not_runnable.empty()) {
    std::fprintf(stderr,
                 "%s: some rows are not runnable on this GPU (ERROR OCCURRED: '%s...' above, with "
                 "the reason); they are not failures\n",
                 argv[0], kNotRunnablePrefix);
  }
  if (g_any_failed) {
    std::fprintf(stderr, "%s: at least one benchmark row failed (see ERROR OCCURRED above)\n",
                 argv[0]);
    return 1;
  }
  return 0;
}

}  // namespace course::bench
