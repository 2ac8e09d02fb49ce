#!/usr/bin/env python3
"""Benchmark for exercise m3.04: the baselines a PyTorch user has, on the layers that
bench_im2col_gemm.cu times im2col + GEMM on.

Rows, named like the C++ benchmarks' (<family>/<implementation>/<layer>):
  conv_fp32/cudnn_torch/ResNet_C64_56_K64_3x3          F.conv2d in float32 with TF32 OFF,
                                                       cudnn.benchmark = True: the baseline
  conv_fp32/unfold_matmul_torch/ResNet_C64_56_K64_3x3  im2col the PyTorch way: F.unfold (X_col
                                                       per image, [N, C R S, P Q]), then
                                                       torch.matmul(w.view(K, C R S), X_col)
                                                       in float32, TF32 off: what this
                                                       exercise does, in two library calls
  conv_tf32/cudnn_torch/...                            the same as the first with TF32 on
                                                       (--tf32 only): PyTorch's default for
                                                       float32 convs, on the tensor cores.
                                                       Not a fair comparison for a float32
                                                       kernel.
The unfold rows also carry the counters of the C++ rows: xcol_bytes (F.unfold's output),
x_bytes and blowup = xcol_bytes / x_bytes.

The layers, the check and the cuDNN rows are m3.03's (common/python/course_harness/conv_bench.py):
every row is checked before it is timed against F.conv2d in float64 (on the GPU) within the
C++ tests' tolerance, TFLOPS counts 2 N K P Q C R S, and times are the median over
--iterations runs between CUDA events, after --warmup runs, with the L2 cache flushed before
each run.

  python3 month3/04_im2col_gemm/bench_im2col_gemm_torch.py
  python3 month3/04_im2col_gemm/bench_im2col_gemm_torch.py --filter C128 --tf32 --json out.json

--json writes Google Benchmark's JSON format, which ./course bench collects (as
m3_04_im2col_gemm_torch.json, beside the C++ benchmark's m3_04_im2col_gemm.json).
Exits with status 2 and a one-line explanation when there is no CUDA GPU.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common", "python"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from course_harness import conv_bench  # noqa: E402
from course_harness.conv_shapes import output_size  # noqa: E402


def unfold_matmul(layer, x, w):
    """y = conv2d(x, w) as F.unfold + matmul: X_col [N, C R S, P Q], then the batched product
    W [K, C R S] x X_col_n, [N, K, P Q], which is y in NCHW once viewed as [N, K, P, Q]."""
    x_col = F.unfold(x, kernel_size=(layer.r, layer.s), padding=layer.padding, stride=layer.stride,
                     dilation=layer.dilation)
    y = torch.matmul(w.view(layer.k, -1), x_col)
    p, q = output_size(layer)
    return y.view(layer.n, layer.k, p, q)


def unfold_rows(rows, timer, layer, inputs):
    p, q = output_size(layer)
    x_bytes = 4.0 * inputs.x.numel()
    x_col_bytes = 4.0 * layer.n * layer.c * layer.r * layer.s * p * q
    conv_bench.measure_conv(
        rows, timer, f"conv_fp32/unfold_matmul_torch/{layer.name}", layer, inputs,
        lambda: unfold_matmul(layer, inputs.x, inputs.w), "fp32",
        x_bytes=x_bytes, xcol_bytes=x_col_bytes, blowup=x_col_bytes / x_bytes)


if __name__ == "__main__":
    sys.exit(conv_bench.main(__doc__, __file__, unfold_rows))
