// Benchmark for exercise m1.01: how close does vector add come to the memory bandwidth?
//
// Vector add does one addition per 12 bytes moved (read a[i] and b[i], write c[i]), so
// the arithmetic is free and the time is the time to move bytes. Rows, per size n:
//   vector_add/exercise/n:...   your kernel
//   vector_add/solution/n:...   the reference solution
//   vector_add/memcpy/n:...     cudaMemcpy device to device of n floats: the practical ceiling
// Compare GBps between rows; peak_pct is the share of the theoretical DRAM bandwidth.
#include <cstdint>
#include <vector>

#include "course/benchmark.h"
#include "course/device_buffer.h"
#include "course/random.h"
#include "course/verify.h"
#include "vector_add.h"

namespace {

using VectorAddFn = void (*)(const float*, const float*, float*, std::int64_t, cudaStream_t);

template <VectorAddFn vector_add>
void bm_vector_add(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto a = course::random_uniform<float>(n, 1);
  const auto b = course::random_uniform<float>(n, 2);
  auto device_a = course::DeviceBuffer<float>::from_host(a);
  auto device_b = course::DeviceBuffer<float>::from_host(b);
  course::DeviceBuffer<float> device_c(n);
  device_c.poison();

  // Verify before timing: a fast wrong kernel is not a result.
  vector_add(device_a.data(), device_b.data(), device_c.data(), n, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<double> expected(n);
  for (std::int64_t i = 0; i < n; ++i) expected[i] = static_cast<double>(a[i]) + b[i];
  const auto check = course::verify(device_c.to_host(), expected,
                                    course::tolerance_for(course::Dtype::fp32));
  if (!check) return course::bench::fail(state, "wrong result: " + std::string(check.message()));

  const double bytes = 3.0 * static_cast<double>(n) * sizeof(float);
  course::bench::measure(state, course::bench::Work{bytes}, [&](cudaStream_t stream) {
    vector_add(device_a.data(), device_b.data(), device_c.data(), n, stream);
  });
}

const std::vector<std::int64_t> kSizes = {1 << 20, 1 << 24, 1 << 26, 1 << 28};

void register_rows() {
  for (auto* row : {course::bench::register_row("vector_add/exercise",
                                                bm_vector_add<course::exercise::vector_add>),
                    course::bench::register_row("vector_add/solution",
                                                bm_vector_add<course::solution::vector_add>)}) {
    row->ArgName("n")->UseManualTime()->Unit(benchmark::kMicrosecond);
    for (std::int64_t n : kSizes) row->Arg(n);
  }
  course::bench::register_memcpy_baseline("vector_add/memcpy", kSizes);
}

}  // namespace

int main(int argc, char** argv) {
  register_rows();
  return course::bench::run_benchmarks(argc, argv);
}
