"""Tests for exercise m1.05 (a PyTorch C++/CUDA extension). The same tests grade your
skeleton and the reference solution.

ctest runs each test class below as one test (see cmake/CoursePython.cmake):
    ./course grade m1_05        your version;   ./course test m1_05   the solution
Or run them yourself, with the Python that has PyTorch:
    python3 -m pytest -v month1/05_torch_extension/test_torch_extension.py
    COURSE_IMPL=solution python3 -m unittest -v month1/05_torch_extension/test_torch_extension.py

Classes whose name contains "Cuda" need a GPU and skip themselves without one; the others
run on the CPU kernels, so they grade you on any machine.
"""
import os
import re
import sys
import unittest

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import load_extension  # noqa: E402  (after the path is set; it puts common/python there too)
from course_harness import testing  # noqa: E402
from course_harness.testing import CudaTestCase, poison_allocator, random_tensor  # noqa: E402,F401

IMPL = testing.IMPL
NAMESPACE = load_extension.namespace(IMPL)
SEED = testing.SEED
CPP = "month1/05_torch_extension/torch_extension.cpp"
CU = "month1/05_torch_extension/torch_extension.cu"

HINT_REGISTER = (f"look at TODO(m1.05a) in {CPP}: define the schemas with m.def in "
                 "COURSE_TORCH_LIBRARY and register the CPU kernels with m.impl")
HINT_CPU = f"look at TODO(m1.05b) in {CPP} (the CPU loops)"
HINT_CHECKS = f"look at TODO(m1.05c) in {CPP} (the TORCH_CHECKs of check_*_inputs)"
HINT_CUDA = (f"look at TODO(m1.05d) in {CU}: the launch (device guard, at::empty_like, "
             "at::cuda::getCurrentCUDAStream(), C10_CUDA_KERNEL_LAUNCH_CHECK) and the "
             "m.impl lines for the CUDA key")

_extension = testing.LazyExtension(lambda: load_extension.load_ops(IMPL), f"the {IMPL} extension")


def extension():
    """The torch.ops namespace of the version under test, built on first use."""
    return _extension.get()


def op(name):
    """torch.ops.<namespace>.<name>, or a failure that names the TODO when it is missing."""
    ops = extension()
    try:
        return getattr(ops, name)
    except (AttributeError, RuntimeError) as error:
        raise AssertionError(f"torch.ops.{NAMESPACE}.{name} does not exist ({error}): "
                             f"{HINT_REGISTER}") from None


def call(name, *args, hint):
    """Calls the operator; an operator with no kernel for these inputs' device names the TODO."""
    function = op(name)
    try:
        return function(*args)
    except (RuntimeError, NotImplementedError) as error:
        if "Could not run" in str(error):
            device = args[0].device.type.upper()
            raise AssertionError(f"{NAMESPACE}::{name} has no kernel for {device} tensors "
                                 f"({str(error).splitlines()[0]}): {hint}") from None
        raise


def assert_matches(test, actual, expected, what, hint):
    # torch.testing.assert_close's float32 tolerances: erf and expf differ by a few units in
    # the last place between PyTorch's kernels and yours.
    testing.assert_close(actual, expected, what=what, hint=hint, rtol=1.3e-6, atol=1e-5)
    test.assertTrue(actual.is_contiguous(), f"{what}: the result should be contiguous: {hint}")


def assert_rejects(test, function, pattern, what, hint=HINT_CHECKS, no_kernel_hint=HINT_REGISTER):
    """function() must raise a RuntimeError whose message names the operator and the problem."""
    try:
        function()
    except RuntimeError as error:  # NotImplementedError is one too
        message = str(error)
        op_name = what.split("(")[0]
        if "Could not run" in message:
            test.fail(f"{what}: the operator has no kernel for these inputs' device "
                      f"({message.splitlines()[0]}): {no_kernel_hint}")
        if op_name not in message or not re.search(pattern, message, re.IGNORECASE):
            test.fail(f"{what}: raised, but the message should start with '{op_name}: ' and "
                      f"mention /{pattern}/; got: {message.splitlines()[0] if message else message!r}. "
                      f"{hint}")
        return
    except Exception as error:  # IndexError, TypeError, ...: not the check's error
        test.fail(f"{what}: expected a RuntimeError from a TORCH_CHECK, got "
                  f"{type(error).__name__}: {error}. {hint}")
    test.fail(f"{what}: no error was raised; a bad input must never give a result. {hint}")


# --- sizes and shapes ------------------------------------------------------------------

# 0 and 1: the smallest; 511, 512, 513: around a multiple of the block size; 4097 and
# 2^20 + 7: sizes that are not a multiple of 4 (a float4 kernel's tail).
VECTOR_SIZES = [0, 1, 3, 511, 512, 513, 4097, (1 << 20) + 7]
# [rows, cols]: single element, odd sizes, one column, many rows or many columns, and a
# multiple of 4 columns (a float4 kernel's fast path), plus empty matrices.
MATRIX_SHAPES = [(1, 1), (7, 13), (33, 65), (1000, 3), (3, 1000), (129, 1000), (64, 256), (0, 16), (4, 0)]


def vector_add_case(test, shape, seed, device, hint):
    a = random_tensor(shape, seed, device=device)
    b = random_tensor(shape, seed + 1, device=device)
    poison_allocator(a)
    actual = call("vector_add", a, b, hint=hint)
    assert_matches(test, actual, torch.add(a, b), f"vector_add on {device}, shape {tuple(shape)}", hint)


def fused_gelu_case(test, shape, seed, device, hint):
    x = random_tensor(shape, seed, device=device)
    w = random_tensor(shape[1], seed + 1, device=device)
    b = random_tensor(shape[1], seed + 2, low=-1.0, high=1.0, device=device)
    poison_allocator(x)
    actual = call("fused_gelu", x, w, b, hint=hint)
    expected = F.gelu(x * w + b)  # the eager chain: three kernels and two temporaries
    assert_matches(test, actual, expected, f"fused_gelu on {device}, shape {tuple(shape)}", hint)


# --- CPU: run everywhere ---------------------------------------------------------------

class RegistrationTest(unittest.TestCase):
    """The operators exist in torch.ops with the schemas of the lesson."""

    def test_schemas(self):
        for name, schema in [("vector_add", "vector_add(Tensor a, Tensor b) -> Tensor"),
                             ("fused_gelu", "fused_gelu(Tensor x, Tensor w, Tensor b) -> Tensor")]:
            with self.subTest(op=name):
                declared = str(op(name).default._schema)
                self.assertEqual(declared, f"{NAMESPACE}::{schema}",
                                 f"the schema of {name} differs from the lesson's: {HINT_REGISTER}")

    @unittest.skipUnless(hasattr(torch.library, "opcheck"), "torch.library.opcheck needs PyTorch 2.4+")
    def test_opcheck_cpu(self):
        # opcheck tests the registration itself: that the schema matches what the kernel does
        # (a new tensor, inputs untouched) and that the fake kernel (load_extension.py) agrees
        # with the real one about the result's shape, for torch.compile.
        x = random_tensor((7, 13), SEED + 10)
        w = random_tensor(13, SEED + 11)
        b = random_tensor(13, SEED + 12)
        torch.library.opcheck(op("vector_add").default, (x, random_tensor((7, 13), SEED + 13)))
        torch.library.opcheck(op("fused_gelu").default, (x, w, b))


class VectorAddCpuTest(unittest.TestCase):
    def test_matches_torch_add(self):
        for i, n in enumerate(VECTOR_SIZES):
            with self.subTest(n=n):
                vector_add_case(self, (n,), SEED + 100 + 2 * i, "cpu", HINT_CPU)

    def test_any_shape_is_elementwise(self):
        for i, shape in enumerate([(), (33, 65), (3, 5, 7)]):
            with self.subTest(shape=shape):
                vector_add_case(self, shape, SEED + 200 + 2 * i, "cpu", HINT_CPU)

    def test_returns_a_new_tensor_and_leaves_the_inputs_alone(self):
        a = random_tensor(1000, SEED + 300)
        b = random_tensor(1000, SEED + 301)
        a_before, b_before = a.clone(), b.clone()
        c = call("vector_add", a, b, hint=HINT_CPU)
        self.assertNotEqual(c.data_ptr(), a.data_ptr(), f"the result must be a new tensor: {HINT_CPU}")
        self.assertNotEqual(c.data_ptr(), b.data_ptr(), f"the result must be a new tensor: {HINT_CPU}")
        self.assertTrue(torch.equal(a, a_before) and torch.equal(b, b_before),
                        f"vector_add changed its inputs: {HINT_CPU}")


class FusedGeluCpuTest(unittest.TestCase):
    def test_matches_the_eager_chain(self):
        for i, shape in enumerate(MATRIX_SHAPES):
            with self.subTest(shape=shape):
                fused_gelu_case(self, shape, SEED + 400 + 3 * i, "cpu", HINT_CPU)


def bad_inputs(device):
    """(description, call, what the message must mention) for every kind of bad input.

    Where a size is wrong the bad tensor is the larger one, so that a version without the
    checks reads inside its arrays and fails the test instead of crashing the process.
    """
    def t(shape, seed, dtype=torch.float32):
        return random_tensor(shape, seed, device=device).to(dtype)

    a, b = t((12,), SEED + 500), t((12,), SEED + 501)
    x, w, bias = t((6, 8), SEED + 502), t((8,), SEED + 503), t((8,), SEED + 504)
    square = t((8, 8), SEED + 505)
    vector_add = lambda *args: (lambda: op("vector_add")(*args))  # noqa: E731
    fused_gelu = lambda *args: (lambda: op("fused_gelu")(*args))  # noqa: E731
    return [
        ("vector_add(float64, float64)", vector_add(a.double(), b.double()), r"float32"),
        ("vector_add(float32, float64)", vector_add(a, b.double()), r"float32"),
        ("vector_add(int32, int32)", vector_add(a.int(), b.int()), r"float32"),
        ("vector_add(shape [10], shape [12])", vector_add(a[:10].contiguous(), b), r"shape"),
        ("vector_add(shape [3, 4], shape [12])", vector_add(a.view(3, 4), b), r"shape"),
        ("vector_add(transposed view, contiguous)", vector_add(square.t(), t((8, 8), SEED + 506)), r"contiguous"),
        ("vector_add(contiguous, every-other-element view)", vector_add(a[:6].contiguous(), b[::2]), r"contiguous"),
        ("fused_gelu(float64 x)", fused_gelu(x.double(), w, bias), r"float32"),
        ("fused_gelu(float64 w)", fused_gelu(x, w.double(), bias), r"float32"),
        ("fused_gelu(float16 b)", fused_gelu(x, w, bias.half()), r"float32"),
        ("fused_gelu(1-D x)", fused_gelu(x.flatten(), w, bias), r"2-?D|dim"),
        ("fused_gelu(3-D x)", fused_gelu(x.view(2, 3, 8), w, bias), r"2-?D|dim"),
        ("fused_gelu(w of length cols + 3)", fused_gelu(x, t((11,), SEED + 507), bias), r"shape|size|length"),
        ("fused_gelu(b of length cols + 3)", fused_gelu(x, w, t((11,), SEED + 508)), r"shape|size|length"),
        ("fused_gelu(2-D w [1, cols])", fused_gelu(x, w.view(1, 8), bias), r"shape|size|1-?D|dim"),
        ("fused_gelu(transposed x)", fused_gelu(square.t(), w, bias), r"contiguous"),
        ("fused_gelu(every-other-element w)", fused_gelu(x, t((16,), SEED + 509)[::2], bias), r"contiguous"),
    ]


class InputChecksCpuTest(unittest.TestCase):
    """Bad inputs raise a RuntimeError that says what is wrong (TORCH_CHECK)."""

    def test_bad_inputs_raise_clear_errors(self):
        op("vector_add"), op("fused_gelu")  # both must exist first
        for what, function, pattern in bad_inputs("cpu"):
            with self.subTest(case=what):
                assert_rejects(self, function, pattern, what)


# --- CUDA: need a GPU ------------------------------------------------------------------

class VectorAddCudaTest(CudaTestCase):
    def test_matches_torch_add(self):
        for i, n in enumerate(VECTOR_SIZES + [1 << 26]):
            with self.subTest(n=n):
                vector_add_case(self, (n,), SEED + 600 + 2 * i, "cuda", HINT_CUDA)

    def test_any_shape_is_elementwise(self):
        for i, shape in enumerate([(), (33, 65), (3, 5, 7)]):
            with self.subTest(shape=shape):
                vector_add_case(self, shape, SEED + 700 + 2 * i, "cuda", HINT_CUDA)

    def test_views_that_start_inside_a_tensor(self):
        # t[1:] is contiguous, but its data starts 4 bytes into the allocation: a float4
        # kernel must not be used on it (16-byte loads need 16-byte-aligned addresses).
        for n in [1, 5, 1023, 4097]:
            for shift_a, shift_b in [(1, 0), (0, 3), (1, 1), (2, 2)]:
                with self.subTest(n=n, shift_a=shift_a, shift_b=shift_b):
                    a = random_tensor(n + shift_a, SEED + 800 + n, device="cuda")[shift_a:]
                    b = random_tensor(n + shift_b, SEED + 801 + n, device="cuda")[shift_b:]
                    actual = call("vector_add", a, b, hint=HINT_CUDA)
                    assert_matches(self, actual, torch.add(a, b),
                                   f"vector_add of views offset by {shift_a} and {shift_b} elements",
                                   HINT_CUDA)

    def test_runs_on_the_current_stream(self):
        # On a side stream, the input is written only after a 25 ms sleep. An operator that
        # launches on the current stream (this side stream) waits for it; one that launches
        # on the default stream reads the input before it is written, and gets NaN.
        n = 1 << 20
        a = random_tensor(n, SEED + 900, device="cuda")
        b = random_tensor(n, SEED + 901, device="cuda")
        late = torch.full_like(a, float("nan"))
        torch.cuda.synchronize()
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            torch.cuda._sleep(50_000_000)  # GPU clock cycles
            late.copy_(a)
            result = call("vector_add", late, b, hint=HINT_CUDA)
        side.synchronize()
        assert_matches(self, result, torch.add(a, b), "vector_add on a side stream",
                       HINT_CUDA + " (launch on at::cuda::getCurrentCUDAStream(), the 4th <<<>>> parameter)")

    @unittest.skipUnless(torch.cuda.device_count() >= 2, "needs two GPUs")
    def test_tensors_on_another_gpu_than_the_current_one(self):
        a = random_tensor(100003, SEED + 902, device="cuda:1")
        b = random_tensor(100003, SEED + 903, device="cuda:1")
        with torch.cuda.device(0):
            result = call("vector_add", a, b, hint=HINT_CUDA)
        assert_matches(self, result, torch.add(a, b), "vector_add on cuda:1 while cuda:0 is current",
                       HINT_CUDA + " (the c10::cuda::CUDAGuard)")

    @unittest.skipUnless(hasattr(torch.library, "opcheck"), "torch.library.opcheck needs PyTorch 2.4+")
    def test_opcheck(self):
        a = random_tensor((7, 13), SEED + 904, device="cuda")
        b = random_tensor((7, 13), SEED + 905, device="cuda")
        call("vector_add", a, b, hint=HINT_CUDA)
        torch.library.opcheck(op("vector_add").default, (a, b))


class FusedGeluCudaTest(CudaTestCase):
    def test_matches_the_eager_chain(self):
        for i, shape in enumerate(MATRIX_SHAPES + [(1000, 1024), (1000, 1023), (4096, 4097)]):
            with self.subTest(shape=shape):
                fused_gelu_case(self, shape, SEED + 1000 + 3 * i, "cuda", HINT_CUDA)

    def test_views_that_start_inside_a_tensor(self):
        # x or w starting 4 bytes into their allocation: no float4 loads on them. (Shifted
        # by 4 floats, 16 bytes, both are aligned again.)
        rows, cols = 37, 64
        for shift_x, shift_w in [(1, 0), (0, 1), (4, 4)]:
            with self.subTest(shift_x=shift_x, shift_w=shift_w):
                x = random_tensor(rows * cols + shift_x, SEED + 1100, device="cuda")[shift_x:].view(rows, cols)
                w = random_tensor(cols + shift_w, SEED + 1101, device="cuda")[shift_w:]
                b = random_tensor(cols, SEED + 1102, device="cuda")
                actual = call("fused_gelu", x, w, b, hint=HINT_CUDA)
                assert_matches(self, actual, F.gelu(x * w + b),
                               f"fused_gelu with x offset by {shift_x} and w by {shift_w} elements", HINT_CUDA)

    def test_runs_on_the_current_stream(self):
        x = random_tensor((512, 1000), SEED + 1200, device="cuda")
        w = random_tensor(1000, SEED + 1201, device="cuda")
        b = random_tensor(1000, SEED + 1202, device="cuda")
        late = torch.full_like(x, float("nan"))
        torch.cuda.synchronize()
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            torch.cuda._sleep(50_000_000)
            late.copy_(x)
            result = call("fused_gelu", late, w, b, hint=HINT_CUDA)
        side.synchronize()
        assert_matches(self, result, F.gelu(x * w + b), "fused_gelu on a side stream",
                       HINT_CUDA + " (launch on at::cuda::getCurrentCUDAStream())")

    @unittest.skipUnless(hasattr(torch.library, "opcheck"), "torch.library.opcheck needs PyTorch 2.4+")
    def test_opcheck(self):
        x = random_tensor((7, 13), SEED + 1203, device="cuda")
        w = random_tensor(13, SEED + 1204, device="cuda")
        b = random_tensor(13, SEED + 1205, device="cuda")
        call("fused_gelu", x, w, b, hint=HINT_CUDA)
        torch.library.opcheck(op("fused_gelu").default, (x, w, b))


class InputChecksCudaTest(CudaTestCase):
    """The CUDA kernels check their inputs too, and mixing devices is an error."""

    def test_bad_inputs_raise_clear_errors(self):
        op("vector_add"), op("fused_gelu")
        for what, function, pattern in bad_inputs("cuda"):
            with self.subTest(case=what):
                assert_rejects(self, function, pattern, what, no_kernel_hint=HINT_CUDA)

    def test_mixed_devices_raise_clear_errors(self):
        a = random_tensor(12, SEED + 1300)
        x = random_tensor((6, 8), SEED + 1301)
        w = random_tensor(8, SEED + 1302)
        b = random_tensor(8, SEED + 1303)
        cases = [
            ("vector_add(cpu, cuda)", lambda: op("vector_add")(a, a.cuda())),
            ("vector_add(cuda, cpu)", lambda: op("vector_add")(a.cuda(), a)),
            ("fused_gelu(cuda x, cpu w and b)", lambda: op("fused_gelu")(x.cuda(), w, b)),
            ("fused_gelu(cpu x, cuda w)", lambda: op("fused_gelu")(x, w.cuda(), b)),
            ("fused_gelu(cuda x and w, cpu b)", lambda: op("fused_gelu")(x.cuda(), w.cuda(), b)),
        ]
        for what, function in cases:
            with self.subTest(case=what):
                assert_rejects(self, function, r"device", what, no_kernel_hint=HINT_CUDA)
        torch.cuda.synchronize()  # nothing went wrong on the GPU meanwhile


if __name__ == "__main__":
    unittest.main()
