// cuDNN's own forward algorithms on the month-3 ResNet layers: what the names in the
// convolution ladder's lessons (IMPLICIT_GEMM, IMPLICIT_PRECOMP_GEMM, GEMM, FFT, WINOGRAD...)
// do on this GPU. Not an exercise: there is nothing to write, only a table to read.
//
// For each layer of course::conv_resnet_layers() and two precisions, cuDNN's legacy C API
// (cudnnFindConvolutionForwardAlgorithmEx) lists the algorithms it has for the layer and
// ranks them by its own timing; every algorithm it could run is then a row, in cuDNN's
// order, timed like every other row of the course (course::bench::measure):
//   conv_fp32/cudnn_<algorithm>/<layer>  float32 NCHW, CUDNN_FMA_MATH: no TF32, the
//                                        precision of m3.03 and m3.04
//   conv_fp16/cudnn_<algorithm>/<layer>  float16 x, w and y in NHWC / KRSC (channels_last),
//                                        float32 accumulation, CUDNN_TENSOR_OP_MATH: m3.05's
//                                        inputs (m3.05 writes y in float32)
// The first row of each layer is cuDNN's pick, the baseline of the `% of baseline` column.
// Algorithms cuDNN has no kernel for on a layer (or that need more workspace than the
// budget below) are listed in the output's context under not_timed, with cuDNN's reason.
//
// Every row verifies before it times, as the exercises' rows do (course/conv_benchmark.h):
// y starts as NaN, every output must be finite, and sampled outputs are compared with the
// float64 reference. FFT and Winograd algorithms compute the convolution through a transform
// and round differently from a sum of products; a row whose error is outside the course's
// tolerance for its precision is still timed, and its precision column says by how much.
//
// This is NOT the speed a PyTorch user gets. PyTorch reaches cuDNN through its graph API
// (cudnn-frontend), which chooses among kernels the legacy API does not return; the course's
// baseline is F.conv2d with cudnn.benchmark = True (the _torch tables of m3.03 to m3.05).
//
//   ./build/month3/cudnn_algorithms/m3_cudnn_algorithms_bench --benchmark_filter=C128_28
//   ./course bench cudnn_algorithms   (the table, under the build folder)
#include <benchmark/benchmark.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "course/benchmark.h"
#include "course/conv.h"
#include "course/conv_benchmark.h"
#include "course/conv_reference.h"
#include "course/cuda_check.h"
#include "course/device_buffer.h"

namespace {

using course::ConvCase;
using course::ConvLayout;
using course::ConvShape;
using course::DeviceBuffer;

// The most workspace one algorithm may take: FFT algorithms ask for gigabytes on large
// layers. Those that need more are reported, not timed.
constexpr std::size_t kWorkspaceBudgetBytes = std::size_t{4} << 30;

void check_cudnn(cudnnStatus_t status, const char* call) {
  if (status != CUDNN_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(call) + " failed: " + cudnnGetErrorString(status));
  }
}
#define CUDNN_CALL(call) check_cudnn((call), #call)

const char* algorithm_name(cudnnConvolutionFwdAlgo_t algorithm) {
  switch (algorithm) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "implicit_gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "implicit_precomp_gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "direct";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "fft";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "fft_tiling";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "winograd";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "winograd_nonfused";
    default: return "unknown";
  }
}

// One precision of the table, in cuDNN's terms.
struct Precision {
  const char* family;  // the rows' family: the precision they compute in
  const char* label;   // the table's precision column
  cudnnDataType_t data;
  cudnnTensorFormat_t format;
  cudnnMathType_t math;
  ConvLayout layout;
};

constexpr Precision kFp32{"conv_fp32",       "fp32, TF32 off, nchw", CUDNN_DATA_FLOAT,
                          CUDNN_TENSOR_NCHW, CUDNN_FMA_MATH,         ConvLayout::nchw};
constexpr Precision kFp16{"conv_fp16",          "fp16 in and out, fp32 acc, nhwc",
                          CUDNN_DATA_HALF,      CUDNN_TENSOR_NHWC,
                          CUDNN_TENSOR_OP_MATH, ConvLayout::nhwc};

cudnnHandle_t cudnn_handle() {
  static cudnnHandle_t handle = [] {
    cudnnHandle_t made = nullptr;
    CUDNN_CALL(cudnnCreate(&made));
    return made;
  }();
  return handle;
}

// The descriptors of one convolution: x [N][C][H][W], w [K][C][R][S] and y [N][K][P][Q] in
// the precision's data type and layout (cuDNN takes the sizes in NCHW order whatever the
// layout), float32 accumulation. Cross-correlation: what PyTorch and the course call a
// convolution.
class ConvDescriptors {
 public:
  ConvDescriptors(const ConvShape& s, const Precision& p, cudnnMathType_t math) {
    CUDNN_CALL(cudnnCreateTensorDescriptor(&x));
    CUDNN_CALL(cudnnCreateTensorDescriptor(&y));
    CUDNN_CALL(cudnnCreateFilterDescriptor(&w));
    CUDNN_CALL(cudnnCreateConvolutionDescriptor(&conv));
    CUDNN_CALL(cudnnSetTensor4dDescriptor(x, p.format, p.data, s.N, s.C, s.H, s.W));
    CUDNN_CALL(cudnnSetFilter4dDescriptor(w, p.data, p.format, s.K, s.C, s.R, s.S));
    CUDNN_CALL(cudnnSetConvolution2dDescriptor(conv, s.pad_h, s.pad_w, s.stride_h, s.stride_w,
                                               s.dilation_h, s.dilation_w, CUDNN_CROSS_CORRELATION,
                                               CUDNN_DATA_FLOAT));
    CUDNN_CALL(cudnnSetConvolutionMathType(conv, math));
    int n = 0, k = 0, p_out = 0, q_out = 0;
    CUDNN_CALL(cudnnGetConvolution2dForwardOutputDim(conv, x, w, &n, &k, &p_out, &q_out));
    if (n != s.N || k != s.K || p_out != s.P() || q_out != s.Q()) {
      throw std::runtime_error("cuDNN's output size differs from the course's for " +
                               course::to_string(s));
    }
    CUDNN_CALL(cudnnSetTensor4dDescriptor(y, p.format, p.data, s.N, s.K, s.P(), s.Q()));
  }
  ConvDescriptors(const ConvDescriptors&) = delete;
  ConvDescriptors& operator=(const ConvDescriptors&) = delete;
  ~ConvDescriptors() {
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyTensorDescriptor(x);
  }

  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
};

// An algorithm cuDNN ran on a layer: a row.
struct Found {
  cudnnConvolutionFwdAlgo_t algorithm;
  cudnnMathType_t math;
  std::size_t workspace_bytes;
};

// What cudnnFindConvolutionForwardAlgorithmEx says of one layer in one precision: the
// algorithms it ran, fastest first, and the others with cuDNN's reason ("fft: NOT_SUPPORTED").
template <typename Input>
void find_algorithms(const ConvCase& layer, const Precision& p, std::vector<Found>& found,
                     std::vector<std::string>& not_timed) {
  const auto& problem = course::bench::detail::conv_bench_problem<Input>(layer, p.layout);
  const ConvShape& s = problem.shape;
  auto x = DeviceBuffer<Input>::from_host(problem.x);
  auto w = DeviceBuffer<Input>::from_host(problem.w);
  DeviceBuffer<Input> y(static_cast<std::size_t>(s.output_elements()));
  ConvDescriptors d(s, p, p.math);

  // The workspace FindEx may use: the most any algorithm asks for, within the budget.
  std::size_t workspace_bytes = 0;
  for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; ++a) {
    std::size_t bytes = 0;
    const auto algorithm = static_cast<cudnnConvolutionFwdAlgo_t>(a);
    if (cudnnGetConvolutionForwardWorkspaceSize(cudnn_handle(), d.x, d.w, d.conv, d.y, algorithm,
                                                &bytes) == CUDNN_STATUS_SUCCESS &&
        bytes <= kWorkspaceBudgetBytes) {
      workspace_bytes = std::max(workspace_bytes, bytes);
    }
  }
  DeviceBuffer<unsigned char> workspace(workspace_bytes);

  cudnnConvolutionFwdAlgoPerf_t results[2 * CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int returned = 0;
  CUDNN_CALL(cudnnSetStream(cudnn_handle(), nullptr));
  CUDNN_CALL(cudnnFindConvolutionForwardAlgorithmEx(
      cudnn_handle(), d.x, x.data(), d.w, w.data(), d.conv, d.y, y.data(),
      2 * CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, results, workspace.data(), workspace_bytes));
  // cuDNN may list an algorithm more than once (once per math type): the first usable
  // entry of each is a row; an algorithm with none is listed with its first entry's reason.
  std::vector<std::pair<cudnnConvolutionFwdAlgo_t, std::string>> unusable;
  for (int i = 0; i < returned; ++i) {
    const cudnnConvolutionFwdAlgoPerf_t& r = results[i];
    // The float32 rows run with CUDNN_FMA_MATH whatever cuDNN reports (its DEFAULT_MATH
    // allows TF32 on an Ampere or later GPU); a result on the tensor cores would be TF32.
    const bool float32 = p.data == CUDNN_DATA_FLOAT;
    const bool tensor_cores =
        r.mathType == CUDNN_TENSOR_OP_MATH || r.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    if (r.status != CUDNN_STATUS_SUCCESS) {
      unusable.emplace_back(r.algo, cudnnGetErrorString(r.status));
    } else if (float32 && tensor_cores) {
      unusable.emplace_back(r.algo, "TF32 tensor cores");  // not this table's fp32
    } else if (std::none_of(found.begin(), found.end(),
                            [&](const Found& f) { return f.algorithm == r.algo; })) {
      found.push_back({r.algo, float32 ? CUDNN_FMA_MATH : r.mathType, r.memory});
    }
  }
  std::vector<cudnnConvolutionFwdAlgo_t> listed;
  for (const auto& entry : unusable) {
    const cudnnConvolutionFwdAlgo_t algorithm = entry.first;
    const auto same = [algorithm](cudnnConvolutionFwdAlgo_t a) { return a == algorithm; };
    const bool timed =
        std::any_of(found.begin(), found.end(), [&](const Found& f) { return same(f.algorithm); });
    if (timed || std::any_of(listed.begin(), listed.end(), same)) continue;
    listed.push_back(algorithm);
    not_timed.push_back(std::string(p.family) + "/" + layer.name + ": " +
                        algorithm_name(algorithm) + " (" + entry.second + ")");
  }
}

// float32 copies of cuDNN's outputs (float16 for the conv_fp16 rows).
template <typename Input>
std::vector<float> as_floats(const std::vector<Input>& values) {
  std::vector<float> floats(values.size());
  std::transform(values.begin(), values.end(), floats.begin(),
                 [](const Input& v) { return static_cast<float>(v); });
  return floats;
}

// The row's precision column: the precision, and how far outside the tolerance its error is
// when it is (FFT, Winograd); an error message when an output is not finite.
template <typename Input>
std::string check_and_label(const course::bench::detail::ConvBenchProblem<Input>& problem,
                            const Precision& p, const std::vector<float>& y, std::string& error) {
  error = course::bench::detail::first_non_finite_output(y);
  if (!error.empty()) return "";
  const course::Tolerance tolerance = course::conv_tolerance(problem.dtype, problem.shape.gemm_k());
  double worst = 0.0;  // the largest error, as a multiple of what the tolerance allows there
  for (std::size_t i = 0; i < problem.sampled.size(); ++i) {
    const double want = problem.reference[i];
    const double got = y[static_cast<std::size_t>(problem.sampled[i])];
    worst = std::max(worst,
                     std::fabs(got - want) / (tolerance.atol + tolerance.rtol * std::fabs(want)));
  }
  if (worst <= 1.0) return p.label;
  std::ostringstream label;
  label.precision(2);
  label << p.label << "; error up to " << worst << "x the tolerance";
  return label.str();
}

template <typename Input>
void run_algorithm_row(benchmark::State& state, const ConvCase& layer, const Precision& p,
                       const Found& found) {
  try {
    const auto& problem = course::bench::detail::conv_bench_problem<Input>(layer, p.layout);
    const ConvShape& s = problem.shape;
    auto x = DeviceBuffer<Input>::from_host(problem.x);
    auto w = DeviceBuffer<Input>::from_host(problem.w);
    DeviceBuffer<Input> y(static_cast<std::size_t>(s.output_elements()));
    y.poison();
    DeviceBuffer<unsigned char> workspace(found.workspace_bytes);
    ConvDescriptors d(s, p, found.math);
    const float alpha = 1.0f, beta = 0.0f;  // float scalars: the compute type is float
    auto run = [&](cudaStream_t stream) {
      CUDNN_CALL(cudnnSetStream(cudnn_handle(), stream));
      CUDNN_CALL(cudnnConvolutionForward(cudnn_handle(), &alpha, d.x, x.data(), d.w, w.data(),
                                         d.conv, found.algorithm, workspace.data(),
                                         found.workspace_bytes, &beta, d.y, y.data()));
    };

    run(nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    std::string error;
    const std::string label = check_and_label(problem, p, as_floats(y.to_host()), error);
    if (!error.empty()) {
      return course::bench::fail(state, "wrong result for " + course::to_string(s) + ": " + error);
    }

    // The fewest bytes: x and w read once, y written once, all in the precision's type.
    const double bytes = course::bench::conv_min_bytes(s, sizeof(Input), sizeof(Input));
    course::bench::measure(state, course::bench::Work{bytes, s.flops(), label.c_str()}, run);
    state.counters["workspace_MiB"] = static_cast<double>(found.workspace_bytes) / (1 << 20);
  } catch (const std::exception& failure) {
    course::bench::fail(state, failure);
  }
}

template <typename Input>
void register_layer(const ConvCase& layer, const Precision& p,
                    std::vector<std::string>& not_timed) {
  std::vector<Found> found;
  try {
    find_algorithms<Input>(layer, p, found, not_timed);
  } catch (const std::exception& error) {  // e.g. no algorithm at all for this layer
    not_timed.push_back(std::string(p.family) + "/" + layer.name + ": every algorithm (" +
                        error.what() + ")");
    return;
  }
  for (const Found& f : found) {
    const std::string name =
        std::string(p.family) + "/cudnn_" + algorithm_name(f.algorithm) + "/" + layer.name;
    course::bench::register_row(
        name,
        [layer, p, f](benchmark::State& state) { run_algorithm_row<Input>(state, layer, p, f); })
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  // Without a GPU there is nothing to ask cuDNN: run_benchmarks says so and exits.
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) {
    std::vector<std::string> not_timed;
    try {
      cudnn_handle();  // a cuDNN that cannot start fails here, once, with cuDNN's reason
      for (const ConvCase& layer : course::conv_resnet_layers()) {
        register_layer<float>(layer, kFp32, not_timed);
        register_layer<__half>(layer, kFp16, not_timed);
      }
    } catch (const std::exception& error) {
      std::fprintf(stderr, "m3_cudnn_algorithms: %s\n", error.what());
      return 1;
    }
    std::string listed;
    for (const std::string& entry : not_timed) listed += (listed.empty() ? "" : "; ") + entry;
    benchmark::AddCustomContext("not_timed", listed.empty() ? "none" : listed);
    benchmark::AddCustomContext("cudnn_version", std::to_string(cudnnGetVersion()));
    benchmark::AddCustomContext("api", "cuDNN legacy API (cudnnFindConvolutionForwardAlgorithmEx)");
  }
  return course::bench::run_benchmarks(argc, argv);
}
