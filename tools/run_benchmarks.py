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

Rows without a time are shown, never dropped, with a note saying why:
- "not runnable on this GPU: <reason>": the row needs more than this GPU has (a newer
  compute capability, more shared memory per block than it allows). The C++ benchmarks
  (course::bench::not_runnable, course/benchmark.h) and the Python ones
  (benchmarking.NOT_RUNNABLE) report such a row as skipped with that prefix. It is not a
  failure.
- "ERROR: <message>": the row failed (a wrong result, a failed call, a crash in one of its
  repetitions). The run then exits with status 1.
Neither kind enters a ratio: no "% of" or "speedup" is computed from or against them.

Before anything runs it checks that this machine has an NVIDIA GPU (gpu_missing_reason(),
which ./course bench also asks before it builds) and exits with status 2 and the reason when
it has none. A benchmark the build left out (cuDNN's table without cuDNN) has a note in
<build>/benchmarks_not_built/<name>.txt, written by CMake: asked for by --filter, it prints
the note (what is missing and how to get it) and exits with status 3, as it does when no
benchmark matches the filter; it never writes a report of nothing.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

# The first implementation found in a row group is the baseline its "% of" column uses.
BASELINES = ("cublas", "memcpy", "cudnn", "torch")
# Rows a "speedup" column compares against.
PREVIOUS = re.compile(r"^(step_.*|unfused.*|eager.*)$")
# A row's peak_pct is its GB/s over the device's theoretical DRAM bandwidth (peak_dram_gbps),
# which is its peak only where the bytes it counts come from DRAM. The rows of
# month2/memory_hierarchy name the level they measure: l2_read streams a set that stays in L2,
# shared_read reads shared memory (both can beat the DRAM), latency_* rows time single loads
# (no GB/s). Implementations that match this measure something other than DRAM's bandwidth:
# their "% of DRAM peak" is left empty.
NOT_DRAM = re.compile(r"^(l1|l2|shared|latency)_")
# The context keys each table's line shows, in this order. The others stay out: Google
# Benchmark's own facts (library_build_type says how the Google Benchmark library was built,
# not the course's kernels, which are always built Release), the host's name, CPU caches and
# load, the program's path.
CONTEXT_SHOWN = ("gpu", "sm_count", "peak_dram_gbps", "cuda_runtime", "date", "main_loop", "api",
                 "cudnn_version")
# A ladder (month2/gemm_ladder) names its rows family/<step>/<who>/size: every step of a
# sequence in one table, each compared with the reference of the step before it.
LADDER_WHO = ("solution", "exercise")
# The JSON context key that names the statistic of a file's rows ("median"), written by the
# C++ benchmarks and the Python ones alike.
STATISTIC_KEY = "statistic"
# The start of the error message of a row this GPU cannot run, followed by the reason: the
# C++ benchmarks' course::bench::kNotRunnablePrefix and the Python ones' benchmarking.NOT_RUNNABLE.
NOT_RUNNABLE_PREFIX = "not runnable on this GPU: "
# What a table row is: timed, not runnable on this GPU, or failed.
OK, NOT_RUNNABLE, ERROR = "ok", "not runnable", "error"
# Where CMake leaves a note for each benchmark it could not build: <build>/<this>/<name>.txt.
NOT_BUILT_DIR = "benchmarks_not_built"
# Exit statuses besides 0 and 1 (some row failed).
NO_GPU = 2       # no NVIDIA GPU here (the benchmark programs' own status for it)
NOTHING_RUN = 3  # what --filter asks for was not built, or matches nothing


def row_status(row):
    """OK for a timed row; NOT_RUNNABLE for a row this GPU cannot run; ERROR for a failed one."""
    if not row.get("error_occurred"):
        return OK
    return NOT_RUNNABLE if str(row.get("error_message", "")).startswith(NOT_RUNNABLE_PREFIX) else ERROR


def row_note(row):
    """Why a row has no time: "not runnable on this GPU: <reason>" or "ERROR: <message>";
    "" for a timed row."""
    status = row_status(row)
    message = " ".join(str(row.get("error_message", "")).split())  # one line
    if status == NOT_RUNNABLE:
        return message
    if status == ERROR:
        return f"ERROR: {message or 'no message'}"
    return ""


def _median_run(runs):
    ordered = sorted(runs, key=lambda row: float(row.get("real_time", 0.0)))
    return ordered[(len(ordered) - 1) // 2]


def table_rows(data):
    """The rows a table shows, one per row name (Google Benchmark's run_name, without its
    _median suffix), in the order of the file: the median aggregate of the repetitions where
    the file has it (a C++ benchmark's rows), else its iteration rows (one run each, as a
    Python benchmark writes them). A row that failed in any repetition is there too, as one
    row with error_occurred and the first error_message (and in how many repetitions, when
    not in all): Google Benchmark writes no aggregate for it, only its repetitions. A row not
    runnable on this GPU is such a row, whose message starts with NOT_RUNNABLE_PREFIX."""
    found = {}  # run_name -> {"median": row or None, "runs": [iteration rows]}, in file order
    for row in data.get("benchmarks", []):
        name = row.get("run_name", row.get("name", ""))
        entry = found.setdefault(name, {"median": None, "runs": []})
        if row.get("run_type", "iteration") == "aggregate":
            if row.get("aggregate_name") == "median":
                entry["median"] = row
        else:
            entry["runs"].append(row)
    shown = []
    for name, entry in found.items():
        runs, median = entry["runs"], entry["median"]
        errors = [row for row in runs if row.get("error_occurred")]
        if errors:
            first = errors[0]
            message = str(first.get("error_message", ""))
            if len(errors) < len(runs):
                message += f" (in {len(errors)} of {len(runs)} repetitions)"
                if message.startswith(NOT_RUNNABLE_PREFIX):  # a row ran, then was not runnable
                    message = message[len(NOT_RUNNABLE_PREFIX):]
            kept = {key: first[key] for key in ("label", "time_unit", "run_type", "family_index",
                                                "per_family_instance_index") if key in first}
            shown.append(dict(kept, name=name, run_name=name, error_occurred=True,
                              error_message=message, real_time=0.0))
        elif median is not None:
            shown.append(dict(median, name=name))
        elif runs:
            shown.append(dict(_median_run(runs), name=name))
    return shown


def timed_rows(data):
    """table_rows(data) less the rows without a time (not runnable, failed)."""
    return [row for row in table_rows(data) if row_status(row) == OK]


def statistic(data):
    """What the rows of a file are: the context's "statistic", or "mean" for an older file."""
    return data.get("context", {}).get(STATISTIC_KEY, "mean")


def gpu_slug(name):
    slug = name.lower().replace("nvidia", "").strip()
    slug = re.sub(r"[^a-z0-9]+", "-", slug).strip("-")
    return slug or "unknown-gpu"


def _proc_gpu_names(root=Path("/")):
    """The GPU models the NVIDIA driver lists in /proc/driver/nvidia/gpus/*/information."""
    names = []
    for info in sorted((root / "proc/driver/nvidia/gpus").glob("*/information")):
        try:
            for line in info.read_text(errors="replace").splitlines():
                if line.startswith("Model:"):
                    names.append(line.split(":", 1)[1].strip())
        except OSError:
            continue
    return names


def detect_gpu():
    """The name of GPU 0 (nvidia-smi, else the driver's /proc files), or None."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=True,
                             timeout=60)
        return out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        names = _proc_gpu_names()
        return names[0] if names else None


def gpu_missing_reason(*, which=shutil.which, run=subprocess.run, root=Path("/")):
    """None when this machine has an NVIDIA GPU that CUDA programs can use; otherwise the
    reason, one line. It asks `nvidia-smi -L`, and where there is no nvidia-smi, the driver's
    files (/dev/nvidia0, /proc/driver/nvidia/gpus); it imports nothing and takes at most a few
    seconds, so it can be asked before anything is built. (which, run and root are for the
    tests.)"""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and (visible.strip() == "" or visible.strip().startswith("-1")):
        return f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU from CUDA programs"
    smi = which("nvidia-smi")
    if smi:
        try:
            result = run([smi, "-L"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=60)
        except subprocess.TimeoutExpired:
            return "nvidia-smi -L did not answer within 60 seconds (the NVIDIA driver is not responding)"
        except OSError as error:
            return f"nvidia-smi could not run ({error})"
        lines = [line.strip() for line in (result.stdout or "").splitlines() if line.strip()]
        if result.returncode == 0 and any(line.startswith("GPU ") for line in lines):
            return None
        said = lines[0] if lines else f"exit status {result.returncode}"
        return f"nvidia-smi finds no usable NVIDIA GPU ({said})"
    if (root / "dev/nvidia0").exists() or _proc_gpu_names(root):
        return None
    if (root / "proc/driver/nvidia").exists():
        return "the NVIDIA driver is loaded but lists no GPU (/proc/driver/nvidia/gpus is empty)"
    return ("no NVIDIA GPU on this machine: no nvidia-smi, no /dev/nvidia0 and no NVIDIA driver "
            "(/proc/driver/nvidia)")


def emulated_compute_capability():
    """COURSE_COMPUTE_CAPABILITY ("8.6"), or "" when unset: the benchmarks then check rows as
    on a GPU of that compute capability (course/requirements.h), so their results go to a
    folder of their own, never over this GPU's."""
    return os.environ.get("COURSE_COMPUTE_CAPABILITY", "").strip()


def results_slug(gpu_name):
    """The results folder's name: gpu_slug, with "-as-cc-8-6" under COURSE_COMPUTE_CAPABILITY=8.6."""
    emulated = emulated_compute_capability()
    return gpu_slug(gpu_name) + (f"-as-cc-{emulated.replace('.', '-')}" if emulated else "")


def not_built(build_dir, name_filter=""):
    """[(name, note)] for the benchmarks this build left out, whose name contains name_filter:
    CMake writes <build>/benchmarks_not_built/<name>.txt with what is missing and how to get
    it (month3/cudnn_algorithms without cuDNN), and removes it once the benchmark is built."""
    found = []
    for note in sorted((Path(build_dir) / NOT_BUILT_DIR).glob("*.txt")):
        if name_filter in note.stem:
            try:
                found.append((note.stem, note.read_text(errors="replace").strip()))
            except OSError:
                continue
    return found


def find_cpp_benchmarks(build_dir, name_filter):
    found = []
    for path in sorted(build_dir.glob("month*/*/*_bench")):
        if path.is_file() and os.access(path, os.X_OK) and (not name_filter or name_filter in path.name):
            found.append(path)
    return found


def python_benchmark_id(script):
    """month1/05_torch_extension/bench_torch_extension.py -> m1_05_torch_extension, like the C++ ids.

    An exercise that also has a C++ benchmark (a bench_*.cu, whose results are <id>.json)
    names its Python one after the script instead, so neither overwrites the other:
    month3/03_direct_conv/bench_direct_conv_torch.py -> m3_03_direct_conv_torch. So does a
    second Python benchmark beside the exercise's own (bench_<exercise name>.py): the
    exercise's id, then what follows bench_ in its name:
    month3/06_autograd_conv/bench_resnet18.py -> m3_06_autograd_conv_resnet18."""
    month = script.parent.parent.name.replace("month", "m")
    number, _, name = script.parent.name.partition("_")
    suffix = script.stem[len("bench_"):]
    if any(script.parent.glob("bench_*.cu")):
        return f"{month}_{number}_{suffix}"
    if suffix in (name, script.parent.name):
        return f"{month}_{script.parent.name}"
    return f"{month}_{script.parent.name}_{suffix}"


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


def _cell(text):
    """Text for a Markdown table cell: one line, no column separator."""
    return " ".join(str(text).split()).replace("|", "\\|")


def dram_peak_pct(impl, row):
    """The row's GB/s as a percentage of the DRAM's theoretical peak (its peak_pct), or None
    where the row measures something other than DRAM bandwidth (NOT_DRAM) or has no peak_pct."""
    if NOT_DRAM.match(impl.split("/")[0]):  # a ladder's implementation is <step>/<who>
        return None
    value = row.get("peak_pct")
    return None if value is None else float(value)


def markdown_table(data):
    rows = table_rows(data)
    # Latency rows (month2/memory_hierarchy) add a column, and rows without a time (not
    # runnable on this GPU, failed) a note; other tables keep their shape.
    latency = any("latency_ns" in row for row in rows)
    notes = any(row_status(row) != OK for row in rows)
    groups = {}
    for row in rows:
        family, impl, size = split_name(row["name"])
        groups.setdefault((family, size), []).append((impl, row))
    lines = []
    for (family, size), members in groups.items():
        # Ratios only between rows that ran: a row without a time is no baseline, no previous
        # step, and gets no ratio itself.
        timed = [(impl, row) for impl, row in members if row_status(row) == OK]
        baseline = next((b for b in BASELINES for impl, _ in timed if impl == b or impl.startswith(b + "_")), None)
        baseline_row = next((r for impl, r in timed if baseline and (impl == baseline or impl.startswith(baseline + "_"))), None)
        previous = next(((impl, r) for impl, r in members if PREVIOUS.match(impl)), None)
        if not lines:
            lines.append("| benchmark | size | precision | time (us) | GB/s | % of DRAM peak | TFLOP/s | % of baseline | speedup over previous |"
                         + (" latency (ns) |" if latency else "") + (" note |" if notes else ""))
            lines.append("|---|---|---|---:|---:|---:|---:|---:|---:|" + ("---:|" if latency else "")
                         + ("---|" if notes else ""))
        for index, (impl, row) in enumerate(members):
            status = row_status(row)
            if status != OK:
                lines.append(
                    f"| {family}/{impl} | {size} | {_cell(row.get('label', ''))} | "
                    f"{'not runnable' if status == NOT_RUNNABLE else 'error'} |  |  |  |  |  |"
                    + ("  |" if latency else "") + f" {_cell(row_note(row))} |")
                continue
            key, value = rate(row)
            of_baseline = None
            if baseline_row is not None and key is not None and rate(baseline_row)[0] == key:
                of_baseline = 100.0 * value / rate(baseline_row)[1]
            speedup = None
            compared = previous if impl in LADDER_WHO else None
            if "/" in impl:
                compared = previous_ladder_step(members, index)
            if compared is not None and row_status(compared[1]) == OK:
                speedup = to_microseconds(compared[1]) / to_microseconds(row)
            baseline_label = f"{fmt(of_baseline)}% of {baseline}" if of_baseline is not None else ""
            speedup_label = f"{speedup:.2f}x over {compared[0]}" if speedup is not None else ""
            lines.append(
                f"| {family}/{impl} | {size} | {row.get('label', '')} | {fmt(to_microseconds(row), 1)} | "
                f"{fmt(row.get('GBps'), 0)} | {fmt(dram_peak_pct(impl, row))} | {fmt(row.get('TFLOPS'), 2)} | "
                f"{baseline_label} | {speedup_label} |"
                + (f" {fmt(row.get('latency_ns'))} |" if latency else "") + ("  |" if notes else ""))
    return "\n".join(lines)


def untimed_rows(data):
    """[(row name, status, note)] for the rows of a file that have no time."""
    return [(row["name"], row_status(row), row_note(row)) for row in table_rows(data)
            if row_status(row) != OK]


def untimed_summary(data):
    """"2 rows not runnable on this GPU, 1 row failed", or "" when every row was timed."""
    statuses = [status for _, status, _ in untimed_rows(data)]
    parts = []
    for status, words in ((NOT_RUNNABLE, "not runnable on this GPU"), (ERROR, "failed")):
        count = statuses.count(status)
        if count:
            parts.append(f"{count} row{'s' if count != 1 else ''} {words}")
    return ", ".join(parts)


def write_report(out_dir, gpu_name, results):
    parts = [f"# Measured results: {gpu_name}", "",
             "Written by `./course bench` (tools/run_benchmarks.py) from the JSON files beside this page;",
             "do not edit by hand. Every ratio compares rows measured in the same run of the same program.",
             "Times and rates are the median of repetitions, as each file's `statistic` says.",
             "`GB/s` is the bytes a row's work counts (for a kernel, what it must read and write at the",
             "least) over its time; `% of DRAM peak` is that rate over the theoretical DRAM bandwidth",
             "read from the device (`peak_dram_gbps` on the table's line). It is left empty where a row",
             "measures something else: the L2 and shared-memory rows of m2_memory_hierarchy, whose",
             "data never leaves the chip (so they can beat the DRAM), and latency rows.",
             "`% of baseline` compares a row's rate with its group's library baseline (cuBLAS,",
             "cudaMemcpy, cuDNN, PyTorch), `speedup over previous` its time with the previous step's.",
             "A row without a time says why in its note: not runnable on this GPU (it needs more than",
             "this GPU has), or the error it failed with; no ratio is computed from or against it.", ""]
    for name, data in results:
        context = data.get("context", {})
        parts.append(f"## {name}")
        parts.append("")
        details = [f"{k}: {context[k]}" for k in CONTEXT_SHOWN if k in context]
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

    build_dir = args.build_dir.resolve()
    cpp_benchmarks, python_benchmarks, missing = [], [], []
    if not args.report_only:
        reason = gpu_missing_reason()
        if reason:
            print(f"run_benchmarks: {reason}; benchmarks need an NVIDIA GPU.", file=sys.stderr)
            return NO_GPU
        missing = not_built(build_dir, args.filter)
        left_out = {name for name, _ in missing}  # a program of an older build, left behind
        cpp_benchmarks = [path for path in find_cpp_benchmarks(build_dir, args.filter)
                          if path.name[: -len("_bench")] not in left_out]
        python_benchmarks = find_python_benchmarks(args.root, args.filter)
        for name, note in missing:
            print(f"run_benchmarks: {name} is not built here.\n{note}", file=sys.stderr)
        if args.filter and not cpp_benchmarks and not python_benchmarks:
            if not missing:
                print(f"run_benchmarks: no benchmark program in {build_dir} matches '{args.filter}' "
                      f"(is it built? ./course bench {args.filter} builds it first)", file=sys.stderr)
            return NOTHING_RUN

    gpu = args.gpu_name or detect_gpu()
    if not gpu and not args.out_dir:
        print("run_benchmarks: could not read the GPU's name (nvidia-smi); give it with --gpu-name",
              file=sys.stderr)
        return NO_GPU
    out_dir = args.out_dir or (args.results_dir or args.root / "docs" / "results") / results_slug(gpu)
    out_dir.mkdir(parents=True, exist_ok=True)
    emulated = emulated_compute_capability()
    if emulated:
        print(f"run_benchmarks: COURSE_COMPUTE_CAPABILITY={emulated}: rows are checked as on a GPU of compute "
              f"capability {emulated} (and its shared memory per block); the results go to {out_dir}")
        gpu = f"{gpu or out_dir.name}, checked as compute capability {emulated} (COURSE_COMPUTE_CAPABILITY)"

    failures = []
    ran = []
    if not args.report_only:
        exclude = [] if args.include_exercise else ["--benchmark_filter=-/exercise/"]
        for binary in cpp_benchmarks:
            name = binary.name[: -len("_bench")]
            out = out_dir / f"{name}.json"
            print(f"== {binary.name}", flush=True)
            code = record_into(out, lambda partial: [str(binary), f"--benchmark_out={partial}",
                                                     "--benchmark_out_format=json", *exclude])
            ran.append(out)
            if code != 0:
                failures.append(f"{binary.name} exited with {code}")
        python = torch_python(build_dir)
        for script in python_benchmarks:
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
    failed_rows = []
    for path in ran if not args.report_only else []:
        data = json.loads(path.read_text())
        print(f"\n## {path.stem} ({STATISTIC_KEY}: {statistic(data)})\n\n{markdown_table(data)}")
        summary = untimed_summary(data)
        if summary:
            print(f"\n{summary} (the note column says why)")
        failed_rows += [f"{path.stem}: {name}: {note}" for name, status, note in untimed_rows(data)
                        if status == ERROR]
    shown = out_dir.relative_to(args.root) if out_dir.is_relative_to(args.root) else out_dir
    print(f"\nrun_benchmarks: wrote {shown}/README.md" + (f" and {len(pictures)} picture(s)" if pictures else ""))
    for name, _ in missing:  # asked for by name, a benchmark that is not built is a failure
        if args.filter:
            failures.append(f"{name} is not built here (what it needs is said above)")
        else:
            print(f"run_benchmarks: {name} is not built here (what it needs is said above)", file=sys.stderr)
    for failure in failures:
        print(f"run_benchmarks: {failure}", file=sys.stderr)
    for row in failed_rows:
        print(f"run_benchmarks: {row}", file=sys.stderr)
    return 1 if failures or failed_rows else 0


if __name__ == "__main__":
    sys.exit(main())
