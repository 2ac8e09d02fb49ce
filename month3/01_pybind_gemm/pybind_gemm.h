// The given half of exercise m3.01, shared by your pybind_gemm.cpp and the reference
// (solutions/month3/01_pybind_gemm/pybind_gemm.cpp): names, message helpers and the
// declarations of the functions the .cpp defines. You do not need to edit it.
#pragma once

#include <ATen/ATen.h>

#include <torch/library.h>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "course/torch_text.h"  // shape_string: shapes in error messages

// The dispatcher operators' namespace: torch.ops.<COURSE_OPS>.gemm in Python.
//
// In your own project you would write TORCH_LIBRARY(my_ops, m) { ... }. Here the loader
// (load_extension.py) sets COURSE_OPS to m3_01_exercise or m3_01_solution, so that both
// versions can be loaded into one Python process (the benchmark times them side by side),
// and setup.py sets it to course_gemm for the wheel. COURSE_TORCH_LIBRARY(m) and
// COURSE_TORCH_LIBRARY_IMPL(CUDA, m) are TORCH_LIBRARY and TORCH_LIBRARY_IMPL with that
// namespace filled in (the extra macro level makes the preprocessor replace COURSE_OPS by
// its value before TORCH_LIBRARY pastes it into names), as in m1.05.
#ifndef COURSE_OPS
#define COURSE_OPS m3_01_exercise
#endif
#include "course/torch_library.h"  // COURSE_TORCH_LIBRARY(m), COURSE_TORCH_LIBRARY_IMPL(key, m)

// Whether this build has the CUDA half (the harness and setup.py define it to 1 or 0).
#ifndef COURSE_WITH_CUDA
#define COURSE_WITH_CUDA 0
#endif

#if COURSE_WITH_CUDA
#include "gemm_shapes.h"  // m2.09: the plans and their workspace sizes
#endif

namespace course::m3_01 {

// The largest size the month-2 launchers take: they index with int (course/gemm.h).
constexpr std::int64_t kMaxElements = std::numeric_limits<int>::max();

#if COURSE_WITH_CUDA
// The most workspace for split-K's float32 partial products (m2.09) one call plans with:
// 64 MiB, as much as m2.09's own launchers keep. The shape chooser never plans more splits
// than fit.
constexpr std::size_t kMaxWorkspaceFloats = gemm_shapes::kSharedWorkspaceFloats;

// The workspace one call takes from PyTorch's caching allocator: the plan's partial products,
// and for float16 operands whose rows 16-byte loads cannot read (gemm_shapes.h,
// hgemm_workspace_floats) room for m2.09's zero-padded copies, without which hgemm_planned
// falls back to its slower element-by-element loads.
inline std::size_t gemm_workspace_floats(const gemm_shapes::GemmPlan& plan, const at::Tensor& a,
                                         const at::Tensor& b) {
  const int M = static_cast<int>(a.size(0)), K = static_cast<int>(a.size(1)),
            N = static_cast<int>(b.size(1));
  return a.scalar_type() == at::kHalf
             ? gemm_shapes::hgemm_workspace_floats(plan, M, N, K, a.data_ptr(), b.data_ptr())
             : gemm_shapes::workspace_floats(plan, M, N);
}
#endif

// "float32", "float16", "float64", ...: a dtype as Python spells it (torch.float32), for
// error messages that a PyTorch user reads. Other types keep PyTorch's C++ name.
inline std::string dtype_string(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return "float32";
    case at::kHalf: return "float16";
    case at::kDouble: return "float64";
    case at::kBFloat16: return "bfloat16";
    case at::kInt: return "int32";
    case at::kLong: return "int64";
    case at::kShort: return "int16";
    case at::kChar: return "int8";
    case at::kByte: return "uint8";
    case at::kBool: return "bool";
    default: return c10::toString(t.scalar_type());
  }
}

// "cuda:0", "cpu": a device as text.
inline std::string device_string(const at::Tensor& t) { return t.device().str(); }

// The functions pybind_gemm.cpp defines.
//
// check_gemm_inputs: TORCH_CHECKs every rule of README.md's table (dtype, 2-D, inner sizes,
// sizes that fit the kernels, out=, device), in that order, so that everything but the
// device is checked on a machine without a GPU too.
// `name` starts every message: "optimized_gemm" for the pybind11 function, "gemm" for the
// operator.
void check_gemm_inputs(const char* name, const at::Tensor& a, const at::Tensor& b,
                       const c10::optional<at::Tensor>& out);

// launch_gemm: the launch itself, on inputs check_gemm_inputs accepted (the CUDA build's is
// yours; a build without CUDA has one that raises).
at::Tensor launch_gemm(const at::Tensor& a, const at::Tensor& b, double alpha,
                       const c10::optional<at::Tensor>& out);

// gemm: alpha * a @ b, checked, on the current stream: the one kernel behind the pybind11
// function optimized_gemm and the dispatcher operator torch.ops.<COURSE_OPS>.gemm.
at::Tensor gemm(const at::Tensor& a, const at::Tensor& b, double alpha,
                const c10::optional<at::Tensor>& out, const char* name);

}  // namespace course::m3_01
