// Benchmark for exercise m2.04: what bank conflicts cost, in a transpose and in a GEMM.
//
// Transposes of a square float32 matrix. The size is n = rows * cols, the number of
// elements (n:16777216 is 4096 x 4096): a transpose reads n floats and writes n floats, the
// same 2 * 4 * n bytes as the cudaMemcpy of n floats it is compared with. Rows, per n:
//   transpose_naive/memcpy                 cudaMemcpy device to device: the ceiling
//   transpose_naive/solution, /exercise    read rows, write columns
//   transpose_tiled/memcpy
//   transpose_tiled/step_transpose_naive   the reference naive transpose, the step before
//   transpose_tiled/solution, /exercise    through a [32][32] shared tile: bank conflicts
//   transpose_padded/memcpy
//   transpose_padded/step_transpose_tiled  the reference tiled transpose, the step before
//   transpose_padded/solution, /exercise   through a [32][33] tile: no conflicts
// Compare GBps across rows: the padded transpose should come close to memcpy. Every family
// has its own memcpy row so that the results table can put a "% of memcpy" on each.
//
// GEMMs, M = N = K = n, alpha = 1, beta = 0 (course/gemm_benchmark.h):
//   gemm_conflicted/cublas                  cuBLAS SGEMM in float32: the baseline
//   gemm_conflicted/step_m2_03_tiled_gemm   m2.03's reference (when m2.03 is built): B tile
//                                           not transposed, no conflicts
//   gemm_conflicted/solution, /exercise     the transposed B tile, [32][32]
//   gemm_padded/cublas, /step_m2_03_tiled_gemm
//   gemm_padded/solution, /exercise         the transposed B tile, [32][33]
// Compare TFLOPS, cublas_pct and speedup (over m2.03): the padding is the only difference
// between the two families' solution rows.
//
// Every row verifies its result before it times. Run one part with e.g.
//   --benchmark_filter=transpose_padded   or   --benchmark_filter=gemm_   or   =solution
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bank_conflicts.h"
#include "course/benchmark.h"
#include "course/device_buffer.h"
#include "course/gemm_benchmark.h"
#include "course/random.h"
#include "course/verify.h"
#if defined(COURSE_HAVE_TILED_GEMM)
#include "tiled_gemm.h"  // m2.03, the previous step
#endif

namespace {

using TransposeFn = void (*)(const float*, float*, int, int, cudaStream_t);
using BenchmarkFn = void (*)(benchmark::State&);

// The input and the expected output of one size, made once and shared by every row.
struct TransposeProblem {
  int side = 0;
  std::vector<float> in;
  std::vector<float> expected;
};

const TransposeProblem& transpose_problem(int side) {
  static course::bench::ProblemCache<int, TransposeProblem> cache;
  return cache.get(side, [&](TransposeProblem& problem) {
    const std::size_t n = static_cast<std::size_t>(side) * side;
    problem.side = side;
    problem.in = course::random_uniform<float>(n, 4000 + side);
    problem.expected.resize(n);
    for (std::size_t r = 0; r < static_cast<std::size_t>(side); ++r) {
      for (std::size_t c = 0; c < static_cast<std::size_t>(side); ++c) {
        problem.expected[c * side + r] = problem.in[r * side + c];
      }
    }
  });
}

template <TransposeFn transpose>
void bm_transpose(benchmark::State& state) {
  const auto n = static_cast<std::int64_t>(state.range(0));
  const int side = static_cast<int>(std::llround(std::sqrt(static_cast<double>(n))));
  const TransposeProblem& problem = transpose_problem(side);
  auto in = course::DeviceBuffer<float>::from_host(problem.in);
  course::DeviceBuffer<float> out(problem.in.size());
  out.poison();

  // Verify before timing: a fast wrong kernel is not a result. A transpose is exact.
  transpose(in.data(), out.data(), side, side, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  const auto check = course::verify(out.to_host(), problem.expected, course::Tolerance{0.0, 0.0});
  if (!check) return course::bench::fail(state, "wrong result: " + std::string(check.message()));

  const double bytes = 2.0 * static_cast<double>(n) * sizeof(float);
  course::bench::measure(state, course::bench::Work{bytes}, [&](cudaStream_t stream) {
    transpose(in.data(), out.data(), side, side, stream);
  });
}

// Square matrices of 4096^2 (64 MiB, about the size of the L2 cache) and 8192^2 (256 MiB).
const std::vector<std::int64_t> kTransposeElements = {4096LL * 4096, 8192LL * 8192};

void register_transpose_family(const std::string& family,
                               const std::vector<std::pair<std::string, BenchmarkFn>>& rows) {
  course::bench::register_memcpy_baseline(family + "/memcpy", kTransposeElements);
  for (const auto& [impl, function] : rows) {
    auto* row = course::bench::register_row(family + "/" + impl, function);
    row->ArgName("n")->UseManualTime()->Unit(benchmark::kMicrosecond);
    for (std::int64_t n : kTransposeElements) row->Arg(n);
  }
}

// cuBLAS, m2.03's tiled GEMM when it is built, then the solution and the exercise, at
// n = 1024, 2048 and 4096.
void register_gemm_family(const std::string& family, course::GemmFn solution_gemm,
                          course::GemmFn exercise_gemm) {
  std::vector<std::pair<std::string, course::GemmFn>> rows;
#if defined(COURSE_HAVE_TILED_GEMM)
  rows.push_back({"step_m2_03_tiled_gemm", course::solution::tiled_gemm});
#endif
  rows.push_back({"solution", solution_gemm});
  rows.push_back({"exercise", exercise_gemm});
  course::bench::register_gemm_rows(family, rows, course::bench::gemm_benchmark_sizes(),
                                    /*include_cublas=*/true);
}

void register_rows() {
  namespace exercise = course::exercise;
  namespace solution = course::solution;
  register_transpose_family("transpose_naive",
                            {{"solution", bm_transpose<solution::transpose_naive>},
                             {"exercise", bm_transpose<exercise::transpose_naive>}});
  register_transpose_family("transpose_tiled",
                            {{"step_transpose_naive", bm_transpose<solution::transpose_naive>},
                             {"solution", bm_transpose<solution::transpose_tiled>},
                             {"exercise", bm_transpose<exercise::transpose_tiled>}});
  register_transpose_family("transpose_padded",
                            {{"step_transpose_tiled", bm_transpose<solution::transpose_tiled>},
                             {"solution", bm_transpose<solution::transpose_padded>},
                             {"exercise", bm_transpose<exercise::transpose_padded>}});

  register_gemm_family("gemm_conflicted", solution::gemm_conflicted, exercise::gemm_conflicted);
  register_gemm_family("gemm_padded", solution::gemm_padded, exercise::gemm_padded);
}

}  // namespace

int main(int argc, char** argv) {
  register_rows();
  return course::bench::run_benchmarks(argc, argv);
}
