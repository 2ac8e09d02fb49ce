"""Builds and loads the m3.01 extension, through the course's Python harness.

    import load_extension
    module = load_extension.load_module("exercise")   # or "solution"
    c = module.optimized_gemm(a, b, alpha=2.0)         # the pybind11 function
    ops = load_extension.load_ops("exercise")          # torch.ops.m3_01_exercise
    c = ops.gemm(a, b, 2.0)                            # the dispatcher operator

One shared library holds both: importing it (the harness's python_module=True) runs its
TORCH_LIBRARY blocks too. The first call compiles pybind_gemm.cpp and, where this PyTorch
and machine have CUDA, the month-2 kernels (a few minutes with nvcc; later calls reuse the
build). Which month-2 sources: build_config.py (COURSE_EARLIER_KERNELS=solution for the
reference ones). How and where it builds: common/python/course_harness/extension.py.
"""
import functools
import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "common" / "python"))  # course_harness, when run by hand
sys.path.insert(0, str(HERE))  # build_config

import torch  # noqa: E402

import build_config  # noqa: E402
from course_harness import extension  # noqa: E402

EXERCISE = "m3_01"
cuda_status = extension.cuda_status


def namespace(impl):
    """The operator's namespace in torch.ops, and the module's name: m3_01_exercise, m3_01_solution."""
    return f"m3_01_{impl}"


def _fake_kernels():
    # course_gemm/fake.py, loaded as a file: importing the package course_gemm would need
    # the wheel's compiled course_gemm._C.
    spec = importlib.util.spec_from_file_location("m3_01_fake", HERE / "course_gemm" / "fake.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {"gemm": module.gemm_fake}


@functools.lru_cache(maxsize=None)
def load_module(impl="exercise", verbose=None):
    """Builds (if needed) and imports one version; returns the Python module."""
    ns = namespace(impl)
    month2 = build_config.month2_impl(impl)
    # Another month 2 is another library: its own name, so its own build folder.
    name = ns if month2 == impl else f"{ns}_with_{month2}_month2"
    module = extension.load(
        name,
        sources=[build_config.binding_source(impl)],
        cuda_sources=build_config.month2_sources(month2),
        impl=impl,                       # COURSE_IMPL: course::impl:: in the .cpp and month 2
        python_module=True,              # PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
        include_dirs=build_config.include_dirs(),
        defines=[f"COURSE_OPS={ns}"],    # the TORCH_LIBRARY namespace (pybind_gemm.h)
        with_course_runtime=True,        # CUDA_CHECK's error reporting, for the month-2 launchers
        extra_cuda_cflags=build_config.NVCC_FLAGS,
        hopper_sm90a=True,               # m2.09's wide wgmma tile, on an H100 or H200
        verbose=verbose,
    )
    extension.register_fake_kernels(ns, _fake_kernels())
    return module


def load_ops(impl="exercise", verbose=None):
    """torch.ops.m3_01_<impl>, after building and importing the module."""
    load_module(impl, verbose)
    return getattr(torch.ops, namespace(impl))
