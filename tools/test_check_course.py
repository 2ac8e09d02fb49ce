#!/usr/bin/env python3
"""Unit tests of the course checker's own logic (tools/check_course.py), on the CPU."""
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_course  # noqa: E402


class SkeletonMessagesTest(unittest.TestCase):
    def test_a_failure_naming_a_todo_is_fine(self):
        failed = {"exercise/m3_06_autograd_conv/GradBiasCpuTest":
                  "AssertionError: ... look at TODO(m3.06c) in month3/06_autograd_conv/autograd_conv.cu"}
        self.assertEqual(check_course.failures_without_todo(failed), [])

    def test_a_failure_naming_no_todo_is_reported_with_its_last_lines(self):
        failed = {"exercise/m3_01_pybind_gemm/BindingTest":
                  "collecting ...\nE   AttributeError: module 'build_config' has no attribute 'X'\n1 error\n",
                  "exercise/m2_05_register_tiling/Sass.Check": "FAILED: see the TODOs m2.05d and m2.05e\n"}
        problems = check_course.failures_without_todo(failed)
        self.assertEqual(len(problems), 2)
        self.assertIn("exercise/m2_05_register_tiling/Sass.Check", problems[0])
        self.assertIn("see the TODOs m2.05d", problems[0])  # a tag must be spelled TODO(m2.05d)
        self.assertIn("exercise/m3_01_pybind_gemm/BindingTest", problems[1])
        self.assertIn("AttributeError", problems[1])

    def test_a_failure_with_no_output_is_reported(self):
        problems = check_course.failures_without_todo({"exercise/m1_01_vector_add/Crash": ""})
        self.assertEqual(len(problems), 1)
        self.assertIn("(no output)", problems[0])


class TestFilesTest(unittest.TestCase):
    def test_tests_and_grading_scripts_count_as_tests(self):
        for name in ("test_vector_add.cu", "test_autograd_conv.py", "check_sass.py"):
            self.assertTrue(check_course.is_test_file(Path(name)), name)
        for name in ("vector_add.cu", "autograd_conv.py", "load_extension.py"):
            self.assertFalse(check_course.is_test_file(Path(name)), name)


if __name__ == "__main__":
    unittest.main()
