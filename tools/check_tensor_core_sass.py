#!/usr/bin/env python3
"""Technique check for the tensor-core GEMMs (m2.07, m2.08): read their machine code.

The tests prove a GEMM is right; this proves it runs on the instructions its lesson says,
from the SASS the compiler produced, so it needs no GPU:

  --expect KERNEL=OP[,OP...]   every GPU architecture in the library has machine code of
                               a kernel whose name contains KERNEL, and some instantiation
                               of it issues each OP (an opcode prefix: HMMA for mma.sync and
                               WMMA, HGMMA for wgmma, LDSM for ldmatrix, UTMALDG for the TMA)
  --expect KERNEL@ARCH=OP,...  the same for one architecture only (e.g. sm_90a: wgmma
                               exists there alone; other architectures' builds of the
                               kernel are only checked for local memory)
and no instantiation of those kernels touches local memory (LDL / STL: spilled registers,
or an array indexed at run time), which lives in DRAM behind the caches.

  check_tensor_core_sass.py --library <lib.a> --expect wmma_gemm_kernel=HMMA [--hint TEXT]

Exit status 0: all good; 1: a check failed; 77: cuobjdump is not installed (ctest: skipped).
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sass  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--library", required=True, help="the compiled exercise library")
    parser.add_argument("--expect", action="append", required=True, metavar="KERNEL=OP,...")
    parser.add_argument("--cuobjdump", default="", help="cuobjdump to use (default: search)")
    parser.add_argument("--hint", default="", help="what to look at when a check fails")
    args = parser.parse_args()

    expectations = []
    for item in args.expect:
        target, _, ops = item.partition("=")
        kernel, _, arch = target.partition("@")
        if not kernel or not ops:
            parser.error(f"--expect takes KERNEL[@ARCH]=OP[,OP...], got {item!r}")
        expectations.append((kernel, arch, [op for op in ops.split(",") if op]))
    try:
        functions = sass.disassemble(args.library, args.cuobjdump)
    except sass.ToolMissing as missing:
        print(f"SKIPPED: {missing}")
        return sass.SKIP
    except RuntimeError as error:
        print(f"FAILED: {error}")
        return 1

    problems = []
    for kernel, only_arch, ops in expectations:
        found = {key: code for key, code in functions.items() if kernel in key[1]}
        if not found or (only_arch and not any(key[0] == only_arch for key in found)):
            where = f" for {only_arch}" if only_arch else ""
            problems.append(f"no machine code of {kernel}{where} in {args.library} (is it built "
                            "for that real GPU architecture, and does the launcher instantiate "
                            "it?)")
            continue
        for arch in sorted({key[0] for key in found if not only_arch or key[0] == only_arch}):
            variants = [code for key, code in found.items() if key[0] == arch]
            for op in ops:
                if not any(any(o.startswith(op) for o in code) for code in variants):
                    problems.append(f"{arch}: no instantiation of {kernel} issues {op}")
        for (arch, name), code in sorted(found.items()):
            local = sorted({o for o in code if sass.is_local_memory(o)})
            if local:
                problems.append(f"{arch}: {name} uses local memory ({', '.join(local)}): "
                                "registers spilled, or an array indexed with a run-time value")
    if problems:
        print("FAILED:\n  " + "\n  ".join(problems))
        if args.hint:
            print(args.hint)
        return 1
    checked = ", ".join(f"{kernel}{'@' + arch if arch else ''}: {'+'.join(ops)}"
                        for kernel, arch, ops in expectations)
    print(f"OK: {checked}; no local memory")
    return 0


if __name__ == "__main__":
    sys.exit(main())
