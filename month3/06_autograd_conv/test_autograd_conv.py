"""Tests for exercise m3.06 (an autograd Conv2d on the course's kernels). The same tests grade
your skeleton and the reference solution.

ctest runs each test class below as one test (cmake/CoursePython.cmake):
    ./course grade m3_06        your version;   ./course test m3_06   the solution
Or by hand, with the Python that has PyTorch:
    python3 -m pytest -v month3/06_autograd_conv/test_autograd_conv.py
    COURSE_IMPL=solution python3 -m unittest -v month3/06_autograd_conv/test_autograd_conv.py

Classes whose name contains "Cuda" need a GPU and skip themselves without one; the others run
on the CPU kernels (float64 gradcheck included), so they grade you on any machine. Tests that
need a newer PyTorch (opcheck, register_autograd, torch.compile) skip with the reason.
"""
import contextlib
import os
import re
import sys
import unittest

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import load_extension  # noqa: E402  (it puts common/python on the path too)
from course_harness import requirements, testing  # noqa: E402
from course_harness.conv_shapes import TEST_CASES, case, output_size  # noqa: E402
from course_harness.testing import CudaTestCase, random_tensor, skip_unless  # noqa: E402

IMPL = testing.IMPL
NAMESPACE = load_extension.namespace(IMPL)
SEED = testing.SEED
FOLDER = "month3/06_autograd_conv"
HAS_OP_AUTOGRAD = hasattr(torch.library, "register_autograd") and hasattr(torch.library, "register_fake")
HAS_OPCHECK = hasattr(torch.library, "opcheck")

HINT_GATHER = f"look at TODO(m3.06a) in {FOLDER}/conv_backward.h (grad_input_at, the gather)"
HINT_WGRAD = f"look at TODO(m3.06b) in {FOLDER}/conv_backward.h (grad_weight_partial)"
HINT_WGRAD_GEMM = ("conv2d_grad_weight on the GPU is given code (im2col, then cuBLAS GEMMs over X_col; "
                   "float16: your m2.09 GEMM, see ./course grade m2_09); TODO(m3.06b) is graded by "
                   "conv2d_grad_weight_direct")
HINT_REDUCED = ("float16 and bfloat16 are given code around earlier exercises: the forward and grad-input "
                "run your m3.05 implicit GEMM, the float16 grad-weight your m2.09 split-K GEMM "
                "(TODO(m2.09a) to TODO(m2.09c)): if ./course grade m3_05 or m2_09 fails, fix it first, or run "
                "with COURSE_EARLIER_KERNELS=solution; grad-bias (and bfloat16's grad-weight) run the float32 "
                "operators, grad-bias over your TODO(m3.06c)")
HINT_BIAS_CPU = f"look at TODO(m3.06c) in {FOLDER}/autograd_conv.cpp (conv2d_grad_bias_cpu's loop)"
HINT_BIAS_CUDA = f"look at TODO(m3.06c) in {FOLDER}/autograd_conv.cu (grad_bias_kernel's reduction)"
HINT_WIRING = (f"look at TODO(m3.06d) in {FOLDER}/autograd_conv.py (conv2d_backward: which "
               "gradient from which saved tensor, needs_input_grad)")
HINT_DROPIN = f"look at TODO(m3.06e) in {FOLDER}/autograd_conv.py (Conv2d: _check_supported, forward, from_torch)"
HINT_GIVEN = (f"this is given code (the forward, the checks, the registration in {FOLDER}); if it "
              "fails, the TODOs it calls are the place to look: TODO(m3.06a) to TODO(m3.06e)")
HINT_FORWARD = ("the forward is given code (TODO(m3.06a) to TODO(m3.06e) do not change it); on the GPU "
                "its float32 path runs your m3.04 im2col + GEMM and m3.03 kernels: if ./course grade "
                "m3_04 or m3_03 fails, fix them first, or run with COURSE_EARLIER_KERNELS=solution")

_module = testing.LazyExtension(lambda: load_extension.load_module(IMPL), f"the {IMPL} extension")


def module():
    """autograd_conv.py of the version under test, bound to its operators (built on first use)."""
    return _module.get()


def ops():
    module()
    return getattr(torch.ops, NAMESPACE)


def set_tf32(enabled):
    """Both switches, explicitly: cuDNN's default is TF32 on (the references must be fp32)."""
    torch.backends.cudnn.allow_tf32 = enabled
    torch.backends.cuda.matmul.allow_tf32 = enabled


def conv_args(c):
    return list(c.stride), list(c.padding), list(c.dilation)


def make_inputs(c, seed, dtype, device, bias=True, requires_grad=False):
    x = random_tensor((c.n, c.c, c.h, c.w), seed, dtype=dtype, device=device)
    w = random_tensor((c.k, c.c, c.r, c.s), seed + 1, low=-1.0, high=1.0, dtype=dtype, device=device)
    b = random_tensor((c.k,), seed + 2, low=-1.0, high=1.0, dtype=dtype, device=device) if bias else None
    if requires_grad:
        for t in (x, w, b):
            if t is not None:
                t.requires_grad_(True)
    return x, w, b


# The references compute in float64 from the same (already rounded) inputs and round the
# result once to the inputs' dtype: a float32 result is compared with the correctly rounded
# exact sums, not with another float32 computation's rounding errors (cuDNN's float32 sums
# differ from those of any other order by as much as ours do). The casts are part of the
# graph: a float32 leaf's .grad is computed in float64 too, then rounded.
def reference_forward(c, x, w, b):
    """F.conv2d computed in float64 (TF32 cannot apply), returned in x's dtype."""
    with torch.backends.cudnn.flags(enabled=True, deterministic=True, allow_tf32=False):
        y = F.conv2d(x.double(), w.double(), None if b is None else b.double(),
                     c.stride, c.padding, c.dilation)
    return y.to(x.dtype)


def reference_grads(c, x, w, dy):
    """dx and dw from torch.nn.grad (aten.convolution_backward) in float64, in x's dtype."""
    dtype = x.dtype
    x, w, dy = x.double(), w.double(), dy.double()
    with torch.backends.cudnn.flags(enabled=True, deterministic=True, allow_tf32=False):
        dx = torch.nn.grad.conv2d_input(x.shape, w, dy, c.stride, c.padding, c.dilation)
        dw = torch.nn.grad.conv2d_weight(x, w.shape, dy, c.stride, c.padding, c.dilation)
    return dx.to(dtype), dw.to(dtype)


# One unit in the last place, relative: a float16 or bfloat16 result is a float32 sum rounded
# once, so it may round to the neighbour of the reference's rounding.
REDUCED_ULP = {torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7}


def tolerance(dtype, products):
    if dtype == torch.float64:
        return 1e-10, 1e-10
    # fp32 against the float64 reference: the output's rounding, plus 8 units of float32
    # rounding per product summed (course_harness.testing.gemm_tolerance's absolute term);
    # float16 and bfloat16 (float32 sums of the rounded inputs): one unit of their own instead.
    return REDUCED_ULP.get(dtype, 1e-5), 1e-5 + 8.0 * 2.0 ** -24 * products


def dy_for(y, seed):
    return random_tensor(tuple(y.shape), seed, dtype=y.dtype, device=y.device)


def call(function, *args, hint):
    try:
        return function(*args)
    except NotImplementedError as error:
        if "TODO(" in str(error):
            raise AssertionError(f"{str(error).splitlines()[0]}: {hint}") from None
        raise


# --- the checks, shared by the CPU and CUDA classes -------------------------------------

def check_forward(test, c, dtype, device, seed):
    x, w, b = make_inputs(c, seed, dtype, device)
    for bias in (b, None):
        actual = ops().conv2d(x, w, bias, *conv_args(c))
        rtol, atol = tolerance(dtype, c.c * c.r * c.s)
        testing.assert_close(actual, reference_forward(c, x, w, bias), rtol=rtol, atol=atol,
                             what=f"conv2d {c.name} {dtype} on {device} (bias {bias is not None})",
                             hint=HINT_FORWARD)


def check_grad_input(test, c, dtype, device, seed, op_name, hint, what=""):
    """op_name's dx against torch.nn.grad.conv2d_input in float64, over NaN-poisoned memory
    (dx's block, and one as large as the stride phases' outputs or the columns path's dX_col),
    so that an element no kernel writes fails. Returns dx."""
    x, w, _ = make_inputs(c, seed, dtype, device, bias=False)
    y = reference_forward(c, x, w, None)
    dy = dy_for(y, seed + 3)
    expected, _ = reference_grads(c, x, w, dy)
    testing.poison_allocator(expected.to(dtype))
    if device == "cuda":  # the workspaces of the CUDA paths
        testing.poison_allocator(expected.to(dtype), numel=64 * expected.numel())
    actual = getattr(ops(), op_name)(dy, x, w, *conv_args(c))
    test.assertEqual((actual.dtype, tuple(actual.shape)), (dtype, tuple(x.shape)),
                     f"{op_name} {c.name}: dx must have x's dtype and shape. {hint}")
    rtol, atol = tolerance(dtype, c.k * c.r * c.s)
    testing.assert_close(actual, expected, rtol=rtol, atol=atol,
                         what=f"{op_name} {c.name} {dtype}{what} on {device} vs torch.nn.grad.conv2d_input",
                         hint=hint)
    return actual


def check_grad_weight(test, c, dtype, device, seed, op_name, hint):
    x, w, _ = make_inputs(c, seed, dtype, device, bias=False)
    y = reference_forward(c, x, w, None)
    dy = dy_for(y, seed + 3)
    _, expected = reference_grads(c, x, w, dy)
    actual = getattr(ops(), op_name)(dy, x, w, *conv_args(c))
    rtol, atol = tolerance(dtype, c.n * y.shape[2] * y.shape[3])
    testing.assert_close(actual, expected, rtol=rtol, atol=atol,
                         what=f"{op_name} {c.name} {dtype} on {device} vs torch.nn.grad.conv2d_weight",
                         hint=hint)


def check_grad_bias(test, c, dtype, device, seed, hint):
    x, w, _ = make_inputs(c, seed, dtype, device, bias=False)
    y = reference_forward(c, x, w, None)
    dy = dy_for(y, seed + 3)
    actual = ops().conv2d_grad_bias(dy)
    rtol, atol = tolerance(dtype, dy.numel() // max(1, c.k))
    testing.assert_close(actual, dy.double().sum(dim=(0, 2, 3)).to(dy.dtype), rtol=rtol, atol=atol,
                         what=f"conv2d_grad_bias {c.name} {dtype} on {device} vs dy.sum((0, 2, 3))",
                         hint=hint)


def check_autograd(test, c, dtype, device, seed, through):
    """Gradients of sum(y * dy) through `through` ('function' or 'module') vs F.conv2d's."""
    conv = module()
    x, w, b = make_inputs(c, seed, dtype, device, requires_grad=True)
    xr, wr, br = (t.detach().clone().requires_grad_(True) for t in (x, w, b))
    y_ref = reference_forward(c, xr, wr, br)
    dy = dy_for(y_ref, seed + 3)
    with torch.backends.cudnn.flags(enabled=True, deterministic=True, allow_tf32=False):
        y_ref.backward(dy)
    if through == "function":
        y = call(conv.Conv2dFunction.apply, x, w, b, *conv_args(c), hint=HINT_WIRING)
    else:
        y = call(conv.conv2d, x, w, b, c.stride, c.padding, c.dilation, hint=HINT_WIRING)
    call(y.backward, dy, hint=HINT_WIRING)
    for name, got, want, products in (("x.grad", x.grad, xr.grad, c.k * c.r * c.s),
                                      ("weight.grad", w.grad, wr.grad, c.n * y.shape[2] * y.shape[3]),
                                      ("bias.grad", b.grad, br.grad, c.n * y.shape[2] * y.shape[3])):
        what = f"{through} {c.name} {dtype} on {device}: {name}"
        if got is None:
            test.fail(f"{what} is None: the backward returned no gradient for it. {HINT_WIRING}")
        rtol, atol = tolerance(dtype, products)
        testing.assert_close(got, want, rtol=rtol, atol=atol, what=what, hint=HINT_WIRING)


def check_reduced_precision(test, c, dtype, memory_format, seed):
    """float16 / bfloat16 on CUDA: the forward (m3.05), its output's dtype and layout, and the
    three gradient operators, against float64 references of the same rounded inputs."""
    conv = module()
    x, w, b = make_inputs(c, seed, dtype, "cuda")
    x, w = x.contiguous(memory_format=memory_format), w.contiguous(memory_format=memory_format)
    where = f"{c.name} {dtype} {str(memory_format).replace('torch.', '')}"
    for bias in (b, None):
        y = call(ops().conv2d, x, w, bias, *conv_args(c), hint=HINT_REDUCED)
        test.assertEqual(y.dtype, dtype, f"conv2d {where}: the output must keep the input's dtype. {HINT_REDUCED}")
        layout = conv.given.output_memory_format(x)
        test.assertTrue(y.is_contiguous(memory_format=layout),
                        f"conv2d {where}: the output must be {layout} like the input (strides "
                        f"{y.stride()}). {HINT_REDUCED}")
        rtol, atol = tolerance(dtype, c.c * c.r * c.s)
        testing.assert_close(y, reference_forward(c, x, w, bias), rtol=rtol, atol=atol,
                             what=f"conv2d {where} (bias {bias is not None})", hint=HINT_REDUCED)
    y = reference_forward(c, x, w, None)
    dy = dy_for(y, seed + 3).contiguous(memory_format=memory_format)
    dx_want, dw_want = reference_grads(c, x, w, dy)
    pq = c.n * y.shape[2] * y.shape[3]
    for name, got, want, products in (
            ("conv2d_grad_input", ops().conv2d_grad_input(dy, x, w, *conv_args(c)), dx_want, c.k * c.r * c.s),
            ("conv2d_grad_weight", ops().conv2d_grad_weight(dy, x, w, *conv_args(c)), dw_want, pq),
            ("conv2d_grad_bias", ops().conv2d_grad_bias(dy), dy.double().sum(dim=(0, 2, 3)).to(dtype), pq)):
        test.assertEqual(got.dtype, dtype, f"{name} {where}: the gradient must keep the dtype. {HINT_REDUCED}")
        rtol, atol = tolerance(dtype, products)
        testing.assert_close(got, want, rtol=rtol, atol=atol, what=f"{name} {where}", hint=HINT_REDUCED)


def check_gradcheck(test, c, device, seed, fast_mode):
    conv = module()
    x, w, b = make_inputs(c, seed, torch.float64, device, requires_grad=True)
    args = (c.stride, c.padding, c.dilation)
    for name, function in (("Conv2dFunction.apply", lambda x, w, b: conv.Conv2dFunction.apply(
            x, w, b, *conv_args(c))), ("conv2d", lambda x, w, b: conv.conv2d(x, w, b, *args))):
        try:
            ok = torch.autograd.gradcheck(function, (x, w, b), fast_mode=fast_mode, raise_exception=True)
        except NotImplementedError as error:
            test.fail(f"gradcheck of {name} {c.name} on {device}: {str(error).splitlines()[0]}. {HINT_WIRING}")
        except RuntimeError as error:  # gradcheck's "Jacobian mismatch for output 0 with respect to input 1"
            inputs = {"input 0": "dx: TODO(m3.06a)", "input 1": "dw: TODO(m3.06b)",
                      "input 2": "db: TODO(m3.06c)"}
            which = next((v for k, v in inputs.items() if k in str(error)), "TODO(m3.06a) to (m3.06d)")
            test.fail(f"gradcheck of {name} {c.name} on {device} failed ({which}): "
                      f"{str(error).splitlines()[0]}. {HINT_WIRING}")
        test.assertTrue(ok)


def bad_inputs(device):
    """(what, call, message pattern) for inputs every operator must refuse."""
    x = random_tensor((2, 3, 8, 8), SEED + 900, device=device)
    w = random_tensor((4, 3, 3, 3), SEED + 901, device=device)
    b = random_tensor((4,), SEED + 902, device=device)
    one = ([1, 1], [1, 1], [1, 1])
    dy = random_tensor((2, 4, 8, 8), SEED + 903, device=device)
    o = ops()
    return [
        ("conv2d(int32 input)", lambda: o.conv2d(x.int(), w.int(), None, *one), r"float32 or float64"),
        ("conv2d(complex64 input)", lambda: o.conv2d(x.to(torch.complex64), w.to(torch.complex64), None, *one),
         r"float32 or float64"),
    ] + ([
        ("conv2d(float16 input on the CPU)", lambda: o.conv2d(x.half(), w.half(), None, *one), r"CUDA only"),
    ] if device == "cpu" else [
        ("conv2d(float16 input, bfloat16 weight)", lambda: o.conv2d(x.half(), w.bfloat16(), None, *one), r"dtype"),
    ]) + [
        ("conv2d(float32 input, float64 weight)", lambda: o.conv2d(x, w.double(), None, *one), r"dtype"),
        ("conv2d(3-D input)", lambda: o.conv2d(x[0], w, None, *one), r"4-D"),
        ("conv2d(weight with C = 1: groups)", lambda: o.conv2d(x, w[:, :1].contiguous(), None, *one),
         r"groups"),
        ("conv2d(bias of 3 values)", lambda: o.conv2d(x, w, b[:3].contiguous(), *one), r"bias"),
        ("conv2d(stride 0)", lambda: o.conv2d(x, w, None, [0, 1], [1, 1], [1, 1]), r"stride"),
        ("conv2d(padding -1)", lambda: o.conv2d(x, w, None, [1, 1], [-1, 0], [1, 1]), r"padding"),
        ("conv2d(dilation of 3 values)", lambda: o.conv2d(x, w, None, [1, 1], [1, 1], [1, 1, 1]),
         r"dilation"),
        ("conv2d(filter larger than the padded image)",
         lambda: o.conv2d(x[:, :, :2, :2].contiguous(), w, None, [1, 1], [0, 0], [1, 1]), r"fit|empty"),
        ("conv2d_grad_input(grad_output of the wrong shape)",
         lambda: o.conv2d_grad_input(dy[:, :, :7].contiguous(), x, w, *one), r"shape"),
        ("conv2d_grad_weight(grad_output float64)",
         lambda: o.conv2d_grad_weight(dy.double(), x, w, *one), r"dtype"),
        ("conv2d_grad_bias(2-D grad_output)", lambda: o.conv2d_grad_bias(dy[0, 0]), r"4-D"),
    ]


def check_bad_inputs(test, device):
    for what, function, pattern in bad_inputs(device):
        with test.subTest(what=what):
            op_name = what.split("(")[0]
            try:
                function()
            except RuntimeError as error:
                message = str(error)
                test.assertTrue(op_name in message and re.search(pattern, message, re.IGNORECASE),
                                f"{what}: raised, but the message should name {op_name} and mention "
                                f"/{pattern}/; got: {message.splitlines()[0]}. {HINT_GIVEN}")
                continue
            test.fail(f"{what}: no error was raised; a bad input must never give a result. {HINT_GIVEN}")


# Small shapes for the CPU's float64 gradcheck (the numerical Jacobian runs the forward twice
# per input element): stride 1 and 2, padding 0 and 1, a non-square case, a 1x1.
GRADCHECK_CASES = [
    case("Tiny3x3", 2, 3, 5, 5, 4, 3, 3, 1, 1),
    case("TinyStride2", 2, 3, 7, 6, 4, 3, 3, 2, 0),
    case("TinyNonSquare", 1, 2, 6, 7, 3, 2, 3, stride=(2, 1), padding=(1, 0), dilation=(1, 2)),
    case("Tiny1x1", 2, 3, 4, 3, 2, 1, 1),
]
# Larger ones, checked with fast_mode (one random direction instead of the full Jacobian).
GRADCHECK_FAST_CASES = [
    case("PadLargerThanRadius", 1, 3, 6, 5, 4, 3, 3, 1, 3),
    case("Dilation2", 2, 3, 9, 10, 4, 3, 3, 1, 2, 2),
]


# --- CPU: run everywhere (CI) -----------------------------------------------------------

class RegistrationTest(unittest.TestCase):
    """The six operators exist with the lesson's schemas; the version's autograd mechanism."""

    def test_schemas(self):
        grad = ("(Tensor grad_output, Tensor input, Tensor weight, int[2] stride, int[2] padding, "
                "int[2] dilation) -> Tensor")
        expected = {
            "conv2d": "conv2d(Tensor input, Tensor weight, Tensor? bias, int[2] stride, int[2] padding, "
                      "int[2] dilation) -> Tensor",
            "conv2d_grad_input": "conv2d_grad_input" + grad,
            "conv2d_grad_input_gather": "conv2d_grad_input_gather" + grad,
            "conv2d_grad_weight": "conv2d_grad_weight" + grad,
            "conv2d_grad_weight_direct": "conv2d_grad_weight_direct" + grad,
            "conv2d_grad_bias": "conv2d_grad_bias(Tensor grad_output) -> Tensor",
        }
        for name, schema in expected.items():
            with self.subTest(op=name):
                declared = str(getattr(ops(), name).default._schema)
                self.assertEqual(declared, f"{NAMESPACE}::{schema}", HINT_GIVEN)

    def test_one_autograd_mechanism_per_version(self):
        conv = module()
        self.assertEqual(conv._plumbing.op_autograd, HAS_OP_AUTOGRAD,
                         "the operator's own autograd (register_autograd) must be used exactly where "
                         f"torch.library has it (this is PyTorch {torch.__version__}). {HINT_GIVEN}")

    def test_eager_calls_run_conv2d_function(self):
        # Eager calls take Conv2dFunction on every version (the operator's registered autograd
        # costs more CPU time per call); torch.compile traces the operator (CompileCpuTest).
        conv = module()
        c = TEST_CASES[0]
        x, w, b = make_inputs(c, SEED + 2001, torch.float64, "cpu", requires_grad=True)
        y = conv.conv2d(x, w, b, c.stride, c.padding, c.dilation)
        self.assertIn("Conv2dFunction", type(y.grad_fn).__name__,
                      f"an eager conv2d() must run Conv2dFunction. {HINT_GIVEN}")

    @skip_unless(HAS_OPCHECK, "torch.library.opcheck needs PyTorch 2.4+")
    def test_opcheck_cpu(self):
        run_opcheck(self, "cpu")


def run_opcheck(test, device):
    # opcheck tests the registration: schema vs behaviour, the fake kernels (torch.compile's
    # shapes), and, with requires_grad inputs, the autograd registered on the operator (the
    # backward runs through aot_autograd and is compared with eager). It does not check that
    # gradients are right: gradcheck does.
    o = ops()
    c = case("Opcheck", 2, 3, 7, 6, 4, 3, 3, stride=(2, 1), padding=(1, 1))
    for dtype in (torch.float32, torch.float64):
        x, w, b = make_inputs(c, SEED + 700, dtype, device)
        y = o.conv2d(x, w, b, *conv_args(c))
        dy = dy_for(y, SEED + 703)
        cases = [(o.conv2d, (x, w, b, *conv_args(c))), (o.conv2d, (x, w, None, *conv_args(c))),
                 (o.conv2d_grad_bias, (dy,))]
        cases += [(getattr(o, name), (dy, x, w, *conv_args(c)))
                  for name in ("conv2d_grad_input", "conv2d_grad_input_gather", "conv2d_grad_weight",
                               "conv2d_grad_weight_direct")]
        xg, wg, bg = make_inputs(c, SEED + 710, dtype, device, requires_grad=True)
        cases.append((o.conv2d, (xg, wg, bg, *conv_args(c))))
        for function, args in cases:
            with test.subTest(op=str(function), dtype=dtype):
                try:
                    torch.library.opcheck(function.default, args)
                except Exception as error:
                    test.fail(f"opcheck of {function} ({dtype}, {device}) failed: "
                              f"{str(error).splitlines()[0]}. With requires_grad inputs the backward "
                              f"runs: {HINT_WIRING}")


class ForwardCpuTest(unittest.TestCase):
    """The forward (given) against F.conv2d on the m3.03 shape list, float64 and float32."""

    def test_matches_f_conv2d(self):
        for i, c in enumerate(TEST_CASES):
            for dtype in (torch.float64, torch.float32):
                with self.subTest(case=c.name, dtype=dtype):
                    check_forward(self, c, dtype, "cpu", SEED + 10 * i)


class GradInputCpuTest(unittest.TestCase):
    def test_matches_conv2d_input(self):
        for i, c in enumerate(TEST_CASES):
            with self.subTest(case=c.name):
                check_grad_input(self, c, torch.float64, "cpu", SEED + 100 + 10 * i,
                                 "conv2d_grad_input", HINT_GATHER)

    def test_float32(self):
        check_grad_input(self, TEST_CASES[4], torch.float32, "cpu", SEED + 290, "conv2d_grad_input",
                         HINT_GATHER)


class GradWeightCpuTest(unittest.TestCase):
    def test_matches_conv2d_weight(self):
        for i, c in enumerate(TEST_CASES):
            with self.subTest(case=c.name):
                check_grad_weight(self, c, torch.float64, "cpu", SEED + 300 + 10 * i,
                                  "conv2d_grad_weight", HINT_WGRAD)

    def test_float32(self):
        check_grad_weight(self, TEST_CASES[3], torch.float32, "cpu", SEED + 490, "conv2d_grad_weight",
                          HINT_WGRAD)


class GradBiasCpuTest(unittest.TestCase):
    def test_matches_sum(self):
        for i, c in enumerate(TEST_CASES):
            for dtype in (torch.float64, torch.float32):
                with self.subTest(case=c.name, dtype=dtype):
                    check_grad_bias(self, c, dtype, "cpu", SEED + 500 + 10 * i, HINT_BIAS_CPU)


class AutogradCpuTest(unittest.TestCase):
    """The backward wiring: gradients through the Function and through conv2d() (the op path on
    PyTorch >= 2.4) equal F.conv2d's; needs_input_grad is honoured."""

    def test_function_and_conv2d_gradients(self):
        for i, c in enumerate(TEST_CASES[:6]):
            for through in ("function", "module"):
                with self.subTest(case=c.name, through=through):
                    check_autograd(self, c, torch.float64, "cpu", SEED + 1000 + 10 * i, through)

    def test_needs_input_grad(self):
        conv = module()
        c = TEST_CASES[1]
        x, w, _ = make_inputs(c, SEED + 1100, torch.float64, "cpu", bias=False)
        dy = dy_for(reference_forward(c, x, w, None), SEED + 1103)
        for needs in [(True, False, False), (False, True, False), (False, False, True),
                      (True, True, True)]:
            for has_bias in (True, False):
                with self.subTest(needs_input_grad=needs, has_bias=has_bias):
                    grads = call(conv.conv2d_backward, dy, x, w, has_bias, *conv_args(c), needs,
                                 hint=HINT_WIRING)
                    self.assertEqual(len(grads), 3, f"conv2d_backward must return (dx, dw, db). {HINT_WIRING}")
                    for name, grad, wanted in zip(("dx", "dw", "db"), grads,
                                                  (needs[0], needs[1], needs[2] and has_bias)):
                        if wanted:
                            self.assertIsInstance(grad, torch.Tensor,
                                                  f"{name} was asked for but is {grad!r}. {HINT_WIRING}")
                        else:
                            self.assertIsNone(grad, f"{name} was not asked for (needs_input_grad "
                                              f"{needs}, bias {has_bias}): return None and skip "
                                              f"its kernel. {HINT_WIRING}")

    def test_non_contiguous_grad_output(self):
        # sum() backward hands the backward an expanded (stride 0) gradient.
        conv = module()
        c = TEST_CASES[4]
        x, w, b = make_inputs(c, SEED + 1200, torch.float64, "cpu", requires_grad=True)
        call(lambda: conv.conv2d(x, w, b, c.stride, c.padding, c.dilation).sum().backward(), hint=HINT_WIRING)
        xr, wr, br = (t.detach().clone().requires_grad_(True) for t in (x, w, b))
        reference_forward(c, xr, wr, br).sum().backward()
        for name, got, want in (("x.grad", x.grad, xr.grad), ("weight.grad", w.grad, wr.grad),
                                ("bias.grad", b.grad, br.grad)):
            self.assertIsNotNone(got, f"{name} is None. {HINT_WIRING}")
            testing.assert_close(got, want, rtol=1e-10, atol=1e-10,
                                 what=f"sum(conv2d(...)).backward(): {name}", hint=HINT_WIRING)


class GradcheckCpuTest(unittest.TestCase):
    """torch.autograd.gradcheck in float64: the analytical gradients (your kernels) against
    finite differences of the forward."""

    def test_gradcheck(self):
        for i, c in enumerate(GRADCHECK_CASES):
            with self.subTest(case=c.name):
                check_gradcheck(self, c, "cpu", SEED + 1300 + 10 * i, fast_mode=False)

    def test_gradcheck_fast_mode(self):
        for i, c in enumerate(GRADCHECK_FAST_CASES):
            with self.subTest(case=c.name):
                check_gradcheck(self, c, "cpu", SEED + 1400 + 10 * i, fast_mode=True)

    def test_no_bias(self):
        conv = module()
        c = GRADCHECK_CASES[0]
        x, w, _ = make_inputs(c, SEED + 1500, torch.float64, "cpu", bias=False, requires_grad=True)
        try:
            ok = torch.autograd.gradcheck(lambda x, w: conv.conv2d(x, w, None, 1, 1), (x, w))
        except (NotImplementedError, RuntimeError) as error:
            self.fail(f"gradcheck without a bias: {str(error).splitlines()[0]}. {HINT_WIRING}")
        self.assertTrue(ok)


def twin_pair(**options):
    """An nn.Conv2d and a course Conv2d of the same options (the course one from the same
    seed, so the same initialisation)."""
    conv = module()
    torch.manual_seed(SEED)
    theirs = nn.Conv2d(**options)
    torch.manual_seed(SEED)
    ours = conv.Conv2d(**options)
    return theirs, ours


MODULE_OPTIONS = [
    dict(in_channels=3, out_channels=8, kernel_size=3, padding=1),
    dict(in_channels=4, out_channels=6, kernel_size=(3, 5), stride=(2, 1), padding=(1, 2),
         dilation=(1, 2), bias=False),
    dict(in_channels=2, out_channels=3, kernel_size=5, padding="same", dilation=2),
    dict(in_channels=2, out_channels=3, kernel_size=3, padding="valid"),
]


class Conv2dModuleCpuTest(unittest.TestCase):
    """Conv2d is a drop-in for nn.Conv2d: constructor, parameters, init, extra_repr, state_dict
    both ways, outputs and gradients; unsupported options raise."""

    def test_is_an_nn_conv2d_with_the_same_state(self):
        for options in MODULE_OPTIONS:
            with self.subTest(options=options):
                theirs, ours = twin_pair(**options)
                self.assertIsInstance(ours, nn.Conv2d, HINT_DROPIN)
                self.assertEqual(repr(ours).replace(type(ours).__name__, "Conv2d"), repr(theirs),
                                 f"extra_repr differs. {HINT_DROPIN}")
                self.assertEqual(list(ours.state_dict()), list(theirs.state_dict()), HINT_DROPIN)
                for key, value in theirs.state_dict().items():
                    self.assertTrue(torch.equal(ours.state_dict()[key], value),
                                    f"{key}: not nn.Conv2d's initialisation from the same seed. {HINT_DROPIN}")

    def test_forward_and_backward_match_nn_conv2d(self):
        for i, options in enumerate(MODULE_OPTIONS):
            for dtype in (torch.float64, torch.float32):
                with self.subTest(options=options, dtype=dtype):
                    theirs, ours = twin_pair(**options)
                    theirs, ours = theirs.to(dtype), ours.to(dtype)
                    x = random_tensor((2, options["in_channels"], 11, 10), SEED + 1600 + i, dtype=dtype)
                    y = call(ours, x, hint=HINT_DROPIN)
                    expected = theirs(x)
                    rtol, atol = tolerance(dtype, 200)
                    testing.assert_close(y, expected, rtol=rtol, atol=atol,
                                         what=f"Conv2d({options}) forward", hint=HINT_DROPIN)
                    dy = random_tensor(tuple(expected.shape), SEED + 1650 + i, dtype=dtype)
                    call(y.backward, dy, hint=HINT_WIRING)
                    expected.backward(dy)
                    for name in ("weight", "bias"):
                        got, want = getattr(ours, name), getattr(theirs, name)
                        if want is None:
                            continue
                        self.assertIsNotNone(got.grad, f"{name}.grad is None. {HINT_WIRING}")
                        rtol, atol = tolerance(dtype, 2 * 11 * 10)
                        testing.assert_close(got.grad, want.grad, rtol=rtol, atol=atol,
                                             what=f"Conv2d({options}) {name}.grad", hint=HINT_WIRING)

    def test_load_state_dict_both_ways(self):
        conv = module()
        theirs = nn.Conv2d(3, 5, 3, stride=2, padding=1)
        ours = conv.Conv2d(3, 5, 3, stride=2, padding=1)
        ours.load_state_dict(theirs.state_dict())  # nn.Conv2d -> Conv2d
        x = random_tensor((2, 3, 9, 9), SEED + 1700, dtype=torch.float32)
        testing.assert_close(call(ours, x, hint=HINT_DROPIN), theirs(x), rtol=1e-5, atol=1e-5,
                             what="Conv2d after load_state_dict(nn.Conv2d's)", hint=HINT_DROPIN)
        back = nn.Conv2d(3, 5, 3, stride=2, padding=1)
        with torch.no_grad():
            ours.weight.mul_(0.5)
        back.load_state_dict(ours.state_dict())  # Conv2d -> nn.Conv2d
        self.assertTrue(torch.equal(back.weight, ours.weight) and torch.equal(back.bias, ours.bias),
                        f"nn.Conv2d.load_state_dict(Conv2d's state_dict()) did not copy. {HINT_DROPIN}")

    def test_from_torch_and_convert_module(self):
        conv = module()
        # Strided, dilated and asymmetric layers, as in real networks: a from_torch that drops
        # an option gives outputs of the wrong shape or values.
        model = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2, padding=(1, 2), dilation=(1, 2)), nn.ReLU(),
                              nn.Conv2d(4, 2, 1, bias=False), nn.ReLU(),
                              nn.Conv2d(2, 3, (3, 2), stride=(1, 2), padding=1, dilation=2))
        x = random_tensor((2, 3, 8, 7), SEED + 1800)
        expected = model(x)
        one = call(conv.Conv2d.from_torch, model[0], hint=HINT_DROPIN)
        self.assertIsInstance(one, conv.Conv2d, HINT_DROPIN)
        self.assertIsNot(one.weight, model[0].weight, f"from_torch must copy the parameters. {HINT_DROPIN}")
        testing.assert_close(call(one, x, hint=HINT_DROPIN), model[0](x), rtol=1e-5, atol=1e-5,
                             what="Conv2d.from_torch(conv)(x)", hint=HINT_DROPIN)
        for option in ("stride", "padding", "dilation", "kernel_size"):
            self.assertEqual(getattr(one, option), getattr(model[0], option),
                             f"from_torch must keep the layer's {option}. {HINT_DROPIN}")
        converted = call(conv.convert_module, model, hint=HINT_DROPIN)
        self.assertTrue(all(type(m) is not nn.Conv2d for m in converted.modules()), HINT_DROPIN)
        testing.assert_close(call(converted, x, hint=HINT_DROPIN), expected, rtol=1e-5, atol=1e-5,
                             what="convert_module(model)(x)", hint=HINT_DROPIN)

    def test_unsupported_options_raise(self):
        conv = module()
        for options, word in [(dict(groups=2), "groups"), (dict(padding_mode="reflect"), "padding_mode"),
                              (dict(padding_mode="circular"), "padding_mode"),
                              (dict(kernel_size=4, padding="same"), "same"),
                              (dict(dtype=torch.complex64), "dtype"),
                              (dict(dtype=torch.float16), "dtype")]:  # on the CPU: CUDA only
            with self.subTest(options=options):
                arguments = dict(in_channels=4, out_channels=4, kernel_size=3)
                arguments.update(options)
                with self.assertRaises((NotImplementedError, ValueError),
                                       msg=f"Conv2d({options}) must raise. {HINT_DROPIN}") as raised:
                    ours = conv.Conv2d(**arguments)
                    ours(random_tensor((1, 4, 6, 6), SEED + 1900, dtype=ours.weight.dtype))
                self.assertIn(word, str(raised.exception),
                              f"the error should name {word!r}: {raised.exception}. {HINT_DROPIN}")

    def test_functional_rejects_groups_and_dtypes(self):
        conv = module()
        x = random_tensor((1, 4, 6, 6), SEED + 1950)
        w = random_tensor((4, 2, 3, 3), SEED + 1951)
        with self.assertRaisesRegex(NotImplementedError, "groups", msg=HINT_GIVEN):
            conv.conv2d(x, w, groups=2)
        with self.assertRaisesRegex(NotImplementedError, "dtype", msg=HINT_GIVEN):
            conv.conv2d(x.half(), random_tensor((4, 4, 3, 3), SEED + 1952).half())


class InputChecksCpuTest(unittest.TestCase):
    def test_bad_inputs_raise(self):
        check_bad_inputs(self, "cpu")

    def test_non_contiguous_inputs_are_accepted(self):
        c = TEST_CASES[1]
        x, w, b = make_inputs(c, SEED + 2000, torch.float64, "cpu")
        xt = x.transpose(2, 3).contiguous().transpose(2, 3)  # same values, other strides
        testing.assert_close(ops().conv2d(xt, w, b, *conv_args(c)), reference_forward(c, x, w, b),
                             rtol=1e-10, atol=1e-10, what="conv2d of a non-contiguous input", hint=HINT_GIVEN)


@skip_unless(HAS_OP_AUTOGRAD and hasattr(torch, "compile"),
             "torch.compile through the operator path needs PyTorch 2.4+ (register_autograd)")
class CompileCpuTest(unittest.TestCase):
    def test_compile_fullgraph_forward_and_backward(self):
        run_compile(self, "cpu", backend="aot_eager")  # aot_eager: no C++ code generation on the CPU


def run_compile(test, device, backend):
    conv = module()
    torch.manual_seed(SEED)
    layer = conv.Conv2d(3, 4, 3, padding=1).to(device)
    reference = nn.Conv2d(3, 4, 3, padding=1).to(device)
    reference.load_state_dict(layer.state_dict())
    x = random_tensor((2, 3, 9, 8), SEED + 2100, device=device).requires_grad_(True)
    xr = x.detach().clone().requires_grad_(True)
    torch._dynamo.reset()
    compiled = torch.compile(lambda t: torch.relu(layer(t)), fullgraph=True, backend=backend)
    try:
        y = compiled(x)
        y.sum().backward()
    except NotImplementedError as error:
        test.fail(f"torch.compile(fullgraph=True): {str(error).splitlines()[0]}. {HINT_DROPIN}")
    with torch.backends.cudnn.flags(enabled=True, deterministic=True, allow_tf32=False):
        yr = torch.relu(reference(xr))
        yr.sum().backward()
    testing.assert_close(y, yr, rtol=1e-5, atol=1e-5, what="torch.compile(fullgraph=True) forward",
                         hint=HINT_DROPIN)
    testing.assert_close(x.grad, xr.grad, rtol=1e-5, atol=1e-4, what="torch.compile backward: x.grad",
                         hint=HINT_WIRING)
    testing.assert_close(layer.weight.grad, reference.weight.grad, rtol=1e-5, atol=1e-4,
                         what="torch.compile backward: weight.grad", hint=HINT_WIRING)


# --- CUDA: on the GPU machine -----------------------------------------------------------

def cuda_wgrad_hint(op_name):
    """Where to look when a CUDA grad-weight operator is wrong: the learner's kernel or the GEMM path."""
    return HINT_WGRAD_GEMM if op_name == "conv2d_grad_weight" else HINT_WGRAD


class _CudaBase(CudaTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        set_tf32(False)


class ForwardCudaTest(_CudaBase):
    def test_matches_f_conv2d(self):
        for i, c in enumerate(TEST_CASES):
            for dtype in (torch.float32, torch.float64):
                with self.subTest(case=c.name, dtype=dtype):
                    check_forward(self, c, dtype, "cuda", SEED + 3000 + 10 * i)


class GradientsCudaTest(_CudaBase):
    """Every gradient operator, fast paths and the reference kernels, vs torch.nn.grad (TF32 off)."""

    def test_grad_input(self):
        for i, c in enumerate(TEST_CASES):
            for dtype in (torch.float32, torch.float64):
                for op_name in ("conv2d_grad_input_gather", "conv2d_grad_input"):
                    with self.subTest(case=c.name, dtype=dtype, op=op_name):
                        check_grad_input(self, c, dtype, "cuda", SEED + 3200 + 10 * i, op_name, HINT_GATHER)

    def test_grad_weight(self):
        for i, c in enumerate(TEST_CASES):
            for dtype in (torch.float32, torch.float64):
                for op_name in ("conv2d_grad_weight_direct", "conv2d_grad_weight"):
                    with self.subTest(case=c.name, dtype=dtype, op=op_name):
                        check_grad_weight(self, c, dtype, "cuda", SEED + 3400 + 10 * i, op_name,
                                          cuda_wgrad_hint(op_name))

    def test_grad_bias(self):
        for i, c in enumerate(TEST_CASES):
            for dtype in (torch.float32, torch.float64):
                with self.subTest(case=c.name, dtype=dtype):
                    check_grad_bias(self, c, dtype, "cuda", SEED + 3600 + 10 * i, HINT_BIAS_CUDA)

    def test_a_resnet_sized_layer(self):
        # Larger reductions than the shape list: N P Q = 8 * 28 * 28 products per dw element.
        c = case("C64_28_K64_3x3", 8, 64, 28, 28, 64, 3, 3, 1, 1)
        check_forward(self, c, torch.float32, "cuda", SEED + 3700)
        for op_name in ("conv2d_grad_input", "conv2d_grad_input_gather"):
            check_grad_input(self, c, torch.float32, "cuda", SEED + 3710, op_name, HINT_GATHER)
        for op_name in ("conv2d_grad_weight", "conv2d_grad_weight_direct"):
            check_grad_weight(self, c, torch.float32, "cuda", SEED + 3720, op_name, cuda_wgrad_hint(op_name))
        check_grad_bias(self, c, torch.float32, "cuda", SEED + 3730, HINT_BIAS_CUDA)

    def test_autograd_through_function_and_module(self):
        for i, c in enumerate(TEST_CASES[:6]):
            for through in ("function", "module"):
                with self.subTest(case=c.name, through=through):
                    check_autograd(self, c, torch.float32, "cuda", SEED + 3800 + 10 * i, through)

    def test_side_stream(self):
        # The kernels run on the current stream: results made on a side stream are right there.
        c = TEST_CASES[4]
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            check_grad_input(self, c, torch.float32, "cuda", SEED + 3900, "conv2d_grad_input", HINT_GATHER)
            check_grad_weight(self, c, torch.float32, "cuda", SEED + 3910, "conv2d_grad_weight",
                              HINT_WGRAD_GEMM)
        stream.synchronize()


class ReducedPrecisionCudaTest(_CudaBase):
    """float16 (any course GPU) and bfloat16: the forward on m3.05's tensor cores, the
    gradients in float32. Bfloat16CudaTest runs the same checks in bfloat16."""

    DTYPE = torch.float16
    # The shape list (C not a multiple of 8 for most: m3.05's element-by-element path), and
    # C % 8 == 0 layers for its 16-byte fast path.
    CASES = TEST_CASES + [case("C16_K24_3x3", 2, 16, 10, 9, 24, 3, 3, 1, 1),
                          case("C32_K8_Stride2", 2, 32, 11, 12, 8, 3, 3, 2, 1),
                          case("C64_28_K64_3x3", 4, 64, 28, 28, 64, 3, 3, 1, 1)]

    def test_operators(self):
        for i, c in enumerate(self.CASES):
            for memory_format in (torch.channels_last, torch.contiguous_format):
                with self.subTest(case=c.name, dtype=self.DTYPE, memory_format=memory_format):
                    check_reduced_precision(self, c, self.DTYPE, memory_format, SEED + 4000 + 10 * i)

    def test_autograd_through_function_and_module(self):
        for i, c in enumerate(self.CASES[:4] + self.CASES[-2:]):
            for through in ("function", "module"):
                with self.subTest(case=c.name, dtype=self.DTYPE, through=through):
                    check_autograd(self, c, self.DTYPE, "cuda", SEED + 4500 + 10 * i, through)

    def test_bfloat16_runs_or_says_it_needs_compute_capability_8_0(self):
        # A GPU without bfloat16 tensor cores (a T4) must refuse with the reason, never return
        # a result; one with them runs it (Bfloat16CudaTest checks the values).
        c = self.CASES[-3]
        x, w, b = make_inputs(c, SEED + 4950, torch.bfloat16, "cuda")
        x, w = x.contiguous(memory_format=torch.channels_last), w.contiguous(memory_format=torch.channels_last)
        if requirements.compute_capability_shortfall(8, 0, "bfloat16"):
            with self.assertRaisesRegex(RuntimeError, r"needs compute capability 8\.0"):
                ops().conv2d(x, w, b, *conv_args(c))
        else:
            y = call(ops().conv2d, x, w, b, *conv_args(c), hint=HINT_REDUCED)
            self.assertEqual(y.dtype, torch.bfloat16)

    def test_channels_last_module(self):
        # The drop-in as a mixed-precision model uses it: .half() (or .bfloat16()) and
        # channels_last weights and inputs; the output stays channels_last, and every parameter
        # gets a gradient of the same dtype.
        conv = module()
        dtype = self.DTYPE
        layer = conv.Conv2d(16, 24, 3, padding=1).cuda().to(dtype).to(memory_format=torch.channels_last)
        x = random_tensor((2, 16, 9, 10), SEED + 4900, dtype=dtype, device="cuda")
        x = x.contiguous(memory_format=torch.channels_last).requires_grad_(True)
        y = call(layer, x, hint=HINT_REDUCED)
        self.assertTrue(y.is_contiguous(memory_format=torch.channels_last) and y.dtype == dtype,
                        f"Conv2d(...).to({dtype}) on a channels_last input: got {y.dtype}, strides "
                        f"{y.stride()}. {HINT_REDUCED}")
        y.float().square().sum().backward()
        for name, t in (("x", x), ("weight", layer.weight), ("bias", layer.bias)):
            self.assertTrue(t.grad is not None and t.grad.dtype == dtype
                            and bool(torch.isfinite(t.grad).all()),
                            f"{name}.grad after backward: {None if t.grad is None else t.grad.dtype}. {HINT_REDUCED}")


class Bfloat16CudaTest(ReducedPrecisionCudaTest):
    """ReducedPrecisionCudaTest's checks in bfloat16, which needs an Ampere GPU or newer."""

    DTYPE = torch.bfloat16

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        requirements.require_compute_capability(8, 0, "bfloat16 mma.sync, in m3.05's forward")


class GradcheckCudaTest(_CudaBase):
    def test_gradcheck(self):
        for i, c in enumerate(GRADCHECK_CASES):
            with self.subTest(case=c.name):
                check_gradcheck(self, c, "cuda", SEED + 4000 + 10 * i, fast_mode=False)

    def test_gradcheck_fast_mode(self):
        for i, c in enumerate(GRADCHECK_FAST_CASES + TEST_CASES[:4]):
            with self.subTest(case=c.name):
                check_gradcheck(self, c, "cuda", SEED + 4100 + 10 * i, fast_mode=True)


class DeterminismCudaTest(_CudaBase):
    """Two backward runs give bitwise the same gradients: no atomics, fixed summation orders."""

    def test_backward_is_bitwise_reproducible(self):
        conv = module()
        for c in (case("C64_28_K64_3x3", 8, 64, 28, 28, 64, 3, 3, 1, 1), TEST_CASES[3], TEST_CASES[5]):
            with self.subTest(case=c.name):
                runs = []
                for _ in range(2):
                    x, w, b = make_inputs(c, SEED + 4200, torch.float32, "cuda", requires_grad=True)
                    y = call(conv.conv2d, x, w, b, c.stride, c.padding, c.dilation, hint=HINT_WIRING)
                    call(y.backward, dy_for(y, SEED + 4203), hint=HINT_WIRING)
                    runs.append((x.grad, w.grad, b.grad))
                for name, first, second in zip(("x.grad", "weight.grad", "bias.grad"), *runs):
                    self.assertTrue(torch.equal(first, second),
                                    f"{c.name}: {name} differs between two runs: a kernel sums in a "
                                    f"varying order (atomics?). {HINT_GATHER}; {HINT_WGRAD}; {HINT_BIAS_CUDA}")


class InputChecksCudaTest(_CudaBase):
    def test_bad_inputs_raise(self):
        check_bad_inputs(self, "cuda")

    def test_mixed_devices_raise(self):
        x = random_tensor((2, 3, 8, 8), SEED + 4300, device="cuda")
        w = random_tensor((4, 3, 3, 3), SEED + 4301)
        with self.assertRaisesRegex(RuntimeError, "same device", msg=HINT_GIVEN):
            ops().conv2d(x, w, None, [1, 1], [1, 1], [1, 1])


class OperatorCudaTest(_CudaBase):
    @skip_unless(HAS_OPCHECK, "torch.library.opcheck needs PyTorch 2.4+")
    def test_opcheck(self):
        run_opcheck(self, "cuda")

    @skip_unless(HAS_OP_AUTOGRAD and hasattr(torch, "compile"),
                 "torch.compile through the operator path needs PyTorch 2.4+ (register_autograd)")
    def test_compile_fullgraph(self):
        run_compile(self, "cuda", backend="inductor")


# ---- strided grad-input, the columns path, the budgets and large tensors ----
# conv2d_grad_input runs float16, bfloat16 and float32 with 16 input channels or more by stride
# phases (conv_split.h): per phase (ph, pw), a stride-1 forward of dy with the phase's taps
# (m3.04 / m3.03 in float32, m3.05's tensor cores in float16 and bfloat16), scattered into
# dx's strided places. float32 with fewer than 16 input channels runs by columns
# (conv_grad_input_cols.h): a cuBLAS GEMM into dX_col, then a col2im gather. float64 and
# conv2d_grad_input_gather keep the gather (TODO(m3.06a)). Every operator runs a batch whose
# tensors reach 2^31 elements as slices of whole images; COURSE_CONV_MAX_ELEMENTS lowers that
# limit so that small shapes take several slices, and the COURSE_CONV_*_BUDGET_BYTES variables
# shrink the workspaces so that they take several chunks.
HINT_PHASES = ("conv2d_grad_input's stride phases and float32 columns path are given code (conv_split.h, "
               "conv_grad_input_cols.h, autograd_conv_given.cuh): the phases run the forward table, float32 "
               "your m3.04 / m3.03, float16 and bfloat16 your m3.05 (if ./course grade m3_04 or m3_05 "
               "fails, fix it first, or run with COURSE_EARLIER_KERNELS=solution); TODO(m3.06a) is graded "
               "by conv2d_grad_input_gather")
HINT_COLUMNS = ("conv2d_grad_input in float32 with fewer than 16 input channels is given code "
                "(conv_grad_input_cols.h: a cuBLAS GEMM into dX_col, then col2im_gather_kernel; "
                "grad_input_by_columns in autograd_conv_given.cuh); TODO(m3.06a) is graded by "
                "conv2d_grad_input_gather")
HINT_SLICES = ("the batch slices are given code (conv_split.h, autograd_conv_given.cuh) around the same "
               "kernels: if the unsliced result is wrong too, look at TODO(m3.06a) to TODO(m3.06c) first")


def strided_cases():
    """Stride 2 and 3 (and 2 x 3), dilation 1 and 2, 1 x 1, 3 x 3 and 7 x 7 filters, padding 0 to
    3: 17 x 16 inputs, a multiple of neither stride in one axis, so the last rows of a phase
    are leftovers; C = 3, K = 5 (m3.05's element-by-element path). A 1 x 1 filter with stride
    2 or 3 leaves phases that no tap reaches (zeros); large padding starts some phases' rows
    before dy's first row."""
    cases = []
    for stride in (2, 3, (2, 3)):
        for dilation in (1, 2):
            for kernel in (1, 3, 7):
                for pad in range(4):
                    stride_name = "x".join(map(str, stride)) if isinstance(stride, tuple) else stride
                    name = f"Stride{stride_name}_Dilation{dilation}_{kernel}x{kernel}_Pad{pad}"
                    cases.append(case(name, 2, 3, 17, 16, 5, kernel, kernel, stride, pad, dilation))
    # Channels that are multiples of 8 (m3.05's 16-byte path reads dy's K as its C) and
    # asymmetric options.
    cases.append(case("C16_K32_Stride2", 2, 16, 15, 14, 32, 3, 3, 2, 1))
    cases.append(case("C8_K16_Asym", 3, 8, 13, 18, 16, 5, 3, stride=(3, 2), padding=(3, 0),
                      dilation=(1, 2)))
    # 16 input channels: float32 takes the phases there too (the cases above it takes by
    # columns, C < 16).
    for stride in (2, 3, (2, 3)):
        for dilation in (1, 2):
            stride_name = "x".join(map(str, stride)) if isinstance(stride, tuple) else stride
            cases.append(case(f"C16_Stride{stride_name}_Dilation{dilation}_3x3", 2, 16, 13, 12, 8, 3, 3,
                              stride, 1, dilation))
    cases.append(case("C16_K8_Asym", 2, 16, 13, 18, 8, 5, 3, stride=(3, 2), padding=(3, 0),
                      dilation=(1, 2)))
    return cases


class StridedGradInputCudaTest(_CudaBase):
    """conv2d_grad_input by stride phases (float32 by columns where C < 16), float32 and float16
    (Bfloat16StridedGradInputCudaTest: bfloat16), against float64 references."""

    DTYPES = (torch.float32, torch.float16)

    def test_phases_match_conv2d_input(self):
        for i, c in enumerate(strided_cases()):
            for dtype in self.DTYPES:
                with self.subTest(case=c.name, dtype=dtype):
                    check_grad_input(self, c, dtype, "cuda", SEED + 5000 + 10 * i, "conv2d_grad_input", HINT_PHASES)

    def test_channels_last_grad_output(self):
        # A channels_last dy (what a channels_last network's next layer hands back) gives
        # the same dx, NCHW.
        c = case("C16_K32_Stride2", 2, 16, 15, 14, 32, 3, 3, 2, 1)
        for dtype in self.DTYPES:
            with self.subTest(dtype=dtype):
                x, w, _ = make_inputs(c, SEED + 5600, dtype, "cuda", bias=False)
                dy = dy_for(reference_forward(c, x, w, None), SEED + 5603)
                expected = ops().conv2d_grad_input(dy, x, w, *conv_args(c))
                got = ops().conv2d_grad_input(dy.contiguous(memory_format=torch.channels_last),
                                              x.contiguous(memory_format=torch.channels_last),
                                              w.contiguous(memory_format=torch.channels_last), *conv_args(c))
                self.assertTrue(got.is_contiguous(), f"dx must be NCHW (the fake kernel's layout). {HINT_PHASES}")
                self.assertTrue(torch.equal(got, expected),
                                f"{dtype}: dx depends on dy's layout. {HINT_PHASES}")

    def test_reproducible(self):
        c = strided_cases()[-1]
        for dtype in self.DTYPES:
            x, w, _ = make_inputs(c, SEED + 5700, dtype, "cuda", bias=False)
            dy = dy_for(reference_forward(c, x, w, None), SEED + 5703)
            first = ops().conv2d_grad_input(dy, x, w, *conv_args(c))
            second = ops().conv2d_grad_input(dy, x, w, *conv_args(c))
            self.assertTrue(torch.equal(first, second),
                            f"{c.name} {dtype}: dx differs between two runs (atomics?). {HINT_PHASES}")

    def test_float64_and_gather_still_run_the_gather(self):
        # The gather (TODO(m3.06a)) stays graded: conv2d_grad_input_gather in every dtype, and
        # conv2d_grad_input in float64 for every strided case.
        for i, c in enumerate(strided_cases()[::5]):
            with self.subTest(case=c.name):
                check_grad_input(self, c, torch.float64, "cuda", SEED + 5800 + 10 * i, "conv2d_grad_input",
                                 HINT_GATHER)
                check_grad_input(self, c, torch.float32, "cuda", SEED + 5805 + 10 * i,
                                 "conv2d_grad_input_gather", HINT_GATHER)


class Bfloat16StridedGradInputCudaTest(StridedGradInputCudaTest):
    """StridedGradInputCudaTest in bfloat16: m3.05's bfloat16 tensor cores need an Ampere GPU or newer."""

    DTYPES = (torch.bfloat16,)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        requirements.require_compute_capability(8, 0, "bfloat16 mma.sync, in m3.05's forward")


@contextlib.contextmanager
def environment(name, value):
    """with environment(name, value): the variable set inside (the operators read it at every
    call), the previous value (or none) after."""
    saved = os.environ.get(name)
    os.environ[name] = str(value)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = saved


def max_elements(value):
    """with max_elements(n): COURSE_CONV_MAX_ELEMENTS=n inside."""
    return environment("COURSE_CONV_MAX_ELEMENTS", value)


def columns_cases():
    """For the float32 columns path (C < 16): C = 1, 2, 3 in turn over strides 1 to 3 (and
    2 x 3), dilations 1 to 3, 1 x 1, 3 x 3 and 7 x 7 filters, padding 0 to 3, on 17 x 16 inputs
    (odd rows, leftovers past the last output; padding past the filter's reach); then a few
    odd ones: the stem's 7 x 7 stride 2 pad 3 on odd sizes, asymmetric options, an input smaller
    than the stride, 15 channels (the last below the phases' threshold)."""
    cases = []
    for stride in (1, 2, 3, (2, 3)):
        for dilation in (1, 2, 3):
            for kernel in (1, 3, 7):
                for pad in range(4):
                    channels = 1 + len(cases) % 3
                    stride_name = "x".join(map(str, stride)) if isinstance(stride, tuple) else stride
                    name = f"C{channels}_Stride{stride_name}_Dilation{dilation}_{kernel}x{kernel}_Pad{pad}"
                    if 16 + 2 * pad < dilation * (kernel - 1) + 1:
                        continue  # the filter is larger than the padded image
                    cases.append(case(name, 2, channels, 17, 16, 5, kernel, kernel, stride, pad, dilation))
    cases.append(case("Stem_7x7_Stride2_Pad3", 3, 3, 33, 31, 16, 7, 7, 2, 3))
    cases.append(case("C2_Asym", 2, 2, 13, 18, 6, 5, 3, stride=(3, 2), padding=(3, 0), dilation=(1, 2)))
    cases.append(case("C1_Input_Below_Stride", 2, 1, 3, 2, 4, 1, 1, 3, 0))
    cases.append(case("C15_K7_Stride2", 2, 15, 11, 10, 7, 3, 3, 2, 1))
    return cases


class ColumnsGradInputCudaTest(_CudaBase):
    """conv2d_grad_input in float32 with few input channels (the columns path) against
    float64 references: over NaN-poisoned memory, in chunks of images, in batch slices, and
    bitwise reproducible."""

    def check(self, c, seed, what=""):
        return check_grad_input(self, c, torch.float32, "cuda", seed, "conv2d_grad_input", HINT_COLUMNS, what)

    def test_columns_match_conv2d_input(self):
        for i, c in enumerate(columns_cases()):
            with self.subTest(case=c.name):
                self.check(c, SEED + 7000 + 10 * i)

    def test_chunks_and_slices(self):
        # A budget of 1 byte: one image per chunk; two images' worth: chunks of two and a
        # leftover; and the batch in slices of two images (COURSE_CONV_MAX_ELEMENTS).
        c = case("Chunks_Stem", 5, 3, 21, 19, 8, 7, 7, 2, 3)
        p, q = (c.h + 6 - 7) // 2 + 1, (c.w + 6 - 7) // 2 + 1  # the output's 11 x 10
        column_bytes = 4 * c.c * c.r * c.s * p * q  # one image's dX_col, float32
        for name, value in (("COURSE_CONV_DGRAD_COLUMN_BUDGET_BYTES", 1),
                            ("COURSE_CONV_DGRAD_COLUMN_BUDGET_BYTES", 2 * column_bytes),
                            ("COURSE_CONV_MAX_ELEMENTS", 2 * max(c.c * c.h * c.w, c.k * p * q))):
            with self.subTest(variable=name, value=value), environment(name, value):
                self.check(c, SEED + 7900, f" with {name}={value}")

    def test_reproducible(self):
        c = case("Stem_7x7_Stride2_Pad3", 3, 3, 33, 31, 16, 7, 7, 2, 3)
        first = self.check(c, SEED + 7950)
        second = self.check(c, SEED + 7950)
        self.assertTrue(torch.equal(first, second), f"{c.name}: dx differs between two runs. {HINT_COLUMNS}")


BUDGET_VARIABLES = ("COURSE_CONV_IM2COL_BUDGET_BYTES", "COURSE_CONV_WGRAD_COLUMN_BUDGET_BYTES",
                    "COURSE_CONV_DGRAD_COLUMN_BUDGET_BYTES")
HINT_BUDGETS = ("the workspace budgets are given code (conv_split.h, part 3; autograd_conv_given.cuh): "
                "the same sums in chunks of images")


class WorkspaceBudgetsCudaTest(_CudaBase):
    """The COURSE_CONV_*_BUDGET_BYTES tuning knobs: any budget gives the same results (in chunks,
    down to one image per chunk; an im2col budget below one image's X_col sends the forward to
    m3.03), and a malformed value is an error naming the variable."""

    CASES = [case("Budget_C16_3x3", 5, 16, 9, 10, 24, 3, 3, 1, 1),
             case("Budget_C16_Stride2", 5, 16, 13, 12, 8, 3, 3, 2, 1),
             case("Budget_C3_7x7_Stride2", 5, 3, 15, 14, 8, 7, 7, 2, 3)]

    def test_any_budget_gives_the_same_results(self):
        for i, c in enumerate(self.CASES):
            x, w, b = make_inputs(c, SEED + 8000 + 10 * i, torch.float32, "cuda")
            y_want = reference_forward(c, x, w, b)
            dy = dy_for(y_want, SEED + 8003 + 10 * i)
            dx_want, dw_want = reference_grads(c, x, w, dy)
            pq = c.n * dy.shape[2] * dy.shape[3]
            x_col_image = 4 * c.c * c.r * c.s * dy.shape[2] * dy.shape[3]
            for name in BUDGET_VARIABLES:
                for value in (1, x_col_image, 2 * x_col_image + 4, 1 << 40):
                    with self.subTest(case=c.name, variable=name, value=value), environment(name, value):
                        o = ops()
                        results = (("conv2d", o.conv2d(x, w, b, *conv_args(c)), y_want, c.c * c.r * c.s),
                                   ("conv2d_grad_input", o.conv2d_grad_input(dy, x, w, *conv_args(c)), dx_want,
                                    c.k * c.r * c.s),
                                   ("conv2d_grad_weight", o.conv2d_grad_weight(dy, x, w, *conv_args(c)), dw_want, pq))
                        for op_name, got, want, products in results:
                            rtol, atol = tolerance(torch.float32, products)
                            testing.assert_close(got, want, rtol=rtol, atol=atol,
                                                 what=f"{op_name} {c.name} with {name}={value}", hint=HINT_BUDGETS)

    def test_a_malformed_budget_is_an_error(self):
        c = self.CASES[2]  # C = 3: grad-input by columns reads the dgrad budget
        x, w, b = make_inputs(c, SEED + 8100, torch.float32, "cuda")
        dy = dy_for(reference_forward(c, x, w, None), SEED + 8103)
        readers = {"COURSE_CONV_IM2COL_BUDGET_BYTES": lambda: ops().conv2d(x, w, b, *conv_args(c)),
                   "COURSE_CONV_WGRAD_COLUMN_BUDGET_BYTES": lambda: ops().conv2d_grad_weight(dy, x, w, *conv_args(c)),
                   "COURSE_CONV_DGRAD_COLUMN_BUDGET_BYTES": lambda: ops().conv2d_grad_input(dy, x, w, *conv_args(c))}
        for name, function in readers.items():
            for value in ("0", "lots", "-5", "32MiB", "1099511627777", "99999999999999999999"):
                with self.subTest(variable=name, value=value), environment(name, value):
                    with self.assertRaisesRegex(RuntimeError, f"{name} must be a whole number", msg=HINT_BUDGETS):
                        function()


def run_all_operators(c, x, w, b, dy):
    o = ops()
    args = conv_args(c)
    return {"conv2d": o.conv2d(x, w, b, *args),
            "conv2d_grad_input": o.conv2d_grad_input(dy, x, w, *args),
            "conv2d_grad_input_gather": o.conv2d_grad_input_gather(dy, x, w, *args),
            "conv2d_grad_weight": o.conv2d_grad_weight(dy, x, w, *args),
            "conv2d_grad_weight_direct": o.conv2d_grad_weight_direct(dy, x, w, *args),
            "conv2d_grad_bias": o.conv2d_grad_bias(dy)}


# Elementwise operators (one thread per output element, or per dx row of a phase): a slice
# changes no sum, so the results are bitwise those of the whole batch. The others (a GEMM's
# reduction over the batch, or its columns) add in another order: within tolerance.
BITWISE_IN_SLICES = {torch.float64: ("conv2d", "conv2d_grad_input", "conv2d_grad_input_gather"),
                     torch.float32: ("conv2d_grad_input_gather",)}


class BatchSlicesCudaTest(_CudaBase):
    """Every operator with COURSE_CONV_MAX_ELEMENTS set low, so that the batch runs in slices,
    against the same operator on the whole batch and the float64 reference."""

    CASES = [case("Slices_Stride2", 7, 5, 13, 12, 6, 3, 3, 2, 1),
             case("Slices_1x1", 5, 16, 9, 10, 8, 1, 1),
             case("Slices_Dilated", 6, 8, 11, 11, 16, 3, 3, 1, 2, 2),
             case("Slices_C16_Stride2", 5, 16, 11, 12, 8, 3, 3, 2, 1)]

    def check(self, c, dtype, seed, limit):
        x, w, b = make_inputs(c, seed, dtype, "cuda")
        dy = dy_for(reference_forward(c, x, w, None), seed + 3)
        whole = run_all_operators(c, x, w, b, dy)
        with max_elements(limit):
            sliced = run_all_operators(c, x, w, b, dy)
        dx_want, dw_want = reference_grads(c, x, w, dy)
        references = {"conv2d": reference_forward(c, x, w, b), "conv2d_grad_input": dx_want,
                      "conv2d_grad_input_gather": dx_want, "conv2d_grad_weight": dw_want,
                      "conv2d_grad_weight_direct": dw_want,
                      "conv2d_grad_bias": dy.double().sum(dim=(0, 2, 3)).to(dtype)}
        pq = c.n * dy.shape[2] * dy.shape[3]
        products = {"conv2d": c.c * c.r * c.s, "conv2d_grad_input": c.k * c.r * c.s,
                    "conv2d_grad_input_gather": c.k * c.r * c.s, "conv2d_grad_weight": pq,
                    "conv2d_grad_weight_direct": pq, "conv2d_grad_bias": pq}
        for name, got in sliced.items():
            what = f"{name} {c.name} {dtype} in slices (COURSE_CONV_MAX_ELEMENTS={limit})"
            self.assertEqual(got.shape, whole[name].shape, what)
            rtol, atol = tolerance(dtype, products[name])
            if name in BITWISE_IN_SLICES.get(dtype, ()):
                self.assertTrue(torch.equal(got, whole[name]),
                                f"{what}: differs from the whole batch's result. {HINT_SLICES}")
            else:
                testing.assert_close(got, whole[name], rtol=rtol, atol=atol,
                                     what=f"{what} vs the whole batch", hint=HINT_SLICES)
            testing.assert_close(got, references[name], rtol=rtol, atol=atol,
                                 what=f"{what} vs the float64 reference", hint=HINT_SLICES)

    def test_slices_match_the_whole_batch(self):
        for i, c in enumerate(self.CASES):
            # Room for two images in the largest tensor (and in the phases' outputs).
            per_image = max(c.c * c.h * c.w, c.k * c.h * c.w)
            for dtype in (torch.float64, torch.float32, torch.float16):
                for limit in (per_image * 2 + 1, per_image * 4):
                    with self.subTest(case=c.name, dtype=dtype, limit=limit):
                        self.check(c, dtype, SEED + 6000 + 10 * i, limit)

    def test_one_image_over_the_limit_is_refused(self):
        c = self.CASES[0]
        x, w, b = make_inputs(c, SEED + 6100, torch.float32, "cuda")
        dy = dy_for(reference_forward(c, x, w, None), SEED + 6103)
        with max_elements(c.c * c.h * c.w - 1):
            for name, function in (("conv2d", lambda: ops().conv2d(x, w, b, *conv_args(c))),
                                   ("conv2d_grad_input", lambda: ops().conv2d_grad_input(dy, x, w, *conv_args(c))),
                                   ("conv2d_grad_weight", lambda: ops().conv2d_grad_weight(dy, x, w, *conv_args(c)))):
                with self.subTest(op=name):
                    with self.assertRaisesRegex(RuntimeError, f"{name}.*one image", msg=HINT_SLICES):
                        function()

    def test_a_malformed_limit_is_an_error(self):
        c = self.CASES[0]
        x, w, b = make_inputs(c, SEED + 6200, torch.float32, "cuda")
        for value in ("0", "lots", "-5", "4294967296"):
            with self.subTest(value=value), max_elements(value):
                with self.assertRaisesRegex(RuntimeError, "COURSE_CONV_MAX_ELEMENTS must be", msg=HINT_SLICES):
                    ops().conv2d(x, w, b, *conv_args(c))


def free_gpu_bytes():
    free, _ = torch.cuda.mem_get_info()
    return free


class LargeTensorCudaTest(_CudaBase):
    """N16 C64 1024 x 1024 K128 1 x 1 in float16: y and dy have 2^31 elements, one more than
    int indexing reaches, so every operator runs the batch in two slices. The references are
    float64 sums over a few images, on both sides of the slice boundary (images 0, 14, 15), and
    dw over the whole batch."""

    NEEDED_BYTES = 40 * 2 ** 30  # x, y, dy, dx, float32 slices and the float64 references

    def test_n16_c64_1024_k128_1x1(self):
        free = free_gpu_bytes()
        if free < self.NEEDED_BYTES:
            self.skipTest(f"needs {self.NEEDED_BYTES / 2 ** 30:.0f} GiB of free GPU memory, this GPU has "
                          f"{free / 2 ** 30:.1f} GiB free")
        n, c_in, size, k = 16, 64, 1024, 128
        c = case("N16_C64_1024_K128_1x1", n, c_in, size, size, k, 1, 1)
        generator = torch.Generator(device="cuda").manual_seed(SEED + 6300)
        x = torch.rand((n, c_in, size, size), generator=generator, device="cuda", dtype=torch.float16) * 2 - 1
        w = torch.rand((k, c_in, 1, 1), generator=generator, device="cuda", dtype=torch.float16) * 2 - 1
        dy = torch.rand((n, k, size, size), generator=generator, device="cuda", dtype=torch.float16) * 2 - 1
        self.assertGreaterEqual(dy.numel(), 2 ** 31)
        w2 = w.double().view(k, c_in)
        images = (0, 14, 15)  # 15 images fit in one slice: both sides of the boundary
        y = ops().conv2d(x, w, None, *conv_args(c))
        for i in images:
            want = (w2 @ x[i].double().view(c_in, -1)).view(k, size, size).to(torch.float16)
            rtol, atol = tolerance(torch.float16, c_in)
            testing.assert_close(y[i], want, rtol=rtol, atol=atol, what=f"conv2d {c.name}: image {i}",
                                 hint=HINT_SLICES)
        del y
        dx = ops().conv2d_grad_input(dy, x, w, *conv_args(c))
        for i in images:
            want = (w2.t() @ dy[i].double().view(k, -1)).view(c_in, size, size).to(torch.float16)
            rtol, atol = tolerance(torch.float16, k)
            testing.assert_close(dx[i], want, rtol=rtol, atol=atol,
                                 what=f"conv2d_grad_input {c.name}: image {i}", hint=HINT_SLICES)
        del dx
        dw = ops().conv2d_grad_weight(dy, x, w, *conv_args(c))
        want = torch.zeros((k, c_in), dtype=torch.float64, device="cuda")
        for i in range(n):
            want += dy[i].double().view(k, -1) @ x[i].double().view(c_in, -1).t()
        rtol, atol = tolerance(torch.float16, n * size * size)
        testing.assert_close(dw.view(k, c_in), want.to(torch.float16), rtol=rtol, atol=atol,
                             what=f"conv2d_grad_weight {c.name}", hint=HINT_SLICES)


class LargeTensorChecksCpuTest(unittest.TestCase):
    """The size checks, on the CPU with expanded (stride-0) tensors that take no memory: one
    image of 2^31 elements or more is refused with the reason; a larger batch of smaller
    images is not refused for its size (the grad_output's wrong shape is what stops it here,
    before any work)."""

    def test_one_image_of_2_31_elements_is_refused(self):
        x = torch.zeros(1, 1, 1, 1).expand(1, 2 ** 15, 2 ** 8, 2 ** 8)  # 2^31 elements, no memory
        w = torch.zeros(1, 2 ** 15, 1, 1)
        with self.assertRaisesRegex(RuntimeError, r"conv2d.*2\^31", msg=HINT_GIVEN):
            ops().conv2d(x, w, None, [1, 1], [0, 0], [1, 1])

    def test_a_large_batch_is_not_refused_for_its_size(self):
        x = torch.zeros(1, 1, 1, 1).expand(2 ** 15, 2 ** 8, 2 ** 4, 2 ** 4)  # 2^31 elements
        w = torch.zeros(1, 2 ** 8, 1, 1)
        dy = torch.zeros(1, 1, 1, 1)  # not [2^15, 1, 16, 16]: refused for its shape
        with self.assertRaises(RuntimeError, msg=HINT_GIVEN) as raised:
            ops().conv2d_grad_input(dy, x, w, [1, 1], [0, 0], [1, 1])
        message = str(raised.exception)
        self.assertIn("shape", message, HINT_GIVEN)
        self.assertNotIn("2^31", message, f"a batch of small images must not be refused for its size. {HINT_GIVEN}")


# ---- the float16 grad-weight on the tensor cores ----
# conv2d_grad_weight in float16 is dW[K x (R S C)] = dYt[K x N P Q] * X_col[N P Q x (R S C)] on
# m2.09's split-K GEMM (conv_grad_weight_tc.h): X_col from x in NHWC (x itself for a 1 x 1
# filter with stride 1 and no padding), dYt transposed from dy (NHWC) or copied (NCHW), both
# padded with zeros to multiples of 8, in chunks of whole images added one after another.
# bfloat16 keeps the float32 operators (m2.09 has no bfloat16 GEMM).
HINT_WGRAD_TC = ("the float16 grad-weight is given code (conv_grad_weight_tc.h, autograd_conv_given.cuh) "
                 "over your m2.09 split-K GEMM, TODO(m2.09a) to TODO(m2.09c) in month2/09_gemm_shapes: if "
                 "./course grade m2_09 fails, fix it first, or run with COURSE_EARLIER_KERNELS=solution")
LAYOUTS = {"nchw": torch.contiguous_format, "nhwc": torch.channels_last}


def poison_grad_weight_buffers(c):
    """NaN in freed blocks the size of the float16 grad-weight's X_col, dYt and float32 dW
    (the padding rows and columns included), so that an element no kernel writes is NaN."""
    p, q = output_size(c)
    rows = -(-c.n * p * q // 8) * 8
    columns = -(-c.c * c.r * c.s // 8) * 8
    junk = [torch.full((n,), float("nan"), dtype=dtype, device="cuda")
            for n, dtype in ((rows * columns, torch.float16), (c.k * rows, torch.float16),
                             (c.k * columns, torch.float32))]
    del junk


def fp16_grad_weight(c, seed, x_layout="nhwc", dy_layout="nhwc"):
    """(dw, the float64 reference rounded to float16) for case c, x and dy in the layouts named."""
    x, w, _ = make_inputs(c, seed, torch.float16, "cuda", bias=False)
    dy = dy_for(reference_forward(c, x, w, None), seed + 3)
    _, expected = reference_grads(c, x, w, dy)
    poison_grad_weight_buffers(c)
    dw = ops().conv2d_grad_weight(dy.contiguous(memory_format=LAYOUTS[dy_layout]),
                                  x.contiguous(memory_format=LAYOUTS[x_layout]), w, *conv_args(c))
    return dw, expected


class Float16GradWeightCudaTest(_CudaBase):
    """conv2d_grad_weight in float16 on the tensor cores, against float64 references: the shapes
    that take each of its paths, every layout of x and dy, chunks of images, batch slices, and
    bitwise reproducibility."""

    CASES = [
        # C = 3 (one half per load): 147 columns, padded to 152; a 7 x 7 stride-2 stem
        case("Stem_C3_K64_7x7_Stride2", 2, 3, 30, 28, 64, 7, 7, 2, 3),
        # 1 x 1 with stride 2: X_col is a copy of every other pixel
        case("C16_K8_1x1_Stride2", 3, 16, 11, 10, 8, 1, 1, 2, 0),
        # 1 x 1, stride 1, 96 pixels: X_col is x itself
        case("C16_K24_1x1", 2, 16, 8, 6, 24, 1, 1),
        # the same with 105 pixels, not a multiple of 8: X_col is a padded copy
        case("C24_K40_1x1_OddPixels", 3, 24, 7, 5, 40, 1, 1),
        # K = 40: the transpose's 32 x 32 tiles overhang dy's channels
        case("C8_K40_3x3_Stride2", 2, 8, 9, 13, 40, 3, 3, 2, 1),
        # C % 4 == 0 (8-byte loads), dilation 2
        case("C12_K20_Dilation2", 2, 12, 13, 11, 20, 3, 3, 1, 2, 2),
        # C % 2 == 0 (4-byte loads), R != S, asymmetric stride, padding and dilation, K = 70
        case("C6_K70_5x3_Asym", 3, 6, 14, 17, 70, 5, 3, stride=(2, 1), padding=(2, 0), dilation=(1, 2)),
        # 16-byte loads, and a reduction long enough for m2.09 to split it
        case("C64_28_K64_3x3", 4, 64, 28, 28, 64, 3, 3, 1, 1),
    ]

    def check(self, c, seed, x_layout, dy_layout):
        dw, expected = fp16_grad_weight(c, seed, x_layout, dy_layout)
        what = f"conv2d_grad_weight {c.name} float16, x {x_layout}, dy {dy_layout}"
        self.assertEqual((dw.dtype, tuple(dw.shape)), (torch.float16, (c.k, c.c, c.r, c.s)),
                         f"{what}: dw must be float16 [K, C, R, S]. {HINT_WGRAD_TC}")
        self.assertTrue(dw.is_contiguous(), f"{what}: dw must be contiguous (the fake kernel's layout), "
                        f"got strides {dw.stride()}. {HINT_WGRAD_TC}")
        p, q = output_size(c)
        rtol, atol = tolerance(torch.float16, c.n * p * q)
        testing.assert_close(dw, expected, rtol=rtol, atol=atol,
                             what=f"{what} vs torch.nn.grad.conv2d_weight", hint=HINT_WGRAD_TC)
        return dw

    def test_matches_conv2d_weight(self):
        for i, c in enumerate(self.CASES):
            for x_layout, dy_layout in (("nhwc", "nhwc"), ("nchw", "nchw")):
                with self.subTest(case=c.name, x=x_layout, dy=dy_layout):
                    self.check(c, SEED + 7000 + 10 * i, x_layout, dy_layout)

    def test_every_layout_gives_the_same_bits(self):
        # The GEMM's operands are the same whatever the layouts (x is read in NHWC, dy as a
        # [K x N P Q] matrix): so is every bit of dw.
        for i, c in enumerate(self.CASES[:3] + self.CASES[-1:]):
            with self.subTest(case=c.name):
                results = {(xl, dl): self.check(c, SEED + 7100 + 10 * i, xl, dl)
                           for xl in LAYOUTS for dl in LAYOUTS}
                first = results[("nhwc", "nhwc")]
                for layouts, dw in results.items():
                    self.assertTrue(torch.equal(dw, first), f"{c.name}: dw with x {layouts[0]} and dy "
                                    f"{layouts[1]} differs from x nhwc, dy nhwc. {HINT_WGRAD_TC}")

    def test_bitwise_reproducible(self):
        for i, c in enumerate((self.CASES[0], self.CASES[-1])):
            with self.subTest(case=c.name):
                first, _ = fp16_grad_weight(c, SEED + 7200 + 10 * i)
                second, _ = fp16_grad_weight(c, SEED + 7200 + 10 * i)
                self.assertTrue(torch.equal(first, second),
                                f"{c.name}: float16 dw differs between two runs (atomics?). {HINT_WGRAD_TC}")

    def test_chunks_of_images(self):
        # One image's X_col (52 x 52 pixels by 7 x 7 x 512 columns: 68 million halves) takes more
        # than half of the chunk budget (2^27 halves of X_col and dYt): each of the 3 images is a
        # chunk of its own, a GEMM adding into dw after the first.
        c = case("Chunks_C512_52_K8_7x7", 3, 512, 52, 52, 8, 7, 7, 1, 3)
        for layouts in (("nhwc", "nhwc"), ("nchw", "nchw")):
            with self.subTest(x=layouts[0], dy=layouts[1]):
                self.check(c, SEED + 7300, *layouts)

    def test_batch_slices(self):
        # COURSE_CONV_MAX_ELEMENTS low: the batch runs in slices of 2 images, each adding into
        # dw; in NHWC (the slices are views into x and dy) and NCHW. In the 1 x 1 case, X_col is
        # x itself for the slices of 2 images (8 pixels) and a padded copy for the last one (4).
        for i, c in enumerate((case("Slices_C16_K24_3x3", 7, 16, 9, 10, 24, 3, 3, 1, 1),
                               case("Slices_C8_K8_1x1", 5, 8, 2, 2, 8, 1, 1))):
            per_image = max(c.c, c.k) * c.h * c.w
            for layouts in (("nhwc", "nhwc"), ("nchw", "nhwc"), ("nchw", "nchw")):
                with self.subTest(case=c.name, x=layouts[0], dy=layouts[1]), max_elements(2 * per_image):
                    self.check(c, SEED + 7400 + 10 * i, *layouts)


# ---- autocast and double backward ----
# Both live in the given conv2d() (autograd_conv_given.py): under torch.autocast("cuda") it runs
# in the autocast dtype as nn.Conv2d does; a gradient of its gradients (create_graph=True, then
# backward again) raises a RuntimeError that names the limitation, never a silent zero.

import warnings  # noqa: E402

import autograd_conv_given  # noqa: E402  (the given code both versions import)

DOUBLE_BACKWARD = r"double backward \(create_graph=True\) of the course's conv2d is not supported"
HINT_SECOND_ORDER = ("the second-order guard is given code (autograd_conv_given.py: guard_second_order, "
                     "around your conv2d_backward); if it does not fire, look at TODO(m3.06d): "
                     "conv2d_backward must return its three gradients (dx, dw, db)")
HINT_AUTOCAST = ("autocast is given code (autograd_conv_given.py: conv2d() casts the CUDA inputs); "
                 "through Conv2d it needs your TODO(m3.06e) forward to call conv2d(), and the "
                 "gradients your TODO(m3.06d)")
# The warning PyTorch >= 2.4 gives when a backward runs an operator that has no autograd under
# create_graph=True (and then takes its gradient as zero): the guard must make it impossible.
NO_AUTOGRAD_WARNING = "autograd kernel was not registered"


@contextlib.contextmanager
def cuda_autocast_state(dtype):
    """The thread's CUDA autocast switched on in `dtype`, as inside torch.autocast("cuda", dtype),
    also where PyTorch has no CUDA (torch.autocast("cuda") switches itself off there)."""
    if hasattr(torch, "get_autocast_dtype"):  # PyTorch >= 2.4: per device type
        saved = (torch.is_autocast_enabled("cuda"), torch.get_autocast_dtype("cuda"))

        def set_state(enabled, to):
            torch.set_autocast_enabled("cuda", enabled)
            torch.set_autocast_dtype("cuda", to)
    else:  # 1.13 to 2.3: the CUDA-only switches
        saved = (torch.is_autocast_enabled(), torch.get_autocast_gpu_dtype())

        def set_state(enabled, to):
            torch.set_autocast_enabled(enabled)
            torch.set_autocast_gpu_dtype(to)
    set_state(True, dtype)
    try:
        yield
    finally:
        set_state(*saved)


def conv_entries(conv, c):
    """(name, f(x, w, b) -> (y, (x, weight, bias))) for each way into the convolution: the
    Function on every version, conv2d() (the operator's own autograd on PyTorch >= 2.4), and
    the Conv2d module (TODO(m3.06e)), whose parameters (copies of w and b) are the leaves."""
    def through_function(x, w, b):
        return conv.Conv2dFunction.apply(x, w, b, *conv_args(c)), (x, w, b)

    def through_conv2d(x, w, b):
        return conv.conv2d(x, w, b, c.stride, c.padding, c.dilation), (x, w, b)

    def through_module(x, w, b):
        layer = conv.Conv2d(c.c, c.k, (c.r, c.s), stride=c.stride, padding=c.padding,
                            dilation=c.dilation, bias=b is not None, device=x.device, dtype=x.dtype)
        with torch.no_grad():
            layer.weight.copy_(w)
            if b is not None:
                layer.bias.copy_(b)
        return layer(x), (x, layer.weight, layer.bias)

    return [("Conv2dFunction.apply", through_function), ("conv2d", through_conv2d),
            ("Conv2d", through_module)]


def check_double_backward(test, c, dtype, device, seed):
    """For each entry: first-order gradients under create_graph=True are the usual ones (and
    no operator runs without autograd); any gradient of them raises, naming the limitation."""
    conv = module()
    for name, forward in conv_entries(conv, c):
        hint = HINT_DROPIN if name == "Conv2d" else HINT_WIRING
        with test.subTest(entry=name, case=c.name, dtype=dtype, device=device):
            x, w, b = make_inputs(c, seed, dtype, device, requires_grad=True)
            y, leaves = call(forward, x, w, b, hint=hint)
            dy = dy_for(y, seed + 3)
            plain = call(torch.autograd.grad, y, leaves, dy, True, hint=HINT_WIRING)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                graphs = call(lambda: torch.autograd.grad(y, leaves, dy, create_graph=True),
                              hint=HINT_WIRING)
            stray = [str(m.message).splitlines()[0] for m in caught if NO_AUTOGRAD_WARNING in str(m.message)]
            test.assertFalse(stray, f"{name}: a gradient operator ran under create_graph=True without "
                                    f"autograd: {stray}. {HINT_SECOND_ORDER}")
            for what, got, want in zip(("dx", "dw", "db"), graphs, plain):
                test.assertTrue(torch.equal(got, want), f"{name}: {what} under create_graph=True differs "
                                                        f"from the plain backward's. {HINT_SECOND_ORDER}")
            # The gradient penalty (WGAN-GP's |dL/dx|^2) needs d(dx)/dW: PyTorch >= 2.4 took it as
            # zero (with a warning) before the guard. Each gradient, towards a leaf it depends on.
            x, weight, _ = leaves
            for what, grad, towards in (("dx", graphs[0], weight), ("dw", graphs[1], x),
                                        ("db", graphs[2], weight)):
                with test.assertRaisesRegex(RuntimeError, DOUBLE_BACKWARD,
                                            msg=f"{name}: the gradient of {what}. {HINT_SECOND_ORDER}"):
                    torch.autograd.grad(grad.square().sum(), towards, allow_unused=True)
            # The same where the upstream gradient itself requires grad (loss = sum(y^2)), and
            # through .backward() as a training loop calls it.
            y, leaves = forward(x.detach().requires_grad_(True), w, b)
            dx, = torch.autograd.grad(y.square().sum(), leaves[0], create_graph=True)
            with test.assertRaisesRegex(RuntimeError, DOUBLE_BACKWARD,
                                        msg=f"{name}: dx of sum(y^2), then backward. {HINT_SECOND_ORDER}"):
                dx.square().sum().backward()


class DoubleBackwardCpuTest(unittest.TestCase):
    """create_graph=True gives the usual gradients; differentiating them raises, on the
    Function, the operator's own autograd (PyTorch >= 2.4) and the Conv2d module."""

    def test_guard_passes_gradients_and_raises_on_their_gradient(self):
        # The given guard alone, no operator involved.
        grad = random_tensor((3, 4), SEED + 7000)
        depends = random_tensor((3, 4), SEED + 7001).requires_grad_(True)
        with torch.no_grad():  # a backward without create_graph: nothing to guard
            self.assertIs(autograd_conv_given.guard_second_order((grad, None), (depends,))[0], grad,
                          f"grad mode off (no create_graph): nothing to guard. {HINT_SECOND_ORDER}")
        self.assertIs(autograd_conv_given.guard_second_order((grad, None), (grad,))[0], grad,
                      f"nothing requires grad: nothing to guard. {HINT_SECOND_ORDER}")
        guarded, none = autograd_conv_given.guard_second_order((grad, None), (depends,))
        self.assertIsNone(none, f"a gradient not asked for stays None. {HINT_SECOND_ORDER}")
        self.assertTrue(torch.equal(guarded, grad) and guarded.requires_grad,
                        f"the guarded gradient keeps its values and carries the guard. {HINT_SECOND_ORDER}")
        with self.assertRaisesRegex(RuntimeError, DOUBLE_BACKWARD, msg=HINT_SECOND_ORDER):
            guarded.sum().backward()

    def test_conv2d_function_and_module(self):
        for i, c in enumerate([GRADCHECK_CASES[0], GRADCHECK_CASES[2]]):
            check_double_backward(self, c, torch.float64, "cpu", SEED + 7100 + 10 * i)

    def test_float32(self):
        check_double_backward(self, TEST_CASES[4], torch.float32, "cpu", SEED + 7200)


class AutocastCpuTest(unittest.TestCase):
    """What the autocast rule does without a GPU: it reads this PyTorch's CUDA autocast state,
    and casts CUDA tensors only (the CPU kernels are float32 and float64)."""

    def test_reads_the_cuda_autocast_state(self):
        self.assertIsNone(autograd_conv_given.cuda_autocast_dtype(), f"autocast is off here. {HINT_AUTOCAST}")
        for dtype in (torch.float16, torch.bfloat16):
            with self.subTest(dtype=dtype), cuda_autocast_state(dtype):
                self.assertEqual(autograd_conv_given.cuda_autocast_dtype(), dtype, HINT_AUTOCAST)
        self.assertIsNone(autograd_conv_given.cuda_autocast_dtype(), f"autocast is off again. {HINT_AUTOCAST}")
        with torch.autocast("cpu", dtype=torch.bfloat16):
            self.assertIsNone(autograd_conv_given.cuda_autocast_dtype(),
                              f"CPU autocast is not CUDA autocast. {HINT_AUTOCAST}")

    def test_cpu_tensors_stay_in_their_dtype(self):
        conv = module()
        c = TEST_CASES[4]
        x, w, b = make_inputs(c, SEED + 7300, torch.float32, "cpu")
        expected = conv.conv2d(x, w, b, c.stride, c.padding, c.dilation)
        for what, state in (("torch.autocast('cpu', bfloat16)", torch.autocast("cpu", dtype=torch.bfloat16)),
                            ("CUDA autocast in float16", cuda_autocast_state(torch.float16))):
            with self.subTest(autocast=what):
                with state:
                    y = conv.conv2d(x, w, b, c.stride, c.padding, c.dilation)
                self.assertEqual(y.dtype, torch.float32, f"{what}: CPU tensors are not cast. {HINT_AUTOCAST}")
                self.assertTrue(torch.equal(y, expected), f"{what}: the result changed. {HINT_AUTOCAST}")

    def test_module_under_cpu_autocast(self):
        conv = module()
        torch.manual_seed(SEED)
        layer = conv.Conv2d(3, 4, 3, padding=1)
        x = random_tensor((2, 3, 7, 6), SEED + 7400)
        expected = call(layer, x, hint=HINT_DROPIN)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = call(layer, x, hint=HINT_DROPIN)
        self.assertTrue(y.dtype == torch.float32 and torch.equal(y, expected),
                        f"Conv2d under CPU autocast: {y.dtype}. {HINT_AUTOCAST}")


def check_autocast(test, c, dtype, seed, through):
    """Under torch.autocast("cuda", dtype), fp32 inputs and parameters: the output is in dtype
    like F.conv2d's, bitwise the explicit dtype call's, and exact within one rounding against a
    float64 reference of the rounded inputs; after backward the fp32 leaves hold fp32 gradients.
    (No value comparison with F.conv2d: cuDNN rounds its sum to 16 bits before it adds the bias,
    so its output can be further from the exact result than the one-rounding tolerance.)"""
    conv = module()
    x, w, b = make_inputs(c, seed, torch.float32, "cuda", requires_grad=True)
    forward = dict(conv_entries(conv, c))["Conv2d" if through == "module" else "conv2d"]
    where = f"{through} {c.name} under autocast({dtype})"
    with torch.autocast("cuda", dtype=dtype):
        y, leaves = call(forward, x, w, b, hint=HINT_DROPIN if through == "module" else HINT_AUTOCAST)
        with torch.backends.cudnn.flags(enabled=True, deterministic=True, allow_tf32=False):
            theirs = F.conv2d(x, w, b, c.stride, c.padding, c.dilation)
    test.assertEqual(y.dtype, theirs.dtype, f"{where}: F.conv2d gives {theirs.dtype}. {HINT_AUTOCAST}")
    rounded = [t.detach().to(dtype) for t in (x, w, b)]
    explicit = conv.conv2d(*rounded, c.stride, c.padding, c.dilation)
    test.assertTrue(torch.equal(y, explicit), f"{where}: not the result of the same call on the inputs "
                                              f"cast to {dtype}. {HINT_AUTOCAST}")
    rtol, atol = tolerance(dtype, c.c * c.r * c.s)
    testing.assert_close(y, reference_forward(c, *rounded), rtol=rtol, atol=atol,
                         what=f"{where}: forward vs float64", hint=HINT_AUTOCAST)
    dy = dy_for(y, seed + 3)
    call(y.backward, dy, hint=HINT_WIRING)
    dx_want, dw_want = reference_grads(c, rounded[0], rounded[1], dy)
    pq = c.n * y.shape[2] * y.shape[3]
    for name, leaf, want, products in (("x.grad", leaves[0], dx_want, c.k * c.r * c.s),
                                       ("weight.grad", leaves[1], dw_want, pq),
                                       ("bias.grad", leaves[2], dy.double().sum(dim=(0, 2, 3)).to(dtype), pq)):
        if leaf.grad is None:
            test.fail(f"{where}: {name} is None. {HINT_WIRING}")
        test.assertEqual(leaf.grad.dtype, torch.float32,
                         f"{where}: {name} must be float32 like its leaf (autograd casts it back). "
                         f"{HINT_AUTOCAST}")
        rtol, atol = tolerance(dtype, products)
        testing.assert_close(leaf.grad, want.float(), rtol=rtol, atol=atol, what=f"{where}: {name}",
                             hint=HINT_WIRING)


class AutocastCudaTest(_CudaBase):
    """torch.autocast("cuda", dtype=float16): conv2d() and Conv2d run in float16 as nn.Conv2d
    does; AutocastBfloat16CudaTest runs the same in bfloat16."""

    DTYPE = torch.float16
    CASES = [TEST_CASES[1], TEST_CASES[4], case("C16_K24_3x3", 2, 16, 10, 9, 24, 3, 3, 1, 1),
             case("C32_K8_Stride2", 2, 32, 11, 12, 8, 3, 3, 2, 1)]

    def test_conv2d_and_module(self):
        for i, c in enumerate(self.CASES):
            for through in ("function", "module"):
                with self.subTest(case=c.name, dtype=self.DTYPE, through=through):
                    check_autocast(self, c, self.DTYPE, SEED + 7500 + 10 * i, through)

    def test_what_autocast_leaves_alone(self):
        # As documented: the operator and Conv2dFunction called directly have no autocast
        # (they keep the inputs' dtype), and autocast never casts float64.
        conv = module()
        c = TEST_CASES[4]
        x, w, b = make_inputs(c, SEED + 7600, torch.float32, "cuda")
        with torch.autocast("cuda", dtype=self.DTYPE):
            direct = ops().conv2d(x, w, b, *conv_args(c))
            function = conv.Conv2dFunction.apply(x, w, b, *conv_args(c))
            double = conv.conv2d(x.double(), w.double(), b.double(), c.stride, c.padding, c.dilation)
        for what, y, dtype in (("ops().conv2d", direct, torch.float32),
                               ("Conv2dFunction.apply", function, torch.float32),
                               ("conv2d() of float64", double, torch.float64)):
            self.assertEqual(y.dtype, dtype, f"{what} under autocast. {HINT_AUTOCAST}")

    def test_bfloat16_runs_or_says_it_needs_compute_capability_8_0(self):
        conv = module()
        c = self.CASES[2]
        x, w, b = make_inputs(c, SEED + 7700, torch.float32, "cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            if requirements.compute_capability_shortfall(8, 0, "bfloat16"):
                with self.assertRaisesRegex(RuntimeError, r"(?s)autocast.*needs compute capability 8\.0",
                                            msg=HINT_AUTOCAST):
                    conv.conv2d(x, w, b, c.stride, c.padding, c.dilation)
            else:
                y = conv.conv2d(x, w, b, c.stride, c.padding, c.dilation)
                self.assertEqual(y.dtype, torch.bfloat16, HINT_AUTOCAST)


class AutocastBfloat16CudaTest(AutocastCudaTest):
    """AutocastCudaTest in bfloat16, which needs an Ampere GPU or newer."""

    DTYPE = torch.bfloat16

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        requirements.require_compute_capability(8, 0, "bfloat16 mma.sync, in m3.05's forward")


class DoubleBackwardCudaTest(_CudaBase):
    """DoubleBackwardCpuTest's checks on the GPU's kernels."""

    def test_float32_and_float64(self):
        for i, dtype in enumerate((torch.float32, torch.float64)):
            check_double_backward(self, TEST_CASES[4], dtype, "cuda", SEED + 7800 + 10 * i)

    def test_under_autocast(self):
        # A gradient penalty in a mixed-precision model: refused the same way.
        conv = module()
        c = TEST_CASES[4]
        x, w, b = make_inputs(c, SEED + 7900, torch.float32, "cuda", requires_grad=True)
        with torch.autocast("cuda", dtype=torch.float16):
            y = call(conv.conv2d, x, w, b, c.stride, c.padding, c.dilation, hint=HINT_AUTOCAST)
        dx, = call(lambda: torch.autograd.grad(y.float().sum(), x, create_graph=True), hint=HINT_WIRING)
        with self.assertRaisesRegex(RuntimeError, DOUBLE_BACKWARD, msg=HINT_SECOND_ORDER):
            dx.square().sum().backward()


if __name__ == "__main__":
    unittest.main()
