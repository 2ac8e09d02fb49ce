// Exercise m3.01: the month-2 GEMMs as a Python module and as a PyTorch operator.
// (Reference solution.)
//
// What is new after m1.05: there, the operators were TORCH_LIBRARY entries only. Here one
// shared library is two things at once:
//   - a Python module written with pybind11 (PYBIND11_MODULE): optimized_gemm(a, b, *,
//     alpha=1.0, out=None), with keyword arguments, defaults, a docstring and the GIL
//     released while it runs: the Pythonic API;
//   - a dispatcher operator (TORCH_LIBRARY): torch.ops.<namespace>.gemm(a, b, alpha), which
//     torch.compile can trace and torch.library.opcheck can test: the PyTorch integration.
// Both call the same gemm() below, which checks its inputs and launches your month-2
// kernels on PyTorch's current stream: m2.09's shape chooser picks the plan for the shape
// (block tile, splits of K), and m2.09's planned launchers run it, float32 on m2.05's main
// loop and float16 on m2.07's tensor cores, with the split-K workspace taken from PyTorch's
// caching allocator. Read README.md first.
#include <ATen/MemoryOverlap.h>
#include <torch/extension.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "pybind_gemm.h"

#if COURSE_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_fp16.h>

#endif

namespace py = pybind11;

namespace course::m3_01 {

// Every message starts with the function's name, says what was expected and shows the
// value that came (a dtype, a shape, a device), so that the caller can see the mistake.
void check_gemm_inputs(const char* name, const at::Tensor& a, const at::Tensor& b,
                       const c10::optional<at::Tensor>& out) {
  // The dtype picks the kernel, so it comes first: float32 -> m2.05, float16 -> m2.07.
  // Anything else (float64, bfloat16, integers, or one of each) has no kernel here.
  const bool supported = a.scalar_type() == at::kFloat || a.scalar_type() == at::kHalf;
  TORCH_CHECK(supported && b.scalar_type() == a.scalar_type(), name,
              ": a and b must both be float32 (the m2.05 SGEMM) or both float16 (the m2.07 "
              "tensor-core GEMM), got a ",
              dtype_string(a), " and b ", dtype_string(b));
  // A GEMM multiplies matrices; batches (3-D) are not this function's job. Check the rank
  // before size(1): size(1) of a 1-D tensor throws an IndexError instead.
  TORCH_CHECK(a.dim() == 2, name, ": a must be 2-D [M, K], got shape ", shape_string(a.sizes()));
  TORCH_CHECK(b.dim() == 2, name, ": b must be 2-D [K, N], got shape ", shape_string(b.sizes()));
  const std::int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  TORCH_CHECK(b.size(0) == K, name,
              ": the inner sizes must match (a is [M, K], b is [K, N]), got a ",
              shape_string(a.sizes()), " and b ", shape_string(b.sizes()),
              " (K = ", std::to_string(K), " vs ", std::to_string(b.size(0)), ")");
  // The month-2 launchers take int sizes and index with int: a size that does not fit
  // would wrap around to a negative number (or a wrong positive one).
  TORCH_CHECK(M <= kMaxElements && N <= kMaxElements && K <= kMaxElements &&
                  M * K <= kMaxElements && K * N <= kMaxElements && M * N <= kMaxElements,
              name,
              ": every matrix must have fewer than 2^31 elements (the month-2 kernels index "
              "with int), got M = ",
              std::to_string(M), ", N = ", std::to_string(N), ", K = ", std::to_string(K));
  if (out.has_value()) {
    const at::Tensor& c = *out;
    // The kernels write float32 for both input dtypes (m2.07 accumulates in float32 and
    // stores the accumulators): out must be what they write.
    TORCH_CHECK(
        c.scalar_type() == at::kFloat, name,
        ": out must be float32 (the result is float32 for float32 and float16 inputs), got ",
        dtype_string(c));
    TORCH_CHECK(c.dim() == 2 && c.size(0) == M && c.size(1) == N, name,
                ": out must have shape [M, N] = ", shape_string({M, N}), ", got ",
                shape_string(c.sizes()));
    // Inputs may be views (they are copied, see launch_gemm); out may not: the kernels write
    // row-major C in place, and writing into a contiguous copy would leave out unchanged.
    TORCH_CHECK(c.is_contiguous(), name,
                ": out must be contiguous (it is written in place), got strides ",
                shape_string(c.strides()), " for shape ", shape_string(c.sizes()));
    // The kernels read a and b while they write out: sharing memory would mix the two.
    for (const at::Tensor* input : {&a, &b}) {
      const at::MemOverlapStatus overlap = at::get_overlap_status(c, *input);
      TORCH_CHECK(overlap != at::MemOverlapStatus::Full && overlap != at::MemOverlapStatus::Partial,
                  name, ": out must not overlap ", input == &a ? "a" : "b",
                  " (the kernels read the inputs "
                  "while they write out), got out at the same memory");
    }
  }
  // Last, the device: the kernels run on the GPU and read device pointers. (Checked last so
  // that the rules above are graded on a machine without a GPU too.)
  TORCH_CHECK(a.is_cuda(), name,
              ": a must be a CUDA tensor (the kernels run on the GPU), got a on ",
              device_string(a));
  TORCH_CHECK(b.device() == a.device(), name, ": a and b must be on the same device, got a on ",
              device_string(a), " and b on ", device_string(b));
  if (out.has_value()) {
    TORCH_CHECK(out->device() == a.device(), name, ": out must be on the inputs' device ",
                device_string(a), ", got out on ", device_string(*out));
  }
}

#if COURSE_WITH_CUDA
// The launch, on inputs check_gemm_inputs accepted.
at::Tensor launch_gemm(const at::Tensor& a_in, const at::Tensor& b_in, double alpha,
                       const c10::optional<at::Tensor>& out) {
  // The inputs' GPU is the current device for this call: the launchers ask the current
  // device for its multiprocessor count, and the kernel must run where the data is.
  const c10::cuda::CUDAGuard device_guard(a_in.device());
  // The kernels read row-major matrices: element (i, k) of A at A[i * K + k]. A view that is
  // not (a.t(), b[:, ::2]) is copied; contiguous() of a contiguous tensor is the tensor
  // itself, no copy. The copy is O(M K) work next to the O(M N K) of the product.
  const at::Tensor a = a_in.contiguous();
  const at::Tensor b = b_in.contiguous();
  const int M = static_cast<int>(a.size(0));  // check_gemm_inputs: all fit in int
  const int K = static_cast<int>(a.size(1));
  const int N = static_cast<int>(b.size(1));
  // The result: out, written in place, or a new float32 [M, N] from PyTorch's caching
  // allocator on the inputs' device.
  at::Tensor c = out.has_value() ? *out : at::empty({M, N}, a.options().dtype(at::kFloat));
  // PyTorch's current stream on this device: whatever produced a and b was queued there,
  // and whatever reads c will be.
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  // The plan for this shape: which block tile and how many splits of K (m2.09's chooser,
  // from the GPU's multiprocessor count, and whether its wgmma tile runs here: a Hopper, with
  // m2.09 built for sm_90a). A plan with splits > 1 needs a float32 workspace of
  // splits x M x N for the partial products (and float16 rows that are not 16-byte aligned,
  // room for padded copies: gemm_workspace_floats, pybind_gemm.h). It comes from PyTorch's
  // caching allocator on this stream, like c (no cudaMalloc per call, and two calls on two
  // streams never share one). kMaxWorkspaceFloats bounds what the chooser may plan.
  const bool fp32 = a.scalar_type() == at::kFloat;
  const gemm_shapes::Precision precision =
      fp32 ? gemm_shapes::Precision::fp32 : gemm_shapes::Precision::fp16;
  const int multiprocessors = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const gemm_shapes::GemmPlan plan =
      course::impl::choose_gemm_plan(M, N, K, precision, multiprocessors, kMaxWorkspaceFloats,
                                     course::impl::wgmma_capacity_here());
  const std::size_t workspace_floats = gemm_workspace_floats(plan, a, b);
  const at::Tensor workspace =
      at::empty({static_cast<std::int64_t>(workspace_floats)}, a.options().dtype(at::kFloat));
  float* const w = workspace_floats == 0 ? nullptr : workspace.data_ptr<float>();
  // beta = 0: C is only written, never read (its old values, or NaN, do not matter). The
  // launchers handle any M, N, K >= 0 (K = 0 writes zeros) and check their own launch,
  // throwing course::CudaError, which Python sees as a RuntimeError.
  if (fp32) {
    course::impl::sgemm_planned(plan, M, N, K, static_cast<float>(alpha), a.data_ptr<float>(),
                                b.data_ptr<float>(), 0.0f, c.data_ptr<float>(), w, workspace_floats,
                                stream);
  } else {
    // at::Half and __half are the same 16 bits: reinterpret the pointers.
    course::impl::hgemm_planned(plan, M, N, K, static_cast<float>(alpha),
                                reinterpret_cast<const __half*>(a.data_ptr<at::Half>()),
                                reinterpret_cast<const __half*>(b.data_ptr<at::Half>()), 0.0f,
                                c.data_ptr<float>(), w, workspace_floats, stream);
  }
  return c;
}
#endif

// ---- given: the same in the skeleton and the solution (./course check compares) ----
#if !COURSE_WITH_CUDA
// A build without CUDA (PyTorch without CUDA, or no nvcc) has the checks but no kernels.
at::Tensor launch_gemm(const at::Tensor&, const at::Tensor&, double,
                       const c10::optional<at::Tensor>&) {
  TORCH_CHECK(false,
              "optimized_gemm: this extension was built without its GPU kernels (this "
              "PyTorch has no CUDA, or nvcc was not found), so it cannot multiply; every tensor "
              "passed the input checks");
  return at::Tensor();  // not reached
}
#endif

// The one kernel behind both APIs: check, then launch.
at::Tensor gemm(const at::Tensor& a, const at::Tensor& b, double alpha,
                const c10::optional<at::Tensor>& out, const char* name) {
  check_gemm_inputs(name, a, b, out);
  return launch_gemm(a, b, alpha, out);
}

// Whether the thread that ran the last optimized_gemm call held the GIL (1), did not (0), or
// no call ran yet (-1). PyGILState_Check may be called with or without the GIL. A test reads
// it through the module's _gil_was_held_during_last_call().
std::atomic<int> gil_held_during_last_call{-1};

// The pybind11 function: keyword arguments and out= are Python's way of calling, not the
// dispatcher's.
at::Tensor optimized_gemm(const at::Tensor& a, const at::Tensor& b, double alpha,
                          c10::optional<at::Tensor> out) {
  gil_held_during_last_call = PyGILState_Check();
  return gemm(a, b, alpha, out, "optimized_gemm");
}

// The dispatcher operator's CUDA kernel: gemm(Tensor a, Tensor b, float alpha=1.0) -> Tensor.
// A schema "float" is a C++ double; the result is always a new tensor (no out= here: an
// operator that writes an argument declares it, Tensor(a!) out, and gets a second kernel).
at::Tensor gemm_op(const at::Tensor& a, const at::Tensor& b, double alpha) {
  return gemm(a, b, alpha, c10::nullopt, "gemm");
}

// For the benchmark: `calls` launches of the month-2 kernel on the current stream, from
// C++, with no checks, no allocation and no Python: the floor that optimized_gemm's
// per-call overhead is measured against. c must be a float32 [M, N] CUDA tensor.
void launcher_loop(const at::Tensor& a, const at::Tensor& b, at::Tensor& c, std::int64_t calls) {
  check_gemm_inputs("_launcher_loop", a, b, c);
  TORCH_CHECK(a.is_contiguous() && b.is_contiguous(), "_launcher_loop: a and b must be contiguous");
#if COURSE_WITH_CUDA
  const c10::cuda::CUDAGuard device_guard(a.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const int M = static_cast<int>(a.size(0)), K = static_cast<int>(a.size(1)),
            N = static_cast<int>(b.size(1));
  for (std::int64_t i = 0; i < calls; ++i) {
    // m2.09's own launchers: the chooser's plan and, when it splits K, the process's own
    // workspace (one stream here, so nothing shares it).
    if (a.scalar_type() == at::kFloat) {
      course::impl::sgemm_shapes(M, N, K, 1.0f, a.data_ptr<float>(), b.data_ptr<float>(), 0.0f,
                                 c.data_ptr<float>(), stream);
    } else {
      course::impl::hgemm_shapes(M, N, K, 1.0f,
                                 reinterpret_cast<const __half*>(a.data_ptr<at::Half>()),
                                 reinterpret_cast<const __half*>(b.data_ptr<at::Half>()), 0.0f,
                                 c.data_ptr<float>(), stream);
    }
  }
#else
  (void)calls;
  TORCH_CHECK(false, "_launcher_loop: this extension was built without its GPU kernels");
#endif
}
// ---- end of given ----

// The operator's schema, in the language of native_functions.yaml: with it,
// torch.ops.<COURSE_OPS>.gemm exists, and torch.compile and opcheck know what it takes and
// returns (a new tensor; the inputs are read-only).
COURSE_TORCH_LIBRARY(m) { m.def("gemm(Tensor a, Tensor b, float alpha=1.0) -> Tensor"); }

// Its kernel for CUDA tensors. There is no CPU kernel: called with CPU tensors, the
// dispatcher itself raises "Could not run ... with arguments from the 'CPU' backend". (This
// registration needs no GPU, so a build without CUDA has it too.)
COURSE_TORCH_LIBRARY_IMPL(CUDA, m) { m.impl("gemm", &gemm_op); }

}  // namespace course::m3_01

// The Python module. Its name must be TORCH_EXTENSION_NAME: torch.utils.cpp_extension
// defines it to the name the module is imported under (the loader's name, or the wheel's
// course_gemm._C), and Python looks for the function PyInit_<that name> in the library.
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() =
      "Exercise m3.01: the month-2 GEMMs (m2.05 SGEMM, m2.07 tensor-core GEMM) for torch tensors";
  // py::arg names the arguments (optimized_gemm(a=..., b=...) works); py::kw_only() makes
  // the ones after it keyword-only, as `*` does in a Python signature; `= value` gives the
  // defaults, and None converts to an empty c10::optional. py::call_guard constructs a
  // py::gil_scoped_release around the call: the GIL is released while the C++ runs (the
  // checks, the allocation, the launch), so other Python threads run meanwhile, and is taken
  // back before the result is converted to a torch.Tensor.
  m.def("optimized_gemm", &course::m3_01::optimized_gemm,
        R"doc(alpha * a @ b on the GPU with the month-2 kernels.

a: [M, K] and b: [K, N], CUDA tensors on one device, both float32 (the m2.05 SGEMM) or
both float16 (the m2.07 tensor-core GEMM, float32 accumulation). Views are fine (they are
copied to row-major first).
alpha: scales the product.
out: an optional float32 [M, N] contiguous CUDA tensor, written in place and returned.
Returns a float32 [M, N] tensor, for float16 inputs too. Runs on the current CUDA stream,
with the GIL released. Raises RuntimeError, naming the bad value, for any other input.)doc",
        py::arg("a"), py::arg("b"), py::kw_only(), py::arg("alpha") = 1.0,
        py::arg("out") = py::none(), py::call_guard<py::gil_scoped_release>());
  // ---- given: the same in the skeleton and the solution (./course check compares) ----
  m.def(
      "_gil_was_held_during_last_call",
      [] { return course::m3_01::gil_held_during_last_call.load(); },
      "1 if the last optimized_gemm call ran holding the GIL, 0 if not, -1 before any call");
  m.def("_launcher_loop", &course::m3_01::launcher_loop,
        "calls the month-2 launcher `calls` times on the current stream (benchmark only)",
        py::arg("a"), py::arg("b"), py::arg("c"), py::arg("calls"),
        py::call_guard<py::gil_scoped_release>());
  m.attr("ops_namespace") = py::str(C10_STRINGIZE(COURSE_OPS));
  m.attr("with_cuda") = py::bool_(COURSE_WITH_CUDA != 0);
  // ---- end of given ----
}
