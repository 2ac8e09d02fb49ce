// TORCH_LIBRARY and TORCH_LIBRARY_IMPL with the operators' namespace taken from COURSE_OPS,
// for the course's PyTorch extensions (m1.05, m3.01, m3.06, ...).
//
// In your own project you would write TORCH_LIBRARY(my_ops, m) { ... }. The course's loaders
// set COURSE_OPS to <exercise>_exercise or <exercise>_solution (e.g. m1_05_solution), so that
// both versions can be loaded into one Python process (the benchmarks time them side by
// side). COURSE_TORCH_LIBRARY(m) and COURSE_TORCH_LIBRARY_IMPL(CPU, m) are TORCH_LIBRARY and
// TORCH_LIBRARY_IMPL with that namespace filled in; the extra macro level makes the
// preprocessor replace COURSE_OPS by its value before TORCH_LIBRARY pastes it into names.
// Define COURSE_OPS (a default for the exercise) before including this header.
#pragma once

#include <torch/library.h>

#ifndef COURSE_OPS
#error "define COURSE_OPS, the operators' namespace, before including course/torch_library.h"
#endif

#define COURSE_TORCH_LIBRARY_WITH_NAMESPACE(ns, m) TORCH_LIBRARY(ns, m)
#define COURSE_TORCH_LIBRARY(m) COURSE_TORCH_LIBRARY_WITH_NAMESPACE(COURSE_OPS, m)
#define COURSE_TORCH_LIBRARY_IMPL_WITH_NAMESPACE(ns, key, m) TORCH_LIBRARY_IMPL(ns, key, m)
#define COURSE_TORCH_LIBRARY_IMPL(key, m) \
  COURSE_TORCH_LIBRARY_IMPL_WITH_NAMESPACE(COURSE_OPS, key, m)
