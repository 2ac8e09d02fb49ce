#!/usr/bin/env python3
"""Runs the course's benchmarks and writes the measured results.

For every benchmark program of the build (the *_bench executables, and the Python
bench_*.py scripts of the exercises) it writes Google Benchmark JSON to
<results>/<gpu>/<name>.json, then <results>/<gpu>/README.md with one table per
benchmark: each row's time and rate, and ratios to the rows it is compared with
(the library baseline, the previous step), all measured in the same run. It prints the
tables of the benchmarks it ran, and where matplotlib is installed draws each one as a
picture beside its JSON (tools/plot_results.py). <results> is docs/results, the committed
tables of the reference GPU, unless --results-dir says otherwise (./course bench writes to
<build>/results, ./course bench --record to docs/results).

Row names are <family>/<implementation>/<size...>, where the implementation is
`exercise` (yours), `solution` (the reference), `step_<id>` (the previous step's
solution), or a baseline such as `memcpy` or `cublas`. A ladder puts every step of a
sequence in one table: <family>/<step>/<solution|exercise>/<size...>, each row compared
with the reference of the step above it (month2/gemm_ladder).

By default the learner's rows are left out (`--include-exercise` keeps them, as
./course bench does), so the committed results describe the reference solutions.

One statistic: the tables show the median of repetitions. A benchmark names the
statistic of its rows in the JSON context under the key "statistic" (STATISTIC_KEY):
the C++ benchmarks (common/src/benchmark.cpp) run every row several times and write
Google Benchmark's "<row>_median" aggregates with "statistic": "median"; a Python
benchmark that times the median itself writes its rows as plain iteration rows and
"statistic": "median" in its context. The table takes a file's median aggregates where
it has them, otherwise its iteration rows, and says under each heading which statistic
that is (a file without the key is an old one, of means).
"""
import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

# The first implementation found in a row group is the baseline its "% of" column uses.
BASELINES = ("cublas", "memcpy", "cudnn", "torch")
# Rows a "speedup" column compares against.
PREVIOUS = re.compile(r"^(step_.*|unfused.*|eager.*)$")
# A ladder (month2/gemm_ladder) names its rows family/<step>/<who>/size: every step of a
# sequence in one table, each compared with the reference of the step before it.
LADDER_WHO = ("solution", "exercise")
# The JSON context key that names the statistic of a file's rows ("median"), written by the
# C++ benchmarks and the Python ones alike.
STATISTIC_KEY = "statistic"


def table_rows(data):
    """The rows a table shows: the median aggregates of the repetitions where the file has
    them (a C++ benchmark's rows), else its iteration rows (one run each, as a Python
    benchmark writes them); rows that failed are left out. Each row's name is its run_name,
    without Google Benchmark's _median suffix."""
    benchmarks = data.get("benchmarks", [])
    medians = [row for row in benchmarks
               if row.get("run_type") == "aggregate" and row.get("aggregate_name") == "median"]
    chosen = medians or [row for row in benchmarks if row.get("run_type", "iteration") == "iteration"]
    return [dict(row, name=row.get("run_name", row["name"])) for row in chosen
            if not row.get("error_occurred")]


def statistic(data):
    """What the rows of a file are: the context's "statistic", or "mean" for an older file."""
    return data.get("context", {}).get(STATISTIC_KEY, "mean")


def gpu_slug(name):
    slug = name.lower().replace("nvidia", "").strip()
    slug = re.sub(r"[^a-z0-9]+", "-", slug).strip("-")
    return slug or "unknown-gpu"


def detect_gpu():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=True)
        return out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.CalledProcessError, IndexError):
        return None


def find_cpp_benchmarks(build_dir, name_filter):
    found = []
    for path in sorted(build_dir.glob("month*/*/*_bench")):
        if path.is_file() and os.access(path, os.X_OK) and (not name_filter or name_filter in path.name):
            found.append(path)
    return found


def python_benchmark_id(script):
    """month1/05_torch_extension/bench_x.py -> m1_05_torch_extension, like the C++ ids.

    An exercise that also has a C++ benchmark (a bench_*.cu, whose results are <id>.json)
    names its Python one after the script instead, so neither overwrites the other:
    month3/03_direct_conv/bench_direct_conv_torch.py -> m3_03_direct_conv_torch."""
    month = script.parent.parent.name.replace("month", "m")
    if any(script.parent.glob("bench_*.cu")):
        number = script.parent.name.split("_", 1)[0]
        return f"{month}_{number}_{script.stem[len('bench_'):]}"
    return f"{month}_{script.parent.name}"


def torch_python(build_dir):
    """The Python the build's tests use (the one with PyTorch, cmake/CoursePython.cmake), else this one."""
    chosen = build_dir / "course_python" / "interpreter.txt"
    if chosen.is_file():
        path = chosen.read_text().strip()
        if path and Path(path).is_file():
            return path
    return sys.executable


def find_python_benchmarks(root, name_filter):
    found = []
    for path in sorted(root.glob("month*/*/bench_*.py")):
        if not name_filter or name_filter in python_benchmark_id(path):
            found.append(path)
    return found


def split_name(name):
    """family/impl/size..., where a ladder row's impl is <step>/<solution|exercise>."""
    parts = [p for p in name.split("/") if p not in ("manual_time", "real_time")]
    family = parts[0]
    if len(parts) > 3 and parts[2] in LADDER_WHO:
        return family, f"{parts[1]}/{parts[2]}", "/".join(parts[3:])
    impl = parts[1] if len(parts) > 1 else ""
    return family, impl, "/".join(parts[2:])


def previous_ladder_step(members, index):
    """For a ladder row (<step>/solution or <step>/exercise): the reference row of the step
    before it, i.e. the last <other step>/solution row above it in the table."""
    step = members[index][0].split("/")[0]
    for impl, row in reversed(members[:index]):
        if impl.endswith("/solution") and impl.split("/")[0] != step:
            return impl, row
    return None


def rate(row):
    for key in ("TFLOPS", "GBps"):
        if key in row:
            return key, float(row[key])
    return None, None


def fmt(value, digits=1):
    return "" if value is None else f"{value:,.{digits}f}"


def to_microseconds(row):
    scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[row.get("time_unit", "ns")]
    return float(row["real_time"]) * scale


def markdown_table(data):
    rows = table_rows(data)
    # Latency rows (month2/memory_hierarchy) add a column; other tables keep their shape.
    latency = any("latency_ns" in row for row in rows)
    groups = {}
    for row in rows:
        family, impl, size = split_name(row["name"])
        groups.setdefault((family, size), []).append((impl, row))
    lines = []
    for (family, size), members in groups.items():
        impls = dict(members)
        baseline = next((b for b in BASELINES for impl in impls if impl == b or impl.startswith(b + "_")), None)
        baseline_row = next((r for impl, r in members if baseline and (impl == baseline or impl.startswith(baseline + "_"))), None)
        previous = next(((impl, r) for impl, r in members if PREVIOUS.match(impl)), None)
        if not lines:
            lines.append("| benchmark | size | precision | time (us) | GB/s | % of peak | TFLOP/s | % of baseline | speedup over previous |"
                         + (" latency (ns) |" if latency else ""))
            lines.append("|---|---|---|---:|---:|---:|---:|---:|---:|" + ("---:|" if latency else ""))
        for index, (impl, row) in enumerate(members):
            key, value = rate(row)
            of_baseline = None
            if baseline_row is not None and key is not None and rate(baseline_row)[0] == key:
                of_baseline = 100.0 * value / rate(baseline_row)[1]
            speedup = None
            compared = previous if impl in LADDER_WHO else None
            if "/" in impl:
                compared = previous_ladder_step(members, index)
            if compared is not None:
                speedup = to_microseconds(compared[1]) / to_microseconds(row)
            baseline_label = f"{fmt(of_baseline)}% of {baseline}" if of_baseline is not None else ""
            speedup_label = f"{speedup:.2f}x over {compared[0]}" if speedup is not None else ""
            lines.append(
                f"| {family}/{impl} | {size} | {row.get('label', '')} | {fmt(to_microseconds(row), 1)} | "
                f"{fmt(row.get('GBps'), 0)} | {fmt(row.get('peak_pct'))} | {fmt(row.get('TFLOPS'), 2)} | "
                f"{baseline_label} | {speedup_label} |"
                + (f" {fmt(row.get('latency_ns'))} |" if latency else ""))
    return "\n".join(lines)


def write_report(out_dir, gpu_name, results):
    parts = [f"# Measured results: {gpu_name}", "",
             "Written by `./course bench` (tools/run_benchmarks.py) from the JSON files beside this page;",
             "do not edit by hand. Every ratio compares rows measured in the same run of the same program.",
             "Times and rates are the median of repetitions, as each file's `statistic` says;",
             "`% of peak` is the share of the theoretical DRAM bandwidth read from the device.", ""]
    for name, data in results:
        context = data.get("context", {})
        parts.append(f"## {name}")
        parts.append("")
        details = [f"{k}: {context[k]}" for k in ("gpu", "sm_count", "peak_dram_gbps", "cuda_runtime", "date", "main_loop",
                                                "api", "cudnn_version")
                   if k in context]
        details.append(f"{STATISTIC_KEY}: {statistic(data)}"
                       + (f" of {context['repetitions']} repetitions" if "repetitions" in context else ""))
        parts.append("_" + "; ".join(details) + "_")
        parts.append("")
        parts.append(markdown_table(data))
        parts.append("")
        if (out_dir / f"{name}.png").is_file():
            parts.append(f"![{name}]({name}.png)")
            parts.append("")
    (out_dir / "README.md").write_text("\n".join(parts))


def record_into(out, command_for):
    """Runs command_for(partial), a benchmark that writes its JSON to `partial`, and moves that
    file to `out` only if the benchmark finished writing it (valid JSON with its rows; rows that
    failed are in it as errors): a benchmark that crashes, is interrupted or times out leaves
    the previous results in place instead of a truncated file. Returns the exit status (1 for
    a run that exited with 0 but wrote no readable results)."""
    partial = out.with_name(out.name + ".partial")  # beside out: the move is atomic
    partial.unlink(missing_ok=True)
    code = subprocess.call(command_for(partial))
    try:
        complete = isinstance(json.loads(partial.read_text()).get("benchmarks"), list)
    except (OSError, ValueError, AttributeError):
        complete = False
    if complete:
        os.replace(partial, out)
    else:
        partial.unlink(missing_ok=True)
        print(f"run_benchmarks: no complete results from this run; {out.name} keeps the previous ones",
              file=sys.stderr)
        code = code or 1
    return code


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--build-dir", type=Path, required=True)
    parser.add_argument("--filter", default="", help="only benchmarks whose name contains this (e.g. m1_01)")
    parser.add_argument("--include-exercise", action="store_true", help="also time your own kernels")
    parser.add_argument("--gpu-name", help="override the GPU name used for the results folder")
    parser.add_argument("--results-dir", type=Path,
                        help="write to <this>/<gpu>/ (default: <root>/docs/results)")
    parser.add_argument("--out-dir", type=Path, help="write to exactly this folder instead")
    parser.add_argument("--report-only", action="store_true", help="rebuild README.md from the JSON files")
    args = parser.parse_args()

    gpu = args.gpu_name or detect_gpu()
    if not gpu and not args.out_dir:
        print("run_benchmarks: no NVIDIA GPU found (nvidia-smi); benchmarks need one.", file=sys.stderr)
        return 2
    out_dir = args.out_dir or (args.results_dir or args.root / "docs" / "results") / gpu_slug(gpu)
    out_dir.mkdir(parents=True, exist_ok=True)

    failures = []
    ran = []
    if not args.report_only:
        exclude = [] if args.include_exercise else ["--benchmark_filter=-/exercise/"]
        for binary in find_cpp_benchmarks(args.build_dir.resolve(), args.filter):
            name = binary.name[: -len("_bench")]
            out = out_dir / f"{name}.json"
            print(f"== {binary.name}", flush=True)
            code = record_into(out, lambda partial: [str(binary), f"--benchmark_out={partial}",
                                                     "--benchmark_out_format=json", *exclude])
            ran.append(out)
            if code != 0:
                failures.append(f"{binary.name} exited with {code}")
        python = torch_python(args.build_dir.resolve())
        for script in find_python_benchmarks(args.root, args.filter):
            out = out_dir / f"{python_benchmark_id(script)}.json"
            print(f"== {script.relative_to(args.root)}", flush=True)
            extra = ["--include-exercise"] if args.include_exercise else []
            code = record_into(out, lambda partial: [python, str(script), "--json", str(partial), *extra])
            ran.append(out)
            if code != 0:
                failures.append(f"{script.name} exited with {code}")

    import plot_results  # draws with matplotlib, and uses this file's row names

    ran = [path for path in ran if path.is_file()]
    if args.report_only:  # redraw the pictures of the JSON files already there
        ran = [path for path in sorted(out_dir.glob("*.json")) if args.filter in path.stem]
    pictures = plot_results.draw_all(out_dir, {path.stem for path in ran})
    if pictures is None:
        print("run_benchmarks: matplotlib is not installed (pip install matplotlib): tables only, no pictures")
    results = []
    for path in sorted(out_dir.glob("*.json")):
        results.append((path.stem, json.loads(path.read_text())))
    write_report(out_dir, gpu or out_dir.name, results)
    for path in ran if not args.report_only else []:
        data = json.loads(path.read_text())
        print(f"\n## {path.stem} ({STATISTIC_KEY}: {statistic(data)})\n\n{markdown_table(data)}")
    shown = out_dir.relative_to(args.root) if out_dir.is_relative_to(args.root) else out_dir
    print(f"\nrun_benchmarks: wrote {shown}/README.md" + (f" and {len(pictures)} picture(s)" if pictures else ""))
    for failure in failures:
        print(f"run_benchmarks: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
