"""What m3.01 is built from, in one place: the loader (load_extension.py) and both setup.py
files (yours and the reference's) read it, so that the tests, the benchmark and the wheel
compile the same files with the same flags. It imports neither torch nor setuptools.

Which month-2 kernels: your m3.01 is built from YOUR m2.09 sources,
    month2/09_gemm_shapes/gemm_shapes.cu     (the split-K kernels: m2.05's float32 main loop,
                                              m2.07's float16 one, on ranges of K)
    month2/09_gemm_shapes/shape_chooser.cu   (the plan for each shape)
so that the module runs the kernels and the choice you wrote. If you skipped that exercise (or
it does not pass its tests yet), build with the reference month-2 sources instead:
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


# The month-2 kernel files the module compiles with CUDA, (folder, file): m2.09's GEMMs for
# every shape (float32 on m2.05's main loop, float16 on m2.07's) and its shape chooser.
# tools/check_course.py reads this list: the lesson's "Builds on" line names these exercises.
EARLIER_SOURCES = (
    ("month2/09_gemm_shapes", "gemm_shapes.cu"),
    ("month2/09_gemm_shapes", "shape_chooser.cu"),
)


def month2_sources(month2):
    """The month-2 kernel files, yours (month2/...) or the reference (solutions/month2/...)."""
    base = ROOT / "solutions" if month2 == "solution" else ROOT
    return [base / folder / name for folder, name in EARLIER_SOURCES]


def include_dirs():
    """pybind_gemm.h, m2.09's interface and given headers (gemm_shapes.h, gemm_shapes_given.cuh,
    the split-K kernels; they live in the exercise folder only), month2 itself (m2.09 includes
    m2.07's main loop as "07_wmma/mma_gemm_pipeline.h") and common/include."""
    return [HERE, ROOT / "month2" / "09_gemm_shapes", ROOT / "month2", ROOT / "common" / "include"]


def runtime_sources():
    """The course's host runtime the month-2 launchers call (CUDA_CHECK's error reporting)."""
    return [ROOT / "common" / "src" / "cuda_check.cpp"]


def binding_source(impl):
    """pybind_gemm.cpp of `impl`: yours, or the reference under solutions/."""
    folder = HERE if impl == "exercise" else ROOT / "solutions" / HERE.relative_to(ROOT)
    return folder / "pybind_gemm.cpp"
