"""Builds and loads the m3.02 module, through the course's Python harness.

    import load_extension
    lib = load_extension.load_module("exercise")   # or "solution"
    buf = lib.Buffer((4, 8), device="cuda")         # memory the library owns
    t = torch.from_dlpack(buf)                      # the same memory, as a torch tensor
    lib.add_in_place(t, t)                          # the m1.01 kernel on torch's memory

The module is a pybind11 module (PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)), built from
dlpack_buffer.cpp and the given dlpack_buffer_given.h it includes, which include no PyTorch
header (only PyTorch's copy of dlpack.h, plain C). With CUDA it also compiles slow_fill.cu (given) and the m1.01 vector_add.cu: YOURS
(month1/01_vector_add/vector_add.cu) when the exercise is built, the reference's when the
solution is. If your m1.01 is not finished, build against the reference's kernel instead:

    COURSE_EARLIER_KERNELS=solution ./course grade m3_02

Without CUDA (PyTorch 1.13 in CI) only dlpack_buffer.cpp is built, and the module has its
CPU path: Buffers in host memory, add_in_place as a CPU loop.
"""
import functools
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "common" / "python"))  # course_harness, when run by hand

from course_harness import extension, paths  # noqa: E402

EXERCISE = "m3_02"
cuda_status = extension.cuda_status


def dlpack_stream(stream):
    """DLPack's number for a torch.cuda.Stream: its handle, or 1 for the legacy default stream,
    which torch's handle calls 0 (a number DLPack does not allow)."""
    return stream.cuda_stream or 1


# The earlier exercise's kernel the module compiles with CUDA, (exercise, file): m1.01's
# vector_add, yours or the reference (paths.earlier_impl). tools/check_course.py reads this
# list: the lesson's "Builds on" line names these exercises.
EARLIER_SOURCES = (("m1_01", "vector_add.cu"),)


def module_name(impl):
    earlier = paths.earlier_impl(impl)
    return f"m3_02_{impl}" + ("" if earlier == impl else f"_m1_01_{earlier}")


@functools.lru_cache(maxsize=None)
def load_module(impl="exercise", verbose=None):
    """Builds (if needed) and imports one version of the module."""
    folder = paths.source_dir(EXERCISE, impl)
    earlier = [paths.source_dir(exercise, paths.earlier_impl(impl)) / name for exercise, name in EARLIER_SOURCES]
    return extension.load(
        module_name(impl),
        sources=[folder / "dlpack_buffer.cpp"],
        cuda_sources=[HERE / "slow_fill.cu", *earlier],
        impl=impl,  # COURSE_IMPL: course::impl::vector_add is the m1.01 kernel built here
        python_module=True,
        include_dirs=[HERE, paths.ROOT / "month1" / "01_vector_add"],  # slow_fill.h, vector_add.h
        with_course_runtime=True,  # CUDA_CHECK's error reporting (common/src/cuda_check.cpp)
        verbose=verbose,
    )
