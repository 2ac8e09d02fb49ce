#!/usr/bin/env python3
"""Unit tests of m3.06's ResNet-18 benchmark (month3/06_autograd_conv/bench_resnet18.py), on
the CPU: its list of ResNet-18's convolutions, the weighted totals, the row names as
tools/run_benchmarks.py tables them, its results id, the cuDNN and course calls' arguments, the
end-to-end check, and what it reports without torchvision or without a GPU. Needs PyTorch
(ctest runs it with the Python the exercises' tests use, and skips it without one)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "month3" / "06_autograd_conv" / "bench_resnet18.py"
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(SCRIPT.parent))
sys.path.insert(0, str(ROOT / "common" / "python"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import bench_resnet18 as bench  # noqa: E402
import run_benchmarks  # noqa: E402
from course_harness import benchmarking  # noqa: E402

# ResNet-18's distinct convolutions at 224 x 224: name, (C, H, K, R, stride, padding), count.
EXPECTED_LAYERS = [
    ("stem_C3_224_K64_7x7_s2", (3, 224, 64, 7, 2, 3), 1),
    ("layer1_C64_56_K64_3x3", (64, 56, 64, 3, 1, 1), 4),
    ("layer2_C64_56_K128_3x3_s2", (64, 56, 128, 3, 2, 1), 1),
    ("layer2_C128_28_K128_3x3", (128, 28, 128, 3, 1, 1), 3),
    ("layer2_down_C64_56_K128_1x1_s2", (64, 56, 128, 1, 2, 0), 1),
    ("layer3_C128_28_K256_3x3_s2", (128, 28, 256, 3, 2, 1), 1),
    ("layer3_C256_14_K256_3x3", (256, 14, 256, 3, 1, 1), 3),
    ("layer3_down_C128_28_K256_1x1_s2", (128, 28, 256, 1, 2, 0), 1),
    ("layer4_C256_14_K512_3x3_s2", (256, 14, 512, 3, 2, 1), 1),
    ("layer4_C512_7_K512_3x3", (512, 7, 512, 3, 1, 1), 3),
    ("layer4_down_C256_14_K512_1x1_s2", (256, 14, 512, 1, 2, 0), 1),
]


class BasicBlock(nn.Module):
    """torchvision's BasicBlock, written out here so that the hooks can be tested without it."""

    def __init__(self, inplanes, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False),
                                            nn.BatchNorm2d(planes))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + (x if self.downsample is None else self.downsample(x)))


class ResNet18(nn.Module):
    """torchvision.models.resnet18's modules and names (conv1, layer1.0.conv1, ...)."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        inplanes = 64
        for stage, planes in enumerate((64, 128, 256, 512), start=1):
            stride = 1 if stage == 1 else 2
            setattr(self, f"layer{stage}", nn.Sequential(BasicBlock(inplanes, planes, stride),
                                                         BasicBlock(planes, planes, 1)))
            inplanes = planes
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def timed_rows(precision, impls, ms_of):
    """Rows of every layer and direction, ms_of(impl, layer index, direction) each."""
    rows = []
    for impl in impls:
        for index, layer in enumerate(bench.distinct_layers(bench.resnet18_convolutions())):
            for direction in bench.DIRECTIONS:
                rows.append({"name": bench.row_name(precision, impl, layer.case.name, direction),
                             "ms": ms_of(impl, index, direction)})
    return rows


class LayerListTest(unittest.TestCase):
    def test_resnet18_has_20_convolutions_in_forward_order(self):
        convs = bench.resnet18_convolutions()
        self.assertEqual(len(convs), 20)
        self.assertEqual(convs[0].module, "conv1")
        self.assertEqual([c.module for c in convs[1:6]],
                         ["layer1.0.conv1", "layer1.0.conv2", "layer1.1.conv1", "layer1.1.conv2",
                          "layer2.0.conv1"])
        self.assertEqual(convs[7].module, "layer2.0.downsample.0")
        self.assertEqual(convs[-1].module, "layer4.1.conv2")
        self.assertTrue(all(c.case.n == 32 and c.case.h == c.case.w for c in convs))
        self.assertTrue(all(c.case.dilation == (1, 1) for c in convs))

    def test_each_convolution_reads_what_the_one_before_wrote(self):
        convs = bench.resnet18_convolutions()
        main_path = [c.case for c in convs if "downsample" not in c.module]
        self.assertEqual(bench.output_size(main_path[0]), (112, 112))
        self.assertEqual(main_path[1].h, 56)  # after the 3x3 stride-2 max-pool
        for before, after in zip(main_path[1:], main_path[2:]):
            self.assertEqual((after.c, after.h), (before.k, bench.output_size(before)[0]))
        for conv in convs:  # the shortcut's output has the shape of its block's output
            if "downsample" in conv.module:
                block = conv.module[: -len(".downsample.0")]
                second = next(c.case for c in convs if c.module == f"{block}.conv2")
                self.assertEqual((conv.case.k,) + bench.output_size(conv.case),
                                 (second.k,) + bench.output_size(second))

    def test_the_distinct_layers_their_shapes_and_counts(self):
        layers = bench.distinct_layers(bench.resnet18_convolutions())
        got = [(layer.case.name, (layer.case.c, layer.case.h, layer.case.k, layer.case.r,
                                  layer.case.stride[0], layer.case.padding[0]), layer.count)
               for layer in layers]
        self.assertEqual(got, EXPECTED_LAYERS)
        self.assertEqual(sum(layer.count for layer in layers), 20)
        self.assertEqual([layer.input_is_image for layer in layers], [True] + [False] * 10)
        self.assertEqual(layers[1].modules, ["layer1.0.conv1", "layer1.0.conv2", "layer1.1.conv1",
                                             "layer1.1.conv2"])
        self.assertEqual(layers[3].modules, ["layer2.0.conv2", "layer2.1.conv1", "layer2.1.conv2"])

    def test_the_hooks_see_the_computed_list_in_a_model_built_like_torchvision(self):
        model = ResNet18()
        self.assertEqual(bench.convolutions_by_hooks(model, batch=2, image=64),
                         bench.resnet18_convolutions(batch=2, image=64))
        self.assertTrue(model.training)  # left as it was
        self.assertFalse(any(m._forward_hooks for m in model.modules()))  # hooks removed

    @unittest.skipUnless(bench.torchvision_or_reason()[0], "torchvision is not installed")
    def test_torchvision_resnet18_has_the_computed_list(self):
        self.assertIsNone(bench.check_layer_list(bench.torchvision_or_reason()[0]))

    def test_weights_leave_out_the_stems_grad_input(self):
        stem, layer1 = bench.distinct_layers(bench.resnet18_convolutions())[:2]
        self.assertEqual([bench.weight(stem, d) for d in bench.DIRECTIONS], [1, 0, 1])
        self.assertEqual([bench.weight(layer1, d) for d in bench.DIRECTIONS], [4, 4, 4])

    def test_work_and_products(self):
        layer1 = bench.distinct_layers(bench.resnet18_convolutions())[1].case
        self.assertEqual(bench.flops(layer1), 2.0 * 32 * 64 * 56 * 56 * 64 * 9)
        self.assertEqual([bench.products(layer1, d) for d in bench.DIRECTIONS], [576, 576, 32 * 56 * 56])
        stem = bench.distinct_layers(bench.resnet18_convolutions())[0].case
        self.assertEqual([bench.products(stem, d) for d in bench.DIRECTIONS], [147, 64 * 49, 32 * 112 * 112])


class TotalsTest(unittest.TestCase):
    def setUp(self):
        self.layers = bench.distinct_layers(bench.resnet18_convolutions())
        speed = {"cudnn": 1.0, "course": 2.5}
        self.ms = lambda impl, index, direction: speed[impl] * (index + 1) * (1 + bench.DIRECTIONS.index(direction))
        self.rows = timed_rows("fp32", ["cudnn", "course"], self.ms)

    def total(self, totals, impl, direction):
        return next(r for r in totals if r["name"] == f"resnet18_conv_fp32/{impl}/weighted_total/{direction}")

    def test_a_total_is_count_times_median_summed_over_the_layers(self):
        totals = bench.total_rows(self.rows, self.layers, "fp32", ["cudnn", "course"])
        self.assertEqual(len(totals), 2 * 4)
        for impl in ("cudnn", "course"):
            for d, direction in enumerate(bench.DIRECTIONS):
                want = sum(layer.count * self.ms(impl, i, direction) for i, layer in enumerate(self.layers)
                           if not (i == 0 and direction == "grad_input"))
                row = self.total(totals, impl, direction)
                self.assertAlmostEqual(row["ms"], want)
                work = sum(bench.weight(layer, direction) * bench.flops(layer.case) for layer in self.layers)
                self.assertAlmostEqual(row["TFLOPS"], work / (want * 1e-3) / 1e12)
            every = sum(self.total(totals, impl, d)["ms"] for d in bench.DIRECTIONS)
            self.assertAlmostEqual(self.total(totals, impl, "all")["ms"], every)

    def test_the_stems_grad_input_changes_no_total(self):
        before = bench.total_rows(self.rows, self.layers, "fp32", ["cudnn"])
        stem = bench.row_name("fp32", "cudnn", self.layers[0].case.name, "grad_input")
        changed = [dict(r, ms=1e6) if r["name"] == stem else r for r in self.rows]
        after = bench.total_rows(changed, self.layers, "fp32", ["cudnn"])
        self.assertEqual([r["ms"] for r in before], [r["ms"] for r in after])

    def test_the_course_rows_carry_their_ratio_to_cudnn(self):
        totals = bench.total_rows(self.rows, self.layers, "fp32", ["cudnn", "course"])
        for direction in bench.DIRECTIONS + ("all",):
            self.assertAlmostEqual(self.total(totals, "course", direction)["x_cudnn"], 2.5)
            self.assertNotIn("x_cudnn", self.total(totals, "cudnn", direction))
        bench.add_cudnn_ratios(self.rows, "fp32")
        course = [r for r in self.rows if "/course/" in r["name"]]
        self.assertEqual(len(course), 33)
        for row in course:
            self.assertAlmostEqual(row["x_cudnn"], 2.5)

    def test_a_total_without_a_layers_time_has_none(self):
        failed = bench.row_name("fp32", "course", self.layers[3].case.name, "grad_weight")
        rows = [{"name": r["name"], "error": "wrong result or failed call: x"} if r["name"] == failed else r
                for r in self.rows]
        totals = bench.total_rows(rows, self.layers, "fp32", ["cudnn", "course"])
        self.assertIn("ms", self.total(totals, "course", "fwd"))
        for direction in ("grad_weight", "all"):
            row = self.total(totals, "course", direction)
            self.assertNotIn("ms", row)
            self.assertIn(failed, row["error"])
            self.assertFalse(benchmarking.is_not_runnable(row))
        not_runnable = benchmarking.NOT_RUNNABLE + "needs compute capability 9.0"
        rows = [{"name": r["name"], "error": not_runnable} if r["name"] == failed else r for r in self.rows]
        row = self.total(bench.total_rows(rows, self.layers, "fp32", ["course"]), "course", "all")
        self.assertTrue(benchmarking.is_not_runnable(row))
        missing = [r for r in self.rows if r["name"] != failed]
        self.assertNotIn("ms", self.total(bench.total_rows(missing, self.layers, "fp32", ["course"]), "course", "all"))


class RowNamesTest(unittest.TestCase):
    def test_rows_name_the_precision_and_group_by_layer_and_direction(self):
        name = bench.row_name("fp16", "course", "layer1_C64_56_K64_3x3", "grad_input")
        self.assertEqual(name, "resnet18_conv_fp16/course/layer1_C64_56_K64_3x3/grad_input")
        self.assertEqual(run_benchmarks.split_name(name),
                         ("resnet18_conv_fp16", "course", "layer1_C64_56_K64_3x3/grad_input"))
        self.assertIn("cudnn", run_benchmarks.BASELINES)  # cuDNN's rows are each group's baseline
        self.assertEqual(bench.step_row_name("fp32", "cudnn"), "resnet18_train_step_fp32/cudnn/batch32_224x224")
        self.assertEqual(bench.step_row_name("fp16", "course"),
                         "resnet18_train_step_fp16/course/batch32_224x224_model_half_channels_last")

    def test_the_table_compares_each_row_with_cudnn(self):
        layers = bench.distinct_layers(bench.resnet18_convolutions())
        rows = timed_rows("fp32", ["cudnn", "course"], lambda impl, i, d: 2.0 if impl == "course" else 1.0)
        for row in rows:
            row["TFLOPS"] = 1.0 / row["ms"]
            row["label"] = bench.LABELS["fp32"]
        rows += bench.total_rows(rows, layers, "fp32", ["cudnn", "course"])
        rows += bench.not_runnable_step_rows(["fp32"], ["course"], "no torchvision")
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "m3_06_autograd_conv_resnet18.json"
            benchmarking.write_json(str(path), rows, program=str(SCRIPT), facts={}, timing="median")
            table = run_benchmarks.markdown_table(json.loads(path.read_text()))
        line = next(l for l in table.splitlines() if "resnet18_conv_fp32/course" in l and "layer1_C64_56_K64_3x3/fwd" in l)
        self.assertIn("50.0% of cudnn", line)
        line = next(l for l in table.splitlines() if "resnet18_conv_fp32/course" in l and "weighted_total/all" in l)
        self.assertIn("50.0% of cudnn", line)
        self.assertIn("not runnable", next(l for l in table.splitlines() if "resnet18_train_step_fp32/course" in l))

    def test_the_results_id_is_its_own(self):
        self.assertEqual(run_benchmarks.python_benchmark_id(SCRIPT), "m3_06_autograd_conv_resnet18")
        self.assertEqual(run_benchmarks.python_benchmark_id(SCRIPT.parent / "bench_autograd_conv.py"),
                         "m3_06_autograd_conv")
        scripts = run_benchmarks.find_python_benchmarks(ROOT, "")
        ids = [run_benchmarks.python_benchmark_id(path) for path in scripts]
        self.assertEqual(len(ids), len(set(ids)), ids)  # no two write the same results file
        self.assertEqual(run_benchmarks.find_python_benchmarks(ROOT, "m3_06_autograd_conv_resnet18"), [SCRIPT])


class CallsTest(unittest.TestCase):
    """The arguments of cuDNN's and the course's calls, checked on the CPU in float64."""

    def setUp(self):
        generator = torch.Generator().manual_seed(5)
        self.case = bench.case("c", 2, 3, 9, 8, 4, 3, 3, 2, 1)
        p, q = bench.output_size(self.case)
        self.x, self.w, self.dy = (torch.rand(*s, generator=generator, dtype=torch.float64) * 2 - 1
                                   for s in ((2, 3, 9, 8), (4, 3, 3, 3), (2, 4, p, q)))

    def test_cudnn_runs_are_the_autograd_of_conv2d(self):
        x, w = self.x.clone().requires_grad_(), self.w.clone().requires_grad_()
        y = F.conv2d(x, w, None, 2, 1)
        dx, dw = torch.autograd.grad(y, (x, w), self.dy)
        runs = bench.cudnn_runs(self.x, self.w, self.dy, self.case)
        torch.testing.assert_close(runs["fwd"](), y.detach())
        torch.testing.assert_close(runs["grad_input"](), dx)
        torch.testing.assert_close(runs["grad_weight"](), dw)

    def test_course_runs_call_the_operators_as_the_backward_does(self):
        calls = []

        class Ops:
            def __getattr__(self, op):
                return lambda *args: calls.append((op, args))

        for run in bench.course_runs(Ops(), self.x, self.w, self.dy, self.case).values():
            run()
        lists = ([2, 2], [1, 1], [1, 1])
        self.assertEqual([c[0] for c in calls], ["conv2d", "conv2d_grad_input", "conv2d_grad_weight"])
        self.assertTrue(calls[0][1][0] is self.x and calls[0][1][1] is self.w and calls[0][1][2] is None)
        self.assertEqual(calls[0][1][3:], lists)
        for _, args in calls[1:]:
            self.assertTrue(args[0] is self.dy and args[1] is self.x and args[2] is self.w)
            self.assertEqual(args[3:], lists)


def fake_autograd_conv(error=0.0, skip=0):
    """A stand-in for autograd_conv (Conv2d, convert_module) on the CPU: its Conv2d is
    nn.Conv2d plus `error` times its output mirrored left to right (a mistake that batch
    normalisation cannot hide, as it would a scale); convert_module leaves the first `skip`
    convolutions alone."""
    class Conv2d(nn.Conv2d):
        def forward(self, x):
            y = super().forward(x)
            return y + error * y.flip(-1) if error else y

    def convert_module(module):
        left = [skip]

        def convert(parent):
            for name, child in parent.named_children():
                if type(child) is nn.Conv2d:
                    if left[0] > 0:
                        left[0] -= 1
                        continue
                    made = Conv2d(child.in_channels, child.out_channels, child.kernel_size, child.stride,
                                  child.padding, bias=child.bias is not None)
                    made.load_state_dict(child.state_dict())
                    setattr(parent, name, made)
                else:
                    convert(child)
        convert(module)
        return module
    return type("FakeAutogradConv", (), {"Conv2d": Conv2d, "convert_module": staticmethod(convert_module)})


class StepCheckTest(unittest.TestCase):
    def test_the_first_step_check(self):
        want = {"logits": torch.ones(4, 3), "w.grad": torch.arange(6.0)}
        good = [("logits", torch.ones(4, 3) * (1 + 1e-4)), ("w.grad", torch.arange(6.0))]
        bench.check_step(good, want, 1e-3)
        with self.assertRaisesRegex(AssertionError, "w.grad: relative error"):
            bench.check_step([good[0], ("w.grad", -torch.arange(6.0))], want, 1e-3)
        bench.check_step([good[0], ("w.grad", -torch.arange(6.0))], want, 1e-3, compared=("logits",))
        with self.assertRaisesRegex(AssertionError, "logits: relative error"):
            bench.check_step([("logits", torch.ones(4, 3) * 1.1), good[1]], want, 1e-3, compared=("logits",))
        with self.assertRaisesRegex(AssertionError, "w.grad is missing"):
            bench.check_step([good[0], ("w.grad", None)], want, 1e-3, compared=("logits",))
        with self.assertRaisesRegex(AssertionError, "w.grad is not finite"):
            bench.check_step([good[0], ("w.grad", torch.full((6,), float("nan")))], want, 1e-3, compared=())
        with self.assertRaisesRegex(AssertionError, "shape"):
            bench.check_step([good[0], ("w.grad", torch.arange(5.0))], want, 1e-3)
        with self.assertRaisesRegex(AssertionError, "expected"):
            bench.check_step(good[:1], want, 1e-3)
        self.assertEqual(bench.relative_error(torch.zeros(3), torch.zeros(3)), 0.0)

    def test_the_float64_check_of_the_converted_model(self):
        torch.manual_seed(1)
        base = ResNet18(num_classes=bench.NUM_CLASSES)
        bench.check_in_float64(base, fake_autograd_conv(), device="cpu", image=32)
        self.assertTrue(all(type(m) is nn.Conv2d for m in base.modules() if isinstance(m, nn.Conv2d)))
        with self.assertRaisesRegex(AssertionError, "float64 step of 4 images: .* relative error"):
            bench.check_in_float64(base, fake_autograd_conv(error=1e-5), device="cpu", image=32)
        with self.assertRaisesRegex(RuntimeError, r"convert_module left nn.Conv2d \['conv1'\] and made 19"):
            bench.converted(fake_autograd_conv(skip=1), base)

    def test_train_step_and_its_results(self):
        torch.manual_seed(2)
        model = bench.prepared(ResNet18(num_classes=bench.NUM_CLASSES), torch.float32, "cpu")
        images, labels = bench.step_inputs(2, torch.float32, 7, device="cpu", image=32)
        self.assertEqual((tuple(images.shape), tuple(labels.shape)), ((2, 3, 32, 32), (2,)))
        self.assertTrue(bool((images >= -1).all() and (images < 1).all()))
        logits, loss = bench.train_step(model, images, labels)()
        torch.testing.assert_close(loss, F.cross_entropy(logits, labels))
        results = bench.step_results(model, (logits, loss))
        self.assertEqual([name for name, _ in results[:3]], ["logits", "loss", "conv1.weight.grad"])
        self.assertEqual(len(results), 2 + len(list(model.parameters())))
        self.assertTrue(all(t is not None for _, t in results))


class FakeOps:
    """The course's operators as torch.ops sees them, computed by PyTorch (float32 on the CPU),
    the forward off by a relative `error`."""

    def __init__(self, error=0.0):
        self.error = error

    def conv2d(self, x, w, bias, stride, padding, dilation):
        return F.conv2d(x, w, bias, stride, padding, dilation) * (1 + self.error)

    def conv2d_grad_input(self, dy, x, w, stride, padding, dilation):
        return torch.nn.grad.conv2d_input(x.shape, w, dy, stride, padding, dilation)

    def conv2d_grad_weight(self, dy, x, w, stride, padding, dilation):
        return torch.nn.grad.conv2d_weight(x, w.shape, dy, stride, padding, dilation)


class NormwiseCheckTest(unittest.TestCase):
    def test_the_whole_tensors_relative_error(self):
        expected = torch.tensor([3.0, -4.0], dtype=torch.float64)  # norm 5
        self.assertEqual(bench.normwise_error(expected.float(), expected), 0.0)
        self.assertAlmostEqual(bench.normwise_error(torch.tensor([3.0, -3.0]), expected), 0.2)
        check = bench.check_normwise(expected, 0.1)
        check(torch.tensor([3.0, -3.9]))  # error 0.02
        with self.assertRaisesRegex(AssertionError, "0.2 > 0.1"):
            check(torch.tensor([3.0, -3.0]))
        with self.assertRaises(AssertionError):
            check(torch.tensor([float("nan"), -4.0]))

    def test_one_wrong_element_of_a_large_tensor_fails(self):
        generator = torch.Generator().manual_seed(7)
        expected = torch.rand(64, 3, 7, 7, generator=generator, dtype=torch.float64) * 400 - 200
        wrong = expected.clone()
        wrong[5, 1, 3, 3] = -wrong[5, 1, 3, 3] + 2000.0  # one element far off
        with self.assertRaises(AssertionError):
            bench.check_normwise(expected, bench.NORMWISE_16BIT_BOUND)(wrong)
        rounded = expected.half().double()  # one 16-bit rounding per element passes
        bench.check_normwise(expected, bench.NORMWISE_16BIT_BOUND)(rounded)


class PipelineTest(unittest.TestCase):
    """bench_layer and bench_step end to end on the CPU (host timer, small shapes, PyTorch's
    own convolutions in place of cuDNN's and the course's): rows, checks, counts and ratios."""

    def test_a_layers_rows_are_checked_then_timed(self):
        layers = bench.distinct_layers(bench.resnet18_convolutions(batch=2, image=32))
        stem, layer2_down = layers[0], layers[4]
        self.assertEqual(stem.case.name, "stem_C3_32_K64_7x7_s2")
        good = type("Good", (), {"ops": staticmethod(lambda: FakeOps())})
        bad = type("Bad", (), {"ops": staticmethod(lambda: FakeOps(error=1e-3))})
        timer = benchmarking.HostTimer(iterations=2, warmup=1)
        rows = []
        for layer in (stem, layer2_down):
            bench.bench_layer(rows, timer, layer, "fp32",
                              [("course", good), ("exercise", bad), ("broken", RuntimeError("no nvcc"))], device="cpu")
        self.assertEqual(len(rows), 2 * 4 * 3)
        by_name = {r["name"]: r for r in rows}
        for layer in (stem, layer2_down):
            for direction in bench.DIRECTIONS:
                for impl in ("cudnn", "course"):
                    row = by_name[bench.row_name("fp32", impl, layer.case.name, direction)]
                    self.assertIn("ms", row, row.get("error"))
                    self.assertEqual(row["count"], bench.weight(layer, direction))
                    self.assertEqual(row["label"], "fp32, TF32 off")
                bad_row = by_name[bench.row_name("fp32", "exercise", layer.case.name, direction)]
                self.assertEqual("ms" in bad_row, direction != "fwd", bad_row)
                broken = by_name[bench.row_name("fp32", "broken", layer.case.name, direction)]
                self.assertEqual(broken["error"], "failed to build: RuntimeError: no nvcc")
        self.assertEqual(by_name[bench.row_name("fp32", "course", stem.case.name, "grad_input")]["count"], 0)

    def test_the_training_step_rows(self):
        torchvision = type("FakeTorchvision", (), {"models": type("Models", (), {
            "resnet18": staticmethod(lambda num_classes: ResNet18(num_classes))})})
        timer = benchmarking.HostTimer(iterations=1, warmup=0)
        rows, checked = [], {}
        impls = [("course", fake_autograd_conv()), ("exercise", fake_autograd_conv(error=1e-3)),
                 ("skipped", fake_autograd_conv(skip=2))]
        bench.bench_step(rows, timer, torchvision, "fp32", impls, checked, device="cpu", batch=2, image=32)
        bench.add_step_ratios(rows, "fp32", [impl for impl, _ in impls])
        by_name = {r["name"]: r for r in rows}
        self.assertEqual(list(by_name), [bench.step_row_name("fp32", i) for i in ("cudnn", "course", "exercise", "skipped")])
        course = by_name[bench.step_row_name("fp32", "course")]
        self.assertIn("ms", course, course.get("error"))
        self.assertAlmostEqual(course["x_cudnn"], course["ms"] / by_name[bench.step_row_name("fp32", "cudnn")]["ms"])
        self.assertEqual((course["iterations"], course["label"]), (1, "fp32, TF32 off"))
        self.assertIn("float64 step of 4 images", by_name[bench.step_row_name("fp32", "exercise")]["error"])
        self.assertIn("convert_module left nn.Conv2d", by_name[bench.step_row_name("fp32", "skipped")]["error"])
        self.assertEqual(checked["course"], None)
        self.assertIsInstance(checked["exercise"], AssertionError)
        rows = []  # the float64 check is done once per implementation: its verdict carries over
        bench.bench_step(rows, timer, torchvision, "fp32", impls[1:2], checked, device="cpu", batch=2, image=32)
        self.assertIn("float64 step of 4 images", rows[1]["error"])


class NotRunnableTest(unittest.TestCase):
    def test_without_torchvision_the_step_rows_are_not_runnable_and_no_failure(self):
        with mock.patch.dict(sys.modules, {"torchvision": None}):  # import torchvision raises
            module, reason = bench.torchvision_or_reason()
        self.assertIsNone(module)
        self.assertIn("pip install torchvision", reason)
        rows = bench.not_runnable_step_rows(["fp32", "fp16"], ["course", "exercise"], reason)
        self.assertEqual([r["name"] for r in rows], [bench.step_row_name(p, i) for p in ("fp32", "fp16")
                                                      for i in ("cudnn", "course", "exercise")])
        self.assertTrue(all(benchmarking.is_not_runnable(r) and reason in r["error"] for r in rows))
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "out.json")
            code = benchmarking.finish(rows, json_path=path, program=str(SCRIPT), facts={})
            data = json.loads(Path(path).read_text())
        self.assertEqual(code, 0)
        self.assertEqual({run_benchmarks.row_status(r) for r in data["benchmarks"]}, {run_benchmarks.NOT_RUNNABLE})

    def run_script(self, *args):
        environment = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONDONTWRITEBYTECODE="1")
        with tempfile.TemporaryDirectory() as folder:
            out = os.path.join(folder, "x.json")
            done = subprocess.run([sys.executable, str(SCRIPT), "--json", out, *args], env=environment,
                                  capture_output=True, text=True, timeout=600)
            return done, os.path.exists(out)

    def test_without_a_gpu_it_says_so_and_exits_with_2(self):
        done, wrote = self.run_script()
        self.assertEqual(done.returncode, benchmarking.NO_GPU, done.stderr)
        self.assertIn("bench_resnet18.py: no CUDA GPU to benchmark on", done.stderr)
        self.assertFalse(wrote)

    def test_a_wrong_option_is_refused_before_anything_runs(self):
        done, wrote = self.run_script("--precisions", "fp32,bf16")
        self.assertEqual(done.returncode, 1)
        self.assertIn("--precisions takes fp32, fp16", done.stderr)
        done, _ = self.run_script("--sections", "")
        self.assertEqual(done.returncode, 1)
        self.assertIn("--sections takes layers, step", done.stderr)


if __name__ == "__main__":
    unittest.main()
