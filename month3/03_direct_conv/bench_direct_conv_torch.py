#!/usr/bin/env python3
"""Benchmark for exercise m3.03: the cuDNN baseline a PyTorch user has, on the layers that
bench_direct_conv.cu times the direct convolutions on.

Rows, named like the C++ benchmarks' (<family>/<implementation>/<layer>):
  conv_fp32/cudnn_torch/ResNet_C64_56_K64_3x3    F.conv2d in float32 with TF32 OFF
                                                 (torch.backends.cudnn.allow_tf32 = False),
                                                 cudnn.benchmark = True: the baseline
  conv_tf32/cudnn_torch/...                      the same with TF32 on (--tf32 only): what
                                                 PyTorch runs by default for float32 convs,
                                                 on the tensor cores, 10-bit mantissas. Not a
                                                 fair comparison for a float32 kernel.

The layers are course::conv_resnet_layers() (common/include/course/conv_reference.h), NCHW,
no bias. Every row is checked before it is timed against F.conv2d in float64 (on the GPU),
within the tolerance the C++ tests use (conv_tolerance: atol = 1e-5 + 8 * 2^-24 * C*R*S,
rtol = 1.3e-6; for TF32 rows a TF32 one). TFLOPS counts 2 N K P Q C R S. Times are the median
over --iterations runs, each between two CUDA events, after --warmup runs (which also let
cudnn.benchmark pick its algorithm), with the L2 cache flushed before each run.

  python3 month3/03_direct_conv/bench_direct_conv_torch.py
  python3 month3/03_direct_conv/bench_direct_conv_torch.py --tf32 --json results.json

--json writes Google Benchmark's JSON format, which ./course bench collects (as
m3_03_direct_conv_torch.json, beside the C++ benchmark's m3_03_direct_conv.json).
Exits with status 2 and a one-line explanation when there is no CUDA GPU.
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common", "python"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from course_harness import benchmarking  # noqa: E402
from course_harness.conv_shapes import RESNET_LAYERS  # noqa: E402

PROGRAM = os.path.basename(__file__)

# course::conv_resnet_layers(), from the Python harness's twin of that list, so that the rows
# line up with the C++ benchmark's (and with m3.06's benchmark).
LAYERS = RESNET_LAYERS


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", metavar="PATH", help="also write Google Benchmark JSON to PATH")
    parser.add_argument("--tf32", action="store_true", help="add conv_tf32 rows (TF32 on, for contrast)")
    parser.add_argument("--filter", default="", help="only layers whose name contains this")
    parser.add_argument("--iterations", type=int, default=50, help="timed runs per row (default 50)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed runs first (default 10)")
    parser.add_argument("--no-flush-l2", action="store_true", help="do not flush the L2 cache between runs")
    return parser.parse_args()


def set_tf32(enabled):
    """Both switches, explicitly: cuDNN's default is TF32 on, cuBLAS's is off."""
    torch.backends.cudnn.allow_tf32 = enabled
    torch.backends.cuda.matmul.allow_tf32 = enabled


def tolerance(precision, products):
    """conv_tolerance(fp32, C*R*S) of the C++ tests; for TF32 the inputs are rounded to 10
    mantissa bits, an error of about 2^-11 per product that adds up like a random walk."""
    if precision == "fp32":
        return 1e-5 + 8.0 * 2.0 ** -24 * products, 1.3e-6
    return 1e-5 + 2.0 ** -10 * math.sqrt(products), 1e-3


def bench_layer(rows, timer, layer, precisions):
    name, n, c, hw, k, r = layer.name, layer.n, layer.c, layer.h, layer.k, layer.r
    stride, pad = layer.stride, layer.padding
    generator = torch.Generator(device="cuda").manual_seed(3000)
    x = torch.rand(n, c, hw, hw, device="cuda", generator=generator) * 2 - 1
    w = torch.rand(k, c, r, r, device="cuda", generator=generator) * 2 - 1
    expected = F.conv2d(x.double(), w.double(), stride=stride, padding=pad)
    _, _, p, q = expected.shape
    flops = 2.0 * n * k * p * q * c * r * r
    bytes_moved = 4.0 * (x.numel() + w.numel() + expected.numel())
    for precision in precisions:
        set_tf32(precision == "tf32")
        atol, rtol = tolerance(precision, c * r * r)

        def check(y):
            torch.testing.assert_close(y.double(), expected, atol=atol, rtol=rtol)

        benchmarking.measure(
            rows, timer, f"conv_{precision}/cudnn_torch/{name}",
            lambda: F.conv2d(x, w, stride=stride, padding=pad), check,
            TFLOPS=lambda ms: flops / (ms * 1e-3) / 1e12,
            GBps=lambda ms: bytes_moved / (ms * 1e-3) / 1e9)
    set_tf32(False)
    del expected


def main():
    args = parse_args()
    no_gpu = benchmarking.cuda_or_exit_code(__file__)
    if no_gpu is not None:
        return no_gpu
    torch.backends.cudnn.benchmark = True  # cuDNN times its algorithms per shape, as in training
    set_tf32(False)
    facts = benchmarking.device_facts()
    facts["cudnn"] = torch.backends.cudnn.version()
    timer = benchmarking.Timer(args.iterations, args.warmup, flush_l2=not args.no_flush_l2)
    precisions = ["fp32"] + (["tf32"] if args.tf32 else [])
    rows = []
    for layer in LAYERS:
        if args.filter in layer.name:
            bench_layer(rows, timer, layer, precisions)
            torch.cuda.empty_cache()

    print(f"{'row':<52} {'time (us)':>10} {'TFLOP/s':>8}")
    for row in rows:
        if "error" in row:
            print(f"{row['name']:<52} ERROR: {row['error']}")
        else:
            print(f"{row['name']:<52} {row['ms'] * 1e3:>10.1f} {row['TFLOPS']:>8.2f}")
    return benchmarking.finish(rows, json_path=args.json, program=__file__, timer=timer, facts=facts)


if __name__ == "__main__":
    sys.exit(main())
