#!/usr/bin/env python3
"""Benchmark for exercise m1.05: the extension's operators against PyTorch's own.

Rows, named like the C++ benchmarks' (<family>/<implementation>/<size>):
  vector_add/solution/n:67108864            the reference extension's vector_add
  vector_add/exercise/n:67108864            yours (with --include-exercise)
  vector_add/torch/n:67108864               torch.add(a, b): the baseline
  fused_gelu/solution/rows:16384/cols:4096  the reference extension's fused_gelu
  fused_gelu/exercise/...                   yours (with --include-exercise)
  fused_gelu/eager/...                      F.gelu(x * w + b) in eager PyTorch: three kernels
  fused_gelu/torch_compile/...              the same chain fused by torch.compile (--compile)

Every row is checked against PyTorch before it is timed; a wrong row is reported as an
error and the program exits with status 1. Times are the median over --iterations runs,
each between two CUDA events, after --warmup runs, with the L2 cache flushed before each
run (so every run reads from DRAM). GBps is the fewest bytes the operation must move
(vector_add: read a and b, write c; fused_gelu: read x, write y) over the time, so GB/s
compare like with like, also for the eager chain, which moves three times as much.

  python3 month1/05_torch_extension/bench_torch_extension.py --include-exercise
  python3 month1/05_torch_extension/bench_torch_extension.py --json results.json

--json writes Google Benchmark's JSON format, which ./course bench collects.
Exits with status 2 and a one-line explanation when there is no CUDA GPU.
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import load_extension  # noqa: E402  (after the path is set; it puts common/python there too)
from course_harness import benchmarking  # noqa: E402
from course_harness.benchmarking import first_line  # noqa: E402

PROGRAM = os.path.basename(__file__)


def parse_args():
    parser = benchmarking.argument_parser(__doc__, iterations=100, warmup=10)
    parser.add_argument("--compile", action="store_true", help="add a torch.compile row for fused_gelu")
    parser.add_argument("--n", type=int, default=1 << 26, help="vector_add elements (default 2^26)")
    parser.add_argument("--rows", type=int, default=16384, help="fused_gelu rows (default 16384)")
    parser.add_argument("--cols", type=int, default=4096, help="fused_gelu columns (default 4096)")
    return parser.parse_args()


PEAK_GBPS = None  # the GPU's theoretical DRAM bandwidth, when PyTorch reports it (main())


def measure(rows, timer, name, run, expected, bytes_moved):
    """Checks run() against `expected`, then times it; appends one row with its GB/s."""
    counters = {"GBps": lambda ms: bytes_moved / (ms * 1e-3) / 1e9}
    if PEAK_GBPS:
        counters["peak_pct"] = lambda ms: 100.0 * bytes_moved / (ms * 1e-3) / 1e9 / PEAK_GBPS
    benchmarking.measure(rows, timer, name, run, lambda result: torch.testing.assert_close(result, expected),
                         **counters)


def load(impl, rows, names):
    try:
        return load_extension.load_ops(impl)
    except Exception as error:
        for name in names:
            rows.append({"name": name, "error": f"the {impl} extension did not load: {first_line(error)}"})
        return None


def bench_vector_add(rows, args, timer, impls):
    n = args.n
    size = f"n:{n}"
    a = torch.rand(n, device="cuda") * 4 - 2
    b = torch.rand(n, device="cuda") * 4 - 2
    expected = torch.add(a, b)
    bytes_moved = 3.0 * 4 * n  # read a and b, write c
    measure(rows, timer, f"vector_add/torch/{size}", lambda: torch.add(a, b), expected, bytes_moved)
    for impl in impls:
        name = f"vector_add/{impl}/{size}"
        ops = load(impl, rows, [name])
        if ops is not None:
            measure(rows, timer, name, lambda: ops.vector_add(a, b), expected, bytes_moved)


def bench_fused_gelu(rows, args, timer, impls):
    size = f"rows:{args.rows}/cols:{args.cols}"
    x = torch.rand(args.rows, args.cols, device="cuda") * 4 - 2
    w = torch.rand(args.cols, device="cuda") * 4 - 2
    bias = torch.rand(args.cols, device="cuda") * 2 - 1
    eager = lambda: F.gelu(x * w + bias)  # noqa: E731
    expected = eager()
    bytes_moved = 2.0 * 4 * x.numel() + 2.0 * 4 * args.cols  # read x, w, b; write y
    measure(rows, timer, f"fused_gelu/eager/{size}", eager, expected, bytes_moved)
    if args.compile:
        name = f"fused_gelu/torch_compile/{size}"
        try:
            compiled = torch.compile(lambda x, w, b: F.gelu(x * w + b))
            measure(rows, timer, name, lambda: compiled(x, w, bias), expected, bytes_moved)
        except Exception as error:
            rows.append({"name": name, "error": f"torch.compile failed: {first_line(error)}"})
    for impl in impls:
        name = f"fused_gelu/{impl}/{size}"
        ops = load(impl, rows, [name])
        if ops is not None:
            measure(rows, timer, name, lambda: ops.fused_gelu(x, w, bias), expected, bytes_moved)


def run_benchmarks(args, timer):
    impls = ["solution"] + (["exercise"] if args.include_exercise else [])
    rows = []
    bench_vector_add(rows, args, timer, impls)  # its tensors are freed on return
    bench_fused_gelu(rows, args, timer, impls)
    return rows


def print_table(rows, facts, args):
    flush = "L2 flushed" if not args.no_flush_l2 else "L2 not flushed"
    print(f"{facts['gpu']} ({facts['sm_count']} SMs), torch {facts['torch']}, CUDA {facts['cuda_runtime']}; "
          f"median of {args.iterations} runs after {args.warmup} warm-up runs, {flush}")
    peak = facts.get("peak_dram_gbps")
    baselines = {}
    for row in rows:
        family, impl = row["name"].split("/")[:2]
        if impl in ("torch", "eager") and "ms" in row:
            baselines[family] = (impl, row["ms"])
    print(f"{'row':<48} {'time (us)':>10} {'GB/s':>8} {'% of peak':>10}  vs PyTorch")
    for row in rows:
        if "error" in row:
            print(f"{row['name']:<48} {benchmarking.describe_error(row)}")
            continue
        family = row["name"].split("/")[0]
        baseline = baselines.get(family)
        ratio = f"{baseline[1] / row['ms']:.2f}x the speed of {baseline[0]}" if baseline else ""
        peak_pct = f"{100.0 * row['GBps'] / peak:.1f}" if peak else "-"
        print(f"{row['name']:<48} {row['ms'] * 1e3:>10.1f} {row['GBps']:>8.0f} {peak_pct:>10}  {ratio}")
    # The goal of the reference solution: vector_add within 10% of torch.add.
    for row in rows:
        family, impl = row["name"].split("/")[:2]
        if family == "vector_add" and impl != "torch" and "ms" in row and family in baselines:
            speed = baselines[family][1] / row["ms"]
            verdict = "met" if speed >= 0.9 else "not met"
            print(f"{family}/{impl}: {speed:.2f}x the speed of torch.add "
                  f"(goal: within 10%, at least 0.90x): {verdict}")


def main():
    args = parse_args()
    no_gpu = benchmarking.cuda_or_exit_code(__file__)
    if no_gpu is not None:
        return no_gpu
    global PEAK_GBPS
    facts = benchmarking.device_facts()
    PEAK_GBPS = facts.get("peak_dram_gbps")
    timer = benchmarking.Timer(args.iterations, args.warmup, flush_l2=not args.no_flush_l2)
    rows = run_benchmarks(args, timer)
    print_table(rows, facts, args)
    return benchmarking.finish(rows, json_path=args.json, program=__file__, timer=timer, facts=facts,
                               precision="fp32")


if __name__ == "__main__":
    sys.exit(main())
