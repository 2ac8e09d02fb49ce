// Exercise m3.01: the month-2 GEMMs as a Python module and as a PyTorch operator.
// (Skeleton: the TODOs are yours.)
//
// What is new after m1.05: there, the operators were TORCH_LIBRARY entries only. Here one
// shared library is two things at once:
//   - a Python module written with pybind11 (PYBIND11_MODULE): optimized_gemm(a, b, *,
//     alpha=1.0, out=None), with keyword arguments, defaults, a docstring and the GIL
//     released while it runs: the Pythonic API;
//   - a dispatcher operator (TORCH_LIBRARY): torch.ops.<namespace>.gemm(a, b, alpha), which
//     torch.compile can trace and torch.library.opcheck can test: the PyTorch integration.
// Both call the same gemm() below, which checks its inputs and launches your month-2
// kernels on PyTorch's current stream: float32 -> m2.05's sgemm_2d_register_tile,
// float16 -> m2.07's mma_gemm (tensor cores). Read README.md first.
//
// Fill in TODO(m3.01a) to TODO(m3.01d) here (and TODO(m3.01e) in setup.py), then run
// `./course grade m3_01` to check your work.
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

void check_gemm_inputs(const char* name, const at::Tensor& a, const at::Tensor& b,
                       const c10::optional<at::Tensor>& out) {
  // TODO(m3.01b): reject what the kernels cannot handle, one TORCH_CHECK(condition, message
  // parts...) per rule, in this order (README.md's table says why each one matters). Start
  // every message with `name` and ": ", and show the value that came, e.g.
  //   TORCH_CHECK(a.dim() == 2, name, ": a must be 2-D [M, K], got shape ",
  //   shape_string(a.sizes()));
  //   1. a and b both float32 or both float16 (a.scalar_type() == at::kFloat / at::kHalf);
  //      show both with dtype_string(a), dtype_string(b);
  //   2. a and b 2-D ("2-D", and the shape);
  //   3. the inner sizes match: b.size(0) == a.size(1) (show both shapes);
  //   4. M, N, K and the element counts M * K, K * N, M * N at most kMaxElements (the
  //      launchers take int): say "2^31" and show M, N and K with std::to_string;
  //   5. if out.has_value(): *out float32, shape [M, N] (show the expected and the actual
  //      shape), contiguous (show its strides), and overlapping neither a nor b:
  //      at::get_overlap_status(*out, a) must not be at::MemOverlapStatus::Full or Partial
  //      (say "overlap");
  //   6. last, the device: a.is_cuda() ("CUDA", and device_string(a)), b on a's device
  //      ("same device"), and out on a's device too.
  // Use shape_string(...), dtype_string(t), device_string(t) and std::to_string(n) in the
  // messages, never t.sizes() or a bare integer (pybind_gemm.h says why).
  (void)name, (void)a, (void)b, (void)out;
}

#if COURSE_WITH_CUDA
// The launch, on inputs check_gemm_inputs accepted.
at::Tensor launch_gemm(const at::Tensor& a_in, const at::Tensor& b_in, double alpha,
                       const c10::optional<at::Tensor>& out) {
  // TODO(m3.01c): the launch. The inputs passed check_gemm_inputs; now
  //   1. make their GPU the current device: const c10::cuda::CUDAGuard device_guard(a_in.device());
  //   2. take row-major copies of views: const at::Tensor a = a_in.contiguous(); (the same for b;
  //      no copy when the tensor is contiguous already);
  //   3. the sizes as int: M = a.size(0), K = a.size(1), N = b.size(1) (they fit: check 4);
  //   4. the result: *out when out.has_value(), else a new float32 [M, N] tensor on a's device:
  //      at::empty({M, N}, a.options().dtype(at::kFloat));
  //   5. the stream: const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  //   6. the plan for this shape (m2.09): precision gemm_shapes::Precision::fp32 or ::fp16 by
  //      the dtype, multiprocessors = at::cuda::getCurrentDeviceProperties()->multiProcessorCount,
  //      plan = course::impl::choose_gemm_plan(M, N, K, precision, multiprocessors,
  //      kMaxWorkspaceFloats, course::impl::wgmma_capacity_here()) (the last: whether m2.09's
  //      wgmma tiles run on this GPU, and how many of their clusters fit);
  //   7. its workspace from PyTorch's caching allocator, on this stream:
  //      floats = gemm_workspace_floats(plan, a, b) (pybind_gemm.h; 0 when nothing is needed);
  //      at::empty({floats}, a.options().dtype(at::kFloat)), its data_ptr<float>() (nullptr
  //      when floats == 0);
  //   8. float32 inputs: course::impl::sgemm_planned(plan, M, N, K, alpha, A, B, beta, C,
  //      workspace, floats, stream) with A = a.data_ptr<float>(), ..., beta = 0.0f (C is only
  //      written), C = c.data_ptr<float>(); float16 inputs: course::impl::hgemm_planned with the
  //      same arguments, A and B as reinterpret_cast<const __half*>(a.data_ptr<at::Half>())
  //      (the same 16 bits);
  //   9. return the result.
  // The placeholder below returns a tensor nothing has written.
  (void)b_in, (void)alpha;
  return out.has_value()
             ? *out
             : at::empty({a_in.size(0), b_in.size(1)}, a_in.options().dtype(at::kFloat));
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

COURSE_TORCH_LIBRARY(m) {
  // TODO(m3.01d): declare the operator's schema, as m1.05 did:
  //   m.def("gemm(Tensor a, Tensor b, float alpha=1.0) -> Tensor");
  (void)m;
}

COURSE_TORCH_LIBRARY_IMPL(CUDA, m) {
  // TODO(m3.01d): register gemm_op (above) as its kernel for CUDA tensors:
  //   m.impl("gemm", &gemm_op);
  // (No CPU kernel: the dispatcher itself rejects CPU tensors. The registration needs no
  // GPU, so it is in every build.)
  (void)m;
}

}  // namespace course::m3_01

// The Python module. Its name must be TORCH_EXTENSION_NAME: torch.utils.cpp_extension
// defines it to the name the module is imported under (the loader's name, or the wheel's
// course_gemm._C), and Python looks for the function PyInit_<that name> in the library.
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() =
      "Exercise m3.01: the month-2 GEMMs (m2.05 SGEMM, m2.07 tensor-core GEMM) for torch tensors";
  // TODO(m3.01a): bind course::m3_01::optimized_gemm as "optimized_gemm", with
  //   - a docstring (a string after the function): what it computes, for which dtypes;
  //   - its arguments named, a and b positional, alpha and out keyword-only with defaults:
  //       py::arg("a"), py::arg("b"), py::kw_only(), py::arg("alpha") = 1.0, py::arg("out") =
  //       py::none()
  //     (py::kw_only() is the `*` of a Python signature; None becomes an empty c10::optional);
  //   - the GIL released during the call: py::call_guard<py::gil_scoped_release>().
  // That is m.def("optimized_gemm", &course::m3_01::optimized_gemm, "docstring", py::arg("a"),
  // ...);
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
