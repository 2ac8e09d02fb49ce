#!/usr/bin/env python3
"""Checks that every page a learner reads has its Korean twin, and that the twin says the same
things: the check that keeps the two languages in step.

Pages: the top README.md, docs/*.md, each month's README.md, and each exercise's README.md and
hints.md (and any other *.md in a month folder). The twin of X.md is X.ko.md beside it.

A twin must have, compared with its English page:
- the same section structure: the same headings, level by level, in the same order (the
  heading text is translated; its level and place are not);
- the same code blocks, character for character (commands and code are never translated);
- the same inline code spans (`./course grade m1_01`, `cudaMalloc`, file names), as a multiset;
- the same figures: every <!-- fig/spec/reading/goal/example: --> comment with the number
  before it (tools/check_figures.py), and every number with a unit of speed or time;
- the same links (a link to X.md may point to X.ko.md instead);
- a link to the other language within its first five lines, both ways.

So an English edit that changes a command, a figure or a link fails here until the Korean page
follows. Exit status 0 when every twin is in step, 1 with one line per problem.
"""
import argparse
import collections
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_figures  # noqa: E402  (the figure comments and the unit-figure pattern)
from lesson_pages import FENCE, HEADING, INLINE_CODE, LINK, lesson_files, strip_code, without_fences  # noqa: E402
LANGUAGE_LINK_LINES = 5
# Pages written for Korean readers only (the glossary of the terms the Korean pages use).
KOREAN_ONLY = {"docs/glossary.ko.md"}


def english_pages(root):
    return [path for path in lesson_files(root) if not path.name.endswith(".ko.md")]


def twin_of(path):
    return path.with_name(path.name[: -len(".md")] + ".ko.md")


def headings(text):
    return [len(match.group(1)) for match in HEADING.finditer(without_fences(text))]


def code_blocks(text):
    return [match.group(0) for match in FENCE.finditer(text)]


def inline_code(text):
    return collections.Counter(" ".join(span.split()) for span in INLINE_CODE.findall(without_fences(text)))


def normalized_link(target):
    """A link target with a Korean twin's name mapped back to the English page's, and without
    the section anchor of a page of the course (its heading text is translated)."""
    if target.startswith("#"):  # a section of the same page: its anchor is translated
        return "#"
    target = re.sub(r"\.ko\.md(?=$|#)", ".md", target)
    return re.sub(r"(\.md)#.*$", r"\1", target) if "://" not in target else target


def links(text, page):
    body = without_fences(text)
    return collections.Counter(normalized_link(t) for t in LINK.findall(body)
                               if not is_language_link(t, page)
                               and not any(t.split("#")[0].endswith(Path(k).name) for k in KOREAN_ONLY))


def is_language_link(target, page):
    """The link at the top of a page that leads to its other-language twin."""
    name = target.split("#")[0]
    return name in (page.name, twin_of(page).name) or (
        page.name.endswith(".ko.md") and name == page.name[: -len(".ko.md")] + ".md")


def figures(text):
    """The figure comments with the number before each, and the numbers with a unit."""
    prose = strip_code(text)  # as check_figures reads a page: comments in code are examples
    marked = []
    for match in check_figures.MARKER.finditer(prose):
        line_start = prose.rfind("\n", 0, match.start()) + 1
        before = check_figures.FIGURE_BEFORE.search(prose[line_start:match.start()])
        number = "" if before is None else "–".join(g for g in before.group(1, 2) if g)
        marked.append(f"{number} <!-- {match.group(1)}: {' '.join(match.group(2).split())} -->")
    with_unit = collections.Counter(f"{m.group(1)}{m.group(2).strip()}"
                                    for m in check_figures.UNIT_FIGURE.finditer(prose))
    return collections.Counter(marked), with_unit


def has_language_link(text, target_name):
    head = "\n".join(text.splitlines()[:LANGUAGE_LINK_LINES])
    return any(t.split("#")[0] == target_name for t in LINK.findall(head))


def difference(english, korean):
    """"missing: a, b; extra: c" for two Counters, or ""."""
    missing = list((english - korean).elements())
    extra = list((korean - english).elements())
    parts = []
    if missing:
        parts.append("missing in Korean: " + ", ".join(repr(x) for x in missing[:5])
                     + (" ..." if len(missing) > 5 else ""))
    if extra:
        parts.append("not in English: " + ", ".join(repr(x) for x in extra[:5])
                     + (" ..." if len(extra) > 5 else ""))
    return "; ".join(parts)


def compare(english_path, korean_path, rel):
    english = english_path.read_text(encoding="utf-8")
    korean = korean_path.read_text(encoding="utf-8")
    problems = []
    if not has_language_link(english, korean_path.name):
        problems.append(f"{rel}: no link to {korean_path.name} in its first {LANGUAGE_LINK_LINES} lines")
    if not has_language_link(korean, english_path.name):
        problems.append(f"{rel[:-3]}.ko.md: no link to {english_path.name} in its first "
                        f"{LANGUAGE_LINK_LINES} lines")
    if headings(english) != headings(korean):
        problems.append(f"{rel}: the Korean twin's headings differ (levels in order: English "
                        f"{headings(english)}, Korean {headings(korean)})")
    english_blocks, korean_blocks = code_blocks(english), code_blocks(korean)
    if english_blocks != korean_blocks:
        changed = next((i for i, (a, b) in enumerate(zip(english_blocks, korean_blocks)) if a != b),
                       min(len(english_blocks), len(korean_blocks)))
        shown = english_blocks[changed].splitlines()[:2] if changed < len(english_blocks) else ["(none)"]
        problems.append(f"{rel}: code block {changed + 1} differs in the Korean twin "
                        f"({len(english_blocks)} blocks in English, {len(korean_blocks)} in Korean); "
                        f"English: {' | '.join(shown)}")
    for what, english_items, korean_items in (
            ("inline code", inline_code(english), inline_code(korean)),
            ("links", links(english, english_path), links(korean, korean_path)),
            ("figure comments", figures(english)[0], figures(korean)[0]),
            ("figures", figures(english)[1], figures(korean)[1])):
        diff = difference(english_items, korean_items)
        if diff:
            problems.append(f"{rel}: {what} differ in the Korean twin: {diff}")
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--existing-only", action="store_true",
                        help="compare the twins that exist; do not require every page to have one")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    problems, compared = [], 0
    for page in english_pages(root):
        rel = page.relative_to(root).as_posix()
        twin = twin_of(page)
        if not twin.is_file():
            if not args.existing_only:
                problems.append(f"{rel}: no Korean twin {twin.name}")
            continue
        compared += 1
        problems += compare(page, twin, rel)
    for path in sorted(root.rglob("*.ko.md")):
        english = path.with_name(path.name[: -len(".ko.md")] + ".md")
        rel = path.relative_to(root).as_posix()
        if not english.is_file() and rel not in KOREAN_ONLY and not rel.startswith("build"):
            problems.append(f"{rel}: a Korean page without its English page")
    for problem in problems:
        print(problem)
    print(f"check_twins: {compared} Korean twin(s) compared; {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
