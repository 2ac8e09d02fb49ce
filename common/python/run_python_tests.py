#!/usr/bin/env python3
"""Runs the test classes of one Python test file for ctest (cmake/CoursePython.cmake registers them).

  run_python_tests.py [--require MODULE]... TEST_FILE [CLASS ...]

Exit status: 0 when the tests passed, 1 when a test failed or could not run, 77 when every
test was skipped (ctest's SKIP_RETURN_CODE, so ctest shows them as skipped, not passed).
Uses pytest when this interpreter has it, unittest otherwise.
"""
import argparse
import importlib
import importlib.util
import os
import sys
import traceback
import unittest

SKIPPED = 77


def report_skip(reasons):
    counts = {}
    for reason in reasons:
        reason = reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason
        counts[reason] = counts.get(reason, 0) + 1
    for reason, count in sorted(counts.items()) or [("(no reason given)", 0)]:
        print(f"SKIPPED: {reason}" + (f" ({count} tests)" if count > 1 else ""), flush=True)
    return SKIPPED


class PytestTally:
    """A pytest plugin that counts outcomes, so `all skipped` can be told from `passed`."""

    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.skipped = []

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.failed += 1
        elif report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            self.skipped.append(reason)
        elif report.when == "call" and report.passed:
            self.passed += 1


def run_pytest(pytest, test_file, classes):
    # From the test's folder, so that pytest names tests by file::class::test.
    directory, file_name = os.path.split(os.path.abspath(test_file))
    os.chdir(directory)
    targets = [f"{file_name}::{name}" for name in classes] or [file_name]
    tally = PytestTally()
    # Plugins that would write next to the sources are off; -rsfE lists skips and failures.
    code = pytest.main(["-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                        "-v", "-rsfE", "--tb=short", *targets], plugins=[tally])
    if code == 5:
        print(f"run_python_tests: no tests named {classes} in {test_file}", flush=True)
        return 1
    if code != 0 or tally.failed:
        return 1
    if tally.passed == 0 and tally.skipped:
        return report_skip(tally.skipped)
    return 0


def run_unittest(test_file, classes):
    directory, file_name = os.path.split(os.path.abspath(test_file))
    sys.path.insert(0, directory)
    module = importlib.import_module(os.path.splitext(file_name)[0])
    loader = unittest.TestLoader()
    suite = loader.loadTestsFromNames(classes, module) if classes else loader.loadTestsFromModule(module)
    result = unittest.TextTestRunner(stream=sys.stdout, verbosity=2).run(suite)
    if not result.wasSuccessful():
        return 1
    # A class skipped in setUpClass counts as one skip and no test run.
    if result.skipped and len(result.skipped) >= result.testsRun:
        return report_skip(reason for _, reason in result.skipped)
    if result.testsRun == 0:
        print(f"run_python_tests: no tests named {classes} in {test_file}", flush=True)
        return 1
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--require", action="append", default=[], metavar="MODULE",
                        help="a module the tests need; without it they are skipped")
    parser.add_argument("test_file")
    parser.add_argument("classes", nargs="*")
    args = parser.parse_args()

    for module in args.require:
        try:
            importlib.import_module(module)
        except Exception as error:  # ImportError, or a broken install
            return report_skip([
                f"these tests need the Python module '{module}', which {sys.executable} cannot "
                f"import ({type(error).__name__}: {error}). Install it for that interpreter "
                f"(PyTorch on Debian/Ubuntu: apt-get install python3-torch), "
                f"or point the build at a Python that has it: "
                f"cmake -B <build> -DCOURSE_PYTHON=/path/to/python3"])

    versions = [f"python {sys.version.split()[0]} ({sys.executable})"]
    if "torch" in sys.modules:
        versions.append(f"torch {sys.modules['torch'].__version__}")
    pytest = None
    if importlib.util.find_spec("pytest") is not None:
        import pytest
    versions.append("pytest" if pytest else "unittest")
    print("run_python_tests: " + ", ".join(versions), flush=True)

    try:
        if pytest is not None:
            return run_pytest(pytest, args.test_file, args.classes)
        return run_unittest(args.test_file, args.classes)
    except Exception:
        traceback.print_exc()
        return 1


if __name__ == "__main__":
    sys.exit(main())
