// Exercise m1.05: your kernels as PyTorch operators.
//
// An extension is a shared library that PyTorch loads into the Python process. This file
// is the half every build has, with or without CUDA:
//   - the operators' schemas (TORCH_LIBRARY): their names, arguments and results, so that
//     torch.ops.<namespace>.vector_add(a, b) exists and PyTorch knows what it returns;
//   - the input checks, shared with the CUDA kernels: a wrong tensor is a Python
//     RuntimeError with a message that says what is wrong, never a crash or a wrong result;
//   - the CPU kernels, registered for tensors on the CPU (TORCH_LIBRARY_IMPL(..., CPU, ...)).
// torch_extension.cu registers the CUDA kernels for the same operators; PyTorch's
// dispatcher picks one by the device of the inputs. Read README.md first.
//
// Fill in TODO(m1.05a) to TODO(m1.05c) here and TODO(m1.05d) in torch_extension.cu, then
// run `./course grade m1_05` to check your work.
#include <cmath>
#include <cstdint>

#include "torch_extension.h"

namespace course {

void check_vector_add_inputs(const at::Tensor& a, const at::Tensor& b) {
  // TODO(m1.05c): reject what the kernels cannot handle, with TORCH_CHECK(condition,
  // message parts...). Start each message with the operator's name and say what was
  // expected and what came, e.g.
  //   TORCH_CHECK(a.scalar_type() == at::kFloat, "vector_add: a must be float32, got ", a.dtype());
  // Check, in this order:
  //   - a and b on the same device (a.device() == b.device()): "... same device ...";
  //   - a and b float32: "... float32 ...";
  //   - the same shape (a.sizes() == b.sizes()): "... same shape ...";
  //   - both contiguous (a.is_contiguous()): "... contiguous ...".
  // Show shapes and strides with shape_string(a.sizes()) and numbers with std::to_string(n),
  // not a.sizes() or n themselves (torch_extension.h says why).
}

void check_fused_gelu_inputs(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  // TODO(m1.05c): the same for fused_gelu, messages starting with "fused_gelu: ":
  //   - x, w and b on the same device;
  //   - all three float32;
  //   - x 2-D (x.dim() == 2; say "2-D"), then w and b 1-D of length x.size(1)
  //     (say "shape" and show the shape you got);
  //   - all three contiguous.
}

// The CPU kernels: plain loops over the flat arrays. They let the same tests run on a
// machine without a GPU, and they are the reference shape of the CUDA kernels.
at::Tensor vector_add_cpu(const at::Tensor& a, const at::Tensor& b) {
  check_vector_add_inputs(a, b);
  // The result is a new tensor from PyTorch's allocator, with a's shape, dtype and device.
  at::Tensor c = at::empty_like(a);
  // TODO(m1.05b): c[i] = a[i] + b[i] for every element: take the raw pointers
  //   const float* a_data = a.data_ptr<float>();   (the same for b, and float* for c)
  // and loop over i from 0 to a.numel().
  return c;
}

at::Tensor fused_gelu_cpu(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  check_fused_gelu_inputs(x, w, b);
  at::Tensor y = at::empty_like(x);
  // TODO(m1.05b): y[r, c] = gelu(x[r, c] * w[c] + b[c]) for every row r and column c, with
  //   gelu(v) = 0.5f * v * (1.0f + std::erf(v * kInvSqrt2))
  // x is row-major [rows, cols] = [x.size(0), x.size(1)]: element (r, c) is at r * cols + c.
  return y;
}

COURSE_TORCH_LIBRARY(m) {
  // TODO(m1.05a): declare the two operators, one m.def per schema:
  //   m.def("vector_add(Tensor a, Tensor b) -> Tensor");
  // and the same for fused_gelu, whose arguments are (Tensor x, Tensor w, Tensor b).
}

COURSE_TORCH_LIBRARY_IMPL(CPU, m) {
  // TODO(m1.05a): register the CPU kernels for them, one m.impl per operator:
  //   m.impl("vector_add", &vector_add_cpu);
}

}  // namespace course
