// Benchmark for exercise m1.04: one fused kernel against the chain of three.
//
// y = gelu(x * w + b) on a [rows, cols] float32 matrix. Rows, per shape:
//   affine_gelu/memcpy/rows:.../cols:...    cudaMemcpy device to device of the same matrix:
//                                           the practical ceiling for 2 matrix passes
//   affine_gelu/unfused/rows:.../cols:...   the provided chain of three kernels (as PyTorch eager)
//   affine_gelu/solution/rows:.../cols:...  the reference fused kernel
//   affine_gelu/exercise/rows:.../cols:...  your fused kernel
// Work bytes are what each version must move through DRAM:
//   fused:   read x, write y, read w and b    = (2 * rows * cols + 2 * cols) * 4
//   unfused: each of 3 kernels reads and writes the matrix = (6 * rows * cols + 2 * cols) * 4
// so GBps says how well each uses the memory system, while Time and items_per_second
// (matrix elements per second) say which finishes first: compare those for the speedup.
// Cols 8192 lets a float4 kernel run; cols 8191 forces one float at a time.
#include <cmath>
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
#include "fused_elementwise.h"

namespace {

// Inputs and the float64 reference for one shape, made once and shared by every row of
// that shape (a reference of 134 million erf calls takes seconds).
struct Inputs {
  std::vector<double> expected;
  course::DeviceBuffer<float> x;
  course::DeviceBuffer<float> w;
  course::DeviceBuffer<float> b;
};

const Inputs& inputs_for(std::int64_t rows, std::int64_t cols) {
  static course::bench::ProblemCache<std::pair<std::int64_t, std::int64_t>, Inputs> cache;
  return cache.get({rows, cols}, [&](Inputs& slot) {
    const auto x = course::random_uniform<float>(rows * cols, 1, -3.0, 3.0);
    const auto w = course::random_uniform<float>(cols, 2, -1.5, 1.5);
    const auto b = course::random_uniform<float>(cols, 3, -1.0, 1.0);
    slot.expected.resize(rows * cols);
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t c = 0; c < cols; ++c) {
        const double v = static_cast<double>(x[r * cols + c]) * w[c] + b[c];
        slot.expected[r * cols + c] = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
      }
    }
    slot.x = course::DeviceBuffer<float>::from_host(x);
    slot.w = course::DeviceBuffer<float>::from_host(w);
    slot.b = course::DeviceBuffer<float>::from_host(b);
  });
}

using Launch = std::function<void(const float* x, const float* w, const float* b, float* y,
                                  cudaStream_t stream)>;

void run_row(benchmark::State& state, double matrix_passes, const Launch& launch) {
  const std::int64_t rows = state.range(0);
  const std::int64_t cols = state.range(1);
  try {
    const Inputs& in = inputs_for(rows, cols);
    course::DeviceBuffer<float> y(rows * cols);
    y.poison();

    // Verify before timing: a fast wrong kernel is not a result.
    launch(in.x.data(), in.w.data(), in.b.data(), y.data(), nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    const auto check =
        course::verify(y.to_host(), in.expected, course::tolerance_for(course::Dtype::fp32));
    if (!check) return course::bench::fail(state, "wrong result: " + std::string(check.message()));

    const double elements = static_cast<double>(rows) * static_cast<double>(cols);
    const double bytes =
        (matrix_passes * elements + 2.0 * static_cast<double>(cols)) * sizeof(float);
    course::bench::measure(state, course::bench::Work{bytes}, [&](cudaStream_t stream) {
      launch(in.x.data(), in.w.data(), in.b.data(), y.data(), stream);
    });
    state.SetItemsProcessed(state.iterations() * rows * cols);
  } catch (const std::exception& error) {
    course::bench::fail(state, error);
  }
}

using FusedFn = void (*)(const float*, const float*, const float*, float*, std::int64_t,
                         std::int64_t, cudaStream_t);

template <FusedFn affine_gelu>
void bm_fused(benchmark::State& state) {
  const std::int64_t rows = state.range(0);
  const std::int64_t cols = state.range(1);
  run_row(state, 2.0,
          [&](const float* x, const float* w, const float* b, float* y, cudaStream_t stream) {
            affine_gelu(x, w, b, y, rows, cols, stream);
          });
}

void bm_unfused(benchmark::State& state) {
  const std::int64_t rows = state.range(0);
  const std::int64_t cols = state.range(1);
  try {
    course::DeviceBuffer<float> scratch(rows * cols);
    run_row(state, 6.0,
            [&](const float* x, const float* w, const float* b, float* y, cudaStream_t stream) {
              course::solution::affine_gelu_unfused(x, w, b, y, scratch.data(), rows, cols, stream);
            });
  } catch (const std::exception& error) {
    course::bench::fail(state, error);
  }
}

// The baseline: copy a matrix of the same shape, device to device. Like the fused kernel it
// reads every element once and writes it once.
void bm_memcpy(benchmark::State& state) {
  course::bench::measure_memcpy(state, state.range(0) * state.range(1));
}

// 16384 x 8192 floats: 512 MiB per matrix, far larger than the L2 cache, and enough
// blocks to fill any GPU many times over.
const std::vector<std::vector<std::int64_t>> kShapes = {{16384, 8192}, {16384, 8191}};

void register_rows() {
  for (auto* row : {course::bench::register_row("affine_gelu/memcpy", bm_memcpy),
                    course::bench::register_row("affine_gelu/unfused", bm_unfused),
                    course::bench::register_row("affine_gelu/solution",
                                                bm_fused<course::solution::affine_gelu>),
                    course::bench::register_row("affine_gelu/exercise",
                                                bm_fused<course::exercise::affine_gelu>)}) {
    row->ArgNames({"rows", "cols"})->UseManualTime()->Unit(benchmark::kMicrosecond);
    for (const auto& shape : kShapes) row->Args(shape);
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_rows();
  return course::bench::run_benchmarks(argc, argv);
}
