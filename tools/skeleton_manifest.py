#!/usr/bin/env python3
"""The original skeleton of every exercise, as git blob ids: tools/skeletons.json.

Every file git tracks in an exercise folder monthN/NN_name/ (all but the *.md lesson and
hints) is listed with its blob id (what `git hash-object` gives for its content), as one of
  learner  the files you edit: those with a twin under solutions/ (Exercise.learner_files());
  given    the others: tests, benchmarks, CMakeLists.txt, the headers a lesson's "Going
           further" invites you to edit.
./course status counts an exercise as started when a learner file differs from its blob, and
./course reset EXERCISE puts back every file that differs (`git cat-file blob <id>`), both
whether or not you committed your work: the blobs stay in git's object store.

Maintainers: after changing a skeleton (or adding an exercise, once its files are added to
git), run
    python3 tools/skeleton_manifest.py --write
and commit tools/skeletons.json with the change. tools/check_course.py compares the manifest
with the committed files (`git ls-files -s`, never the working tree, which a learner edits).
--check does the same comparison on its own.
"""
import argparse
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

MANIFEST = "tools/skeletons.json"
WRITE_COMMAND = "python3 tools/skeleton_manifest.py --write"
# A file of an exercise folder: (folder, path inside it)
EXERCISE_FILE = re.compile(r"^(month\d+/\d\d_[^/]+)/(.+)$")
ABOUT = ("The original skeleton of each exercise: every file git tracks in its folder but the *.md, "
         "as its git blob id; 'learner' files have a twin under solutions/, the others are 'given'. "
         "./course status and ./course reset compare with it. Written by " + WRITE_COMMAND + ".")


class ManifestError(Exception):
    """The manifest cannot be read, or a blob it names is not in this clone."""


def blob_id(data):
    """The id git gives a file with this content (git hash-object), without git."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def file_blob(path):
    """The blob id of the file at `path`, or None when there is no such file."""
    try:
        return blob_id(Path(path).read_bytes())
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def git(root, *args, data=None):
    return subprocess.run(["git", "-C", str(root), *args], input=data, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, check=True).stdout


def index_entries(root):
    """{path: (mode, blob id)} of every file git tracks (its index: on a clean checkout, HEAD)."""
    entries = {}
    for record in git(root, "ls-files", "-s", "-z").decode().split("\0"):
        if record:
            info, path = record.split("\t", 1)
            mode, blob, stage = info.split()
            if stage == "0":
                entries[path] = (mode, blob)
    return entries


def build(blobs, executable=()):
    """The manifest of {path: blob id}, the files of the whole repository that count: the
    exercise folders' files but *.md, each learner's when solutions/<path> is among them;
    `executable`: the paths git keeps with mode 100755."""
    exercises = {}
    for path, blob in sorted(blobs.items()):
        match = EXERCISE_FILE.match(path)
        if not match or path.endswith(".md"):
            continue
        kind = "learner" if f"solutions/{path}" in blobs else "given"
        folder = exercises.setdefault(match.group(1), {"learner": {}, "given": {}})
        folder[kind][path] = blob
    listed = {path for files in exercises.values() for kind in files for path in files[kind]}
    return {"about": ABOUT, "exercises": exercises, "executable": sorted(listed & set(executable))}


def from_index(root):
    """The manifest the committed files (git's index) call for."""
    entries = index_entries(root)
    return build({path: blob for path, (_, blob) in entries.items()},
                 [path for path, (mode, _) in entries.items() if mode == "100755"])


def from_working_tree(root):
    """The manifest of the tracked files as they are in the working tree (what --write writes)."""
    entries = index_entries(root)
    paths = [path for path in entries if (Path(root) / path).is_file()]
    # git hash-object applies the repository's filters, as `git add` would
    ids = git(root, "hash-object", "--stdin-paths", data="\n".join(paths).encode()).decode().split()
    return build(dict(zip(paths, ids)), [path for path in paths if entries[path][0] == "100755"])


def dump(manifest):
    return json.dumps(manifest, indent=1, sort_keys=True) + "\n"


def load(root):
    path = Path(root) / MANIFEST
    try:
        manifest = json.loads(path.read_text())
        exercises = manifest["exercises"]
        for files in exercises.values():
            if set(files) != {"learner", "given"}:
                raise ValueError("an exercise needs 'learner' and 'given'")
        if not isinstance(manifest.get("executable", []), list):
            raise ValueError("'executable' is a list of paths")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise ManifestError(f"{MANIFEST} cannot be read ({error}); a fresh copy of the course has it "
                            f"(maintainers: {WRITE_COMMAND})") from None
    return manifest


def originals(root, folder, given=True):
    """{path: blob id} of the original files of the exercise in `folder` (monthN/NN_name):
    the learner's files, and the given ones too unless given=False."""
    manifest = load(root)
    files = manifest["exercises"].get(Path(folder).as_posix())
    if files is None:
        raise ManifestError(f"{MANIFEST} does not list {Path(folder).as_posix()}/ "
                            f"(maintainers: {WRITE_COMMAND})")
    return {**files["learner"], **(files["given"] if given else {})}


def read_blob(root, path, blob):
    """The content of blob `blob`, the original of `path`, from git's object store."""
    result = subprocess.run(["git", "-C", str(root), "cat-file", "blob", blob],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if result.returncode != 0 or blob_id(result.stdout) != blob:
        raise ManifestError(
            f"the original of {path} (git object {blob}) is not in this clone's .git, so it cannot be "
            "put back. A shallow or partial clone lacks old objects: run `git fetch --unshallow` "
            f"(or clone the course again, without --depth), then reset again; or copy {path} from "
            "a fresh copy of the course.")
    return result.stdout


def differences(expected, actual):
    """What differs between two manifests: one line per file."""
    lines = []

    def kinds(manifest):
        return {path: (kind, blob) for files in manifest["exercises"].values()
                for kind in ("learner", "given") for path, blob in files[kind].items()}

    want, have = kinds(expected), kinds(actual)
    for path in sorted(set(want) | set(have)):
        if path not in want:
            lines.append(f"{path}: listed in {MANIFEST}, but git does not track it")
        elif path not in have:
            lines.append(f"{path}: git tracks it, but {MANIFEST} does not list it")
        elif want[path][1] != have[path][1]:
            lines.append(f"{path}: the committed file is not the one {MANIFEST} lists "
                         f"(blob {want[path][1][:12]}, listed {have[path][1][:12]})")
        elif want[path][0] != have[path][0]:
            lines.append(f"{path}: a {want[path][0]} file (solutions/ twin or not), "
                         f"but {MANIFEST} lists it as {have[path][0]}")
    for path in sorted(set(expected.get("executable", [])) ^ set(actual.get("executable", []))):
        if path in want and path in have:
            lines.append(f"{path}: its mode (executable or not) is not the one {MANIFEST} lists")
    return lines


def executable(root, path):
    """True when the original of `path` is an executable file (mode 100755)."""
    return path in load(root).get("executable", [])


def check(root):
    """The differences between the committed files and the manifest (the manifest's own
    problems included); [] when they agree."""
    try:
        manifest = load(root)
    except ManifestError as error:
        return [str(error)]
    return differences(from_index(root), manifest)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true",
                        help=f"write {MANIFEST} from the tracked files as they are in the working tree")
    action.add_argument("--check", action="store_true",
                        help=f"compare {MANIFEST} with the committed files (exit status 1 if they differ)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if args.write:
        manifest = from_working_tree(root)
        (root / MANIFEST).parent.mkdir(parents=True, exist_ok=True)
        (root / MANIFEST).write_text(dump(manifest))
        count = sum(len(files[kind]) for files in manifest["exercises"].values() for kind in files)
        print(f"wrote {MANIFEST}: {count} file(s) of {len(manifest['exercises'])} exercise(s)")
        untracked = [path for path in git(root, "ls-files", "--others", "--exclude-standard", "-z",
                                          "--", "month*").decode().split("\0")
                     if EXERCISE_FILE.match(path) and not path.endswith(".md")]
        if untracked:
            print("not listed, since git does not track them (git add them, then run this again): "
                  + ", ".join(untracked))
        return 0
    problems = check(root)
    for problem in problems:
        print(f"skeleton manifest: {problem}")
    if problems:
        print(f"skeleton manifest: run {WRITE_COMMAND} and commit {MANIFEST}")
        return 1
    print(f"skeleton manifest: {MANIFEST} lists the committed skeletons")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
