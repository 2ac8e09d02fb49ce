"""Builds and loads the m3.06 extension and its Python module, through the course's harness.

    import load_extension
    conv = load_extension.load_module("exercise")     # or "solution": autograd_conv.py, bound
    layer = conv.Conv2d(3, 8, 3, padding=1)           # a drop-in for torch.nn.Conv2d
    ops = load_extension.load_ops("exercise")         # torch.ops.m3_06_exercise

The first call compiles autograd_conv.cpp (the schemas and CPU kernels) and, where this
PyTorch and machine have CUDA, autograd_conv.cu together with earlier exercises' kernels into
one library (EARLIER_SOURCES): the forward's (m3.05's implicit GEMM for float16 and bfloat16,
m3.04's im2col + GEMM with the m2.05 SGEMM it can call, m3.03's direct convolution for
float32) and m2.09's split-K GEMM (the float16 grad-weight). It loads the library (its
TORCH_LIBRARY blocks register the operators), then imports autograd_conv.py of the same
version (which imports the given autograd_conv_given.py of this folder) and binds it to them.

Whose earlier kernels: your m3.06 is built with YOUR m3.05, m3.04, m3.03, m2.05 and m2.09, so
the forward and the float16 grad-weight run the kernels you wrote. If one of them does not
pass its tests yet, build with the references instead:
    COURSE_EARLIER_KERNELS=solution ./course grade m3_06
The reference m3.06 always uses the references. How and where it builds:
common/python/course_harness/extension.py.
"""
import functools
import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "common" / "python"))  # course_harness, when run by hand
if str(HERE) not in sys.path:  # autograd_conv_given (both versions import it), from elsewhere too
    sys.path.append(str(HERE))


from course_harness import extension, paths  # noqa: E402

EXERCISE = "m3_06"
cuda_status = extension.cuda_status


def namespace(impl):
    """The operators' namespace in torch.ops: m3_06_exercise or m3_06_solution."""
    return f"m3_06_{impl}"


# The kernels from earlier exercises, (exercise, file), compiled into the extension with
# CUDA: the forward's (m3.05's implicit GEMM for float16 and bfloat16, m3.04's im2col + GEMM
# and the m2.05 SGEMM it can call, m3.03's direct convolution) and m2.09's split-K GEMM, which
# runs the float16 grad-weight on the tensor cores. tools/check_course.py reads this list:
# the lesson's "Builds on" line names these exercises.
EARLIER_SOURCES = (
    ("m3_05", "conv2d_implicit_gemm.cu"),
    ("m3_04", "im2col.cu"),
    ("m3_04", "conv2d_im2col_gemm.cu"),
    ("m2_05", "sgemm_2d_register_tile.cu"),
    ("m3_03", "conv2d_direct_naive.cu"),
    ("m3_03", "conv2d_direct_tiled.cu"),
    ("m2_09", "gemm_shapes.cu"),
    ("m2_09", "shape_chooser.cu"),
)


def earlier_sources(who):
    """EARLIER_SOURCES, `who`'s (yours or the reference), and m3.04's CUBLAS_CHECK."""
    return [paths.source_dir(exercise, who) / name for exercise, name in EARLIER_SOURCES] + [
        paths.ROOT / "common" / "src" / "cublas_check.cpp"]


def cuda_toolkit_include():
    """course/conv.h includes <cuda_runtime.h>, also in the CPU-only build (g++ reads the
    toolkit's headers; nothing links against CUDA). The toolkit is the course's prerequisite."""
    home = extension.cpp_extension().CUDA_HOME or "/usr/local/cuda"
    include = Path(home) / "include"
    if not (include / "cuda_runtime.h").is_file():
        raise RuntimeError(f"m3.06 needs the CUDA toolkit's headers (cuda_runtime.h, for course/conv.h); "
                           f"none in {include}: set CUDA_HOME to the toolkit")
    return include


@functools.lru_cache(maxsize=None)
def load_ops(impl="exercise", verbose=None):
    """Builds (if needed) and loads one version; returns its torch.ops namespace."""
    folder = paths.source_dir(EXERCISE, impl)
    ns = namespace(impl)
    earlier = paths.earlier_impl(impl)  # whose m3.03 .. m3.05, m2.05, m2.09 (COURSE_EARLIER_KERNELS)
    # Other earlier kernels make another library: its own name, so its own build folder.
    name = ns if earlier == impl else f"{ns}_with_{earlier}_kernels"
    return extension.load(
        name,
        sources=[folder / "autograd_conv.cpp"],
        cuda_sources=[folder / "autograd_conv.cu", *earlier_sources(earlier)],
        # COURSE_IMPL: every launcher of the library lives in course::<impl>, the earlier
        # exercises' too: m3.04 calls the m2.05 SGEMM there (COURSE_M205_IMPL), and the
        # float16 grad-weight m2.09's GEMM (impl::hgemm_planned).
        impl=impl,
        namespace=ns,
        # conv_backward.h from the version's own folder first, then autograd_conv.h (given,
        # in month3/06 only), the earlier exercises' headers (direct_conv.h, im2col_gemm.h,
        # implicit_gemm.h, register_tiling.h, gemm_shapes.h), month2 itself (m2.09 includes
        # m2.07's header as "07_wmma/mma_gemm_pipeline.h") and the toolkit's cuda_runtime.h.
        include_dirs=[folder, HERE, ROOT / "month3" / "03_direct_conv", ROOT / "month3" / "04_im2col_gemm",
                      ROOT / "month3" / "05_implicit_gemm", ROOT / "month2" / "05_register_tiling",
                      ROOT / "month2" / "09_gemm_shapes", ROOT / "month2", cuda_toolkit_include()],
        defines=[f"COURSE_OPS={ns}", f"COURSE_M205_IMPL={impl}"],
        with_course_runtime=True,  # the earlier kernels' CUDA_CHECK reports through it
        # On an H100 or H200: m3.05's wgmma main loop and m2.09's wide wgmma tile (sm_90a code).
        hopper_sm90a=True,
        verbose=verbose,
    )


@functools.lru_cache(maxsize=None)
def load_module(impl="exercise", verbose=None):
    """autograd_conv.py of `impl` (yours or the reference), bound to its operators."""
    ops = load_ops(impl, verbose)
    path = paths.source_dir(EXERCISE, impl) / "autograd_conv.py"
    spec = importlib.util.spec_from_file_location(f"m3_06_{impl}_autograd_conv", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # so that pickling and torch.compile can find it
    spec.loader.exec_module(module)
    module.bind(ops, namespace(impl))
    return module
