#!/usr/bin/env python3
"""The course's command line, behind ./course: grade, status, hint, watch, reset, bench.

Where progress is kept: every grade writes its verdict to <build>/course_progress/<id>.json,
with a digest of the files you edit (the files of the exercise folder that have a twin in
solutions/). An exercise is
  done         when its last grade passed, with the files as they are now;
  done here    when every test this machine can run passed, and the others were skipped because
               the machine lacks what they need ("needs compute capability 9.0 ...");
  blocked      when tests were skipped for something you can fix ("...; to fix: <command>"):
               the command is shown, and the path goes on;
  started      when it was graded, or one of its files differs from git's version (HEAD);
  not started  otherwise.
A bonus exercise (its lesson's title says "(bonus)") never holds up the path.
Deleting the build folder forgets the grades (not your code). The hints you have seen are
counted in the same folder.
"""
import argparse
import datetime
import difflib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "common" / "python"))
from course_harness import requirements  # noqa: E402  (the skip wordings; it imports no torch)
EXERCISE_DIR = re.compile(r"^month(\d+)/(\d\d)_([a-z0-9_]+)$")
TODO_TAG = re.compile(r"TODO\(m\d+\.\d\d[a-z]?\)")
# Source files a change of which means "rebuild and grade again" in watch mode.
WATCHED_SUFFIXES = {".cu", ".cuh", ".cpp", ".h", ".py", ".txt"}


class UsageError(Exception):
    """A bad command line: printed without a traceback, exit status 2."""


@dataclass(frozen=True)
class Exercise:
    folder: Path  # relative to ROOT, e.g. month1/01_vector_add
    month: int
    number: str
    name: str

    @property
    def id(self):  # the CMake and ctest name: m1_01_vector_add
        return f"m{self.month}_{self.number}_{self.name}"

    @property
    def short(self):  # m1_01
        return f"m{self.month}_{self.number}"

    @property
    def tag(self):  # m1.01, as in the TODO tags
        return f"m{self.month}.{self.number}"

    @property
    def title(self):
        return f"{self.tag} {self.name}"

    @property
    def lesson(self):
        return self.folder / "README.md"

    def lesson_head(self, lines=15):
        try:
            return (ROOT / self.lesson).read_text(errors="replace").splitlines()[:lines]
        except OSError:
            return []

    @property
    def bonus(self):
        """A bonus exercise: its lesson's title says "(bonus)"."""
        head = self.lesson_head(1)
        return bool(head) and "(bonus)" in head[0]

    @property
    def needs(self):
        """What the exercise needs from the machine: its lesson's "**Needs:**" line."""
        for line in self.lesson_head():
            match = re.match(r"\*\*Needs:\*\*\s*(.+)", line.strip())
            if match:
                return match.group(1).strip()
        return ""

    def learner_files(self):
        """The files you edit: those with a reference twin under solutions/."""
        twins = ROOT / "solutions" / self.folder
        if not twins.is_dir():
            return []
        return sorted(self.folder / p.relative_to(twins) for p in twins.rglob("*")
                      if p.is_file() and (ROOT / self.folder / p.relative_to(twins)).is_file())


def all_exercises():
    found = []
    for month in ROOT.glob("month[0-9]*"):
        for folder in month.glob("[0-9][0-9]_*"):
            rel = folder.relative_to(ROOT).as_posix()
            match = EXERCISE_DIR.match(rel)
            if match and (folder / "CMakeLists.txt").is_file():
                found.append(Exercise(Path(rel), int(match.group(1)), match.group(2), match.group(3)))
    return sorted(found, key=lambda e: (e.month, e.number))


def find_exercise(name, exercises):
    """m1_01, m1_01_vector_add, m1.01, m1.1, m1_1 and month1/01_vector_add all name exercise 1
    of month 1. An unknown name gets the nearest ones as suggestions, then the whole list."""
    wanted = name.strip().rstrip("/").replace(".", "_")
    short = re.fullmatch(r"m(\d+)_(\d)", wanted)  # m3_5 (from m3.5): one digit for the number
    if short:
        wanted = f"m{short.group(1)}_{int(short.group(2)):02d}"
    for exercise in exercises:
        if wanted in (exercise.id, exercise.short, exercise.folder.as_posix().replace(".", "_")):
            return exercise
    names = {n: e for e in exercises for n in (e.short, e.tag, e.id, e.name)}
    nearest = difflib.get_close_matches(name.strip(), list(names), n=3, cutoff=0.6)
    suggestion = ""
    if nearest:
        picked = list(dict.fromkeys(names[n].short for n in nearest))
        suggestion = f" Did you mean {' or '.join(picked)}?"
    valid = "\n".join(f"  {e.short:7} {e.id:28} {e.lesson}" for e in exercises)
    raise UsageError(f"unknown exercise '{name}'.{suggestion} The exercises are:\n{valid}")


# ---------------------------------------------------------------------------- the build

def build_dir():
    return Path(os.environ.get("BUILD_DIR") or ROOT / "build").resolve()


def jobs():
    return os.environ.get("JOBS") or str(os.cpu_count() or 2)


def cached_value(cache, key):
    match = re.search(rf"^{re.escape(key)}:[A-Z]+=(.*)$", cache, re.MULTILINE)
    return match.group(1) if match else None


def configure():
    """Runs CMake's configure step when there is no build yet, or CUDA_ARCHS asks for other
    architectures than the build has."""
    build = build_dir()
    cache_file = build / "CMakeCache.txt"
    archs = os.environ.get("CUDA_ARCHS", "")
    if cache_file.is_file():
        cached_archs = cached_value(cache_file.read_text(errors="replace"), "CMAKE_CUDA_ARCHITECTURES")
        if not archs or archs == cached_archs:
            return
    command = ["cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release"]
    if archs:
        command.append(f"-DCMAKE_CUDA_ARCHITECTURES={archs}")
    run_or_exit(command)


def run_or_exit(command):
    code = subprocess.call(command)
    if code != 0:
        sys.exit(code)


def build_target(target, quiet):
    """Builds one CMake target. Quiet: the compiler's output only when it fails (and the whole
    log in <build>/course_progress/<target>.log). Returns True when it built."""
    configure()
    command = ["cmake", "--build", str(build_dir()), "--target", target, "--parallel", jobs()]
    if not quiet:
        return subprocess.call(command) == 0
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0 and re.search(r"No rule to make target|unknown target", result.stdout):
        # A build configured before the target existed: configure again, then retry.
        run_or_exit(["cmake", str(build_dir())])
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode == 0:
        return True
    log = progress_dir() / f"{target}.log"
    log.write_text(result.stdout)
    print(compiler_errors(result.stdout))
    print(f"(the whole build log: {display(log)})")
    return False


def compiler_errors(output, limit=40):
    """The lines of a build log that say what is wrong, with the line after each."""
    lines = output.splitlines()
    picked = []
    for index, line in enumerate(lines):
        if re.search(r"\berror\b|Error \d|undefined reference", line, re.IGNORECASE):
            for extra in lines[index:index + 3]:
                if extra not in picked[-3:]:
                    picked.append(extra)
    picked = picked or lines[-limit:]
    if len(picked) > limit:
        picked = picked[:limit] + [f"... ({len(picked) - limit} more lines)"]
    return "\n".join(picked)


def display(path):
    path = Path(path)
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(path)


# ---------------------------------------------------------------------------- progress

def progress_dir():
    path = build_dir() / "course_progress"
    path.mkdir(parents=True, exist_ok=True)
    return path


def files_digest(exercise):
    digest = hashlib.sha256()
    for rel in exercise.learner_files():
        digest.update(rel.as_posix().encode())
        digest.update((ROOT / rel).read_bytes())
    return digest.hexdigest()


def read_json(path, default):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return default


def last_grade(exercise):
    return read_json(build_dir() / "course_progress" / f"{exercise.id}.json", None)


def changed_from_git(exercise):
    """True when one of the files you edit differs from git's version (HEAD)."""
    files = [rel.as_posix() for rel in exercise.learner_files()]
    if not files or not (ROOT / ".git").exists():
        return False
    result = subprocess.run(["git", "-C", str(ROOT), "diff", "--quiet", "HEAD", "--", *files],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return result.returncode == 1


# What the grade's result makes of an exercise whose files are as they were when graded.
SETTLED_STATES = {"passed": "done", "done here": "done here", "blocked": "blocked"}
# States that let the path go on to the next exercise.
MOVES_ON = {"done", "done here", "blocked"}


def state_of(exercise):
    grade = last_grade(exercise)
    if grade and grade.get("result") in SETTLED_STATES and grade.get("files_digest") == files_digest(exercise):
        return SETTLED_STATES[grade["result"]]
    if grade or changed_from_git(exercise):
        return "started"
    return "not started"


def first_unfinished(exercises):
    """The next exercise on the path: not done (here), not blocked, not a bonus."""
    return next((e for e in exercises if not e.bonus and state_of(e) not in MOVES_ON), None)


# ---------------------------------------------------------------------------- grading

@dataclass
class TestResult:
    name: str
    status: str  # passed, failed, skipped
    output: str


def run_tests(exercise, only=None):
    """Runs the exercise's tests against your version (ctest -R ^exercise/<id>/), or those of
    them whose name also matches `only`."""
    junit = progress_dir() / f"{exercise.id}.junit.xml"
    junit.unlink(missing_ok=True)
    pattern = f"^exercise/{exercise.id}/" + (f".*{only}" if only else "")
    subprocess.run(["ctest", "--test-dir", str(build_dir()), "-R", pattern,
                    "--output-junit", str(junit),
                    # Tests are independent processes; several share one GPU well.
                    "--parallel", str(min(os.cpu_count() or 1, 8))],
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if not junit.is_file():
        return []
    results = []
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        output = "".join(node.text or "" for node in case.iter("system-out"))
        if case.get("status") == "disabled":
            continue  # disabled on purpose (e.g. a case kept for a compute-sanitizer run)
        if case.find("failure") is not None or case.get("status") == "fail":
            status = "failed"
        elif case.find("skipped") is not None or case.get("status") == "notrun":
            status = "skipped"
        else:
            status = "passed"
        results.append(TestResult(case.get("name", "?"), status, output))
    return results


def failure_reasons(output, limit=6):
    """What a failing test said: GoogleTest's failure messages, or a Python traceback's tail."""
    lines = [line.rstrip() for line in output.splitlines()]
    reasons = []
    for index, line in enumerate(lines):
        if re.search(r": Failure$|^(E |FAILED|AssertionError|.*Error:)|TODO\(", line):
            for extra in lines[index:index + 4]:
                extra = extra.strip()
                if extra and not extra.startswith("[") and extra not in reasons:
                    reasons.append(extra)
        if len(reasons) >= limit:
            break
    return reasons[:limit] or [line for line in lines if line.strip()][-limit:]


def skip_reason(output):
    """GoogleTest prints the reason on the line after '<file>:<line>: Skipped'; the Python
    runner and check_sass.py print 'SKIPPED: <reason>'."""
    lines = output.splitlines()
    for index, line in enumerate(lines):
        if line.rstrip().endswith(": Skipped") and index + 1 < len(lines) and lines[index + 1].strip():
            return lines[index + 1].strip()
        match = re.match(r"\s*SKIPPED: (.+)", line)
        if match:  # the Python runner counts the tests that share a reason: "... (4 tests)"
            return re.sub(r"\s*\(\d+ tests?\)$", "", match.group(1).strip())
    return "skipped (no reason given)"


# How a skipped test says why (course/requirements.h and course_harness/requirements.py word
# them): this machine lacks something, or the learner can fix something with a command.
MACHINE_LIMIT = requirements.MACHINE_LIMIT
FIXABLE = requirements.FIX_COMMAND


def classify_skips(reasons):
    """(machine, fixable, other): the skip reasons this machine cannot meet; those with a
    fix, as (reason, command); and the rest (no GPU at all, a reason without a fix)."""
    machine, fixable, other = [], [], []
    for reason in reasons:
        fix = FIXABLE.search(reason)
        if fix:
            fixable.append((reason[:fix.start()].strip(), fix.group(1)))
        elif MACHINE_LIMIT.search(reason):
            machine.append(reason)
        else:
            other.append(reason)
    return machine, fixable, other


def machine_needs(reasons):
    """'compute capability 9.0' and the like, from "needs ..." skip reasons, in order."""
    needs = []
    for reason in reasons:
        match = MACHINE_LIMIT.search(reason)
        what = match.group(0)[len("needs "):] if match else reason
        if what not in needs:
            needs.append(what)
    return needs


def record_grade(exercise, result, results, seconds, **details):
    counts = {status: sum(1 for r in results if r.status == status) for status in ("passed", "failed", "skipped")}
    record = {"exercise": exercise.id, "result": result, **counts, "seconds": round(seconds, 1),
              "when": datetime.datetime.now().isoformat(timespec="seconds"),
              "files_digest": files_digest(exercise), **details}
    (progress_dir() / f"{exercise.id}.json").write_text(json.dumps(record, indent=2) + "\n")


def grade(exercise, verbose=False, only=None):
    """Builds and grades one exercise; prints its verdict. Returns True when it passed.
    With `only` (a pattern of test names) it runs just those tests and records nothing:
    a part of the tests passing does not make the exercise done."""
    started = time.monotonic()
    record = record_grade if not only else (lambda *unused: None)
    print(f"== grading {exercise.title} ({exercise.folder}/)", flush=True)
    if not build_target(f"{exercise.id}_exercise_all", quiet=not verbose):
        record(exercise, "does not compile", [], time.monotonic() - started)
        print(f"{exercise.title}: FAILED, it does not compile (the errors are above)")
        return False

    results = run_tests(exercise, only)
    seconds = time.monotonic() - started
    failed = [r for r in results if r.status == "failed"]
    skipped = [r for r in results if r.status == "skipped"]
    passed = [r for r in results if r.status == "passed"]
    short = lambda r: r.name.split("/", 2)[-1]  # exercise/<id>/Suite.Case -> Suite.Case

    if not results:
        record(exercise, "no tests", results, seconds)
        print(f"{exercise.title}: NOT GRADED, ctest found no tests for it in {build_dir()}")
        return False
    for result in failed:
        print(f"  FAILED  {short(result)}")
        for reason in failure_reasons(result.output):
            print(f"          {reason}")
        if verbose:
            print(result.output)
    skip_reasons = sorted({skip_reason(r.output) for r in skipped})
    if failed:
        todos = sorted({tag for r in failed for tag in TODO_TAG.findall(r.output)})
        look_at = f"; look at {', '.join(todos)}" if todos else ""
        record(exercise, "failed", results, seconds)
        print(f"{exercise.title}: FAILED, {len(failed)} of {len(results)} tests fail{look_at} "
              f"(in {exercise.folder}/) [{seconds:.0f}s]")
        return False
    if skipped:
        machine, fixable, other = classify_skips(skip_reasons)
        if other:
            record(exercise, "skipped", results, seconds, skip_reasons=skip_reasons)
            print(f"{exercise.title}: NOT GRADED, {len(skipped)} of {len(results)} tests were skipped: "
                  f"{'; '.join(skip_reasons)} [{seconds:.0f}s]")
            return False
        if fixable:
            blocked = [{"reason": reason, "fix": fix} for reason, fix in fixable]
            record(exercise, "blocked", results, seconds, skip_reasons=skip_reasons, blocked=blocked)
            print(f"{exercise.title}: BLOCKED, {len(skipped)} of {len(results)} tests were skipped "
                  f"for something you can fix [{seconds:.0f}s]")
            for item in blocked:
                print(f"  {item['reason']}\n    to fix: {item['fix']}")
            print("  then grade it again; the path goes on meanwhile.")
            return True
        needs = machine_needs(machine)
        record(exercise, "done here", results, seconds, skip_reasons=skip_reasons, needs=needs)
        print(f"{exercise.title}: DONE ON THIS MACHINE, {len(passed)} tests pass; {len(skipped)} "
              f"need {', '.join(needs)}, which this machine does not have [{seconds:.0f}s]")
        for reason in machine:
            print(f"  skipped: {reason}")
        return True
    record(exercise, "passed", results, seconds)
    print(f"{exercise.title}: PASSED, all {len(passed)} tests [{seconds:.0f}s]")
    return True


def command_grade(args, exercises):
    if args.all:
        chosen = exercises
    elif args.exercises:
        chosen = [find_exercise(name, exercises) for name in args.exercises]
    else:
        exercise = first_unfinished(exercises)
        if exercise is None:
            print("Every exercise is done. ./course status lists them.")
            return 0
        chosen = [exercise]
    verdicts = [grade(exercise, args.verbose, args.only) for exercise in chosen]
    if len(chosen) > 1:
        print(f"== {sum(verdicts)} of {len(chosen)} exercises passed")
    elif verdicts[0] and not args.exercises:
        following = first_unfinished(exercises)
        if following is not None:
            print(f"Next: {following.title}, lesson {following.lesson}")
    return 0 if all(verdicts) else 1


# ---------------------------------------------------------------------------- status

def command_status(args, exercises):
    states = [(exercise, state_of(exercise)) for exercise in exercises]
    month = None
    for exercise, state in states:
        if exercise.month != month:
            month = exercise.month
            print(f"Month {month}  (month{month}/README.md)")
        mark = {"done": "[x]", "done here": "[x]", "blocked": "[!]", "started": "[~]",
                "not started": "[ ]"}[state]
        note = ""
        grade_record = last_grade(exercise) or {}
        if state == "done here":
            note = f"{grade_record.get('skipped', 0)} tests need {', '.join(grade_record.get('needs', []))}"
        elif state == "blocked":
            note = "; ".join(f"{item['reason']}; to fix: {item['fix']}"
                             for item in grade_record.get("blocked", []))
        elif state == "started" and grade_record:
            note = f"last grade: {grade_record['result']}"
            if grade_record["result"] in SETTLED_STATES:
                note += ", files changed since"
            elif grade_record.get("failed"):
                note += f", {grade_record['failed']} of {grade_record['failed'] + grade_record['passed'] + grade_record['skipped']} tests fail"
            elif grade_record.get("skip_reasons"):
                note += f" ({'; '.join(grade_record['skip_reasons'])})"
        title = exercise.title + (" (bonus)" if exercise.bonus else "")
        print(f"  {mark} {title:38} {state:12} {note}".rstrip())
        if exercise.needs:
            print(f"      needs: {exercise.needs}")
    done = sum(1 for _, state in states if state in ("done", "done here"))
    width = 30
    filled = round(width * done / len(states)) if states else 0
    print(f"\n[{'#' * filled}{'.' * (width - filled)}] {done} of {len(states)} done")
    blocked = [e for e, state in states if state == "blocked"]
    if blocked:
        print(f"Blocked, each with its fix above: {', '.join(e.short for e in blocked)}")
    following = first_unfinished(exercises)
    if following is None:
        print("Every exercise is done." if not blocked else "Every other exercise is done.")
    else:
        print(f"Next: {following.title}\n  read   {following.lesson}\n"
              f"  edit   {', '.join(rel.as_posix() for rel in following.learner_files())}\n"
              f"  grade  ./course grade {following.short}")
    return 0


# ---------------------------------------------------------------------------- hints

def parse_hints(path):
    """hints.md: a title, then one '## ...' section per level, the gentlest first."""
    levels = []
    for line in path.read_text().splitlines():
        if line.startswith("## "):
            levels.append([line[3:].strip(), []])
        elif levels:
            levels[-1][1].append(line)
    return [(title, "\n".join(body).strip()) for title, body in levels]


def command_hint(args, exercises):
    exercise = find_exercise(args.exercise, exercises) if args.exercise else first_unfinished(exercises)
    if exercise is None:
        print("Every exercise is done: no hints needed.")
        return 0
    path = ROOT / exercise.folder / "hints.md"
    if not path.is_file():
        print(f"{exercise.title} has no hints.md; its lesson is {exercise.lesson}.")
        return 1
    levels = parse_hints(path)
    seen_file = progress_dir() / f"{exercise.id}.hints.json"
    seen = read_json(seen_file, {}).get("shown", 0)
    if args.list:  # the titles only: which level to ask for, without reading any of them
        print(f"{exercise.title}: {len(levels)} hints, the gentlest first")
        for number, (title, _) in enumerate(levels, 1):
            print(f"  {number:2}. {title}{'  (seen)' if number <= seen else ''}")
        print(f"(./course hint {exercise.short} --level N shows one)")
        return 0
    level = args.level if args.level is not None else min(seen + 1, len(levels))
    if not 1 <= level <= len(levels):
        raise UsageError(f"{exercise.title} has hints 1 to {len(levels)}, not {level}")
    title, body = levels[level - 1]
    print(f"{exercise.title}, hint {level} of {len(levels)}: {title}\n\n{body}\n")
    seen_file.write_text(json.dumps({"shown": max(seen, level)}) + "\n")
    if level < len(levels):
        print(f"(./course hint {exercise.short} again for hint {level + 1})")
    else:
        print(f"(that was the last hint; the reference is in solutions/{exercise.folder}/)")
    return 0


# ---------------------------------------------------------------------------- watch

def snapshot(exercise):
    folder = ROOT / exercise.folder
    return {p: p.stat().st_mtime_ns for p in folder.rglob("*")
            if p.is_file() and p.suffix in WATCHED_SUFFIXES}


def command_watch(args, exercises):
    follow = args.exercise is None  # without a name, move on to the next exercise once one passes
    exercise = find_exercise(args.exercise, exercises) if args.exercise else first_unfinished(exercises)
    if exercise is None:
        print("Every exercise is done.")
        return 0
    try:
        while True:
            passed = grade(exercise)
            if passed and follow:
                following = first_unfinished(exercises)
                if following is None:
                    print("Every exercise is done.")
                    return 0
                exercise = following
                print(f"\nNext: {exercise.title}, lesson {exercise.lesson}")
            print(f"\nwatching {exercise.folder}/ (save a file to grade again; Ctrl-C to stop)", flush=True)
            before = snapshot(exercise)
            while snapshot(exercise) == before:
                time.sleep(args.interval)
            time.sleep(0.3)  # let the editor finish writing
    except KeyboardInterrupt:
        print("\nstopped watching")
        return 0


# ---------------------------------------------------------------------------- reset

def command_reset(args, exercises):
    exercise = find_exercise(args.exercise, exercises)
    if not (ROOT / ".git").exists():
        raise UsageError("reset takes the skeleton back from git, and this copy of the course has no .git")
    files = [rel.as_posix() for rel in exercise.learner_files()]
    changed = subprocess.run(["git", "-C", str(ROOT), "diff", "--name-only", "HEAD", "--", *files],
                             stdout=subprocess.PIPE, text=True, check=True).stdout.split()
    if not changed:
        print(f"{exercise.title}: your files are already git's version; nothing to reset.")
    else:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        backup = ROOT / "backups" / exercise.id / stamp
        for rel in changed:
            (backup / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, backup / rel)
        subprocess.run(["git", "-C", str(ROOT), "checkout", "HEAD", "--", *changed], check=True)
        print(f"{exercise.title}: back to the skeleton: {', '.join(changed)}")
        print(f"your version is kept in {display(backup)}/")
    (build_dir() / "course_progress" / f"{exercise.id}.json").unlink(missing_ok=True)
    return 0


# ---------------------------------------------------------------------------- bench

def benchmark_targets(name, exercises):
    """(what to build, what run_benchmarks.py filters on) for an exercise, or for one of the
    benchmarks that span several (month2/gemm_ladder, month2/memory_hierarchy)."""
    for folder in sorted(ROOT.glob(f"month[0-9]*/{name}")):
        if not EXERCISE_DIR.match(folder.relative_to(ROOT).as_posix()) and any(folder.glob("bench_*.cu")):
            target = f"m{folder.parent.name[len('month'):]}_{name}_bench"
            return target, target[: -len("_bench")]
    try:
        exercise = find_exercise(name, exercises)
    except UsageError as error:
        raise UsageError(f"{error}\nand the benchmarks gemm_ladder, memory_hierarchy") from None
    return f"{exercise.id}_exercise_all", exercise.id


def command_bench(args, exercises):
    chosen = [benchmark_targets(name, exercises) for name in args.exercises]
    sys.path.insert(0, str(ROOT / "tools"))
    import run_benchmarks  # the runner; imported here, as it is only needed to benchmark
    missing = run_benchmarks.gpu_missing_reason()
    if missing:  # before building: a benchmark needs a GPU to time anything
        print(f"course bench: {missing}; a benchmark times kernels on a GPU, so there is "
              "nothing to run here (./course grade works without one)", file=sys.stderr)
        return 2
    runner = [sys.executable, str(ROOT / "tools" / "run_benchmarks.py"),
              "--build-dir", str(build_dir()), "--root", str(ROOT)]
    if args.record and os.environ.get("COURSE_COMPUTE_CAPABILITY"):
        raise UsageError("--record writes the committed results of the real GPU; unset "
                         "COURSE_COMPUTE_CAPABILITY (an emulated GPU's rows go to the build folder)")
    if args.record:
        # The committed tables describe the reference solutions: your rows stay out.
        runner += ["--results-dir", str(ROOT / "docs" / "results")]
    else:
        runner += ["--results-dir", str(build_dir() / "results"), "--include-exercise"]
    if not chosen:
        if not build_target("course_benchmarks", quiet=False):
            return 1
        return subprocess.call(runner)
    code = 0
    for target, name in chosen:
        if not build_target(target, quiet=True):
            print(f"{name}: does not compile, so it cannot be timed")
            code = 1
            continue
        code |= subprocess.call(runner + ["--filter", name])
    return code


# ---------------------------------------------------------------------------- test, check

def command_test(args, exercises):
    if not build_target("all", quiet=False):
        return 1
    command = ["ctest", "--test-dir", str(build_dir()), "--output-on-failure", "-L", "^(solution|cpu)$"]
    if args.filter:
        command += ["-R", args.filter]
    code = subprocess.call(command)
    if code != 0 or args.filter:
        return code
    # The skeletons' side of the suite: every skeleton test this machine can run that fails
    # must tell the learner which TODO to look at (on a GPU machine: ./course check --gpu).
    return run_course_check("--skeleton-messages")


def run_course_check(*options):
    """tools/check_course.py on this repository and build folder, with `options`."""
    return subprocess.call([sys.executable, str(ROOT / "tools" / "check_course.py"), "--root", str(ROOT),
                            "--build-dir", str(build_dir()), *options])


def command_check(args, exercises):
    if args.toolkit:
        # Every source of the course compiled by another (an older) CUDA toolkit's nvcc.
        return subprocess.call([sys.executable, str(ROOT / "tools" / "check_oldest_toolkit.py"),
                                "--nvcc", args.toolkit, "--work-dir", str(build_dir() / "oldest-toolkit")])
    return run_course_check(*(["--gpu"] if args.gpu else []))


# ---------------------------------------------------------------------------- doctor

def command_doctor(args, exercises):
    sys.path.insert(0, str(ROOT / "tools"))
    import doctor  # tools/doctor.py: what this machine has, and the fix for what it lacks
    return doctor.main([])


# ---------------------------------------------------------------------------- main

def parser():
    main = argparse.ArgumentParser(
        prog="./course", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="The course's one entry point. Run it from anywhere inside the repository.",
        epilog="An exercise is named m1_01, m1_01_vector_add or m1.01.\n"
               "Environment: BUILD_DIR (default: build), CUDA_ARCHS (e.g. 90; default: this\n"
               "machine's GPU, or a portable list without one), JOBS (parallel build jobs).\n"
               "./course setup installs the packages the build needs (Debian/Ubuntu).")
    commands = main.add_subparsers(dest="command", metavar="COMMAND")

    def add(name, function, help_text):
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(function=function)
        return sub

    sub = add("grade", command_grade, "build your version of an exercise and grade it "
              "(no name: the first unfinished one)")
    sub.add_argument("exercises", nargs="*", metavar="EXERCISE")
    sub.add_argument("--all", action="store_true", help="grade every exercise, one verdict each")
    sub.add_argument("--verbose", "-v", action="store_true", help="show the whole build and test output")
    sub.add_argument("--only", metavar="PATTERN",
                     help="run only the tests whose name matches (e.g. Sgemm2dTodoH); records no grade")
    add("status", command_status, "your progress: each exercise done, started or not started, and what is next")
    sub = add("hint", command_hint, "the next hint for an exercise, one level at a time")
    sub.add_argument("exercise", nargs="?", metavar="EXERCISE")
    sub.add_argument("--level", type=int, help="show this hint level again")
    sub.add_argument("--list", action="store_true", help="list the hints' titles, showing none of them")
    sub = add("watch", command_watch, "grade again each time you save a file of the exercise")
    sub.add_argument("exercise", nargs="?", metavar="EXERCISE")
    sub.add_argument("--interval", type=float, default=1.0, help="seconds between looks at the files")
    sub = add("reset", command_reset, "put the skeleton back from git; your version is kept in backups/")
    sub.add_argument("exercise", metavar="EXERCISE")
    sub = add("bench", command_bench, "time your kernel beside the reference, the previous step and the "
              "library; the table goes to <build>/results/<gpu>/ (also: gemm_ladder, memory_hierarchy)")
    sub.add_argument("exercises", nargs="*", metavar="EXERCISE")
    sub.add_argument("--record", action="store_true",
                     help="write the reference rows to the committed docs/results/<gpu>/ instead")
    sub = add("test", command_test, "build everything, run the reference solutions' tests and the CPU tests, "
              "and check that the skeletons' failing CPU tests name their TODOs")
    sub.add_argument("filter", nargs="?", help="only tests whose name matches this regular expression")
    sub = add("check", command_check, "check the course itself (--gpu: skeletons fail, solutions pass)")
    sub.add_argument("--gpu", action="store_true")
    sub.add_argument("--toolkit", metavar="NVCC",
                     help="instead, compile every source with this nvcc (say, the oldest CUDA toolkit "
                          "the course supports: see docs/setup.md)")
    add("doctor", command_doctor, "what this machine has for the course (GPU, CUDA, PyTorch, tools), "
        "each line OK or the command that fixes it")
    add("help", None, "this help")
    return main


def main(argv):
    arguments = parser()
    args = arguments.parse_args(argv)
    if args.command in (None, "help"):
        arguments.print_help()
        return 0
    try:
        return args.function(args, all_exercises())
    except UsageError as error:
        print(f"course {args.command}: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
