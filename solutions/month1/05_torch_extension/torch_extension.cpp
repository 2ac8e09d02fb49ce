// Exercise m1.05: your kernels as PyTorch operators. (Reference solution.)
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
#include <cmath>
#include <cstdint>

#include "torch_extension.h"

namespace course {

// Every message starts with the operator's name and says what was expected and what came.
void check_vector_add_inputs(const at::Tensor& a, const at::Tensor& b) {
  // The dispatcher calls the CUDA kernel as soon as one input is on a GPU; a kernel handed
  // a CPU pointer would read host memory from the GPU. Same device, or a clear error.
  TORCH_CHECK(a.device() == b.device(), "vector_add: a and b must be on the same device, got a on ",
              a.device(), " and b on ", b.device());
  // The kernels read float32. A double tensor read as float would be garbage, so say so.
  TORCH_CHECK(a.scalar_type() == at::kFloat, "vector_add: a must be float32, got ", a.dtype());
  TORCH_CHECK(b.scalar_type() == at::kFloat, "vector_add: b must be float32, got ", b.dtype());
  // Same shape, not only the same number of elements: a [2, 5] plus a [10] is a mistake
  // (torch.add would broadcast or refuse; this operator does not broadcast).
  TORCH_CHECK(a.sizes() == b.sizes(), "vector_add: a and b must have the same shape, got ",
              shape_string(a.sizes()), " and ", shape_string(b.sizes()));
  // The kernels index a flat array: element i at data_ptr()[i]. That is only true of a
  // contiguous tensor; a transposed or sliced view has its elements elsewhere.
  TORCH_CHECK(a.is_contiguous(), "vector_add: a must be contiguous, got strides ",
              shape_string(a.strides()), " for shape ", shape_string(a.sizes()),
              " (call .contiguous() first)");
  TORCH_CHECK(b.is_contiguous(), "vector_add: b must be contiguous, got strides ",
              shape_string(b.strides()), " for shape ", shape_string(b.sizes()),
              " (call .contiguous() first)");
}

void check_fused_gelu_inputs(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  TORCH_CHECK(x.device() == w.device() && x.device() == b.device(),
              "fused_gelu: x, w and b must be on the same device, got x on ", x.device(), ", w on ",
              w.device(), " and b on ", b.device());
  TORCH_CHECK(x.scalar_type() == at::kFloat, "fused_gelu: x must be float32, got ", x.dtype());
  TORCH_CHECK(w.scalar_type() == at::kFloat, "fused_gelu: w must be float32, got ", w.dtype());
  TORCH_CHECK(b.scalar_type() == at::kFloat, "fused_gelu: b must be float32, got ", b.dtype());
  TORCH_CHECK(x.dim() == 2, "fused_gelu: x must be 2-D [rows, cols], got shape ",
              shape_string(x.sizes()));
  // Check the rank before size(0): size(0) of a 0-d tensor throws an IndexError instead.
  TORCH_CHECK(w.dim() == 1 && w.size(0) == x.size(1),
              "fused_gelu: w must be 1-D with one weight per column of x (shape [",
              std::to_string(x.size(1)), "]), got shape ", shape_string(w.sizes()));
  TORCH_CHECK(b.dim() == 1 && b.size(0) == x.size(1),
              "fused_gelu: b must be 1-D with one bias per column of x (shape [",
              std::to_string(x.size(1)), "]), got shape ", shape_string(b.sizes()));
  TORCH_CHECK(x.is_contiguous(), "fused_gelu: x must be contiguous (row-major), got strides ",
              shape_string(x.strides()), " for shape ", shape_string(x.sizes()),
              " (call .contiguous() first)");
  TORCH_CHECK(w.is_contiguous() && b.is_contiguous(),
              "fused_gelu: w and b must be contiguous, got strides ", shape_string(w.strides()),
              " and ", shape_string(b.strides()), " (call .contiguous() first)");
}

namespace {

float gelu(float v) { return 0.5f * v * (1.0f + std::erf(v * kInvSqrt2)); }

}  // namespace

// The CPU kernels: plain loops over the flat arrays. They let the same tests run on a
// machine without a GPU, and they are the reference shape of the CUDA kernels.
at::Tensor vector_add_cpu(const at::Tensor& a, const at::Tensor& b) {
  check_vector_add_inputs(a, b);
  // The result is a new tensor from PyTorch's allocator, with a's shape, dtype and device.
  at::Tensor c = at::empty_like(a);
  const float* a_data = a.data_ptr<float>();
  const float* b_data = b.data_ptr<float>();
  float* c_data = c.data_ptr<float>();
  const std::int64_t n = a.numel();
  for (std::int64_t i = 0; i < n; ++i) c_data[i] = a_data[i] + b_data[i];
  return c;
}

at::Tensor fused_gelu_cpu(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  check_fused_gelu_inputs(x, w, b);
  at::Tensor y = at::empty_like(x);
  const float* x_data = x.data_ptr<float>();
  const float* w_data = w.data_ptr<float>();
  const float* b_data = b.data_ptr<float>();
  float* y_data = y.data_ptr<float>();
  const std::int64_t rows = x.size(0);
  const std::int64_t cols = x.size(1);
  // Row-major: element (r, c) is at r * cols + c, and column c uses w[c] and b[c].
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::int64_t i = r * cols + c;
      y_data[i] = gelu(x_data[i] * w_data[c] + b_data[c]);
    }
  }
  return y;
}

// The schemas: one line per operator, in the language of native_functions.yaml.
// "Tensor" arguments that are not annotated (Tensor(a!)) are read-only, and "-> Tensor"
// says the operator returns a new tensor. With these, torch.ops.<namespace>.vector_add
// exists, whatever devices have kernels for it.
COURSE_TORCH_LIBRARY(m) {
  m.def("vector_add(Tensor a, Tensor b) -> Tensor");
  m.def("fused_gelu(Tensor x, Tensor w, Tensor b) -> Tensor");
}

// The CPU kernels, under the CPU dispatch key: the dispatcher calls them when the inputs are
// CPU tensors. torch_extension.cu registers the CUDA ones under the CUDA key.
COURSE_TORCH_LIBRARY_IMPL(CPU, m) {
  m.impl("vector_add", &vector_add_cpu);
  m.impl("fused_gelu", &fused_gelu_cpu);
}

}  // namespace course
