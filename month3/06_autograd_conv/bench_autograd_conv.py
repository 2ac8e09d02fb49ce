#!/usr/bin/env python3
"""Benchmark for exercise m3.06: forward + backward of the course's Conv2d against nn.Conv2d
(cuDNN), on the ResNet layers every month-3 convolution benchmark uses.

Rows (<family>/<implementation>/<layer>), each naming its precision: fp32 rows in true
float32 (TF32 off: both torch.backends.cudnn.allow_tf32 and torch.backends.cuda.matmul.allow_tf32
are set to False), fp16 rows with float16 channels_last tensors (model and input):
  conv_fwd_bwd_fp32/cudnn_nn_conv2d/ResNet_...   nn.Conv2d, cudnn.benchmark = True: the baseline
  conv_fwd_bwd_fp32/solution/ResNet_...          the reference m3.06 Conv2d
  conv_fwd_bwd_fp32/exercise/ResNet_...          yours (with --include-exercise)
  conv_fwd_bwd_fp16/cudnn_nn_conv2d/ResNet_...   nn.Conv2d in float16 channels_last (cuDNN's
                                                 tensor-core kernels, forward and backward)
  conv_fwd_bwd_fp16/solution/ResNet_...          the reference Conv2d: m3.05's forward and
                                                 grad-input (stride phases), m2.09's GEMM for
                                                 grad-weight, grad-bias by the float32 operators
  conv_bwd_parts_fp32/solution/<part>/ResNet_... each backward operator alone (--parts):
                                                 grad_input (the stride phases: each a
                                                 forward through the kernel table; float32 with
                                                 C < 16: a GEMM into columns and a col2im
                                                 gather), grad_input_gather, grad_weight
                                                 (im2col + cuBLAS), grad_weight_direct, grad_bias
One forward + backward is y = conv(x); y.backward(dy) with x, weight and bias all requiring
gradients (the three gradients of a training step). Each row is checked first against
nn.Conv2d's output and gradients, then timed: the median over --iterations runs between CUDA
events, after --warmup runs, with the L2 cache flushed before each. A row whose kernels need
more than this GPU has (a launcher's "needs compute capability ..." reason) is listed as not
runnable on this GPU, with that reason, and is not a failure. TFLOPS counts the three
convolutions' 3 * 2 N K P Q C R S operations (bias and reductions not counted).

The course's goal (README.md): on each 3x3 layer with C >= 64, the fp32 forward + backward
within 2x nn.Conv2d's. The float32 forward (and the stride-1 dx) runs im2col + cuBLAS GEMM
(m3.04's, restructured), the float16 forward m3.05's implicit GEMM: rows of the forward table in
autograd_conv_given.cuh.

  python3 month3/06_autograd_conv/bench_autograd_conv.py [--include-exercise] [--parts] [--precisions fp32,fp16] [--json out.json]

Exits with status 2 and a one-line explanation when there is no CUDA GPU.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "common", "python"))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from course_harness import benchmarking  # noqa: E402
from course_harness.conv_bench import set_tf32  # noqa: E402
from course_harness.conv_shapes import RESNET_LAYERS  # noqa: E402

PROGRAM = os.path.basename(__file__)


def parse_args():
    parser = benchmarking.argument_parser(__doc__, iterations=30, warmup=5)
    parser.add_argument("--parts", action="store_true", help="also time each backward operator alone")
    parser.add_argument("--filter", default="", help="only layers whose name contains this")
    parser.add_argument("--precisions", default="fp32,fp16", help="fp32, fp16 or both (default fp32,fp16)")
    return parser.parse_args()


def fwd_bwd(layer, x, dy):
    def run():
        layer.zero_grad(set_to_none=True)
        x.grad = None
        y = layer(x)
        y.backward(dy)
        return y, x.grad, layer.weight.grad, layer.bias.grad
    return run


def bench_layer_fp16(rows, timer, spec, impls):
    """float16 channels_last, as a mixed-precision model runs: both against cuDNN's results
    (each result rounded to float16 once; the tests check against float64)."""
    generator = torch.Generator(device="cuda").manual_seed(3100)
    layout = dict(memory_format=torch.channels_last)
    x = (torch.rand(spec.n, spec.c, spec.h, spec.w, device="cuda", generator=generator) * 2 - 1)
    x = x.half().contiguous(**layout).requires_grad_(True)
    reference = nn.Conv2d(spec.c, spec.k, (spec.r, spec.s), stride=spec.stride, padding=spec.padding,
                          dilation=spec.dilation).cuda().half().to(**layout)
    p, q = output_size(spec)
    dy = (torch.rand(spec.n, spec.k, p, q, device="cuda", generator=generator) * 2 - 1).half().contiguous(**layout)
    flops = 3 * 2.0 * spec.n * spec.k * p * q * spec.c * spec.r * spec.s
    expected = [t.detach().clone() for t in fwd_bwd(reference, x, dy)()]

    def check(results):
        # Two float16 roundings of float32 sums (cuDNN's and ours) differ by a unit or two
        # in the last place; the float32 sums themselves differ by far less.
        for name, got, want in zip(("y", "dx", "dw", "db"), results, expected):
            torch.testing.assert_close(got.float(), want.float(), rtol=4 * 2.0 ** -10,
                                       atol=4 * 2.0 ** -10 * float(want.abs().max()), msg=lambda m: f"{name}: {m}")

    counters = dict(TFLOPS=lambda ms: flops / (ms * 1e-3) / 1e12, label="fp16 channels_last")
    benchmarking.measure(rows, timer, f"conv_fwd_bwd_fp16/cudnn_nn_conv2d/{spec.name}",
                         fwd_bwd(reference, x, dy), check, **counters)
    for impl, conv in impls:
        layer = conv.Conv2d.from_torch(reference).to(**layout)
        benchmarking.measure(rows, timer, f"conv_fwd_bwd_fp16/{impl}/{spec.name}", fwd_bwd(layer, x, dy),
                             check, **counters)


def output_size(spec):
    p = (spec.h + 2 * spec.padding[0] - spec.dilation[0] * (spec.r - 1) - 1) // spec.stride[0] + 1
    q = (spec.w + 2 * spec.padding[1] - spec.dilation[1] * (spec.s - 1) - 1) // spec.stride[1] + 1
    return p, q


def bench_layer(rows, timer, spec, impls, parts):
    generator = torch.Generator(device="cuda").manual_seed(3000)
    x = (torch.rand(spec.n, spec.c, spec.h, spec.w, device="cuda", generator=generator) * 2 - 1).requires_grad_(True)
    reference = nn.Conv2d(spec.c, spec.k, (spec.r, spec.s), stride=spec.stride, padding=spec.padding,
                          dilation=spec.dilation).cuda()
    p, q = output_size(spec)
    dy = torch.rand(spec.n, spec.k, p, q, device="cuda", generator=generator) * 2 - 1
    flops = 3 * 2.0 * spec.n * spec.k * p * q * spec.c * spec.r * spec.s
    expected = [t.detach().clone() for t in fwd_bwd(reference, x, dy)()]
    # fp32 vs fp32 (both TF32 off): each result sums C R S (y, dx: K R S) or N P Q (dw, db) terms.
    sums = [spec.c * spec.r * spec.s, spec.k * spec.r * spec.s, spec.n * p * q, spec.n * p * q]

    def check(results):
        for name, got, want, n in zip(("y", "dx", "dw", "db"), results, expected, sums):
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5 + 8.0 * 2.0 ** -24 * n * float(want.abs().max()),
                                       msg=lambda m: f"{name}: {m}")

    counters = dict(TFLOPS=lambda ms: flops / (ms * 1e-3) / 1e12)
    benchmarking.measure(rows, timer, f"conv_fwd_bwd_fp32/cudnn_nn_conv2d/{spec.name}",
                         fwd_bwd(reference, x, dy), check, **counters)
    for impl, conv in impls:
        layer = conv.Conv2d.from_torch(reference)
        benchmarking.measure(rows, timer, f"conv_fwd_bwd_fp32/{impl}/{spec.name}", fwd_bwd(layer, x, dy),
                             check, **counters)
        if parts:
            ops = conv.ops()
            args = (list(spec.stride), list(spec.padding), list(spec.dilation))
            xd, w = x.detach(), reference.weight.detach()
            for part, run in [
                ("grad_input", lambda: ops.conv2d_grad_input(dy, xd, w, *args)),
                ("grad_input_gather", lambda: ops.conv2d_grad_input_gather(dy, xd, w, *args)),
                ("grad_weight", lambda: ops.conv2d_grad_weight(dy, xd, w, *args)),
                ("grad_weight_direct", lambda: ops.conv2d_grad_weight_direct(dy, xd, w, *args)),
                ("grad_bias", lambda: ops.conv2d_grad_bias(dy)),
            ]:
                want = {"grad_input": expected[1], "grad_input_gather": expected[1], "grad_weight": expected[2],
                        "grad_weight_direct": expected[2], "grad_bias": expected[3]}[part]
                n = {"grad_input": sums[1], "grad_input_gather": sums[1]}.get(part, sums[2])
                benchmarking.measure(
                    rows, timer, f"conv_bwd_parts_fp32/{impl}/{part}/{spec.name}", run,
                    lambda got, want=want, n=n: torch.testing.assert_close(
                        got, want, rtol=1e-4, atol=1e-5 + 8.0 * 2.0 ** -24 * n * float(want.abs().max())))


def main():
    args = parse_args()
    no_gpu = benchmarking.cuda_or_exit_code(__file__)
    if no_gpu is not None:
        return no_gpu
    import load_extension  # builds the extensions (minutes the first time)

    torch.backends.cudnn.benchmark = True  # cuDNN picks its algorithms per shape, as in training
    set_tf32(False)
    impls = [("solution", load_extension.load_module("solution"))]
    if args.include_exercise:
        impls.append(("exercise", load_extension.load_module("exercise")))
    facts = benchmarking.device_facts()
    facts["cudnn"] = torch.backends.cudnn.version()
    facts["precision"] = ("fp32 rows: TF32 off (cudnn.allow_tf32 = matmul.allow_tf32 = False); "
                          "fp16 rows: float16 channels_last model and input")
    timer = benchmarking.Timer(args.iterations, args.warmup, flush_l2=not args.no_flush_l2)
    rows = []
    precisions = [p for p in args.precisions.split(",") if p]
    if not precisions or any(p not in ("fp32", "fp16") for p in precisions):
        print(f"{PROGRAM}: --precisions takes fp32 and/or fp16, got {args.precisions!r}", file=sys.stderr)
        return 1
    for spec in RESNET_LAYERS:
        if args.filter in spec.name:
            if "fp32" in precisions:
                bench_layer(rows, timer, spec, impls, args.parts)
            if "fp16" in precisions:
                bench_layer_fp16(rows, timer, spec, impls)
            torch.cuda.empty_cache()

    def key(name):  # the family's precision and the layer: each row's baseline
        return name.split("/")[0].rsplit("_", 1)[1], name.split("/")[-1]
    baseline = {key(r["name"]): r["ms"] for r in rows if "cudnn_nn_conv2d" in r["name"] and "ms" in r}
    print(f"{'row':<64} {'time (us)':>10} {'TFLOP/s':>8} {'x cuDNN':>8}")
    for row in rows:
        if "error" in row:
            print(f"{row['name']:<64} {benchmarking.describe_error(row)}")
            continue
        ratio = row["ms"] / baseline[key(row["name"])] if key(row["name"]) in baseline else None
        tflops = f"{row['TFLOPS']:>8.2f}" if "TFLOPS" in row else " " * 8
        shown = f"{ratio:>8.2f}" if ratio is not None and row["name"].startswith("conv_fwd_bwd") else ""
        print(f"{row['name']:<64} {row['ms'] * 1e3:>10.1f} {tflops} {shown}")
    return benchmarking.finish(rows, json_path=args.json, program=__file__, timer=timer, facts=facts,
                               precision="fp32, TF32 off")


if __name__ == "__main__":
    sys.exit(main())
