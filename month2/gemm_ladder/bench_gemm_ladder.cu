// The month-2 GEMM ladder in one table: every step's kernel, yours and the reference,
// beside cuBLAS, all timed in the same run.
//
// Rows, for each square size n (M = N = K = n), in the order they run:
//   gemm_ladder/cublas/n:...                              cuBLAS SGEMM in float32 (no TF32)
//   gemm_ladder/m2_01_naive_gemm/solution/n:...           the reference of step m2.01
//   gemm_ladder/m2_01_naive_gemm/exercise/n:...           your kernel of the same step
//   ... and the same two rows for every later step, up to m2_05_register_tiling_2d.
// Every row checks its result against a float64 reference before it is timed (a wrong
// kernel shows as an error row, not as a time); see course/gemm_benchmark.h.
//
// `./course bench gemm_ladder` writes the table under build/results/<gpu>/ (with --record,
// to docs/results/<gpu>/): TFLOP/s, % of
// cuBLAS, and each row's speedup over the previous step's reference. Your rows are left out
// of the written table unless you ask for them (tools/run_benchmarks.py --include-exercise);
// run the program itself to see them:
//   ./build/month2/gemm_ladder/m2_gemm_ladder_bench --benchmark_filter=n:4096
#include <string>
#include <utility>
#include <vector>

#include "bank_conflicts.h"     // m2.04: gemm_padded
#include "coalesced_gemm.h"     // m2.02
#include "course/benchmark.h"
#include "course/gemm_benchmark.h"
#include "naive_gemm.h"         // m2.01
#include "register_tiling.h"    // m2.05: sgemm_1d_register_tile, sgemm_2d_register_tile
#include "tiled_gemm.h"         // m2.03

namespace {

struct Step {
  const char* id;  // the exercise, and which of its kernels
  course::GemmFn solution;
  course::GemmFn exercise;
};

}  // namespace

int main(int argc, char** argv) {
  namespace sol = course::solution;
  namespace ex = course::exercise;
  const std::vector<Step> ladder = {
      {"m2_01_naive_gemm", sol::naive_gemm, ex::naive_gemm},
      {"m2_02_coalesced_gemm", sol::coalesced_gemm, ex::coalesced_gemm},
      {"m2_03_tiled_gemm", sol::tiled_gemm, ex::tiled_gemm},
      {"m2_04_gemm_padded", sol::gemm_padded, ex::gemm_padded},
      {"m2_05_register_tiling_1d", sol::sgemm_1d_register_tile, ex::sgemm_1d_register_tile},
      {"m2_05_register_tiling_2d", sol::sgemm_2d_register_tile, ex::sgemm_2d_register_tile},
  };
  std::vector<std::pair<std::string, course::GemmFn>> rows;
  for (const Step& step : ladder) {
    rows.emplace_back(std::string(step.id) + "/solution", step.solution);
    rows.emplace_back(std::string(step.id) + "/exercise", step.exercise);
  }
  course::bench::register_gemm_rows("gemm_ladder", rows, course::bench::gemm_benchmark_sizes(),
                                    /*include_cublas=*/true);
  return course::bench::run_benchmarks(argc, argv);
}
