"""The convolution family's Python benchmarks (m3.03 to m3.05): the ResNet layers the C++
benchmarks time, the float32 tolerance, PyTorch's TF32 switches, and the cuDNN baseline
row a PyTorch user has (F.conv2d, cudnn.benchmark = True), with a main() that runs any rows.

    from course_harness import conv_bench

    def extra_rows(rows, timer, layer, inputs):        # optional: more rows per layer
        conv_bench.measure_conv(rows, timer, f"conv_fp32/my_row/{layer.name}", inputs, run)

    sys.exit(conv_bench.main(__doc__, __file__, extra_rows))

Rows are named like the C++ benchmarks' (<family>/<implementation>/<layer>), checked before
they are timed against F.conv2d in float64 (on the GPU) within the tolerance the C++ tests use
(course::conv_tolerance), and report TFLOPS (2 N K P Q C R S / time) and GBps (x and w read
once, y written once).
"""
import collections
import math

import torch
import torch.nn.functional as F

from . import benchmarking, testing
from .conv_shapes import RESNET_LAYERS

# The layers: course::conv_resnet_layers()'s twin (conv_shapes.py), NCHW, no bias.

# One layer's inputs and its float64 answer, shared by every row of the layer.
Inputs = collections.namedtuple("Inputs", "x w expected flops bytes")


def set_tf32(enabled):
    """Both switches, explicitly: cuDNN's default is TF32 on, cuBLAS's is off."""
    torch.backends.cudnn.allow_tf32 = enabled
    torch.backends.cuda.matmul.allow_tf32 = enabled


def tolerance(precision, products):
    """conv_tolerance(fp32, C*R*S) of the C++ tests; for TF32 the inputs are rounded to 10
    mantissa bits, an error of about 2^-11 per product that adds up like a random walk."""
    if precision == "fp32":
        rtol, atol = testing.conv_tolerance(torch.float32, products)
        return atol, rtol
    return 1e-5 + 2.0 ** -10 * math.sqrt(products), 1e-3


def make_inputs(layer):
    """Seeded x and w in [-1, 1) on the GPU, NCHW, and F.conv2d's answer in float64."""
    generator = torch.Generator(device="cuda").manual_seed(3000)
    x = torch.rand(layer.n, layer.c, layer.h, layer.w, device="cuda", generator=generator) * 2 - 1
    w = torch.rand(layer.k, layer.c, layer.r, layer.s, device="cuda", generator=generator) * 2 - 1
    expected = F.conv2d(x.double(), w.double(), stride=layer.stride, padding=layer.padding,
                        dilation=layer.dilation)
    _, _, p, q = expected.shape
    flops = 2.0 * layer.n * layer.k * p * q * layer.c * layer.r * layer.s
    bytes_moved = 4.0 * (x.numel() + w.numel() + expected.numel())
    return Inputs(x, w, expected, flops, bytes_moved)


def measure_conv(rows, timer, name, layer, inputs, run, precision="fp32", **counters):
    """Checks run() (it returns y, NCHW) against the float64 answer, then times it, with the
    TF32 switches set for `precision` ("fp32": off, "tf32": on) while it runs."""
    set_tf32(precision == "tf32")
    atol, rtol = tolerance(precision, layer.c * layer.r * layer.s)

    def check(y):
        torch.testing.assert_close(y.double(), inputs.expected, atol=atol, rtol=rtol)

    try:
        counters.setdefault("label", "fp32, TF32 off" if precision == "fp32" else precision)
        return benchmarking.measure(
            rows, timer, name, run, check,
            TFLOPS=lambda ms: inputs.flops / (ms * 1e-3) / 1e12,
            GBps=lambda ms: inputs.bytes / (ms * 1e-3) / 1e9, **counters)
    finally:
        set_tf32(False)


def cudnn_rows(rows, timer, layer, inputs, precisions):
    """conv_<precision>/cudnn_torch/<layer>: F.conv2d, cudnn.benchmark = True (main sets it)."""
    for precision in precisions:
        measure_conv(rows, timer, f"conv_{precision}/cudnn_torch/{layer.name}", layer, inputs,
                     lambda: F.conv2d(inputs.x, inputs.w, stride=layer.stride, padding=layer.padding,
                                          dilation=layer.dilation),
                     precision)


def tolerance_16bit(precision, products):
    """For cuDNN's fp16 / bf16 rows: the inputs are rounded first (the reference uses the rounded
    values), but cuDNN may pick Winograd or FFT algorithms and round y to 16 bits, so the
    absolute part grows like a random walk and the relative part is the type's (the C++ tests'
    conv_tolerance(fp16 or bf16, ...) is tighter: their kernels accumulate and write float32)."""
    if precision == "fp16":
        return 1e-5 + 2.0 ** -10 * math.sqrt(products), 1e-3
    return 1e-5 + 2.0 ** -7 * math.sqrt(products), 1.6e-2


def cudnn_16bit_rows(rows, timer, layer, inputs, precisions=("fp16",), layouts=("nhwc", "nchw")):
    """conv_<fp16|bf16>/cudnn_<nhwc|nchw>_torch/<layer>: F.conv2d on x and w rounded to 16 bits,
    in channels_last (NHWC activations, KRSC weights: the tensor cores' layout, m3.05's) or the
    default NCHW, cudnn.benchmark = True, TF32 off (it does not apply to 16-bit inputs, but is
    set explicitly all the same). Checked against F.conv2d in float64 of the rounded values."""
    set_tf32(False)
    for precision in precisions:
        dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[precision]
        x16, w16 = inputs.x.to(dtype), inputs.w.to(dtype)
        expected = F.conv2d(x16.double(), w16.double(), stride=layer.stride, padding=layer.padding,
                            dilation=layer.dilation)
        atol, rtol = tolerance_16bit(precision, layer.c * layer.r * layer.s)
        flops = inputs.flops
        bytes_moved = 2.0 * (x16.numel() + w16.numel() + expected.numel())
        for layout in layouts:
            if layout == "nhwc":
                x = x16.to(memory_format=torch.channels_last)
                w = w16.to(memory_format=torch.channels_last)
            else:
                x, w = x16.contiguous(), w16.contiguous()

            def run(x=x, w=w):
                return F.conv2d(x, w, stride=layer.stride, padding=layer.padding,
                                dilation=layer.dilation)

            def check(y, expected=expected, atol=atol, rtol=rtol):
                torch.testing.assert_close(y.double(), expected, atol=atol, rtol=rtol)

            benchmarking.measure(
                rows, timer, f"conv_{precision}/cudnn_{layout}_torch/{layer.name}", run, check,
                TFLOPS=lambda ms: flops / (ms * 1e-3) / 1e12,
                GBps=lambda ms: bytes_moved / (ms * 1e-3) / 1e9,
                label=f"{precision} in, {layout}")
        del x16, w16, expected


def parse_args(doc):
    parser = benchmarking.argument_parser(doc, iterations=50, warmup=10)
    parser.add_argument("--tf32", action="store_true", help="add conv_tf32 rows (TF32 on, for contrast)")
    parser.add_argument("--filter", default="", help="only layers whose name contains this")
    return parser.parse_args()


def main(doc, program, extra_rows=None, layers=RESNET_LAYERS):
    """Runs the cuDNN rows and extra_rows(rows, timer, layer, inputs) on every layer; prints
    a table, writes --json, returns the exit status (2: no GPU, 1: a row failed)."""
    args = parse_args(doc)
    no_gpu = benchmarking.cuda_or_exit_code(program)
    if no_gpu is not None:
        return no_gpu
    torch.backends.cudnn.benchmark = True  # cuDNN times its algorithms per shape, as in training
    set_tf32(False)
    facts = benchmarking.device_facts()
    facts["cudnn"] = torch.backends.cudnn.version()
    timer = benchmarking.Timer(args.iterations, args.warmup, flush_l2=not args.no_flush_l2)
    precisions = ["fp32"] + (["tf32"] if args.tf32 else [])
    rows = []
    for layer in layers:
        if args.filter not in layer.name:
            continue
        inputs = make_inputs(layer)
        cudnn_rows(rows, timer, layer, inputs, precisions)
        if extra_rows is not None:
            extra_rows(rows, timer, layer, inputs)
        del inputs
        torch.cuda.empty_cache()

    print(f"{'row':<56} {'time (us)':>10} {'TFLOP/s':>8}")
    for row in rows:
        if "error" in row:
            print(f"{row['name']:<56} {benchmarking.describe_error(row)}")
        else:
            print(f"{row['name']:<56} {row['ms'] * 1e3:>10.1f} {row['TFLOPS']:>8.2f}")
    return benchmarking.finish(rows, json_path=args.json, program=program, timer=timer, facts=facts)
