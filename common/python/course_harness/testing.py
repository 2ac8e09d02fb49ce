"""What the Python tests share: the implementation under test, inputs, assertions, skips.

- IMPL: the implementation ctest asks for (COURSE_IMPL=exercise or solution); SEED: the
  seed every input derives from (COURSE_SEED, the same default as the C++ tests).
- random_tensor(): uniform values from a fixed seed, the same on every machine and device;
  never zeros or constants, so a kernel that writes nothing or copies an input fails.
- poison_allocator(): hands PyTorch's caching allocator a block of NaN, so an output
  element a kernel never writes reads NaN (which never passes) instead of old results.
- assert_close(): like torch.testing.assert_close, but the message names the case, the
  TODO to look at, and lists the first mismatching elements with their indices, as the
  C++ verify() does.
- tolerance(): dtype-aware tolerances, growing with the length of a dot product;
  gemm_tolerance(): the GEMM tests' tolerance, the twin of the C++ course::gemm_tolerance.
- CudaTestCase / cuda_status(): CUDA test classes skip themselves, with the reason.
- LazyExtension: builds the extension on first use; when the build fails, the first test
  shows the compiler's error and the others say that the build failed.
"""
import math
import os
import unittest

import torch

from . import extension, requirements

IMPL = os.environ.get("COURSE_IMPL", "exercise")
SEED = int(os.environ.get("COURSE_SEED", "20240611"))  # as in the C++ tests

cuda_status = extension.cuda_status


def random_tensor(shape, seed, low=-2.0, high=2.0, dtype=torch.float32, device="cpu"):
    """Uniform in [low, high), drawn in float32 on the CPU from `seed`, then converted."""
    generator = torch.Generator().manual_seed(seed)
    values = torch.rand(shape, generator=generator, dtype=torch.float32) * (high - low) + low
    return values.to(dtype=dtype, device=device)


def poison_allocator(like, numel=None):
    """Fills a freed block the size of `like` (or of `numel` elements) with NaN."""
    if numel is None:
        junk = torch.full_like(like, float("nan"))
    else:
        junk = torch.full((numel,), float("nan"), dtype=like.dtype, device=like.device)
    del junk


# float64 reference vs a float32 kernel: about sqrt(k) rounding errors of 2^-24 each, with
# a margin; fp16/bf16 inputs round the inputs too (their products are exact in fp32).
_EPS = {torch.float64: 2.0 ** -52, torch.float32: 2.0 ** -23, torch.float16: 2.0 ** -10,
        torch.bfloat16: 2.0 ** -7}


def tolerance(dtype, reduction_size=1):
    """(rtol, atol) for results of `dtype` that sum `reduction_size` products."""
    eps = _EPS.get(dtype, 2.0 ** -23)
    growth = math.sqrt(max(1, reduction_size))
    rtol = 8.0 * eps * growth
    return rtol, rtol


# torch.testing.assert_close's (rtol, atol) per dtype, as in common/include/course/verify.h.
_BASE_TOLERANCE = {torch.float64: (1e-7, 1e-7), torch.float32: (1.3e-6, 1e-5),
                   torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5)}


def gemm_tolerance(input_dtype, k):
    """(rtol, atol) for a GEMM that accumulates in float32, against a float64 reference
    computed from the same (already rounded) inputs, with inputs in [-1, 1] and |alpha| <= 2.

    The Python twin of course::gemm_tolerance (common/include/course/gemm_reference.h), so
    the Python and C++ tests of one kernel agree: the dtype's relative tolerance (float16 and
    bfloat16 inputs: their products are exact in float32, the output rounding is not), plus
    an absolute term of 8 units of float32 rounding per product summed, 8 * 2^-24 * k.
    """
    rtol, atol = _BASE_TOLERANCE.get(input_dtype, _BASE_TOLERANCE[torch.float32])
    unit_roundoff = 2.0 ** -53 if input_dtype == torch.float64 else 2.0 ** -24
    return rtol, atol + 8.0 * unit_roundoff * max(int(k), 1)


def conv_tolerance(input_dtype, products_per_output):
    """(rtol, atol) for a convolution that sums C*R*S products per output: the Python twin of
    course::conv_tolerance (common/include/course/conv_reference.h), which is the GEMM's."""
    return gemm_tolerance(input_dtype, products_per_output)


def mismatches(actual, expected, rtol, atol, limit=8):
    """The first `limit` elements where |actual - expected| > atol + rtol * |expected| (or NaN)."""
    a = actual.detach().to("cpu", torch.float64).reshape(-1)
    e = expected.detach().to("cpu", torch.float64).reshape(-1)
    bad = ~((a - e).abs() <= atol + rtol * e.abs())  # NaN compares False: counted as bad
    count = int(bad.sum())
    positions = torch.nonzero(bad).reshape(-1)[:limit].tolist()
    shape = tuple(actual.shape)
    rows = []
    for flat in positions:
        index, rest = [], flat
        for size in reversed(shape):
            index.append(rest % size if size else 0)
            rest //= size if size else 1
        rows.append((tuple(reversed(index)), float(a[flat]), float(e[flat])))
    return count, rows


def describe_mismatches(actual, expected, rtol, atol, limit=8):
    count, rows = mismatches(actual, expected, rtol, atol, limit)
    if count == 0:
        return ""
    total = actual.numel()
    lines = [f"{count} of {total} elements differ (rtol {rtol:.3g}, atol {atol:.3g}); the first:"]
    for index, got, want in rows:
        note = "  (NaN: never written?)" if math.isnan(got) else ""
        lines.append(f"  at {list(index)}: got {got:.8g}, expected {want:.8g}{note}")
    return "\n".join(lines)


def assert_close(actual, expected, *, what, hint="", rtol=None, atol=None):
    """Raises AssertionError naming `what`, the mismatches and `hint` unless actual ~= expected."""
    if not isinstance(actual, torch.Tensor):
        raise AssertionError(f"{what}: expected a tensor, got {type(actual).__name__}. {hint}")
    if tuple(actual.shape) != tuple(expected.shape):
        raise AssertionError(f"{what}: the result has shape {list(actual.shape)}, expected "
                             f"{list(expected.shape)}. {hint}")
    if actual.dtype != expected.dtype:
        raise AssertionError(f"{what}: the result is {actual.dtype}, expected {expected.dtype}. {hint}")
    if actual.device != expected.device:
        raise AssertionError(f"{what}: the result is on {actual.device}, expected {expected.device}. {hint}")
    if rtol is None or atol is None:
        default_rtol, default_atol = tolerance(actual.dtype)
        rtol = default_rtol if rtol is None else rtol
        atol = default_atol if atol is None else atol
    report = describe_mismatches(actual, expected, rtol, atol)
    if report:
        raise AssertionError(f"{what}: {report}\n{hint}".rstrip())


class CudaTestCase(unittest.TestCase):
    """A test class that needs a CUDA GPU: without one, it is skipped with the reason. A
    PyTorch without CUDA is something the learner can fix, so that skip ends with
    "; to fix: <the pip command for a CUDA PyTorch that matches nvcc>"."""

    @classmethod
    def setUpClass(cls):
        ok, why = cuda_status()
        if not ok:
            reason = f"no CUDA here: {why}"
            if torch.version.cuda is None:
                reason = requirements.skip_reason_with_fix(
                    reason, requirements.cuda_torch_replace_command())
            raise unittest.SkipTest(reason)


def skip_unless(feature, reason):
    """unittest.skipUnless for a PyTorch feature that older versions lack."""
    return unittest.skipUnless(feature, f"{reason} (this is PyTorch {torch.__version__})")


class LazyExtension:
    """Calls build() once, on first use, and remembers a failure for the later tests."""

    def __init__(self, build, what):
        self._build = build
        self._what = what
        self._value = None
        self._error = None

    def get(self):
        if self._value is None:
            if self._error is not None:
                raise AssertionError(f"{self._what} did not build or load; the first failing test "
                                     f"shows why: {self._error}")
            try:
                self._value = self._build()
            except Exception as error:
                self._error = str(error).splitlines()[0] if str(error) else type(error).__name__
                raise
        return self._value
