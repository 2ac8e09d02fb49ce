#!/usr/bin/env python3
"""The course checker: does every exercise hold together?

Without a GPU (this runs in CI, as the ctest test course/check_structure):
  - every exercise folder monthN/NN_name has a README.md and a CMakeLists.txt;
  - its skeleton has at least one TODO(mN.NN...) tag for the learner;
  - every skeleton file with a TODO has a solution twin at solutions/<same path>, and
    no solution file still has a TODO;
  - every solutions/ file mirrors a file of an exercise;
  - every TODO tag in a skeleton is named in that exercise's tests, so a failing test
    can point at the TODO to look at;
  - the given blocks ("// ---- given ..." to "// ---- end of given") of every skeleton
    file are identical in its solution twin;
  - no kernel source (an exercise's SOURCES, skeleton and solution) reaches GoogleTest,
    Google Benchmark, cuBLAS or cuDNN headers through its includes unless it calls that
    library itself.
With --format (the ctest test course/clang_format; it needs clang-format, and reports
itself skipped, exit status 77, without it):
  - the reference solutions' C++ and CUDA sources follow the repository's .clang-format.
With --skeleton-messages (after a build; ./course test runs it, so CI does):
  - every skeleton test that can run on this machine (without a GPU: those not labelled
    gpu) and fails names a TODO(mN.NN...) in its output, so that the learner knows where to
    look. A failure that names none (an import error, a typo in a test, a skeleton that does
    not compile, a message without the tag) is a problem.
With --gpu (on a machine with a GPU, after a build):
  - every exercise's skeleton tests fail (the skeleton is not already a solution), and
    every failing one names a TODO;
  - every exercise's solution tests pass, and none is skipped.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "common" / "python"))
from course_harness import requirements  # noqa: E402  (the skip wordings; it imports no torch)

SOURCE_SUFFIXES = {".cu", ".cuh", ".cpp", ".h", ".py"}
TODO_TAG = re.compile(r"TODO\((m\d+\.\d\d[a-z]?)\)")
EXERCISE_DIR = re.compile(r"^month(\d+)/(\d\d)_([a-z0-9_]+)$")


def exercises(root):
    for month in sorted(root.glob("month[0-9]*")):
        for folder in sorted(month.glob("[0-9][0-9]_*")):
            if folder.is_dir():
                yield folder


def source_files(folder):
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in SOURCE_SUFFIXES)


def is_test_file(path):
    # test_*: the tests; check_*: an exercise's own grading script (m2.05's machine-code check)
    return path.name.startswith(("test_", "check_"))


def check_structure(root):
    problems = []
    exercise_files = set()
    for folder in exercises(root):
        rel = folder.relative_to(root).as_posix()
        match = EXERCISE_DIR.match(rel)
        if not match:
            problems.append(f"{rel}: folder name should be monthN/NN_lower_case_name")
            continue
        tag_prefix = f"m{int(match.group(1))}.{match.group(2)}"
        for required in ("README.md", "CMakeLists.txt"):
            if not (folder / required).is_file():
                problems.append(f"{rel}: missing {required}")
        files = source_files(folder)
        exercise_files.update(p.relative_to(root).as_posix() for p in files)
        tags = set()
        test_text = "".join(p.read_text(errors="replace") for p in files if is_test_file(p))
        for path in files:
            if is_test_file(path):
                continue
            found = set(TODO_TAG.findall(path.read_text(errors="replace")))
            if not found:
                continue
            rel_file = path.relative_to(root).as_posix()
            for tag in sorted(found):
                if not tag.startswith(tag_prefix):
                    problems.append(f"{rel_file}: TODO({tag}) does not belong to exercise {tag_prefix}")
            tags |= found
            twin = root / "solutions" / rel_file
            if not twin.is_file():
                problems.append(f"{rel_file}: has TODOs but no solution twin at solutions/{rel_file}")
            elif TODO_TAG.search(twin.read_text(errors="replace")):
                problems.append(f"solutions/{rel_file}: the solution still has a TODO")
        if not tags:
            problems.append(f"{rel}: the skeleton has no TODO({tag_prefix}...) left for the learner")
        for tag in sorted(tags):
            if f"TODO({tag})" not in test_text:
                problems.append(f"{rel}: no test message names TODO({tag})")
    solutions = root / "solutions"
    if solutions.is_dir():
        for path in source_files(solutions):
            mirrored = path.relative_to(solutions).as_posix()
            if mirrored not in exercise_files:
                problems.append(f"solutions/{mirrored}: mirrors no exercise file {mirrored}")
    return problems


# Headers that belong to the test and benchmark side: a kernel source (an exercise's
# SOURCES) must not reach them, directly or through the course's headers, unless it calls
# that library itself (cuBLAS, cuDNN).
TEST_SIDE_HEADERS = {
    "gtest/gtest.h": "GoogleTest", "gmock/gmock.h": "GoogleTest",
    "benchmark/benchmark.h": "Google Benchmark",
    "cublas_v2.h": "cuBLAS", "cudnn.h": "cuDNN",
}
CALLS = {"cuBLAS": re.compile(r"\bcublas[A-Z]\w*\("), "cuDNN": re.compile(r"\bcudnn[A-Z]\w*\(")}
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)


def exercise_sources(folder):
    """The kernel sources an exercise's CMakeLists.txt names after SOURCES."""
    text = (folder / "CMakeLists.txt").read_text(errors="replace")
    match = re.search(r"SOURCES\s+(.*?)(?:\n\s*[A-Z]{4,}\s|\))", text, re.DOTALL)
    return match.group(1).split() if match else []


def reached_headers(path, search_dirs, seen=None):
    """Every header `path` includes, directly or through headers found in search_dirs."""
    seen = set() if seen is None else seen
    for name in INCLUDE.findall(path.read_text(errors="replace")):
        if name in seen:
            continue
        seen.add(name)
        for folder in [path.parent] + search_dirs:
            candidate = folder / name
            if candidate.is_file():
                reached_headers(candidate, search_dirs, seen)
                break
    return seen


def check_kernel_includes(root):
    """No kernel source reaches GoogleTest, Google Benchmark, cuBLAS or cuDNN headers unless it
    calls cuBLAS or cuDNN itself: the harness is layered one way (course/gemm.h for kernels,
    course/gemm_reference.h and course/gemm_cublas.h for tests and benchmarks)."""
    problems = []
    for folder in exercises(root):
        rel = folder.relative_to(root)
        for name in exercise_sources(folder):
            for source in (folder / name, root / "solutions" / rel / name):
                if not source.is_file():
                    continue
                text = source.read_text(errors="replace")
                headers = reached_headers(source, [folder, root / "common" / "include"])
                for header, library in sorted(TEST_SIDE_HEADERS.items()):
                    if header in headers and not (library in CALLS and CALLS[library].search(text)):
                        problems.append(f"{source.relative_to(root)}: reaches {header} ({library}) "
                                        "but does not call it; kernel code includes the "
                                        "kernel-side headers only")
    return problems


GIVEN_BEGIN = re.compile(r"^\s*// ---- given\b")
GIVEN_END = re.compile(r"^\s*// ---- end of given\b")


def given_blocks(path):
    """The blocks of code between "// ---- given ..." and "// ---- end of given" lines: code
    the learner does not edit, which the skeleton and its solution twin both carry."""
    blocks, current = [], None
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        if GIVEN_BEGIN.match(line):
            if current is not None:
                raise ValueError(f"{path}:{number}: a given block opens inside another")
            current = (number, [])
        elif GIVEN_END.match(line):
            if current is None:
                raise ValueError(f"{path}:{number}: a given block ends that never began")
            blocks.append(current)
            current = None
        elif current is not None:
            current[1].append(line)
    if current is not None:
        raise ValueError(f"{path}:{current[0]}: a given block never ends")
    return blocks


def check_given_code(root):
    """The given blocks of every skeleton file and of its solution twin are identical, so a
    fix to given code cannot land in one twin only."""
    problems = []
    for folder in exercises(root):
        for path in source_files(folder):
            twin = root / "solutions" / path.relative_to(root)
            if not twin.is_file():
                continue
            rel = path.relative_to(root).as_posix()
            try:
                mine, theirs = given_blocks(path), given_blocks(twin)
            except ValueError as error:
                problems.append(str(error))
                continue
            if len(mine) != len(theirs):
                problems.append(f"{rel} has {len(mine)} given block(s), its solution twin "
                                f"{len(theirs)}")
                continue
            for (line, a), (twin_line, b) in zip(mine, theirs):
                if a != b:
                    offset = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y),
                                  min(len(a), len(b)))
                    problems.append(f"{rel}:{line + 1 + offset}: the given block differs from "
                                    f"solutions/{rel}:{twin_line + 1 + offset}")
    return problems


# Solutions the format check leaves out for now, with the reason.
FORMAT_PENDING = {}  # folder -> why it is left out of the format check for now
FORMAT_SUFFIXES = {".cu", ".cuh", ".cpp", ".h"}
SKIPPED = 77  # ctest's SKIP_RETURN_CODE for the format test


def clang_format_program():
    for name in ("clang-format", "clang-format-14"):
        path = shutil.which(name)
        if path:
            return path
    return None


def check_format(root, program):
    """The solutions' files that clang-format (with the root's .clang-format) would change."""
    files = sorted(p for p in (root / "solutions").rglob("*") if p.is_file() and p.suffix in FORMAT_SUFFIXES
                   and not any(p.relative_to(root).as_posix().startswith(d + "/") for d in FORMAT_PENDING))
    problems = []
    for path in files:
        result = subprocess.run([program, "--style=file", "--dry-run", "-Werror", str(path)],
                                cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if result.returncode != 0:
            lines = sum(1 for line in result.stdout.splitlines() if ": error:" in line)
            problems.append(f"{path.relative_to(root).as_posix()}: not in the .clang-format style "
                            f"({lines} place(s)); run: clang-format -i {path.relative_to(root).as_posix()}")
    return problems, len(files)


def exercise_id(root, folder):
    match = EXERCISE_DIR.match(folder.relative_to(root).as_posix())
    return f"m{int(match.group(1))}_{match.group(2)}_{match.group(3)}"


def run_ctest(build_dir, *selection):
    """Runs the tests `selection` (ctest options: -R, -L, -LE ...) of build_dir; returns the
    exit status, ctest's output, and {test name: its output} of the tests that failed and of
    those that were skipped."""
    with tempfile.TemporaryDirectory() as scratch:
        junit = Path(scratch) / "tests.xml"
        result = subprocess.run(
            # Tests of one exercise are independent; running them side by side keeps the whole
            # check to minutes (GPU tests share the GPU, which is fine for correctness checks).
            ["ctest", "--test-dir", str(build_dir), *selection,
             "--parallel", str(os.cpu_count() or 2), "--output-junit", str(junit)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        failed, skipped = {}, {}
        if junit.is_file():
            for case in ElementTree.parse(junit).getroot().iter("testcase"):
                if case.get("status") == "fail":
                    failed[case.get("name")] = case.findtext("system-out") or ""
                elif case.get("status") == "notrun" or case.find("skipped") is not None:
                    skipped[case.get("name")] = case.findtext("system-out") or ""
    return result.returncode, result.stdout, failed, skipped


# A skip that says this GPU lacks what the test needs (course/requirements.h's wording): fine
# on a GPU that is older than the test's requirement, or emulates one (COURSE_COMPUTE_CAPABILITY).
MACHINE_LIMIT = requirements.MACHINE_LIMIT


def failures_without_todo(failed):
    """Problems for the failed skeleton tests {name: output} whose output names no TODO."""
    problems = []
    for name, output in sorted(failed.items()):
        if not TODO_TAG.search(output):
            last = [line for line in output.strip().splitlines() if line.strip()][-3:]
            problems.append(f"{name} fails without naming a TODO(mN.NN...) for the learner; "
                            "it ends with:\n    " + "\n    ".join(last or ["(no output)"]))
    return problems


def check_skeleton_messages(build_dir):
    """The skeleton tests this machine can run (no GPU needed): every failure names a TODO."""
    code, output, failed, _ = run_ctest(build_dir, "-L", "^exercise$", "-LE", "^gpu$")
    if "No tests were found" in output:
        return [f"no skeleton tests registered in {build_dir}: build it first"]
    if code != 0 and not failed:
        return [f"ctest failed without a test result (ctest 3.21 or newer writes them):\n{output[-2000:]}"]
    problems = failures_without_todo(failed)
    print(f"checked the messages of {len(failed)} failing skeleton test(s)")
    return problems


def check_on_gpu(root, build_dir):
    problems = []
    for folder in exercises(root):
        ex_id = exercise_id(root, folder)
        code, output, failed, skipped = run_ctest(build_dir, "-R", f"^exercise/{ex_id}/")
        total = re.search(r"out of (\d+)", output)
        skipped_here = (total is not None and int(total.group(1)) == len(skipped)
                        and all(MACHINE_LIMIT.search(text) for text in skipped.values()))
        if "No tests were found" in output:
            problems.append(f"{ex_id}: no skeleton tests registered")
        elif skipped_here:
            print(f"{ex_id}: every test needs more than this GPU has (skipped)")
        elif code == 0:
            problems.append(f"{ex_id}: the skeleton passes its tests; they should fail until the TODOs are done")
        problems += failures_without_todo(failed)
        code, output, _, skipped = run_ctest(build_dir, "-R", f"^solution/{ex_id}/")
        if "No tests were found" in output:
            problems.append(f"{ex_id}: no solution tests registered")
        elif code != 0:
            problems.append(f"{ex_id}: the solution fails its tests:\n{output[-2000:]}")
        else:
            unexplained = sorted(name for name, text in skipped.items()
                                 if not MACHINE_LIMIT.search(text))
            if unexplained:
                problems.append(f"{ex_id}: solution tests were skipped on a GPU machine without a "
                                f"compute-capability or shared-memory reason: {', '.join(unexplained)}")
        print(f"checked {ex_id} on the GPU")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--gpu", action="store_true", help="also run skeleton and solution tests")
    parser.add_argument("--skeleton-messages", action="store_true",
                        help="also run the skeleton tests this machine can run and check that each "
                             "failure names a TODO")
    parser.add_argument("--build-dir", type=Path,
                        help="build folder for --gpu and --skeleton-messages (default: <root>/build)")
    parser.add_argument("--format", action="store_true",
                        help="only check that the solutions follow .clang-format")
    args = parser.parse_args()
    root = args.root.resolve()

    if args.format:
        program = clang_format_program()
        if program is None:
            print("course check: clang-format is not installed, so the format of the solutions is not "
                  "checked (skipped); scripts/install-deps.sh installs it")
            return SKIPPED
        problems, count = check_format(root, program)
        for problem in problems:
            print(f"course check: {problem}")
        for folder, reason in FORMAT_PENDING.items():
            print(f"course check: {folder} left out of the format check: {reason}")
        version = subprocess.run([program, "--version"], stdout=subprocess.PIPE, text=True).stdout.strip()
        print(f"course check: {count - len(problems)} of {count} solution file(s) follow .clang-format ({version})")
        return 1 if problems else 0

    problems = check_structure(root) + check_kernel_includes(root) + check_given_code(root)
    build = (args.build_dir or root / "build").resolve()
    if args.skeleton_messages and not args.gpu:  # --gpu checks the messages of every test
        problems += check_skeleton_messages(build)
    if args.gpu:
        problems += check_on_gpu(root, build)
    for problem in problems:
        print(f"course check: {problem}")
    count = sum(1 for _ in exercises(root))
    if problems:
        print(f"course check: {len(problems)} problem(s) in {count} exercise(s)")
        return 1
    checked = (" (skeletons fail naming their TODOs, solutions pass on the GPU)" if args.gpu else
               " (the skeletons' failing tests name their TODOs)" if args.skeleton_messages else "")
    print(f"course check: {count} exercise(s) OK{checked}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
