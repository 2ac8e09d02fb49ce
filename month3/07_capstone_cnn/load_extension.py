"""Loads the two pieces the capstone puts together, through the course's harness.

    import load_extension
    Conv2d = load_extension.load_conv2d("exercise")      # m3.06's Conv2d: an nn.Conv2d drop-in
    capstone = load_extension.load_capstone("exercise")  # capstone_cnn.py: your TODOs

Whose m3.06: the capstone of the exercise trains with YOUR m3.06 Conv2d (month3/06_autograd_conv,
whose extension compiles YOUR m3.05, m3.04, m3.03 and m2.05 forward kernels and m2.09 GEMM, see
that folder's load_extension.py); the reference capstone trains with the reference m3.06. If your m3.06 does
not pass its tests yet, train your capstone with the reference Conv2d instead:

    COURSE_EARLIER_KERNELS=solution ./course grade m3_07

(the one setting of every exercise built on earlier ones: course_harness.paths.earlier_impl).
The first call builds m3.06's extension (seconds on the CPU, a minute or two with nvcc);
later calls reuse the build.
"""
import functools
import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "common" / "python"))  # course_harness, when run by hand
sys.path.insert(0, str(HERE))  # cnn_training, when imported from elsewhere

from course_harness import paths  # noqa: E402

EXERCISE = "m3_07"
# The earlier exercise whose extension and Conv2d the capstone trains with (yours or the
# reference, paths.earlier_impl); that extension compiles the earlier kernels its own
# load_extension.py lists. tools/check_course.py reads this: the lesson's "Builds on" line
# names it and what it compiles.
EARLIER_EXTENSION = "month3/06_autograd_conv"


def _import(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # so that pickling can find it
    spec.loader.exec_module(module)
    return module


@functools.lru_cache(maxsize=None)
def m3_06_loader():
    """month3/06_autograd_conv/load_extension.py, under a name of its own (this file has its name)."""
    return _import("m3_06_load_extension", paths.ROOT / EARLIER_EXTENSION / "load_extension.py")


@functools.lru_cache(maxsize=None)
def load_conv_module(impl="exercise", verbose=None):
    """m3.06's autograd_conv module (Conv2d, conv2d, ...) that the capstone `impl` trains with."""
    return m3_06_loader().load_module(paths.earlier_impl(impl), verbose)


def load_conv2d(impl="exercise", verbose=None):
    """m3.06's Conv2d class for the capstone `impl`."""
    return load_conv_module(impl, verbose).Conv2d


@functools.lru_cache(maxsize=None)
def load_capstone(impl="exercise"):
    """capstone_cnn.py of `impl`: yours (month3/07_capstone_cnn) or the reference (solutions/)."""
    return _import(f"m3_07_{impl}_capstone_cnn", paths.source_dir(EXERCISE, impl) / "capstone_cnn.py")


def describe(impl):
    """Which files a run of `impl` uses, in words (train.py prints it)."""
    conv = paths.earlier_impl(impl)  # whose m3.06
    forward = paths.earlier_impl(conv)  # whose m3.04, m3.03 (and m2.05) that m3.06 runs
    return (f"capstone_cnn.py: {impl}; Conv2d: m3.06 {conv} "
            f"(forward kernels: m3.04 and m3.03 {forward})")
