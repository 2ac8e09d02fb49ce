#!/usr/bin/env python3
"""Benchmark for exercise m3.07: the time of one training epoch of the capstone CNN with the
course's Conv2d against its nn.Conv2d twin, on the GPU and on the CPU.

Rows (<family>/<implementation>/<device>), every one in true float32 (TF32 off: both
torch.backends.cudnn.allow_tf32 and torch.backends.cuda.matmul.allow_tf32 are set to False):
  train_epoch_fp32/cudnn_nn_conv2d/cuda   the twin on the GPU: nn.Conv2d (cuDNN, cudnn.benchmark = True)
  train_epoch_fp32/torch_nn_conv2d/cpu    the twin on the CPU: nn.Conv2d (PyTorch's CPU convolution)
  train_epoch_fp32/course/<device>        the reference capstone with the reference m3.06 Conv2d
  train_epoch_fp32/exercise/<device>      yours, with your m3.06 (with --include-exercise)
One epoch is what cnn_training.train_model does per epoch: 45 batches of 32 of the 1438
training digits (the recipe's order), each a forward, nll_loss, backward and Adam step with
the cosine schedule; the data already on the device. Before timing, each row's first step is
checked against the twin's (log-probabilities and every gradient, the tests' tolerance). A
time is the median over --iterations epochs, after --warmup epochs: between CUDA events on the
GPU (no L2 flush: an epoch is thousands of small kernels, and the whole model and data fit in
L2 anyway), by the host's clock on the CPU (with torch.get_num_threads() threads, in the
JSON's context).

What the numbers mean: at 8x8 images and 8 or 16 channels every kernel is tiny, so a GPU epoch
is launch-bound, on both sides: the ratio measures launches and Python overhead per layer
more than convolution speed. On the CPU the arithmetic counts more: the course's CPU kernels
are plain loops (m3.06's autograd_conv.cpp) against PyTorch's vectorised, multi-threaded
convolution. m3.06's benchmark (bench_autograd_conv.py) compares the convolutions on ResNet
layers, where the arithmetic dominates.

  python3 month3/07_capstone_cnn/bench_capstone_cnn.py [--devices cuda,cpu] [--include-exercise] [--json out.json]

Exits with status 2 and a one-line explanation when --devices includes cuda (the default) and
there is no CUDA GPU.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "common", "python"))

import torch  # noqa: E402

from course_harness import benchmarking  # noqa: E402

PROGRAM = os.path.basename(__file__)
# The twin's row on each device: cuDNN's convolutions on the GPU, PyTorch's own on the CPU.
TWIN_ROW = {"cuda": "cudnn_nn_conv2d", "cpu": "torch_nn_conv2d"}


def parse_args():
    parser = benchmarking.argument_parser(__doc__, iterations=10, warmup=2, unit="epochs", flush_option=False)
    parser.add_argument("--devices", default="cuda,cpu",
                        help="where to train, in this order: cuda, cpu or both (default cuda,cpu)")
    return parser.parse_args()


def epoch_runner(capstone, model, data, config):
    """One epoch of the recipe, as a function of no arguments (the optimizer state carries on)."""
    import cnn_training
    n = len(data.x_train)
    batches = -(-n // config.batch_size)
    optimizer, schedule = cnn_training.make_optimizer(model, config, 10 ** 9)  # a flat schedule
    orders = cnn_training.batch_orders(n, cnn_training.Config(epochs=10 ** 6, seed=config.seed))
    model.train()

    def run():
        order = [index.to(data.x_train.device) for index in next(orders)]
        assert len(order) == batches
        loss = None
        for index in order:
            loss = capstone.train_step(model, optimizer, data.x_train[index], data.y_train[index])
            schedule.step()
        return loss
    return run


def check_first_step(model, twin, data, config):
    """The tests' check (test_capstone_cnn.py): log-probabilities, loss and every gradient of
    the first batch equal the twin's within rtol 1e-4, atol 1e-4 of the tensor's largest value."""
    import cnn_training
    images, labels = cnn_training.first_batch(data, config)
    ours = cnn_training.forward_backward(model, images, labels)
    theirs = cnn_training.forward_backward(twin, images, labels)
    pairs = [("log-probabilities", ours[0], theirs[0]), ("loss", ours[1], theirs[1])]
    pairs += [(f"{k}.grad", ours[2].get(k), theirs[2][k]) for k in theirs[2]]
    for what, got, want in pairs:
        if got is None:
            raise AssertionError(f"first step: {what} is missing")
        torch.testing.assert_close(got, want, rtol=1e-4, atol=max(1e-4 * float(want.abs().max()), 1e-7),
                                   msg=lambda m, what=what: f"first step, {what}: {m}")
    model.zero_grad(set_to_none=True)
    twin.zero_grad(set_to_none=True)


def time_on(device, timer, impls, capstone_for, rows):
    """Appends the rows of one device: the twin first (the baseline), then each implementation,
    each from the same initial state_dict and checked against the twin's first step."""
    import cnn_training
    config = cnn_training.Config(device=device)
    data = cnn_training.load_data().to(device)
    twin_row = f"train_epoch_fp32/{TWIN_ROW[device]}/{device}"
    twin_done = False
    for row_impl, impl in impls:
        name = f"train_epoch_fp32/{row_impl}/{device}"
        try:
            capstone, conv2d = capstone_for(impl)
            model, twin = capstone.make_twins(conv2d, config.channels, config.seed)
        except Exception as error:
            rows.append({"name": name, "error": f"failed to build: {benchmarking.first_line(error)}"})
            continue
        model, twin = model.to(device), twin.to(device)
        if not twin_done:  # the baseline row first
            benchmarking.measure(rows, timer, twin_row, epoch_runner(capstone, twin, data, config))
            twin_done = True
            twin.load_state_dict(model.state_dict())  # back to the shared initial state
        try:  # verify, then time: the first step against the twin's, before any training
            check_first_step(model, twin, data, config)
        except Exception as error:
            rows.append({"name": name, "error": f"wrong result or failed call: {benchmarking.first_line(error)}"})
            continue
        benchmarking.measure(rows, timer, name, epoch_runner(capstone, model, data, config))


def main():
    args = parse_args()
    devices = [d for d in args.devices.split(",") if d]
    unknown = [d for d in devices if d not in TWIN_ROW]
    if unknown or not devices:
        print(f"{PROGRAM}: --devices takes cuda and/or cpu, got {args.devices!r}", file=sys.stderr)
        return 1
    if "cuda" in devices:
        no_gpu = benchmarking.cuda_or_exit_code(__file__)
        if no_gpu is not None:
            return no_gpu
    import cnn_training
    import load_extension  # builds m3.06's extensions (minutes the first time)

    ok, why = cnn_training.sklearn_status()
    if not ok:
        print(f"{PROGRAM}: {why}", file=sys.stderr)
        return 1
    cnn_training.set_fp32_precision()
    torch.backends.cudnn.benchmark = True  # the twin as one would train it: cuDNN picks per shape
    torch.backends.cudnn.deterministic = False
    impls = [("course", "solution")] + ([("exercise", "exercise")] if args.include_exercise else [])
    loaded = {}

    def capstone_for(impl):
        if impl not in loaded:
            loaded[impl] = (load_extension.load_capstone(impl), load_extension.load_conv2d(impl))
        return loaded[impl]

    facts = benchmarking.device_facts() if "cuda" in devices else {}
    if "cuda" in devices:
        facts["cudnn"] = torch.backends.cudnn.version()
    facts["cpu_threads"] = torch.get_num_threads()
    facts["precision"] = "fp32, TF32 off (cudnn.allow_tf32 = matmul.allow_tf32 = False)"
    config = cnn_training.Config()
    facts["model"] = (f"digits 8x8, conv 1->{config.channels[0]}->{config.channels[1]} 3x3, batch "
                      f"{config.batch_size}, Adam")
    timers = {"cuda": lambda: benchmarking.Timer(args.iterations, args.warmup, flush_l2=False),
              "cpu": lambda: benchmarking.HostTimer(args.iterations, args.warmup)}
    rows, timing = [], []
    for device in devices:
        timer = timers[device]()
        timing.append(f"{device}: {timer.describe()}")
        time_on(device, timer, impls, capstone_for, rows)

    print(f"{'row':<40} {'epoch (ms)':>11} {'x nn.Conv2d':>12}")
    for row in rows:
        if "error" in row:
            print(f"{row['name']:<40} {benchmarking.describe_error(row)}")
            continue
        device = row["name"].rsplit("/", 1)[1]
        baseline = next((r["ms"] for r in rows if r["name"] == f"train_epoch_fp32/{TWIN_ROW[device]}/{device}"
                         and "ms" in r), None)
        ratio = f"{row['ms'] / baseline:>12.2f}" if baseline else ""
        print(f"{row['name']:<40} {row['ms']:>11.2f} {ratio}")
    return benchmarking.finish(rows, json_path=args.json, program=__file__, timer=timer, facts=facts,
                               timing="; ".join(timing), precision="fp32, TF32 off")


if __name__ == "__main__":
    sys.exit(main())
