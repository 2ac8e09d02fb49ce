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
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

SKIP = 77
HINT = ("see the TODOs m2.05d (the copies) and m2.05e (the fragments) in "
        "month2/05_register_tiling/sgemm_2d_register_tile.cu "
        "and README.md, 'Reading the machine code'")
KERNEL_2D = "sgemm_2d_kernel"
ALL_KERNELS = re.compile(r"sgemm_[12]d_kernel")


def python_package_bins():
    """bin/ folders of NVIDIA's pip packages (nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm)."""
    found = []
    for entry in sys.path:
        base = Path(entry) / "nvidia"
        if base.is_dir():
            found += sorted(p for p in base.glob("*/bin") if p.is_dir())
    return found


def find_tool(name, hints):
    for folder in hints:
        if folder and (Path(folder) / name).is_file():
            return str(Path(folder) / name)
    found = shutil.which(name)
    if found:
        return found
    for folder in ["/usr/local/cuda/bin"] + [str(p) for p in python_package_bins()]:
        if (Path(folder) / name).is_file():
            return str(Path(folder) / name)
    return None


def parse_sass(text):
    """{(arch, function): [opcode, ...]} from cuobjdump -sass output."""
    functions = {}
    arch = "?"
    current = None
    for line in text.splitlines():
        match = re.search(r"arch = (sm_\d+\w*)", line)
        if match:
            arch = match.group(1)
            continue
        match = re.match(r"\s*Function : (\S+)", line)
        if match:
            current = (arch, match.group(1))
            functions.setdefault(current, [])
            continue
        match = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?);", line)
        if match and current is not None:
            instruction = re.sub(r"^@!?U?P[T0-9]+\s+", "", match.group(1).strip())
            functions[current].append(instruction.split()[0])
    return functions


def is_global_128(op):
    """A 16-byte copy of an input: cp.async (LDGSTS) or a read-only load (LDG ... CONSTANT).
    A plain LDG.E.128 does not count: the epilogue's float4 read of C (beta != 0) is one."""
    if ".128" not in op:
        return False
    return op.startswith("LDGSTS.") or (op.startswith("LDG.") and ".CONSTANT" in op)


def is_shared_128(op):
    return op.startswith("LDS.") and ".128" in op


def is_local(op):
    return op.split(".")[0] in ("LDL", "STL")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--library", required=True, help="the compiled exercise library or object")
    parser.add_argument("--cuobjdump", default="", help="cuobjdump to use (default: search)")
    args = parser.parse_args()

    given = args.cuobjdump if args.cuobjdump and "NOTFOUND" not in args.cuobjdump else ""
    cuobjdump = given if given and Path(given).is_file() else find_tool("cuobjdump", [])
    if not cuobjdump:
        print("SKIPPED: cuobjdump not found (it comes with the CUDA toolkit; "
              "`pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm` also provides it)")
        return SKIP
    # cuobjdump -sass calls nvdisasm, which it looks for on PATH.
    nvdisasm = find_tool("nvdisasm", [str(Path(cuobjdump).parent)])
    if not nvdisasm:
        print(f"SKIPPED: {cuobjdump} needs nvdisasm to print SASS, and none was found "
              "(CUDA toolkit, or `pip install nvidia-cuda-nvdisasm`)")
        return SKIP
    env = dict(os.environ)
    env["PATH"] = str(Path(nvdisasm).parent) + os.pathsep + env.get("PATH", "")

    result = subprocess.run([cuobjdump, "-sass", args.library], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)
    if result.returncode != 0:
        print(f"FAILED: {cuobjdump} -sass {args.library} exited with {result.returncode}:\n"
              f"{result.stdout[-2000:]}")
        return 1
    functions = parse_sass(result.stdout)
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
