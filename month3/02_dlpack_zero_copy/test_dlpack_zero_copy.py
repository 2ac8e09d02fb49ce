"""Tests for exercise m3.02 (DLPack, zero-copy exchange). The same tests grade your skeleton
and the reference solution.

ctest runs each test class below as one test (see cmake/CoursePython.cmake):
    ./course grade m3_02        your version;   ./course test m3_02   the solution
Or run them yourself, with the Python that has PyTorch:
    python3 -m pytest -v month3/02_dlpack_zero_copy/test_dlpack_zero_copy.py
    COURSE_IMPL=solution python3 -m unittest -v month3/02_dlpack_zero_copy/test_dlpack_zero_copy.py

Classes whose name contains "Cuda" need a GPU and skip themselves without one; the others
run on the CPU path (host Buffers, a CPU loop for add_in_place), so they grade the protocol
on any machine, with PyTorch 1.13 (DLPack 0.6, legacy capsules only) as with 2.x.
"""
import ctypes
import gc
import os
import sys
import unittest

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import load_extension  # noqa: E402  (after the path is set; it puts common/python there too)
from course_harness import testing  # noqa: E402
from course_harness.testing import CudaTestCase, random_tensor  # noqa: E402

try:
    import numpy as np
except ImportError:  # the CPU suite still runs; the NumPy tests say why they skip
    np = None
try:
    import cupy
except Exception:  # not installed, or no usable GPU
    cupy = None

IMPL = testing.IMPL
SEED = testing.SEED
CPP = "month3/02_dlpack_zero_copy/dlpack_buffer.cpp"

HINT_A = f"look at TODO(m3.02a) in {CPP} (fill_dltensor: data, device, ndim, dtype, shape, strides in elements, byte_offset 0)"
HINT_B = f"look at TODO(m3.02b) in {CPP} (the deleters delete the ExportContext; the capsule destructor calls the deleter only while the capsule has its unused name)"
HINT_C = f"look at TODO(m3.02c) in {CPP} (wants_versioned from max_version, wants_copy, export_flags)"
HINT_D = f"look at TODO(m3.02d) in {CPP} (consumer_stream's numbers, and the event record + cudaStreamWaitEvent in order_before_consumer)"
HINT_E = f"look at TODO(m3.02e) in {CPP} (request_capsule: __dlpack_device__, stream for CUDA, max_version with a retry on TypeError)"
HINT_F = f"look at TODO(m3.02f) in {CPP} (take_ownership renames the capsule at once; release calls the deleter once)"
HINT_G = f"look at TODO(m3.02g) in {CPP} (checked_elements: float32, compact row-major strides, byte_offset, read-only)"
HINT_M1_01 = ("the kernel is your m1.01 vector_add: if m1.01 is not finished, run with "
              "COURSE_EARLIER_KERNELS=solution (README.md)")

TORCH_2 = int(torch.__version__.split(".")[0]) >= 2

_module = testing.LazyExtension(lambda: load_extension.load_module(IMPL), f"the {IMPL} module")


def lib():
    """The module under test, built on first use."""
    return _module.get()


def header_versioned():
    return lib().DLPACK_HEADER_VERSION[0] >= 1


def released():
    gc.collect()
    return lib().stats()["released"]


def exported():
    return lib().stats()["exports"]


def call(function, hint):
    """function(), with a skeleton's "TODO(...) is not done" error turned into a failure with the hint."""
    try:
        return function()
    except RuntimeError as error:
        if "TODO(m3.02" in str(error):
            raise AssertionError(f"{error}; {hint}") from None
        raise


def export_to_torch(buf, hint=HINT_A):
    return call(lambda: torch.from_dlpack(buf), hint)


def raises(test, function, exceptions, pattern, what, hint):
    """function() must raise one of `exceptions` with a message matching /pattern/."""
    try:
        function()
    except exceptions as error:
        test.assertRegex(str(error), f"(?i){pattern}",
                         f"{what}: raised {type(error).__name__}, but the message should mention "
                         f"/{pattern}/: {error}. {hint}")
        return
    except Exception as error:  # noqa: BLE001 (any other exception: wrong type)
        test.fail(f"{what}: expected {'/'.join(e.__name__ for e in exceptions)}, got "
                  f"{type(error).__name__}: {error}. {hint}")
    test.fail(f"{what}: no error was raised. {hint}")


# --- a raw DLPack capsule built by hand (ctypes), for what PyTorch never produces ------------
# NULL strides, a non-zero byte_offset, another dtype, and a deleter we can count: the
# consumer side (add_in_place, describe) must handle capsules from any producer.

class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_LEGACY_NAME = b"dltensor"  # lives as long as the module: capsules keep the pointer


class HandMadeCapsule:
    """A legacy capsule over `owner`'s memory (a torch tensor), shape `shape`, starting
    byte_offset bytes after owner's first element, with NULL strides unless given."""

    def __init__(self, owner, shape, byte_offset=0, strides=None, dtype=(2, 32, 1), device=(1, 0)):
        self.owner = owner  # keeps the memory alive
        self.deleted = 0
        self.shape = (ctypes.c_int64 * len(shape))(*shape)
        self.strides = (ctypes.c_int64 * len(shape))(*strides) if strides is not None else None
        self.deleter = DELETER(self._delete)
        self.managed = DLManagedTensor()
        t = self.managed.dl_tensor
        t.data = owner.data_ptr()
        t.device = DLDevice(*device)
        t.ndim = len(shape)
        t.dtype = DLDataType(*dtype)
        t.shape = self.shape
        t.strides = self.strides if strides is not None else None
        t.byte_offset = byte_offset
        self.managed.deleter = self.deleter
        # No capsule destructor: every test consumes it, and the count says whether it was.
        self.capsule = _PyCapsule_New(ctypes.addressof(self.managed), _LEGACY_NAME, None)

    def _delete(self, pointer):
        self.deleted += 1


# --- CPU: run everywhere -----------------------------------------------------------------------

class ExportCpuTest(unittest.TestCase):
    """Buffer -> torch (and NumPy): the same memory, no copy."""

    def test_same_pointer_shape_and_values(self):
        for shape in [(1,), (1000,), (7, 13), (2, 3, 4)]:
            with self.subTest(shape=shape):
                buf = lib().Buffer(shape)
                buf.fill(1.5)
                t = export_to_torch(buf)
                self.assertEqual(t.data_ptr(), buf.ptr, f"torch's tensor is not on the buffer's memory: {HINT_A}")
                self.assertEqual(tuple(t.shape), shape, f"shape: {HINT_A}")
                self.assertEqual(t.dtype, torch.float32, f"dtype: {HINT_A}")
                self.assertEqual(t.device.type, "cpu", f"device: {HINT_A}")
                self.assertTrue(t.is_contiguous(), f"strides (in elements, row-major): {HINT_A}")
                self.assertTrue(torch.equal(t, torch.full(shape, 1.5)), f"values: {HINT_A}")

    def test_writes_are_seen_both_ways(self):
        buf = lib().Buffer((33, 65))
        buf.fill(0.25)
        t = export_to_torch(buf)
        values = random_tensor((33, 65), SEED + 1)
        t.copy_(values)  # torch writes ...
        self.assertEqual(buf.read(), values.flatten().tolist(), f"the library does not see torch's write: {HINT_A}")
        buf.fill(-3.0)  # ... and the library writes
        self.assertTrue(torch.equal(t, torch.full((33, 65), -3.0)), f"torch does not see the library's write: {HINT_A}")

    def test_a_view_folds_its_offset_into_data(self):
        # PyTorch 1.13 ignores byte_offset (it would read from the start) and 2.11 refuses a
        # non-zero one: the offset must be in `data`.
        buf = lib().Buffer((10, 3))
        values = random_tensor((10, 3), SEED + 2)
        export_to_torch(buf).copy_(values)
        view = buf.view_from(4)
        t = export_to_torch(view)
        self.assertEqual(t.data_ptr(), buf.ptr + 4 * 3 * 4, f"the view's first element: {HINT_A}")
        self.assertTrue(torch.equal(t, values[4:]), f"the view's values: {HINT_A}")
        info = call(lambda: lib().describe(view), HINT_E)
        self.assertEqual(info["byte_offset"], 0, f"byte_offset must be 0, with the offset in data: {HINT_A}")
        self.assertEqual(info["strides"], [3, 1], f"strides count elements, not bytes: {HINT_A}")

    def test_empty_buffer(self):
        t = export_to_torch(lib().Buffer((0, 4)))
        self.assertEqual(tuple(t.shape), (0, 4), HINT_A)

    @unittest.skipIf(np is None, "NumPy is not installed")
    def test_numpy_consumer(self):
        # np.from_dlpack (NumPy >= 1.22) calls __dlpack__() with no arguments, takes a legacy
        # capsule, and marks the array read-only (a legacy capsule cannot say whether it is).
        buf = lib().Buffer((5, 6))
        buf.fill(2.0)
        a = call(lambda: np.from_dlpack(buf), HINT_A)
        self.assertEqual(a.ctypes.data, buf.ptr, f"NumPy's array is not on the buffer's memory: {HINT_A}")
        self.assertEqual(a.shape, (5, 6), HINT_A)
        self.assertEqual(a.dtype, np.float32, HINT_A)
        self.assertEqual(a.strides, (24, 4), f"NumPy's strides are in bytes: 6 and 1 elements: {HINT_A}")
        buf.fill(7.0)
        self.assertTrue((a == 7.0).all(), f"NumPy does not see the library's write: {HINT_A}")
        view = np.from_dlpack(buf.view_from(2))
        self.assertEqual(view.ctypes.data, buf.ptr + 2 * 6 * 4, HINT_A)


class DeleterCpuTest(unittest.TestCase):
    """The deleter runs exactly once, whoever holds the capsule, and keeps the memory alive."""

    def test_consumed_by_torch(self):
        buf = lib().Buffer((16,))
        before = released()
        capsule = call(lambda: buf.__dlpack__(), HINT_A)
        t = torch.from_dlpack(capsule)
        self.assertEqual(released(), before, f"the deleter ran while torch still uses the memory: {HINT_B}")
        del t
        self.assertEqual(released(), before + 1, f"the deleter did not run once when torch's tensor died: {HINT_B}")
        del capsule  # its name is used_dltensor now: its destructor must not call the deleter again
        self.assertEqual(released(), before + 1, f"the capsule's destructor called the deleter of a consumed capsule: {HINT_B}")

    def test_unconsumed_capsule(self):
        buf = lib().Buffer((16,))
        before = released()
        capsule = call(lambda: buf.__dlpack__(), HINT_A)
        del capsule
        self.assertEqual(released(), before + 1,
                         f"an unconsumed capsule must call the deleter from its destructor (else it leaks): {HINT_B}")

    def test_consumed_twice_is_an_error_not_a_double_free(self):
        buf = lib().Buffer((16,))
        before = released()
        capsule = call(lambda: buf.__dlpack__(), HINT_A)
        t = torch.from_dlpack(capsule)
        with self.assertRaises(Exception, msg=f"torch consumed the capsule twice: {HINT_B}"):
            torch.from_dlpack(capsule)
        del t, capsule
        self.assertEqual(released(), before + 1, f"the deleter must run exactly once: {HINT_B}")

    def test_our_consumer_takes_and_releases_once(self):
        buf = lib().Buffer((4, 4))
        before = released()
        capsule = call(lambda: buf.__dlpack__(), HINT_A)
        call(lambda: lib().describe(capsule), HINT_F)
        self.assertEqual(released(), before + 1, f"describe() must call the deleter once when done: {HINT_F}")
        raises(self, lambda: lib().describe(capsule), (ValueError,), r"consumed",
               "describe() of a consumed capsule", HINT_F)
        del capsule
        self.assertEqual(released(), before + 1, f"consumed twice must not release twice: {HINT_F} and {HINT_B}")

    def test_the_buffer_lives_while_torch_uses_it(self):
        gc.collect()
        live = lib().stats()["live_buffers"]
        buf = lib().Buffer((1000,))
        values = random_tensor(1000, SEED + 3)
        t = export_to_torch(buf)
        t.copy_(values)
        del buf
        gc.collect()
        self.assertEqual(lib().stats()["live_buffers"], live + 1,
                         f"the memory was freed while torch still uses it (manager_ctx keeps a share): {HINT_B}")
        self.assertTrue(torch.equal(t, values), HINT_B)
        del t
        gc.collect()
        self.assertEqual(lib().stats()["live_buffers"], live, f"the memory was never freed: {HINT_B}")

    def test_every_export_is_released(self):
        gc.collect()
        start = lib().stats()
        buf = lib().Buffer((3, 3))
        for _ in range(50):
            t = export_to_torch(buf)
            del t
        del buf
        end = lib().stats()
        gc.collect()
        end = lib().stats()
        self.assertEqual(end["exports"] - start["exports"], 50)
        self.assertEqual(end["released"] - start["released"], 50, f"exports leaked: {HINT_B}")
        self.assertEqual(end["live_buffers"], start["live_buffers"], HINT_B)


class ProtocolCpuTest(unittest.TestCase):
    """__dlpack__'s arguments: max_version, copy, dl_device, stream."""

    def test_legacy_without_max_version(self):
        capsule = call(lambda: lib().Buffer((4,)).__dlpack__(), HINT_A)
        self.assertIn("capsule", type(capsule).__name__.lower())
        info = call(lambda: lib().describe(capsule), HINT_F)
        self.assertFalse(info["versioned"], f"no max_version means a legacy capsule: {HINT_C}")
        capsule = lib().Buffer((4,)).__dlpack__(max_version=(0, 8))
        self.assertFalse(lib().describe(capsule)["versioned"], f"max_version (0, 8) means a legacy capsule: {HINT_C}")

    def test_versioned_with_max_version_1(self):
        if not header_versioned():
            self.skipTest(f"this PyTorch's dlpack.h is DLPack {lib().DLPACK_HEADER_VERSION}: no versioned "
                          f"capsules (PyTorch {torch.__version__}; 2.9+ has DLPack 1.x)")
        buf = lib().Buffer((2, 5))
        info = call(lambda: lib().describe(buf.__dlpack__(max_version=(1, 0))), HINT_F)
        self.assertTrue(info["versioned"], f"max_version (1, 0) asks for a versioned capsule: {HINT_C}")
        self.assertEqual(info["version"][0], 1, HINT_C)
        self.assertEqual(info["flags"], 0, f"a writable, not copied buffer has no flags: {HINT_C}")
        self.assertEqual(info["data"], buf.ptr, HINT_A)

    def test_each_torch_consumes_what_it_can(self):
        # torch 2.x's from_dlpack asks for max_version (1, 0) and reads the versioned capsule;
        # torch 1.13 asks for nothing and reads the legacy one. Both give the same memory.
        buf = lib().Buffer((8,))
        t = export_to_torch(buf)
        self.assertEqual(t.data_ptr(), buf.ptr, HINT_A)
        if TORCH_2 and header_versioned():
            t = torch.from_dlpack(call(lambda: buf.__dlpack__(max_version=(1, 0)), HINT_A))
            self.assertEqual(t.data_ptr(), buf.ptr, HINT_C)
        elif header_versioned():  # a 1.x header with torch 1.x: not a combination PyTorch ships
            pass
        else:
            # torch 1.13 cannot read a versioned capsule, and this build cannot make one:
            # a max_version request still gets a legacy capsule, which 1.13 reads.
            t = torch.from_dlpack(buf.__dlpack__(max_version=(1, 0)))
            self.assertEqual(t.data_ptr(), buf.ptr, f"without DLPack 1.x, answer with a legacy capsule: {HINT_C}")

    def test_copy_true_copies(self):
        buf = lib().Buffer((6, 7))
        values = random_tensor((6, 7), SEED + 4)
        export_to_torch(buf).copy_(values)
        t = torch.from_dlpack(call(lambda: buf.__dlpack__(copy=True), HINT_A))
        self.assertNotEqual(t.data_ptr(), buf.ptr, f"copy=True must export a copy: {HINT_C}")
        self.assertTrue(torch.equal(t, values), f"the copy's values: {HINT_C}")
        t.fill_(0.0)
        self.assertEqual(buf.read(), values.flatten().tolist(), f"writing the copy changed the buffer: {HINT_C}")
        if header_versioned():
            info = lib().describe(buf.__dlpack__(copy=True, max_version=(1, 0)))
            self.assertTrue(info["flags"] & 2, f"a copy sets DLPACK_FLAG_BITMASK_IS_COPIED (2): {HINT_C}")
        t = torch.from_dlpack(buf.__dlpack__(copy=False))
        self.assertEqual(t.data_ptr(), buf.ptr, f"copy=False: zero copy: {HINT_C}")

    def test_read_only_flag(self):
        # The library says so on versioned capsules; NumPy 2 honours the flag, but PyTorch has
        # no read-only tensors: torch 2.x takes the capsule and lets you write (B.4 of the notes).
        if not header_versioned():
            self.skipTest(f"DLPack {lib().DLPACK_HEADER_VERSION} has no flags (PyTorch {torch.__version__})")
        buf = lib().Buffer((4,), read_only=True)
        buf.fill(1.0)
        info = call(lambda: lib().describe(buf.__dlpack__(max_version=(1, 0))), HINT_F)
        self.assertTrue(info["flags"] & 1, f"a read-only buffer sets DLPACK_FLAG_BITMASK_READ_ONLY (1): {HINT_C}")
        raises(self, lambda: lib().add_in_place(buf, torch.ones(4)), (ValueError,), r"read-only",
               "add_in_place into a read-only buffer", HINT_G)
        self.assertEqual(buf.read(), [1.0] * 4, HINT_G)
        if TORCH_2:
            try:
                t = torch.from_dlpack(buf)
            except (BufferError, RuntimeError, ValueError) as error:  # a PyTorch that honours it
                print(f"note: PyTorch {torch.__version__} refuses a read-only capsule: {error}")
                return
            t.add_(1.0)  # accepted: PyTorch 2.11 ignores READ_ONLY (documented in README.md)
            self.assertEqual(buf.read(), [2.0] * 4, "torch wrote, so the buffer should have changed")

    def test_refusals(self):
        buf = lib().Buffer((4,))
        raises(self, lambda: buf.__dlpack__(dl_device=(2, 0)), (BufferError,), r"device",
               "export of a CPU buffer to dl_device (kDLCUDA, 0)", "(given code)")
        raises(self, lambda: buf.__dlpack__(stream=1), (BufferError,), r"stream",
               "export of a CPU buffer with a stream", "(given code)")
        capsule = call(lambda: buf.__dlpack__(dl_device=(1, 0)), HINT_A)
        self.assertEqual(torch.from_dlpack(capsule).data_ptr(), buf.ptr, HINT_A)


class ImportCpuTest(unittest.TestCase):
    """Any producer -> the library's kernel (on the CPU: a loop), in place."""

    def check_add(self, target, addend, expected, what):
        call(lambda: lib().add_in_place(target, addend), HINT_E)
        testing.assert_close(target, expected, what=what, hint=f"{HINT_F}; {HINT_G}")

    def test_torch_tensors(self):
        for i, shape in enumerate([(1,), (1000,), (33, 65), (2, 3, 4)]):
            with self.subTest(shape=shape):
                x = random_tensor(shape, SEED + 10 + 2 * i)
                y = random_tensor(shape, SEED + 11 + 2 * i)
                expected = x + y
                self.check_add(x, y, expected, f"add_in_place(torch {list(shape)}, torch)")

    def test_same_tensor_twice(self):
        x = random_tensor((17, 3), SEED + 20)
        expected = 2 * x
        self.check_add(x, x, expected, "add_in_place(x, x)")

    def test_describe_sees_torchs_memory(self):
        x = random_tensor((5, 4), SEED + 21)
        info = call(lambda: lib().describe(x), HINT_E)
        self.assertEqual(info["data"], x.data_ptr(), HINT_F)
        self.assertEqual(info["shape"], [5, 4], HINT_F)
        self.assertEqual(info["dtype"], (2, 32, 1), HINT_F)
        # torch 2.x answers max_version (1, 0) with a versioned capsule; 1.13 raised TypeError
        # on max_version and was asked again without it.
        self.assertEqual(info["versioned"], TORCH_2 and header_versioned(),
                         f"ask for max_version (1, 0) where DLPack 1.x is known: {HINT_E}")

    def test_offset_views(self):
        base = random_tensor((10, 8), SEED + 22)
        for what, view in [("x[2:]", lambda b: b[2:]), ("x[3]", lambda b: b[3]),
                           ("x[2:].view(8, 1, 8) with stride 99 on its size-1 dimension",
                            lambda b: b[2:].as_strided((8, 1, 8), (8, 99, 1)))]:
            with self.subTest(view=what):
                target = base.clone()
                addend = random_tensor(view(base).shape, SEED + 23)
                expected = target.clone()
                view(expected).add_(addend)
                call(lambda: lib().add_in_place(view(target), addend), HINT_E)
                testing.assert_close(target, expected, what=f"add_in_place({what}, y): only the view changes",
                                     hint=f"{HINT_G} (the stride of a dimension of size 1 is meaningless: ignore it)")

    def test_null_strides_and_byte_offset(self):
        # A producer may describe x[2:8] as data = x, byte_offset = 8, strides NULL.
        base = random_tensor(10, SEED + 24)
        addend = random_tensor(6, SEED + 25)
        expected = base.clone()
        expected[2:8] += addend
        made = HandMadeCapsule(base, (6,), byte_offset=8)
        call(lambda: lib().add_in_place(made.capsule, addend), HINT_E)
        testing.assert_close(base, expected, what="add_in_place(capsule with byte_offset 8 and NULL strides)",
                             hint=f"{HINT_G} (the first element is at data + byte_offset)")
        self.assertEqual(made.deleted, 1, f"the capsule's deleter must run exactly once: {HINT_F}")

    def test_a_failed_check_still_releases(self):
        base = torch.zeros(8, dtype=torch.float64)
        made = HandMadeCapsule(base, (8,), dtype=(2, 64, 1))
        raises(self, lambda: lib().add_in_place(made.capsule, base), (TypeError, ValueError), r"float32",
               "add_in_place(float64 capsule)", HINT_G)
        self.assertEqual(made.deleted, 1, f"a capsule taken and then refused must still be released once: {HINT_F}")

    def test_non_contiguous_inputs_are_refused(self):
        x = random_tensor((8, 6), SEED + 26)
        before = x.clone()
        for what, view in [("x.t()", x.t()), ("x[:, ::2]", x[:, ::2]), ("x[::2]", x[::2])]:
            with self.subTest(view=what):
                raises(self, lambda: lib().add_in_place(view, view.contiguous()), (ValueError,), r"contiguous",
                       f"add_in_place({what}, ...)", HINT_G)
        self.assertTrue(torch.equal(x, before), f"a refused input was written: {HINT_G}")
        made = HandMadeCapsule(x, (8, 3), strides=[6, 2])
        raises(self, lambda: lib().add_in_place(made.capsule, torch.zeros(8, 3)), (ValueError,), r"contiguous",
               "add_in_place(capsule with strides [6, 2])", HINT_G)
        self.assertEqual(made.deleted, 1, HINT_F)

    def test_bad_inputs(self):
        x = random_tensor(12, SEED + 27)
        cases = [
            ("add_in_place(float64, float64)", lambda: lib().add_in_place(x.double(), x.double()), (TypeError,), r"float32"),
            ("add_in_place(int32, int32)", lambda: lib().add_in_place(x.int(), x.int()), (TypeError,), r"float32"),
            ("add_in_place(float32, float64)", lambda: lib().add_in_place(x, x.double()), (TypeError,), r"float32"),
            ("add_in_place(shape [12], shape [3, 4])", lambda: lib().add_in_place(x, x.view(3, 4)), (ValueError,), r"shape"),
            ("add_in_place(a list)", lambda: lib().add_in_place([1.0], x), (TypeError,), r"dlpack"),
        ]
        for what, function, exceptions, pattern in cases:
            with self.subTest(case=what):
                raises(self, function, exceptions, pattern, what, f"{HINT_E}; {HINT_G}")

    def test_our_own_buffer_round_trip(self):
        buf = lib().Buffer((4, 5))
        values = random_tensor((4, 5), SEED + 28)
        export_to_torch(buf).copy_(values)
        before = released()
        call(lambda: lib().add_in_place(buf, buf), HINT_E)
        self.assertEqual(buf.read(), (2 * values).flatten().tolist(), f"{HINT_F}; {HINT_G}")
        self.assertEqual(released(), before + 2, f"two imports, two deleter calls: {HINT_F}")

    @unittest.skipIf(np is None, "NumPy is not installed")
    def test_numpy_producer(self):
        # NumPy 1.24's __dlpack__ takes only stream=None: max_version raises TypeError, and
        # the consumer must ask again without it.
        rng = np.random.default_rng(SEED)
        a = rng.uniform(-2, 2, size=(9, 7)).astype(np.float32)
        b = rng.uniform(-2, 2, size=(9, 7)).astype(np.float32)
        expected = torch.from_numpy(a + b)
        pointer = a.ctypes.data
        call(lambda: lib().add_in_place(a, b), HINT_E)
        self.assertEqual(a.ctypes.data, pointer)
        testing.assert_close(torch.from_numpy(a), expected, what="add_in_place(numpy, numpy)",
                             hint=f"{HINT_E} (retry without max_version on TypeError); {HINT_G}")
        raises(self, lambda: lib().add_in_place(a.astype(np.float64), b.astype(np.float64)), (TypeError,),
               r"float32", "add_in_place(numpy float64)", HINT_G)


# --- CUDA: need a GPU --------------------------------------------------------------------------

class ExportCudaTest(CudaTestCase):
    def test_same_pointer_and_writes_both_ways(self):
        buf = lib().Buffer((257, 33), device="cuda")
        buf.fill(0.5)
        t = export_to_torch(buf)
        self.assertEqual(t.data_ptr(), buf.ptr, HINT_A)
        self.assertEqual(t.device, torch.device("cuda", torch.cuda.current_device()), HINT_A)
        self.assertTrue(torch.equal(t, torch.full((257, 33), 0.5, device="cuda")),
                        f"torch does not see the library's fill (or reads it before it lands): {HINT_A}; {HINT_D}")
        values = random_tensor((257, 33), SEED + 30, device="cuda")
        t.copy_(values)
        torch.cuda.synchronize()
        self.assertEqual(buf.read(), values.flatten().tolist(), HINT_A)
        view = torch.from_dlpack(buf.view_from(100))
        self.assertEqual(view.data_ptr(), buf.ptr + 100 * 33 * 4, HINT_A)
        self.assertTrue(torch.equal(view, values[100:]), HINT_A)

    def test_versioned_capsule_for_torch_2(self):
        if not header_versioned():
            self.skipTest(f"DLPack {lib().DLPACK_HEADER_VERSION}: no versioned capsules")
        buf = lib().Buffer((64,), device="cuda")
        info = call(lambda: lib().describe(buf.__dlpack__(max_version=(1, 0), stream=-1)), HINT_F)
        self.assertTrue(info["versioned"], HINT_C)
        self.assertEqual(info["device"], (2, torch.cuda.current_device()), HINT_A)

    def test_deleter_once_and_memory_kept(self):
        gc.collect()
        live = lib().stats()["live_buffers"]
        before = released()
        buf = lib().Buffer((1 << 20,), device="cuda")
        t = export_to_torch(buf)
        t.fill_(3.0)
        del buf
        self.assertEqual(lib().stats()["live_buffers"], live + 1, HINT_B)
        self.assertEqual(float(t.sum()), 3.0 * (1 << 20), HINT_B)
        del t
        self.assertEqual(released(), before + 1, HINT_B)
        self.assertEqual(lib().stats()["live_buffers"], live, HINT_B)

    def test_streams(self):
        buf = lib().Buffer((16,), device="cuda")
        raises(self, lambda: buf.__dlpack__(stream=0), (ValueError,), r"stream",
               "__dlpack__(stream=0) (ambiguous: DLPack forbids it)", HINT_D)
        raises(self, lambda: buf.__dlpack__(stream=-5), (ValueError,), r"stream",
               "__dlpack__(stream=-5)", HINT_D)
        for stream in [None, 1, 2, -1, torch.cuda.Stream().cuda_stream]:
            with self.subTest(stream=stream):
                t = torch.from_dlpack(call(lambda: buf.__dlpack__(stream=stream), HINT_A))
                self.assertEqual(t.data_ptr(), buf.ptr, HINT_A)
        raises(self, lambda: buf.__dlpack__(dl_device=(1, 0)), (BufferError,), r"device",
               "export of a CUDA buffer to the CPU", "(given code)")

    @unittest.skipIf(cupy is None, "CuPy is not installed (pip install cupy-cuda13x)")
    def test_cupy_consumer(self):
        buf = lib().Buffer((100, 3), device="cuda")
        buf.fill(4.0)
        a = call(lambda: cupy.from_dlpack(buf), HINT_A)
        self.assertEqual(a.data.ptr, buf.ptr, f"CuPy's array is not on the buffer's memory: {HINT_A}")
        self.assertEqual(a.shape, (100, 3), HINT_A)
        self.assertEqual(float(a.sum()), 1200.0, f"{HINT_A}; {HINT_D}")
        a[:] = 2.0
        cupy.cuda.get_current_stream().synchronize()
        self.assertEqual(buf.read(), [2.0] * 300, HINT_A)
        # And CuPy as a producer for the library's kernel.
        x = cupy.arange(300, dtype=cupy.float32)
        call(lambda: lib().add_in_place(x, x), HINT_E)
        self.assertTrue(bool((x == 2 * cupy.arange(300, dtype=cupy.float32)).all()), f"{HINT_E}; {HINT_M1_01}")


class StreamOrderCudaTest(CudaTestCase):
    """The race DLPack's stream argument exists for (month3-notes B.6).

    The library spins ~0.15 s on its own non-blocking stream, then writes 7s; the consumer
    sums on a side stream at once. Only the producer's event + cudaStreamWaitEvent on the
    consumer's stream orders the sum after the write. Every hidden synchronisation would mask
    the race, so: the consumer's kernels are warmed up (the first kernel of a process loads
    modules, which synchronises), the buffers are allocated before (cudaMalloc and cudaFree
    synchronise), and every object stays alive until the end (a deleter's cudaFree would
    synchronise too).
    """

    N = 1024
    VALUE = 7.0

    def race(self, skip_wait):
        m = lib()
        buf = m.Buffer((self.N,), device="cuda")  # allocated before the race
        buf.fill(0.0)
        buf.synchronize()
        side = torch.cuda.Stream()
        warm = torch.zeros(self.N, device="cuda")
        with torch.cuda.stream(side):
            warm.sum()  # loads the sum kernel now, not during the race
        torch.cuda.synchronize()
        keep = []
        m._testing_skip_stream_wait(skip_wait)
        try:
            buf.fill_slowly(self.VALUE, 0.15)
            with torch.cuda.stream(side):
                t = torch.from_dlpack(buf)  # passes side's handle as `stream`
                total = t.sum()
            keep += [t, total]
            side.synchronize()
            result = float(total)
        finally:
            m._testing_skip_stream_wait(False)
        buf.synchronize()
        keep.clear()
        return result

    def test_the_consumer_waits_for_the_producer(self):
        export_to_torch(lib().Buffer((1,), device="cuda"))  # a skeleton's TODO shows here first
        result = self.race(skip_wait=False)
        self.assertEqual(result, self.VALUE * self.N,
                         f"torch summed the buffer before the library's fill landed (got {result}): {HINT_D}")

    def test_without_the_wait_the_race_shows(self):
        # Proves the test above can fail: with the wait removed, the sum runs first.
        export_to_torch(lib().Buffer((1,), device="cuda"))
        result = self.race(skip_wait=True)
        self.assertNotEqual(result, self.VALUE * self.N,
                            "without the event wait the sum still saw the fill: something synchronised the "
                            "streams and masks the race (see this class's docstring); the test cannot tell")


class ImportCudaTest(CudaTestCase):
    def test_torch_tensors_in_place(self):
        for i, shape in enumerate([(1,), (1000,), (513, 257), ((1 << 22) + 7,)]):
            with self.subTest(shape=shape):
                x = random_tensor(shape, SEED + 40 + 2 * i, device="cuda")
                y = random_tensor(shape, SEED + 41 + 2 * i, device="cuda")
                expected = x + y
                pointer = x.data_ptr()
                stream = load_extension.dlpack_stream(torch.cuda.current_stream())
                call(lambda: lib().add_in_place(x, y, stream=stream), HINT_E)
                self.assertEqual(x.data_ptr(), pointer)
                testing.assert_close(x, expected, what=f"add_in_place on cuda {list(shape)}",
                                     hint=f"{HINT_F}; {HINT_G}; {HINT_M1_01}")

    def test_offset_views_and_default_stream(self):
        base = random_tensor((64, 32), SEED + 50, device="cuda")
        addend = random_tensor((61, 32), SEED + 51, device="cuda")
        expected = base.clone()
        expected[3:] += addend
        torch.cuda.synchronize()
        call(lambda: lib().add_in_place(base[3:], addend), HINT_E)  # stream=None: the legacy default stream
        testing.assert_close(base, expected, what="add_in_place(x[3:], y) on cuda", hint=f"{HINT_G}; {HINT_M1_01}")

    def test_the_producer_orders_its_work_before_the_kernel(self):
        # torch fills x on a side stream after a delay; the library's kernel runs on its own
        # stream argument. torch's __dlpack__ (the producer) must make that stream wait.
        x = torch.zeros(1 << 20, device="cuda")
        y = torch.ones(1 << 20, device="cuda")
        torch.cuda.synchronize()
        side = torch.cuda.Stream()
        consumer = torch.cuda.Stream()
        with torch.cuda.stream(side):
            torch.cuda._sleep(50_000_000)
            x.fill_(2.0)
            call(lambda: lib().add_in_place(x, y, stream=consumer.cuda_stream), HINT_E)
        torch.cuda.synchronize()
        self.assertEqual(float(x.sum()), 3.0 * (1 << 20), f"the stream given to __dlpack__: {HINT_E}; {HINT_D}")

    def test_bad_inputs(self):
        x = random_tensor(100, SEED + 60, device="cuda")
        cases = [
            ("add_in_place(cuda, cpu)", lambda: lib().add_in_place(x, x.cpu()), (ValueError,), r"device"),
            ("add_in_place(cpu, cuda)", lambda: lib().add_in_place(x.cpu(), x), (ValueError,), r"device"),
            ("add_in_place(cuda float16)", lambda: lib().add_in_place(x.half(), x.half()), (TypeError,), r"float32"),
            ("add_in_place(cuda x.view(10, 10).t())", lambda: lib().add_in_place(x.view(10, 10).t(), x.view(10, 10)),
             (ValueError,), r"contiguous"),
            ("add_in_place(..., stream=0)", lambda: lib().add_in_place(x, x, stream=0), (ValueError,), r"stream"),
        ]
        for what, function, exceptions, pattern in cases:
            with self.subTest(case=what):
                raises(self, function, exceptions, pattern, what, f"{HINT_D}; {HINT_E}; {HINT_G}")
        torch.cuda.synchronize()


if __name__ == "__main__":
    unittest.main()
