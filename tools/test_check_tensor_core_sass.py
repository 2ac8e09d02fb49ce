#!/usr/bin/env python3
"""Unit tests of the tensor-core machine-code check (tools/check_tensor_core_sass.py): which
instruction each GPU architecture is expected to have, on made-up SASS, on the CPU."""
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_tensor_core_sass as check  # noqa: E402
import sass  # noqa: E402

HMMA_1688 = "HMMA.1688.F32"
HMMA_16816 = "HMMA.16816.F32"


def library(**archs):
    """{(arch, kernel): opcodes} from arch=[(kernel, opcodes), ...]."""
    return {(arch, kernel): ops for arch, kernels in archs.items() for kernel, ops in kernels}


class ArchitecturesTest(unittest.TestCase):
    def test_each_instruction_from_its_first_architecture(self):
        self.assertTrue(check.arch_has("sm_75", "HMMA"))
        self.assertTrue(check.arch_has("sm_75", "LDSM"))
        self.assertFalse(check.arch_has("sm_75", "LDGSTS"))
        for arch in ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"):
            self.assertTrue(check.arch_has(arch, "LDGSTS"), arch)
            self.assertTrue(check.arch_has(arch, "HMMA"), arch)
        self.assertFalse(check.arch_has("sm_89", "UTMALDG"))
        self.assertTrue(check.arch_has("sm_90a", "UTMALDG"))

    def test_wgmma_only_in_sm_90a_code(self):
        self.assertTrue(check.arch_has("sm_90a", "HGMMA"))
        for arch in ("sm_80", "sm_90", "sm_100a"):
            self.assertFalse(check.arch_has(arch, "HGMMA"), arch)


class CheckTest(unittest.TestCase):
    def run_check(self, functions, *expect):
        return check.check(functions, [check.parse_expectations(None, [e])[0] for e in expect],
                           "lib.a")

    def test_sm_75_is_not_asked_for_cp_async(self):
        functions = library(
            sm_75=[("implicit_gemm_kernel<half>", [HMMA_1688, "LDSM.16.M88.4", "STS.128"])],
            sm_80=[("implicit_gemm_kernel<half>", [HMMA_16816, "LDSM.16.M88.4", "LDGSTS.E.128"])])
        problems, looked = self.run_check(functions, "implicit_gemm_kernel=HMMA,LDSM,LDGSTS")
        self.assertEqual(problems, [])
        self.assertIn("not LDGSTS", looked["sm_75"][0])
        self.assertIn("HMMA+LDSM+LDGSTS", looked["sm_80"][0])

    def test_a_missing_instruction_names_its_architecture(self):
        functions = library(sm_80=[("mma_gemm_kernel", [HMMA_16816])],
                            sm_86=[("mma_gemm_kernel", [HMMA_16816, "LDSM.16.M88.4"])])
        problems, _ = self.run_check(functions, "mma_gemm_kernel=HMMA,LDSM")
        self.assertEqual(problems, ["sm_80: no instantiation of mma_gemm_kernel issues LDSM"])

    def test_one_instantiation_is_enough(self):
        # On sm_75 the bfloat16 variant has no tensor-core product (it traps); float16 does.
        functions = library(sm_75=[("mma_gemm_kernel<half>", [HMMA_1688, "LDSM.16.M88.4"]),
                                   ("mma_gemm_kernel<bf16>", ["LDSM.16.M88.4", "BPT.TRAP"])])
        problems, _ = self.run_check(functions, "mma_gemm_kernel=HMMA,LDSM")
        self.assertEqual(problems, [])

    def test_every_architecture_needs_the_kernel(self):
        functions = library(sm_75=[("other_kernel", ["FFMA"])],
                            sm_80=[("wmma_gemm_kernel", [HMMA_16816])])
        problems, _ = self.run_check(functions, "wmma_gemm_kernel=HMMA")
        self.assertEqual(len(problems), 1)
        self.assertTrue(problems[0].startswith("sm_75: no machine code of wmma_gemm_kernel"))

    def test_an_architecture_named_in_the_expectation_is_the_only_one_looked_at(self):
        functions = library(sm_80=[("implicit_gemm_wgmma_kernel", ["LDGSTS.E.128"])],
                            sm_90a=[("implicit_gemm_wgmma_kernel", ["HGMMA.64x128x16", "LDGSTS"])])
        problems, looked = self.run_check(functions, "implicit_gemm_wgmma_kernel@sm_90a=HGMMA")
        self.assertEqual(problems, [])
        self.assertEqual(looked["sm_80"], [])
        without_sm_90a = library(sm_80=[("implicit_gemm_wgmma_kernel", ["LDGSTS.E.128"])])
        missing, _ = self.run_check(without_sm_90a, "implicit_gemm_wgmma_kernel@sm_90a=HGMMA")
        self.assertEqual(len(missing), 1)
        self.assertTrue(missing[0].startswith("sm_90a: no machine code"))

    def test_local_memory_is_reported_in_every_architecture(self):
        functions = library(sm_75=[("mma_gemm_kernel", [HMMA_1688, "LDSM", "STL.128", "LDL"])],
                            sm_80=[("mma_gemm_kernel", [HMMA_16816, "LDSM"])])
        problems, _ = self.run_check(functions, "mma_gemm_kernel=HMMA,LDSM")
        self.assertEqual(len(problems), 1)
        self.assertTrue(problems[0].startswith("sm_75: mma_gemm_kernel uses local memory (LDL, STL.128)"))

    def test_local_memory_is_allowed_only_where_an_allowance_names_it(self):
        functions = library(sm_75=[("mma_gemm_kernel_big", [HMMA_1688, "LDSM", "STL.128"]),
                                   ("mma_gemm_kernel_small", [HMMA_1688, "LDSM", "LDL"])],
                            sm_80=[("mma_gemm_kernel_big", [HMMA_16816, "LDSM", "STL"])])
        allowances = check.parse_allowances(["_big@sm_75"])
        problems, looked = check.check(functions, [check.parse_expectations(None, ["mma_gemm_kernel=HMMA,LDSM"])[0]],
                                       "lib.a", allowances)
        self.assertEqual(sorted(p.split(":")[0] + ":" + p.split(" ")[1] for p in problems),
                         ["sm_75:mma_gemm_kernel_small", "sm_80:mma_gemm_kernel_big"])
        self.assertTrue(any("local memory allowed in mma_gemm_kernel_big" in text for text in looked["sm_75"]))
        # Without an architecture, the allowance holds in every one.
        problems, _ = check.check(functions, [check.parse_expectations(None, ["mma_gemm_kernel=HMMA,LDSM"])[0]],
                                  "lib.a", check.parse_allowances(["_big"]))
        self.assertEqual([p.split(" ")[1] for p in problems], ["mma_gemm_kernel_small"])


class ParseTest(unittest.TestCase):
    def test_cuobjdump_output(self):
        text = """
Fatbin elf code:
================
arch = sm_75
code version = [1,7]
        Function : _Z15mma_gemm_kernelv
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/              @!P0 HMMA.1688.F32 R4, R8, R10, R4 ;
Fatbin elf code:
================
arch = sm_90a
        Function : _Z15mma_gemm_kernelv
        /*0000*/                   HGMMA.64x128x16.F32 R24, gdesc[UR4], RZ ;
"""
        functions = sass.parse_sass(text)
        self.assertEqual(functions[("sm_75", "_Z15mma_gemm_kernelv")], ["MOV", "HMMA.1688.F32"])
        self.assertEqual(functions[("sm_90a", "_Z15mma_gemm_kernelv")], ["HGMMA.64x128x16.F32"])


if __name__ == "__main__":
    unittest.main()
