"""Builds and loads the m1.05 extension with torch.utils.cpp_extension.load.

    import load_extension
    ops = load_extension.load_ops("exercise")   # or "solution"
    c = ops.vector_add(a, b)                    # the same as torch.ops.m1_05_exercise.vector_add

load() compiles the sources into a shared library the first time (a minute or so; later
calls reuse it and recompile only what changed), loads it into this Python process, and
the library's TORCH_LIBRARY blocks register the operators with PyTorch's dispatcher.

- The CUDA half (torch_extension.cu) is compiled only when this PyTorch can use a GPU and
  nvcc is found (CUDA_HOME); otherwise the extension has its CPU kernels only.
- The build goes to $TORCH_EXTENSIONS_DIR (ctest sets <build>/torch_extensions), else to
  a folder in the system's temporary directory; never into the source tree. Set
  COURSE_VERBOSE_BUILD=1 to see the compiler commands.
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
# The solution mirrors the exercise folder under solutions/.
SOLUTION_DIR = ROOT / "solutions" / HERE.relative_to(ROOT)
IMPLS = ("exercise", "solution")


def namespace(impl):
    """The operators' namespace in torch.ops for one version: m1_05_exercise, m1_05_solution."""
    return f"m1_05_{impl}"


def source_dir(impl):
    if impl not in IMPLS:
        raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}")
    return HERE if impl == "exercise" else SOLUTION_DIR


def _cpp_extension():
    # Importing it on a PyTorch without CUDA prints or logs a note about CUDA_HOME;
    # cuda_status() says the same thing more plainly.
    logger = logging.getLogger("torch.utils.cpp_extension")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            from torch.utils import cpp_extension
    finally:
        logger.setLevel(level)
    return cpp_extension


def cuda_status():
    """(True, description) when the CUDA half can be built and run here, else (False, why not)."""
    if torch.version.cuda is None:
        return False, f"this PyTorch ({torch.__version__}) is built without CUDA"
    if not torch.cuda.is_available():
        return False, "PyTorch finds no CUDA GPU on this machine"
    if _cpp_extension().CUDA_HOME is None:
        return False, "nvcc was not found: set CUDA_HOME to the CUDA toolkit (e.g. /usr/local/cuda)"
    return True, f"CUDA {torch.version.cuda}, {torch.cuda.get_device_name()}"


def _build_root():
    base = os.environ.get("TORCH_EXTENSIONS_DIR") or os.path.join(
        tempfile.gettempdir(), f"course_torch_extensions_{os.getuid() if hasattr(os, 'getuid') else 'user'}")
    # One folder per Python and PyTorch version: a library built against one PyTorch must
    # not be loaded by another, and the build's own check does not look at versions.
    python = f"py{sys.version_info.major}{sys.version_info.minor}"
    version = re.sub(r"[^A-Za-z0-9.]+", "_", torch.__version__)
    return Path(base) / f"{python}_torch{version}"


def _remove_stale_lock(build_dir, older_than_s=15 * 60):
    # cpp_extension holds a lock file while it builds, so that two processes do not build at
    # once; a build that was killed leaves it behind, and every later load would wait forever.
    lock = build_dir / "lock"
    try:
        if time.time() - lock.stat().st_mtime > older_than_s:
            print(f"load_extension: removing the stale build lock {lock}", file=sys.stderr)
            lock.unlink()
    except FileNotFoundError:
        pass


def _has_op(ns, name):
    try:
        getattr(getattr(torch.ops, ns), name)
        return True
    except (AttributeError, RuntimeError):  # 2.x raises AttributeError, 1.x RuntimeError
        return False


def _register_fake_kernels(ns):
    """Tells torch.compile and torch.library.opcheck the shape of each operator's result.

    A "fake" kernel computes only the output's metadata (shape, dtype, device), without
    data, which is what tracing needs. PyTorch's recommended place for it is Python, with
    torch.library.register_fake (PyTorch 2.4 and later; older versions have no use for it).
    """
    register_fake = getattr(torch.library, "register_fake", None)
    if register_fake is None:
        return
    fakes = {
        "vector_add": lambda a, b: torch.empty_like(a),
        "fused_gelu": lambda x, w, b: torch.empty_like(x),
    }
    for name, fake in fakes.items():
        if _has_op(ns, name):  # a skeleton may not declare them yet
            register_fake(f"{ns}::{name}")(fake)


@functools.lru_cache(maxsize=None)
def load_ops(impl="exercise", verbose=None):
    """Builds (if needed) and loads one version; returns its torch.ops namespace."""
    ns = namespace(impl)
    directory = source_dir(impl)
    with_cuda, _ = cuda_status()
    sources = [directory / "torch_extension.cpp"]
    if with_cuda:
        sources.append(directory / "torch_extension.cu")
    if with_cuda and not os.environ.get("TORCH_CUDA_ARCH_LIST"):
        # Build for this machine's GPU; that is also what PyTorch would pick, less its warning.
        major, minor = torch.cuda.get_device_capability()
        os.environ["TORCH_CUDA_ARCH_LIST"] = f"{major}.{minor}"
    name = f"{ns}_{'cuda' if with_cuda else 'cpu'}"
    build_dir = _build_root() / name
    build_dir.mkdir(parents=True, exist_ok=True)
    _remove_stale_lock(build_dir)
    if verbose is None:
        verbose = os.environ.get("COURSE_VERBOSE_BUILD", "") not in ("", "0")

    define = f"-DCOURSE_OPS={ns}"
    try:
        _cpp_extension().load(
            name=name,
            sources=[str(s) for s in sources],
            extra_cflags=["-O3", define],
            extra_cuda_cflags=["-O3", "-lineinfo", define],
            extra_include_paths=[str(HERE)],  # torch_extension.h
            build_directory=str(build_dir),
            with_cuda=with_cuda,
            # The library registers operators (TORCH_LIBRARY) and is no Python module:
            # load() hands it to torch.ops.load_library instead of importing it.
            is_python_module=False,
            verbose=verbose,
        )
    except Exception as error:
        files = " and ".join(str(s.relative_to(ROOT)) for s in sources)
        raise RuntimeError(
            f"the {impl} extension did not build: fix the first compiler error in {files} "
            f"(the compiler's messages are below).\n{error}") from error
    _register_fake_kernels(ns)
    return getattr(torch.ops, ns)
