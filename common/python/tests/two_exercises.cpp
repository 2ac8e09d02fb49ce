// A throwaway extension for the harness's own tests, built from two exercises' kernels: the
// m1.01 vector add and the m1.04 fused GELU (their reference solutions), bound to PyTorch
// tensors with pybind11. It checks that the harness links kernels of different exercises
// into one module, with common/include on the include path and COURSE_IMPL defined.
#include <ATen/cuda/CUDAContext.h>
#include <torch/extension.h>

#include "fused_elementwise.h"
#include "vector_add.h"

namespace {

void check_cuda_float(const at::Tensor& t, const char* name) {
  TORCH_CHECK(t.is_cuda() && t.scalar_type() == at::kFloat && t.is_contiguous(), name,
              " must be a contiguous float32 CUDA tensor");
}

at::Tensor vector_add(const at::Tensor& a, const at::Tensor& b) {
  check_cuda_float(a, "a");
  check_cuda_float(b, "b");
  TORCH_CHECK(a.sizes() == b.sizes(), "a and b must have the same shape");
  at::Tensor c = at::empty_like(a);
  course::impl::vector_add(a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(),
                           a.numel(), at::cuda::getCurrentCUDAStream());
  return c;
}

at::Tensor affine_gelu(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  check_cuda_float(x, "x");
  check_cuda_float(w, "w");
  check_cuda_float(b, "b");
  TORCH_CHECK(x.dim() == 2 && w.numel() == x.size(1) && b.numel() == x.size(1),
              "x must be [rows, cols] and w, b of length cols");
  at::Tensor y = at::empty_like(x);
  course::impl::affine_gelu(x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(),
                            y.data_ptr<float>(), x.size(0), x.size(1),
                            at::cuda::getCurrentCUDAStream());
  return y;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("vector_add", &vector_add, "m1.01's kernel: a + b");
  m.def("affine_gelu", &affine_gelu, "m1.04's kernel: gelu(x * w + b)");
}
