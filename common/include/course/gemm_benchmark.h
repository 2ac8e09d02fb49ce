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
// register_gemm_shape_rows<Input> registers the same rows for a list of M x N x K shapes
// instead of squares ("<family>/<impl>/M:<M>/N:<N>/K:<K>"): off-square shapes (a few rows,
// a long K, odd sizes) are where the tiles of a square-tuned kernel leave the GPU idle
// (m2.09). Float32 and float16 rows go into families of their own (the precision in the
// family's name), each with its own cuBLAS row.
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
#include <tuple>
#include <type_traits>
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

// Seeded by M (n for a square), so a square problem is the same whichever way it is asked for.
inline const GemmBenchProblem& gemm_bench_problem(GemmShape shape, Dtype inputs) {
  static ProblemCache<std::tuple<int, int, int, Dtype>, GemmBenchProblem> cache;
  return cache.get({shape.M, shape.N, shape.K, inputs}, [&](GemmBenchProblem& problem) {
    problem.shape = shape;
    problem.inputs = inputs;
    const std::size_t count_a = static_cast<std::size_t>(shape.M) * shape.K;
    const std::size_t count_b = static_cast<std::size_t>(shape.K) * shape.N;
    const std::uint64_t seed = static_cast<std::uint64_t>(shape.M);
    if (inputs == Dtype::fp16) {
      problem.A = gemm_inputs<__half>(count_a, 1000 + seed).exact;
      problem.B = gemm_inputs<__half>(count_b, 2000 + seed).exact;
    } else if (inputs == Dtype::bf16) {
      problem.A = gemm_inputs<__nv_bfloat16>(count_a, 1000 + seed).exact;
      problem.B = gemm_inputs<__nv_bfloat16>(count_b, 2000 + seed).exact;
    } else {
      problem.A = gemm_inputs<float>(count_a, 1000 + seed).exact;
      problem.B = gemm_inputs<float>(count_b, 2000 + seed).exact;
    }
    problem.rows = gemm_sample_rows(shape.M);
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

// TFLOPS of the rows measured so far in this run: key (family/impl, MxNxK).
inline std::map<std::pair<std::string, std::string>, double>& gemm_bench_results() {
  static std::map<std::pair<std::string, std::string>, double> results;
  return results;
}

// The baseline row of a family: cuBLAS on the family's input precision.
inline std::string gemm_baseline(Dtype inputs) {
  return inputs == Dtype::fp32 ? "cublas" : std::string("cublas_") + to_string(inputs);
}

template <typename Input>
using ShapeGemm = std::function<void(const GemmShape& shape, float alpha, const Input* A,
                                     const Input* B, float beta, float* C, cudaStream_t stream)>;

// A row's problem: M = N = K = range(0) for square rows, else range(0), range(1), range(2).
inline GemmShape gemm_row_shape(const benchmark::State& state, bool square) {
  const int first = static_cast<int>(state.range(0));
  if (square) return GemmShape{first, first, first};
  return GemmShape{first, static_cast<int>(state.range(1)), static_cast<int>(state.range(2))};
}

// One row: verify, time, then add the ratio counters where the baselines ran. The row's
// inputs are the problem's values as `Input` elements.
template <typename Input>
void run_gemm_row(benchmark::State& state, Dtype inputs, const std::string& family,
                  const std::string& impl, const std::string& previous_step, bool square,
                  const ShapeGemm<Input>& gemm) {
  state.SetLabel(precision_label<Input>());  // every row names its precision, run or not
  try {
    const GemmShape shape = gemm_row_shape(state, square);
    const std::string size = to_string(shape);
    const GemmBenchProblem& p = gemm_bench_problem(shape, inputs);
    auto A = DeviceBuffer<Input>::from_host(gemm_inputs_as<Input>(p.A));
    auto B = DeviceBuffer<Input>::from_host(gemm_inputs_as<Input>(p.B));
    DeviceBuffer<float> C(static_cast<std::size_t>(shape.M) * shape.N);
    C.poison();

    // Verify before timing: a fast wrong kernel is not a result.
    gemm(shape, 1.0f, A.data(), B.data(), 0.0f, C.data(), nullptr);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::string problem = check_gemm_bench_result(p, C.to_host());
    if (!problem.empty()) return fail(state, "wrong result: " + problem);

    const Work work{gemm_min_bytes(p.shape, sizeof(Input)), gemm_flops(p.shape),
                    precision_label<Input>()};
    measure(state, work,
            [&](cudaStream_t stream) {
              gemm(shape, 1.0f, A.data(), B.data(), 0.0f, C.data(), stream);
            });

    const auto tflops = state.counters.find("TFLOPS");
    if (tflops == state.counters.end()) return;  // measure() failed and said why
    const double mine = tflops->second.value;
    auto& results = gemm_bench_results();
    results[{family + "/" + impl, size}] = mine;
    const std::string baseline = gemm_baseline(inputs);
    const auto cublas = results.find({family + "/" + baseline, size});
    if (impl != baseline && cublas != results.end() && cublas->second > 0) {
      state.counters["cublas_pct"] = 100.0 * mine / cublas->second;
    }
    const auto step = results.find({family + "/" + previous_step, size});
    if (!previous_step.empty() && impl != previous_step && step != results.end() &&
        step->second > 0) {
      state.counters["speedup"] = mine / step->second;  // same flops: time ratio
    }
  } catch (const std::exception& error) {
    fail(state, error);  // not runnable for a course::UnsupportedDevice, failed otherwise
  }
}

// Registers one row for every n in `sizes` (square problems), or for every shape in `shapes`
// when `sizes` is empty.
template <typename Input>
void register_gemm_row(const std::string& family, Dtype inputs, const std::string& impl,
                       const std::string& previous_step, ShapeGemm<Input> gemm,
                       const std::vector<int>& sizes, const std::vector<GemmShape>& shapes = {}) {
  const bool square = shapes.empty();
  auto* row = benchmark::RegisterBenchmark(
      (family + "/" + impl).c_str(),
      [family, inputs, impl, previous_step, square, gemm](benchmark::State& state) {
        run_gemm_row<Input>(state, inputs, family, impl, previous_step, square, gemm);
      });
  row->UseManualTime()->Unit(benchmark::kMillisecond);
  if (square) {
    row->ArgName("n");
    for (int n : sizes) row->Arg(n);
  } else {
    row->ArgNames({"M", "N", "K"});
    for (const GemmShape& s : shapes) row->Args({s.M, s.N, s.K});
  }
}

// A GemmFn (or a float16 one) as a ShapeGemm.
template <typename Input>
ShapeGemm<Input> shaped(GemmFnOf<Input> gemm) {
  return [gemm](const GemmShape& s, float alpha, const Input* A, const Input* B, float beta,
                float* C, cudaStream_t stream) { gemm(s.M, s.N, s.K, alpha, A, B, beta, C, stream); };
}

// The library baseline of `Input` (cuBLAS in float32 without TF32, or cublasGemmEx).
template <typename Input>
ShapeGemm<Input> cublas_gemm() {
  return [](const GemmShape& s, float alpha, const Input* A, const Input* B, float beta, float* C,
            cudaStream_t stream) {
    static CublasHandle cublas;
    if constexpr (std::is_same_v<Input, float>) {
      cublas_sgemm_row_major(cublas.get(), s.M, s.N, s.K, alpha, A, B, beta, C, stream);
    } else {
      cublas_gemm_row_major<Input>(cublas.get(), s.M, s.N, s.K, alpha, A, B, beta, C, stream);
    }
  };
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
    detail::register_gemm_row<float>(family, Dtype::fp32, "cublas", previous_step,
                                     detail::cublas_gemm<float>(), sizes);
  }
  for (const auto& [impl, gemm] : rows) {
    detail::register_gemm_row<float>(family, Dtype::fp32, impl, previous_step,
                                     detail::shaped<float>(gemm), sizes);
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
  detail::register_gemm_row<Input>(family, inputs, detail::gemm_baseline(inputs), previous_step,
                                   detail::cublas_gemm<Input>(), sizes);
  for (const auto& [impl, gemm] : steps) {
    detail::register_gemm_row<float>(family, inputs, impl, previous_step,
                                     detail::shaped<float>(gemm), sizes);
  }
  for (const auto& [impl, gemm] : rows) {
    detail::register_gemm_row<Input>(family, inputs, impl, previous_step,
                                     detail::shaped<Input>(gemm), sizes);
  }
}

// Rows over M x N x K shapes instead of squares: "<family>/<cublas|cublas_fp16>" first, then
// the `rows` in the order given (step_ rows are the previous steps the speedup counter
// compares with), every one on A and B of type `Input` (float, __half). Rows named
// "<family>/<impl>/M:<M>/N:<N>/K:<K>".
template <typename Input>
void register_gemm_shape_rows(const std::string& family,
                              std::vector<std::pair<std::string, GemmFnOf<Input>>> rows,
                              const std::vector<GemmShape>& shapes) {
  constexpr Dtype inputs = gemm_input_dtype<Input>();
  const std::string previous_step = detail::last_step(rows);
  std::stable_partition(rows.begin(), rows.end(),
                        [](const auto& row) { return row.first.rfind("step_", 0) == 0; });
  detail::register_gemm_row<Input>(family, inputs, detail::gemm_baseline(inputs), previous_step,
                                   detail::cublas_gemm<Input>(), {}, shapes);
  for (const auto& [impl, gemm] : rows) {
    detail::register_gemm_row<Input>(family, inputs, impl, previous_step,
                                     detail::shaped<Input>(gemm), {}, shapes);
  }
}

// A sweep: rows that differ in a setting the caller captures (m2.09's sweep_gemm_plans.cu
// times every plan of its chooser). First the family's cuBLAS row, then one row per setting,
// each over its own list of shapes; every row verifies, then times, as above. After the run,
// measured_gemm_tflops gives what a row measured (its last repetition), for a table.
template <typename Input>
using ShapeGemm = detail::ShapeGemm<Input>;

template <typename Input>
void register_gemm_shape_baseline(const std::string& family, const std::vector<GemmShape>& shapes) {
  constexpr Dtype inputs = gemm_input_dtype<Input>();
  detail::register_gemm_row<Input>(family, inputs, detail::gemm_baseline(inputs), "",
                                   detail::cublas_gemm<Input>(), {}, shapes);
}

template <typename Input>
void register_gemm_shape_row(const std::string& family, const std::string& impl,
                             ShapeGemm<Input> gemm, const std::vector<GemmShape>& shapes) {
  detail::register_gemm_row<Input>(family, gemm_input_dtype<Input>(), impl, "", std::move(gemm),
                                   {}, shapes);
}

// The TFLOP/s row "<family>/<impl>" measured on `shape` in this run; 0 when it did not run
// (filtered out, failed, or not runnable). The baseline's impl is gemm_baseline_name().
inline double measured_gemm_tflops(const std::string& family, const std::string& impl,
                                   const GemmShape& shape) {
  const auto& results = detail::gemm_bench_results();
  const auto found = results.find({family + "/" + impl, to_string(shape)});
  return found == results.end() ? 0.0 : found->second;
}

template <typename Input>
std::string gemm_baseline_name() {
  return detail::gemm_baseline(gemm_input_dtype<Input>());
}

}  // namespace course::bench
