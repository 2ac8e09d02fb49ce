#!/usr/bin/env python3
"""Unit tests of the benchmark recorder's own logic (tools/run_benchmarks.py), on the CPU."""
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))
import plot_results  # noqa: E402
import run_benchmarks  # noqa: E402

OLD = {"context": {"statistic": "median"}, "benchmarks": [{"name": "old"}]}


def writer(text, exit_code):
    """A stand-in benchmark: writes `text` to the path it is given, then exits with exit_code."""
    program = f"import sys; open(sys.argv[1], 'w').write({text!r}); sys.exit({exit_code})"
    return lambda partial: [sys.executable, "-c", program, str(partial)]


class RecordIntoTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.out = Path(self.folder.name) / "m0_00_example.json"
        self.out.write_text(json.dumps(OLD))

    def tearDown(self):
        self.folder.cleanup()

    def leftovers(self):
        return sorted(p.name for p in Path(self.folder.name).iterdir() if p != self.out)

    def test_a_successful_run_replaces_the_results(self):
        new = {"context": {}, "benchmarks": [{"name": "new"}]}
        self.assertEqual(run_benchmarks.record_into(self.out, writer(json.dumps(new), 0)), 0)
        self.assertEqual(json.loads(self.out.read_text()), new)
        self.assertEqual(self.leftovers(), [])

    def test_a_run_with_failed_rows_is_recorded_and_reported(self):
        # A Python benchmark exits with 1 when some rows are errors; the file holds them.
        new = {"context": {}, "benchmarks": [{"name": "row", "error": "wrong result"}]}
        self.assertEqual(run_benchmarks.record_into(self.out, writer(json.dumps(new), 1)), 1)
        self.assertEqual(json.loads(self.out.read_text()), new)

    def test_a_run_that_writes_nothing_keeps_the_previous_results(self):
        command = lambda partial: [sys.executable, "-c", "import sys; sys.exit(2)", str(partial)]  # noqa: E731
        self.assertEqual(run_benchmarks.record_into(self.out, command), 2)
        self.assertEqual(json.loads(self.out.read_text()), OLD)
        self.assertEqual(self.leftovers(), [])

    def test_a_truncated_file_never_replaces_the_results(self):
        # What a benchmark stopped mid-run (a timeout) leaves: JSON cut off after a row.
        truncated = '{"benchmarks": [{"name": "a", "real_time": 1.0}'
        self.assertEqual(run_benchmarks.record_into(self.out, writer(truncated, 0)), 1)
        self.assertEqual(json.loads(self.out.read_text()), OLD)
        self.assertEqual(self.leftovers(), [])


# --- Rows without a time ----------------------------------------------------------------------
# What Google Benchmark 1.7 writes with --benchmark_repetitions=5 and
# --benchmark_report_aggregates_only=true: a row that ran has its aggregates (the median among
# them) and no iteration rows; a row that was skipped with an error in any repetition has no
# aggregate, only its five iteration rows.

SHORTFALL = "needs 192 KiB of shared memory per block (4 stages of a 128 x 256 x 64 tile); this GPU allows 99 KiB"


def timed(name, microseconds, tflops, label="fp16 in, fp32 acc"):
    """A row that ran: its aggregates, as Google Benchmark writes them."""
    return [dict(name=f"{name}/manual_time_{statistic}", run_name=f"{name}/manual_time", run_type="aggregate",
                 aggregate_name=statistic, repetitions=5, real_time=microseconds * scale, time_unit="us",
                 TFLOPS=tflops * scale, label=label)
            for statistic, scale in (("mean", 1.0), ("median", 1.0), ("stddev", 0.01))]


def skipped(name, message, repetitions=5, errors=None, label="fp16 in, fp32 acc"):
    """A row skipped with an error: only its iteration rows, `errors` of them with the message."""
    errors = repetitions if errors is None else errors
    rows = []
    for index in range(repetitions):
        row = dict(name=f"{name}/manual_time", run_name=f"{name}/manual_time", run_type="iteration",
                   repetitions=repetitions, repetition_index=index, iterations=1, real_time=0.0,
                   time_unit="us", label=label)
        if index < errors:
            row.update(error_occurred=True, error_message=message)
        else:
            row.update(real_time=100.0 + index, TFLOPS=1.0)
        rows.append(row)
    return rows


def steps_file():
    """m2.07's mma_gemm_steps table on a GPU of 99 KiB: cuBLAS, two steps that ran, one that
    is not runnable, one that failed."""
    return {"context": {"statistic": "median", "repetitions": "5"}, "benchmarks": [
        *timed("mma_gemm_steps/cublas_fp16/n:4096", 200.0, 600.0),
        *timed("mma_gemm_steps/part2_wmma_gemm/n:4096", 400.0, 300.0),
        *skipped("mma_gemm_steps/warp64x64_block128x256_k64x4_swizzled/n:4096",
                 run_benchmarks.NOT_RUNNABLE_PREFIX + SHORTFALL),
        *skipped("mma_gemm_steps/warp64x64_block128x256_k32x4_plain/n:4096",
                 "wrong result: row 17 of C (the [indices] are columns): 3 of 4096 differ"),
        *timed("mma_gemm_steps/warp64x64_block128x128_k32x4_swizzled/n:4096", 250.0, 480.0),
    ]}


def table_line(table, row):
    return next(line for line in table.splitlines() if line.startswith(f"| {row} |"))


class UntimedRowsTest(unittest.TestCase):
    def test_every_row_is_in_the_table_once(self):
        names = [row["name"] for row in run_benchmarks.table_rows(steps_file())]
        self.assertEqual(names, [
            "mma_gemm_steps/cublas_fp16/n:4096/manual_time",
            "mma_gemm_steps/part2_wmma_gemm/n:4096/manual_time",
            "mma_gemm_steps/warp64x64_block128x256_k64x4_swizzled/n:4096/manual_time",
            "mma_gemm_steps/warp64x64_block128x256_k32x4_plain/n:4096/manual_time",
            "mma_gemm_steps/warp64x64_block128x128_k32x4_swizzled/n:4096/manual_time"])

    def test_rows_are_timed_not_runnable_or_failed(self):
        statuses = [run_benchmarks.row_status(row) for row in run_benchmarks.table_rows(steps_file())]
        self.assertEqual(statuses, [run_benchmarks.OK, run_benchmarks.OK, run_benchmarks.NOT_RUNNABLE,
                                    run_benchmarks.ERROR, run_benchmarks.OK])
        self.assertEqual([row["name"] for row in run_benchmarks.timed_rows(steps_file())][-1],
                         "mma_gemm_steps/warp64x64_block128x128_k32x4_swizzled/n:4096/manual_time")

    def test_a_row_not_runnable_says_so_with_the_reason(self):
        table = run_benchmarks.markdown_table(steps_file())
        self.assertIn("| note |", table.splitlines()[0])
        line = table_line(table, "mma_gemm_steps/warp64x64_block128x256_k64x4_swizzled")
        cells = [cell.strip() for cell in line.split("|")[1:-1]]
        self.assertEqual(cells[2], "fp16 in, fp32 acc")  # its precision, though it did not run
        self.assertEqual(cells[3], "not runnable")
        self.assertEqual(cells[4:9], [""] * 5)  # no rate, no ratio
        self.assertEqual(cells[-1], "not runnable on this GPU: " + SHORTFALL)

    def test_a_row_that_failed_shows_its_error(self):
        table = run_benchmarks.markdown_table(steps_file())
        line = table_line(table, "mma_gemm_steps/warp64x64_block128x256_k32x4_plain")
        cells = [cell.strip() for cell in line.split("|")[1:-1]]
        self.assertEqual(cells[3], "error")
        self.assertEqual(cells[-1], "ERROR: wrong result: row 17 of C (the [indices] are columns): 3 of 4096 differ")
        self.assertEqual(run_benchmarks.untimed_summary(steps_file()),
                         "1 row not runnable on this GPU, 1 row failed")

    def test_timed_rows_keep_their_ratios(self):
        table = run_benchmarks.markdown_table(steps_file())
        self.assertIn("80.0% of cublas", table_line(table, "mma_gemm_steps/warp64x64_block128x128_k32x4_swizzled"))
        self.assertTrue(table_line(table, "mma_gemm_steps/part2_wmma_gemm").endswith("|  |"))  # empty note

    def test_a_table_where_every_row_ran_keeps_its_shape(self):
        data = {"context": {}, "benchmarks": timed("sgemm/cublas/n:1024", 10.0, 50.0)
                + timed("sgemm/solution/n:1024", 20.0, 25.0)}
        table = run_benchmarks.markdown_table(data)
        self.assertNotIn("note", table)
        self.assertEqual(table.splitlines()[1].count("|"), 10)
        self.assertEqual(run_benchmarks.untimed_summary(data), "")

    def test_a_baseline_that_did_not_run_is_no_baseline(self):
        data = {"context": {}, "benchmarks": [
            *skipped("hopper_gemm/cublas_fp16/n:1024", "cuBLAS failed: CUBLAS_STATUS_NOT_SUPPORTED"),
            *timed("hopper_gemm/step_m2_07_wmma/n:1024", 20.0, 100.0),
            *skipped("hopper_gemm/solution/n:1024", run_benchmarks.NOT_RUNNABLE_PREFIX
                     + "needs compute capability 9.0 (wgmma and the TMA: H100, H200); this GPU has 8.0")]}
        body = run_benchmarks.markdown_table(data).split("\n", 2)[2]
        self.assertNotIn("% of", body)  # no ratio against a failed baseline
        self.assertNotIn("x over", body)  # nor for a row that did not run
        table = run_benchmarks.markdown_table(data)
        self.assertIn("needs compute capability 9.0", table_line(table, "hopper_gemm/solution"))

    def test_a_previous_step_that_did_not_run_gives_no_speedup(self):
        data = {"context": {}, "benchmarks": [
            *skipped("conv_bf16/m3_04/solution/L1", run_benchmarks.NOT_RUNNABLE_PREFIX + "needs compute capability 8.0 (x); this GPU has 7.5"),
            *timed("conv_bf16/m3_05/solution/L1", 20.0, 10.0)]}
        table = run_benchmarks.markdown_table(data)
        self.assertNotIn("x over", table_line(table, "conv_bf16/m3_05/solution"))
        data["benchmarks"][:5] = timed("conv_bf16/m3_04/solution/L1", 40.0, 5.0)
        self.assertIn("2.00x over m3_04/solution", table_line(run_benchmarks.markdown_table(data), "conv_bf16/m3_05/solution"))

    def test_a_row_that_failed_in_some_repetitions_is_an_error(self):
        data = {"context": {}, "benchmarks": skipped("vector_add/solution/n:1024", "CUDA error: unspecified launch failure",
                                                      errors=1)}
        (row,) = run_benchmarks.table_rows(data)
        self.assertEqual(run_benchmarks.row_status(row), run_benchmarks.ERROR)
        self.assertEqual(run_benchmarks.row_note(row),
                         "ERROR: CUDA error: unspecified launch failure (in 1 of 5 repetitions)")

    def test_python_rows_are_read_alike(self):
        # What course_harness.benchmarking.write_json writes: one iteration row per name.
        def python_row(name, **fields):
            return dict(name=name, run_name=name, run_type="iteration", repetitions=1, repetition_index=0,
                        time_unit="us", **fields)
        data = {"context": {"statistic": "median"}, "benchmarks": [
            python_row("gemm_fp16/torch_matmul/n:4096", iterations=20, real_time=100.0, TFLOPS=1.0),
            python_row("gemm_fp16/solution/n:4096", error_occurred=True, iterations=0, real_time=0.0,
                       error_message=run_benchmarks.NOT_RUNNABLE_PREFIX
                       + "needs compute capability 8.0 (bfloat16 mma.sync); this GPU has 7.5"),
            python_row("gemm_fp16/exercise/n:4096", error_occurred=True, iterations=0, real_time=0.0,
                       error_message="wrong result or failed call: AssertionError: 3 of 16 elements differ")]}
        self.assertEqual([run_benchmarks.row_status(r) for r in run_benchmarks.table_rows(data)],
                         [run_benchmarks.OK, run_benchmarks.NOT_RUNNABLE, run_benchmarks.ERROR])

    def test_pictures_leave_rows_without_a_time_unbarred(self):
        panel = plot_results.families(steps_file())["mma_gemm_steps"]
        self.assertEqual(len(panel["impls"]), 5)  # every row keeps its place
        self.assertEqual(set(panel["values"]), {("cublas_fp16", "n:4096"), ("part2_wmma_gemm", "n:4096"),
                                                ("warp64x64_block128x128_k32x4_swizzled", "n:4096")})
        self.assertEqual(panel["untimed"], {
            ("warp64x64_block128x256_k64x4_swizzled", "n:4096"): "not runnable on this GPU",
            ("warp64x64_block128x256_k32x4_plain", "n:4096"): "error"})


# --- Which peak a rate is rated against --------------------------------------------------------

def bandwidth(name, microseconds, gbps=None, peak_pct=None, label="fp32", **fields):
    """A row's median aggregate, as the C++ benchmarks write it."""
    row = dict(name=f"{name}/manual_time_median", run_name=f"{name}/manual_time", run_type="aggregate",
               aggregate_name="median", repetitions=5, real_time=microseconds, time_unit="us",
               label=label, **fields)
    for key, value in (("GBps", gbps), ("peak_pct", peak_pct)):
        if value is not None:
            row[key] = value
    return row


def memory_hierarchy_file():
    """m2_memory_hierarchy.json's rows, as on the H200: the benchmark writes peak_pct (GB/s over
    the DRAM peak) for the L2 row too."""
    return {"context": {"gpu": "NVIDIA H200", "peak_dram_gbps": "4814.304000", "statistic": "median",
                        "repetitions": "5", "library_build_type": "debug", "host_name": "vm"},
            "benchmarks": [
                bandwidth("memory_hierarchy/hbm_copy/bytes:1073741824", 546.7, 3928.3, 81.6),
                bandwidth("memory_hierarchy/l2_read/bytes:15728640", 44.4, 7087.6, 147.2),
                bandwidth("memory_hierarchy/shared_read/bytes:32768", 167.2, 31048.0),
                bandwidth("memory_hierarchy/latency_l2/bytes:8388608/iterations:5", 152382.6,
                          label="u32 loads", latency_ns=145.3),
            ]}


def cells(table, row):
    return [cell.strip() for cell in table_line(table, row).split("|")[1:-1]]


class PeakTest(unittest.TestCase):
    def test_the_column_says_which_peak(self):
        header = run_benchmarks.markdown_table(memory_hierarchy_file()).splitlines()[0]
        self.assertIn("| GB/s | % of DRAM peak |", header)

    def test_a_dram_row_is_rated_against_the_dram_peak(self):
        table = run_benchmarks.markdown_table(memory_hierarchy_file())
        self.assertEqual(cells(table, "memory_hierarchy/hbm_copy")[5], "81.6")
        data = {"context": {}, "benchmarks": [bandwidth("vector_add/solution/n:1024", 10.0, 4000.0, 83.1),
                                              bandwidth("gemm_ladder/m2_05_x/solution/n:1024", 10.0, 40.0, 0.8)]}
        table = run_benchmarks.markdown_table(data)
        self.assertEqual(cells(table, "vector_add/solution")[5], "83.1")
        self.assertEqual(cells(table, "gemm_ladder/m2_05_x/solution")[5], "0.8")

    def test_l2_shared_memory_and_latency_rows_get_no_share_of_the_dram_peak(self):
        table = run_benchmarks.markdown_table(memory_hierarchy_file())
        self.assertNotIn("147.2", table)
        for row in ("memory_hierarchy/l2_read", "memory_hierarchy/shared_read", "memory_hierarchy/latency_l2"):
            self.assertEqual(cells(table, row)[5], "", row)
        self.assertEqual(cells(table, "memory_hierarchy/l2_read")[4], "7,088")  # its GB/s stays
        self.assertEqual(cells(table, "memory_hierarchy/latency_l2")[-1], "145.3")
        self.assertIsNone(run_benchmarks.dram_peak_pct("l2_read", {"peak_pct": 147.2}))
        self.assertIsNone(run_benchmarks.dram_peak_pct("latency_hbm", {}))
        self.assertEqual(run_benchmarks.dram_peak_pct("hbm_copy", {"peak_pct": 81.6}), 81.6)

    def test_the_page_says_what_the_columns_mean_and_leaves_google_benchmarks_facts_out(self):
        with tempfile.TemporaryDirectory() as folder:
            run_benchmarks.write_report(Path(folder), "NVIDIA H200", [("m2_memory_hierarchy", memory_hierarchy_file())])
            page = (Path(folder) / "README.md").read_text()
        head = page.split("## m2_memory_hierarchy")[0]
        self.assertIn("`% of DRAM peak` is that rate over the theoretical DRAM bandwidth", head)
        self.assertIn("left empty where a row", head)
        self.assertIn("_gpu: NVIDIA H200; peak_dram_gbps: 4814.304000; statistic: median of 5 repetitions_", page)
        self.assertNotIn("library_build_type", page)
        self.assertNotIn("host_name", page)


# --- Is there a GPU? --------------------------------------------------------------------------

def smi(returncode, stdout):
    """A stand-in for subprocess.run answering `nvidia-smi -L`."""
    def run(command, **_):
        return subprocess.CompletedProcess(command, returncode, stdout=stdout)
    return run


class GpuMissingReasonTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.root = Path(self.folder.name)
        environment = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
        self.environment = mock.patch.dict(os.environ, environment, clear=True)
        self.environment.start()

    def tearDown(self):
        self.environment.stop()
        self.folder.cleanup()

    def reason(self, which=None, run=None):
        return run_benchmarks.gpu_missing_reason(which=lambda name: which, run=run or smi(0, ""), root=self.root)

    def test_nvidia_smi_lists_a_gpu(self):
        run = smi(0, "GPU 0: NVIDIA H200 (UUID: GPU-0)\n")
        self.assertIsNone(self.reason("/usr/bin/nvidia-smi", run))

    def test_nvidia_smi_finds_no_gpu(self):
        run = smi(9, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n")
        reason = self.reason("/usr/bin/nvidia-smi", run)
        self.assertIn("nvidia-smi finds no usable NVIDIA GPU", reason)
        self.assertIn("couldn't communicate with the NVIDIA driver", reason)

    def test_nvidia_smi_that_hangs(self):
        def run(command, **_):
            raise subprocess.TimeoutExpired(command, 60)
        self.assertIn("did not answer", self.reason("/usr/bin/nvidia-smi", run))

    def test_no_nvidia_smi_but_a_device_file(self):
        (self.root / "dev").mkdir()
        (self.root / "dev" / "nvidia0").touch()
        self.assertIsNone(self.reason())

    def test_no_nvidia_smi_but_the_driver_lists_a_gpu(self):
        info = self.root / "proc/driver/nvidia/gpus/0000:01:00.0/information"
        info.parent.mkdir(parents=True)
        info.write_text("Model: \t\t NVIDIA H200\nIRQ: 42\n")
        self.assertIsNone(self.reason())
        self.assertEqual(run_benchmarks._proc_gpu_names(self.root), ["NVIDIA H200"])

    def test_a_driver_without_a_gpu(self):
        (self.root / "proc/driver/nvidia/gpus").mkdir(parents=True)
        self.assertIn("lists no GPU", self.reason())

    def test_a_machine_without_a_gpu(self):
        self.assertEqual(self.reason(), "no NVIDIA GPU on this machine: no nvidia-smi, no /dev/nvidia0 "
                                        "and no NVIDIA driver (/proc/driver/nvidia)")

    def test_cuda_visible_devices_can_hide_them(self):
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
        self.assertIn("hides every GPU", self.reason("/usr/bin/nvidia-smi", smi(0, "GPU 0: NVIDIA H200\n")))


# --- What main() says before it runs anything -------------------------------------------------

class MainTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.build = Path(self.folder.name) / "build"
        self.results = Path(self.folder.name) / "results"
        (self.build / "month3" / "cudnn_algorithms").mkdir(parents=True)

    def tearDown(self):
        self.folder.cleanup()

    def main(self, *arguments, gpu_missing=None):
        argv = ["run_benchmarks.py", "--build-dir", str(self.build), "--root", str(self.folder.name),
                "--results-dir", str(self.results), "--gpu-name", "NVIDIA H200", *arguments]
        out, err = io.StringIO(), io.StringIO()
        with mock.patch.object(sys, "argv", argv), \
                mock.patch.object(run_benchmarks, "gpu_missing_reason", lambda: gpu_missing), \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = run_benchmarks.main()
        return code, out.getvalue(), err.getvalue()

    def test_without_a_gpu_it_refuses_before_anything_runs(self):
        code, out, err = self.main(gpu_missing="no NVIDIA GPU on this machine: no nvidia-smi")
        self.assertEqual(code, run_benchmarks.NO_GPU)
        self.assertIn("no NVIDIA GPU on this machine", err)
        self.assertFalse(self.results.exists())

    def test_a_benchmark_the_build_left_out_says_why_and_fails(self):
        note = self.build / run_benchmarks.NOT_BUILT_DIR / "m3_cudnn_algorithms.txt"
        note.parent.mkdir()
        note.write_text("cuDNN was not found, so ...\n      sudo apt-get install libcudnn9-dev-cuda-13\n")
        # A program an older build left behind is not run.
        stale = self.build / "month3" / "cudnn_algorithms" / "m3_cudnn_algorithms_bench"
        stale.write_text("#!/bin/sh\nexit 0\n")
        stale.chmod(0o755)
        code, out, err = self.main("--filter", "m3_cudnn_algorithms")
        self.assertEqual(code, run_benchmarks.NOTHING_RUN)
        self.assertIn("m3_cudnn_algorithms is not built here", err)
        self.assertIn("sudo apt-get install libcudnn9-dev-cuda-13", err)
        self.assertNotIn("wrote", out)
        self.assertFalse(self.results.exists())
        self.assertEqual(run_benchmarks.not_built(self.build, "cudnn")[0][0], "m3_cudnn_algorithms")
        self.assertEqual(run_benchmarks.not_built(self.build, "m1_01"), [])

    def test_an_emulated_gpu_has_results_of_its_own(self):
        with mock.patch.dict(os.environ, {"COURSE_COMPUTE_CAPABILITY": "8.6"}):
            code, out, err = self.main("--report-only")
        self.assertEqual(code, 0)
        report = self.results / "h200-as-cc-8-6" / "README.md"
        self.assertIn("NVIDIA H200, checked as compute capability 8.6", report.read_text())
        self.assertFalse((self.results / "h200").exists())

    def test_a_filter_that_matches_nothing_writes_nothing(self):
        code, out, err = self.main("--filter", "m9_99")
        self.assertEqual(code, run_benchmarks.NOTHING_RUN)
        self.assertIn("no benchmark program", err)
        self.assertFalse(self.results.exists())


if __name__ == "__main__":
    unittest.main()
