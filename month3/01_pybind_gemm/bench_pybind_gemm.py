#!/usr/bin/env python3
"""Benchmark for exercise m3.01: optimized_gemm (the month-2 kernels behind pybind11) against
torch.matmul (cuBLAS), and what one call costs at a tiny size.

Rows, named like the C++ benchmarks' (<family>/<implementation>/<size>); the family names
the precision:
  gemm_fp32/torch_matmul/n:4096       torch.matmul, float32 in and out, TF32 OFF (cuBLAS SGEMM)
  gemm_fp32/solution/n:4096           the reference optimized_gemm: m2.09's plan for the shape,
                                      float32 on m2.05's main loop
  gemm_fp32/exercise/n:4096           yours (with --include-exercise)
  gemm_fp16/torch_matmul/n:4096       torch.matmul, float16 in and out, float32 accumulation
                                      (reduced-precision reductions off)
  gemm_fp16/torch_mm_fp32_out/n:4096  torch.mm(a, b, out_dtype=torch.float32): float16 in,
                                      float32 out, the output optimized_gemm gives (PyTorch
                                      versions whose torch.mm has out_dtype; left out elsewhere)
  gemm_fp16/solution/n:4096           optimized_gemm, float16 in, float32 out: m2.09's plan,
                                      float16 on m2.07's tensor-core main loop (m2.08's wgmma
                                      kernel on a Hopper)
  shapes_fp32/torch_matmul/M:16/N:4096/K:4096   the same two on the shapes layers have (m2.09's
  shapes_fp32/solution/M:16/N:4096/K:4096       list: small M, long K, odd sizes, the squares),
  shapes_fp16/...                               float32 and float16
  overhead_fp32/torch_mm/n:64         one call of torch.mm on 64 x 64 matrices
  overhead_fp32/torch_mm_out/n:64     the same with out= (no allocation)
  overhead_fp32/solution/n:64         one call of optimized_gemm
  overhead_fp32/solution_out/n:64     the same with out=
  overhead_fp32/solution_op/n:64      one call of the dispatcher operator torch.ops.m3_01_solution.gemm
  overhead_fp32/solution_launcher/n:64  one launch of m2.09's launcher from a C++ loop:
                                      no Python, no checks, no allocation (the floor)

Every GEMM row is checked against a float64 torch.matmul before it is timed; a wrong row is
an error row and the program exits with status 1. A row whose kernel needs more than this GPU
has (a launcher's "needs compute capability ..." or "needs ... KiB of shared memory" reason)
is listed as not runnable on this GPU, with that reason, and is not a failure.
gemm_* and shapes_* times are the median over --iterations runs, each between two CUDA events, after
--warmup runs, with the L2 cache flushed before each run; TFLOPS counts 2 * n^3 (2 M N K) operations. overhead_* rows time a loop of
--calls back-to-back calls between two CUDA events (no L2 flush) and report us_per_call:
at 64 x 64 the GPU finishes each kernel in a few microseconds, so the loop runs at the rate
the CPU issues calls, and that rate is what the rows compare.

  python3 month3/01_pybind_gemm/bench_pybind_gemm.py --include-exercise
  python3 month3/01_pybind_gemm/bench_pybind_gemm.py --json results.json

--json writes Google Benchmark's JSON format, which ./course bench collects.
Exits with status 2 and a one-line explanation when there is no CUDA GPU.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import load_extension  # noqa: E402  (after the path is set; it puts common/python there too)
from course_harness import benchmarking, testing  # noqa: E402
from course_harness.benchmarking import first_line  # noqa: E402

PROGRAM = os.path.basename(__file__)
GOAL_FP32 = 0.90  # the lesson's goal: optimized_gemm fp32 >= 90% of torch.matmul fp32 at 4096


# m2.09's shape list (gemm_shapes.h, benchmark_shapes()): the square the course is tuned on, an LLM's MLP
# projection, a long K, batches of 128 and 16, a small square, a large non-square, odd sizes.
SHAPES = ("4096x4096x4096", "4096x11008x4096", "1024x1024x8192", "128x4096x4096", "16x4096x4096",
          "512x512x512", "3000x5000x2000", "4093x4099x4097")


def parse_shape(text):
    m, n, k = (int(v) for v in text.lower().split("x"))
    return m, n, k


def parse_args():
    parser = benchmarking.argument_parser(__doc__, iterations=20, warmup=5)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096, 8192],
                        help="square GEMM sizes n (default 1024 2048 4096 8192)")
    parser.add_argument("--shapes", nargs="*", default=list(SHAPES), metavar="MxNxK",
                        help="the shapes_* rows' shapes (default: m2.09's list, " + " ".join(SHAPES) + ")")
    parser.add_argument("--overhead-size", type=int, default=64, help="n of the per-call rows (default 64)")
    parser.add_argument("--calls", type=int, default=1000, help="calls per timed loop of the per-call rows")
    return parser.parse_args()


def set_precision():
    # Every row names its precision, so nothing is left at PyTorch's defaults: float32 means
    # float32 (TF32 would round the inputs to 10-bit mantissas and run on tensor cores), and
    # cuBLAS's float16 GEMM accumulates in float32 like m2.07's.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if hasattr(torch.backends.cuda.matmul, "allow_fp16_reduced_precision_reduction"):
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False


def mm_has_out_dtype():
    """Whether this PyTorch's torch.mm takes out_dtype=torch.float32 for float16 inputs on the GPU
    (cuBLAS writing float32 C, as optimized_gemm does): newer PyTorch 2.x only."""
    a = torch.ones(8, 8, device="cuda", dtype=torch.float16)
    try:
        return torch.mm(a, a, out_dtype=torch.float32).dtype == torch.float32
    except (TypeError, RuntimeError):
        return False


def checker(expected, input_dtype, k):
    """check(result): raises unless result ~= expected (float64), on the GPU, no host copy."""
    rtol, atol = testing.gemm_tolerance(input_dtype, k)
    if input_dtype == torch.float16:
        rtol = max(rtol, 2.0 ** -10)  # torch.matmul's float16 OUTPUT is rounded to float16

    def check(result):
        error = (result.double() - expected).abs()
        bad = int((~(error <= atol + rtol * expected.abs())).sum())  # NaN counts as bad
        if bad:
            raise AssertionError(f"{bad} of {result.numel()} elements differ from the float64 reference "
                                 f"(max error {float(error.max()):.3g}, rtol {rtol:.2g}, atol {atol:.2g})")
    return check


def load(impl, rows, names):
    try:
        return load_extension.load_module(impl)
    except Exception as error:
        for name in names:
            rows.append({"name": name, "error": f"the {impl} extension did not load: {first_line(error)}"})
        return None


def bench_product(rows, timer, modules, family, size, m, n, k, dtype, label, seed, fp32_out_mm):
    """The rows of one M x N x K product and precision, named <family>/<impl>/<size>: torch.matmul
    (in float16 also torch.mm with float32 out, where `fp32_out_mm`), then each implementation's
    optimized_gemm; the tensors are freed when it returns."""
    generator = torch.Generator(device="cuda").manual_seed(seed)
    a = (torch.rand(m, k, device="cuda", generator=generator) * 2 - 1).to(dtype)
    b = (torch.rand(k, n, device="cuda", generator=generator) * 2 - 1).to(dtype)
    check = checker(torch.matmul(a.double(), b.double()), dtype, k)
    rate = lambda ms: 2.0 * m * n * k / (ms * 1e-3) / 1e12  # noqa: E731
    torch_label = "fp32, TF32 off" if dtype == torch.float32 else "fp16 in, fp16 out, fp32 accumulate"
    benchmarking.measure(rows, timer, f"{family}/torch_matmul/{size}", lambda: torch.matmul(a, b), check,
                         TFLOPS=rate, label=torch_label)
    if dtype == torch.float16 and fp32_out_mm:
        # The same output as optimized_gemm's: float32 C, twice the bytes of torch.matmul's.
        benchmarking.measure(rows, timer, f"{family}/torch_mm_fp32_out/{size}",
                             lambda: torch.mm(a, b, out_dtype=torch.float32), check, TFLOPS=rate,
                             label="fp16 in, fp32 out, fp32 accumulate")
    out = torch.empty(m, n, device="cuda")
    for impl, module in modules.items():
        name = f"{family}/{impl}/{size}"
        if module is None:
            rows.append({"name": name, "error": f"the {impl} extension did not load"})
            continue
        # out= preallocated: the same allocation-free call a training loop would make.
        benchmarking.measure(rows, timer, name, lambda: module.optimized_gemm(a, b, out=out), check,
                             TFLOPS=rate, label=label + ", out=")


def bench_shapes(rows, args, timer, modules):
    for text in args.shapes:
        m, n, k = parse_shape(text)
        for family, dtype, label in (("shapes_fp32", torch.float32, "fp32 in, fp32 out"),
                                     ("shapes_fp16", torch.float16, "fp16 in, fp32 accumulate, fp32 out")):
            bench_product(rows, timer, modules, family, f"M:{m}/N:{n}/K:{k}", m, n, k, dtype, label,
                          testing.SEED + m + 7 * n + 13 * k, args.fp32_out_mm)
            torch.cuda.empty_cache()


def bench_gemm(rows, args, timer, modules):
    for n in args.sizes:
        for family, dtype, label in (("gemm_fp32", torch.float32, "fp32 in, fp32 out"),
                                     ("gemm_fp16", torch.float16, "fp16 in, fp32 accumulate, fp32 out")):
            bench_product(rows, timer, modules, family, f"n:{n}", n, n, n, dtype, label, testing.SEED + n,
                          args.fp32_out_mm)
            torch.cuda.empty_cache()


def bench_overhead(rows, args, modules):
    n, calls = args.overhead_size, args.calls
    timer = benchmarking.Timer(args.iterations, args.warmup, flush_l2=False)
    a = torch.rand(n, n, device="cuda") * 2 - 1
    b = torch.rand(n, n, device="cuda") * 2 - 1
    out = torch.empty(n, n, device="cuda")
    check = checker(torch.matmul(a.double(), b.double()), torch.float32, n)
    size = f"n:{n}"
    per_call = {"us_per_call": lambda ms: ms * 1e3 / calls, "calls": calls}

    def loop(function):
        def run():
            for _ in range(calls):
                result = function()
            return result
        return run

    def measure(name, function, result=None):
        # Checked once (function()'s result, or `result` for functions that return nothing),
        # then timed as a loop of `calls` calls.
        benchmarking.measure(rows, timer, name, loop(function),
                             lambda r: check(r if result is None else result), **per_call)

    measure(f"overhead_fp32/torch_mm/{size}", lambda: torch.mm(a, b))
    measure(f"overhead_fp32/torch_mm_out/{size}", lambda: torch.mm(a, b, out=out))
    for impl, module in modules.items():
        if module is None:
            continue
        ops = getattr(torch.ops, load_extension.namespace(impl))
        measure(f"overhead_fp32/{impl}/{size}", lambda: module.optimized_gemm(a, b))
        measure(f"overhead_fp32/{impl}_out/{size}", lambda: module.optimized_gemm(a, b, out=out))
        measure(f"overhead_fp32/{impl}_op/{size}", lambda: ops.gemm(a, b))
        launcher_out = torch.empty(n, n, device="cuda")
        # One Python call that launches `calls` times from C++: the loop is the C++ one.
        benchmarking.measure(rows, timer, f"overhead_fp32/{impl}_launcher/{size}",
                             lambda: module._launcher_loop(a, b, launcher_out, calls),
                             lambda _: check(launcher_out), **per_call)


def split_name(name):
    """(family, implementation, size) of a row name; a shape's size is M:../N:../K:.."""
    family, impl, size = name.split("/", 2)
    return family, impl, size


def print_table(rows, facts, args):
    flush = "L2 flushed" if not args.no_flush_l2 else "L2 not flushed"
    print(f"{facts['gpu']} ({facts['sm_count']} SMs), torch {facts['torch']}, CUDA {facts['cuda_runtime']}; "
          f"median of {args.iterations} runs after {args.warmup} warm-up runs, {flush} (GEMM rows)")
    baselines = {}
    for row in rows:
        family, impl, size = split_name(row["name"])
        if impl in ("torch_matmul", "torch_mm") and "ms" in row:
            baselines[(family, size)] = row["ms"]
    print(f"{'row':<58} {'time (us)':>11} {'TFLOP/s':>8} {'us/call':>8}  vs PyTorch")
    for row in rows:
        if "error" in row:
            print(f"{row['name']:<58} {benchmarking.describe_error(row)}")
            continue
        family, impl, size = split_name(row["name"])
        baseline = baselines.get((family, size))
        ratio = f"{baseline / row['ms']:.2f}x the speed" if baseline else ""
        rate = f"{row['TFLOPS']:.1f}" if "TFLOPS" in row else "-"
        call = f"{row['us_per_call']:.2f}" if "us_per_call" in row else "-"
        print(f"{row['name']:<58} {row['ms'] * 1e3:>11.1f} {rate:>8} {call:>8}  {ratio}  [{row.get('label', 'fp32')}]")
    verdicts = []
    for row in rows:
        family, impl, size = split_name(row["name"])
        if family == "gemm_fp32" and size == "n:4096" and impl not in ("torch_matmul",) and "ms" in row:
            baseline = baselines.get((family, size))
            if baseline:
                speed = baseline / row["ms"]
                verdict = "met" if speed >= GOAL_FP32 else "not met"
                verdicts.append(f"gemm_fp32/{impl} at 4096: {speed:.2f}x torch.matmul fp32 (TF32 off) "
                                f"(goal: at least {GOAL_FP32:.2f}x): {verdict}")
    for line in verdicts:
        print(line)


def main():
    args = parse_args()
    no_gpu = benchmarking.cuda_or_exit_code(__file__)
    if no_gpu is not None:
        return no_gpu
    set_precision()
    args.fp32_out_mm = mm_has_out_dtype()
    if not args.fp32_out_mm:
        print(f"{PROGRAM}: this PyTorch's torch.mm has no out_dtype: the torch_mm_fp32_out rows "
              "(float16 in, float32 out) are left out", file=sys.stderr)
    facts = benchmarking.device_facts()
    facts["tf32"] = "off"
    timer = benchmarking.Timer(args.iterations, args.warmup, flush_l2=not args.no_flush_l2)
    impls = ["solution"] + (["exercise"] if args.include_exercise else [])
    rows = []
    modules = {impl: load(impl, rows, [f"load/{impl}/extension"]) for impl in impls}
    bench_gemm(rows, args, timer, modules)
    bench_shapes(rows, args, timer, modules)
    bench_overhead(rows, args, modules)
    print_table(rows, facts, args)
    timing = (f"GEMM rows: {timer.describe()}; overhead rows: a loop of {args.calls} calls "
              f"between two CUDA events, median of {args.iterations}")
    # The overhead rows are float32 matrices with TF32 off (set_precision); the GEMM rows name
    # their own precision.
    return benchmarking.finish(rows, json_path=args.json, program=__file__, timer=timer, facts=facts,
                               timing=timing, precision="fp32, TF32 off")


if __name__ == "__main__":
    sys.exit(main())
