// The interface shared by the halves of the m3.06 extension:
//   autograd_conv.cpp  the operator schemas, the input checks and the CPU kernels (always built)
//   autograd_conv.cu   your CUDA kernel (grad-bias); autograd_conv_given.cuh holds the other
//                      kernels and the forward's choice of kernel (built with CUDA)
//   conv_backward.h    what one element of each gradient is: the arithmetic both share
// Your skeleton and the reference (solutions/month3/06_autograd_conv/) both implement it.
// The operators (torch.ops.<COURSE_OPS>.<name>), float32 or float64 (on CUDA also float16 and
// bfloat16: the forward on m3.05's tensor cores), groups = 1, shapes in NCHW order:
//   conv2d(input, weight, bias?, stride, padding, dilation)             -> y        [N, K, P, Q]
//   conv2d_grad_input(grad_output, input, weight, stride, ...)          -> dx       [N, C, H, W]
//   conv2d_grad_weight(grad_output, input, weight, stride, ...)         -> dw       [K, C, R, S]
//   conv2d_grad_bias(grad_output)                                       -> db       [K]
//   conv2d_grad_input_gather, conv2d_grad_weight_direct: the same results, always from the
//     gather / direct kernels (conv_backward.h), which conv2d_grad_input and
//     conv2d_grad_weight replace by faster given paths on CUDA for some shapes (README.md).
// `input` and `weight` give the gradients their shapes (and the values they need): a shape
// given as a tensor stays a tensor under torch.compile, and for stride > 1 the input's size
// cannot be told from grad_output's.
#pragma once

// The few PyTorch headers the extension needs (m1.05 says why not <torch/extension.h>).
#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>

#include <torch/library.h>
#include <cstddef>
#include <string>

#include "course/conv.h"
#include "course/torch_text.h"  // shape_string: shapes in error messages

// torch.ops.<COURSE_OPS>: m3_06_exercise or m3_06_solution (load_extension.py sets it), so
// both versions load into one process, as in m1.05.
#ifndef COURSE_OPS
#define COURSE_OPS m3_06_exercise
#endif
#include "course/torch_library.h"  // COURSE_TORCH_LIBRARY(m), COURSE_TORCH_LIBRARY_IMPL(key, m)

namespace course {

// The checks every operator starts with (autograd_conv.cpp). They throw c10::Error, a
// Python RuntimeError whose message starts with `op`, unless: input and weight (and bias,
// grad_output) on one device, all of one dtype: float32 or float64, or on CUDA float16 or
// bfloat16; input [N, C, H, W] and weight
// [K, C, R, S] 4-D with the same C (groups = 1); bias 1-D of K values; stride, padding and
// dilation two values each, >= 1, >= 0 and >= 1; a non-empty output that fits in int
// indexing. Any strides are accepted: the operators read .contiguous() copies.
ConvShape check_conv_arguments(const char* op, const at::Tensor& input, const at::Tensor& weight,
                               const c10::optional<at::Tensor>& bias, at::IntArrayRef stride,
                               at::IntArrayRef padding, at::IntArrayRef dilation);
// ... and for the gradients, grad_output [N, K, P, Q] of the forward's output shape.
void check_grad_output(const char* op, const ConvShape& shape, const at::Tensor& grad_output,
                       const at::Tensor& input);

// The layout the forward returns y in, as nn.Conv2d does: ChannelsLast for an input that is
// channels_last (and not also NCHW-contiguous, as when C = 1), else Contiguous (NCHW). The
// fake kernel in autograd_conv_given.py applies the same rule.
inline at::MemoryFormat output_memory_format(const at::Tensor& input) {
  return input.is_contiguous(at::MemoryFormat::ChannelsLast) && !input.is_contiguous()
             ? at::MemoryFormat::ChannelsLast
             : at::MemoryFormat::Contiguous;
}

}  // namespace course
