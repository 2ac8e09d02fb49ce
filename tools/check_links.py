#!/usr/bin/env python3
"""Checks that every relative link of the pages a learner reads (English and Korean) resolves:
the file or folder it names exists in the repository, and a #section of a Markdown page of
the course names one of its headings. Links to the web are not fetched.

Exit status 0 when every link resolves, 1 with one line per broken link."""
import argparse
import re
import sys
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lesson_pages import HEADING, LINK, lesson_files, strip_code, without_fences  # noqa: E402


def anchor(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens
    (letters of every script kept)."""
    text = re.sub(r"`|\*\*|\*|_(?=\W)|(?<=\W)_|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LNM")
    return kept.replace(" ", "-")


def anchors(path):
    text = without_fences(path.read_text(encoding="utf-8"))  # inline code stays: it is in the anchor
    seen, found = {}, set()
    for match in HEADING.finditer(text):
        base = anchor(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def check_page(path, root):
    problems = []
    text = strip_code(path.read_text(encoding="utf-8"))
    for match in LINK.finditer(text):
        target = match.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:
            continue
        line = text.count("\n", 0, match.start()) + 1
        where = f"{path.relative_to(root).as_posix()}:{line}"
        file_part, _, section = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            problems.append(f"{where}: the link {target} leads to nothing ({file_part} does not exist)")
            continue
        if section and linked.is_file() and linked.suffix == ".md" and section not in anchors(linked):
            problems.append(f"{where}: the link {target}: {linked.name} has no section #{section}")
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args(argv)
    root = args.root.resolve()
    pages = lesson_files(root)
    problems = [problem for page in pages for problem in check_page(page, root)]
    for problem in problems:
        print(problem)
    print(f"check_links: {len(pages)} page(s); {len(problems)} broken link(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
