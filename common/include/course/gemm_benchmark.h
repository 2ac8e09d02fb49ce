// The benchmark every month-2 GEMM step shares.
//
//   int main(int argc, char** argv) {
//     course::bench::register_gemm_rows(
//         "sgemm",
//         {{"step_m2_02_coalesced_gemm", course::solution::coalesced_gemm},  // previous step
//          {"solution", course::solution::tiled_gemm},
//          {"exercise", course::exercise::tiled_gemm}},
//         course::bench::gemm_benchmark_sizes(), /*include_cublas=*/true);
//     return course::bench::run_benchmarks(argc, argv);
//   }
//
// registers one row per implementation, named "<family>/<impl>/n:<n>", for square problems
// M = N = K = n (alpha = 1, beta = 0). Row names the results report understands:
//   <family>/cublas        cuBLAS SGEMM in float32 (no TF32): the baseline
//   <family>/step_<id>     a previous step's reference solution, e.g. step_m2_02_coalesced_gemm
//   <family>/solution      this step's reference solution
//   <family>/exercise      your kernel
// The cuBLAS row is registered first and the step_ rows next, so when a later row runs the
// baselines of the same run are known and it gets two more counters:
//   cublas_pct   TFLOPS as a percentage of the cuBLAS row at the same n
//   speedup      time of the step_ row (the last one given) divided by this row's time
//
// Every row verifies before it times: C starts as NaN, the GEMM runs once, every element of
// C must be finite, and every column of a sample of rows (gemm_sample_rows: one in each
// block of 32 rows, plus the first and last two) must match a float64 CPU reference within
// gemm_tolerance(fp32, n).
//
// register_tensor_core_gemm_rows<Input> does the same for GEMMs with float16 or bfloat16 A
// and B (m2.07, m2.08): the inputs are rounded to that type, the reference comes from the
// rounded values, the tolerance is gemm_tolerance(fp16 or bf16, n), and the baseline row is
// "<family>/cublas_fp16" or "<family>/cublas_bf16" (cublasGemmEx).
// Float32 step rows given to it run on the same rounded values, as floats. A CPU reference of the whole 4096^3 product would take a minute
// or more; the sampled rows cost a couple of seconds and are computed once per size, from
// the same seeded inputs every row gets. Then it times with course::bench::measure (warm-up, L2 flushed
// before every iteration, CUDA events) and reports TFLOPS.
//
// Rows this GPU cannot run (course/benchmark.h): a launcher that throws
// course::UnsupportedDevice (m2.07's tuning steps whose tiles need more shared memory than the
// GPU allows, m2.08 on anything but a Hopper) makes its row not runnable: it says why, is not
// timed and is not a failure. The library's rows (cuBLAS) run on every GPU.
#pragma once

#include <benchmark/benchmark.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "course/benchmark.h"
#include "course/cublas_handle.h"
#include "course/cuda_check.h"
#include "course/device_buffer.h"
#include "course/gemm.h"
#include "course/gemm_cublas.h"
#include "course/gemm_reference.h"
#include "course/random.h"
#include "course/verify.h"

namespace course::bench {

// The square sizes the month-2 benchmarks time: 1024^3 is small enough that launch and
// tail effects show; 4096^3 is the size the course's targets are quoted at.
inline std::vector<int> gemm_benchmark_sizes() { return {1024, 2048, 4096}; }

// The least DRAM traffic of C = A B (beta = 0): read A and B once, write C once (float32),
// with `input_bytes` per element of A and B.
inline double gemm_min_bytes(const GemmShape& s, double input_bytes = 4.0) {
  return input_bytes * (static_cast<double>(s.M) * s.K + static_cast<double>(s.K) * s.N) +
         4.0 * static_cast<double>(s.M) * s.N;
}

// A multiply-add is two floating-point operations.
inline double gemm_flops(const GemmShape& s) {
  return 2.0 * static_cast<double>(s.M) * s.N * s.K;
}

namespace detail {

// Inputs and the sampled reference for one size and input precision, made once and shared
// by every row.
struct GemmBenchProblem {
  GemmShape shape{};
  Dtype inputs = Dtype::fp32;     // fp16: A and B below hold float16 values
  std::vector<float> A, B;        // the exact values every row computes with
  std::vector<int> rows;          // the sampled rows of C
  std::vector<double> reference;  // rows.size() x N
};

inline const GemmBenchProblem& gemm_bench_problem(int n, Dtype inputs) {
  static ProblemCache<std::pair<int, Dtype>, GemmBenchProblem> cache;
  return cache.get({n, inputs}, [&](GemmBenchProblem& problem) {
    problem.shape = GemmShape{n, n, n};
    problem.inputs = inputs;
    const std::size_t count = static_cast<std::size_t>(n) * n;
    if (inputs == Dtype::fp16) {
      problem.A = gemm_inputs<__half>(count, 1000 + n).exact;
      problem.B = gemm_inputs<__half>(count, 2000 + n).exact;
    } else if (inputs == Dtype::bf16) {
      problem.A = gemm_inputs<__nv_bfloat16>(count, 1000 + n).exact;
      problem.B = gemm_inputs<__nv_bfloat16>(count, 2000 + n).exact;
    } else {
      problem.A = gemm_inputs<float>(count, 1000 + n).exact;
      problem.B = gemm_inputs<float>(count, 2000 + n).exact;
    }
    problem.rows = gemm_sample_rows(n);
    problem.reference =
        reference_gemm_rows(problem.shape, 1.0f, problem.A, problem.B, 0.0f, {}, problem.rows);
  });
}

// Returns an empty string when C (downloaded) passes, else what is wrong.
inline std::string check_gemm_bench_result(const GemmBenchProblem& p, const std::vector<float>& C) {
  const int N = p.shape.N;
  for (std::size_t i = 0; i < C.size(); ++i) {
    if (!std::isfinite(C[i])) {
      return "C[" + std::to_string(i / N) + "][" + std::to_string(i % N) + "] is " +
             (course::is_poison(C[i]) ? "never written (still NaN)" : "inf or NaN");
    }
  }
  const Tolerance tol = gemm_tolerance(p.inputs, p.shape.K);
  for (std::size_t r = 0; r < p.rows.size(); ++r) {
    const std::size_t row = static_cast<std::size_t>(p.rows[r]);
    const std::vector<float> got(C.begin() + row * N, C.begin() + (row + 1) * N);
    const std::vector<double> want(p.reference.begin() + r * N, p.reference.begin() + (r + 1) * N);
    const VerifyResult check = verify(got, want, tol);
    if (!check) {
      return "row " + std::to_string(row) + " of C (the [indices] are columns): " +
             check.message();
    }
  }
  return "";
}

// TFLOPS of the rows measured so far in this run: key (family/impl, n).
inline std::map<std::pair<std::string, int>, double>& gemm_bench_results() {
  static std::map<std::pair<std::string, int>, double> results;
  return results;
}

// The baseline row of a family: cuBLAS on the family's input precision.
inline std::string gemm_baseline(Dtype inputs) {
  return inputs == Dtype::fp32 ? "cublas" : std::string("cublas_") + to_string(inputs);
}

template <typename Input>
using SquareGemm =
    std::function<void(int n, float alpha, const Input* A, const Input* B, float beta, float* C,
                       cudaStream_t stream)>;

// One row: verify, time, then add the ratio counters where the baselines ran. The row's
// inputs are the problem's values as `Input` elements.
template <typename Input>
void run_gemm_row(benchmark::State& state, Dtype inputs, const std::string& family,
                  const std::string& impl, const std::string& previous_step,
                  const SquareGemm<Input>& square_gemm) {
  state.SetLabel(precision_label<Input>());  // every row names its precision, run or not
  try {
    const int n = static_cast<int>(state.range(0));
    const GemmBenchProblem& p = gemm_bench_problem(n, inputs);
    auto A = DeviceBuffer<Input>::from_host(gemm_inputs_as<Input>(p.A));
    auto B = DeviceBuffer<Input>::from_host(gemm_inputs_as<Input>(p.B));
    DeviceBuffer<float> C(static_cast<std::size_t>(n) * n);
    C.poison();

    // Verify before timing: a fast wrong kernel is not a result.
    square_gemm(n, 1.0f, A.data(), B.data(), 0.0f, C.data(), nullptr);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::string problem = check_gemm_bench_result(p, C.to_host());
    if (!problem.empty()) return fail(state, "wrong result: " + problem);

    const Work work{gemm_min_bytes(p.shape, sizeof(Input)), gemm_flops(p.shape),
                    precision_label<Input>()};
    measure(state, work,
            [&](cudaStream_t stream) {
              square_gemm(n, 1.0f, A.data(), B.data(), 0.0f, C.data(), stream);
            });

    const auto tflops = state.counters.find("TFLOPS");
    if (tflops == state.counters.end()) return;  // measure() failed and said why
    const double mine = tflops->second.value;
    auto& results = gemm_bench_results();
    results[{family + "/" + impl, n}] = mine;
    const std::string baseline = gemm_baseline(inputs);
    const auto cublas = results.find({family + "/" + baseline, n});
    if (impl != baseline && cublas != results.end() && cublas->second > 0) {
      state.counters["cublas_pct"] = 100.0 * mine / cublas->second;
    }
    const auto step = results.find({family + "/" + previous_step, n});
    if (!previous_step.empty() && impl != previous_step && step != results.end() &&
        step->second > 0) {
      state.counters["speedup"] = mine / step->second;  // same flops: time ratio
    }
  } catch (const std::exception& error) {
    fail(state, error);  // not runnable for a course::UnsupportedDevice, failed otherwise
  }
}

// Registers one row for every n in `sizes`.
template <typename Input>
void register_gemm_row(const std::string& family, Dtype inputs, const std::string& impl,
                       const std::string& previous_step, SquareGemm<Input> gemm,
                       const std::vector<int>& sizes) {
  auto* row = benchmark::RegisterBenchmark(
      (family + "/" + impl).c_str(),
      [family, inputs, impl, previous_step, gemm](benchmark::State& state) {
        run_gemm_row<Input>(state, inputs, family, impl, previous_step, gemm);
      });
  row->ArgName("n")->UseManualTime()->Unit(benchmark::kMillisecond);
  for (int n : sizes) row->Arg(n);
}

// A GemmFn (or a float16 one) as a square problem.
template <typename Input>
SquareGemm<Input> square(GemmFnOf<Input> gemm) {
  return [gemm](int n, float alpha, const Input* A, const Input* B, float beta, float* C,
                cudaStream_t stream) { gemm(n, n, n, alpha, A, B, beta, C, stream); };
}

// The last step_ row of `rows`: the one the speedup counter compares with.
template <typename Rows>
std::string last_step(const Rows& rows) {
  std::string previous_step;
  for (const auto& row : rows) {
    if (row.first.rfind("step_", 0) == 0) previous_step = row.first;
  }
  return previous_step;
}

}  // namespace detail

// Registers "<family>/cublas" (when include_cublas) and then one row per (impl, function)
// pair, in the order given, each for every n in `sizes`. See the top of this file.
inline void register_gemm_rows(const std::string& family,
                               std::vector<std::pair<std::string, GemmFn>> rows,
                               std::vector<int> sizes, bool include_cublas) {
  const std::string previous_step = detail::last_step(rows);
  // Baselines first, so the later rows can be compared with them.
  std::stable_partition(rows.begin(), rows.end(),
                        [](const auto& row) { return row.first.rfind("step_", 0) == 0; });
  if (include_cublas) {
    detail::register_gemm_row<float>(
        family, Dtype::fp32, "cublas", previous_step,
        [](int n, float alpha, const float* A, const float* B, float beta, float* C,
           cudaStream_t stream) {
          static CublasHandle cublas;
          cublas_sgemm_row_major(cublas.get(), n, n, n, alpha, A, B, beta, C, stream);
        },
        sizes);
  }
  for (const auto& [impl, gemm] : rows) {
    detail::register_gemm_row<float>(family, Dtype::fp32, impl, previous_step,
                                     detail::square<float>(gemm), sizes);
  }
}

// The same for GEMMs with float16 or bfloat16 A and B (`Input`): "<family>/cublas_fp16" (or
// cublas_bf16) first, then the float32 `steps` (previous steps, named step_<id>, run on the
// same rounded values as floats), then the `rows`. See the top of this file.
template <typename Input>
void register_tensor_core_gemm_rows(
    const std::string& family, const std::vector<std::pair<std::string, GemmFn>>& steps,
    const std::vector<std::pair<std::string, GemmFnOf<Input>>>& rows,
    const std::vector<int>& sizes) {
  constexpr Dtype inputs = gemm_input_dtype<Input>();
  // The previous step may be a float32 GEMM (`steps`) or one of the same input type.
  const std::string previous_step =
      detail::last_step(rows).empty() ? detail::last_step(steps) : detail::last_step(rows);
  detail::register_gemm_row<Input>(
      family, inputs, detail::gemm_baseline(inputs), previous_step,
      [](int n, float alpha, const Input* A, const Input* B, float beta, float* C,
         cudaStream_t stream) {
        static CublasHandle cublas;
        cublas_gemm_row_major<Input>(cublas.get(), n, n, n, alpha, A, B, beta, C, stream);
      },
      sizes);
  for (const auto& [impl, gemm] : steps) {
    detail::register_gemm_row<float>(family, inputs, impl, previous_step,
                                     detail::square<float>(gemm), sizes);
  }
  for (const auto& [impl, gemm] : rows) {
    detail::register_gemm_row<Input>(family, inputs, impl, previous_step,
                                     detail::square<Input>(gemm), sizes);
  }
}

}  // namespace course::bench
