"""Builds and loads the m1.05 extension, through the course's Python harness.

    import load_extension
    ops = load_extension.load_ops("exercise")   # or "solution"
    c = ops.vector_add(a, b)                    # the same as torch.ops.m1_05_exercise.vector_add

The first call compiles the sources into a shared library (a minute or so; later calls
reuse it and recompile only the files that changed), loads it into this Python process,
and the library's TORCH_LIBRARY blocks register the operators with PyTorch's dispatcher.
torch_extension.cu is compiled only when this PyTorch and machine have CUDA; otherwise the
extension has its CPU kernels only. How and where it builds: common/python/course_harness/extension.py.
"""
import functools
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "common" / "python"))  # course_harness, when run by hand

import torch  # noqa: E402

from course_harness import extension, paths  # noqa: E402

EXERCISE = "m1_05"
cuda_status = extension.cuda_status


def namespace(impl):
    """The operators' namespace in torch.ops for one version: m1_05_exercise, m1_05_solution."""
    return f"m1_05_{impl}"


# The shape of each operator's result, for torch.compile and torch.library.opcheck
# (PyTorch 2.4 and later): a "fake" kernel computes the output's metadata, not its data.
FAKE_KERNELS = {
    "vector_add": lambda a, b: torch.empty_like(a),
    "fused_gelu": lambda x, w, b: torch.empty_like(x),
}


@functools.lru_cache(maxsize=None)
def load_ops(impl="exercise", verbose=None):
    """Builds (if needed) and loads one version; returns its torch.ops namespace."""
    folder = paths.source_dir(EXERCISE, impl)
    ns = namespace(impl)
    ops = extension.load(
        ns,
        sources=[folder / "torch_extension.cpp"],
        cuda_sources=[folder / "torch_extension.cu"],
        include_dirs=[HERE],  # torch_extension.h
        # The namespace is set from outside, so that both versions can be loaded into one
        # process (the benchmark times them side by side); see torch_extension.h.
        defines=[f"COURSE_OPS={ns}"],
        namespace=ns,
        with_course_runtime=True,  # course/launch.h's checks report through it
        verbose=verbose,
    )
    extension.register_fake_kernels(ns, FAKE_KERNELS)
    return ops
