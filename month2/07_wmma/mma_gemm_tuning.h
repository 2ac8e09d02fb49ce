// The steps from part 2 to part 3, each a variant of the reference mma_gemm with one piece of
// the tuned kernel taken back or changed (tile shape, stages, shared-memory layout). The
// benchmark times them side by side; README.md, part 3, reads the table. Defined in
// solutions/month2/07_wmma/mma_gemm.cu only: your kernel is timed as it is.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <vector>

#include "course/gemm.h"
#include "course/impl.h"

// Declared for both implementations, so that the solution's file also compiles when it is
// copied over yours (./course reset puts your version back); the benchmark calls the
// solution's.
COURSE_DECLARE_IMPLS(namespace tuning {
  struct MmaTuningStep {
    const char* name;  // e.g. "warp64x64_block128x256_k64x3_swizzled"
    GemmFnOf<__half> gemm;
  };
  const std::vector<MmaTuningStep>& mma_tuning_steps();
})
