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
  started      when it was graded, or one of the files you edit differs from the original
               skeleton (tools/skeletons.json), committed or not;
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
from course_harness import paths, requirements  # noqa: E402  (paths, the skip wordings; no torch)
import skeleton_manifest  # noqa: E402  (tools/skeleton_manifest.py: the original skeletons)
import lesson_pages  # noqa: E402  (tools/lesson_pages.py: a lesson's **Needs:** line)
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

    def lesson_to_read(self):
        """The lesson in the learner's language (./course hint --lang ko, or COURSE_LANG=ko):
        README.ko.md where it exists, else README.md."""
        try:
            language = hint_language()
        except UsageError:
            language = "en"
        translated = self.folder / "README.ko.md"
        return translated if language == "ko" and (ROOT / translated).is_file() else self.lesson

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
        return lesson_pages.header_line(ROOT / self.lesson, "Needs") or ""

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


def configure_command(cache, environ=None):
    """The cmake command that configures the build, or None when it needs none. `cache` is the
    text of <build>/CMakeCache.txt (None: no build yet). It configures when there is no build,
    when CUDA_ARCHS asks for other architectures than the build has, and when the build's
    COURSE_EARLIER_KERNELS (read by CMake at configure time) is not the environment's (or
    `exercise` when unset): so `COURSE_EARLIER_KERNELS=solution ./course grade m3_04` grades
    with the reference m2.05, and the next grade without it with yours again."""
    environ = os.environ if environ is None else environ
    archs = environ.get("CUDA_ARCHS", "")
    earlier = environ.get(paths.EARLIER_KERNELS_SETTING, "").strip() or "exercise"
    if earlier not in paths.IMPLS:
        raise UsageError(f"{paths.EARLIER_KERNELS_SETTING} must be 'exercise' (your earlier kernels, the "
                         f"default) or 'solution' (the reference ones), got {earlier!r}")
    if cache is not None:
        cached_archs = cached_value(cache, "CMAKE_CUDA_ARCHITECTURES")
        cached_earlier = cached_value(cache, "COURSE_EARLIER_KERNELS") or "exercise"
        if (not archs or archs == cached_archs) and earlier == cached_earlier:
            return None
    command = ["cmake", "-S", str(ROOT), "-B", str(build_dir())]
    if cache is None:  # a build configured before keeps its build type
        command.append("-DCMAKE_BUILD_TYPE=Release")
    if archs:
        command.append(f"-DCMAKE_CUDA_ARCHITECTURES={archs}")
    command.append(f"-D{paths.EARLIER_KERNELS_SETTING}={earlier}")
    return command


def configure():
    """Runs CMake's configure step when configure_command() says the build needs it."""
    cache_file = build_dir() / "CMakeCache.txt"
    cache = cache_file.read_text(errors="replace") if cache_file.is_file() else None
    command = configure_command(cache)
    if command is None:
        return
    before = cached_value(cache, "COURSE_EARLIER_KERNELS") if cache is not None else None
    wanted = command[-1].split("=", 1)[1]
    if before is not None and before != wanted:
        said = os.environ.get(paths.EARLIER_KERNELS_SETTING, "").strip()
        now = f"COURSE_EARLIER_KERNELS={said}" if said else "COURSE_EARLIER_KERNELS is not set (exercise)"
        print(f"{now}, and the build was configured with {before}: configuring again (CMake reads "
              "it when it configures: m3.04 links whose m2.05)", flush=True)
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


def changed_from_skeleton(exercise):
    """True when one of the files you edit differs from the original skeleton, as
    tools/skeletons.json lists it: committing your work does not make it the skeleton.
    Computed without git; False where the manifest does not list the exercise."""
    try:
        originals = skeleton_manifest.originals(ROOT, exercise.folder, given=False)
    except skeleton_manifest.ManifestError:
        return False
    return any(skeleton_manifest.file_blob(ROOT / rel) != blob for rel, blob in originals.items())


# What the grade's result makes of an exercise whose files are as they were when graded.
SETTLED_STATES = {"passed": "done", "done here": "done here", "blocked": "blocked"}
# States that let the path go on to the next exercise.
MOVES_ON = {"done", "done here", "blocked"}


def state_of(exercise):
    grade = last_grade(exercise)
    if grade and grade.get("result") in SETTLED_STATES and grade.get("files_digest") == files_digest(exercise):
        return SETTLED_STATES[grade["result"]]
    if grade or changed_from_skeleton(exercise):
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
            print(f"Next: {following.title}, lesson {following.lesson_to_read()}")
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
        print(f"Next: {following.title}\n  read   {following.lesson_to_read()}\n"
              f"  edit   {', '.join(rel.as_posix() for rel in following.learner_files())}\n"
              f"  grade  ./course grade {following.short}")
    return 0


# ---------------------------------------------------------------------------- hints
#
# Every exercise's hints.md has one format (tools/check_course.py checks it):
#
#     # Hints for m3.05 (./course hint m3_05 shows them one step at a time)
#
#     ## TODO(m3.05a): which output pixel a row is
#     ### The idea
#     ...the gentlest step: what to think about, no code...
#     ### The arithmetic
#     ...a bit more...
#     ### Almost the code
#     ...the last step may show code, for this TODO only...
#     ## TODO(m3.05b): ...
#     ### ...
#     ## When the machine-code check fails
#     ### ...
#
# A '## ' section is one TODO: its title names the tag (two tags only when the two TODOs are
# truly one step). A section without a tag (troubleshooting) is allowed. Its '### ' steps
# are the levels, the gentlest first; a step never holds code or the answer of another TODO.
# Text between a '## ' line and its first '### ' is shown above each of its steps.
# The steps seen are counted per section in <build>/course_progress/<id>.hints.json:
# {"shown": {"m3.05a": 2}, "last": "m3.05a"}.

HINT_TAG = re.compile(r"TODO\((m\d+\.\d\d[a-z]?)\)")


@dataclass
class HintSection:
    title: str  # the '## ' line without its '## '
    tags: tuple  # the TODO tags the title names, e.g. ("m3.05a",); () for a troubleshooting section
    intro: str  # text before the first step, shown above each step
    steps: list  # [(title, body)], the gentlest first
    stepped: bool = True  # False: the section had no '### ' step, and its text is its one step

    @property
    def key(self):  # its name in the seen-file
        return "+".join(self.tags) if self.tags else self.title

    @property
    def label(self):  # its name in a sentence
        return ", ".join(f"TODO({tag})" for tag in self.tags) or f"'{self.title}'"


HINT_LANGUAGES = {"en": "hints.md", "ko": "hints.ko.md"}


def hint_language(args=None):
    """The language of the hints: --lang (remembered for the next hints), else COURSE_LANG,
    else the one remembered, else English."""
    settings_file = progress_dir() / "settings.json"
    settings = read_json(settings_file, {})
    chosen = getattr(args, "lang", None)
    if chosen:
        settings["lang"] = chosen
        settings_file.write_text(json.dumps(settings) + "\n")
        return chosen
    language = os.environ.get("COURSE_LANG", "").strip().lower() or settings.get("lang", "en")
    if language not in HINT_LANGUAGES:
        raise UsageError(f"COURSE_LANG={language}: the hints are in {', '.join(sorted(HINT_LANGUAGES))}")
    return language


def hints_path(exercise, language="en"):
    """The hints file of an exercise in `language` (hints.md in English, hints.ko.md in
    Korean); English where the translation is missing."""
    translated = ROOT / exercise.folder / HINT_LANGUAGES.get(language, "hints.md")
    return translated if translated.is_file() else ROOT / exercise.folder / "hints.md"


def parse_hints(path):
    """hints.md: a title, then one '## ' section per TODO, each with its '### ' steps. A
    section without steps (an old file) counts as one step: the check reports it."""
    sections = []
    fenced = False
    for line in path.read_text().splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            title = line[3:].strip()
            sections.append(HintSection(title, tuple(HINT_TAG.findall(title)), [], []))
        elif not fenced and line.startswith("### ") and sections:
            sections[-1].steps.append([line[4:].strip(), []])
        elif sections and sections[-1].steps:
            sections[-1].steps[-1][1].append(line)
        elif sections:
            sections[-1].intro.append(line)
    for section in sections:
        section.intro = "\n".join(section.intro).strip()
        section.steps = [(title, "\n".join(body).strip()) for title, body in section.steps]
        if not section.steps:
            section.steps, section.intro, section.stepped = [(section.title, section.intro)], "", False
    return sections


def read_hints_seen(path):
    """The seen-file: steps shown per section, and the section shown last. An old file
    (one number for the whole exercise) counts as nothing seen: its levels were not TODOs."""
    record = read_json(path, {})
    record = record if isinstance(record, dict) else {}
    shown = record.get("shown")
    shown = {key: value for key, value in shown.items() if isinstance(value, int)} if isinstance(shown, dict) else {}
    last = record.get("last") if isinstance(record.get("last"), str) else None
    return shown, last


def todo_tag(exercise, name):
    """The tag a learner names: d, m3.05d, m3_05d, 3.05d or TODO(m3.05d) -> m3.05d; None if it is none."""
    match = re.fullmatch(r"(?:TODO\()?(?:m?(\d+)[._](\d\d?))?([a-z]?)\)?", name.strip(), re.IGNORECASE)
    if not match or not (match.group(1) or match.group(3)):
        return None
    if match.group(1) and (int(match.group(1)), int(match.group(2))) != (exercise.month, int(exercise.number)):
        return None
    return exercise.tag + match.group(3).lower()


def find_hint_section(exercise, sections, name):
    """The section a learner names: its TODO (in any of todo_tag's forms), or its number in --list."""
    name = name.strip()
    if name.isdigit() and 1 <= int(name) <= len(sections):
        return sections[int(name) - 1]
    tag = todo_tag(exercise, name)
    for section in sections:
        if tag in section.tags:
            return section
    named = "\n".join(f"  {section_command(exercise, sections, s):24} {s.title}" for s in sections)
    example = next((t for s in sections for t in s.tags), exercise.tag + "a")
    raise UsageError(f"{exercise.title} has no hints for '{name}'. It has hints for:\n{named}\n"
                     f"(name a TODO by its letter, or as {example}, {example[1:]} or TODO({example}); "
                     f"./course hint {exercise.short} --list lists the steps)")


def section_command(exercise, sections, section):
    """The shortest command that asks for this section's next step."""
    tag = section.tags[0] if section.tags else ""
    letter = tag[len(exercise.tag):] if tag.startswith(exercise.tag) else ""
    return f"./course hint {exercise.short} {letter or sections.index(section) + 1}"


def split_hint_argument(args):
    """./course hint m3.05d (or TODO(m3.05d)) alone names the exercise and the TODO at once;
    ./course hint d names a TODO of the first unfinished exercise."""
    if args.exercise and args.todo is None:
        if re.fullmatch(r"[a-z]", args.exercise.strip()):
            return None, args.exercise.strip()
        match = re.fullmatch(r"(?:TODO\()?m?(\d+)[._](\d\d?)([a-z])\)?", args.exercise.strip(), re.IGNORECASE)
        if match:
            return f"m{match.group(1)}_{int(match.group(2)):02d}", args.exercise
    return args.exercise, args.todo


def command_hint(args, exercises):
    exercise_name, todo = split_hint_argument(args)
    exercise = find_exercise(exercise_name, exercises) if exercise_name else first_unfinished(exercises)
    if exercise is None:
        print("Every exercise is done: no hints needed.")
        return 0
    language = hint_language(args)
    path = hints_path(exercise, language)
    if language != "en" and path.name == "hints.md":
        print(f"({exercise.title} has no {HINT_LANGUAGES[language]} yet: the hints in English)")
    if not path.is_file():
        print(f"{exercise.title} has no hints.md; its lesson is {exercise.lesson}.")
        return 1
    sections = parse_hints(path)
    if not sections:
        print(f"{exercise.title}: {path.relative_to(ROOT)} has no hints yet; its lesson is {exercise.lesson}.")
        return 1
    seen_file = progress_dir() / f"{exercise.id}.hints.json"
    shown, last = read_hints_seen(seen_file)

    def seen(section):
        return min(shown.get(section.key, 0), len(section.steps))

    if args.list:  # the titles only: which step to ask for, without reading any of them
        print(f"{exercise.title}: hints for each TODO, one step at a time, the gentlest first")
        for number, section in enumerate(sections, 1):
            print(f"  [{number}] {section.title}   ({section_command(exercise, sections, section)})")
            for step, (title, _) in enumerate(section.steps, 1):
                print(f"        {step}. {title}{'  (seen)' if step <= seen(section) else ''}")
        example = section_command(exercise, sections, next((s for s in sections if s.tags), sections[0]))
        print(f"./course hint {exercise.short} shows the next step you have not seen; {example} the next "
              f"step of that section;\n{example} --level 2 its step 2 (again).")
        return 0
    if todo is not None:
        section = find_hint_section(exercise, sections, todo)
    elif args.level is not None:  # a step of the section shown last (or of the first one)
        section = next((s for s in sections if s.key == last), sections[0])
    else:
        section = next((s for s in sections if seen(s) < len(s.steps)), None)
        if section is None:
            example = section_command(exercise, sections, next((s for s in sections if s.tags), sections[0]))
            print(f"You have seen every hint of {exercise.title}. ./course hint {exercise.short} --list "
                  f"lists them, {example} --level N shows one again;\n"
                  f"the reference is in solutions/{exercise.folder}/.")
            return 0
    if args.level is not None:
        step = args.level
        if not 1 <= step <= len(section.steps):
            raise UsageError(f"{section.title} ({exercise.title}) has steps 1 to {len(section.steps)}, not {step}")
    elif seen(section) < len(section.steps):
        step = seen(section) + 1
    else:
        print(f"You have seen the {len(section.steps)} step(s) for {section.label}. "
              f"{section_command(exercise, sections, section)} --level N shows one again;\n"
              f"the reference is in solutions/{exercise.folder}/.")
        return 0
    title, body = section.steps[step - 1]
    intro = f"{section.intro}\n\n" if section.intro else ""
    print(f"{exercise.title}, {section.title}\nstep {step} of {len(section.steps)}: {title}\n\n{intro}{body}\n")
    shown[section.key] = max(seen(section), step)
    seen_file.write_text(json.dumps({"shown": shown, "last": section.key}) + "\n")
    command = section_command(exercise, sections, section)
    following = next((s for s in sections if seen(s) < len(s.steps)), None)
    if step < len(section.steps):
        print(f"({command} again for step {step + 1} of {len(section.steps)})")
    elif following is not None:
        print(f"(that was the last step for {section.label}; ./course hint {exercise.short} goes on with "
              f"{following.title if following.tags else following.label})")
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
                print(f"\nNext: {exercise.title}, lesson {exercise.lesson_to_read()}")
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
    # Every file of the exercise (yours and the given ones) that is not the original skeleton,
    # put back from the blobs tools/skeletons.json names: right also after you committed.
    try:
        originals = skeleton_manifest.originals(ROOT, exercise.folder)
        changed = sorted(rel for rel, blob in originals.items()
                         if skeleton_manifest.file_blob(ROOT / rel) != blob)
        contents = {rel: skeleton_manifest.read_blob(ROOT, rel, originals[rel]) for rel in changed}
    except skeleton_manifest.ManifestError as error:
        raise UsageError(str(error)) from None
    if not changed:
        print(f"{exercise.title}: every file is already the original skeleton; nothing to reset.")
    else:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        backup = ROOT / "backups" / exercise.id / stamp
        kept = False
        for rel in changed:
            path = ROOT / rel
            if path.is_file():
                (backup / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, backup / rel)
                kept = True
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(contents[rel])
            if skeleton_manifest.executable(ROOT, rel):
                path.chmod(path.stat().st_mode | 0o111)
        print(f"{exercise.title}: back to the original skeleton: {', '.join(changed)}")
        if kept:
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

LOOKS_LIKE_EXERCISE = re.compile(r"^(m\d+[._]\d|month\d+/)")


def test_selection(names, test_filter, exercises):
    """What `./course test NAME... [--filter REGEX]` runs: ([exercises], filter). A name is an
    exercise (find_exercise's forms). A single name that is none, and does not look like one
    (m3_6x, month3/...), is the filter, as the one argument was before: ./course test Sgemm2d."""
    chosen = []
    for name in names:
        try:
            chosen.append(find_exercise(name, exercises))
        except UsageError:
            if LOOKS_LIKE_EXERCISE.match(name.strip()) or len(names) > 1 or test_filter:
                raise
            test_filter = name
    return list(dict.fromkeys(chosen)), test_filter


def test_targets(chosen):
    """What `./course test` builds: everything (`all`) when it names no exercise; else, for each
    exercise named, <id>_solution_all: the reference library and the test programs that its
    solution and CPU tests run (cmake/CourseExercise.cmake). A Python exercise's is empty: its
    tests build their extension (from its sources and the earlier exercises') when they run."""
    return [f"{exercise.id}_solution_all" for exercise in chosen] or ["all"]


def test_command(chosen, test_filter):
    """The ctest command of `./course test`: the solution and CPU tests, of the exercises
    chosen (their labels: each test of an exercise carries its id), whose name matches the filter."""
    command = ["ctest", "--test-dir", str(build_dir()), "--output-on-failure", "-L", "^(solution|cpu)$"]
    if chosen:  # several -L: a test must match each (ctest 3.21 and newer)
        command += ["-L", "^(" + "|".join(exercise.id for exercise in chosen) + ")$"]
    if test_filter:
        command += ["-R", test_filter]
    return command


def command_test(args, exercises):
    chosen, test_filter = test_selection(args.exercises, args.filter, exercises)
    for target in test_targets(chosen):
        if chosen:
            print(f"== building {target}", flush=True)
        if not build_target(target, quiet=bool(chosen)):
            return 1
    code = subprocess.call(test_command(chosen, test_filter))
    if code != 0 or test_filter or chosen:
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
    sub = add("hint", command_hint, "the next hint for an exercise, one step at a time, per TODO "
              "(no TODO: the first one with steps you have not seen)")
    sub.add_argument("exercise", nargs="?", metavar="EXERCISE")
    sub.add_argument("todo", nargs="?", metavar="TODO",
                     help="which TODO: d, m3.05d, 3.05d or TODO(m3.05d) (or a section's number in --list)")
    sub.add_argument("--level", "--step", dest="level", type=int, metavar="N",
                     help="show step N of that TODO (without one: of the TODO shown last), again or ahead")
    sub.add_argument("--list", action="store_true", help="list each TODO's step titles, showing none of them")
    sub.add_argument("--lang", choices=sorted(HINT_LANGUAGES),
                     help="the language of the hints and of the lessons ./course points to, "
                          "remembered (ko: 한국어); COURSE_LANG=ko does the same for one command")
    sub = add("watch", command_watch, "grade again each time you save a file of the exercise")
    sub.add_argument("exercise", nargs="?", metavar="EXERCISE")
    sub.add_argument("--interval", type=float, default=1.0, help="seconds between looks at the files")
    sub = add("reset", command_reset, "put the exercise's original files back (also after a commit); "
              "your version is kept in backups/")
    sub.add_argument("exercise", metavar="EXERCISE")
    sub = add("bench", command_bench, "time your kernel beside the reference, the previous step and the "
              "library; the table goes to <build>/results/<gpu>/ (also: gemm_ladder, memory_hierarchy)")
    sub.add_argument("exercises", nargs="*", metavar="EXERCISE")
    sub.add_argument("--record", action="store_true",
                     help="write the reference rows to the committed docs/results/<gpu>/ instead")
    sub = add("test", command_test, "build everything, run the reference solutions' tests and the CPU tests, "
              "and check that the skeletons' failing CPU tests name their TODOs; with exercises named "
              "(./course test m3_06), build and run only theirs")
    sub.add_argument("exercises", nargs="*", metavar="EXERCISE",
                     help="only these exercises' reference tests (one that names no exercise is the filter)")
    sub.add_argument("--filter", "-R", metavar="REGEX",
                     help="only tests whose name matches this regular expression")
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
