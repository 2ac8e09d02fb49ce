"""The course's Python harness: what every PyTorch exercise (m1.05 and month 3) shares.

    from course_harness import extension, testing, benchmarking

- extension:    build and load a PyTorch extension from an exercise's sources, plus sources
                of other exercises, with common/include on the include path; one build
                folder per implementation (exercise / solution) and per Python and PyTorch
                version; pybind11 modules and TORCH_LIBRARY operators alike.
- testing:      the implementation under test (COURSE_IMPL), seeded random tensors, a
                poisoned allocator, assertions that print the first mismatches, CUDA skips.
- benchmarking: CUDA-event timing (warm-up, L2 flush, the median), device facts, and
                Google Benchmark JSON that tools/run_benchmarks.py tables like the C++ rows.
- conv_shapes:  the convolution family's test shapes and ResNet layers, the twins of
                course/conv_reference.h's lists (m3.03 to m3.07 share them).

The package lives in common/python; ctest puts that folder on PYTHONPATH, and the test and
benchmark files put it there themselves when run by hand (see `add_to_path` in their heads).
"""
from . import paths  # noqa: F401  (the others import torch; paths does not)

__all__ = ["paths", "extension", "testing", "benchmarking", "conv_shapes"]
