// Google Benchmark support for GPU kernels.
//
// A benchmark here always verifies before it times, times on the GPU with CUDA events,
// and reports rates:
//
//   void bm_vector_add(benchmark::State& state) {
//     ... set up inputs; run once and verify; on a wrong answer:
//     if (!ok) return course::bench::fail(state, "wrong result: ...");
//     course::bench::measure(state, course::bench::Work{.bytes = 3.0 * n * sizeof(float)},
//                            [&](cudaStream_t stream) { vector_add(a, b, c, n, stream); });
//   }
//
// measure() runs a few warm-up launches (the first launch of a kernel pays for loading
// it), then for every iteration: flushes the L2 cache so each run reads from DRAM as it
// would on first touch, records an event, launches, records an event, and reports the
// time between the events to Google Benchmark. It then sets the counters
//   GBps      bytes moved per second, in 1e9 bytes
//   peak_pct  GBps as a percentage of the device's theoretical DRAM bandwidth
//   TFLOPS    floating-point operations per second, in 1e12
// Baselines (cudaMemcpy, cuBLAS, ...) are rows of their own in the same run, so ratios
// between rows compare numbers measured on the same GPU at the same moment.
//
// One statistic: run_benchmarks() (every benchmark's main) runs each row kRepetitions
// times, each repetition for at least kMinTimeSeconds of GPU time, and reports the median
// of the repetitions (Google Benchmark's "<row>_median" aggregate, counters included). The
// JSON context names it: "statistic": "median" (kStatisticContextKey), so
// tools/run_benchmarks.py and the Python benchmarks, which write the same key, table the
// same statistic. --benchmark_repetitions=1 on the command line gives single runs, and
// the context then says "mean" (the mean over one run's iterations).
//
// Rows this GPU cannot run. A row that needs more than this GPU has (a newer compute
// capability, more shared memory per block than it allows) is neither timed nor failed: it
// says "not runnable on this GPU" and why, and the program still exits 0. The launchers
// check what their kernels need (course/requirements.h) and throw course::UnsupportedDevice
// with the reason; measure(), the GEMM and convolution rows and every row registered with
// register_row() turn that into this verdict. Google Benchmark
// reports such a row as skipped with an error message that starts with kNotRunnablePrefix,
// which is how tools/run_benchmarks.py and the Python benchmarks (benchmarking.NOT_RUNNABLE)
// tell it from a failure: the table shows the reason and leaves the row out of every ratio.
#pragma once

#include <benchmark/benchmark.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "course/device_info.h"
#include "course/requirements.h"

namespace course::bench {

struct Work {
  double bytes = 0.0;  // the fewest bytes the operation must read and write in DRAM
  double flops = 0.0;  // floating-point operations (a multiply-add counts as 2)
  // The precision the row computes in: its label in the JSON and the tables, so that every
  // row names it (precision_label<Input>() for the 16-bit tensor-core rows).
  const char* precision = "fp32";
};

// "fp32" for float inputs; "fp16 in, fp32 acc" and "bf16 in, fp32 acc" for the 16-bit
// inputs of the tensor-core kernels, which multiply in 16 bits and add in 32.
template <typename Input>
constexpr const char* precision_label() {
  if constexpr (std::is_same_v<Input, float>) {
    return "fp32";
  } else if constexpr (std::is_same_v<Input, __half>) {
    return "fp16 in, fp32 acc";
  } else {
    static_assert(std::is_same_v<Input, __nv_bfloat16>, "precision_label: float, __half or bf16");
    return "bf16 in, fp32 acc";
  }
}

// Whether measure() flushes the L2 cache before every iteration. keep: for measurements of
// the cache itself (month2/memory_hierarchy), whose working set is meant to stay there.
enum class L2Cache { flush, keep };

// How every row is timed (see above), and the JSON context key that names the statistic.
inline constexpr int kRepetitions = 5;
inline constexpr double kMinTimeSeconds = 0.1;
inline constexpr const char* kStatisticContextKey = "statistic";

// Inputs and references made once per key and shared by every row (and every repetition of
// a row) that times them: Google Benchmark calls a row's function again for each run. A
// row's verdict can be kept the same way, when checking it costs seconds (m1.02's benchmark).
//
//   static course::bench::ProblemCache<std::int64_t, Inputs> cache;
//   const Inputs& in = cache.get(n, [&](Inputs& fresh) { ... fill fresh for size n ... });
template <typename Key, typename Problem>
class ProblemCache {
 public:
  const Problem& get(const Key& key, const std::function<void(Problem&)>& make) {
    std::unique_ptr<Problem>& entry = problems_[key];
    if (!entry) {
      auto problem = std::make_unique<Problem>();
      make(*problem);
      entry = std::move(problem);  // only once it is complete: a throwing make() caches nothing
    }
    return *entry;
  }

 private:
  std::map<Key, std::unique_ptr<Problem>> problems_;
};

// The GPU the benchmarks run on (queried once).
const DeviceFacts& device();

// Times `launch(stream)` as described above and sets the counters for `work`.
void measure(benchmark::State& state, Work work, const std::function<void(cudaStream_t)>& launch,
             L2Cache l2 = L2Cache::flush);

// Marks this row as failed (wrong result, bad setup); the program then exits non-zero.
void fail(benchmark::State& state, const std::string& reason);

// Marks this row by what was thrown while it ran: not runnable on this GPU for a
// course::UnsupportedDevice (a launcher's check that the GPU has what its kernel needs),
// failed for anything else.
void fail(benchmark::State& state, const std::exception& error);

// The start of the message of a row this GPU cannot run, followed by the reason, e.g.
//   not runnable on this GPU: needs 192 KiB of shared memory per block (...); this GPU ...
inline constexpr const char* kNotRunnablePrefix = "not runnable on this GPU: ";

// Marks this row as one this GPU cannot run, with the reason: it is not timed, and it is not
// a failure (the program's exit status stays 0).
void not_runnable(benchmark::State& state, const std::string& reason);

// Registers a row "<name>" whose body may throw: what it throws becomes the row's verdict
// (fail(state, error) above) instead of ending the program. Returns Google Benchmark's
// handle, for ->Arg(...) and the rest.
benchmark::internal::Benchmark* register_row(const std::string& name,
                                             std::function<void(benchmark::State&)> body);

// Baseline: cudaMemcpy device to device of n floats, the practical DRAM bandwidth
// ceiling for a kernel that streams memory. Registered as "<name>/n:<n>" rows.
void register_memcpy_baseline(const std::string& name, const std::vector<std::int64_t>& float_counts);

// The body of such a row, for benchmarks whose rows have other arguments (rows and columns of
// a matrix, say): times the copy of `float_count` floats and counts read + written bytes.
void measure_memcpy(benchmark::State& state, std::int64_t float_count);

// The main() of every benchmark program: exits with a one-line explanation (status 2)
// when there is no GPU, records the device and the statistic in the output's context, runs
// the benchmarks (kRepetitions repetitions of kMinTimeSeconds, reporting the median,
// unless the command line says otherwise), and exits with status 1 when any row failed.
// Rows not runnable on this GPU are not failures; it says there were some.
int run_benchmarks(int argc, char** argv);

}  // namespace course::bench
