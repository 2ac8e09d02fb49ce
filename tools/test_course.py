#!/usr/bin/env python3
"""Unit tests of ./course's progress logic (tools/course.py), on the CPU: how a grade's
skipped tests are read, where the path goes next, and how hints are shown one step at a time."""
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))
import course  # noqa: E402
import skeleton_manifest  # noqa: E402

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
        self.saved = course.build_target, course.run_tests, course.changed_from_skeleton
        course.build_target = lambda target, quiet: True
        course.changed_from_skeleton = lambda exercise: False
        self.exercises = course.all_exercises()
        self.hopper = course.find_exercise("m2_08", self.exercises)
        self.wmma = course.find_exercise("m2_07", self.exercises)

    def tearDown(self):
        course.build_target, course.run_tests, course.changed_from_skeleton = self.saved
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
        # Everything before m2.08 settled: the path goes past it to the next exercise that is
        # not a bonus (m2.09).
        settled_before_m2_08 = lambda e: "done" if (e.month, e.number) < (2, "08") else "not started"
        after = [e for e in self.exercises if (e.month, e.number) > (2, "08") and not e.bonus]
        with mock.patch.object(course, "state_of", settled_before_m2_08):
            self.assertEqual(course.first_unfinished(self.exercises).short, after[0].short)
            self.assertEqual(after[0].short, "m2_09")


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


HINTS = """# Hints for m3.05 (./course hint m3_05 shows them one step at a time)

## TODO(m3.05a): which output pixel a row is
### The idea
Rows are output pixels.
### Almost the code
```cpp
## not a heading: it is inside a code block
int n = m / (P * Q);
```
## TODO(m3.05b): which tap a column is
Shown above each step.
### The idea
Columns are taps.
## When the machine-code check fails
### Local memory
Unroll the loops.
"""


class HintLanguageTest(unittest.TestCase):
    """./course hint --lang ko: the Korean hints.ko.md, remembered; English where missing."""

    def setUp(self):
        self.scratch = tempfile.TemporaryDirectory()
        self.addCleanup(self.scratch.cleanup)
        root = Path(self.scratch.name)
        (root / "month1" / "01_x").mkdir(parents=True)
        (root / "month1" / "01_x" / "hints.md").write_text("# Hints\n## TODO(m1.01)\n### Idea\nEnglish.\n")
        self.exercise = mock.Mock(folder=Path("month1/01_x"))
        patches = [mock.patch.dict(os.environ, {"BUILD_DIR": str(root / "build")}),
                   mock.patch.object(course, "ROOT", root)]
        for patch in patches:
            patch.start()
            self.addCleanup(patch.stop)
        os.environ.pop("COURSE_LANG", None)
        self.root = root

    def language(self, *argv):
        return course.hint_language(course.parser().parse_args(["hint", *argv]))

    def test_the_language_is_remembered_and_course_lang_overrides_it_for_one_command(self):
        self.assertEqual(self.language(), "en")
        self.assertEqual(self.language("--lang", "ko"), "ko")
        self.assertEqual(self.language(), "ko")
        with mock.patch.dict(os.environ, {"COURSE_LANG": "en"}):
            self.assertEqual(self.language(), "en")
        self.assertEqual(self.language(), "ko")
        with mock.patch.dict(os.environ, {"COURSE_LANG": "fr"}):
            with self.assertRaises(course.UsageError):
                self.language()

    def test_korean_hints_where_they_exist_else_english(self):
        self.assertEqual(course.hints_path(self.exercise, "ko").name, "hints.md")
        (self.root / "month1" / "01_x" / "hints.ko.md").write_text("# 힌트\n")
        self.assertEqual(course.hints_path(self.exercise, "ko").name, "hints.ko.md")
        self.assertEqual(course.hints_path(self.exercise, "en").name, "hints.md")


class HintsTest(unittest.TestCase):
    """./course hint on a hints.md of its own, with a scratch build folder for the seen-file."""

    def setUp(self):
        self.scratch = tempfile.TemporaryDirectory()
        self.hints = Path(self.scratch.name) / "hints.md"
        self.hints.write_text(HINTS)
        patches = [mock.patch.dict(os.environ, {"BUILD_DIR": str(Path(self.scratch.name) / "build")}),
                   mock.patch.object(course, "hints_path", lambda exercise, language="en": self.hints)]
        for patch in patches:
            patch.start()
            self.addCleanup(patch.stop)
        self.addCleanup(self.scratch.cleanup)
        self.exercises = course.all_exercises()
        self.seen_file = course.progress_dir() / f"{course.find_exercise('m3_05', self.exercises).id}.hints.json"

    def hint(self, *argv):
        args = course.parser().parse_args(["hint", *argv])
        output = io.StringIO()
        with contextlib.redirect_stdout(output):
            status = args.function(args, self.exercises)
        self.assertEqual(status, 0)
        return output.getvalue()

    def test_sections_steps_and_code_blocks_are_parsed(self):
        sections = course.parse_hints(self.hints)
        self.assertEqual([s.tags for s in sections], [("m3.05a",), ("m3.05b",), ()])
        self.assertEqual([title for title, _ in sections[0].steps], ["The idea", "Almost the code"])
        self.assertIn("## not a heading", sections[0].steps[1][1])
        self.assertEqual(sections[1].intro, "Shown above each step.")
        self.assertEqual(sections[2].title, "When the machine-code check fails")
        self.assertTrue(all(s.stepped for s in sections))

    def test_a_section_without_steps_is_one_step(self):
        self.hints.write_text("# Hints\n\n## TODO(m3.05a), TODO(m3.05b): one step\nDo both.\n")
        (section,) = course.parse_hints(self.hints)
        self.assertEqual(section.tags, ("m3.05a", "m3.05b"))
        self.assertFalse(section.stepped)
        self.assertEqual(section.steps, [("TODO(m3.05a), TODO(m3.05b): one step", "Do both.")])
        self.assertIn("Do both.", self.hint("m3_05", "b"))

    def test_the_next_step_goes_through_each_todo_in_order(self):
        steps = [self.hint("m3_05") for _ in range(4)]
        self.assertIn("TODO(m3.05a): which output pixel a row is\nstep 1 of 2: The idea", steps[0])
        self.assertIn("./course hint m3_05 a again for step 2 of 2", steps[0])
        self.assertIn("step 2 of 2: Almost the code", steps[1])
        self.assertIn("goes on with TODO(m3.05b)", steps[1])
        self.assertIn("step 1 of 1: The idea\n\nShown above each step.\n\nColumns are taps.", steps[2])
        self.assertIn("Unroll the loops.", steps[3])
        self.assertIn("that was the last hint", steps[3])
        self.assertIn("You have seen every hint", self.hint("m3_05"))
        self.assertEqual(json.loads(self.seen_file.read_text())["shown"],
                         {"m3.05a": 2, "m3.05b": 1, "When the machine-code check fails": 1})

    def test_a_todo_is_named_in_any_form(self):
        for argv in (["m3_05", "b"], ["m3_05", "m3.05b"], ["m3_05", "TODO(m3.05b)"], ["m3_05", "3.05b"],
                     ["m3_05", "m3_05b"], ["m3_05", "2"], ["m3.05b"], ["TODO(m3.05b)"]):
            self.seen_file.unlink(missing_ok=True)
            self.assertIn("Columns are taps.", self.hint(*argv), argv)

    def test_a_named_todo_goes_on_with_its_own_steps_only(self):
        self.assertIn("The idea\n\nRows", self.hint("m3_05", "a"))
        self.assertIn("int n = m / (P * Q);", self.hint("m3_05", "a"))
        self.assertIn("You have seen the 2 step(s) for TODO(m3.05a)", self.hint("m3_05", "a"))
        self.assertIn("Columns are taps.", self.hint("m3_05"))  # a is done: the plain command goes on with b

    def test_level_shows_one_step_of_a_todo(self):
        self.assertIn("step 2 of 2: Almost the code", self.hint("m3_05", "a", "--level", "2"))
        self.assertIn("step 1 of 2: The idea", self.hint("m3_05", "--step", "1"))  # the TODO shown last
        args = course.parser().parse_args(["hint", "m3_05", "b", "--level", "3"])
        with self.assertRaisesRegex(course.UsageError, "has steps 1 to 1, not 3"):
            args.function(args, self.exercises)

    def test_list_shows_the_titles_and_what_was_seen(self):
        self.hint("m3_05")
        text = self.hint("m3_05", "--list")
        self.assertIn("[1] TODO(m3.05a): which output pixel a row is   (./course hint m3_05 a)", text)
        self.assertIn("1. The idea  (seen)", text)
        self.assertIn("2. Almost the code\n", text)
        self.assertIn("[3] When the machine-code check fails   (./course hint m3_05 3)", text)
        self.assertIn("./course hint m3_05 a --level 2", text)
        self.assertNotIn("Rows are output pixels", text)

    def test_an_old_seen_file_still_loads(self):
        self.seen_file.write_text(json.dumps({"shown": 3}) + "\n")
        self.assertIn("step 1 of 2: The idea", self.hint("m3_05"))
        self.assertEqual(json.loads(self.seen_file.read_text()), {"shown": {"m3.05a": 1}, "last": "m3.05a"})
        for broken in ("not json", "[]", json.dumps({"shown": {"m3.05a": "two"}, "last": 5})):
            self.seen_file.write_text(broken)
            self.assertIn("step 1 of 2: The idea", self.hint("m3_05"), broken)

    def test_an_unknown_todo_lists_the_ones_with_hints(self):
        for argv in (["m3_05", "e"], ["m3_05", "m3.04a"], ["m3.05e"]):
            args = course.parser().parse_args(["hint", *argv])
            with self.assertRaises(course.UsageError) as caught:
                args.function(args, self.exercises)
            message = str(caught.exception)
            self.assertIn("has no hints for", message)
            for line in ("./course hint m3_05 a    TODO(m3.05a)", "./course hint m3_05 b    TODO(m3.05b)",
                         "./course hint m3_05 3    When the machine-code check fails"):
                self.assertIn(line, message)


def git(root, *args):
    """git in a throwaway repository, with a fixed author and no user configuration."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-C", str(root), *args], env=env, check=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE).stdout


def fake_course(root):
    """A repository of one exercise, month1/01_fake: fake.cu to edit (its twin is in solutions/),
    a given header and test, the lesson; committed with its tools/skeletons.json."""
    files = {"month1/01_fake/CMakeLists.txt": "add_course_exercise(fake)\n",
             "month1/01_fake/README.md": "# m1.01 Fake\n\n**Needs:** any GPU\n",
             "month1/01_fake/fake.cu": "// TODO(m1.01a): the kernel\n",
             "month1/01_fake/fake_pipeline.h": "// given: the pipeline\n",
             "month1/01_fake/check_fake.py": "print('checked')\n",
             "month1/01_fake/test_fake.cu": "// names TODO(m1.01a)\n",
             "solutions/month1/01_fake/fake.cu": "// the kernel\n"}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "month1/01_fake/check_fake.py").chmod(0o755)
    git(root, "init", "-q")
    git(root, "add", "-A")
    skeleton_manifest.main(["--root", str(root), "--write"])
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the course")
    return files


class SkeletonTest(unittest.TestCase):
    """status and reset compare with tools/skeletons.json, in a throwaway repository whose
    learner commits work in progress."""

    def setUp(self):
        self.scratch = tempfile.TemporaryDirectory()
        self.root = Path(self.scratch.name) / "course"
        self.root.mkdir()
        with contextlib.redirect_stdout(io.StringIO()):
            self.files = fake_course(self.root)
        patches = [mock.patch.object(course, "ROOT", self.root),
                   mock.patch.dict(os.environ, {"BUILD_DIR": str(Path(self.scratch.name) / "build")})]
        for patch in patches:
            patch.start()
            self.addCleanup(patch.stop)
        self.addCleanup(self.scratch.cleanup)
        self.exercise = course.find_exercise("m1_01", course.all_exercises())

    def reset(self):
        args = course.parser().parse_args(["reset", "m1_01"])
        output = io.StringIO()
        with contextlib.redirect_stdout(output):
            self.assertEqual(args.function(args, course.all_exercises()), 0)
        return output.getvalue()

    def test_the_manifest_lists_learner_and_given_files(self):
        manifest = skeleton_manifest.load(self.root)
        files = manifest["exercises"]["month1/01_fake"]
        self.assertEqual(list(files["learner"]), [rel.as_posix() for rel in self.exercise.learner_files()])
        self.assertEqual(sorted(files["given"]), ["month1/01_fake/CMakeLists.txt", "month1/01_fake/check_fake.py",
                                                  "month1/01_fake/fake_pipeline.h", "month1/01_fake/test_fake.cu"])
        blob = git(self.root, "hash-object", "month1/01_fake/fake.cu").decode().strip()
        self.assertEqual(files["learner"]["month1/01_fake/fake.cu"], blob)
        self.assertEqual(skeleton_manifest.check(self.root), [])

    def test_committed_work_is_started_and_reset_brings_the_original_back(self):
        self.assertEqual(course.state_of(self.exercise), "not started")
        kernel, header = self.root / "month1/01_fake/fake.cu", self.root / "month1/01_fake/fake_pipeline.h"
        kernel.write_text("// my kernel, half done\n")
        header.write_text("// my deeper pipeline\n")
        git(self.root, "commit", "-q", "-am", "work in progress")
        self.assertEqual(git(self.root, "status", "--porcelain"), b"")
        self.assertEqual(course.state_of(self.exercise), "started")

        text = self.reset()
        self.assertIn("back to the original skeleton: month1/01_fake/fake.cu, month1/01_fake/fake_pipeline.h", text)
        self.assertEqual(kernel.read_text(), self.files["month1/01_fake/fake.cu"])
        self.assertEqual(header.read_text(), self.files["month1/01_fake/fake_pipeline.h"])
        backups = list((self.root / "backups" / "m1_01_fake").iterdir())
        self.assertEqual(len(backups), 1)
        self.assertIn(f"your version is kept in {course.display(backups[0])}/", text)
        self.assertEqual((backups[0] / "month1/01_fake/fake.cu").read_text(), "// my kernel, half done\n")
        self.assertEqual((backups[0] / "month1/01_fake/fake_pipeline.h").read_text(), "// my deeper pipeline\n")
        self.assertEqual(course.state_of(self.exercise), "not started")
        self.assertIn("nothing to reset", self.reset())

    def test_a_deleted_file_comes_back_with_its_mode(self):
        script = self.root / "month1/01_fake/check_fake.py"
        script.unlink()
        git(self.root, "commit", "-q", "-am", "tidy up")
        self.assertEqual(course.state_of(self.exercise), "not started")  # a given file: not your work
        text = self.reset()
        self.assertIn("month1/01_fake/check_fake.py", text)
        self.assertNotIn("your version is kept", text)
        self.assertEqual(script.read_text(), self.files["month1/01_fake/check_fake.py"])
        self.assertTrue(os.access(script, os.X_OK))

    def test_status_needs_no_git(self):
        (self.root / "month1/01_fake/fake.cu").write_text("// mine\n")
        with mock.patch.object(subprocess, "run", side_effect=AssertionError("git was called")):
            self.assertEqual(course.state_of(self.exercise), "started")

    def test_a_missing_original_is_named_with_what_to_do(self):
        manifest = skeleton_manifest.load(self.root)
        manifest["exercises"]["month1/01_fake"]["learner"]["month1/01_fake/fake.cu"] = "0" * 40
        (self.root / skeleton_manifest.MANIFEST).write_text(skeleton_manifest.dump(manifest))
        (self.root / "month1/01_fake/fake.cu").write_text("// mine\n")
        with self.assertRaisesRegex(course.UsageError,
                                    r"the original of month1/01_fake/fake\.cu .*git fetch --unshallow"):
            self.reset()
        self.assertEqual((self.root / "month1/01_fake/fake.cu").read_text(), "// mine\n")  # nothing touched

    def test_reset_needs_git(self):
        (self.root / ".git").rename(self.root / "git-elsewhere")
        with self.assertRaisesRegex(course.UsageError, "has no .git"):
            self.reset()


class RealManifestTest(unittest.TestCase):
    def test_the_manifest_says_which_files_the_learner_edits(self):
        manifest = skeleton_manifest.load(course.ROOT)
        for exercise in course.all_exercises():
            listed = manifest["exercises"].get(exercise.folder.as_posix(), {}).get("learner", {})
            self.assertEqual(sorted(listed), [rel.as_posix() for rel in exercise.learner_files()],
                             f"{exercise.folder}: run {skeleton_manifest.WRITE_COMMAND}")



class TestCommandTest(unittest.TestCase):
    """./course test: which targets it builds and which tests it runs, for the exercises named."""

    def setUp(self):
        self.exercises = course.all_exercises()

    def select(self, *argv):
        args = course.parser().parse_args(["test", *argv])
        return course.test_selection(args.exercises, args.filter, self.exercises)

    def test_an_exercise_named_builds_only_its_reference_side(self):
        chosen, test_filter = self.select("m3_06")
        self.assertEqual([e.id for e in chosen], ["m3_06_autograd_conv"])
        self.assertIsNone(test_filter)
        # A Python exercise's target is empty: its tests build their extension when they run.
        self.assertEqual(course.test_targets(chosen), ["m3_06_autograd_conv_solution_all"])
        command = course.test_command(chosen, test_filter)
        self.assertEqual(command[command.index("-L") + 1], "^(solution|cpu)$")
        self.assertIn("^(m3_06_autograd_conv)$", command)
        self.assertNotIn("-R", command)

    def test_several_exercises_in_any_form_and_a_filter(self):
        chosen, test_filter = self.select("m2.05", "month3/04_im2col_gemm", "m2_05_register_tiling", "-R", "Sgemm")
        self.assertEqual(course.test_targets(chosen),
                         ["m2_05_register_tiling_solution_all", "m3_04_im2col_gemm_solution_all"])
        command = course.test_command(chosen, test_filter)
        self.assertIn("^(m2_05_register_tiling|m3_04_im2col_gemm)$", command)
        self.assertEqual(command[-2:], ["-R", "Sgemm"])

    def test_no_exercise_builds_everything(self):
        chosen, test_filter = self.select()
        self.assertEqual((chosen, test_filter), ([], None))
        self.assertEqual(course.test_targets(chosen), ["all"])
        self.assertEqual(course.test_command(chosen, None).count("-L"), 1)

    def test_one_argument_that_names_no_exercise_is_the_filter_as_before(self):
        self.assertEqual(self.select("Sgemm2d"), ([], "Sgemm2d"))
        self.assertEqual(self.select("--filter", "^harness/"), ([], "^harness/"))

    def test_a_mistyped_exercise_is_an_error_not_a_filter(self):
        for argv in (["m3_6x"], ["month3/06_autograd"], ["m3_06", "Sgemm2d"], ["Sgemm2d", "-R", "x"]):
            with self.assertRaises(course.UsageError, msg=argv):
                self.select(*argv)

    def run_command(self, *argv):
        args = course.parser().parse_args(["test", *argv])
        built, ran, checked = [], [], []
        with mock.patch.object(course, "build_target", lambda target, quiet: built.append(target) or True), \
                mock.patch.object(course.subprocess, "call", lambda command: ran.append(command) or 0), \
                mock.patch.object(course, "run_course_check", lambda *options: checked.append(options) or 0), \
                contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(args.function(args, self.exercises), 0)
        return built, ran, checked

    def test_the_command_builds_each_exercise_named_then_runs_its_tests(self):
        built, ran, checked = self.run_command("m2_05", "m3_06")
        self.assertEqual(built, ["m2_05_register_tiling_solution_all", "m3_06_autograd_conv_solution_all"])
        self.assertEqual(len(ran), 1)
        self.assertIn("^(m2_05_register_tiling|m3_06_autograd_conv)$", ran[0])
        self.assertEqual(checked, [])  # the skeletons' check needs every skeleton built

    def test_the_command_without_exercises_builds_all_and_checks_the_skeletons(self):
        built, ran, checked = self.run_command()
        self.assertEqual(built, ["all"])
        self.assertEqual(checked, [("--skeleton-messages",)])


class EarlierKernelsConfigureTest(unittest.TestCase):
    """COURSE_EARLIER_KERNELS is read at every grade: the CMake build (m3.04) is configured again
    when its value is not the environment's."""

    CACHE = "CMAKE_CUDA_ARCHITECTURES:STRING=90\nCOURSE_EARLIER_KERNELS:STRING={}\n"

    def command(self, cached, environ):
        cache = None if cached is None else self.CACHE.format(cached)
        return course.configure_command(cache, environ)

    def test_nothing_to_do_while_the_build_has_the_environments_value(self):
        self.assertIsNone(self.command("exercise", {}))
        self.assertIsNone(self.command("exercise", {"COURSE_EARLIER_KERNELS": ""}))
        self.assertIsNone(self.command("solution", {"COURSE_EARLIER_KERNELS": " solution "}))
        self.assertIsNone(course.configure_command("CMAKE_CUDA_ARCHITECTURES:STRING=90\n", {}))  # an older build

    def test_a_change_configures_again_with_the_value(self):
        command = self.command("exercise", {"COURSE_EARLIER_KERNELS": "solution"})
        self.assertEqual(command[-1], "-DCOURSE_EARLIER_KERNELS=solution")
        self.assertNotIn("-DCMAKE_BUILD_TYPE=Release", command)  # the build keeps its type
        # Unset again: back to yours, as the Python exercises read it.
        self.assertEqual(self.command("solution", {})[-1], "-DCOURSE_EARLIER_KERNELS=exercise")

    def test_a_first_configure_and_cuda_archs(self):
        command = self.command(None, {"COURSE_EARLIER_KERNELS": "solution"})
        self.assertIn("-DCMAKE_BUILD_TYPE=Release", command)
        self.assertEqual(command[-1], "-DCOURSE_EARLIER_KERNELS=solution")
        command = self.command("exercise", {"CUDA_ARCHS": "80"})
        self.assertIn("-DCMAKE_CUDA_ARCHITECTURES=80", command)
        self.assertIsNone(self.command("exercise", {"CUDA_ARCHS": "90"}))

    def test_a_wrong_value_is_a_usage_error(self):
        with self.assertRaisesRegex(course.UsageError, "must be 'exercise'.*got 'reference'"):
            self.command("exercise", {"COURSE_EARLIER_KERNELS": "reference"})

    def test_configure_runs_the_command_and_says_why(self):
        with tempfile.TemporaryDirectory() as scratch:
            (Path(scratch) / "CMakeCache.txt").write_text(self.CACHE.format("exercise"))
            ran, output = [], io.StringIO()
            with mock.patch.dict(os.environ, {"BUILD_DIR": scratch, "COURSE_EARLIER_KERNELS": "solution"}), \
                    mock.patch.object(course, "run_or_exit", ran.append), contextlib.redirect_stdout(output):
                course.configure()
            self.assertEqual(ran[0][-1], "-DCOURSE_EARLIER_KERNELS=solution")
            self.assertIn("the build was configured with exercise: configuring again", output.getvalue())
            ran.clear()
            with mock.patch.dict(os.environ, {"BUILD_DIR": scratch, "COURSE_EARLIER_KERNELS": "exercise"}), \
                    mock.patch.object(course, "run_or_exit", ran.append):
                course.configure()
            self.assertEqual(ran, [])


if __name__ == "__main__":
    unittest.main()
