#!/usr/bin/env python3
"""Technique check for exercise m2.05: read the 2D kernel's machine code.

The tests prove the GEMM is right; this proves it is built the way the lesson says, from
the machine code (SASS) the compiler produced, so it needs no GPU:

  * 128-bit loads of an input from global memory: LDGSTS.E.128 / LDGSTS.E.BYPASS.128 (a
    16-byte cp.async copy straight into shared memory) or LDG.E.128.CONSTANT (a float4
    load through the read-only path: __ldg, or const __restrict__);
  * 128-bit loads from shared memory: LDS.128 (the float4 reads of the fragments);
  * no local memory: no LDL / STL in any of the exercise's kernels. Local memory is where
    the compiler puts registers it ran out of ("spills") and arrays it cannot keep in
    registers (indexed with a run-time value): it lives in DRAM, behind the caches.

Run by ctest (see CMakeLists.txt) as
  check_sass.py --library <libm2_05_register_tiling_solution.a> [--cuobjdump PATH]
and by hand the same way. Exit status 0: all good; 1: a check failed; 77: cuobjdump (or
the nvdisasm it needs) is not installed, reported by ctest as skipped.
"""
import argparse
import re
import sys
from pathlib import Path

# The shared SASS reader of the course's technique checks (tools/sass.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import sass  # noqa: E402

SKIP = sass.SKIP
HINT = ("see TODO(m2.05d) (the copies) and TODO(m2.05e) (the fragments) in "
        "month2/05_register_tiling/sgemm_2d_register_tile.cu "
        "and README.md, 'Reading the machine code'")
KERNEL_2D = "sgemm_2d_kernel"
ALL_KERNELS = re.compile(r"sgemm_[12]d_kernel")


def is_global_128(op):
    """A 16-byte copy of an input: cp.async (LDGSTS) or a read-only load (LDG ... CONSTANT).
    A plain LDG.E.128 does not count: the epilogue's float4 read of C (beta != 0) is one."""
    if ".128" not in op:
        return False
    return op.startswith("LDGSTS.") or (op.startswith("LDG.") and ".CONSTANT" in op)


def is_shared_128(op):
    return op.startswith("LDS.") and ".128" in op


is_local = sass.is_local_memory


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--library", required=True, help="the compiled exercise library or object")
    parser.add_argument("--cuobjdump", default="", help="cuobjdump to use (default: search)")
    args = parser.parse_args()

    try:
        functions = sass.disassemble(args.library, args.cuobjdump)
    except sass.ToolMissing as missing:
        print(f"SKIPPED: {missing}")
        return SKIP
    except RuntimeError as error:
        print(f"FAILED: {error}")
        return 1
    if not functions and sass.has_ptx(args.library, args.cuobjdump):
        print(f"SKIPPED: {sass.ptx_only_message(args.library)}")
        return SKIP
    kernels = {key: ops for key, ops in functions.items() if ALL_KERNELS.search(key[1])}
    two_d = {key: ops for key, ops in kernels.items() if KERNEL_2D in key[1]}
    if not two_d:
        print(f"FAILED: no {KERNEL_2D} machine code in {args.library} (is it built for a real "
              "GPU architecture, and does the launcher instantiate the kernel?)")
        return 1

    problems = []
    for arch in sorted({key[0] for key in two_d}):
        variants = {key: ops for key, ops in two_d.items() if key[0] == arch}
        if not any(any(is_global_128(op) for op in ops) for ops in variants.values()):
            problems.append(f"{arch}: no instantiation of {KERNEL_2D} issues a 128-bit global load "
                            "of an input (LDGSTS.E.128, or LDG.E.128.CONSTANT through the read-only path): B is "
                            "not copied as float4. " + HINT)
        if not any(any(is_shared_128(op) for op in ops) for ops in variants.values()):
            problems.append(f"{arch}: no instantiation of {KERNEL_2D} issues a 128-bit shared load "
                            "(LDS.128): the fragments are not read as float4. " + HINT)
    for (arch, name), ops in sorted(kernels.items()):
        local = sorted({op for op in ops if is_local(op)})
        if local:
            problems.append(f"{arch} {name}: uses local memory ({', '.join(local)}): registers "
                            "spilled or an array indexed at run time. Check `nvcc -Xptxas -v` "
                            "(spill stores / loads) and README.md, 'Registers and occupancy'.")

    for (arch, name), ops in sorted(kernels.items()):
        counts = {
            "FFMA": sum(op.startswith("FFMA") for op in ops),
            "global 128-bit": sum(is_global_128(op) for op in ops),
            "LDS.128": sum(is_shared_128(op) for op in ops),
            "LDL/STL": sum(is_local(op) for op in ops),
        }
        print(f"{arch} {name}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    if problems:
        for problem in problems:
            print("FAILED: " + problem)
        return 1
    print(f"OK: {KERNEL_2D} uses 128-bit global and shared loads; no kernel uses local memory")
    return 0


if __name__ == "__main__":
    sys.exit(main())
