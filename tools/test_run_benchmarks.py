#!/usr/bin/env python3
"""Unit tests of the benchmark recorder's own logic (tools/run_benchmarks.py), on the CPU."""
import json
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
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


if __name__ == "__main__":
    unittest.main()
