// The measurements the chooser's thresholds come from (shape_chooser.cu): every plan of
// m2.09, on every shape of the benchmark (bench_gemm_shapes.cu), against cuBLAS in the same
// run. Not part of the course's recorded benchmarks (its name does not end in _bench); run it
// by hand after changing a kernel or on a new GPU:
//
//   ./build/month2/09_gemm_shapes/m2_09_gemm_shapes_sweep                    (all, ~2 minutes)
//   ./build/month2/09_gemm_shapes/m2_09_gemm_shapes_sweep --benchmark_filter=sweep_fp16
//   ./build/month2/09_gemm_shapes/m2_09_gemm_shapes_sweep --shapes=32x4096x11008,3000x5000x2000
//
// --shapes=MxNxK,... times your own shapes (a layer of your model) instead of the benchmark's.
//
// Plans: the square tile, the skinny one where M <= kSkinnyMaxM, and in float16 on a Hopper
// built with sm_90a the wide, half-wide and narrow ones (m2.08's wgmma kernel, every M: their
// rows at M <= 64 show what the skinny tile saves), each with 1, 2, 3, 4, 6, 8, 12 and 16 splits,
// through the reference's planned launchers (sgemm_planned, hgemm_planned) with a workspace
// of their own large enough for the partials and, in float16, the zero-padded copies of odd
// sizes. The wide tile's row on 3000 x 5000 x 2000 (480 tiles: 3.6 waves of 132) is where
// splits could trade the last partial wave for a reduction. Baselines: cuBLAS SGEMM in float32 with
// CUBLAS_DEFAULT_MATH (no TF32), and cublasGemmEx with float16 A and B, float32 C and
// accumulation. Every row is verified against a float64 reference before it is timed
// (course/gemm_benchmark.h: L2 flushed before every iteration, CUDA events).
//
// One more row per shape, `chooser`, times sgemm_shapes / hgemm_shapes: the chooser's pick as
// the entry points run it, whatever its number of splits (14 is not in the list above).
//
// It prints the Google Benchmark rows (cublas_pct: the plan's share of cuBLAS), then one table
// per precision: for each shape, each plan's time over cuBLAS's (1.00: as fast as cuBLAS;
// lower is better), the fastest plan marked <, the chooser's pick marked *, and a last line
// with the chooser's row and its plan. One repetition per row by default
// (--benchmark_repetitions=N for more: the table then shows the last one).
#include <cuda_fp16.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "course/benchmark.h"
#include "course/device_buffer.h"
#include "course/gemm_benchmark.h"
#include "gemm_shapes.h"

namespace {

using course::GemmShape;
using course::gemm_shapes::BlockTile;
using course::gemm_shapes::GemmPlan;
using course::gemm_shapes::kWgmmaTiles;
using course::gemm_shapes::Precision;
using course::gemm_shapes::tile_name;

const std::vector<int> kSplits = {1, 2, 3, 4, 6, 8, 12, 16};

// The tiles timed in a precision: square and skinny; in float16 the wide one too, where it
// runs (a Hopper, built with sm_90a).
std::vector<BlockTile> tiles_of(Precision precision) {
  std::vector<BlockTile> tiles = {BlockTile::square, BlockTile::skinny};
  if (precision == Precision::fp16 && course::solution::wide_tile_runs_here()) {
    tiles.insert(tiles.end(), std::begin(kWgmmaTiles), std::end(kWgmmaTiles));
  }
  return tiles;
}

// Whether `tile` is timed on `shape`: the skinny one where the chooser may pick it.
bool tile_fits(BlockTile tile, const GemmShape& shape) {
  return tile != BlockTile::skinny || shape.M <= course::gemm_shapes::kSkinnyMaxM;
}

// The plans a shape is timed with.
std::vector<GemmPlan> plans_for(Precision precision, const GemmShape& shape) {
  std::vector<GemmPlan> plans;
  for (BlockTile tile : tiles_of(precision)) {
    if (!tile_fits(tile, shape)) continue;
    for (int splits : kSplits) plans.push_back(GemmPlan{tile, splits});
  }
  return plans;
}

std::string plan_name(const GemmPlan& plan) {
  return std::string(tile_name(plan.tile)) + "_splits" + std::to_string(plan.splits);
}

// One workspace for every row, grown to the largest plan asked for (cudaMalloc outside the
// timed launches: the first, untimed verification run of a row allocates).
float* sweep_workspace(std::size_t floats) {
  static std::unique_ptr<course::DeviceBuffer<float>> buffer;
  if (!buffer || buffer->size() < floats) {
    buffer.reset();
    buffer = std::make_unique<course::DeviceBuffer<float>>(floats > 0 ? floats : 1);
  }
  return buffer->data();
}

template <typename Input>
void register_sweep(const std::string& family, Precision precision,
                    const std::vector<GemmShape>& shapes) {
  course::bench::register_gemm_shape_baseline<Input>(family, shapes);
  for (BlockTile tile : tiles_of(precision)) {
    for (int splits : kSplits) {
      const GemmPlan plan{tile, splits};
      std::vector<GemmShape> fitting;
      for (const GemmShape& shape : shapes) {
        if (tile_fits(tile, shape)) fitting.push_back(shape);
      }
      if (fitting.empty()) continue;
      course::bench::register_gemm_shape_row<Input>(
          family, plan_name(plan),
          [plan](const GemmShape& s, float alpha, const Input* A, const Input* B, float beta,
                 float* C, cudaStream_t stream) {
            std::size_t floats = course::gemm_shapes::workspace_floats(plan, s.M, s.N);
            if constexpr (std::is_same_v<Input, float>) {
              course::solution::sgemm_planned(plan, s.M, s.N, s.K, alpha, A, B, beta, C,
                                              sweep_workspace(floats), floats, stream);
            } else {
              floats += course::gemm_shapes::padded_copies_floats(s.M, s.N, s.K);
              course::solution::hgemm_planned(plan, s.M, s.N, s.K, alpha, A, B, beta, C,
                                              sweep_workspace(floats), floats, stream);
            }
          },
          fitting);
    }
  }
  // The entry point: the chooser's pick, with the process's shared workspace.
  course::bench::register_gemm_shape_row<Input>(
      family, "chooser",
      [](const GemmShape& s, float alpha, const Input* A, const Input* B, float beta, float* C,
         cudaStream_t stream) {
        if constexpr (std::is_same_v<Input, float>) {
          course::solution::sgemm_shapes(s.M, s.N, s.K, alpha, A, B, beta, C, stream);
        } else {
          course::solution::hgemm_shapes(s.M, s.N, s.K, alpha, A, B, beta, C, stream);
        }
      },
      shapes);
}

// The table of one precision: plan time over cuBLAS time, per shape.
template <typename Input>
void print_table(const std::string& family, Precision precision,
                 const std::vector<GemmShape>& shapes) {
  const int sms = course::bench::device().sm_count;
  const course::gemm_shapes::WgmmaCapacity wgmma = precision == Precision::fp16
                                                       ? course::solution::wgmma_capacity_here()
                                                       : course::gemm_shapes::WgmmaCapacity{};
  const bool wide = wgmma.runs;
  std::printf(
      "\n%s (%s): time of each plan / time of %s; < fastest plan, * the chooser's pick "
      "(%d SMs)\n",
      family.c_str(), course::bench::precision_label<Input>(),
      course::bench::gemm_baseline_name<Input>().c_str(), sms);
  if (precision == Precision::fp16) {
    std::printf("(the wide, half_wide and narrow tiles, m2.08's wgmma kernel: %s)\n",
                wide ? "timed, the chooser's pick where it takes it"
                     : "not timed: not a Hopper, or built without sm_90a");
  }
  std::printf("%-20s %-9s", "M x N x K", "tile");
  for (int splits : kSplits) std::printf(" %7s", ("s=" + std::to_string(splits)).c_str());
  std::printf("\n");
  for (const GemmShape& shape : shapes) {
    const double cublas = course::bench::measured_gemm_tflops(
        family, course::bench::gemm_baseline_name<Input>(), shape);
    const GemmPlan pick =
        course::solution::choose_gemm_plan(shape.M, shape.N, shape.K, precision, sms,
                                           course::gemm_shapes::kSharedWorkspaceFloats, wgmma);
    double best = 0.0;
    for (const GemmPlan& plan : plans_for(precision, shape))
      best = std::max(best, course::bench::measured_gemm_tflops(family, plan_name(plan), shape));
    for (BlockTile tile : tiles_of(precision)) {
      if (!tile_fits(tile, shape)) continue;
      std::printf("%-20s %-9s", course::to_string(shape).c_str(), tile_name(tile));
      for (int splits : kSplits) {
        const double mine =
            course::bench::measured_gemm_tflops(family, plan_name({tile, splits}), shape);
        if (mine <= 0.0 || cublas <= 0.0) {
          std::printf(" %7s", "-");
          continue;
        }
        const bool picked = pick.tile == tile && pick.splits == splits;
        std::printf(" %5.2f%c%c", cublas / mine, mine == best ? '<' : ' ', picked ? '*' : ' ');
      }
      std::printf("\n");
    }
    const double chosen = course::bench::measured_gemm_tflops(family, "chooser", shape);
    if (chosen > 0.0 && cublas > 0.0) {
      std::printf("%-20s %-9s %5.2f   (%s, %d splits)\n", course::to_string(shape).c_str(),
                  "chooser", cublas / chosen, tile_name(pick.tile), pick.splits);
    }
  }
}

// The shapes of a --shapes=MxNxK,MxNxK,... argument, which it removes from `args`; the
// benchmark's list without one. Exits with a message on a malformed list.
std::vector<GemmShape> take_shapes_argument(std::vector<char*>& args) {
  constexpr const char* kFlag = "--shapes=";
  for (auto arg = args.begin(); arg != args.end(); ++arg) {
    if (std::strncmp(*arg, kFlag, std::strlen(kFlag)) != 0) continue;
    std::vector<GemmShape> shapes;
    const char* text = *arg + std::strlen(kFlag);
    while (*text != '\0') {
      GemmShape shape{};
      int length = 0;
      if (std::sscanf(text, "%dx%dx%d%n", &shape.M, &shape.N, &shape.K, &length) != 3 ||
          shape.M <= 0 || shape.N <= 0 || shape.K <= 0 ||
          (text[length] != ',' && text[length] != '\0')) {
        std::fprintf(stderr, "--shapes: expected positive MxNxK[,MxNxK...], got '%s'\n",
                     *arg + std::strlen(kFlag));
        std::exit(2);
      }
      shapes.push_back(shape);
      text += length + (text[length] == ',' ? 1 : 0);
    }
    if (shapes.empty()) {
      std::fprintf(stderr, "--shapes: the list is empty\n");
      std::exit(2);
    }
    args.erase(arg);
    return shapes;
  }
  return course::gemm_shapes::benchmark_shapes();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args(argv, argv + argc);
  const std::vector<course::GemmShape> shapes = take_shapes_argument(args);
  register_sweep<float>("sweep_fp32", Precision::fp32, shapes);
  register_sweep<__half>("sweep_fp16", Precision::fp16, shapes);
  // One repetition unless the command line asks for more (a later flag wins).
  std::string one_repetition = "--benchmark_repetitions=1";
  args.insert(args.begin() + 1, one_repetition.data());
  const int status = course::bench::run_benchmarks(static_cast<int>(args.size()), args.data());
  print_table<float>("sweep_fp32", Precision::fp32, shapes);
  print_table<__half>("sweep_fp16", Precision::fp16, shapes);
  return status;
}
