"""Builds and loads the m3.06 extension and its Python module, through the course's harness.

    import load_extension
    conv = load_extension.load_module("exercise")     # or "solution": autograd_conv.py, bound
    layer = conv.Conv2d(3, 8, 3, padding=1)           # a drop-in for torch.nn.Conv2d
    ops = load_extension.load_ops("exercise")         # torch.ops.m3_06_exercise

The first call compiles autograd_conv.cpp (the schemas and CPU kernels) and, where this
PyTorch and machine have CUDA, autograd_conv.cu together with m3.03's direct convolution
(the forward's float32 kernel) into one library, loads it (its TORCH_LIBRARY blocks register
the operators), then imports autograd_conv.py of the same version and binds it to them.

Which m3.03 sources: your m3.06 is built with YOUR m3.03 (month3/03_direct_conv), so the
forward runs the kernel you wrote. If m3.03 does not pass its tests yet, build with the
reference instead:  COURSE_EARLIER_KERNELS=solution ./course grade m3_06
The reference m3.06 always uses the reference m3.03. How and where it builds:
common/python/course_harness/extension.py.
"""
import functools
import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "common" / "python"))  # course_harness, when run by hand


from course_harness import extension, paths  # noqa: E402

EXERCISE = "m3_06"
cuda_status = extension.cuda_status


def namespace(impl):
    """The operators' namespace in torch.ops: m3_06_exercise or m3_06_solution."""
    return f"m3_06_{impl}"


def m3_03_sources(who):
    folder = paths.source_dir("m3_03", who)
    return [folder / "conv2d_direct_naive.cu", folder / "conv2d_direct_tiled.cu"]


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
    conv = paths.earlier_impl(impl)  # whose m3.03 (COURSE_EARLIER_KERNELS)
    # Another m3.03 is another library: its own name, so its own build folder.
    name = ns if conv == impl else f"{ns}_with_{conv}_m3_03"
    return extension.load(
        name,
        sources=[folder / "autograd_conv.cpp"],
        cuda_sources=[folder / "autograd_conv.cu", *m3_03_sources(conv)],
        impl=impl,  # COURSE_IMPL: m3.03's launchers live in course::<impl>
        namespace=ns,
        # conv_backward.h from the version's own folder first, then autograd_conv.h (given,
        # in month3/06 only), m3.03's direct_conv.h, and the toolkit's cuda_runtime.h.
        include_dirs=[folder, HERE, ROOT / "month3" / "03_direct_conv", cuda_toolkit_include()],
        defines=[f"COURSE_OPS={ns}"],
        with_course_runtime=True,  # m3.03's CUDA_CHECK reports through it
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
