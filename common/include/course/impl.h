// Two implementations of every exercise live side by side.
//
// Each exercise is compiled twice: from your skeleton (month*/...) and from the reference
// solution (solutions/month*/...). Both define the same functions, so the build puts them
// in different namespaces: it compiles each with COURSE_IMPL set to `exercise` or
// `solution`, and the sources write
//
//   namespace course::COURSE_IMPL { void vector_add(...) { ... } }
//
// The tests are compiled once per implementation and call `impl::vector_add`; the
// benchmark is compiled once and calls course::exercise::vector_add and
// course::solution::vector_add, so one run times yours against the reference.
#pragma once

// Declares the interface of an exercise in both namespaces:
//   COURSE_DECLARE_IMPLS(void vector_add(const float* a, ..., cudaStream_t stream);)
#define COURSE_DECLARE_IMPLS(...)  \
  namespace course {               \
  namespace exercise {             \
  __VA_ARGS__                      \
  }                                \
  namespace solution {             \
  __VA_ARGS__                      \
  }                                \
  }

namespace course {
namespace exercise {}
namespace solution {}
}  // namespace course

#if defined(COURSE_IMPL)
namespace course {
// `impl` is the implementation this translation unit is built against.
namespace impl = ::course::COURSE_IMPL;
}  // namespace course
#endif
