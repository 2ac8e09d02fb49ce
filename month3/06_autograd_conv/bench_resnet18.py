#!/usr/bin/env python3
"""Benchmark for exercise m3.06 on a whole network: the course's convolution against cuDNN on
every distinct convolution of torchvision's ResNet-18 (batch 32, 3 x 224 x 224 images), then one
training step of the whole model with and without convert_module.

bench_autograd_conv.py times the ResNet layers the month-3 benchmarks share; this one times
what a user of the drop-in runs: all 20 convolutions of ResNet-18, 11 distinct shapes (the
7x7 stride-2 stem, the 3x3 stride-1 and stride-2 layers of each stage, the 1x1 stride-2
downsampling layers), weighted by how often each occurs, and the training step itself. The
list is computed from the architecture (resnet18_convolutions: no torchvision needed) and,
where torchvision is installed, checked against the convolutions its resnet18 runs (forward
hooks); a difference is a failed row.

1. Per layer, each direction alone: the forward, the input's gradient and the weights' gradient
   of the course's operators (conv2d, conv2d_grad_input, conv2d_grad_weight: what Conv2d's
   forward and backward call) against cuDNN's (F.conv2d and aten.convolution_backward, which
   the autograd of F.conv2d and torch.nn.grad.conv2d_input / conv2d_weight call), on one set
   of seeded inputs per layer. Rows, per precision:
     resnet18_conv_<precision>/cudnn/<layer>/<direction>     cuDNN, cudnn.benchmark = True
     resnet18_conv_<precision>/course/<layer>/<direction>    the reference m3.06 operators
     resnet18_conv_<precision>/exercise/<layer>/<direction>  yours (with --include-exercise)
     resnet18_conv_<precision>/<impl>/weighted_total/<direction>, .../weighted_total/all
   <direction> is fwd, grad_input or grad_weight. Each row's count is how many times one
   training step runs it: how many of ResNet-18's convolutions have the layer's shape, but 0
   for the stem's grad_input (timed all the same: a training step computes no gradient for
   the images). A weighted total is the sum over the layers of count x median time: the
   convolution time of one training step, direction by direction, and `all` of the three.
   The course's rows carry x_cudnn, their time over cuDNN's.
2. End to end, one training step of torchvision.models.resnet18(num_classes=1000): zero the
   gradients, forward, cross-entropy against random labels, backward (every parameter's
   gradient; no optimizer step), the model as torchvision builds it (cuDNN) against the same
   model after convert_module (every nn.Conv2d replaced by the course's Conv2d):
     resnet18_train_step_fp32/<cudnn|course|exercise>/batch32_224x224
     resnet18_train_step_fp16/<cudnn|course|exercise>/batch32_224x224_model_half_channels_last
   Without torchvision these rows are listed as not runnable, with the reason; the
   per-layer rows still run.

Precisions, named in every row: fp32 is true float32 (TF32 off: torch.backends.cudnn.allow_tf32
and torch.backends.cuda.matmul.allow_tf32 are both set to False); fp16 is float16 in
channels_last (NHWC activations, KRSC weights; the model by model.half() and
.to(memory_format=torch.channels_last)). The course's float16 forward is m3.05's implicit
GEMM; its float16 grad-input runs the stride phases on that implicit GEMM, its grad-weight
m2.09's split-K GEMM on the tensor cores (conv_grad_weight_tc.h), and its grad-bias the float32
kernels on float32 copies (autograd_conv_given.cuh).

Every row is checked before it is timed. Per layer, each result (the course's and cuDNN's)
against the float64 answer of the same (rounded) inputs: the course's within conv_tolerance
(the C++ tests' tolerance), cuDNN's within the tolerance the cuDNN rows of m3.03 to m3.05 use
(course_harness.conv_bench), so both agree; cuDNN's 16-bit grad-weight, whose N P Q-long
sums cuDNN may add partly in 16 bits, as a whole tensor (NORMWISE_16BIT_BOUND). End to end, first the converted copy of the
model against the twin in float64 (one training step of 4 images: logits, loss and every
gradient within a relative error of 1e-6), then the timed precision's first step: its logits
and loss against the twin's, every gradient present and finite. (A fresh ResNet-18's
gradients move ~1e-3 for a 1e-7 change of its images, so two fp32 or fp16 networks that
round differently cannot have their gradients compared tightly; float64 can: STEP_TOLERANCE.)

A time is the median over --iterations runs between CUDA events after --warmup runs, with the
L2 cache flushed before each (per layer); a training step's, the median over --step-iterations
steps after --step-warmup, without a flush (a step is hundreds of kernels; the events then
also count the time the GPU waits for Python to launch them, as a training loop does).
TFLOPS counts 2 N K P Q C R S per convolution and direction.

  python3 month3/06_autograd_conv/bench_resnet18.py [--include-exercise] [--precisions fp32,fp16]
      [--sections layers,step] [--filter LAYER] [--json out.json]
  ./course bench m3_06          (both m3.06 benchmarks; this one's results: m3_06_autograd_conv_resnet18)

Exits with status 2 and a one-line explanation when there is no CUDA GPU.
"""
import collections
import copy
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "common", "python"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from course_harness import benchmarking, conv_bench, testing  # noqa: E402
from course_harness.conv_shapes import case, output_size  # noqa: E402

PROGRAM = os.path.basename(__file__)
BATCH = 32
IMAGE = 224
NUM_CLASSES = 1000
SEED = 3000
DIRECTIONS = ("fwd", "grad_input", "grad_weight")
PRECISIONS = ("fp32", "fp16")
SECTIONS = ("layers", "step")
DTYPES = {"fp32": torch.float32, "fp16": torch.float16}
LABELS = {"fp32": "fp32, TF32 off",
          "fp16": "fp16 channels_last"}
STEP_LABELS = {"fp32": "fp32, TF32 off",
               "fp16": "fp16: model.half(), channels_last model and input"}
STEP_SIZES = {"fp32": f"batch{BATCH}_{IMAGE}x{IMAGE}",
              "fp16": f"batch{BATCH}_{IMAGE}x{IMAGE}_model_half_channels_last"}
# The end-to-end checks, as relative errors ||ours - twin's|| / ||twin's|| of whole tensors.
# A training step of a freshly initialised ResNet-18 amplifies rounding: two networks that
# round differently agree on the logits to about 1e-6 (fp32; fp16 about 1e-3), but a relative
# change of 1e-7 in the images already moves the gradients by about 1e-3, so the gradients of
# the timed precisions cannot be compared tightly. They are checked in float64 instead, where
# the same amplification stays far below CHECK_TOLERANCE: the converted copy's step
# (CHECK_BATCH images) against the twin's, logits, loss and every gradient. The timed step is
# then checked for its logits and loss within STEP_TOLERANCE, and for a finite gradient of
# every parameter. A wrong kernel is off by far more.
STEP_TOLERANCE = {"fp32": 1e-3, "fp16": 5e-2}
CHECK_TOLERANCE = 1e-6
CHECK_BATCH = 4
TOTAL = "weighted_total"


# ---- the layers (pure: no GPU, no torchvision) ----

# One convolution of the network: torchvision's module name and its shape (conv_shapes.ConvCase).
Convolution = collections.namedtuple("Convolution", "module case")
# One distinct shape: the ConvCase named after its first module, how many of the network's
# convolutions have it, their module names, and whether its input is the image (the stem:
# a training step computes no gradient for it).
ResNetLayer = collections.namedtuple("ResNetLayer", "case count modules input_is_image")


def conv_case(module, n, c, h, w, k, r, s, stride, padding):
    return Convolution(module, case(module, n, c, h, w, k, r, s, stride, padding))


def resnet18_convolutions(batch=BATCH, image=IMAGE):
    """ResNet-18's 20 convolutions in forward order, from torchvision's architecture (ResNet
    with BasicBlock, layers [2, 2, 2, 2]): the 7x7 stride-2 stem and a 3x3 stride-2 max-pool,
    then four stages of two blocks of width 64, 128, 256, 512; each block is two 3x3
    convolutions, the first of stages 2-4 with stride 2 and a 1x1 stride-2 downsampling
    convolution beside it. No biases (batch normalisation follows each)."""
    def out(size, filter_size, stride, padding):
        return (size + 2 * padding - filter_size) // stride + 1

    convs = [conv_case("conv1", batch, 3, image, image, 64, 7, 7, 2, 3)]
    size = out(image, 7, 2, 3)
    size = out(size, 3, 2, 1)  # the max-pool
    channels = 64
    for stage, width in enumerate((64, 128, 256, 512), start=1):
        for block in range(2):
            stride = 2 if stage > 1 and block == 0 else 1
            prefix = f"layer{stage}.{block}"
            convs.append(conv_case(f"{prefix}.conv1", batch, channels, size, size, width, 3, 3, stride, 1))
            after = out(size, 3, stride, 1)
            convs.append(conv_case(f"{prefix}.conv2", batch, width, after, after, width, 3, 3, 1, 1))
            if stride != 1 or channels != width:
                convs.append(conv_case(f"{prefix}.downsample.0", batch, channels, size, size, width, 1, 1,
                                       stride, 0))
            channels, size = width, after
    return convs


def convolutions_by_hooks(model, batch=BATCH, image=IMAGE, device="cpu"):
    """The nn.Conv2d modules of `model` in the order a forward of one image runs them, as
    Convolutions of batch `batch` (forward hooks: what the model really does, to check
    resnet18_convolutions() against torchvision's model)."""
    found, handles = [], []

    def hook(module, inputs, output):
        x = inputs[0]
        found.append(Convolution(names[module], case(
            names[module], batch, x.shape[1], x.shape[2], x.shape[3], module.out_channels,
            module.kernel_size[0], module.kernel_size[1], module.stride, module.padding, module.dilation)))

    names = {}
    for name, module in model.named_modules():
        if isinstance(module, nn.Conv2d):
            names[module] = name
            handles.append(module.register_forward_hook(hook))
    was_training = model.training
    try:
        model.eval()
        with torch.no_grad():
            model(torch.zeros(1, 3, image, image, device=device))
    finally:
        for handle in handles:
            handle.remove()
        model.train(was_training)
    return found


def stage_of(module):
    """conv1 -> stem, layer2.0.conv1 -> layer2, layer2.0.downsample.0 -> layer2_down."""
    if "." not in module:
        return "stem"
    return module.split(".")[0] + ("_down" if ".downsample." in module else "")


def layer_name(module, c):
    """A distinct shape's row name: stage, then C<in>_<size>_K<out>_<R>x<S>[_s<stride>]
    (bench_autograd_conv's ResNet_C64_56_K64_3x3 grammar), e.g. layer2_C64_56_K128_3x3_s2."""
    stride = "" if c.stride == (1, 1) else f"_s{c.stride[0]}"
    return f"{stage_of(module)}_C{c.c}_{c.h}_K{c.k}_{c.r}x{c.s}{stride}"


def distinct_layers(convolutions):
    """The distinct shapes of `convolutions` (batch, channels, image size, filters, stride,
    padding, dilation), in the order of their first occurrence, each named after it, with its
    count and module names. The first convolution's input is the image."""
    layers = collections.OrderedDict()
    for index, (module, c) in enumerate(convolutions):
        key = (c.n, c.c, c.h, c.w, c.k, c.r, c.s, c.stride, c.padding, c.dilation)
        if key not in layers:
            layers[key] = ResNetLayer(c._replace(name=layer_name(module, c)), 0, [], index == 0)
        layer = layers[key]
        layer.modules.append(module)
        layers[key] = layer._replace(count=layer.count + 1)
    return list(layers.values())


def weight(layer, direction):
    """How many times one training step runs `direction` of `layer`: its count, but no
    grad_input for the stem (the images need no gradient)."""
    return 0 if direction == "grad_input" and layer.input_is_image else layer.count


def flops(c):
    p, q = output_size(c)
    return 2.0 * c.n * c.k * p * q * c.c * c.r * c.s


def products(c, direction):
    """How many products each output element of `direction` sums (the tolerance grows with it):
    C R S for y, at most K R S for dx, N P Q for dw."""
    p, q = output_size(c)
    return {"fwd": c.c * c.r * c.s, "grad_input": c.k * c.r * c.s, "grad_weight": c.n * p * q}[direction]


# ---- row names and totals (pure) ----

def family(precision):
    return f"resnet18_conv_{precision}"


def row_name(precision, impl, layer, direction):
    """resnet18_conv_fp32/course/layer1_C64_56_K64_3x3/fwd: <family>/<implementation>/<size>
    as tools/run_benchmarks.py groups them (one table group per layer and direction, cuDNN
    its baseline)."""
    return f"{family(precision)}/{impl}/{layer}/{direction}"


def step_row_name(precision, impl):
    return f"resnet18_train_step_{precision}/{impl}/{STEP_SIZES[precision]}"


def total_rows(rows, layers, precision, impls):
    """The weighted totals of `precision`: for each implementation and direction a row whose
    ms is the sum over `layers` of weight x the layer's median, and one for all directions
    (its `all`), with TFLOPS over the same sums of work. A total that lacks a layer's time has
    none either: not runnable when that row was not runnable, an error otherwise. The course's
    totals carry x_cudnn, their time over cuDNN's total."""
    by_name = {row["name"]: row for row in rows}
    totals = []
    for impl in impls:
        for direction in DIRECTIONS + ("all",):
            directions = DIRECTIONS if direction == "all" else (direction,)
            name = row_name(precision, impl, TOTAL, direction)
            ms, work, missing = 0.0, 0.0, None
            for layer in layers:
                for part in directions:
                    times = weight(layer, part)
                    if times == 0:
                        continue
                    row = by_name.get(row_name(precision, impl, layer.case.name, part))
                    if row is None or "ms" not in row:
                        missing = missing or (row_name(precision, impl, layer.case.name, part), row)
                        continue
                    ms += times * row["ms"]
                    work += times * flops(layer.case)
            if missing is not None:
                missing_name, row = missing
                if row is not None and benchmarking.is_not_runnable(row):
                    error = row["error"]
                else:
                    error = f"no total: {missing_name} has no time"
                totals.append({"name": name, "error": error, "label": LABELS[precision]})
                continue
            totals.append({"name": name, "ms": ms, "TFLOPS": work / (ms * 1e-3) / 1e12,
                           "label": LABELS[precision], "total_of": f"count x median of {len(layers)} layers"})
    add_cudnn_ratios(totals, precision)
    return totals


def add_cudnn_ratios(rows, precision):
    """x_cudnn on every timed row of `rows` (not cuDNN's) whose cuDNN twin is among them."""
    prefix = f"{family(precision)}/cudnn/"
    cudnn = {r["name"][len(prefix):]: r["ms"] for r in rows if r["name"].startswith(prefix) and "ms" in r}
    for row in rows:
        head = f"{family(precision)}/"
        if not row["name"].startswith(head) or "ms" not in row or row["name"].startswith(prefix):
            continue
        size = row["name"][len(head):].split("/", 1)[1]
        if size in cudnn:
            row["x_cudnn"] = row["ms"] / cudnn[size]


def add_step_ratios(rows, precision, impls):
    """x_cudnn on each implementation's timed training-step row of `precision`."""
    by_name = {row["name"]: row for row in rows if "ms" in row}
    cudnn = by_name.get(step_row_name(precision, "cudnn"))
    for impl in impls:
        row = by_name.get(step_row_name(precision, impl))
        if row is not None and cudnn is not None:
            row["x_cudnn"] = row["ms"] / cudnn["ms"]


def not_runnable_step_rows(precisions, impls, reason):
    """The end-to-end rows when they cannot run here (no torchvision): one per precision and
    implementation, cuDNN's included, each saying why."""
    return [{"name": step_row_name(precision, impl), "error": benchmarking.NOT_RUNNABLE + reason,
             "label": STEP_LABELS[precision]}
            for precision in precisions for impl in ("cudnn",) + tuple(impls)]


def torchvision_or_reason():
    """(torchvision, None), or (None, why not) when it cannot be imported."""
    try:
        import torchvision
    except Exception as error:  # ImportError, or a torchvision built for another torch
        return None, (f"the end-to-end step needs torchvision, which this Python cannot import "
                      f"({benchmarking.first_line(error)}); to run it: python3 -m pip install "
                      f"torchvision (the build that matches torch {torch.__version__})")
    return torchvision, None


def relative_error(got, want):
    """||got - want|| / ||want|| in float64 (0 when both are 0)."""
    got, want = got.detach().double(), want.detach().double()
    scale = float(want.norm())
    difference = float((got - want).norm())
    return difference / scale if scale else difference


def check_step(got, want, tolerance, compared=None):
    """Raises AssertionError naming the first of the (name, tensor) pairs `got` that is
    missing on either side, has another shape than want[name], or is not finite, or, among
    the names in `compared` (default: all), whose relative error against want[name] exceeds
    `tolerance` (or is NaN)."""
    if sorted(name for name, _ in got) != sorted(want):
        raise AssertionError(f"the results are {sorted(name for name, _ in got)}, expected {sorted(want)}")
    for name, a in got:
        b = want[name]
        if a is None or b is None:
            raise AssertionError(f"{name} is missing (no gradient)")
        if tuple(a.shape) != tuple(b.shape):
            raise AssertionError(f"{name} has shape {list(a.shape)}, expected {list(b.shape)}")
        if not bool(torch.isfinite(a).all()):
            raise AssertionError(f"{name} is not finite")
        if compared is not None and name not in compared:
            continue
        error = relative_error(a, b)
        if not error <= tolerance:
            raise AssertionError(f"{name}: relative error {error:.3g} > {tolerance:g}")


def parse_list(text, allowed, option):
    chosen = [item for item in text.split(",") if item]
    if not chosen or any(item not in allowed for item in chosen):
        raise ValueError(f"{option} takes {', '.join(allowed)} (comma-separated), got {text!r}")
    return chosen


# ---- per layer (GPU) ----

def cudnn_runs(x, w, dy, c):
    """cuDNN's three directions: F.conv2d, and aten.convolution_backward with one output each
    (the op that autograd of F.conv2d, torch.nn.grad.conv2d_input and conv2d_weight call)."""
    args = (list(c.stride), list(c.padding), list(c.dilation))

    def backward(mask, index):
        return lambda: torch.ops.aten.convolution_backward(dy, x, w, None, *args, False, [0, 0], 1, mask)[index]
    return {"fwd": lambda: F.conv2d(x, w, None, c.stride, c.padding, c.dilation),
            "grad_input": backward([True, False, False], 0),
            "grad_weight": backward([False, True, False], 1)}


def course_runs(ops, x, w, dy, c):
    """The course's three operators, as Conv2d's forward and backward call them."""
    args = (list(c.stride), list(c.padding), list(c.dilation))
    return {"fwd": lambda: ops.conv2d(x, w, None, *args),
            "grad_input": lambda: ops.conv2d_grad_input(dy, x, w, *args),
            "grad_weight": lambda: ops.conv2d_grad_weight(dy, x, w, *args)}


def layer_inputs(c, precision, device="cuda"):
    """Seeded x, w, dy in [-1, 1) (float16: rounded, channels_last), and the float64 answers
    of the three directions from those same values (cuDNN in float64, benchmark mode off:
    no algorithm search for a reference)."""
    generator = torch.Generator(device=device).manual_seed(SEED)
    p, q = output_size(c)
    x, w, dy = (torch.rand(*shape, device=device, generator=generator) * 2 - 1
                for shape in ((c.n, c.c, c.h, c.w), (c.k, c.c, c.r, c.s), (c.n, c.k, p, q)))
    if precision == "fp16":
        x, w, dy = (t.half().contiguous(memory_format=torch.channels_last) for t in (x, w, dy))
    benchmark = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = False
    try:
        expected = {direction: run() for direction, run in
                    cudnn_runs(x.double(), w.double(), dy.double(), c).items()}
    finally:
        torch.backends.cudnn.benchmark = benchmark
    return x, w, dy, expected


def check_against(expected, rtol, atol):
    def check(got):
        torch.testing.assert_close(got.double(), expected, rtol=rtol, atol=atol)
    return check


# cuDNN's 16-bit grad-weight is checked as a whole: its reduction is the longest (N P Q
# products per element: 401,408 for the stem), and cuDNN may add parts of it in 16 bits, so
# an element's error is not bounded by a per-element float32-accumulation tolerance (the
# stem's failed one). What the baseline row must show is that it computed the right thing:
# the relative error of the whole tensor (its norm) within a few 16-bit roundings.
NORMWISE_16BIT_BOUND = 2.0 ** -7


def normwise_error(got, expected):
    """||got - expected|| / ||expected||, in float64 (0 for two zero tensors)."""
    scale = expected.norm().item()
    error = (got.double() - expected).norm().item()
    return error / scale if scale > 0 else error


def check_normwise(expected, bound):
    def check(got):
        error = normwise_error(got, expected)
        if not error <= bound:  # NaN fails too
            raise AssertionError(f"relative error of the whole tensor {error:.3g} > {bound:g}")
    return check


def bench_layer(rows, timer, layer, precision, impls, device="cuda"):
    """The rows of one layer in one precision: cuDNN's three directions, then each
    implementation's (impls: [(row name, autograd_conv module, or the exception of its build)])."""
    c = layer.case
    x, w, dy, expected = layer_inputs(c, precision, device)
    work = flops(c)
    for impl, conv in [("cudnn", None)] + impls:
        for direction in DIRECTIONS:
            name = row_name(precision, impl, c.name, direction)
            if isinstance(conv, Exception):
                rows.append({"name": name, "error": f"failed to build: {benchmarking.first_line(conv)}",
                             "label": LABELS[precision]})
                continue
            n = products(c, direction)
            if conv is None:  # cuDNN: the tolerance of conv_bench's cuDNN rows
                run = cudnn_runs(x, w, dy, c)[direction]
                atol, rtol = (conv_bench.tolerance("fp32", n) if precision == "fp32"
                              else conv_bench.tolerance_16bit("fp16", n))
                check = (check_normwise(expected[direction], NORMWISE_16BIT_BOUND)
                         if precision != "fp32" and direction == "grad_weight"
                         else check_against(expected[direction], rtol, atol))
            else:  # the course: the C++ tests' conv_tolerance (float32 sums, rounded once)
                run = course_runs(conv.ops(), x, w, dy, c)[direction]
                rtol, atol = testing.conv_tolerance(DTYPES[precision], n)
                check = check_against(expected[direction], rtol, atol)
            benchmarking.measure(rows, timer, name, run, check,
                                 TFLOPS=lambda ms, work=work: work / (ms * 1e-3) / 1e12,
                                 label=LABELS[precision], count=weight(layer, direction))
    del x, w, dy, expected
    torch.cuda.empty_cache()


def check_layer_list(torchvision):
    """resnet18_convolutions() against the convolutions torchvision's resnet18 runs (hooks);
    None when they agree, else what differs."""
    model = torchvision.models.resnet18(num_classes=NUM_CLASSES)
    found = convolutions_by_hooks(model)
    computed = resnet18_convolutions()
    if found == computed:
        return None
    for index, (a, b) in enumerate(zip(found, computed)):
        if a != b:
            return f"convolution {index}: torchvision runs {a}, the list has {b}"
    return f"torchvision runs {len(found)} convolutions, the list has {len(computed)}"


# ---- end to end (GPU, torchvision) ----

def train_step(model, images, labels):
    """One training step without the optimizer: zero the gradients (to None), forward,
    cross-entropy (float16 logits in float32), backward. Returns the logits and the loss."""
    def run():
        model.zero_grad(set_to_none=True)
        logits = model(images)
        loss = F.cross_entropy(logits.float() if logits.dtype == torch.float16 else logits, labels)
        loss.backward()
        return logits, loss
    return run


def step_results(model, result):
    logits, loss = result
    return [("logits", logits), ("loss", loss)] + [
        (f"{name}.grad", parameter.grad) for name, parameter in model.named_parameters()]


def step_inputs(batch, dtype, seed, device="cuda", image=IMAGE):
    """Seeded images in [-1, 1) of `dtype` (float16: channels_last) and labels."""
    generator = torch.Generator(device=device).manual_seed(seed)
    images = (torch.rand(batch, 3, image, image, device=device, generator=generator) * 2 - 1).to(dtype)
    if dtype == torch.float16:
        images = images.contiguous(memory_format=torch.channels_last)
    labels = torch.randint(0, NUM_CLASSES, (batch,), device=device, generator=generator)
    return images, labels


def prepared(model, dtype, device="cuda"):
    """`model` on `device` in training mode, in `dtype` (float16: model.half(), channels_last)."""
    model = model.to(device=device, dtype=dtype).train()
    if dtype == torch.float16:
        model = model.to(memory_format=torch.channels_last)
    return model


def converted(conv, base):
    """convert_module on a copy of `base`; raises unless every one of its convolutions is now
    the course's Conv2d (a model still on nn.Conv2d would time cuDNN against itself)."""
    model = conv.convert_module(copy.deepcopy(base))
    left = [name for name, module in model.named_modules() if type(module) is nn.Conv2d]
    ours = sum(isinstance(module, conv.Conv2d) for module in model.modules())
    expected = len(resnet18_convolutions())
    if left or ours != expected:
        raise RuntimeError(f"convert_module left nn.Conv2d {left} and made {ours} course Conv2d "
                           f"(ResNet-18 has {expected} convolutions)")
    return model


def check_in_float64(base, conv, device="cuda", image=IMAGE):
    """The converted copy of `base` against the twin in float64: one training step of
    CHECK_BATCH images, logits, loss and every gradient within CHECK_TOLERANCE (raises if not)."""
    images, labels = step_inputs(CHECK_BATCH, torch.float64, SEED + 1, device, image)
    twin = prepared(copy.deepcopy(base), torch.float64, device)
    ours = prepared(converted(conv, base), torch.float64, device)
    benchmark = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = False  # no algorithm search for a check
    try:
        want = dict(step_results(twin, train_step(twin, images, labels)()))
        got = step_results(ours, train_step(ours, images, labels)())
        try:
            check_step(got, want, CHECK_TOLERANCE)
        except AssertionError as error:
            raise AssertionError(f"float64 step of {CHECK_BATCH} images: {error}") from None
    finally:
        torch.backends.cudnn.benchmark = benchmark


def bench_step(rows, timer, torchvision, precision, impls, checked, device="cuda", batch=BATCH, image=IMAGE):
    """The end-to-end rows of `precision`: the twin (cuDNN) first, then each implementation's
    converted copy of the same model, checked (check_in_float64 once per implementation, kept
    in `checked`; then the first step against the twin's), then timed."""
    dtype = DTYPES[precision]
    torch.manual_seed(SEED)
    base = torchvision.models.resnet18(num_classes=NUM_CLASSES)
    images, labels = step_inputs(batch, dtype, SEED, device, image)
    twin = prepared(copy.deepcopy(base), dtype, device)
    run = train_step(twin, images, labels)
    # The twin's first step: what every converted model's first step is checked against
    # (no optimizer: the parameters stay as they are; batch normalisation normalises by the
    # batch's statistics in training mode, so its running averages change nothing here).
    want = {name: None if t is None else t.detach().clone() for name, t in step_results(twin, run())}
    counters = dict(label=STEP_LABELS[precision], iterations=timer.iterations)
    benchmarking.measure(rows, timer, step_row_name(precision, "cudnn"), run, **counters)
    del run, twin
    for impl, conv in impls:
        name = step_row_name(precision, impl)
        if isinstance(conv, Exception):
            rows.append({"name": name, "error": f"failed to build: {benchmarking.first_line(conv)}",
                         "label": STEP_LABELS[precision]})
            continue
        try:
            if impl not in checked:
                checked[impl] = None
                check_in_float64(base, conv, device, image)
            elif checked[impl] is not None:
                raise checked[impl]
            model = prepared(converted(conv, base), dtype, device)
        except Exception as error:
            checked[impl] = checked[impl] or error
            rows.append({"name": name, "error": f"wrong result or failed call: {benchmarking.first_line(error)}",
                         "label": STEP_LABELS[precision]})
            continue
        benchmarking.measure(
            rows, timer, name, train_step(model, images, labels),
            lambda result, model=model: check_step(step_results(model, result), want, STEP_TOLERANCE[precision],
                                                   compared=("logits", "loss")),
            **counters)
        del model
    torch.cuda.empty_cache()


# ---- the program ----

def parse_args():
    parser = benchmarking.argument_parser(__doc__, iterations=30, warmup=5)
    parser.add_argument("--precisions", default="fp32,fp16", help="fp32, fp16 or both (default fp32,fp16)")
    parser.add_argument("--sections", default="layers,step",
                        help="layers (each distinct convolution), step (the training step) or both")
    parser.add_argument("--filter", default="", help="only layers whose name contains this")
    parser.add_argument("--step-iterations", type=int, default=10, help="timed training steps (default 10)")
    parser.add_argument("--step-warmup", type=int, default=3, help="untimed training steps first (default 3)")
    return parser.parse_args()


def print_table(rows):
    print(f"{'row':<72} {'time (us)':>11} {'TFLOP/s':>8} {'x cuDNN':>8}")
    for row in rows:
        if "error" in row:
            print(f"{row['name']:<72} {benchmarking.describe_error(row)}")
            continue
        tflops = f"{row['TFLOPS']:>8.2f}" if "TFLOPS" in row else " " * 8
        ratio = f"{row['x_cudnn']:>8.2f}" if "x_cudnn" in row else ""
        print(f"{row['name']:<72} {row['ms'] * 1e3:>11.1f} {tflops} {ratio}")


def load_impls(include_exercise):
    """[(row name, autograd_conv module bound to its operators, or the build's exception)]."""
    import load_extension  # builds the extensions (minutes the first time)
    impls = [("course", load_extension.load_module("solution"))]
    if include_exercise:
        try:
            impls.append(("exercise", load_extension.load_module("exercise")))
        except Exception as error:  # your version does not build yet: its rows say so
            impls.append(("exercise", error))
    return impls


def main():
    args = parse_args()
    try:
        precisions = parse_list(args.precisions, PRECISIONS, "--precisions")
        sections = parse_list(args.sections, SECTIONS, "--sections")
    except ValueError as error:
        print(f"{PROGRAM}: {error}", file=sys.stderr)
        return 1
    no_gpu = benchmarking.cuda_or_exit_code(__file__)
    if no_gpu is not None:
        return no_gpu

    torch.backends.cudnn.benchmark = True  # cuDNN picks its algorithms per shape, as in training
    conv_bench.set_tf32(False)  # true float32 on both sides, both switches set explicitly
    impls = load_impls(args.include_exercise)
    torchvision, why_not = torchvision_or_reason()
    facts = benchmarking.device_facts()
    facts["cudnn"] = torch.backends.cudnn.version()
    facts["torchvision"] = torchvision.__version__ if torchvision else f"missing: {why_not}"
    facts["model"] = f"torchvision resnet18(num_classes={NUM_CLASSES}), batch {BATCH}, 3x{IMAGE}x{IMAGE}"
    facts["precision"] = ("fp32 rows: TF32 off (cudnn.allow_tf32 = matmul.allow_tf32 = False); "
                          "fp16 rows: float16 channels_last (the model by model.half())")
    layer_timer = benchmarking.Timer(args.iterations, args.warmup, flush_l2=not args.no_flush_l2)
    step_timer = benchmarking.Timer(args.step_iterations, args.step_warmup, flush_l2=False)
    rows, timing = [], []

    if "layers" in sections:
        timing.append(f"per layer: {layer_timer.describe()}")
        if torchvision is not None:  # the computed list against the model's own convolutions
            try:
                mismatch = check_layer_list(torchvision)
            except Exception as error:  # a torchvision whose resnet18 cannot be built or run
                mismatch = f"its convolutions could not be listed: {benchmarking.first_line(error)}"
            if mismatch:
                rows.append({"name": f"{family('fp32')}/layers/torchvision",
                             "error": f"the layer list is not torchvision's ResNet-18: {mismatch}"})
        layers = [layer for layer in distinct_layers(resnet18_convolutions()) if args.filter in layer.case.name]
        for precision in precisions:
            before = len(rows)
            for layer in layers:
                bench_layer(rows, layer_timer, layer, precision, impls)
            add_cudnn_ratios(rows[before:], precision)
            if not args.filter:  # a total of some layers would not be the network's
                rows += total_rows(rows, layers, precision, ["cudnn"] + [impl for impl, _ in impls])
    if "step" in sections:
        timing.append(f"training step: {step_timer.describe()}")
        if torchvision is None:
            rows += not_runnable_step_rows(precisions, [impl for impl, _ in impls], why_not)
        else:
            checked = {}  # implementation -> None, or why its float64 check failed
            for precision in precisions:
                bench_step(rows, step_timer, torchvision, precision, impls, checked)
                add_step_ratios(rows, precision, [impl for impl, _ in impls])

    print_table(rows)
    return benchmarking.finish(rows, json_path=args.json, program=__file__, timer=layer_timer, facts=facts,
                               timing="; ".join(timing), precision="fp32, TF32 off")


if __name__ == "__main__":
    sys.exit(main())
