#!/usr/bin/env python3
"""Exercise m3.07: trains the capstone CNN with the course's Conv2d and its nn.Conv2d twin, from
the same initial state_dict, on scikit-learn's digits; prints both accuracies and times and
writes the loss and accuracy curves.

    python3 month3/07_capstone_cnn/train.py                       # yours, on the CPU, 15 epochs
    python3 month3/07_capstone_cnn/train.py --impl solution --device cuda --epochs 30 \\
        --plot curves.png

--impl exercise (the default, or COURSE_IMPL) trains YOUR capstone_cnn.py with YOUR m3.06
Conv2d; COURSE_EARLIER_KERNELS=solution swaps in the reference Conv2d (load_extension.py).
The picture needs matplotlib; without it, --plot writes the same numbers as a text table
(the path with .txt). Every epoch is also printed as a line, so the run reads without either.
Times are the training alone (the evaluation after each epoch is not counted), the GPU
synchronised before each clock reading. Exit status: 0 when the bar is met (the course
model's final test accuracy >= 97% and within 1 point of the twin's), 1 when not, 2 for a
bad option.
"""
import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import load_extension  # noqa: E402  (puts common/python on the path)
import cnn_training  # noqa: E402
from course_harness import paths  # noqa: E402


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--impl", choices=paths.IMPLS, default=os.environ.get("COURSE_IMPL", "exercise"),
                        help="whose capstone_cnn.py (and m3.06): exercise (yours, default) or solution")
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--epochs", type=int, default=cnn_training.DEFAULT_EPOCHS,
                        help=f"epochs (default {cnn_training.DEFAULT_EPOCHS}; the bar allows up to "
                             f"{cnn_training.MAX_BAR_EPOCHS})")
    parser.add_argument("--batch-size", type=int, default=cnn_training.Config.batch_size)
    parser.add_argument("--lr", type=float, default=cnn_training.Config.lr, help="Adam's peak learning rate")
    parser.add_argument("--channels", type=int, nargs=2, default=list(cnn_training.Config.channels),
                        metavar=("C1", "C2"), help="the two convolutions' output channels (default 8 16)")
    parser.add_argument("--seed", type=int, default=cnn_training.Config.seed,
                        help="the initial state_dict and the batch order (the split is fixed)")
    parser.add_argument("--plot", metavar="PATH", help="write the curves here (.png; .txt without matplotlib)")
    parser.add_argument("--quiet", action="store_true", help="no per-epoch lines")
    args = parser.parse_args(argv)
    config = cnn_training.Config(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
                                 channels=tuple(args.channels), seed=args.seed, device=args.device)
    try:
        config.check()
    except ValueError as error:
        parser.error(str(error))  # exits 2
    return args, config


def main(argv=None):
    args, config = parse_args(sys.argv[1:] if argv is None else argv)
    ok, why = cnn_training.sklearn_status()
    if not ok:
        print(f"train.py: {why}", file=sys.stderr)
        return 2
    import torch
    torch.manual_seed(config.seed)
    print(f"train.py: {load_extension.describe(args.impl)}; {config}")
    print(f"train.py: torch {torch.__version__}, {torch.get_num_threads()} CPU threads"
          + (f", {torch.cuda.get_device_name()}" if config.device.startswith("cuda") else ""))
    try:
        conv2d = load_extension.load_conv2d(args.impl)
        capstone = load_extension.load_capstone(args.impl)
        result = cnn_training.train_twins(capstone, conv2d, config,
                                          progress=cnn_training.Progress(enabled=not args.quiet))
    except NotImplementedError as error:
        if "TODO(" not in str(error):
            raise
        print(f"train.py: {str(error).splitlines()[0]}. Fill it in, then run "
              "./course grade m3_07 (COURSE_EARLIER_KERNELS=solution: with the reference m3.06)",
              file=sys.stderr)
        return 1

    print()
    print(cnn_training.curves_table(result))
    print()
    course, twin = result.course, result.twin
    for name, history in (("course Conv2d", course), ("nn.Conv2d twin", twin)):
        per_epoch = sorted(history.epoch_seconds)[len(history.epoch_seconds) // 2]
        print(f"{name:>15}: test accuracy {history.accuracy[-1]:6.2f}% (best {max(history.accuracy):.2f}%), "
              f"training {history.train_seconds:.2f} s on {config.device} "
              f"(median epoch {per_epoch * 1e3:.1f} ms; the first includes warm-up)")
    gap = course.accuracy[-1] - twin.accuracy[-1]
    met = (course.accuracy[-1] >= cnn_training.BAR_ACCURACY and abs(gap) <= cnn_training.BAR_TWIN_POINTS
           and config.epochs <= cnn_training.MAX_BAR_EPOCHS)
    print(f"the bar (>= {cnn_training.BAR_ACCURACY:g}% within {cnn_training.MAX_BAR_EPOCHS} epochs, within "
          f"{cnn_training.BAR_TWIN_POINTS:g} point of the twin): {'met' if met else 'NOT met'} "
          f"(course - twin = {gap:+.2f} points)")
    if args.plot:
        title = (f"m3.07 capstone: digits 8x8, channels {config.channels}, batch {config.batch_size}, "
                 f"{config.device}, fp32 (TF32 off)")
        written = cnn_training.write_curves(result, args.plot, title)
        note = "" if written == args.plot else " (matplotlib is not installed: a text table instead)"
        print(f"train.py: wrote {written}{note}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
