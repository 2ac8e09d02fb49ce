#!/usr/bin/env python3
"""Benchmark for exercise m3.02: a DLPack exchange costs the same at every size; a copy does not.

Rows (precision fp32: the buffers are float32), named like the course's ladders
(<family>/<direction>/<solution|exercise>/<precision>/<size>):
  exchange/lib_to_torch/solution/fp32/bytes:N   torch.from_dlpack(buf): the library's
                                                 __dlpack__ (capsule, stream handshake) plus
                                                 torch's import, and the tensor's release
  exchange/torch_to_lib/solution/fp32/bytes:N   lib.describe(t): torch's __dlpack__ plus the
                                                 library's import (take, read, release)
  exchange/.../exercise/...                      the same with your module (--include-exercise)
  round_trip_copy/torch/fp32/bytes:N             device -> pinned host -> device copies of the
                                                 same bytes (what sharing memory avoids)
for N = 1 KB, 4 KB, ..., 1 GB (powers of 4; --max-bytes lowers the top).

Why two clocks:
- An exchange is host work: building a capsule, a few Python calls, an event record and a
  cudaStreamWaitEvent (which return at once). The GPU does nothing, so CUDA events around it
  would measure nothing useful. It is timed with time.perf_counter over --inner exchanges in a
  loop (one exchange is a microsecond or so, below the clock's useful resolution), and the row
  is the MEDIAN of --repetitions such loops, divided by --inner.
- A copy is GPU work (DMA over PCIe/NVLink-C2C): it is timed with CUDA events around each
  round trip, median of --iterations after --warmup (course_harness.benchmarking.Timer, no L2
  flush: the copy engines do not go through the cache the flush would empty).

Every row is checked before it is timed: the exchanged tensor must be on the buffer's memory
(same address) and the copied tensor must equal the source. The goal (README.md): the exchange
time is independent of the size, within noise, from 1 MB to 1 GB; the program prints the ratio
of the largest to the smallest median over that range, next to the copy's.

  python3 month3/02_dlpack_zero_copy/bench_dlpack_zero_copy.py
  python3 month3/02_dlpack_zero_copy/bench_dlpack_zero_copy.py --include-exercise --json out.json

--json writes Google Benchmark's JSON format, which ./course bench collects.
Exits with status 2 and a one-line explanation when there is no CUDA GPU.
"""
import gc
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import load_extension  # noqa: E402  (after the path is set; it puts common/python there too)
from course_harness import benchmarking  # noqa: E402
from course_harness.benchmarking import first_line  # noqa: E402

PROGRAM = os.path.basename(__file__)
FLAT_RANGE = (1 << 20, 1 << 30)  # the lesson's goal: flat from 1 MB to 1 GB
FLAT_LIMIT = 1.5  # "within noise" for medians of a few microseconds measured on the host


def parse_args():
    parser = benchmarking.argument_parser(__doc__, iterations=20, warmup=3, unit="copies", flush_option=False)
    parser.add_argument("--min-bytes", type=int, default=1 << 10, help="smallest size (default 1 KB)")
    parser.add_argument("--max-bytes", type=int, default=1 << 30, help="largest size (default 1 GB)")
    parser.add_argument("--inner", type=int, default=200, help="exchanges per host-timed loop (default 200)")
    parser.add_argument("--repetitions", type=int, default=21, help="host-timed loops per row (default 21)")
    return parser.parse_args()


def sizes(args):
    size = args.min_bytes
    while size <= args.max_bytes:
        yield size
        size *= 4


def host_median_ms(run, inner, repetitions):
    """Median over `repetitions` of (time of `inner` calls of run()) / inner, in milliseconds."""
    for _ in range(inner):  # warm-up: first calls build caches (pybind11 overloads, torch's)
        run()
    torch.cuda.synchronize()
    per_call = []
    for _ in range(repetitions):
        start = time.perf_counter()
        for _ in range(inner):
            run()
        per_call.append((time.perf_counter() - start) * 1e3 / inner)
    torch.cuda.synchronize()  # the GPU work the handshakes queued (none, but be sure)
    return statistics.median(per_call)


def exchange_rows(rows, args, impl, lib, size_bytes):
    n = size_bytes // 4
    label = f"fp32/bytes:{size_bytes}"
    buf = lib.Buffer((n,), device="cuda")
    buf.fill(1.0)
    buf.synchronize()
    stream = torch.cuda.current_stream()

    name = f"exchange/lib_to_torch/{impl}/{label}"
    try:
        t = torch.from_dlpack(buf)
        if t.data_ptr() != buf.ptr or t.numel() != n:
            raise AssertionError(f"torch's tensor is not the buffer's memory ({t.data_ptr():#x} vs {buf.ptr:#x})")
        del t
        ms = host_median_ms(lambda: torch.from_dlpack(buf), args.inner, args.repetitions)
        rows.append({"name": name, "ms": ms, "bytes": size_bytes})
    except Exception as error:
        rows.append({"name": name, "error": f"wrong result or failed call: {first_line(error)}"})

    name = f"exchange/torch_to_lib/{impl}/{label}"
    x = torch.ones(n, device="cuda")
    handle = load_extension.dlpack_stream(stream)
    try:
        info = lib.describe(x, stream=handle)
        if info["data"] != x.data_ptr() or info["shape"] != [n]:
            raise AssertionError(f"the library's import does not see torch's memory: {info}")
        ms = host_median_ms(lambda: lib.describe(x, stream=handle), args.inner, args.repetitions)
        rows.append({"name": name, "ms": ms, "bytes": size_bytes})
    except Exception as error:
        rows.append({"name": name, "error": f"wrong result or failed call: {first_line(error)}"})
    del x, buf
    gc.collect()


def copy_row(rows, timer, size_bytes):
    n = size_bytes // 4
    name = f"round_trip_copy/torch/fp32/bytes:{size_bytes}"
    source = torch.rand(n, device="cuda")
    host = torch.empty(n, pin_memory=True)
    back = torch.empty(n, device="cuda")

    def run():
        host.copy_(source, non_blocking=True)  # device -> host
        back.copy_(host, non_blocking=True)    # host -> device
        return back

    def check(result):
        torch.cuda.synchronize()
        if not torch.equal(result, source):
            raise AssertionError("the round trip changed the data")

    benchmarking.measure(rows, timer, name, run, check, bytes=size_bytes,
                         GBps=lambda ms: 2.0 * size_bytes / (ms * 1e-3) / 1e9)
    del source, host, back
    gc.collect()
    torch.cuda.empty_cache()


def print_table(rows, facts):
    print(f"{facts['gpu']}, torch {facts['torch']}, CUDA {facts['cuda_runtime']}; exchange: host clock, "
          "median per call; copy: CUDA events, median")
    print(f"{'row':<56} {'time (us)':>12} {'GB/s':>8}")
    for row in rows:
        if "error" in row:
            print(f"{row['name']:<56} {benchmarking.describe_error(row)}")
        else:
            rate = f"{row['GBps']:>8.1f}" if "GBps" in row else ""
            print(f"{row['name']:<56} {row['ms'] * 1e3:>12.2f} {rate}")
    families = {}
    for row in rows:
        if "ms" in row and FLAT_RANGE[0] <= row["bytes"] <= FLAT_RANGE[1]:
            key = "/".join(row["name"].split("/")[:-2])
            families.setdefault(key, []).append(row["ms"])
    for key, times in families.items():
        if len(times) < 2:
            continue
        spread = max(times) / min(times)
        kind = "copy" if key.startswith("round_trip_copy") else "exchange"
        verdict = ("" if kind == "copy" else
                   f" (goal: flat within {FLAT_LIMIT}x: {'met' if spread <= FLAT_LIMIT else 'not met'})")
        print(f"{key}: slowest / fastest median from 1 MB to 1 GB = {spread:.2f}x{verdict}")


def main():
    args = parse_args()
    no_gpu = benchmarking.cuda_or_exit_code(__file__)
    if no_gpu is not None:
        return no_gpu
    facts = benchmarking.device_facts()
    timer = benchmarking.Timer(args.iterations, args.warmup, flush_l2=False)
    impls = ["solution"] + (["exercise"] if args.include_exercise else [])
    modules = {}
    rows = []
    for impl in impls:
        try:
            modules[impl] = load_extension.load_module(impl)
        except Exception as error:
            rows.append({"name": f"exchange/lib_to_torch/{impl}/fp32/load",
                         "error": f"the {impl} module did not load: {first_line(error)}"})
    for size_bytes in sizes(args):
        for impl, lib in modules.items():
            exchange_rows(rows, args, impl, lib, size_bytes)
        copy_row(rows, timer, size_bytes)
    print_table(rows, facts)
    timing = (f"exchange rows: host clock (time.perf_counter), median of {args.repetitions} loops of "
              f"{args.inner} exchanges, per exchange; copy rows: {timer.describe()}")
    return benchmarking.finish(rows, json_path=args.json, program=__file__, timer=timer, facts=facts,
                               timing=timing, precision="fp32")


if __name__ == "__main__":
    sys.exit(main())
