// Exercise m3.06: an autograd-capable convolution, the half every build has. (Reference solution.)
//
// This file holds
//   - the schemas of the six operators (TORCH_LIBRARY): the forward and each gradient is its
//     own dispatcher operator, so that autograd (autograd_conv.py), torch.compile and
//     torch.library.opcheck see every step of the backward;
//   - the input checks, shared with the CUDA kernels;
//   - the CPU kernels: plain loops over conv_backward.h's per-element functions, in float32
//     and float64. They are slow and simple on purpose: they let CI run gradcheck in
//     float64 on a machine without a GPU, and they are the shape of the CUDA kernels.
// autograd_conv.cu registers the CUDA kernels of the same operators. Read README.md first.
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

// ---- given: the same in the skeleton and the solution (./course check compares) ----
#include "autograd_conv.h"
#include "conv_backward.h"

namespace course {

namespace {

bool is_cpu_dtype(const at::Tensor& t) {
  return t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble;
}

// float16 and bfloat16 run on CUDA only: m3.05's tensor cores for the forward (the CPU
// kernels are float32 and float64 loops).
bool is_supported_dtype(const at::Tensor& t) {
  return is_cpu_dtype(t) ||
         (t.is_cuda() && (t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16));
}

// A stride, padding or dilation argument: exactly two values (height, width), each at least
// `minimum`, small enough for int.
void check_pair(const char* op, const char* name, at::IntArrayRef values, std::int64_t minimum) {
  TORCH_CHECK(values.size() == 2, op, ": ", name, " must have 2 values (height, width), got ",
              shape_string(values));
  for (const std::int64_t v : values) {
    TORCH_CHECK(v >= minimum && v <= (1 << 20), op, ": ", name,
                " values must be >= ", std::to_string(minimum), ", got ", shape_string(values));
  }
}

}  // namespace

ConvShape check_conv_arguments(const char* op, const at::Tensor& input, const at::Tensor& weight,
                               const c10::optional<at::Tensor>& bias, at::IntArrayRef stride,
                               at::IntArrayRef padding, at::IntArrayRef dilation) {
  TORCH_CHECK(input.defined() && weight.defined(), op, ": input and weight must be tensors");
  TORCH_CHECK(input.device() == weight.device(), op,
              ": input and weight must be on the same device, got ", input.device(), " and ",
              weight.device());
  TORCH_CHECK(is_supported_dtype(input), op,
              ": input must be float32 or float64 (float16 and bfloat16 on CUDA only), got ",
              input.dtype(), " on ", input.device());
  TORCH_CHECK(weight.scalar_type() == input.scalar_type(), op,
              ": weight must have the input's dtype (", input.dtype(), "), got ", weight.dtype());
  TORCH_CHECK(input.dim() == 4, op, ": input must be 4-D [N, C, H, W], got shape ",
              shape_string(input.sizes()));
  TORCH_CHECK(weight.dim() == 4, op, ": weight must be 4-D [K, C, R, S], got shape ",
              shape_string(weight.sizes()));
  TORCH_CHECK(weight.size(1) == input.size(1), op,
              ": weight has C = ", std::to_string(weight.size(1)),
              " input channels but the input has ", std::to_string(input.size(1)), " (shapes ",
              shape_string(weight.sizes()), " and ", shape_string(input.sizes()),
              "); groups != 1 is not supported");
  if (bias.has_value() && bias->defined()) {
    TORCH_CHECK(bias->device() == input.device(), op, ": bias must be on the input's device, got ",
                bias->device());
    TORCH_CHECK(bias->scalar_type() == input.scalar_type(), op,
                ": bias must have the input's dtype (", input.dtype(), "), got ", bias->dtype());
    TORCH_CHECK(bias->dim() == 1 && bias->size(0) == weight.size(0), op,
                ": bias must be 1-D with K = ", std::to_string(weight.size(0)),
                " values, got shape ", shape_string(bias->sizes()));
  }
  check_pair(op, "stride", stride, 1);
  check_pair(op, "padding", padding, 0);
  check_pair(op, "dilation", dilation, 1);
  constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max();
  for (const at::Tensor* t : {&input, &weight}) {
    for (const std::int64_t size : t->sizes()) {
      TORCH_CHECK(size <= kMaxInt, op, ": sizes must fit in int, got ", shape_string(t->sizes()));
    }
  }
  ConvShape s;
  s.N = static_cast<int>(input.size(0)), s.C = static_cast<int>(input.size(1));
  s.H = static_cast<int>(input.size(2)), s.W = static_cast<int>(input.size(3));
  s.K = static_cast<int>(weight.size(0));
  s.R = static_cast<int>(weight.size(2)), s.S = static_cast<int>(weight.size(3));
  s.stride_h = static_cast<int>(stride[0]), s.stride_w = static_cast<int>(stride[1]);
  s.pad_h = static_cast<int>(padding[0]), s.pad_w = static_cast<int>(padding[1]);
  s.dilation_h = static_cast<int>(dilation[0]), s.dilation_w = static_cast<int>(dilation[1]);
  try {
    // Sizes below 1, a filter larger than the padded image, 2^31 elements or more in one
    // image's x or y, or in w. A larger batch is fine: the CUDA operators run it in slices
    // of whole images (conv_split.h), the CPU loops index with 64 bits.
    ConvShape one_image = s;
    one_image.N = std::min(s.N, 1);
    require_conv_arguments(op, one_image);
  } catch (const std::invalid_argument& error) {
    TORCH_CHECK(false, error.what());
  }
  return s;
}

void check_grad_output(const char* op, const ConvShape& s, const at::Tensor& grad_output,
                       const at::Tensor& input) {
  TORCH_CHECK(grad_output.defined(), op, ": grad_output must be a tensor");
  TORCH_CHECK(grad_output.device() == input.device(), op,
              ": grad_output must be on the input's device, got ", grad_output.device());
  TORCH_CHECK(grad_output.scalar_type() == input.scalar_type(), op,
              ": grad_output must have the input's dtype (", input.dtype(), "), got ",
              grad_output.dtype());
  const std::vector<std::int64_t> expected = {s.N, s.K, s.P(), s.Q()};
  TORCH_CHECK(grad_output.sizes() == at::IntArrayRef(expected), op,
              ": grad_output must have the forward output's shape ", shape_string(expected),
              ", got ", shape_string(grad_output.sizes()));
}

// The CPU kernels: the loops of conv_backward.h's definitions, over contiguous copies.
namespace {

at::Tensor conv2d_cpu(const at::Tensor& input, const at::Tensor& weight,
                      const c10::optional<at::Tensor>& bias, at::IntArrayRef stride,
                      at::IntArrayRef padding, at::IntArrayRef dilation) {
  const ConvShape s =
      check_conv_arguments("conv2d", input, weight, bias, stride, padding, dilation);
  const at::Tensor x = input.contiguous(), w = weight.contiguous();
  const bool has_bias = bias.has_value() && bias->defined();
  const at::Tensor b = has_bias ? bias->contiguous() : at::Tensor();
  at::Tensor y = at::empty({s.N, s.K, s.P(), s.Q()}, x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "conv2d_cpu", [&] {
    const scalar_t* b_data = has_bias ? b.data_ptr<scalar_t>() : nullptr;
    scalar_t* out = y.data_ptr<scalar_t>();
    std::int64_t i = 0;
    for (int n = 0; n < s.N; ++n)
      for (int k = 0; k < s.K; ++k)
        for (int p = 0; p < s.P(); ++p)
          for (int q = 0; q < s.Q(); ++q)
            out[i++] =
                forward_at(s, x.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(), b_data, n, k, p, q);
  });
  return y.contiguous(output_memory_format(input));  // the input's layout (autograd_conv.h)
}

at::Tensor conv2d_grad_input_cpu(const at::Tensor& grad_output, const at::Tensor& input,
                                 const at::Tensor& weight, at::IntArrayRef stride,
                                 at::IntArrayRef padding, at::IntArrayRef dilation) {
  const char* op = "conv2d_grad_input";
  const ConvShape s = check_conv_arguments(op, input, weight, {}, stride, padding, dilation);
  check_grad_output(op, s, grad_output, input);
  const at::Tensor dy = grad_output.contiguous(), w = weight.contiguous();
  at::Tensor dx = at::empty({s.N, s.C, s.H, s.W}, dy.options());
  AT_DISPATCH_FLOATING_TYPES(dy.scalar_type(), "conv2d_grad_input_cpu", [&] {
    scalar_t* out = dx.data_ptr<scalar_t>();
    std::int64_t i = 0;
    for (int n = 0; n < s.N; ++n)
      for (int c = 0; c < s.C; ++c)
        for (int h = 0; h < s.H; ++h)
          for (int col = 0; col < s.W; ++col)
            out[i++] =
                grad_input_at(s, dy.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(), n, c, h, col);
  });
  return dx;
}

at::Tensor conv2d_grad_weight_cpu(const at::Tensor& grad_output, const at::Tensor& input,
                                  const at::Tensor& weight, at::IntArrayRef stride,
                                  at::IntArrayRef padding, at::IntArrayRef dilation) {
  const char* op = "conv2d_grad_weight";
  const ConvShape s = check_conv_arguments(op, input, weight, {}, stride, padding, dilation);
  check_grad_output(op, s, grad_output, input);
  const at::Tensor dy = grad_output.contiguous(), x = input.contiguous();
  at::Tensor dw = at::empty({s.K, s.C, s.R, s.S}, dy.options());
  AT_DISPATCH_FLOATING_TYPES(dy.scalar_type(), "conv2d_grad_weight_cpu", [&] {
    scalar_t* out = dw.data_ptr<scalar_t>();
    std::int64_t i = 0;
    for (int k = 0; k < s.K; ++k)
      for (int c = 0; c < s.C; ++c)
        for (int r = 0; r < s.R; ++r)
          for (int t = 0; t < s.S; ++t)
            out[i++] = grad_weight_partial(s, dy.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), k, c,
                                           r, t, 0, 1);
  });
  return dw;
}
// ---- end of given ----

at::Tensor conv2d_grad_bias_cpu(const at::Tensor& grad_output) {
  const char* op = "conv2d_grad_bias";
  TORCH_CHECK(grad_output.defined() && grad_output.dim() == 4, op,
              ": grad_output must be 4-D [N, K, P, Q], got shape ",
              shape_string(grad_output.sizes()));
  TORCH_CHECK(is_cpu_dtype(grad_output), op, ": grad_output must be float32 or float64, got ",
              grad_output.dtype());
  const at::Tensor dy = grad_output.contiguous();
  const std::int64_t N = dy.size(0), K = dy.size(1), pixels = dy.size(2) * dy.size(3);
  at::Tensor db = at::empty({K}, dy.options());
  AT_DISPATCH_FLOATING_TYPES(dy.scalar_type(), "conv2d_grad_bias_cpu", [&] {
    const scalar_t* in = dy.data_ptr<scalar_t>();
    scalar_t* out = db.data_ptr<scalar_t>();
    // The solution: db[k] adds dy[n][k][p][q] over every image n and pixel (p, q); the
    // pixels of one (n, k) are the contiguous run dy[(n * K + k) * P * Q ...].
    for (std::int64_t k = 0; k < K; ++k) {
      scalar_t sum = 0;
      for (std::int64_t n = 0; n < N; ++n) {
        const scalar_t* plane = in + (n * K + k) * pixels;
        for (std::int64_t j = 0; j < pixels; ++j) sum += plane[j];
      }
      out[k] = sum;
    }
  });
  return db;
}

}  // namespace

// ---- given: the same in the skeleton and the solution (./course check compares) ----
COURSE_TORCH_LIBRARY(m) {
  m.def(
      "conv2d(Tensor input, Tensor weight, Tensor? bias, int[2] stride, int[2] padding, "
      "int[2] dilation) -> Tensor");
  // The four gradient operators share one argument list (autograd_conv.h).
  for (const char* name : {"conv2d_grad_input", "conv2d_grad_input_gather", "conv2d_grad_weight",
                           "conv2d_grad_weight_direct"}) {
    const std::string schema = std::string(name) +
                               "(Tensor grad_output, Tensor input, Tensor weight, int[2] stride, "
                               "int[2] padding, int[2] dilation) -> Tensor";
    m.def(schema.c_str());  // torch::schema() parses a const char* (1.13 takes no std::string)
  }
  m.def("conv2d_grad_bias(Tensor grad_output) -> Tensor");
}

COURSE_TORCH_LIBRARY_IMPL(CPU, m) {
  m.impl("conv2d", &conv2d_cpu);
  // On the CPU the fast and the reference paths are the same loops.
  m.impl("conv2d_grad_input", &conv2d_grad_input_cpu);
  m.impl("conv2d_grad_input_gather", &conv2d_grad_input_cpu);
  m.impl("conv2d_grad_weight", &conv2d_grad_weight_cpu);
  m.impl("conv2d_grad_weight_direct", &conv2d_grad_weight_cpu);
  m.impl("conv2d_grad_bias", &conv2d_grad_bias_cpu);
}
// ---- end of given ----

}  // namespace course
