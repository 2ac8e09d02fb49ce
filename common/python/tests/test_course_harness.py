"""Tests of the course's Python harness itself (common/python/course_harness).

ctest runs each class as harness/python/<Class>; the Cuda classes need a GPU and skip
themselves without one. By hand: python3 -m pytest -v common/python/tests/test_course_harness.py
"""
import json
import math
import os
import sys
import tempfile
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import torch  # noqa: E402

from course_harness import benchmarking, extension, paths, requirements, testing  # noqa: E402


class PathsTest(unittest.TestCase):
    def test_exercise_ids_and_folders(self):
        for name in ["m1_05", "m1.05", "m1_05_torch_extension", "month1/05_torch_extension"]:
            with self.subTest(name=name):
                self.assertEqual(paths.exercise_folder(name), Path("month1/05_torch_extension"))
                self.assertEqual(paths.exercise_id(name), "m1_05_torch_extension")
        self.assertEqual(paths.source_dir("m2_05", "solution"),
                         paths.ROOT / "solutions" / "month2" / "05_register_tiling")
        self.assertEqual(paths.source_dir("m2_05", "exercise"), paths.ROOT / "month2" / "05_register_tiling")

    def test_unknown_names_raise(self):
        for name in ["m9_01", "nonsense"]:
            with self.subTest(name=name), self.assertRaises(ValueError):
                paths.exercise_folder(name)
        with self.assertRaises(ValueError):
            paths.source_dir("m1_05", "mine")


class TestingHelpersTest(unittest.TestCase):
    def test_random_tensors_are_seeded_and_not_constant(self):
        a = testing.random_tensor((64, 33), 7)
        self.assertTrue(torch.equal(a, testing.random_tensor((64, 33), 7)))
        self.assertFalse(torch.equal(a, testing.random_tensor((64, 33), 8)))
        self.assertGreater(int(torch.unique(a).numel()), 1000)
        self.assertGreaterEqual(float(a.min()), -2.0)
        self.assertLess(float(a.max()), 2.0)
        half = testing.random_tensor(100, 7, dtype=torch.float16)
        self.assertEqual(half.dtype, torch.float16)

    def test_assert_close_names_the_first_mismatches(self):
        expected = testing.random_tensor((4, 5), 1)
        actual = expected.clone()
        actual[2, 3] += 1.0
        actual[3, 0] = float("nan")
        with self.assertRaises(AssertionError) as caught:
            testing.assert_close(actual, expected, what="case X", hint="look at TODO(x)")
        message = str(caught.exception)
        self.assertIn("case X", message)
        self.assertIn("2 of 20 elements differ", message)
        self.assertIn("at [2, 3]", message)
        self.assertIn("at [3, 0]", message)
        self.assertIn("never written", message)
        self.assertIn("TODO(x)", message)
        testing.assert_close(expected.clone(), expected, what="equal")  # no exception

    def test_assert_close_checks_shape_dtype_and_type(self):
        expected = testing.random_tensor(6, 2)
        cases = [expected[:5], expected.double(), expected.tolist()]
        for actual in cases:
            with self.subTest(actual=type(actual).__name__), self.assertRaises(AssertionError):
                testing.assert_close(actual, expected, what="bad")

    def test_tolerance_depends_on_dtype_and_grows_with_the_reduction(self):
        fp32, _ = testing.tolerance(torch.float32, 1)
        fp16, _ = testing.tolerance(torch.float16, 1)
        self.assertLess(fp32, fp16)
        self.assertAlmostEqual(testing.tolerance(torch.float32, 4096)[0] / fp32, math.sqrt(4096))

    def test_gemm_tolerance_matches_the_cpp_one(self):
        # course::gemm_tolerance(fp32, 1000) and (fp16, 4096): base atol + 8 * 2^-24 * K.
        rtol, atol = testing.gemm_tolerance(torch.float32, 1000)
        self.assertEqual(rtol, 1.3e-6)
        self.assertAlmostEqual(atol, 1e-5 + 8.0 * 1000 / 2 ** 24)
        rtol, atol = testing.gemm_tolerance(torch.float16, 4096)
        self.assertEqual(rtol, 1e-3)
        self.assertAlmostEqual(atol, 1e-5 + 8.0 * 4096 / 2 ** 24)
        self.assertEqual(testing.gemm_tolerance(torch.float32, 0), testing.gemm_tolerance(torch.float32, 1))

    def test_lazy_extension_builds_once_and_remembers_a_failure(self):
        calls = []
        lazy = testing.LazyExtension(lambda: calls.append(1) or "built", "probe")
        self.assertEqual(lazy.get(), "built")
        self.assertEqual(lazy.get(), "built")
        self.assertEqual(len(calls), 1)

        def broken():
            raise RuntimeError("first compiler error\nmore")
        failing = testing.LazyExtension(broken, "the probe extension")
        with self.assertRaises(RuntimeError):
            failing.get()
        with self.assertRaisesRegex(AssertionError, "did not build.*first compiler error"):
            failing.get()


class RequirementsTest(unittest.TestCase):
    """The twin of course/requirements.h: the override is read strictly, and skip reasons use
    the wording ./course grade sorts by (a machine limit, or a fix)."""

    def setUp(self):
        self.saved = os.environ.pop("COURSE_COMPUTE_CAPABILITY", None)

    def tearDown(self):
        os.environ.pop("COURSE_COMPUTE_CAPABILITY", None)
        if self.saved is not None:
            os.environ["COURSE_COMPUTE_CAPABILITY"] = self.saved

    def test_the_override_is_parsed_strictly(self):
        self.assertIsNone(requirements.emulated_compute_capability())
        os.environ["COURSE_COMPUTE_CAPABILITY"] = "7.5"
        self.assertEqual(requirements.emulated_compute_capability(), (7, 5))
        for bad in ("75", "sm_75", "7.5x", "7.", "x"):
            os.environ["COURSE_COMPUTE_CAPABILITY"] = bad
            with self.assertRaises(ValueError, msg=bad):
                requirements.emulated_compute_capability()

    def test_a_fixable_skip_ends_with_its_command(self):
        reason = requirements.skip_reason_with_fix("scikit-learn is missing", "python3 -m pip install scikit-learn")
        self.assertRegex(reason, r"; to fix: python3 -m pip install scikit-learn$")

    def test_the_cuda_pytorch_matches_the_toolkit_major_version(self):
        self.assertIn("/whl/cu126", requirements.cuda_torch_install_command(12))
        self.assertIn("/whl/cu130", requirements.cuda_torch_install_command(13))
        self.assertTrue(requirements.cuda_torch_install_command().startswith("python3 -m pip install torch"))


class RequirementsCudaTest(testing.CudaTestCase):
    def test_shortfalls_name_what_is_needed_and_what_the_gpu_has(self):
        have = requirements.device_compute_capability()
        self.assertLessEqual(have, requirements.physical_compute_capability())
        self.assertEqual(requirements.compute_capability_shortfall(*have, "x"), "")
        above = requirements.compute_capability_shortfall(have[0] + 1, 0, "a future GPU")
        self.assertIn(f"needs compute capability {have[0] + 1}.0 (a future GPU); this GPU has "
                      f"{have[0]}.{have[1]}", above)
        with self.assertRaises(unittest.SkipTest):
            requirements.require_compute_capability(have[0] + 1, 0, "a future GPU")


class BenchmarkJsonTest(unittest.TestCase):
    def test_rows_become_google_benchmark_json_with_the_statistic(self):
        rows = [{"name": "family/solution/n:8", "ms": 0.5, "GBps": 12.0},
                {"name": "family/exercise/n:8", "error": "wrong result"}]
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "out.json")
            benchmarking.write_json(path, rows, program=__file__, facts={"gpu": "none"}, timing="test")
            with open(path) as file:
                data = json.load(file)
        self.assertEqual(data["context"]["statistic"], "median")
        good, bad = data["benchmarks"]
        self.assertEqual(good["real_time"], 500.0)
        self.assertEqual(good["time_unit"], "us")
        self.assertEqual(good["GBps"], 12.0)
        self.assertTrue(bad["error_occurred"])
        self.assertEqual(bad["error_message"], "wrong result")


class HostTimerTest(unittest.TestCase):
    def test_warm_up_then_the_median_of_the_timed_runs(self):
        calls = []
        timer = benchmarking.HostTimer(iterations=5, warmup=2)
        durations = iter([0.0, 0.0, 0.004, 0.001, 0.002, 0.030, 0.003])  # seconds, in call order

        def run():
            calls.append(1)
            time.sleep(next(durations))
        times = timer.times_ms(run)
        self.assertEqual(len(calls), 7)  # 2 untimed, 5 timed
        self.assertEqual(len(times), 5)
        self.assertGreaterEqual(min(times), 0.9)  # the 1 ms run, never less than its sleep
        self.assertGreaterEqual(sorted(times)[2], 2.9)  # the median is the 3 ms run or more
        self.assertLess(sorted(times)[2], 25.0)  # not the 30 ms one
        self.assertIn("median of 5 runs", timer.describe())


class ExtensionBuildTest(unittest.TestCase):
    """A throwaway extension: m1.05's operators and a pybind11 function in one library."""

    def test_pybind_module_beside_dispatcher_operators(self):
        namespace = "course_harness_probe"
        folder = paths.source_dir("m1_05", "solution")
        module = extension.load(
            "course_harness_probe",
            sources=[folder / "torch_extension.cpp", HERE / "pybind_beside_operators.cpp"],
            include_dirs=[paths.ROOT / "month1" / "05_torch_extension"],
            defines=[f"COURSE_OPS={namespace}"], python_module=True)
        t = testing.random_tensor(10, 3)
        testing.assert_close(module.scaled(t), 2.0 * t, what="the pybind11 function")
        testing.assert_close(module.scaled(t, scale=-0.5), -0.5 * t, what="its keyword argument")
        u = testing.random_tensor(10, 4)
        testing.assert_close(getattr(torch.ops, namespace).vector_add(t, u), t + u,
                             what="the operator registered by the same library")

    def test_a_build_error_names_the_files(self):
        with tempfile.TemporaryDirectory() as directory:
            broken = Path(directory) / "broken.cpp"
            broken.write_text("#include <torch/extension.h>\nthis is not C++;\n")
            with self.assertRaisesRegex(RuntimeError, "did not build: fix the first compiler error in .*broken.cpp"):
                extension.load("course_harness_broken", sources=[broken], python_module=True)


class HopperFlagsTest(unittest.TestCase):
    """hopper_sm90a=True adds sm_90a machine code on a real Hopper only."""

    def test_a_hopper_gets_sm90a(self):
        self.assertEqual(extension.hopper_cuda_flags((9, 0), emulated=False), extension.SM90A_FLAGS)
        self.assertIn("code=sm_90a", extension.SM90A_FLAGS[0])

    def test_other_gpus_and_emulation_get_none(self):
        for capability in [(7, 5), (8, 0), (8, 6), (8, 9), (10, 0), (12, 0)]:
            self.assertEqual(extension.hopper_cuda_flags(capability, emulated=False), [], capability)
        # A Hopper that plays an A100 or a T4 must run their code paths, not wgmma.
        self.assertEqual(extension.hopper_cuda_flags((9, 0), emulated=True), [])


class TwoExercisesCudaTest(testing.CudaTestCase):
    """An extension from two exercises' CUDA sources (m1.01 and m1.04), or their CMake libraries."""

    def check(self, module):
        a = testing.random_tensor(100003, 5, device="cuda")
        b = testing.random_tensor(100003, 6, device="cuda")
        testing.assert_close(module.vector_add(a, b), a + b, what="m1.01's vector_add")
        x = testing.random_tensor((37, 129), 7, device="cuda")
        w = testing.random_tensor(129, 8, device="cuda")
        bias = testing.random_tensor(129, 9, device="cuda")
        testing.assert_close(module.affine_gelu(x, w, bias), torch.nn.functional.gelu(x * w + bias),
                             what="m1.04's affine_gelu", rtol=1.3e-6, atol=1e-5)

    def includes(self):
        return [paths.ROOT / "month1" / "01_vector_add", paths.ROOT / "month1" / "04_fused_elementwise"]

    def test_from_sources(self):
        module = extension.load(
            "course_harness_two_exercises", impl="solution", python_module=True,
            sources=[HERE / "two_exercises.cpp"],
            cuda_sources=[paths.source_dir("m1_01", "solution") / "vector_add.cu",
                          paths.source_dir("m1_04", "solution") / "fused_elementwise.cu"],
            include_dirs=self.includes(), with_course_runtime=True)
        self.check(module)

    @unittest.skipUnless(paths.build_tree(), "needs the CMake build (COURSE_BUILD_DIR)")
    def test_from_cmake_libraries(self):
        libraries = [extension.cmake_library("m1_01_vector_add_solution"),
                     extension.cmake_library("m1_04_fused_elementwise_solution"),
                     extension.cmake_library("course_common")]
        module = extension.load(
            "course_harness_two_libraries", impl="solution", python_module=True,
            sources=[HERE / "two_exercises.cpp"], include_dirs=self.includes(),
            static_libraries=libraries)
        self.check(module)


if __name__ == "__main__":
    unittest.main()
