// A throwaway extension for the harness's own tests: a pybind11 function in the same library
// as m1.05's operators (torch_extension.cpp, compiled beside this file), to show that one
// shared library can be both a Python module and a set of dispatcher operators.
#include <torch/extension.h>

namespace {
// scale * t, computed by PyTorch: the point is the binding, not the kernel.
at::Tensor scaled(const at::Tensor& t, double scale) { return t * scale; }
}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("scaled", &scaled, "scale * t", pybind11::arg("t"), pybind11::arg("scale") = 2.0);
}
