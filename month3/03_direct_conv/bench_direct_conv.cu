// Benchmark for exercise m3.03: what do shared-memory tiles and register tiles buy a direct
// convolution?
//
// Rows, for each ResNet layer of course::conv_resnet_layers() (N, C, H = W, K, R = S, stride,
// pad named in the row: ResNet_C64_56_K64_3x3 is N 32, C 64, 56 x 56, K 64, 3 x 3), in the
// order they run:
//   conv_fp32/m3_03_naive/solution/<layer>   the reference of part 1, one thread per output
//   conv_fp32/m3_03_naive/exercise/<layer>   yours
//   conv_fp32/m3_03_tiled/solution/<layer>   the reference of part 2, the tiled kernel
//   conv_fp32/m3_03_tiled/exercise/<layer>   yours
// All in float32 (conv_fp32: no TF32, no tensor cores). m3.03 is the first convolution step,
// so the "previous step" of the tiled kernel is the naive one: speedup (a counter here, a
// column in ./course bench's table) is the naive reference's time over the row's, measured
// in this same run. TFLOPS counts 2 N K P Q C R S.
//
// The baseline a PyTorch user has, cuDNN through F.conv2d with cudnn.benchmark = True and
// TF32 off, is timed by bench_direct_conv_torch.py on the same layers (its rows
// conv_fp32/cudnn_torch/<layer>); ./course bench m3_03 runs both and tables them side by side.
// Every row verifies before it times (course/conv_benchmark.h).
//
//   ./build/month3/03_direct_conv/m3_03_direct_conv_bench --benchmark_filter=C64_56_K64_3x3
#include <vector>

#include "course/benchmark.h"
#include "course/conv_benchmark.h"
#include "course/conv_reference.h"
#include "direct_conv.h"

int main(int argc, char** argv) {
  namespace sol = course::solution;
  namespace ex = course::exercise;
  const std::vector<course::bench::ConvRow> rows = {
      {"m3_03_naive/solution", sol::conv2d_direct_naive},
      {"m3_03_naive/exercise", ex::conv2d_direct_naive, "m3_03_naive/solution"},
      {"m3_03_tiled/solution", sol::conv2d_direct_tiled, "m3_03_naive/solution"},
      {"m3_03_tiled/exercise", ex::conv2d_direct_tiled, "m3_03_naive/solution"},
  };
  course::bench::register_conv_rows("conv_fp32", rows, course::conv_resnet_layers());
  return course::bench::run_benchmarks(argc, argv);
}
