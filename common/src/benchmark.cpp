#include "course/benchmark.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <memory>
#include <sstream>

#include "course/cuda_check.h"
#include "course/device_buffer.h"
#include "course/gpu_timer.h"

namespace course::bench {
namespace {

bool g_any_failed = false;

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
  g_any_failed = true;
  state.SkipWithError(reason.c_str());
}

void measure(benchmark::State& state, Work work, const std::function<void(cudaStream_t)>& launch,
             TimingOptions options) {
  cudaStream_t stream = nullptr;  // the default stream
  try {
    for (int i = 0; i < options.warmup_iterations; ++i) launch(stream);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaStreamSynchronize(stream));

    GpuTimer timer;
    double total_seconds = 0.0;
    std::int64_t iterations = 0;
    for (auto _ : state) {
      if (options.flush_l2) l2_flusher().flush(stream);
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
    fail(state, error.what());
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
    fail(state, error.what());
  }
}

void register_memcpy_baseline(const std::string& name, const std::vector<std::int64_t>& float_counts) {
  auto* registered = benchmark::RegisterBenchmark(name.c_str(), [](benchmark::State& state) {
    measure_memcpy(state, state.range(0));
  });
  registered->ArgName("n")->UseManualTime()->Unit(benchmark::kMicrosecond);
  for (std::int64_t count : float_counts) registered->Arg(count);
}

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

    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
    benchmark::RunSpecifiedBenchmarks();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: %s\n", argv[0], error.what());
    return 1;
  }
  if (g_any_failed) {
    std::fprintf(stderr, "%s: at least one benchmark row failed (see ERROR OCCURRED above)\n",
                 argv[0]);
    return 1;
  }
  return 0;
}

}  // namespace course::bench
