#!/usr/bin/env python3
"""Checks that every measured figure a lesson states matches the record it comes from.

A lesson ties a figure to its record with an HTML comment (invisible on GitHub) right after it:

    the tiled kernel is 7.4× <!-- fig: m3_03_direct_conv speedup conv_fp32/m3_03_tiled/solution/ResNet_C64_56_K256_1x1 -->
    8.45 TFLOP/s <!-- fig: m2_03_tiled_gemm TFLOPS gemm/solution/n:1024 -->
    24.2–24.7% of cuBLAS <!-- fig: m2_03_tiled_gemm TFLOPS gemm/solution/n:1024 over gemm/cublas/n:1024, ... -->

    <!-- fig: FILE FIELD ROW[, ROW ...] -->

- FILE: a results file, docs/results/<gpu>/FILE.json (h200 unless --gpu says otherwise).
- ROW: a benchmark row, its name as in the results table (Google Benchmark's run_name without
  /manual_time), or "A over B": the ratio of A's FIELD to B's FIELD. ROW@OTHER names a row of
  another results file, docs/results/<gpu>/OTHER.json (a ratio across two benchmarks).
- FIELD: a key of the row (TFLOPS, GBps, peak_pct, cublas_pct, speedup, workspace_MiB,
  latency_ns, ...), or time_ns, time_us, time_ms, time_s: the row's time in that unit. With
  "over", time gives "A takes N× B's time" and TFLOPS "A runs at N× B's rate".
- The figure is the number (or range "a–b") just before the comment. A ratio written with %
  is compared as a percentage. One number with several rows: every row must round to it. A
  range: its ends are the smallest and the largest of the rows.
- A figure matches when the record rounds to it at the precision written: 7.4 covers
  [7.35, 7.45]; 4,200 covers [4,150, 4,250] (trailing zeros of a whole number of four
  digits or more are rounding; 20 covers [19.5, 20.5]).

A figure that is not a measurement says what it is instead, with the same kind of comment:
<!-- spec: where the value comes from -->, <!-- reading: the command that shows it -->,
<!-- goal: ... --> (a target, not a result) or <!-- example: ... --> (arithmetic on an
example). Every number with a unit of speed or time (×, %, TFLOP/s, GB/s, µs, ms, ns) in a
lesson's prose must have one of these comments after it, before the next such number.

Exit status: 0 when every figure matches, 1 with one line per problem.
"""
import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_benchmarks  # noqa: E402  (table_rows: the rows a results table shows)
from lesson_pages import lesson_files, strip_code  # noqa: E402

MARKER = re.compile(r"<!--\s*(fig|spec|reading|goal|example):(.*?)-->", re.S)
NUMBER = r"\d[\d,]*(?:\.\d+)?"
# The figure right before a marker: a number or a range, then at most a unit and a few words.
FIGURE_BEFORE = re.compile(
    rf"(?:(?<![\w.])({NUMBER})\s*(?:[–—-]|to)\s*)?(?<![\w.])({NUMBER})(\s*[^\d<]{{0,24}}?)\s*$")
# A number with a unit of speed or time in prose (3×3 and 1x1 are shapes, not figures).
UNIT_FIGURE = re.compile(
    rf"(?<![\w.^])({NUMBER})\s?(×(?!\s?\d)|x(?!\s?\d)(?!\w)|TFLOP/s|GFLOP/s|GB/s|GiB/s|TB/s|µs|us\b|ms\b|ns\b|%)")


def precision(written):
    """Half the unit of the last digit written: 7.4 -> 0.05, 4,200 -> 50, 7 -> 0.5."""
    digits = written.replace(",", "")
    if "." in digits:
        return 0.5 * 10 ** -len(digits.split(".")[1])
    if len(digits) < 4 or not digits.strip("0"):  # 20 is twenty, not "about 20"
        return 0.5
    return 0.5 * 10 ** (len(digits) - len(digits.rstrip("0")))


def matches(written, value):
    return abs(float(written.replace(",", "")) - value) <= precision(written) * (1 + 1e-9)


class Records:
    def __init__(self, results_dir):
        self.results_dir = results_dir
        self.files = {}

    def rows(self, name):
        if name not in self.files:
            path = self.results_dir / f"{name}.json"
            if not path.is_file():
                self.files[name] = None
            else:
                data = json.loads(path.read_text())
                self.files[name] = {
                    re.sub(r"/(manual_time|real_time|process_time)$", "", row["name"]): row
                    for row in run_benchmarks.table_rows(data)}
        return self.files[name]


def time_in(row, field):
    return run_benchmarks.to_microseconds(row) * {"time_ns": 1e3, "time_us": 1.0,
                                                  "time_ms": 1e-3, "time_s": 1e-6}[field]


def marker_values(records, spec):
    """[values] for a fig marker's text "FILE FIELD ROW[, ROW...]"; raises ValueError."""
    words = spec.split(None, 2)
    if len(words) < 3:
        raise ValueError("a fig comment is <!-- fig: FILE FIELD ROW[, ROW ...] -->")
    name, field, rest = words
    rows = records.rows(name)
    if rows is None:
        raise ValueError(f"no results file {records.results_dir / (name + '.json')}")

    def value(row_name):
        file_name, file_rows = name, rows
        if "@" in row_name:  # a row of another results file: ROW@FILE
            row_name, file_name = row_name.split("@", 1)
            file_rows = records.rows(file_name)
            if file_rows is None:
                raise ValueError(f"no results file {records.results_dir / (file_name + '.json')}")
        if row_name not in file_rows:
            raise ValueError(f"{file_name} has no row {row_name}")
        row = file_rows[row_name]
        if run_benchmarks.row_status(row) != run_benchmarks.OK:
            raise ValueError(f"{name}: row {row_name} has no time ({run_benchmarks.row_note(row)})")
        if field.startswith("time_"):
            if field not in ("time_ns", "time_us", "time_ms", "time_s"):
                raise ValueError(f"unknown time unit {field} (time_ns, time_us, time_ms, time_s)")
            return time_in(row, field)
        if field not in row:
            raise ValueError(f"{name}: row {row_name} has no field {field}")
        return float(row[field])

    values = []
    for item in rest.split(","):
        parts = item.split()
        if len(parts) == 1:
            values.append((value(parts[0]), False))
        elif len(parts) == 3 and parts[1] == "over":
            values.append((value(parts[0]) / value(parts[2]), True))
        else:
            raise ValueError(f"cannot read the row '{item.strip()}' (ROW or 'A over B')")
    return values


def check_text(text, records, where):
    """Problems of one page's text: fig markers that do not match, figures without a marker."""
    problems = []
    prose = strip_code(text)  # a comment in a code block is an example, not a figure
    text = prose
    for match in MARKER.finditer(prose):
        kind, spec = match.group(1), " ".join(match.group(2).split())
        line = text.count("\n", 0, match.start()) + 1
        line_start = text.rfind("\n", 0, match.start()) + 1
        if kind != "fig":
            if not spec:
                problems.append(f"{where}:{line}: a {kind}: comment says what the figure is")
            continue
        before = FIGURE_BEFORE.search(text[line_start:match.start()])
        if before is None:
            problems.append(f"{where}:{line}: no figure right before <!-- fig: {spec} -->")
            continue
        low, high, unit = before.group(1), before.group(2), before.group(3).strip()
        try:
            values = marker_values(records, spec)
        except ValueError as error:
            problems.append(f"{where}:{line}: {error}")
            continue
        percent = unit.startswith("%")
        numbers = [v * 100 if (percent and is_ratio) else v for v, is_ratio in values]
        shown = ", ".join(f"{v:.4g}" for v in numbers)
        if low is not None:
            if not (matches(low, min(numbers)) and matches(high, max(numbers))):
                problems.append(f"{where}:{line}: the lesson says {low}–{high}{unit[:1]}, "
                                f"the record says {min(numbers):.4g}–{max(numbers):.4g} ({spec})")
        elif not all(matches(high, v) for v in numbers):
            problems.append(f"{where}:{line}: the lesson says {high}{unit[:1]}, the record says "
                            f"{shown} ({spec})")
    # A line that starts with a comment inside a paragraph starts an HTML block on GitHub,
    # which swallows the rest of the paragraph: keep each comment after its figure.
    lines = prose.split("\n")
    for number, line in enumerate(lines[1:], 2):
        if MARKER.match(line.strip()) and lines[number - 2].strip():
            problems.append(f"{where}:{number}: a line that starts with <!-- breaks the paragraph "
                            "on GitHub; put the comment right after its figure")
    # Figures with a unit of speed or time, in prose, that no marker follows.
    markers = [m.start() for m in MARKER.finditer(text)]
    for match in UNIT_FIGURE.finditer(prose):
        if any(m.start() <= match.start() < m.end() for m in MARKER.finditer(text)):
            continue
        line_end = text.find("\n", match.end())
        line_end = len(text) if line_end < 0 else line_end
        following = [m for m in markers if match.end() <= m <= line_end]
        nxt = UNIT_FIGURE.search(prose, match.end())
        # The marker must come before the next such figure on the line (a range's two ends
        # share one marker).
        if following and (nxt is None or nxt.start() > following[0]
                          or re.fullmatch(r"\s*(?:[–—-]|to)\s*", prose[match.end():nxt.start()])):
            continue
        line = text.count("\n", 0, match.start()) + 1
        problems.append(f"{where}:{line}: '{match.group(0)}' has no <!-- fig: --> (or spec:, "
                        "reading:, goal:, example:) comment after it")
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--gpu", default="h200", help="the results folder under docs/results")
    parser.add_argument("files", nargs="*", type=Path, help="pages to check (default: every lesson page)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    records = Records(root / "docs" / "results" / args.gpu)
    files = [path.resolve() for path in args.files] or lesson_files(root)
    problems, figures = [], 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        figures += sum(1 for m in MARKER.finditer(strip_code(text)) if m.group(1) == "fig")
        problems += check_text(text, records, path.relative_to(root).as_posix())
    for problem in problems:
        print(problem)
    print(f"check_figures: {figures} figure(s) checked against docs/results/{args.gpu} in "
          f"{len(files)} page(s); {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
