"""What m3.01 is built from, in one place: the loader (load_extension.py) and both setup.py
files (yours and the reference's) read it, so that the tests, the benchmark and the wheel
compile the same files with the same flags. It imports neither torch nor setuptools.

Which month-2 kernels: your m3.01 is built from YOUR month-2 sources,
    month2/05_register_tiling/sgemm_2d_register_tile.cu   (m2.05, float32)
    month2/07_wmma/mma_gemm.cu                            (m2.07, float16)
so that the module runs the kernels you wrote. If you skipped those exercises (or they do not
pass their tests yet), build with the reference month-2 sources instead:
    COURSE_EARLIER_KERNELS=solution ./course grade m3_01
The reference m3.01 (solutions/month3/01_pybind_gemm) always uses the reference month 2.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent          # month3/01_pybind_gemm
ROOT = HERE.parents[1]                           # the repository
sys.path.insert(0, str(ROOT / "common" / "python"))  # course_harness (its paths module needs no torch)
from course_harness.paths import earlier_impl  # noqa: E402
IMPLS = ("exercise", "solution")

# torch.utils.cpp_extension compiles .cu files with -D__CUDA_NO_HALF_OPERATORS__ and its
# siblings, which hide __half's operators and conversions (PyTorch's own kernels use
# c10::Half instead). The month-2 kernels were written and tested without them (CMake does
# not set them), so the extension builds them the same way.
NVCC_FLAGS = ["-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
              "-U__CUDA_NO_HALF2_OPERATORS__", "-U__CUDA_NO_BFLOAT16_CONVERSIONS__"]


def month2_impl(impl):
    """Whose month-2 kernels the m3.01 version `impl` is built with: 'exercise' or 'solution'
    (course_harness.paths.earlier_impl: COURSE_EARLIER_KERNELS=solution for the reference)."""
    return earlier_impl(impl)


# The month-2 kernel files the module compiles with CUDA, (folder, file): m2.05's SGEMM and
# m2.07's tensor-core GEMM. tools/check_course.py reads this list: the lesson's "Builds on"
# line names these exercises.
EARLIER_SOURCES = (
    ("month2/05_register_tiling", "sgemm_2d_register_tile.cu"),
    ("month2/07_wmma", "mma_gemm.cu"),
)


def month2_sources(month2):
    """The two month-2 kernel files, yours (month2/...) or the reference (solutions/month2/...)."""
    base = ROOT / "solutions" if month2 == "solution" else ROOT
    return [base / folder / name for folder, name in EARLIER_SOURCES]


def include_dirs():
    """pybind_gemm.h, the month-2 interfaces (register_tiling.h, wmma_gemm.h and the given
    headers of m2.05 and m2.07, which live in the exercise folders only) and common/include."""
    return [HERE, ROOT / "month2" / "05_register_tiling", ROOT / "month2" / "07_wmma",
            ROOT / "common" / "include"]


def runtime_sources():
    """The course's host runtime the month-2 launchers call (CUDA_CHECK's error reporting)."""
    return [ROOT / "common" / "src" / "cuda_check.cpp"]


def binding_source(impl):
    """pybind_gemm.cpp of `impl`: yours, or the reference under solutions/."""
    folder = HERE if impl == "exercise" else ROOT / "solutions" / HERE.relative_to(ROOT)
    return folder / "pybind_gemm.cpp"
