// Benchmark for exercise m1.02: what do the block size and float4 do to bandwidth?
//
// Vector add moves 12 bytes per addition (read a[i] and b[i], write c[i]), so its time is
// the time to move bytes. Rows, per size n (floats):
//   vector_add/memcpy/n:...                  cudaMemcpy device to device: the practical ceiling
//   vector_add/step_m1_01_vector_add/n:...   the previous step's reference (4 floats per thread)
//   vector_add/solution/n:...                the reference float4 kernel
//   vector_add/exercise/n:...                your float4 kernel
//   vector_add_grid_stride/solution/n:.../threads:...   the reference grid-stride kernel,
//                                                       block sizes 32 to 1024
//   vector_add_grid_stride/exercise/n:.../threads:...   yours, same sweep
// Compare GBps between rows; peak_pct is the share of the theoretical DRAM bandwidth.
// Only the sweep of the reference: --benchmark_filter='grid_stride/solution'.
#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "course/benchmark.h"
#include "course/device_buffer.h"
#include "course/random.h"
#include "course/verify.h"
#include "launch_config.h"
#include "vector_add.h"  // the previous step, m1.01

namespace {

// Inputs and the float64 reference for one n, made once and shared by every row of that
// size (at 2^28 floats, making them takes seconds).
struct Inputs {
  std::vector<double> expected;
  course::DeviceBuffer<float> a;
  course::DeviceBuffer<float> b;
};

const Inputs& inputs_for(std::int64_t n) {
  static course::bench::ProblemCache<std::int64_t, Inputs> cache;
  return cache.get(n, [&](Inputs& slot) {
    const auto a = course::random_uniform<float>(n, 1);
    const auto b = course::random_uniform<float>(n, 2);
    slot.expected.resize(n);
    for (std::int64_t i = 0; i < n; ++i) slot.expected[i] = static_cast<double>(a[i]) + b[i];
    slot.a = course::DeviceBuffer<float>::from_host(a);
    slot.b = course::DeviceBuffer<float>::from_host(b);
  });
}

using Launch = std::function<void(const float*, const float*, float*, std::int64_t, cudaStream_t)>;

// Each row's verdict ("" when its kernel is right, else what is wrong), keyed by the row's
// arguments (n, threads): Google Benchmark calls a row's function again for every repetition,
// on the same cached inputs, and at 2^28 floats a check reads 1 GiB back to the host and
// compares every element. So a row is verified the first time it runs, and its repetitions
// reuse the verdict. Each row function (one per kernel) keeps its own.
using Verdicts = course::bench::ProblemCache<std::pair<std::int64_t, int>, std::string>;

void run_row(benchmark::State& state, std::int64_t n, int threads, Verdicts& verdicts,
             const Launch& launch) {
  try {
    const Inputs& inputs = inputs_for(n);
    course::DeviceBuffer<float> c(n);

    // Verify before timing: a fast wrong kernel is not a result.
    const std::string& wrong = verdicts.get({n, threads}, [&](std::string& verdict) {
      c.poison();
      launch(inputs.a.data(), inputs.b.data(), c.data(), n, nullptr);
      CUDA_CHECK(cudaDeviceSynchronize());
      const auto check =
          course::verify(c.to_host(), inputs.expected, course::tolerance_for(course::Dtype::fp32));
      if (!check) verdict = "wrong result: " + std::string(check.message());
    });
    if (!wrong.empty()) return course::bench::fail(state, wrong);

    const double bytes = 3.0 * static_cast<double>(n) * sizeof(float);
    course::bench::measure(state, course::bench::Work{bytes}, [&](cudaStream_t stream) {
      launch(inputs.a.data(), inputs.b.data(), c.data(), n, stream);
    });
  } catch (const std::exception& error) {
    course::bench::fail(state, error);
  }
}

using GridStrideFn = void (*)(const float*, const float*, float*, std::int64_t, int, int,
                              cudaStream_t);
// vector_add_float4, and m1.01's vector_add: the same signature.
using VectorAddFn = void (*)(const float*, const float*, float*, std::int64_t, cudaStream_t);

template <GridStrideFn vector_add_grid_stride>
void bm_grid_stride(benchmark::State& state) {
  static Verdicts verdicts;
  const std::int64_t n = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  run_row(
      state, n, threads, verdicts,
      [threads](const float* a, const float* b, float* c, std::int64_t count, cudaStream_t stream) {
        vector_add_grid_stride(a, b, c, count, threads, 0, stream);
      });
}

template <VectorAddFn vector_add>
void bm_vector_add(benchmark::State& state) {
  static Verdicts verdicts;
  run_row(state, state.range(0), 0, verdicts, vector_add);
}

// 2^26 floats (256 MiB per array) and 2^28 (1 GiB per array): far larger than the L2 cache,
// so every byte comes from DRAM.
const std::vector<std::int64_t> kSizes = {1 << 26, 1 << 28};
const std::vector<std::int64_t> kBlockSizes = {32, 64, 128, 256, 512, 1024};

void register_rows() {
  course::bench::register_memcpy_baseline("vector_add/memcpy", kSizes);
  for (auto* row :
       {course::bench::register_row("vector_add/step_m1_01_vector_add",
                                    bm_vector_add<course::solution::vector_add>),
        course::bench::register_row("vector_add/solution",
                                    bm_vector_add<course::solution::vector_add_float4>),
        course::bench::register_row("vector_add/exercise",
                                    bm_vector_add<course::exercise::vector_add_float4>)}) {
    row->ArgName("n")->UseManualTime()->Unit(benchmark::kMicrosecond);
    for (std::int64_t n : kSizes) row->Arg(n);
  }
  for (auto* row :
       {course::bench::register_row("vector_add_grid_stride/solution",
                                    bm_grid_stride<course::solution::vector_add_grid_stride>),
        course::bench::register_row("vector_add_grid_stride/exercise",
                                    bm_grid_stride<course::exercise::vector_add_grid_stride>)}) {
    row->ArgNames({"n", "threads"})->ArgsProduct({kSizes, kBlockSizes});
    row->UseManualTime()->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_rows();
  return course::bench::run_benchmarks(argc, argv);
}
