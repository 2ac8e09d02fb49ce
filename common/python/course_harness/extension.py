"""Builds and loads PyTorch extensions from the course's sources.

    from course_harness import extension
    ops = extension.load("m1_05_exercise", sources=[...], cuda_sources=[...], impl="exercise")

load() wraps torch.utils.cpp_extension.load: it compiles the sources into a shared library
the first time (a minute or so with nvcc; later calls recompile only the files that
changed), loads it into this process and returns it:
- python_module=False (the default): the library's TORCH_LIBRARY blocks register operators
  with PyTorch's dispatcher; load() returns torch.ops.<namespace> when `namespace` is given.
- python_module=True: the library is a pybind11 module (PYBIND11_MODULE(TORCH_EXTENSION_NAME, m));
  load() imports and returns it.

What it adds to cpp_extension.load:
- common/include is on the include path, and COURSE_IMPL is defined when `impl` is given
  (course/impl.h: the exercise's and the solution's functions live in different namespaces);
- cuda_sources are compiled only when this PyTorch and machine can run CUDA (cuda_status()),
  and COURSE_WITH_CUDA is defined to 1 or 0 accordingly, for C++ that has both flavours;
  with_course_runtime=True adds the course's small runtime (CUDA_CHECK's error reporting)
  that the month-1 and month-2 kernels call;
- static_libraries links archives that CMake built (position-independent, see
  cmake_library()), so an extension can reuse another exercise's compiled kernels;
- one build folder per name, per CPU/CUDA flavour and per Python and PyTorch version, under
  $TORCH_EXTENSIONS_DIR (ctest sets <build>/torch_extensions) or the temporary directory,
  never in the source tree; a lock left by a killed build is removed;
- a failed build raises a RuntimeError that names the files to fix, then the compiler's output.
Set COURSE_VERBOSE_BUILD=1 to see the compiler commands.
"""
import contextlib
import functools
import io
import logging
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import torch

from . import paths, requirements


def cpp_extension():
    """torch.utils.cpp_extension, imported without its note about CUDA_HOME on CPU builds."""
    logger = logging.getLogger("torch.utils.cpp_extension")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            from torch.utils import cpp_extension as module
    finally:
        logger.setLevel(level)
    return module


@functools.lru_cache(maxsize=None)
def cuda_status():
    """(True, description) when CUDA code can be built and run here, else (False, why not)."""
    if torch.version.cuda is None:
        return False, f"this PyTorch ({torch.__version__}) is built without CUDA"
    if not torch.cuda.is_available():
        return False, "PyTorch finds no CUDA GPU on this machine"
    if cpp_extension().CUDA_HOME is None:
        return False, "nvcc was not found: set CUDA_HOME to the CUDA toolkit (e.g. /usr/local/cuda)"
    return True, f"CUDA {torch.version.cuda}, {torch.cuda.get_device_name()}"


def build_root():
    """Where extensions are built: one folder per Python and PyTorch version.

    A library built against one PyTorch must not be loaded by another, and
    cpp_extension's own up-to-date check does not look at versions.
    """
    base = os.environ.get("TORCH_EXTENSIONS_DIR") or os.path.join(
        tempfile.gettempdir(), f"course_torch_extensions_{os.getuid() if hasattr(os, 'getuid') else 'user'}")
    python = f"py{sys.version_info.major}{sys.version_info.minor}"
    version = re.sub(r"[^A-Za-z0-9.]+", "_", torch.__version__)
    return Path(base) / f"{python}_torch{version}"


def course_runtime_sources():
    """The course's host-side runtime that kernels call (CUDA_CHECK throws through it)."""
    return [paths.ROOT / "common" / "src" / "cuda_check.cpp"]


def cmake_library(target):
    """The static library CMake built for `target` (e.g. 'm2_05_register_tiling_solution').

    Needs the CMake build (COURSE_BUILD_DIR, which ctest and ./course set); the course
    builds its libraries position-independent so that they can be linked into an extension.
    """
    build = paths.build_tree()
    if build is None:
        raise RuntimeError(f"cmake_library({target!r}) needs the CMake build folder: run through "
                           "./course grade / ctest, or set COURSE_BUILD_DIR=<build>")
    matches = sorted(build.rglob(f"lib{target}.a"))
    if not matches:
        raise RuntimeError(f"lib{target}.a is not in {build}: build it first "
                           f"(cmake --build {build} --target {target})")
    return matches[0]


def _remove_stale_lock(build_dir, older_than_s=15 * 60):
    # cpp_extension holds a lock file while it builds; a killed build leaves it behind, and
    # every later load would wait for it forever.
    lock = build_dir / "lock"
    try:
        if time.time() - lock.stat().st_mtime > older_than_s:
            print(f"course_harness: removing the stale build lock {lock}", file=sys.stderr)
            lock.unlink()
    except FileNotFoundError:
        pass


def _arch_for_this_gpu():
    # Build for this machine's GPU only: what PyTorch would pick too, less its warning, and
    # a fraction of the compile time of its default list. Under COURSE_COMPUTE_CAPABILITY
    # (an older GPU emulated on a newer one) build that GPU's code as PTX ("+PTX"), which the
    # driver compiles for the real GPU at load time, so the older GPU's code paths run.
    if not os.environ.get("TORCH_CUDA_ARCH_LIST"):
        major, minor = requirements.device_compute_capability()
        ptx = "+PTX" if requirements.compute_capability_emulated() else ""
        os.environ["TORCH_CUDA_ARCH_LIST"] = f"{major}.{minor}{ptx}"


# wgmma and the other sm_90a instructions exist only in machine code built for sm_90a, the
# Hopper-only target ("a": architecture-specific). TORCH_CUDA_ARCH_LIST=9.0 builds sm_90,
# whose copies of the wgmma kernels compile to nothing (course/hopper.h), so an extension
# that holds them asks for sm_90a too (hopper_sm90a=True). On a Hopper the runtime then takes
# the sm_90a code. Only on a real Hopper: an emulated older GPU (COURSE_COMPUTE_CAPABILITY)
# must run its own code paths, and no other GPU can run sm_90a code.
SM90A_FLAGS = ["-gencode=arch=compute_90a,code=sm_90a"]


def hopper_cuda_flags(physical_capability, emulated):
    """The nvcc flags that add sm_90a machine code: SM90A_FLAGS on a real compute
    capability 9.0 GPU, none on any other or under an emulated older one."""
    if emulated or tuple(physical_capability) != (9, 0):
        return []
    return list(SM90A_FLAGS)


# The course's C++ is C++17. PyTorch 2.x builds extensions as C++17 already; 1.13 passes
# -std=c++14, which a later -std=c++17 overrides (g++ takes the last one). (1.13 has no CUDA
# build here; nvcc would refuse two -std options.)
_CXX17 = ["-std=c++17"] if int(torch.__version__.split(".")[0]) < 2 else []


def load(name, *, sources, cuda_sources=(), impl=None, namespace=None, python_module=False,
         include_dirs=(), defines=(), with_course_runtime=False, static_libraries=(),
         extra_cflags=(), extra_cuda_cflags=(), hopper_sm90a=False, verbose=None):
    """Builds (when needed) and loads one extension; see the module's docstring.

    name:      unique per extension and implementation, e.g. "m1_05_exercise"; with
               python_module=True it is also the module's name (TORCH_EXTENSION_NAME).
    sources:   C++ files, always built; cuda_sources: .cu files, built only with CUDA.
    namespace: the TORCH_LIBRARY namespace to return as torch.ops.<namespace>.
    defines:   "NAME=value" or "NAME" strings, for C++ and CUDA alike.
    hopper_sm90a: also build sm_90a machine code on a Hopper (wgmma kernels; SM90A_FLAGS).
    """
    with_cuda, _ = cuda_status()
    files = [Path(s) for s in sources]
    if with_cuda:
        files += [Path(s) for s in cuda_sources]
        if with_course_runtime:
            files += course_runtime_sources()
        _arch_for_this_gpu()
    cuda_flags = list(extra_cuda_cflags)
    if with_cuda and hopper_sm90a:
        cuda_flags += hopper_cuda_flags(requirements.physical_compute_capability(),
                                        requirements.compute_capability_emulated())
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise FileNotFoundError(f"extension {name}: missing source files {missing}")
    flavour = "cuda" if with_cuda else "cpu"
    module_name = f"{name}_{flavour}"
    build_dir = build_root() / module_name
    build_dir.mkdir(parents=True, exist_ok=True)
    _remove_stale_lock(build_dir)
    if verbose is None:
        verbose = os.environ.get("COURSE_VERBOSE_BUILD", "") not in ("", "0")

    flags = [f"-D{d}" for d in defines]
    # Lets one C++ file hold both flavours: #if COURSE_WITH_CUDA around the CUDA-only code.
    flags.append(f"-DCOURSE_WITH_CUDA={1 if with_cuda else 0}")
    if impl is not None:
        if impl not in paths.IMPLS:
            raise ValueError(f"impl must be one of {paths.IMPLS}, got {impl!r}")
        flags.append(f"-DCOURSE_IMPL={impl}")
    includes = [str(paths.COMMON_INCLUDE)] + [str(d) for d in include_dirs]
    try:
        result = cpp_extension().load(
            name=module_name,
            sources=[str(f) for f in files],
            extra_cflags=["-O3", *_CXX17, *flags, *extra_cflags],
            extra_cuda_cflags=["-O3", "-lineinfo", *flags, *cuda_flags],
            extra_ldflags=[str(lib) for lib in static_libraries],
            extra_include_paths=includes,
            build_directory=str(build_dir),
            with_cuda=with_cuda,
            is_python_module=python_module,
            verbose=verbose,
        )
    except Exception as error:
        def shown(f):
            try:
                return str(f.resolve().relative_to(paths.ROOT))
            except ValueError:
                return str(f)
        names = ", ".join(shown(f) for f in files)
        raise RuntimeError(f"the extension {module_name} did not build: fix the first compiler error "
                           f"in {names} (the compiler's messages are below).\n{error}") from error
    if python_module:
        return result
    return getattr(torch.ops, namespace) if namespace else None


def has_op(namespace, name):
    """Whether torch.ops.<namespace>.<name> exists."""
    try:
        getattr(getattr(torch.ops, namespace), name)
        return True
    except (AttributeError, RuntimeError):  # 2.x raises AttributeError, 1.x RuntimeError
        return False


def register_fake_kernels(namespace, fakes):
    """Registers Python fake (meta) kernels {op name: function} where PyTorch has them (2.4+).

    A fake kernel computes only the output's metadata (shape, dtype, device), which is what
    torch.compile's tracing and torch.library.opcheck need. Operators a skeleton has not
    declared yet are left out. Returns the names registered.
    """
    register_fake = getattr(torch.library, "register_fake", None)
    if register_fake is None:
        return []
    done = []
    for name, fake in fakes.items():
        if has_op(namespace, name):
            register_fake(f"{namespace}::{name}")(fake)
            done.append(name)
    return done
