#!/usr/bin/env python3
"""Unit tests of the course checker's own logic (tools/check_course.py), on the CPU."""
import contextlib
import io
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_course  # noqa: E402
import skeleton_manifest  # noqa: E402


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


GOOD_HINTS = """# Hints for m3.05 (./course hint m3_05 shows them one step at a time)

## TODO(m3.05a): which output pixel a row is
### The idea
Rows are output pixels.
### Almost the code
`n = m / (P * Q)`
## TODO(m3.05b): which tap a column is
### The idea
Columns are taps.
## When the machine-code check fails
### Local memory
Unroll the loops.
"""


class HintsFormatTest(unittest.TestCase):
    """check_hints on an exercise folder of its own: a kernel with TODO(m3.05a) and (m3.05b)."""

    def setUp(self):
        self.scratch = tempfile.TemporaryDirectory()
        self.addCleanup(self.scratch.cleanup)
        self.root = Path(self.scratch.name)
        self.folder = self.root / "month3" / "05_implicit_gemm"
        self.folder.mkdir(parents=True)
        (self.folder / "kernel.cu").write_text("// TODO(m3.05a): the row\n// TODO(m3.05b): the column\n")
        (self.folder / "README.md").write_text("The lesson mentions TODO(m3.05z), which is no TODO.\n")

    def problems(self, hints):
        (self.folder / "hints.md").write_text(hints)
        return check_course.check_hints(self.root)

    def test_the_format_passes(self):
        self.assertEqual(self.problems(GOOD_HINTS), [])

    def test_a_section_without_steps_is_reported(self):
        problems = self.problems(GOOD_HINTS.replace("### The idea\nColumns", "Columns"))
        self.assertEqual(len(problems), 1)
        self.assertIn("'## TODO(m3.05b): which tap a column is' has no '### ' step", problems[0])

    def test_an_empty_step_is_reported(self):
        problems = self.problems(GOOD_HINTS.replace("Unroll the loops.\n", ""))
        self.assertEqual(len(problems), 1)
        self.assertIn("'### Local memory'", problems[0])

    def test_a_todo_the_exercise_lacks_is_reported(self):
        for tag in ("m3.05c", "m3.05z"):  # z: only the README names it
            problems = self.problems(GOOD_HINTS + f"## TODO({tag}): more\n### The idea\nMore.\n")
            self.assertEqual(len(problems), 1, tag)
            self.assertIn(f"names TODO({tag}), which is in none of the exercise's files", problems[0])

    def test_a_todo_without_a_section_is_reported(self):
        problems = self.problems(GOOD_HINTS.replace("## TODO(m3.05b): which tap a column is", "## Columns"))
        self.assertEqual(problems, ["month3/05_implicit_gemm/hints.md: no '## ' section for TODO(m3.05b)"])

    def test_a_section_may_name_two_todos_but_a_todo_has_one_section(self):
        merged = GOOD_HINTS.replace("## TODO(m3.05a): which", "## TODO(m3.05a), TODO(m3.05b): which")
        self.assertEqual(len(self.problems(merged)), 1)
        self.assertIn("TODO(m3.05b) has two '## ' sections", self.problems(merged)[0])
        self.assertEqual(self.problems(merged.replace("## TODO(m3.05b): which tap a column is\n", "")
                                       .replace("### The idea\nColumns", "### Columns\nColumns")), [])

    def test_an_exercise_with_todos_needs_hints(self):
        self.assertEqual(check_course.check_hints(self.root),
                         ["month3/05_implicit_gemm: no hints.md for its TODOs"])

    def test_month_3_hints_are_in_the_format(self):
        root = Path(check_course.__file__).resolve().parent.parent
        self.assertEqual([p for p in check_course.check_hints(root) if p.startswith("month3/")], [])


class SkeletonManifestTest(unittest.TestCase):
    """tools/skeletons.json against the committed files of a throwaway repository."""

    def git(self, *args):
        env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
               "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
        subprocess.run(["git", "-C", str(self.root), *args], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def setUp(self):
        scratch = tempfile.TemporaryDirectory()
        self.addCleanup(scratch.cleanup)
        self.root = Path(scratch.name)
        for rel, text in {"month1/01_fake/fake.cu": "// TODO(m1.01a)\n", "month1/01_fake/README.md": "# Fake\n",
                          "month1/01_fake/fake_pipeline.h": "// given\n",
                          "solutions/month1/01_fake/fake.cu": "// done\n"}.items():
            (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.root / rel).write_text(text)
        self.git("init", "-q")
        self.git("add", "-A")
        with contextlib.redirect_stdout(io.StringIO()):
            skeleton_manifest.main(["--root", str(self.root), "--write"])
        self.git("add", "-A")
        self.git("commit", "-q", "-m", "the course")

    def check(self, strict):
        output = io.StringIO()
        with contextlib.redirect_stdout(output):
            problems = check_course.check_skeleton_manifest(self.root, strict)
        return problems, output.getvalue()

    def test_a_fresh_manifest_passes_and_the_working_tree_does_not_count(self):
        self.assertEqual(self.check(strict=True), ([], ""))
        (self.root / "month1/01_fake/fake.cu").write_text("// the learner's kernel\n")  # not committed
        (self.root / "month1/01_fake/README.md").write_text("# notes\n")
        self.git("commit", "-q", "-m", "lesson notes", "month1/01_fake/README.md")  # *.md: not listed
        self.assertEqual(self.check(strict=True), ([], ""))

    def test_a_skeleton_committed_without_the_manifest_is_a_problem_in_ci(self):
        (self.root / "month1/01_fake/fake_pipeline.h").write_text("// given, fixed\n")
        (self.root / "month1/01_fake/new_test.cu").write_text("// a new test\n")
        self.git("add", "-A")
        self.git("commit", "-q", "-m", "fix the skeleton, forget the manifest")
        problems, _ = self.check(strict=True)
        self.assertEqual(len(problems), 2)
        self.assertIn("month1/01_fake/fake_pipeline.h: the committed file is not the one tools/skeletons.json lists",
                      problems[0])
        self.assertIn("month1/01_fake/new_test.cu: git tracks it, but tools/skeletons.json does not list it",
                      problems[1])
        for problem in problems:
            self.assertIn("run python3 tools/skeleton_manifest.py --write", problem)
        # On a learner's machine, committed work is a note, not a problem.
        problems, text = self.check(strict=False)
        self.assertEqual(problems, [])
        self.assertIn("note: 2 committed file(s)", text)
        with contextlib.redirect_stdout(io.StringIO()):
            skeleton_manifest.main(["--root", str(self.root), "--write"])
        self.assertEqual(self.check(strict=True), ([], ""))

    def test_ci_makes_it_strict(self):
        with mock.patch.dict(os.environ, {"CI": "true"}):
            self.assertTrue(check_course.strict_manifest_wanted(False))
        with mock.patch.dict(os.environ, {"CI": ""}):
            self.assertFalse(check_course.strict_manifest_wanted(False))
            self.assertTrue(check_course.strict_manifest_wanted(True))

    def test_an_unreadable_manifest_is_a_problem(self):
        (self.root / "tools/skeletons.json").write_text("{")
        problems, _ = self.check(strict=False)
        self.assertEqual(len(problems), 1)
        self.assertIn("tools/skeletons.json cannot be read", problems[0])

    @unittest.skipUnless(os.environ.get("CI"), "CI only: a learner's commits of their own work "
                         "differ from the manifest by design")
    def test_the_real_manifest_matches_the_committed_skeletons(self):
        self.assertEqual(check_course.check_skeleton_manifest(Path(__file__).resolve().parent.parent, True), [])



M304_CMAKE = """# The benchmark compares with m3_03_direct_conv_solution (a comment: it does not count).
course_add_exercise(
  SOURCES    im2col.cu
  TESTS      test_im2col_gemm.cu
  BENCHMARKS bench_im2col_gemm.cu
  COMPARES_WITH m3_03_direct_conv)   # the benchmark's previous step: not a part of the build
course_exercise_id(m304_id m304_month)
target_link_libraries(${m304_id}_exercise PUBLIC course_cublas m2_05_register_tiling_${COURSE_EARLIER_KERNELS})
target_link_libraries(${m304_id}_solution PUBLIC course_cublas m2_05_register_tiling_solution)
"""
M306_LOADER = """from course_harness import paths
EARLIER_SOURCES = (
    ("m3_04", "im2col.cu"),
    ("m3_03", "conv2d_direct_tiled.cu"),
)
"""
M307_LOADER = 'EARLIER_EXTENSION = "month3/06_autograd_conv"\n'


class BuildsOnTest(unittest.TestCase):
    """check_builds_on on a course of its own: m3.04 links m2.05 (CMake), m3.06 compiles m3.04's and
    m3.03's sources (load_extension.py), m3.07 loads m3.06's extension."""

    def setUp(self):
        self.scratch = tempfile.TemporaryDirectory()
        self.addCleanup(self.scratch.cleanup)
        self.root = Path(self.scratch.name)
        self.exercise("month2/05_register_tiling", "course_add_exercise(SOURCES sgemm_2d_register_tile.cu)\n",
                      ["sgemm_2d_register_tile.cu"])
        self.exercise("month3/03_direct_conv", "course_add_exercise(SOURCES conv2d_direct_tiled.cu)\n",
                      ["conv2d_direct_tiled.cu"], builds_on="nothing earlier")
        self.exercise("month3/04_im2col_gemm", M304_CMAKE, ["im2col.cu"], builds_on="your m2.05")
        self.exercise("month3/06_autograd_conv", "course_add_python_tests(TESTS t.py SOURCES a.cu)\n",
                      ["a.cu"], builds_on="your m3.04, m3.03 and m2.05", loader=M306_LOADER)
        self.exercise("month3/07_capstone_cnn", "course_add_python_tests(TESTS t.py SOURCES c.py)\n",
                      ["c.py"], builds_on="your m3.06 (with m3.04, m3.03 and m2.05)", loader=M307_LOADER)

    def exercise(self, rel, cmake, sources, builds_on=None, loader=None):
        folder = self.root / rel
        (self.root / "solutions" / rel).mkdir(parents=True)
        folder.mkdir(parents=True)
        (folder / "CMakeLists.txt").write_text(cmake)
        for name in sources:
            (folder / name).write_text("// TODO\n")
            (self.root / "solutions" / rel / name).write_text("// done\n")
        self.lesson(rel, builds_on)
        if loader is not None:
            (folder / "load_extension.py").write_text(loader)

    def lesson(self, rel, builds_on):
        line = f"**Builds on:** {builds_on}\n" if builds_on is not None else ""
        (self.root / rel / "README.md").write_text(f"# {rel}\n**Needs:** a GPU\n{line}\nThe lesson.\n")

    def test_the_course_itself_passes(self):
        self.assertEqual(check_course.check_builds_on(Path(__file__).resolve().parent.parent), [])

    def test_what_each_build_uses(self):
        uses, problems = check_course.build_dependencies(self.root)
        self.assertEqual(problems, [])
        self.assertEqual(uses["m3.04"], {"m2.05"})  # not m3.03: COMPARES_WITH and comments do not count
        self.assertEqual(uses["m3.06"], {"m3.04", "m3.03", "m2.05"})  # m2.05 through m3.04
        self.assertEqual(uses["m3.07"], {"m3.06", "m3.04", "m3.03", "m2.05"})
        self.assertEqual(uses["m2.05"], set())
        self.assertEqual(check_course.check_builds_on(self.root), [])

    def test_a_line_that_names_too_few_or_too_many(self):
        self.lesson("month3/06_autograd_conv", "your m3.04 and m3.05")
        (problem,) = check_course.check_builds_on(self.root)
        self.assertIn("month3/06_autograd_conv/README.md: the **Builds on:** line does not name m3.03, m2.05, "
                      "which its build uses and names m3.05, which its build does not use", problem)

    def test_a_month_3_lesson_has_the_line_and_others_need_it_only_when_they_build_on_one(self):
        self.lesson("month3/03_direct_conv", None)
        self.lesson("month3/04_im2col_gemm", None)
        problems = check_course.check_builds_on(self.root)
        self.assertEqual(len(problems), 2)
        self.assertIn("month3/03_direct_conv/README.md: no **Builds on:** line under its **Needs:** line; its "
                      "build uses none", problems[0])
        self.assertIn("month3/04_im2col_gemm/README.md: no **Builds on:** line", problems[1])
        self.assertIn("uses m2.05", problems[1])
        # A month-2 lesson without the line is fine while its build uses no earlier exercise.
        self.assertEqual(builds_on_problems(self.root, "month2/05_register_tiling"), [])

    def test_a_declaration_must_be_a_literal_naming_files_that_exist(self):
        loader = self.root / "month3" / "06_autograd_conv" / "load_extension.py"
        loader.write_text('EARLIER_SOURCES = (("m3_04", "im2col.cu"), ("m3_03", "gone.cu"), ("m9_01", "x.cu"))\n')
        problems = check_course.build_dependencies(self.root)[1]
        self.assertIn("month3/06_autograd_conv/load_extension.py: EARLIER_SOURCES names "
                      "month3/03_direct_conv/gone.cu, which does not exist", problems)
        self.assertIn("month3/06_autograd_conv/load_extension.py: 'm9_01' names no exercise folder of this course",
                      problems)
        loader.write_text("EARLIER_SOURCES = tuple(SOURCES)\n")
        (problem,) = check_course.build_dependencies(self.root)[1]
        self.assertIn("cannot be read as literals", problem)


def builds_on_problems(root, rel):
    return [p for p in check_course.check_builds_on(root) if p.startswith(rel + "/")]


if __name__ == "__main__":
    unittest.main()
