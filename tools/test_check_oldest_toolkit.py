#!/usr/bin/env python3
"""Unit tests of the oldest-toolkit check's own logic (tools/check_oldest_toolkit.py): how it
turns the build's compile commands into its own, on the CPU, with no compiler."""
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_oldest_toolkit as check  # noqa: E402

NVCC = ["/usr/local/cuda/bin/nvcc", "-forward-unknown-to-host-compiler", "-DCOURSE_IMPL=solution",
        "-O3", "-DNDEBUG", "--generate-code=arch=compute_75,code=[compute_75,sm_75]",
        "--generate-code=arch=compute_80,code=[compute_80,sm_80]",
        "-gencode=arch=compute_90a,code=sm_90a", "-std=c++17", "-x", "cu", "-c", "x.cu",
        "-o", "CMakeFiles/m3_05_implicit_gemm_solution.dir/x.cu.o"]


class CommandsTest(unittest.TestCase):
    def test_ptx_only_keeps_every_architecture(self):
        args = check.ptx_only(NVCC)
        self.assertIn("--generate-code=arch=compute_75,code=compute_75", args)
        self.assertIn("--generate-code=arch=compute_80,code=compute_80", args)
        self.assertIn("-gencode=arch=compute_90a,code=compute_90a", args)
        self.assertFalse(any("sm_" in arg for arg in args))

    def test_quick_library_keeps_every_architecture_unoptimized(self):
        args = check.quick(NVCC, is_cuda=True, every_architecture=True)
        self.assertNotIn("-O3", args)
        self.assertIn("-O0", args)
        self.assertIn("-Xcompiler=-fsyntax-only", args)
        self.assertEqual(sum(1 for arg in args if check.GENCODE.match(arg)), 3)
        self.assertEqual(args[0], NVCC[0])

    def test_quick_test_keeps_the_first_architecture(self):
        args = check.quick(NVCC, is_cuda=True, every_architecture=False)
        gencodes = [arg for arg in args if check.GENCODE.match(arg)]
        self.assertEqual(gencodes, ["--generate-code=arch=compute_75,code=[compute_75,sm_75]"])

    def test_quick_cpp(self):
        args = check.quick(["/usr/bin/c++", "-O3", "-c", "a.cpp", "-o", "a.o"], is_cuda=False,
                           every_architecture=False)
        self.assertEqual(args, ["/usr/bin/c++", "-O0", "-c", "a.cpp", "-o", "a.o", "-fsyntax-only"])

    def test_kernel_libraries_are_told_from_tests_and_benchmarks(self):
        def entry(target):
            return {"command": f"nvcc -c x.cu -o CMakeFiles/{target}.dir/x.cu.o"}
        self.assertTrue(check.is_kernel_library(entry("m3_05_implicit_gemm_solution")))
        self.assertTrue(check.is_kernel_library(entry("m1_01_vector_add_exercise")))
        for target in ("m3_05_implicit_gemm_solution_test", "m2_07_wmma_bench",
                       "m2_04_bank_conflicts_exercise_ncu_probe", "course_common"):
            self.assertFalse(check.is_kernel_library(entry(target)), target)

    def test_a_test_is_compiled_once(self):
        root = check.ROOT
        entries = [{"file": str(root / "month1/01_vector_add/test_vector_add.cu"), "command": "a"},
                   {"file": str(root / "month1/01_vector_add/test_vector_add.cu"), "command": "b"},
                   {"file": str(root / "solutions/month1/01_vector_add/vector_add.cu"), "command": "c"},
                   {"file": "/usr/src/googletest/src/gtest-all.cc", "command": "d"}]
        chosen = check.course_sources(entries, None)
        self.assertEqual([relative for relative, _ in chosen],
                         ["month1/01_vector_add/test_vector_add.cu",
                          "solutions/month1/01_vector_add/vector_add.cu"])
        self.assertEqual(check.course_sources(entries, "solutions/")[0][1]["command"], "c")


class HeadersTest(unittest.TestCase):
    def test_headers_read_from_the_compiling_toolkit(self):
        with tempfile.TemporaryDirectory() as folder:
            toolkit = Path(folder) / "cuda-13.0"
            (toolkit / "include" / "crt").mkdir(parents=True)
            for name in ("include/crt/host_defines.h", "include/cuda_fp4.h"):
                (toolkit / name).write_text("")
            deps = Path(folder) / "x.d"
            deps.write_text(f"x.o : /work/x.cu \\\n /old/include/cuda_runtime.h \\\n"
                            f" {toolkit}/include/crt/host_defines.h {toolkit}/include/cuda_fp4.h\n")
            found = check.headers_from(deps, toolkit.resolve())
            self.assertEqual([p.name for p in found], ["host_defines.h", "cuda_fp4.h"])


if __name__ == "__main__":
    unittest.main()
