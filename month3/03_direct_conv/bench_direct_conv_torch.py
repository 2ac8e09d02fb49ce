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
no bias; the layer list, the check and the cuDNN rows are shared with m3.04's benchmark
(common/python/course_harness/conv_bench.py). Every row is checked before it is timed against F.conv2d in float64 (on the GPU),
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
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common", "python"))

from course_harness import conv_bench  # noqa: E402

if __name__ == "__main__":
    sys.exit(conv_bench.main(__doc__, __file__))
