#!/usr/bin/env python3
"""Benchmark for exercise m3.05: the baselines a PyTorch user has, on the layers that
bench_implicit_gemm.cu times the implicit GEMM on.

Rows, named like the C++ benchmarks' (<family>/<implementation>/<layer>):
  conv_fp16/cudnn_nhwc_torch/ResNet_C64_56_K64_3x3   F.conv2d in float16, x and w in
                                                     channels_last (NHWC / KRSC, m3.05's
                                                     layout): the baseline of the lesson's goal
  conv_fp16/cudnn_nchw_torch/ResNet_C64_56_K64_3x3   the same in PyTorch's default NCHW: what
                                                     the layout buys cuDNN
  conv_bf16/cudnn_nhwc_torch/ResNet_C64_56_K64_3x3   bfloat16, channels_last
  conv_fp32/cudnn_torch/ResNet_C64_56_K64_3x3        float32 with TF32 OFF (m3.04's baseline),
                                                     for the comparison across precisions
  conv_tf32/cudnn_torch/...                          float32 with TF32 on (--tf32 only)
cudnn.benchmark = True (cuDNN times its algorithms per shape), and both TF32 switches are set
explicitly (off, except for the --tf32 rows). cuDNN's fp16 / bf16 rows write a 16-bit y; the
C++ kernel writes float32 (more bytes: it is not helped by this). Every row is checked before
it is timed against F.conv2d in float64 of the inputs rounded to the row's type; TFLOPS counts
2 N K P Q C R S; times are the median over --iterations runs between CUDA events, after
--warmup runs, with the L2 cache flushed before each run.

  python3 month3/05_implicit_gemm/bench_implicit_gemm_torch.py
  python3 month3/05_implicit_gemm/bench_implicit_gemm_torch.py --filter C128 --json out.json

--json writes Google Benchmark's JSON format, which ./course bench collects (as
m3_05_implicit_gemm_torch.json, beside the C++ benchmark's m3_05_implicit_gemm.json).
Exits with status 2 and a one-line explanation when there is no CUDA GPU.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common", "python"))

from course_harness import conv_bench  # noqa: E402


def half_rows(rows, timer, layer, inputs):
    conv_bench.cudnn_16bit_rows(rows, timer, layer, inputs, precisions=("fp16",),
                                layouts=("nhwc", "nchw"))
    conv_bench.cudnn_16bit_rows(rows, timer, layer, inputs, precisions=("bf16",), layouts=("nhwc",))


if __name__ == "__main__":
    sys.exit(conv_bench.main(__doc__, __file__, half_rows))
