// Benchmark for exercise m2.07: the tensor cores against cuBLAS, and against the float32
// SGEMM of m2.05.
//
// Two tables, one per kernel, per square size n (M = N = K = n), rows in the order they run:
//   wmma_simple/cublas_fp16/n:...       cuBLAS (cublasGemmEx): float16 A and B, float32 C
//                                       and accumulation, tensor cores: the baseline
//   wmma_simple/step_m2_05_register_tiling/n:...
//                                       m2.05's float32 SGEMM (the CUDA cores) on the same
//                                       values as floats, when m2.05 is built
//   wmma_simple/solution/n:...          the reference part 1
//   wmma_simple/exercise/n:...          your part 1
// and the same rows for wmma_gemm (part 2). Every row checks its result against a float64
// reference (sampled rows) before it is timed; cublas_pct is the share of cuBLAS measured
// in the same run.
#include <cublas_v2.h>
#include <cuda_fp16.h>

#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "course/benchmark.h"
#include "course/cublas_handle.h"
#include "course/device_buffer.h"
#include "course/gemm.h"
#include "course/verify.h"
#include "wmma_gemm.h"

#if defined(COURSE_HAVE_REGISTER_TILING)
#include "register_tiling.h"  // m2.05, the previous step
#endif

namespace {

const std::vector<int> kSizes = {1024, 2048, 4096};

// Inputs (float16, and the same values as floats) and the sampled float64 reference.
struct Problem {
  course::DeviceBuffer<__half> A16, B16;
  course::DeviceBuffer<float> A32, B32;
  std::vector<int> rows;
  std::vector<double> reference;
};

const Problem& problem(int n) {
  static std::map<int, std::unique_ptr<Problem>> cache;
  auto& slot = cache[n];
  if (!slot) {
    const std::size_t count = static_cast<std::size_t>(n) * n;
    const auto A = course::gemm_inputs<__half>(count, 3000 + n);
    const auto B = course::gemm_inputs<__half>(count, 4000 + n);
    slot = std::make_unique<Problem>();
    slot->A16 = course::DeviceBuffer<__half>::from_host(A.device);
    slot->B16 = course::DeviceBuffer<__half>::from_host(B.device);
    slot->A32 = course::DeviceBuffer<float>::from_host(A.exact);
    slot->B32 = course::DeviceBuffer<float>::from_host(B.exact);
    slot->rows = course::gemm_sample_rows(n);
    slot->reference = course::reference_gemm_rows(course::GemmShape{n, n, n}, 1.0f, A.exact,
                                                  B.exact, 0.0f, {}, slot->rows);
  }
  return *slot;
}

std::string check(const Problem& p, int n, const std::vector<float>& C) {
  const course::Tolerance tol = course::gemm_tolerance(course::Dtype::fp16, n);
  for (std::size_t r = 0; r < p.rows.size(); ++r) {
    const std::size_t row = static_cast<std::size_t>(p.rows[r]);
    const std::vector<float> got(C.begin() + row * n, C.begin() + (row + 1) * n);
    const std::vector<double> want(p.reference.begin() + r * n, p.reference.begin() + (r + 1) * n);
    const auto result = course::verify(got, want, tol);
    if (!result) return "row " + std::to_string(row) + " of C: " + result.message();
  }
  return "";
}

// TFLOPS of the rows measured so far: (family/impl, n).
std::map<std::pair<std::string, int>, double>& results() {
  static std::map<std::pair<std::string, int>, double> measured;
  return measured;
}

using SquareGemm = std::function<void(const Problem&, int n, float* C, cudaStream_t)>;

void run_row(benchmark::State& state, const std::string& family, const std::string& impl,
             const SquareGemm& gemm) {
  const int n = static_cast<int>(state.range(0));
  try {
    const Problem& p = problem(n);
    course::DeviceBuffer<float> C(static_cast<std::size_t>(n) * n);
    C.poison();
    gemm(p, n, C.data(), nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::string wrong = check(p, n, C.to_host());
    if (!wrong.empty()) return course::bench::fail(state, "wrong result: " + wrong);
    // The least DRAM traffic: A and B in float16 (float32 for the SGEMM row), C written.
    const double input_bytes = impl.rfind("step_", 0) == 0 ? 4.0 : 2.0;
    const double bytes = 2.0 * input_bytes * n * n + 4.0 * n * n;
    course::bench::measure(state, course::bench::Work{bytes, 2.0 * n * static_cast<double>(n) * n},
                           [&](cudaStream_t stream) { gemm(p, n, C.data(), stream); });
    const auto tflops = state.counters.find("TFLOPS");
    if (tflops == state.counters.end()) return;
    results()[{family + "/" + impl, n}] = tflops->second.value;
    const auto cublas = results().find({family + "/cublas_fp16", n});
    if (impl != "cublas_fp16" && cublas != results().end() && cublas->second > 0) {
      state.counters["cublas_pct"] = 100.0 * tflops->second.value / cublas->second;
    }
  } catch (const std::exception& error) {
    course::bench::fail(state, error.what());
  }
}

// cuBLAS on row-major matrices: the column-major product B^T A^T is row-major C (see
// course/gemm.h, cublas_sgemm_row_major).
void cublas_fp16(const Problem& p, int n, float* C, cudaStream_t stream) {
  static course::CublasHandle handle;
  CUBLAS_CHECK(cublasSetStream(handle.get(), stream));
  const float alpha = 1.0f, beta = 0.0f;
  CUBLAS_CHECK(cublasGemmEx(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha,
                            p.B16.data(), CUDA_R_16F, n, p.A16.data(), CUDA_R_16F, n, &beta, C,
                            CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

using HalfGemm = void (*)(int, int, int, float, const __half*, const __half*, float, float*,
                          cudaStream_t);

SquareGemm half_gemm(HalfGemm gemm) {
  return [gemm](const Problem& p, int n, float* C, cudaStream_t stream) {
    gemm(n, n, n, 1.0f, p.A16.data(), p.B16.data(), 0.0f, C, stream);
  };
}

void register_family(const std::string& family, HalfGemm solution, HalfGemm exercise) {
  std::vector<std::pair<std::string, SquareGemm>> rows = {{"cublas_fp16", cublas_fp16}};
#if defined(COURSE_HAVE_REGISTER_TILING)
  rows.push_back({"step_m2_05_register_tiling",
                  [](const Problem& p, int n, float* C, cudaStream_t stream) {
                    course::solution::sgemm_2d_register_tile(n, n, n, 1.0f, p.A32.data(),
                                                             p.B32.data(), 0.0f, C, stream);
                  }});
#endif
  rows.push_back({"solution", half_gemm(solution)});
  rows.push_back({"exercise", half_gemm(exercise)});
  for (const auto& [impl, gemm] : rows) {
    auto* row = benchmark::RegisterBenchmark(
        (family + "/" + impl).c_str(),
        [family, impl = impl, gemm = gemm](benchmark::State& state) {
          run_row(state, family, impl, gemm);
        });
    row->ArgName("n")->UseManualTime()->Unit(benchmark::kMillisecond);
    for (int n : kSizes) row->Arg(n);
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_family("wmma_simple", course::solution::wmma_gemm_simple,
                  course::exercise::wmma_gemm_simple);
  register_family("wmma_gemm", course::solution::wmma_gemm, course::exercise::wmma_gemm);
  return course::bench::run_benchmarks(argc, argv);
}
