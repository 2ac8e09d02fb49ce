"""Builds exercise m3.01 as a wheel: the package course_gemm, with the compiled module
course_gemm._C (pybind_gemm.cpp and, with CUDA, the month-2 kernels).

    python3 -m pip wheel --no-build-isolation --no-deps -w dist month3/01_pybind_gemm
    python3 -m pip install --target /tmp/site dist/course_gemm-*.whl

This is the ahead-of-time build of the same sources the tests build just in time
(load_extension.py): torch.utils.cpp_extension's CUDAExtension (or CppExtension when this
PyTorch has no CUDA or nvcc is missing) describes the compiled module, and BuildExtension
compiles it with the flags PyTorch needs (its include paths, -DTORCH_EXTENSION_NAME=_C,
the pybind11 ABI flags, the C++ ABI, -gencode for the GPU). build_config.py says which
files. The build folder is outside the source tree: $COURSE_WHEEL_BUILD_DIR, or a folder
in the temporary directory.
"""
import os
import sys
import tempfile
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
IMPL = "solution" if HERE.parents[1].name == "solutions" else "exercise"
EXERCISE_DIR = HERE.parents[2] / HERE.parent.name / HERE.name if IMPL == "solution" else HERE
sys.path.insert(0, str(EXERCISE_DIR))  # build_config.py lives beside your setup.py
import build_config  # noqa: E402

import torch  # noqa: E402
from torch.utils import cpp_extension  # noqa: E402

NAMESPACE = "course_gemm"  # the TORCH_LIBRARY namespace: torch.ops.course_gemm.gemm
WITH_CUDA = torch.version.cuda is not None and cpp_extension.CUDA_HOME is not None
BUILD = Path(os.environ.get("COURSE_WHEEL_BUILD_DIR") or
             Path(tempfile.gettempdir()) / f"course_wheel_build_{os.getuid()}" / IMPL)
BUILD.mkdir(parents=True, exist_ok=True)

if WITH_CUDA and not os.environ.get("TORCH_CUDA_ARCH_LIST") and torch.cuda.is_available():
    # This GPU only (what the course's other builds do): PyTorch's default is a list of them.
    os.environ["TORCH_CUDA_ARCH_LIST"] = "{}.{}".format(*torch.cuda.get_device_capability())


def relative(path):
    # setuptools wants the package folder relative to this file.
    return os.path.relpath(path, HERE)


def extensions():
    # TODO(m3.01e): describe the compiled module "course_gemm._C" for setuptools, and return
    # it in a list. BuildExtension (below, in cmdclass) defines TORCH_EXTENSION_NAME to the
    # last part of the name, _C, the name PYBIND11_MODULE gives the module.
    #   - the macros: defines = [f"-DCOURSE_IMPL={IMPL}", f"-DCOURSE_OPS={NAMESPACE}",
    #     f"-DCOURSE_WITH_CUDA={1 if WITH_CUDA else 0}"]; the C++ flags cxx = ["-O3", *defines],
    #     plus "-std=c++17" when PyTorch is older than 2 (int(torch.__version__.split(".")[0]) < 2);
    #   - the sources: [build_config.binding_source(IMPL)], and with CUDA also
    #     build_config.month2_sources(build_config.month2_impl(IMPL)) and
    #     build_config.runtime_sources(); include_dirs=build_config.include_dirs()
    #     (setuptools wants str, not Path, for both);
    #   - without CUDA: cpp_extension.CppExtension("course_gemm._C", sources=..., include_dirs=...,
    #     extra_compile_args={"cxx": cxx});
    #   - with CUDA: cpp_extension.CUDAExtension(...) with the same, and
    #     extra_compile_args={"cxx": cxx, "nvcc": ["-O3", "-lineinfo", *defines, *build_config.NVCC_FLAGS]}.
    # Until then the wheel holds the Python package only, and `import course_gemm` fails.
    return []

setup(
    name="course-gemm",
    version="0.1.0",
    description="Exercise m3.01: the month-2 GEMMs for PyTorch tensors",
    packages=["course_gemm"],
    package_dir={"course_gemm": relative(EXERCISE_DIR / "course_gemm")},
    ext_modules=extensions(),
    cmdclass={"build_ext": cpp_extension.BuildExtension},
    options={"build": {"build_base": str(BUILD / "build")},
             "egg_info": {"egg_base": str(BUILD)}},
    python_requires=">=3.8",
    zip_safe=False,
)
