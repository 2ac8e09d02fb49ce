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
#pragma once

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "course/device_info.h"

namespace course::bench {

struct Work {
  double bytes = 0.0;  // the fewest bytes the operation must read and write in DRAM
  double flops = 0.0;  // floating-point operations (a multiply-add counts as 2)
};

struct TimingOptions {
  int warmup_iterations = 3;
  bool flush_l2 = true;
};

// The GPU the benchmarks run on (queried once).
const DeviceFacts& device();

// Times `launch(stream)` as described above and sets the counters for `work`.
void measure(benchmark::State& state, Work work, const std::function<void(cudaStream_t)>& launch,
             TimingOptions options = {});

// Marks this row as failed (wrong result, bad setup); the program then exits non-zero.
void fail(benchmark::State& state, const std::string& reason);

// Baseline: cudaMemcpy device to device of n floats, the practical DRAM bandwidth
// ceiling for a kernel that streams memory. Registered as "<name>/n:<n>" rows.
void register_memcpy_baseline(const std::string& name, const std::vector<std::int64_t>& float_counts);

// The body of such a row, for benchmarks whose rows have other arguments (rows and columns of
// a matrix, say): times the copy of `float_count` floats and counts read + written bytes.
void measure_memcpy(benchmark::State& state, std::int64_t float_count);

// The main() of every benchmark program: exits with a one-line explanation (status 2)
// when there is no GPU, records the device in the output's context, runs the benchmarks,
// and exits with status 1 when any row failed.
int run_benchmarks(int argc, char** argv);

}  // namespace course::bench
