"""Tests for exercise m3.01 (the month-2 GEMMs as a pybind11 module, a dispatcher operator and
a wheel). The same tests grade your skeleton and the reference solution.

ctest runs each test class below as one test (see cmake/CoursePython.cmake):
    ./course grade m3_01        your version;   ./course test m3_01   the solution
Or run them yourself, with the Python that has PyTorch:
    python3 -m pytest -v month3/01_pybind_gemm/test_pybind_gemm.py
    COURSE_IMPL=solution python3 -m pytest -v month3/01_pybind_gemm/test_pybind_gemm.py
    COURSE_EARLIER_KERNELS=solution python3 -m pytest ...   (your m3.01 on the reference month 2)

Classes whose name contains "Cuda" need a GPU and skip themselves without one; the others
run without one (the input checks, the binding, the registration, the wheel), so they grade
you on any machine. Tests that need a newer PyTorch (torch.compile, opcheck) skip with the
reason on older ones.
"""
import importlib.util
import json
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
import unittest
import zipfile
from pathlib import Path

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import build_config  # noqa: E402
import load_extension  # noqa: E402  (after the path is set; it puts common/python there too)
from course_harness import paths, requirements, testing  # noqa: E402
from course_harness.testing import CudaTestCase, poison_allocator, random_tensor, skip_unless  # noqa: E402

IMPL = testing.IMPL
NAMESPACE = load_extension.namespace(IMPL)
SEED = testing.SEED
FOLDER = "month3/01_pybind_gemm"
CPP = f"{FOLDER}/pybind_gemm.cpp"
MONTH2 = build_config.month2_impl(IMPL)

HINT_BIND = (f"look at TODO(m3.01a) in {CPP}: m.def(\"optimized_gemm\", ...) in PYBIND11_MODULE, "
             "with py::arg names, py::kw_only(), the defaults and py::call_guard<py::gil_scoped_release>()")
HINT_CHECKS = f"look at TODO(m3.01b) in {CPP} (the TORCH_CHECKs of check_gemm_inputs)"
HINT_LAUNCH = (f"look at TODO(m3.01c) in {CPP}: launch_gemm (device guard, contiguous inputs, the "
               "result or out, at::cuda::getCurrentCUDAStream(), m2.09's plan and its workspace, the "
               "planned launcher for the dtype)")
if MONTH2 == "exercise":
    HINT_LAUNCH += (". It runs YOUR m2.09 kernels and chooser (month2/09_gemm_shapes): if "
                    "./course grade m2_09 fails, fix it first, or set "
                    f"{paths.EARLIER_KERNELS_SETTING}=solution to use the reference ones")
HINT_OP = (f"look at TODO(m3.01d) in {CPP}: m.def of the schema in COURSE_TORCH_LIBRARY and "
           "m.impl(\"gemm\", &gemm_op) in COURSE_TORCH_LIBRARY_IMPL(CUDA, m)")
HINT_PACKAGE = f"look at TODO(m3.01e) in {FOLDER}/setup.py (the CppExtension / CUDAExtension of course_gemm._C)"

OP_SCHEMA = "gemm(Tensor a, Tensor b, float alpha=1.0) -> Tensor"


def setUpModule():
    # Precision is named, never left at a default: torch.matmul in float32 means float32 here,
    # not TF32 (10-bit mantissas), and cuBLAS's float16 GEMM accumulates in float32.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if hasattr(torch.backends.cuda.matmul, "allow_fp16_reduced_precision_reduction"):
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False


_module = testing.LazyExtension(lambda: load_extension.load_module(IMPL), f"the {IMPL} extension")


def module():
    """The Python module of the version under test, built on first use."""
    return _module.get()


def optimized_gemm():
    """module().optimized_gemm, or a failure that names the TODO when it is not bound."""
    function = getattr(module(), "optimized_gemm", None)
    if function is None:
        raise AssertionError(f"the module has no optimized_gemm: {HINT_BIND}")
    return function


def op():
    """torch.ops.<namespace>.gemm, or a failure that names the TODO when it is missing."""
    module()
    if not load_extension.extension.has_op(NAMESPACE, "gemm"):
        raise AssertionError(f"torch.ops.{NAMESPACE}.gemm does not exist: {HINT_OP}")
    return getattr(torch.ops, NAMESPACE).gemm


# --- inputs and references -------------------------------------------------------------

def gemm_inputs(m, n, k, seed, dtype, device):
    """a [m, k] and b [k, n], uniform in [-1, 1] (what gemm_tolerance assumes), rounded to dtype."""
    a = random_tensor((m, k), seed, low=-1.0, high=1.0, dtype=dtype, device=device)
    b = random_tensor((k, n), seed + 1, low=-1.0, high=1.0, dtype=dtype, device=device)
    return a, b


def reference(a, b, alpha=1.0):
    """alpha * a @ b by torch.matmul in float64, from the inputs as they are (already rounded
    to float16 for float16 inputs), as float32: the dtype optimized_gemm returns."""
    return (alpha * torch.matmul(a.double(), b.double())).float()


def assert_gemm_close(actual, a, b, alpha, what, hint):
    k = a.shape[1]
    rtol, atol = testing.gemm_tolerance(a.dtype, k)
    testing.assert_close(actual, reference(a, b, alpha), what=what, hint=hint, rtol=rtol, atol=atol)


# (M, N, K): one element; odd sizes around the tiles (127, 129: the 128-wide block tiles;
# 7 and 1000: not multiples of 8, the float16 kernel's 16-byte vectors, nor of 4, the
# float32 kernel's float4); one row, one column; a K much longer than M and N.
SHAPES = [(1, 1, 1), (7, 13, 5), (127, 129, 1000), (129, 127, 7), (1000, 1, 127), (1, 1000, 129),
          (64, 64, 64), (256, 384, 128), (33, 65, 4099), (1024, 1024, 1024)]


def random_shapes(count, seed, high=700):
    """Seeded random (M, N, K), the same on every run and machine."""
    generator = torch.Generator().manual_seed(seed)
    sizes = torch.randint(1, high, (count, 3), generator=generator).tolist()
    return [tuple(s) for s in sizes]


def assert_rejects(test, function, pattern, values, what, hint=HINT_CHECKS):
    """function() must raise a RuntimeError whose message matches /pattern/ and shows each value."""
    try:
        function()
    except RuntimeError as error:
        message = str(error)
        first = message.splitlines()[0] if message else repr(message)
        if "optimized_gemm" not in message or not re.search(pattern, message, re.IGNORECASE):
            test.fail(f"{what}: raised, but the message should start with 'optimized_gemm: ' and "
                      f"mention /{pattern}/; got: {first}. {hint}")
        missing = [v for v in values if v not in message]
        if missing:
            test.fail(f"{what}: the message should show the offending value(s) {missing}; got: {first}. {hint}")
        return
    except Exception as error:  # TypeError (a binding problem), IndexError (no rank check), ...
        test.fail(f"{what}: expected a RuntimeError from a TORCH_CHECK, got {type(error).__name__}: "
                  f"{error}. {hint}")
    test.fail(f"{what}: no error was raised; a bad input must never give a result. {hint}")


def bad_inputs(device):
    """(description, call, what the message must mention, values it must show).

    Every case but the device is checked before the device, so that these run on the CPU.
    The tensors are small: a version without the checks that reads or writes a few elements
    past one stays inside the caching allocator's 512-byte block on the GPU, and fails the
    test instead of crashing the process.
    """
    def t(shape, seed, dtype=torch.float32):
        return random_tensor(shape, seed, device=device).to(dtype)

    gemm = optimized_gemm()
    a, b = t((6, 8), SEED + 500), t((8, 5), SEED + 501)
    square = t((6, 6), SEED + 502)
    shared = t((72,), SEED + 511)
    out = torch.empty(6, 5, device=device)
    return [
        ("optimized_gemm(float64, float64)", lambda: gemm(a.double(), b.double()), r"float32|float16", ["float64"]),
        ("optimized_gemm(float32, float16)", lambda: gemm(a, b.half()), r"float32|float16", ["float32", "float16"]),
        ("optimized_gemm(float16, float32)", lambda: gemm(a.half(), b), r"float32|float16", ["float16", "float32"]),
        ("optimized_gemm(bfloat16, bfloat16)", lambda: gemm(a.bfloat16(), b.bfloat16()), r"float32|float16", ["bfloat16"]),
        ("optimized_gemm(int32, int32)", lambda: gemm(a.int(), b.int()), r"float32|float16", ["int32"]),
        ("optimized_gemm(1-D a)", lambda: gemm(t((12,), SEED + 503), b), r"2-?D", ["[12]"]),
        ("optimized_gemm(0-D a)", lambda: gemm(t((), SEED + 504), b), r"2-?D", ["[]"]),
        ("optimized_gemm(3-D b)", lambda: gemm(a, t((2, 8, 5), SEED + 505)), r"2-?D", ["[2, 8, 5]"]),
        ("optimized_gemm([6, 8] @ [7, 5])", lambda: gemm(a, t((7, 5), SEED + 506)), r"inner|match|size",
         ["[6, 8]", "[7, 5]"]),
        ("optimized_gemm([6, 8] @ [9, 5])", lambda: gemm(a, t((9, 5), SEED + 507)), r"inner|match|size",
         ["[6, 8]", "[9, 5]"]),
        ("optimized_gemm(out float16)", lambda: gemm(a, b, out=out.half()), r"out.*float32", ["float16"]),
        ("optimized_gemm(float16 inputs, out float16)",
         lambda: gemm(a.half(), b.half(), out=out.half()), r"out.*float32", ["float16"]),
        ("optimized_gemm(out float64)", lambda: gemm(a, b, out=out.double()), r"out.*float32", ["float64"]),
        ("optimized_gemm(out [6, 4] for [6, 5])", lambda: gemm(a, b, out=torch.empty(6, 4, device=device)),
         r"out.*shape", ["[6, 5]", "[6, 4]"]),
        ("optimized_gemm(out [5, 6] for [6, 5])", lambda: gemm(a, b, out=torch.empty(5, 6, device=device)),
         r"out.*shape", ["[6, 5]", "[5, 6]"]),
        ("optimized_gemm(1-D out)", lambda: gemm(a, b, out=torch.empty(30, device=device)),
         r"out.*shape", ["[6, 5]", "[30]"]),
        ("optimized_gemm(transposed out)", lambda: gemm(a, b, out=torch.empty(5, 6, device=device).t()),
         r"contiguous", ["[1, 6]"]),
        ("optimized_gemm(out = a)", lambda: gemm(square, t((6, 6), SEED + 508), out=square), r"overlap", []),
        ("optimized_gemm(out = b)", lambda: gemm(t((6, 6), SEED + 509), square, out=square), r"overlap", []),
        ("optimized_gemm(out overlapping part of b)",
         lambda: gemm(t((6, 6), SEED + 510), shared[:36].view(6, 6), out=shared[30:66].view(6, 6)),
         r"overlap", []),
    ]


# --- CPU: run everywhere ---------------------------------------------------------------

class BindingTest(unittest.TestCase):
    """The pybind11 function: its name, signature, docstring and the GIL (TODO(m3.01a))."""

    def test_module_has_optimized_gemm_with_a_docstring(self):
        gemm = optimized_gemm()
        doc = gemm.__doc__ or ""
        # pybind11 writes the signature as the docstring's first line, then yours.
        signature = doc.splitlines()[0] if doc else ""
        self.assertIn("optimized_gemm(", signature, f"the docstring has no signature: {HINT_BIND}")
        # pybind11 2 writes "alpha: float = 1.0", pybind11 3 "alpha: typing.SupportsFloat = 1.0".
        self.assertRegex(signature, r"alpha: (float|typing\.SupportsFloat) = 1\.0",
                         f"the signature should read optimized_gemm(a, b, *, alpha=1.0, out=None); "
                         f"got {signature!r}: {HINT_BIND}")
        for piece in ("a:", "b:", "*", "out:", "= None"):
            self.assertIn(piece, signature, f"the signature should read optimized_gemm(a, b, *, "
                          f"alpha=1.0, out=None); got {signature!r}: {HINT_BIND}")
        text = "\n".join(doc.splitlines()[1:]).strip()
        self.assertGreater(len(text), 20, f"give optimized_gemm a docstring (got {text!r}): {HINT_BIND}")

    def test_alpha_and_out_are_keyword_only(self):
        gemm = optimized_gemm()
        a, b = gemm_inputs(4, 3, 2, SEED + 1, torch.float32, "cpu")
        with self.assertRaises(TypeError, msg=f"optimized_gemm(a, b, 2.0) must be a TypeError "
                               f"(alpha is keyword-only: py::kw_only()): {HINT_BIND}"):
            gemm(a, b, 2.0)
        # Keywords are accepted: the call reaches the checks (which reject CPU tensors, or
        # raise anyway in a build without CUDA), not pybind11's argument matching.
        for kwargs in ({"alpha": 2.0}, {"out": None}, {"alpha": -1.0, "out": None}):
            with self.subTest(kwargs=kwargs):
                try:
                    gemm(a=a, b=b, **kwargs)
                except TypeError as error:
                    self.fail(f"optimized_gemm(a=a, b=b, **{kwargs}) should be accepted, got "
                              f"TypeError: {str(error).splitlines()[0]}: {HINT_BIND}")
                except RuntimeError:
                    pass

    def test_the_gil_is_released_during_the_call(self):
        gemm = optimized_gemm()
        a, b = gemm_inputs(4, 3, 2, SEED + 2, torch.float32, "cuda" if load_extension.cuda_status()[0] else "cpu")
        try:
            gemm(a, b)
        except RuntimeError:
            pass  # CPU tensors are rejected; the flag is set before the checks
        held = module()._gil_was_held_during_last_call()
        self.assertNotEqual(held, -1, "optimized_gemm did not run the given first line of "
                            "course::m3_01::optimized_gemm: bind that function")
        self.assertEqual(held, 0, f"optimized_gemm ran holding the GIL, so no other Python thread "
                         f"could run meanwhile: {HINT_BIND}")


class OperatorTest(unittest.TestCase):
    """The dispatcher operator's registration (TODO(m3.01d)); its results are OperatorCudaTest's."""

    def test_schema(self):
        declared = str(op().default._schema)
        # Let PyTorch print the lesson's schema too: it writes the default 1.0 its own way.
        expected = str(torch._C.parse_schema(f"{NAMESPACE}::{OP_SCHEMA}"))
        self.assertEqual(declared, expected, f"the schema differs from the lesson's {OP_SCHEMA!r}: {HINT_OP}")

    @unittest.skipUnless(hasattr(torch._C, "_dispatch_has_kernel_for_dispatch_key"),
                         "this PyTorch cannot list an operator's kernels")
    def test_has_a_cuda_kernel_and_no_cpu_kernel(self):
        name = f"{NAMESPACE}::gemm"
        op()
        self.assertTrue(torch._C._dispatch_has_kernel_for_dispatch_key(name, "CUDA"),
                        f"{name} has no kernel for CUDA tensors: {HINT_OP}")
        self.assertFalse(torch._C._dispatch_has_kernel_for_dispatch_key(name, "CPU"),
                         f"{name} should have no CPU kernel (the kernels are CUDA only): {HINT_OP}")

    def test_cpu_tensors_are_refused_by_the_dispatcher(self):
        # No CPU kernel: PyTorch's dispatcher raises before any code of yours runs. (The
        # pybind11 function has no dispatcher: its own check says so; InputChecksCpuTest.)
        gemm = op()
        a, b = gemm_inputs(4, 3, 2, SEED + 3, torch.float32, "cpu")
        with self.assertRaisesRegex((RuntimeError, NotImplementedError), "CPU",
                                    msg=f"gemm on CPU tensors should be refused: {HINT_OP}"):
            gemm(a, b)


class InputChecksCpuTest(unittest.TestCase):
    """Bad inputs raise a RuntimeError that says what is wrong and shows the value (TODO(m3.01b))."""

    def test_bad_inputs_raise_clear_errors(self):
        for what, function, pattern, values in bad_inputs("cpu"):
            with self.subTest(case=what):
                assert_rejects(self, function, pattern, values, what)

    def test_sizes_that_do_not_fit_an_int(self):
        # expand() makes a [2^31, 1] view of one float: no memory, but M does not fit an int.
        gemm = optimized_gemm()
        big = torch.zeros(1, 1).expand(2 ** 31, 1)
        b = torch.zeros(1, 3)
        assert_rejects(self, lambda: gemm(big, b), r"2\^31", ["2147483648"], "optimized_gemm([2^31, 1] @ [1, 3])")
        wide = torch.zeros(1, 1).expand(1, 2 ** 31)
        assert_rejects(self, lambda: gemm(torch.zeros(4, 1), wide), r"2\^31", ["2147483648"],
                       "optimized_gemm([4, 1] @ [1, 2^31])")
        # Each size fits, their product does not: [65536, 65536] has 2^32 elements.
        square = torch.zeros(1, 1).expand(65536, 65536)
        assert_rejects(self, lambda: gemm(square, torch.zeros(65536, 1)), r"2\^31", ["65536"],
                       "optimized_gemm([65536, 65536] @ [65536, 1])")

    def test_cpu_tensors_are_rejected(self):
        # Good tensors, on the wrong device: the kernels read device pointers.
        gemm = optimized_gemm()
        for dtype in (torch.float32, torch.float16):
            with self.subTest(dtype=dtype):
                a, b = gemm_inputs(6, 5, 8, SEED + 600, dtype, "cpu")
                assert_rejects(self, lambda: gemm(a, b), r"CUDA", ["cpu"], f"optimized_gemm({dtype} CPU tensors)")


# The wheel test builds in a temporary folder, installs there and imports in a new Python.
_WHEEL_PROGRAM = r"""
import json, sys
import torch
import course_gemm
report = {"file": course_gemm.__file__, "namespace": course_gemm.NAMESPACE}
a = torch.rand(6, 8, dtype=torch.float64)
try:
    course_gemm.optimized_gemm(a, a.t().contiguous())
    report["error"] = None
except RuntimeError as error:
    report["error"] = str(error).splitlines()[0]
report["has_op"] = course_gemm.gemm is not None
if torch.cuda.is_available() and course_gemm._C.with_cuda:
    torch.backends.cuda.matmul.allow_tf32 = False
    g = torch.Generator().manual_seed(int(sys.argv[1]))
    a = (torch.rand(129, 200, generator=g) * 2 - 1).cuda()
    b = (torch.rand(200, 67, generator=g) * 2 - 1).cuda()
    expected = torch.matmul(a.double(), b.double())
    for name, c in (("optimized_gemm", course_gemm.optimized_gemm(a, b, alpha=-1.5)),
                    ("gemm", course_gemm.gemm(a, b, -1.5))):
        report[name + "_max_error"] = float((c.double() - (-1.5) * expected).abs().max())
print("REPORT " + json.dumps(report))
"""


def _install_command(names):
    """pip for this very Python; Debian's packages for a system Python that pip may not change
    (Debian's and Ubuntu's are EXTERNALLY-MANAGED)."""
    in_environment = sys.prefix != getattr(sys, "base_prefix", sys.prefix)
    marker = os.path.join(sysconfig.get_path("stdlib") or "", "EXTERNALLY-MANAGED")
    if not in_environment and os.path.isfile(marker):
        sudo = "" if os.geteuid() == 0 else "sudo "
        return sudo + "apt-get install " + " ".join(f"python3-{name}" for name in names)
    return f"{sys.executable} -m pip install " + " ".join(names)


def _can_build_wheels():
    """(True, "") when this machine can build the wheel; else (False, the skip's reason), which
    ends with "; to fix: <command>": neither case is the learner's code."""
    # Looked up, not imported: importing setuptools after PyTorch has imported the standard
    # library's distutils trips setuptools' distutils check. pip runs them in its own process.
    missing = [name for name in ("pip", "setuptools", "wheel") if importlib.util.find_spec(name) is None]
    if missing:
        return False, requirements.skip_reason_with_fix(
            f"building a wheel needs pip, setuptools and wheel; {sys.executable} lacks "
            f"{', '.join(missing)}", _install_command(missing))
    # With CUDA, setup.py's CUDAExtension is compiled by nvcc (the one requirements finds, in
    # the order PyTorch looks: CUDA_HOME, CUDA_PATH, PATH, /usr/local/cuda), and PyTorch's
    # BuildExtension refuses an nvcc of another CUDA major version than its own.
    if torch.version.cuda is not None:
        nvcc = requirements.nvcc_cuda_version()
        torch_major = int(torch.version.cuda.split(".")[0])
        if nvcc is not None and nvcc[0] != torch_major:
            return False, requirements.skip_reason_with_fix(
                f"nvcc is CUDA {nvcc[0]}.{nvcc[1]}, but this PyTorch ({torch.__version__}) is built "
                f"for CUDA {torch.version.cuda}, and PyTorch builds no extension with an nvcc of "
                "another major version",
                # pip keeps an installed torch ("already satisfied") unless it goes first.
                requirements.cuda_torch_replace_command(nvcc[0]))
    return True, ""


class PackageTest(unittest.TestCase):
    """setup.py builds a wheel that installs and imports in a fresh interpreter (TODO(m3.01e))."""

    def test_wheel_builds_installs_and_imports(self):
        ok, why = _can_build_wheels()
        if not ok:
            self.skipTest(why)
        project = Path(build_config.binding_source(IMPL)).parent  # the folder with setup.py
        with tempfile.TemporaryDirectory(prefix="m3_01_wheel_") as tmp:
            tmp = Path(tmp)
            env = dict(os.environ, COURSE_WHEEL_BUILD_DIR=str(tmp / "build"), PIP_NO_INDEX="1",
                       PIP_DISABLE_PIP_VERSION_CHECK="1")
            # --no-build-isolation: build against this PyTorch, not one pip would download.
            build = subprocess.run(
                [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
                 "-w", str(tmp / "dist"), str(project)],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=840)
            self.assertEqual(build.returncode, 0, f"pip wheel failed: {HINT_PACKAGE}\n{build.stdout[-4000:]}")
            wheels = sorted((tmp / "dist").glob("course_gemm-*.whl"))
            self.assertEqual(len(wheels), 1, f"expected one course_gemm wheel in {tmp / 'dist'}, got {wheels}")
            names = zipfile.ZipFile(wheels[0]).namelist()
            self.assertIn("course_gemm/__init__.py", names, "the wheel lacks the package course_gemm")
            compiled = [n for n in names if re.match(r"course_gemm/_C.*\.so$", n)]
            self.assertTrue(compiled, f"the wheel has no compiled module course_gemm/_C*.so (it holds "
                            f"{names}): {HINT_PACKAGE}")

            install = subprocess.run(
                [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target",
                 str(tmp / "site"), str(wheels[0])],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=300)
            self.assertEqual(install.returncode, 0, f"pip install --target failed:\n{install.stdout[-3000:]}")

            # A fresh interpreter that sees the installed package, and not this repository.
            fresh_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TORCH_EXTENSIONS_DIR")}
            fresh_env["PYTHONPATH"] = str(tmp / "site")
            run = subprocess.run([sys.executable, "-c", _WHEEL_PROGRAM, str(SEED)], cwd=str(tmp),
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 env=fresh_env, timeout=300)
            lines = [line for line in run.stdout.splitlines() if line.startswith("REPORT ")]
            self.assertTrue(run.returncode == 0 and lines, f"importing and calling the installed "
                            f"course_gemm failed: {HINT_PACKAGE}\n{run.stdout[-3000:]}")
            report = json.loads(lines[-1][len("REPORT "):])
        self.assertTrue(report["file"].startswith(str(tmp / "site")),
                        f"course_gemm was imported from {report['file']}, not from the installed wheel")
        self.assertEqual(report["namespace"], "course_gemm")
        self.assertTrue(report["has_op"], f"torch.ops.course_gemm.gemm is missing in the wheel: {HINT_OP}")
        self.assertIsNotNone(report["error"], f"a float64 input gave a result instead of an error: {HINT_CHECKS}")
        self.assertIn("float64", report["error"], f"the installed module's error should show the dtype: {HINT_CHECKS}")
        if "optimized_gemm_max_error" in report:
            _, atol = testing.gemm_tolerance(torch.float32, 200)
            for name in ("optimized_gemm", "gemm"):
                self.assertLessEqual(report[name + "_max_error"], 2.0 * atol + 1e-5,
                                     f"the installed {name} gives wrong results: {HINT_LAUNCH}")


# --- CUDA: need a GPU ------------------------------------------------------------------

class GemmCudaTest(CudaTestCase):
    """optimized_gemm against torch.matmul, on the GPU (TODO(m3.01c))."""

    def check_shapes(self, dtype, shapes, seed, alpha=1.0):
        gemm = optimized_gemm()
        for i, (m, n, k) in enumerate(shapes):
            with self.subTest(dtype=dtype, m=m, n=n, k=k, alpha=alpha):
                a, b = gemm_inputs(m, n, k, seed + 2 * i, dtype, "cuda")
                # The result is the next float32 [m, n] block: NaN unless the kernel writes it.
                poison_allocator(torch.empty(0, device="cuda"), numel=m * n)
                c = gemm(a, b, alpha=alpha)
                self.assertEqual(c.dtype, torch.float32,
                                 f"the result of {dtype} inputs must be float32 (README.md): {HINT_LAUNCH}")
                self.assertTrue(c.is_contiguous(), f"the result must be contiguous: {HINT_LAUNCH}")
                assert_gemm_close(c, a, b, alpha, f"optimized_gemm({dtype}, [{m}, {k}] @ [{k}, {n}], "
                                  f"alpha={alpha})", HINT_LAUNCH)

    def test_float32_matches_torch_matmul(self):
        self.check_shapes(torch.float32, SHAPES, SEED + 1000)

    def test_float16_matches_torch_matmul(self):
        self.check_shapes(torch.float16, SHAPES, SEED + 1100)

    def test_random_shapes(self):
        for dtype in (torch.float32, torch.float16):
            self.check_shapes(dtype, random_shapes(6, SEED + 1200), SEED + 1300)

    def test_shapes_off_the_square(self):
        # The shapes m2.09's chooser plans differently (README.md, "Every shape"): a batch of
        # 16 (the skinny tile, K split), M = 128 with a long K (split-K on the square tile),
        # and odd sizes on both. A wrong plan, workspace or launcher gets these wrong.
        shapes = [(16, 1024, 4096), (128, 640, 6000), (64, 333, 2049), (17, 4099, 1030)]
        for dtype in (torch.float32, torch.float16):
            self.check_shapes(dtype, shapes, SEED + 1450)

    def test_two_streams_at_once(self):
        # Two split-K GEMMs that run at the same time on two streams: each must have its own
        # workspace (PyTorch's caching allocator gives each stream its own blocks). A
        # workspace shared by both would mix their partial products.
        gemm = optimized_gemm()
        for dtype in (torch.float32, torch.float16):
            with self.subTest(dtype=dtype):
                inputs = [gemm_inputs(64, 1024, 8192, SEED + 1470 + i, dtype, "cuda") for i in range(2)]
                torch.cuda.synchronize()
                streams = [torch.cuda.Stream() for _ in inputs]
                results = []
                for stream, (a, b) in zip(streams, inputs):
                    with torch.cuda.stream(stream):
                        torch.cuda._sleep(20_000_000)  # both streams wait, then both GEMMs run
                        results.append(gemm(a, b))
                torch.cuda.synchronize()
                for i, (c, (a, b)) in enumerate(zip(results, inputs)):
                    assert_gemm_close(c, a, b, 1.0, f"optimized_gemm on stream {i} of two ({dtype})",
                                      HINT_LAUNCH + " (the workspace: at::empty on the current stream)")

    def test_alpha(self):
        for dtype in (torch.float32, torch.float16):
            self.check_shapes(dtype, [(129, 67, 200)], SEED + 1400, alpha=-1.5)
            self.check_shapes(dtype, [(64, 64, 64)], SEED + 1410, alpha=0.5)

    def test_float32_agrees_with_torch_matmul_in_float32(self):
        # The float64 reference above is exact; this is the comparison a user makes:
        # torch.matmul in float32 with TF32 off (cuBLAS), which has rounding errors too.
        self.assertFalse(torch.backends.cuda.matmul.allow_tf32)
        a, b = gemm_inputs(512, 384, 1000, SEED + 1500, torch.float32, "cuda")
        rtol, atol = testing.gemm_tolerance(torch.float32, 1000)
        testing.assert_close(optimized_gemm()(a, b), torch.matmul(a, b), rtol=2 * rtol, atol=2 * atol,
                             what="optimized_gemm vs torch.matmul (float32, TF32 off)", hint=HINT_LAUNCH)

    def test_empty_sizes(self):
        gemm = optimized_gemm()
        for m, n, k in [(0, 5, 3), (5, 0, 3), (0, 0, 0)]:
            with self.subTest(m=m, n=n, k=k):
                a, b = gemm_inputs(m, n, k, SEED + 1600, torch.float32, "cuda")
                c = gemm(a, b)
                self.assertEqual(tuple(c.shape), (m, n), f"the result must be [M, N]: {HINT_LAUNCH}")
        # K = 0: an empty sum, so every element is 0 (the output was poisoned first).
        for dtype in (torch.float32, torch.float16):
            with self.subTest(k=0, dtype=dtype):
                a, b = gemm_inputs(37, 41, 0, SEED + 1601, dtype, "cuda")
                poison_allocator(torch.empty(0, device="cuda"), numel=37 * 41)
                testing.assert_close(gemm(a, b), torch.zeros(37, 41, device="cuda"),
                                     what=f"optimized_gemm with K = 0 ({dtype})", hint=HINT_LAUNCH)

    def test_out_is_written_in_place(self):
        gemm = optimized_gemm()
        for dtype in (torch.float32, torch.float16):
            with self.subTest(dtype=dtype):
                a, b = gemm_inputs(129, 67, 200, SEED + 1700, dtype, "cuda")
                out = torch.full((129, 67), float("nan"), device="cuda")
                c = gemm(a, b, alpha=2.0, out=out)
                self.assertEqual(c.data_ptr(), out.data_ptr(),
                                 f"with out=, the result must be out itself: {HINT_LAUNCH}")
                assert_gemm_close(out, a, b, 2.0, f"optimized_gemm({dtype}, out=...): out itself", HINT_LAUNCH)

    def test_views_are_accepted(self):
        # The lesson's rule: inputs may be any view (they are copied to row-major first).
        gemm = optimized_gemm()
        for dtype in (torch.float32, torch.float16):
            base_a = random_tensor((300, 301), SEED + 1800, low=-1, high=1, dtype=dtype, device="cuda")
            base_b = random_tensor((301, 302), SEED + 1801, low=-1, high=1, dtype=dtype, device="cuda")
            cases = [
                ("a.t(), b.t()", base_b.t(), base_a.t()),
                ("b[:, ::2]", base_a, base_b[:, ::2]),
                ("a starting one element in", base_a.reshape(-1)[1:1 + 99 * 301].view(99, 301), base_b),
                ("b starting 3 elements in", base_a, base_b.reshape(-1)[3:3 + 301 * 101].view(301, 101)),
            ]
            for what, a, b in cases:
                with self.subTest(dtype=dtype, case=what):
                    before = (a.clone(), b.clone())
                    c = gemm(a, b)
                    assert_gemm_close(c, a, b, 1.0, f"optimized_gemm of views ({what}, {dtype})", HINT_LAUNCH)
                    self.assertTrue(torch.equal(a, before[0]) and torch.equal(b, before[1]),
                                    f"optimized_gemm changed its inputs: {HINT_LAUNCH}")

    def test_runs_on_the_current_stream(self):
        # On a side stream, the input is written only after a long sleep. A launch on the
        # current stream (this side stream) waits for it; one on the default stream reads
        # the input before it is written, and gets NaN.
        gemm = optimized_gemm()
        for dtype in (torch.float32, torch.float16):
            with self.subTest(dtype=dtype):
                a, b = gemm_inputs(512, 256, 384, SEED + 1900, dtype, "cuda")
                late = torch.full_like(a, float("nan"))
                torch.cuda.synchronize()
                side = torch.cuda.Stream()
                with torch.cuda.stream(side):
                    torch.cuda._sleep(50_000_000)  # GPU clock cycles
                    late.copy_(a)
                    c = gemm(late, b)
                side.synchronize()
                assert_gemm_close(c, a, b, 1.0, f"optimized_gemm on a side stream ({dtype})",
                                  HINT_LAUNCH + " (launch on at::cuda::getCurrentCUDAStream())")

    def test_the_gil_is_released(self):
        # A valid call on the GPU: the flag the given code sets says who held the GIL.
        a, b = gemm_inputs(64, 64, 64, SEED + 2000, torch.float32, "cuda")
        optimized_gemm()(a, b)
        self.assertEqual(module()._gil_was_held_during_last_call(), 0,
                         f"optimized_gemm ran holding the GIL: {HINT_BIND}")

    @unittest.skipUnless(torch.cuda.device_count() >= 2, "needs two GPUs")
    def test_tensors_on_another_gpu_than_the_current_one(self):
        a, b = gemm_inputs(129, 67, 200, SEED + 2100, torch.float32, "cuda:1")
        with torch.cuda.device(0):
            c = optimized_gemm()(a, b)
        self.assertEqual(c.device, a.device, f"the result must be on the inputs' GPU: {HINT_LAUNCH}")
        assert_gemm_close(c, a, b, 1.0, "optimized_gemm on cuda:1 while cuda:0 is current",
                          HINT_LAUNCH + " (the c10::cuda::CUDAGuard)")


class InputChecksCudaTest(CudaTestCase):
    """The checks on the GPU, and mixed CPU/CUDA inputs (TODO(m3.01b))."""

    def test_bad_inputs_raise_clear_errors(self):
        for what, function, pattern, values in bad_inputs("cuda"):
            with self.subTest(case=what):
                assert_rejects(self, function, pattern, values, what)
        torch.cuda.synchronize()  # nothing went wrong on the GPU meanwhile

    def test_mixed_devices_raise_clear_errors(self):
        gemm = optimized_gemm()
        a, b = gemm_inputs(6, 5, 8, SEED + 2200, torch.float32, "cpu")
        out = torch.empty(6, 5)
        cases = [
            ("optimized_gemm(cpu a, cuda b)", lambda: gemm(a, b.cuda()), r"CUDA", ["cpu"]),
            ("optimized_gemm(cuda a, cpu b)", lambda: gemm(a.cuda(), b), r"same device", ["cuda:0", "cpu"]),
            ("optimized_gemm(cuda a and b, cpu out)", lambda: gemm(a.cuda(), b.cuda(), out=out),
             r"out", ["cuda:0", "cpu"]),
        ]
        for what, function, pattern, values in cases:
            with self.subTest(case=what):
                assert_rejects(self, function, pattern, values, what)
        torch.cuda.synchronize()


class OperatorCudaTest(CudaTestCase):
    """What the dispatcher operator gets that the pybind11 function does not (TODO(m3.01d))."""

    def test_operator_matches_torch_matmul(self):
        gemm = op()
        for dtype in (torch.float32, torch.float16):
            for i, (m, n, k) in enumerate([(129, 67, 200), (7, 1000, 13)]):
                with self.subTest(dtype=dtype, m=m, n=n, k=k):
                    a, b = gemm_inputs(m, n, k, SEED + 2300 + 2 * i, dtype, "cuda")
                    assert_gemm_close(gemm(a, b, -1.5), a, b, -1.5, f"torch.ops.{NAMESPACE}.gemm({dtype})", HINT_OP)
                    assert_gemm_close(gemm(a, b), a, b, 1.0, f"torch.ops.{NAMESPACE}.gemm({dtype}), "
                                      "alpha's default", HINT_OP)

    @skip_unless(hasattr(torch.library, "opcheck"), "torch.library.opcheck needs PyTorch 2.4+")
    def test_opcheck(self):
        # opcheck tests the registration: the schema matches what the kernel does (a new
        # tensor, inputs untouched), and the fake kernel agrees with the real one about the
        # result's shape, dtype and device (torch.compile's tracing relies on it).
        gemm = op()
        for dtype in (torch.float32, torch.float16):
            with self.subTest(dtype=dtype):
                a, b = gemm_inputs(37, 29, 41, SEED + 2400, dtype, "cuda")
                torch.library.opcheck(gemm.default, (a, b), {"alpha": 2.0})
                torch.library.opcheck(gemm.default, (a, b))

    @skip_unless(hasattr(torch, "compile"), "torch.compile needs PyTorch 2.0+")
    def test_torch_compile_traces_the_operator_in_one_graph(self):
        gemm = op()
        a, b = gemm_inputs(129, 67, 200, SEED + 2500, torch.float32, "cuda")
        bias = random_tensor((67,), SEED + 2502, device="cuda")

        def model(a, b, bias):
            return torch.relu(gemm(a, b, 2.0) + bias)

        torch._dynamo.reset()
        compiled = torch.compile(model, fullgraph=True)  # fullgraph: a graph break is an error
        expected = torch.relu(reference(a, b, 2.0) + bias)
        rtol, atol = testing.gemm_tolerance(torch.float32, 200)
        testing.assert_close(compiled(a, b, bias), expected, rtol=rtol, atol=2 * atol,
                             what="torch.compile(fullgraph=True) of the operator", hint=HINT_OP)

    @skip_unless(hasattr(torch, "compile"), "torch.compile needs PyTorch 2.0+")
    def test_torch_compile_cannot_trace_the_pybind_function(self):
        # The pybind11 function is an opaque Python builtin to torch.compile: it cannot know
        # what it returns without running it, so it breaks the graph there. With
        # fullgraph=True that break is an error; without it, the function runs eagerly.
        gemm = optimized_gemm()
        a, b = gemm_inputs(129, 67, 200, SEED + 2600, torch.float32, "cuda")

        def model(a, b):
            return torch.relu(gemm(a, b, alpha=2.0))

        torch._dynamo.reset()
        with self.assertRaises(Exception) as caught:
            torch.compile(model, fullgraph=True)(a, b)
        dynamo_errors = getattr(getattr(torch._dynamo, "exc", None), "TorchDynamoException", None)
        if dynamo_errors is not None:
            self.assertIsInstance(caught.exception, dynamo_errors,
                                  f"expected torch.compile's graph-break error, got "
                                  f"{type(caught.exception).__name__}: {caught.exception}")
        torch._dynamo.reset()
        rtol, atol = testing.gemm_tolerance(torch.float32, 200)
        testing.assert_close(torch.compile(model)(a, b), torch.relu(reference(a, b, 2.0)), rtol=rtol,
                             atol=atol, what="torch.compile (graph break allowed) of the pybind function",
                             hint=HINT_BIND)


if __name__ == "__main__":
    unittest.main()
