#!/usr/bin/env python3
"""Unit tests of ./course's progress logic (tools/course.py), on the CPU: how a grade's
skipped tests are read, and where the path goes next."""
import contextlib
import io
import os
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))
import course  # noqa: E402

# The wordings the harness uses (course/requirements.h, course_harness/requirements.py).
CC_SKIP = "needs compute capability 9.0 (a Hopper, H100 or H200: wgmma and the TMA exist only in sm_90a code); this GPU has 8.6"
SHARED_SKIP = "needs 192 KiB of shared memory per block (mma_gemm); this GPU allows 99 KiB"
FIXABLE_SKIP = ("no CUDA here: this PyTorch (2.5.0+cpu) is built without CUDA; to fix: "
                "python3 -m pip install torch --index-url https://download.pytorch.org/whl/cu126")
NO_GPU_SKIP = "no CUDA GPU on this machine (cudaErrorNoDevice: no CUDA-capable device is detected); this test needs one"


def result(name, status, output=""):
    return course.TestResult(name, status, output)


class ClassifySkipsTest(unittest.TestCase):
    def test_machine_limits_fixes_and_the_rest_are_told_apart(self):
        machine, fixable, other = course.classify_skips([CC_SKIP, SHARED_SKIP, FIXABLE_SKIP, NO_GPU_SKIP])
        self.assertEqual(machine, [CC_SKIP, SHARED_SKIP])
        self.assertEqual(fixable, [("no CUDA here: this PyTorch (2.5.0+cpu) is built without CUDA",
                                    "python3 -m pip install torch --index-url https://download.pytorch.org/whl/cu126")])
        self.assertEqual(other, [NO_GPU_SKIP])

    def test_what_the_machine_lacks_is_named_once(self):
        self.assertEqual(course.machine_needs([CC_SKIP, CC_SKIP, SHARED_SKIP]),
                         ["compute capability 9.0", "192 KiB of shared memory per block"])


class GradeStatesTest(unittest.TestCase):
    """grade() with the build and ctest replaced by canned results, in a scratch build folder."""

    def setUp(self):
        self.scratch = tempfile.TemporaryDirectory()
        self.saved_env = os.environ.get("BUILD_DIR")
        os.environ["BUILD_DIR"] = self.scratch.name
        self.saved = course.build_target, course.run_tests, course.changed_from_git
        course.build_target = lambda target, quiet: True
        course.changed_from_git = lambda exercise: False
        self.exercises = course.all_exercises()
        self.hopper = course.find_exercise("m2_08", self.exercises)
        self.wmma = course.find_exercise("m2_07", self.exercises)

    def tearDown(self):
        course.build_target, course.run_tests, course.changed_from_git = self.saved
        if self.saved_env is None:
            os.environ.pop("BUILD_DIR", None)
        else:
            os.environ["BUILD_DIR"] = self.saved_env
        self.scratch.cleanup()

    def grade(self, exercise, results):
        course.run_tests = lambda exercise, only=None: results
        output = io.StringIO()
        with contextlib.redirect_stdout(output):
            verdict = course.grade(exercise)
        return verdict, output.getvalue()

    def test_only_machine_limits_skipped_is_done_on_this_machine(self):
        verdict, text = self.grade(self.wmma, [result("a", "passed"), result("b", "skipped", f"x.cu:1: Skipped\n{SHARED_SKIP}\n")])
        self.assertTrue(verdict)
        self.assertIn("DONE ON THIS MACHINE", text)
        self.assertIn("192 KiB of shared memory per block", text)
        self.assertEqual(course.state_of(self.wmma), "done here")

    def test_a_fixable_skip_blocks_the_exercise_but_not_the_path(self):
        verdict, text = self.grade(self.wmma, [result("a", "passed"), result("b", "skipped", f"SKIPPED: {FIXABLE_SKIP}\n")])
        self.assertTrue(verdict)
        self.assertIn("BLOCKED", text)
        self.assertIn("to fix: python3 -m pip install torch", text)
        self.assertEqual(course.state_of(self.wmma), "blocked")
        self.assertIn(course.state_of(self.wmma), course.MOVES_ON)

    def test_classes_that_share_a_fix_show_it_once(self):
        verdict, text = self.grade(self.wmma, [result("a", "skipped", f"SKIPPED: {FIXABLE_SKIP} (4 tests)\n"),
                                               result("b", "skipped", f"SKIPPED: {FIXABLE_SKIP}\n")])
        self.assertTrue(verdict)
        self.assertEqual(text.count("to fix:"), 1)

    def test_a_skip_without_a_known_reason_is_not_graded(self):
        verdict, text = self.grade(self.wmma, [result("a", "passed"), result("b", "skipped", f"x.cu:1: Skipped\n{NO_GPU_SKIP}\n")])
        self.assertFalse(verdict)
        self.assertIn("NOT GRADED", text)
        self.assertEqual(course.state_of(self.wmma), "started")

    def test_a_failure_wins_over_skips(self):
        verdict, text = self.grade(self.wmma, [result("a", "failed", "look at TODO(m2.07c)"),
                                               result("b", "skipped", f"x.cu:1: Skipped\n{SHARED_SKIP}\n")])
        self.assertFalse(verdict)
        self.assertIn("FAILED", text)
        self.assertEqual(course.state_of(self.wmma), "started")

    def test_a_bonus_exercise_never_holds_up_the_path(self):
        self.assertTrue(self.hopper.bonus)
        self.assertFalse(self.wmma.bonus)
        following = course.first_unfinished(self.exercises)
        self.assertIsNotNone(following)
        self.assertFalse(following.bonus)
        # Everything before m2.08 settled: the path goes past it to month 3.
        settled_before_m2_08 = lambda e: "done" if (e.month, e.number) < (2, "08") else "not started"
        with mock.patch.object(course, "state_of", settled_before_m2_08):
            self.assertEqual(course.first_unfinished(self.exercises).short, "m3_01")


class NeedsLineTest(unittest.TestCase):
    def test_every_lesson_says_what_its_exercise_needs(self):
        for exercise in course.all_exercises():
            self.assertTrue(exercise.needs, f"{exercise.lesson} has no **Needs:** line near its top")


class NamesTest(unittest.TestCase):
    def test_the_forms_of_an_exercise_name(self):
        exercises = course.all_exercises()
        for name in ("m2_08", "m2.08", "m2.8", "m2_8", "m2_08_hopper_gemm", "month2/08_hopper_gemm"):
            self.assertEqual(course.find_exercise(name, exercises).short, "m2_08", name)

    def test_a_typo_gets_the_nearest_names(self):
        exercises = course.all_exercises()
        with self.assertRaisesRegex(course.UsageError, r"Did you mean m3_06\?"):
            course.find_exercise("autograd_cov", exercises)
        with self.assertRaisesRegex(course.UsageError, r"unknown exercise 'flash_attention'\. The exercises are"):
            course.find_exercise("flash_attention", exercises)


if __name__ == "__main__":
    unittest.main()
