#!/usr/bin/env python3
"""Unit tests of tools/check_figures.py: a lesson's figure against a small results file."""
import json
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_figures  # noqa: E402


def median_row(name, real_time, unit="us", **fields):
    return dict(name=f"{name}/manual_time_median", run_name=f"{name}/manual_time",
                run_type="aggregate", aggregate_name="median", real_time=real_time,
                time_unit=unit, label="fp32", **fields)


class FigureCheckTest(unittest.TestCase):
    def setUp(self):
        self.scratch = tempfile.TemporaryDirectory()
        results = Path(self.scratch.name)
        rows = [median_row("gemm/solution/n:1024", 254.0, TFLOPS=8.45),
                median_row("gemm/cublas/n:1024", 74.0, TFLOPS=34.5),
                median_row("gemm/solution/n:2048", 2.0, unit="ms", TFLOPS=8.6),
                dict(name="gemm/big/n:4096/manual_time", run_name="gemm/big/n:4096/manual_time",
                     run_type="iteration", error_occurred=True,
                     error_message="not runnable on this GPU: needs compute capability 9.0",
                     real_time=0.0, time_unit="us")]
        (results / "m2_03.json").write_text(json.dumps({"context": {}, "benchmarks": rows}))
        torch_rows = [median_row("matmul/torch/n:1024", 50.0, TFLOPS=42.9)]
        (results / "m3_01.json").write_text(json.dumps({"context": {}, "benchmarks": torch_rows}))
        self.records = check_figures.Records(results)

    def tearDown(self):
        self.scratch.cleanup()

    def problems(self, text):
        return check_figures.check_text(text, self.records, "lesson.md")

    def test_a_figure_that_matches_its_record_at_the_precision_written(self):
        self.assertEqual(self.problems("about 8.45 TFLOP/s <!-- fig: m2_03 TFLOPS gemm/solution/n:1024 -->\n"), [])
        self.assertEqual(self.problems("8.5 TFLOP/s <!-- fig: m2_03 TFLOPS gemm/solution/n:1024 -->\n"), [])

    def test_a_figure_that_contradicts_its_record_fails_with_both_numbers(self):
        problems = self.problems("~9 TFLOP/s <!-- fig: m2_03 TFLOPS gemm/solution/n:1024 -->\n")
        self.assertEqual(len(problems), 1)
        self.assertIn("says 9", problems[0])
        self.assertIn("8.45", problems[0])

    def test_a_ratio_written_as_a_percentage(self):
        ok = "24.5% of cuBLAS <!-- fig: m2_03 TFLOPS gemm/solution/n:1024 over gemm/cublas/n:1024 -->"
        self.assertEqual(self.problems(ok), [])
        self.assertEqual(len(self.problems(ok.replace("24.5%", "20%"))), 1)

    def test_a_time_ratio_and_a_time_in_a_unit(self):
        self.assertEqual(self.problems("3.4× <!-- fig: m2_03 time_us gemm/solution/n:1024 over gemm/cublas/n:1024 -->"), [])
        self.assertEqual(self.problems("2.0 ms <!-- fig: m2_03 time_ms gemm/solution/n:2048 -->"), [])
        self.assertEqual(self.problems("2,000 µs <!-- fig: m2_03 time_us gemm/solution/n:2048 -->"), [])

    def test_a_ratio_across_two_results_files(self):
        text = "19.7% of torch <!-- fig: m2_03 TFLOPS gemm/solution/n:1024 over matmul/torch/n:1024@m3_01 -->"
        self.assertEqual(self.problems(text), [])
        problems = self.problems(text.replace("@m3_01", "@m9_09"))
        self.assertIn("no results file", problems[0])

    def test_a_range_is_the_smallest_and_largest_row(self):
        good = "8.45–8.6 TFLOP/s <!-- fig: m2_03 TFLOPS gemm/solution/n:1024, gemm/solution/n:2048 -->"
        self.assertEqual(self.problems(good), [])
        self.assertEqual(len(self.problems(good.replace("8.45–8.6", "8.45–9.6"))), 1)

    def test_one_number_for_several_rows_must_fit_each(self):
        text = "8.5 TFLOP/s <!-- fig: m2_03 TFLOPS gemm/solution/n:1024, gemm/solution/n:2048 -->"
        self.assertEqual(len(self.problems(text)), 1)

    def test_a_missing_row_file_field_or_untimed_row_is_named(self):
        for spec, words in (("m2_03 TFLOPS gemm/solution/n:512", "no row"),
                            ("m9_99 TFLOPS gemm/solution/n:1024", "no results file"),
                            ("m2_03 GBps gemm/solution/n:1024", "no field GBps"),
                            ("m2_03 TFLOPS gemm/big/n:4096", "has no time")):
            problems = self.problems(f"8.45 TFLOP/s <!-- fig: {spec} -->")
            self.assertEqual(len(problems), 1, spec)
            self.assertIn(words, problems[0])

    def test_a_figure_without_a_comment_is_reported_and_a_spec_comment_accepts_it(self):
        self.assertEqual(len(self.problems("It reaches 4.8 TB/s on paper.\n")), 1)
        self.assertEqual(self.problems("It reaches 4.8 TB/s <!-- spec: H200 datasheet --> on paper.\n"), [])
        self.assertEqual(len(self.problems("It reaches 4.8 TB/s <!-- spec: --> on paper.\n")), 1)

    def test_each_figure_on_a_line_needs_its_own_comment(self):
        text = "8.45 TFLOP/s and 34.5 TFLOP/s <!-- fig: m2_03 TFLOPS gemm/cublas/n:1024 -->\n"
        problems = self.problems(text)
        self.assertEqual(len(problems), 1)
        self.assertIn("8.45 TFLOP/s", problems[0])

    def test_shapes_code_and_unitless_numbers_are_not_figures(self):
        text = ("A 3 x 3 filter, a 1×1 layer and 16 x 16 tiles; `speedup 2.0x` in code;\n"
                "```\nprint('5.0 ms')\n```\nsm_90 has 132 multiprocessors.\n")
        self.assertEqual(self.problems(text), [])

    def test_a_comment_that_starts_a_line_inside_a_paragraph_is_reported(self):
        text = "The kernel reaches 8.45 TFLOP/s\n<!-- fig: m2_03 TFLOPS gemm/solution/n:1024 --> here.\n"
        self.assertTrue(any("breaks the paragraph" in p for p in self.problems(text)))

    def test_precision_follows_what_is_written(self):
        self.assertAlmostEqual(check_figures.precision("7.4"), 0.05)
        self.assertAlmostEqual(check_figures.precision("4,200"), 50)
        self.assertAlmostEqual(check_figures.precision("7"), 0.5)
        self.assertTrue(check_figures.matches("4,200", 4222))
        self.assertFalse(check_figures.matches("4,222", 4200))


if __name__ == "__main__":
    unittest.main()
