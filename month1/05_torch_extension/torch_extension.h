// The interface shared by the two halves of the m1.05 extension:
//   torch_extension.cpp  the operator schemas, the input checks and the CPU kernels (always built)
//   torch_extension.cu   the CUDA kernels (built only when PyTorch and the machine have CUDA)
// Your skeleton and the reference (solutions/month1/05_torch_extension/) both implement it.
#pragma once

// The few PyTorch headers this extension needs, instead of <ATen/ATen.h> or
// <torch/extension.h>, which declare every operator of PyTorch: the compiler reads them
// for every file that includes them, and with nvcc that halves the time a rebuild takes.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>

#include <cstddef>
#include <string>
#include <torch/library.h>

#include "course/torch_text.h"  // shape_string: shapes in error messages

// The operators' namespace: torch.ops.<COURSE_OPS>.vector_add in Python.
//
// In your own project you would write TORCH_LIBRARY(my_ops, m) { ... }. Here the loader
// (load_extension.py) sets COURSE_OPS to m1_05_exercise or m1_05_solution, so that both
// versions can be loaded into one Python process (the benchmark times them side by side),
// and COURSE_TORCH_LIBRARY(m) / COURSE_TORCH_LIBRARY_IMPL(CPU, m) are TORCH_LIBRARY and
// TORCH_LIBRARY_IMPL with that namespace filled in. (The extra macro level makes the
// preprocessor replace COURSE_OPS by its value before TORCH_LIBRARY pastes it into names.)
#ifndef COURSE_OPS
#define COURSE_OPS m1_05_exercise
#endif
#include "course/torch_library.h"  // COURSE_TORCH_LIBRARY(m), COURSE_TORCH_LIBRARY_IMPL(key, m)

namespace course {

// 1/sqrt(2), for gelu(v) = 0.5 * v * (1 + erf(v / sqrt(2))), the exact GELU that
// torch.nn.functional.gelu computes by default (approximate='none').
constexpr float kInvSqrt2 = 0.70710678118654752440f;

// The input checks, shared by the CPU and the CUDA kernels (defined in torch_extension.cpp).
// They throw c10::Error, which Python sees as a RuntimeError with the message, unless:
//   vector_add(a, b):     a and b on one device, float32, the same shape, contiguous;
//   fused_gelu(x, w, b):  x, w and b on one device, float32, x 2-D [rows, cols], w and b
//                         1-D of length cols, all contiguous.
void check_vector_add_inputs(const at::Tensor& a, const at::Tensor& b);
void check_fused_gelu_inputs(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b);

}  // namespace course
