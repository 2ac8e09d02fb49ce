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
    library itself;
  - every hints.md is in ./course hint's format: '## ' sections with '### ' steps, one
    section for each lettered TODO of the exercise, naming only TODOs that exist;
  - every lesson's "**Builds on:**" line (every month-3 lesson has one) names the earlier
    exercises (mN.NN) its build compiles or links, no more, no fewer: from its CMakeLists.txt
    (not COMPARES_WITH) and its load_extension.py / build_config.py (EARLIER_SOURCES,
    EARLIER_EXTENSION), and what those build on in turn;
  - tools/skeletons.json lists every committed file of every exercise folder (but *.md) with
    its blob id, as tools/skeleton_manifest.py --write makes it (./course reset and status
    compare with it). It is compared with the committed files (git's index), not the working
    tree. A difference fails in CI (the environment variable CI set) and with
    --strict-manifest; elsewhere it is a note, since a learner may commit work there.
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
import ast
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
sys.path.insert(0, str(Path(__file__).resolve().parent))
from lesson_pages import header_line  # noqa: E402  (a lesson's **Builds on:** line)
import skeleton_manifest  # noqa: E402  (tools/skeleton_manifest.py)

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


def check_hints(root):
    """Every exercise's hints.md is in ./course hint's format (see tools/course.py): each '## '
    section has '### ' steps; each TODO a section names is in the exercise's files (all but
    *.md); each lettered TODO there has a section."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from course import parse_hints  # the one parser of the format
    problems = []
    for folder in exercises(root):
        rel = folder.relative_to(root).as_posix()
        match = EXERCISE_DIR.match(rel)
        if not match:
            continue  # check_structure reports the name
        prefix = f"m{int(match.group(1))}.{match.group(2)}"
        tags = set()
        for path in folder.rglob("*"):
            if path.is_file() and path.suffix != ".md":
                tags.update(tag for tag in TODO_TAG.findall(path.read_text(errors="replace"))
                            if tag.startswith(prefix))
        hints = folder / "hints.md"
        if not hints.is_file():
            if tags:
                problems.append(f"{rel}: no hints.md for its TODOs")
            continue
        sections = parse_hints(hints)
        if not sections:
            problems.append(f"{rel}/hints.md: no '## ' section (one per TODO, each with '### ' steps)")
        named = set()
        for section in sections:
            if not section.stepped:
                problems.append(f"{rel}/hints.md: '## {section.title}' has no '### ' step")
            for title, body in section.steps:
                if section.stepped and not body:
                    problems.append(f"{rel}/hints.md: '### {title}' of '## {section.title}' is empty")
            for tag in section.tags:
                if tag in named:
                    problems.append(f"{rel}/hints.md: TODO({tag}) has two '## ' sections; make them "
                                    "the '### ' steps of one")
                named.add(tag)
                if tag not in tags:
                    problems.append(f"{rel}/hints.md: '## {section.title}' names TODO({tag}), "
                                    "which is in none of the exercise's files")
        for tag in sorted(tags - named):
            if tag[-1].isalpha():
                problems.append(f"{rel}/hints.md: no '## ' section for TODO({tag})")
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


def check_skeleton_manifest(root, strict):
    """tools/skeletons.json matches the committed files of the exercise folders. `strict`:
    a difference is a problem (CI, a maintainer); otherwise one note, since on a learner's
    machine their committed work differs from the skeleton by design."""
    if not (root / ".git").exists() or shutil.which("git") is None:
        return []  # a copy without git: the committed files are not known here
    try:
        skeleton_manifest.load(root)  # broken or missing: a problem everywhere
    except skeleton_manifest.ManifestError as error:
        return [str(error)]
    differences = skeleton_manifest.check(root)
    fix = f"run {skeleton_manifest.WRITE_COMMAND} and commit {skeleton_manifest.MANIFEST}"
    if strict:
        return [f"{line}; {fix}" for line in differences]
    if differences:
        shown = "; ".join(differences[:3]) + ("; ..." if len(differences) > 3 else "")
        print(f"course check: note: {len(differences)} committed file(s) of the exercise folders differ "
              f"from {skeleton_manifest.MANIFEST} ({shown}). Expected where you committed your own work; "
              f"a maintainer who changed a skeleton must {fix} (CI fails on it).")
    return []


def strict_manifest_wanted(flag):
    """--strict-manifest, or a CI service (they set CI=true)."""
    return flag or os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


# "Builds on": what an exercise's build compiles or links from earlier exercises, and the line
# of its lesson that says so, right under its **Needs:** line:
#     **Builds on:** your m3.05 (conv2d_implicit_gemm.cu), m3.04, ... compiled into its extension
# The exercises (mN.NN) the line names must be the ones its build uses, found in
#   - its CMakeLists.txt: the libraries of other exercises it links, <id>_${COURSE_EARLIER_KERNELS},
#     <id>_exercise or <id>_solution (COMPARES_WITH names the benchmark's previous step, not a
#     part of the build: it does not count);
#   - its load_extension.py and build_config.py (the Python exercises build their extension when
#     their tests run): EARLIER_SOURCES, the (exercise, file) pairs it compiles, and
#     EARLIER_EXTENSION, the exercise whose extension it loads;
# and through those, what they build on in turn (m3.07 loads m3.06's extension, which compiles
# m3.05, m3.04, m3.03 and m2.05). Every lesson of BUILDS_ON_MONTHS has the line, and so does any
# exercise whose build uses an earlier one.
BUILDS_ON_MONTHS = {3}
NAMED_EXERCISE = re.compile(r"\bm(\d+)\.(\d\d)\b")
LINKED_EXERCISE = re.compile(r"\bm(\d+)_(\d\d)_[a-z0-9_]+?_(?:\$\{COURSE_EARLIER_KERNELS\}|exercise|solution)\b")
DECLARED_EXERCISE = re.compile(r"^(?:m(\d+)[._](\d\d)|month(\d+)/(\d\d)_[a-z0-9_]+)$")
BUILD_DECLARATIONS = ("load_extension.py", "build_config.py")


def exercise_tag(folder, root):
    """m3.06 for <root>/month3/06_autograd_conv, None for a folder of another name."""
    match = EXERCISE_DIR.match(folder.relative_to(root).as_posix())
    return f"m{int(match.group(1))}.{match.group(2)}" if match else None


def linked_exercises(folder, own_tag):
    """The tags of the other exercises whose libraries the CMakeLists.txt of `folder` links."""
    path = folder / "CMakeLists.txt"
    if not path.is_file():
        return set()
    text = re.sub(r"#[^\n]*", "", path.read_text(errors="replace"))  # comments
    found = {f"m{int(m.group(1))}.{m.group(2)}" for m in LINKED_EXERCISE.finditer(text)}
    return found - {own_tag}


def module_constant(path, name):
    """The literal value of the module-level assignment `name = ...` in the Python file `path`
    (read with ast, never run), or None when it has none. Raises ValueError when it is not a
    literal, SyntaxError when the file does not parse."""
    tree = ast.parse(path.read_text(errors="replace"), str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    return None


def declared_exercises(root, folder):
    """(tags, problems): the exercises that the Python build of `folder` declares it compiles
    (EARLIER_SOURCES) or loads (EARLIER_EXTENSION), and what is wrong with the declarations."""
    tags, problems = set(), []

    def tag_of(name, where):
        match = DECLARED_EXERCISE.match(str(name))
        if not match:
            problems.append(f"{where}: {name!r} names no exercise (m3_05 or month3/05_implicit_gemm)")
            return None
        month, number = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
        candidates = sorted((root / f"month{int(month)}").glob(f"{number}_*/CMakeLists.txt"))
        if not candidates:
            problems.append(f"{where}: {name!r} names no exercise folder of this course")
            return None
        return f"m{int(month)}.{number}", candidates[0].parent

    for file_name in BUILD_DECLARATIONS:
        path = folder / file_name
        if not path.is_file():
            continue
        where = path.relative_to(root).as_posix()
        try:
            sources = module_constant(path, "EARLIER_SOURCES") or ()
            extension = module_constant(path, "EARLIER_EXTENSION") or ()
        except (SyntaxError, ValueError) as error:
            problems.append(f"{where}: EARLIER_SOURCES / EARLIER_EXTENSION cannot be read as literals ({error})")
            continue
        for entry in sources:
            if not (isinstance(entry, tuple) and len(entry) == 2):
                problems.append(f"{where}: EARLIER_SOURCES entries are (exercise, file) pairs, not {entry!r}")
                continue
            found = tag_of(entry[0], where)
            if found is None:
                continue
            tags.add(found[0])
            rel = found[1].relative_to(root)
            for source in (root / rel / entry[1], root / "solutions" / rel / entry[1]):
                if not source.is_file():
                    problems.append(f"{where}: EARLIER_SOURCES names {source.relative_to(root).as_posix()}, "
                                    "which does not exist")
        for name in (extension,) if isinstance(extension, str) else extension:
            found = tag_of(name, where)
            if found is not None:
                tags.add(found[0])
    return tags, problems


def build_dependencies(root):
    """({tag: the tags of the earlier exercises its build uses, directly or through them},
    problems with the Python declarations)."""
    direct, problems = {}, []
    for folder in exercises(root):
        tag = exercise_tag(folder, root)
        if tag is None:
            continue  # check_structure reports the name
        declared, found = declared_exercises(root, folder)
        problems += found
        direct[tag] = linked_exercises(folder, tag) | (declared - {tag})

    def closure(tag, seen):
        for used in direct.get(tag, ()):
            if used not in seen:
                seen.add(used)
                closure(used, seen)
        return seen

    return {tag: closure(tag, set()) - {tag} for tag in direct}, problems


def check_builds_on(root):
    """Each lesson's **Builds on:** line names the earlier exercises its build uses, no more, no
    fewer (build_dependencies); a lesson of BUILDS_ON_MONTHS, or whose build uses one, has it."""
    uses, problems = build_dependencies(root)
    order = lambda tag: tuple(int(part) for part in tag[1:].split("."))  # noqa: E731
    listed = lambda tags: ", ".join(sorted(tags, key=order, reverse=True)) or "none"  # noqa: E731
    for folder in exercises(root):
        tag = exercise_tag(folder, root)
        if tag is None or tag not in uses:
            continue
        lesson = (folder / "README.md").relative_to(root).as_posix()
        line = header_line(root / lesson, "Builds on")
        month = int(tag[1:].split(".")[0])
        if line is None:
            if uses[tag] or month in BUILDS_ON_MONTHS:
                problems.append(f"{lesson}: no **Builds on:** line under its **Needs:** line; its build "
                                f"uses {listed(uses[tag])} (CMakeLists.txt, load_extension.py, build_config.py)")
            continue
        named = {f"m{int(m.group(1))}.{m.group(2)}" for m in NAMED_EXERCISE.finditer(line)}
        if named != uses[tag]:
            missing, extra = uses[tag] - named, named - uses[tag]
            said = [f"does not name {listed(missing)}, which its build uses" if missing else "",
                    f"names {listed(extra)}, which its build does not use" if extra else ""]
            problems.append(f"{lesson}: the **Builds on:** line {' and '.join(s for s in said if s)} "
                            f"(its build uses {listed(uses[tag])}: CMakeLists.txt, load_extension.py, "
                            "build_config.py)")
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
    parser.add_argument("--strict-manifest", action="store_true",
                        help="a difference between tools/skeletons.json and the committed skeletons is a "
                             "problem, not a note (the default where the environment variable CI is set)")
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

    problems = check_structure(root) + check_kernel_includes(root) + check_given_code(root) + check_hints(root)
    problems += check_builds_on(root)
    problems += check_skeleton_manifest(root, strict_manifest_wanted(args.strict_manifest))
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
