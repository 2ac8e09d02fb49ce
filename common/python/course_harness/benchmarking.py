"""Timing for the Python benchmarks, in the same statistic and format as the C++ ones.

    timer = benchmarking.Timer(iterations=100, warmup=10)
    rows = []
    benchmarking.measure(rows, timer, "vector_add/solution/n:1024", run, check, GBps_bytes=...)
    benchmarking.write_json(path, rows, program=__file__, timer=timer)

- Every row is checked (check() raises on a wrong result) before it is timed; a wrong or
  failing row becomes an error row, never a time.
- A time is the MEDIAN of `iterations` runs, each between two CUDA events, after `warmup`
  untimed runs, with the L2 cache flushed before each run (so every run reads from DRAM) unless
  flush_l2=False. The median is what the C++ benchmarks report too (the JSON context's
  "statistic" says so), so tools/run_benchmarks.py tables both alike.
- HostTimer times rows that run on the CPU the same way, by the host's clock.
- write_json() writes Google Benchmark's JSON format; ./course bench collects it.
- A row this GPU cannot run (it needs a newer compute capability, or more shared memory per
  block than the GPU allows) is neither timed nor failed: measure() catches the course's
  "needs ..." reason that a launcher raises (course/requirements.h,
  course_harness.requirements). Its message starts with NOT_RUNNABLE, the
  C++ benchmarks' prefix, and tools/run_benchmarks.py tables it as not runnable, with the
  reason, outside every ratio; finish() does not count it as a failure.
"""
import argparse
import datetime
import json
import os
import socket
import statistics
import sys
import time

import torch

from . import requirements

STATISTIC = "median"

# The start of the message of a row this GPU cannot run, followed by the reason: the same as
# the C++ benchmarks' course::bench::kNotRunnablePrefix (course/benchmark.h).
NOT_RUNNABLE = "not runnable on this GPU: "

# The wording of the course's reasons that a GPU lacks something (course/requirements.h and
# course_harness.requirements; course/hopper.h), as a launcher's error carries it into Python.
_SHORTFALL = requirements.MACHINE_LIMIT


def device_facts():
    """The GPU and software a table was measured with (the JSON context)."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    facts = {
        "gpu": props.name,
        "compute_capability": f"{props.major}.{props.minor}",
        "sm_count": props.multi_processor_count,
        "torch": torch.__version__,
        "cuda_runtime": torch.version.cuda,
    }
    l2 = getattr(props, "L2_cache_size", 0)
    if l2:
        facts["l2_cache_bytes"] = l2
    # Theoretical DRAM bandwidth: 2 transfers per clock x memory clock x bus width. Recent
    # PyTorch versions report both; older ones do not, and then there is no peak_pct.
    clock_khz = getattr(props, "memory_clock_rate", 0)
    bus_bits = getattr(props, "memory_bus_width", 0)
    if clock_khz and bus_bits:
        facts["peak_dram_gbps"] = round(2.0 * clock_khz * 1e3 * bus_bits / 8 / 1e9, 1)
    return facts


class Timer:
    def __init__(self, iterations=100, warmup=10, flush_l2=True):
        self.iterations = iterations
        self.warmup = warmup
        self.flush_l2 = flush_l2
        l2 = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0)
        # Writing a buffer twice the L2's size evicts what the previous run left there.
        self._flush = (torch.empty(2 * (l2 or 64 << 20), dtype=torch.uint8, device="cuda")
                       if flush_l2 else None)

    def describe(self):
        return (f"{STATISTIC} of {self.iterations} runs between CUDA events, after {self.warmup} "
                f"warm-up runs, {'with' if self.flush_l2 else 'without'} an L2 flush before each")

    def times_ms(self, run):
        for _ in range(self.warmup):
            run()
        torch.cuda.synchronize()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(self.iterations)]
        stops = [torch.cuda.Event(enable_timing=True) for _ in range(self.iterations)]
        for start, stop in zip(starts, stops):
            if self._flush is not None:
                # Also keeps the GPU busy while the host reaches the next launch, so the
                # time between the events is the kernel's, not the launch overhead's.
                self._flush.zero_()
            start.record()
            run()
            stop.record()
        torch.cuda.synchronize()
        return [start.elapsed_time(stop) for start, stop in zip(starts, stops)]

    def median_ms(self, run):
        return statistics.median(self.times_ms(run))


class HostTimer:
    """Timer's interface for work that runs on the CPU (no CUDA events there): the median of
    `iterations` runs timed with time.perf_counter, after `warmup` untimed runs."""

    def __init__(self, iterations=10, warmup=2):
        self.iterations = iterations
        self.warmup = warmup

    def describe(self):
        return (f"{STATISTIC} of {self.iterations} runs by the host's clock (time.perf_counter), "
                f"after {self.warmup} warm-up runs")

    def times_ms(self, run):
        for _ in range(self.warmup):
            run()
        times = []
        for _ in range(self.iterations):
            start = time.perf_counter()
            run()
            times.append((time.perf_counter() - start) * 1e3)
        return times

    def median_ms(self, run):
        return statistics.median(self.times_ms(run))


def first_line(error):
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"


def shortfall_in(error):
    """The course's reason that this GPU lacks what a call needs, when `error` (an exception
    or its text) carries one ("needs compute capability 8.0 (...); this GPU has 7.5"), else
    None. PyTorch adds lines of its own around a C++ message: the reason is its line."""
    for line in str(error).splitlines():
        if _SHORTFALL.search(line):
            return line.strip()
    return None


def is_not_runnable(row):
    """True for a row this GPU cannot run, as opposed to a failed one."""
    return row.get("error", "").startswith(NOT_RUNNABLE)


def describe_error(row):
    """How a table prints a row without a time: "not runnable on this GPU: <reason>", or
    "ERROR: <what went wrong>"."""
    return row["error"] if is_not_runnable(row) else f"ERROR: {row['error']}"


def measure(rows, timer, name, run, check=None, **counters):
    """Checks run() with check(result) (which raises when it is wrong), then times it.

    Appends {"name", "ms", counters...} or {"name", "error"}. A counter given as a callable
    is called with the median time in milliseconds (e.g. lambda ms: flops / ms / 1e9).
    Returns the median in milliseconds, or None for a row without a time.

    A call that raises the reason of a GPU that lacks what the kernel needs ("needs compute
    capability 8.0 (...)") makes the row not runnable on this GPU instead of failed.
    """
    label = counters.get("label") if isinstance(counters.get("label"), str) else None

    def untimed(error):  # a row without a time keeps its precision label
        rows.append({"name": name, "error": error, **({"label": label} if label else {})})

    try:
        result = run()
        if check is not None:
            check(result)
    except Exception as error:  # wrong result, missing operator, a GPU too old, ...
        reason = shortfall_in(error)
        untimed(NOT_RUNNABLE + reason if reason else f"wrong result or failed call: {first_line(error)}")
        return None
    try:
        milliseconds = timer.median_ms(run)
    except Exception as error:
        reason = shortfall_in(error)
        untimed(NOT_RUNNABLE + reason if reason else f"failed while timed: {first_line(error)}")
        return None
    row = {"name": name, "ms": milliseconds}
    for key, value in counters.items():
        row[key] = value(milliseconds) if callable(value) else value
    rows.append(row)
    return milliseconds


def write_json(path, rows, *, program, timer=None, facts=None, timing=None, precision=None):
    """Google Benchmark JSON: {"context": ..., "benchmarks": [...]}, times in microseconds.

    Every row names its precision in "label", as the C++ rows do: a row's own "label", else
    `precision` (e.g. "fp32", or "fp32, TF32 off" for a PyTorch baseline)."""
    context = dict(facts if facts is not None else device_facts())
    context.update({
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "host_name": socket.gethostname(),
        "executable": os.path.abspath(program),
        "statistic": STATISTIC,
        "timing": timing or (timer.describe() if timer is not None else STATISTIC),
        "library_build_type": "release",
    })
    benchmarks = []
    for index, row in enumerate(rows):
        entry = {
            "name": row["name"], "run_name": row["name"], "run_type": "iteration",
            "family_index": index, "per_family_instance_index": 0,
            "repetitions": 1, "repetition_index": 0, "threads": 1, "time_unit": "us",
        }
        if "error" in row:
            entry.update({"error_occurred": True, "error_message": row["error"],
                          "iterations": 0, "real_time": 0.0, "cpu_time": 0.0})
            if row.get("label") or precision:
                entry["label"] = row.get("label") or precision
        else:
            entry.update({"iterations": timer.iterations if timer else 1,
                          "real_time": row["ms"] * 1e3, "cpu_time": row["ms"] * 1e3})
            for key, value in row.items():
                if key not in ("name", "ms"):
                    entry[key] = value
            if "label" not in entry and precision:
                entry["label"] = precision
        benchmarks.append(entry)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as out:
        json.dump({"context": context, "benchmarks": benchmarks}, out, indent=2)
        out.write("\n")


NO_GPU = 2  # the exit status of a benchmark program that finds no CUDA GPU


def cuda_or_exit_code(program):
    """None when a CUDA GPU can run the benchmark; else prints why not and returns NO_GPU."""
    from . import extension  # imports torch's cpp_extension quietly
    ok, why = extension.cuda_status()
    if ok:
        return None
    print(f"{os.path.basename(program)}: no CUDA GPU to benchmark on ({why}); benchmarks need one.",
          file=sys.stderr)
    return NO_GPU


def finish(rows, *, json_path, program, timer=None, facts=None, timing=None, precision=None):
    """The end of every benchmark program: the JSON if asked for, then the exit status.

    Returns 1 (and names them) when some rows are errors, else 0. Rows not runnable on this
    GPU are named too, but are not failures.
    """
    name = os.path.basename(program)
    if json_path:
        write_json(json_path, rows, program=program, timer=timer, facts=facts, timing=timing,
                   precision=precision)
        print(f"{name}: wrote {json_path}")
    skipped = [row["name"] for row in rows if "error" in row and is_not_runnable(row)]
    if skipped:
        print(f"{name}: {len(skipped)} row(s) not runnable on this GPU (not failures): "
              f"{', '.join(skipped)}", file=sys.stderr)
    failed = [row["name"] for row in rows if "error" in row and not is_not_runnable(row)]
    if failed:
        print(f"{name}: {len(failed)} row(s) failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def argument_parser(doc, *, iterations, warmup, unit="runs", flush_option=True):
    """The options every benchmark program takes (add its own to the parser it returns):
    --json PATH (what ./course bench collects), --include-exercise (time your version too),
    --iterations and --warmup (timed and untimed `unit` per row), and --no-flush-l2."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", metavar="PATH", help="also write Google Benchmark JSON to PATH")
    parser.add_argument("--include-exercise", action="store_true", help="also time your version")
    parser.add_argument("--iterations", type=int, default=iterations,
                        help=f"timed {unit} per row (default {iterations})")
    parser.add_argument("--warmup", type=int, default=warmup, help=f"untimed {unit} first (default {warmup})")
    if flush_option:
        parser.add_argument("--no-flush-l2", action="store_true",
                            help="do not flush the L2 cache between runs")
    return parser
