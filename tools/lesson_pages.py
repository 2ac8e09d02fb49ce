"""The pages a learner reads, and how the course's checkers read their Markdown: one place for
the patterns that tools/check_figures.py, tools/check_links.py and tools/check_twins.py share."""
import re

# A fenced code block: an opening ``` or ~~~ line (indented in a list too) to its closing one.
FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?^[ \t]*\1[ \t]*$", re.M | re.S)
# An inline code span; it may wrap onto the next line of its paragraph (never past a blank line).
INLINE_CODE = re.compile(r"`((?:[^`\n]|\n(?![ \t]*\n))+)`")
# The target of a link or an image: [text](target "title").
LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
# A heading: its level (the number of #) and its text.
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.M)


def lesson_files(root):
    """The pages a learner reads: the top README, docs/*.md, each month's and exercise's
    README and hints, in English and in any other language beside them."""
    files = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    for month in sorted(root.glob("month[0-9]")):
        files += sorted(month.glob("*.md")) + sorted(month.glob("*/*.md"))
    return [path for path in files if path.is_file()]


def _blank(match):
    return re.sub(r"[^\n]", " ", match.group(0))


def without_fences(text):
    """text with its fenced code blocks blanked out (offsets and line numbers kept)."""
    return FENCE.sub(_blank, text)


def strip_code(text):
    """text with fenced code blocks and inline code blanked out (offsets and lines kept): the
    prose, where figures, links and comments count."""
    return INLINE_CODE.sub(_blank, without_fences(text))


def header_line(lesson, label, lines=15):
    """The text after **label:** on a line of the lesson's head (the `**Needs:**` and
    `**Builds on:**` lines under the title), without the trailing \\ that breaks the line;
    None when the lesson has no such line."""
    try:
        head = lesson.read_text(errors="replace").splitlines()[:lines]
    except OSError:
        return None
    prefix = f"**{label}:**"
    for line in head:
        if line.strip().startswith(prefix):
            return line.strip()[len(prefix):].rstrip("\\ ").strip()
    return None
