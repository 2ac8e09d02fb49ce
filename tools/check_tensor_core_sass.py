#!/usr/bin/env python3
"""Technique check for the tensor-core kernels (m2.07, m2.08, m3.05): read their machine code.

The tests prove a kernel is right; this proves it runs on the instructions its lesson says,
from the SASS the compiler produced, so it needs no GPU. A library holds machine code for
each GPU architecture it was built for (sm_75, sm_80, ..., sm_90a), and each architecture
has its own instructions, so every architecture is checked on its own:

  --expect KERNEL=OP[,OP...]   every GPU architecture in the library has machine code of
                               a kernel whose name contains KERNEL, and, in each
                               architecture that has the instruction OP (see below), some
                               instantiation of it issues OP (an opcode prefix)
  --expect KERNEL@ARCH=OP,...  the same for the code of one architecture only (e.g.
                               sm_90a); the kernel's code for the others is only checked
                               for local memory
and no instantiation of those kernels, in any architecture, touches local memory (LDL /
STL: spilled registers, or an array indexed at run time), which lives in DRAM behind the
caches, except where allowed:

  --allow-local-memory REGEX[@ARCH]
                               instantiations whose readable name matches REGEX (in ARCH
                               only, or in every architecture) may use local memory: for
                               given code that the check does not grade, or tiles that no
                               GPU of that architecture can run (CMakeLists.txt says why)

A library built as PTX only (CUDA_ARCHS=75-virtual) has no machine code to read: the check
is skipped, saying so.

Which architectures have which instruction (an OP is looked for only there):
  HMMA      mma.sync and WMMA products      sm_70 and newer (on sm_75, mma.sync m16n8k16
                                            is two HMMA.1688, float16 only: Turing has no
                                            bfloat16 tensor cores)
  LDSM      ldmatrix                        sm_75 and newer
  LDGSTS    cp.async                        sm_80 and newer
  UTMALDG   TMA copies (cp.async.bulk)      sm_90 and newer
  HGMMA     wgmma                           sm_90a only (architecture-specific code)

  check_tensor_core_sass.py --library <lib.a> --expect wmma_gemm_kernel=HMMA [--hint TEXT]

It prints, for each architecture, what it looked for there. Exit status 0: all good; 1: a
check failed; 77: cuobjdump is not installed (ctest: skipped).
"""
import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sass  # noqa: E402

# opcode prefix: (what it is, first architecture that has it, only in "a" code of that one)
INSTRUCTIONS = {
    "HMMA": ("mma.sync / WMMA", 70, False),
    "LDSM": ("ldmatrix", 75, False),
    "LDGSTS": ("cp.async", 80, False),
    "UTMALDG": ("the TMA", 90, False),
    "HGMMA": ("wgmma", 90, True),
}


def arch_number(arch):
    """(90, "a") for "sm_90a"; (0, "") for a name it does not know."""
    match = re.fullmatch(r"sm_(\d+)([a-z]?)", arch)
    return (int(match.group(1)), match.group(2)) if match else (0, "")


def arch_has(arch, op):
    """Whether machine code for `arch` can contain the instruction `op` at all."""
    if op not in INSTRUCTIONS:
        return True  # an opcode the table does not list is expected everywhere
    _, first, specific = INSTRUCTIONS[op]
    number, suffix = arch_number(arch)
    if specific:
        return number == first and suffix == "a"
    return number >= first


def where_it_exists(op):
    what, first, specific = INSTRUCTIONS[op]
    if specific:
        return f"{what}: sm_{first}a code only"
    return f"{what}: sm_{first} and newer"


def parse_expectations(parser, items):
    expectations = []
    for item in items:
        target, _, ops = item.partition("=")
        kernel, _, arch = target.partition("@")
        ops = [op for op in ops.split(",") if op]
        if not kernel or not ops:
            parser.error(f"--expect takes KERNEL[@ARCH]=OP[,OP...], got {item!r}")
        expectations.append((kernel, arch, ops))
    return expectations


def parse_allowances(items):
    """[(compiled regex, arch or "")] from --allow-local-memory REGEX[@ARCH]."""
    allowances = []
    for item in items:
        pattern, _, arch = item.rpartition("@") if re.search(r"@sm_\d+a?$", item) else (item, "", "")
        allowances.append((re.compile(pattern), arch))
    return allowances


def allowed(allowances, arch, readable_name):
    return any(regex.search(readable_name) and (not only or only == arch) for regex, only in allowances)


def check(functions, expectations, library, allowances=()):
    """(problems, {arch: [what was looked for there]})."""
    archs = sorted({arch for arch, _ in functions}, key=arch_number)
    problems = []
    looked = {arch: [] for arch in archs}
    for kernel, only_arch, ops in expectations:
        found = {key: code for key, code in functions.items() if kernel in key[1]}
        wanted = [only_arch] if only_arch else archs
        for arch in wanted:
            variants = [code for key, code in found.items() if key[0] == arch]
            if not variants:
                problems.append(f"{arch}: no machine code of {kernel} in {library} (is it built "
                                f"for {arch}, and does the launcher instantiate it?)")
                continue
            expected = [op for op in ops if arch_has(arch, op)]
            skipped = [op for op in ops if not arch_has(arch, op)]
            for op in expected:
                if not any(any(o.startswith(op) for o in code) for code in variants):
                    problems.append(f"{arch}: no instantiation of {kernel} issues {op}")
            text = f"{kernel} {'+'.join(expected) if expected else '(no tensor-core op here)'}"
            if skipped:
                text += f" (not {', '.join(skipped)}: " + "; ".join(where_it_exists(op)
                                                                     for op in skipped) + ")"
            looked.setdefault(arch, []).append(text)
        spilling = {key: sorted({o for o in code if sass.is_local_memory(o)})
                    for key, code in found.items()}
        readable = sass.demangle(name for (_, name), local in spilling.items() if local)
        for (arch, name), local in sorted(spilling.items()):
            if local and allowed(allowances, arch, readable[name]):
                looked.setdefault(arch, []).append(f"local memory allowed in {readable[name]}")
            elif local:
                problems.append(f"{arch}: {readable[name]} uses local memory "
                                f"({', '.join(local)}): registers spilled, or an array indexed "
                                "with a run-time value")
    return problems, looked


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--library", required=True,
                        help="the compiled exercise library (or an object or cubin)")
    parser.add_argument("--expect", action="append", required=True, metavar="KERNEL=OP,...")
    parser.add_argument("--cuobjdump", default="", help="cuobjdump to use (default: search)")
    parser.add_argument("--hint", default="", help="what to look at when a check fails")
    parser.add_argument("--allow-local-memory", action="append", default=[], metavar="REGEX[@ARCH]")
    args = parser.parse_args()

    expectations = parse_expectations(parser, args.expect)
    try:
        functions = sass.disassemble(args.library, args.cuobjdump)
    except sass.ToolMissing as missing:
        print(f"SKIPPED: {missing}")
        return sass.SKIP
    except RuntimeError as error:
        print(f"FAILED: {error}")
        return 1
    if not functions:
        if sass.has_ptx(args.library, args.cuobjdump):
            print(f"SKIPPED: {sass.ptx_only_message(args.library)}")
            return sass.SKIP
        print(f"FAILED: no GPU machine code in {args.library}")
        return 1

    problems, looked = check(functions, expectations, args.library,
                             parse_allowances(args.allow_local_memory))
    for arch, texts in looked.items():
        if texts:
            print(f"{arch}: looked for {'; '.join(texts)}")
    if problems:
        print("FAILED:\n  " + "\n  ".join(problems))
        if args.hint:
            print(args.hint)
        return 1
    allowed_somewhere = any(text.startswith("local memory allowed") for texts in looked.values()
                            for text in texts)
    print(f"OK: {', '.join(a for a, texts in looked.items() if texts)}; no local memory"
          + (" except where allowed (above)" if allowed_somewhere else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
