"""Reading compiled GPU machine code (SASS) with cuobjdump, for the course's technique checks.

disassemble(library, cuobjdump="") returns {(arch, function): [opcode, ...]} for every
kernel in a compiled library or object, one entry per GPU architecture it was built for
("sm_75", ..., "sm_90a"), or raises ToolMissing when cuobjdump (or the nvdisasm it calls)
is not installed: the checks then report themselves skipped (exit 77). No GPU is needed,
so the checks run in CI. demangle(names) makes kernel names readable for messages.
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

SKIP = 77  # ctest's SKIP_RETURN_CODE for the checks


class ToolMissing(Exception):
    pass


def python_package_bins():
    """bin/ folders of NVIDIA's pip packages (nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm)."""
    found = []
    for entry in sys.path:
        base = Path(entry) / "nvidia"
        if base.is_dir():
            found += sorted(p for p in base.glob("*/bin") if p.is_dir())
            found += sorted(p for p in base.glob("*/*/bin") if p.is_dir())
    return found


def find_tool(name, hints=()):
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


def disassemble(library, cuobjdump=""):
    given = cuobjdump if cuobjdump and "NOTFOUND" not in cuobjdump else ""
    tool = given if given and Path(given).is_file() else find_tool("cuobjdump")
    if not tool:
        raise ToolMissing("cuobjdump not found (it comes with the CUDA toolkit; "
                          "`pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm` also provides it)")
    # cuobjdump -sass calls nvdisasm, which it looks for on PATH.
    nvdisasm = find_tool("nvdisasm", [str(Path(tool).parent)])
    if not nvdisasm:
        raise ToolMissing(f"{tool} needs nvdisasm to print SASS, and none was found "
                          "(CUDA toolkit, or `pip install nvidia-cuda-nvdisasm`)")
    env = dict(os.environ)
    env["PATH"] = str(Path(nvdisasm).parent) + os.pathsep + env.get("PATH", "")
    result = subprocess.run([tool, "-sass", str(library)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"{tool} -sass {library} exited with {result.returncode}:\n"
                           f"{result.stdout[-2000:]}")
    return parse_sass(result.stdout)


def has_ptx(library, cuobjdump=""):
    """Whether `library` embeds PTX (cuobjdump -lptx lists it): a build for a virtual
    architecture holds PTX and no machine code."""
    given = cuobjdump if cuobjdump and "NOTFOUND" not in cuobjdump else ""
    tool = given if given and Path(given).is_file() else find_tool("cuobjdump")
    if not tool:
        return False
    result = subprocess.run([tool, "-lptx", str(library)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    return result.returncode == 0 and ".ptx" in result.stdout


def ptx_only_message(library):
    """The skip reason for a library built as PTX only (has_ptx, and no machine code)."""
    return (f"{library} holds PTX only (a build for a virtual architecture, such as "
            "CUDA_ARCHS=75-virtual): there is no machine code to check until the driver "
            "compiles it")


def demangle(names):
    """{mangled: readable} for kernel names, through c++filt (binutils) or cu++filt (the CUDA
    toolkit); a name stays as it is where neither is installed."""
    names = sorted(set(names))
    tool = find_tool("c++filt") or find_tool("cu++filt")
    if not tool or not names:
        return {name: name for name in names}
    result = subprocess.run([tool], input="\n".join(names) + "\n", stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    readable = result.stdout.splitlines()
    if result.returncode != 0 or len(readable) != len(names):
        return {name: name for name in names}
    return dict(zip(names, readable))


def is_local_memory(op):
    """LDL / STL: registers the compiler ran out of ("spills"), or an array indexed at run time."""
    return op.split(".")[0] in ("LDL", "STL")
