#!/usr/bin/env python3
"""Compile the whole course with another CUDA toolkit, to catch what a newer one hides.

The course supports every CUDA toolkit from 12.0 (COURSE_OLDEST_CUDA_TOOLKIT in the top
CMakeLists.txt) to 13.x. A function, constant or PTX instruction that came later builds on
a new toolkit and breaks the build of a learner who has an older one. This compiles (-c,
nothing is linked or run, no GPU needed) every CUDA and C++ source the build compiles: the
kernel libraries, from the skeletons and from the solutions, the tests and the benchmarks,
with the build's own flags, include folders and GPU architectures (by default sm_75,
sm_80 and sm_90, plus the sm_90a code of the Hopper exercises), and prints each failure
with the compiler's message.

Two ways to say which toolkit:

  check_oldest_toolkit.py --nvcc /usr/local/cuda-12.0/bin/nvcc
      an installed toolkit: its nvcc compiles everything.

  check_oldest_toolkit.py --wheels 12.0
      NVIDIA's CUDA 12.0 packages from PyPI, when no such toolkit is installed. They hold
      that toolkit's headers (runtime and driver API, half and bfloat16 types, CCCL,
      cuBLAS) and its PTX assembler (ptxas), but no nvcc: so this machine's nvcc compiles,
      against those headers instead of its own, and then CUDA 12.0's ptxas assembles every
      kernel that has PTX written by hand (asm), for each architecture. That finds a
      function or constant those headers lack, a version test that picks the wrong branch,
      and a PTX instruction that assembler does not know; not a bug of the older compiler
      itself. The packages are downloaded once (pip download; about 400 MB, most of it
      cuBLAS's libraries, of which only the headers are kept) into the work folder.
      --wheels alone takes the version from COURSE_OLDEST_CUDA_TOOLKIT.

Whether a source compiles does not depend on how well it is optimized, and the optimizers
are most of a build's time: so everything is compiled with -O0, the host compiler only
checks the code (-fsyntax-only), and the GPU code of the tests and benchmarks (small
kernels) is compiled for the first architecture only; the kernel libraries get every
architecture. The whole course takes a few minutes on two cores. --full compiles exactly
as the build does (optimized, object files, every architecture for every source).

  Options: --archs "75;80;90" (CMake's CUDA architectures), --work-dir DIR (default
  <build>/oldest-toolkit), --jobs N, --filter REGEX (only the sources whose path matches).

Not compiled here: the PyTorch extensions (m1.05, m3.01, m3.02, m3.06), which
torch.utils.cpp_extension builds when their tests run; the check lists them. Their CUDA
sources include the same course headers that the kernel libraries compiled here do.

Exit status 0: everything compiled; 1: a source failed; 2: the check could not run.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The packages of one CUDA toolkit version on PyPI, and what is kept of each.
WHEELS = {
    "nvidia-cuda-runtime-cu{major}": "include",    # cuda_runtime.h, cuda.h, cuda_fp16.h, ...
    "nvidia-cuda-cccl-cu{major}": "include",       # cuda/std, cub, thrust
    "nvidia-cublas-cu{major}": "include",          # cublas_v2.h
    "nvidia-cuda-nvcc-cu{major}": "bin/ptxas",     # the PTX assembler (no nvcc in it)
}


class CheckError(Exception):
    pass


# ------------------------------------------------------------------------------- toolkit

def find_nvcc(given):
    for candidate in (given, os.environ.get("CUDACXX"), shutil.which("nvcc"),
                      "/usr/local/cuda/bin/nvcc"):
        if candidate and Path(candidate).is_file():
            return str(Path(candidate).resolve())
    raise CheckError("no nvcc found (give one with --nvcc, or put the CUDA toolkit's bin/ on PATH)")


def tool_version(tool):
    """"12.0" from `tool --version` (nvcc and ptxas print "release 12.0, V12.0.140")."""
    output = subprocess.run([tool, "--version"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True).stdout
    match = re.search(r"release (\d+\.\d+)", output)
    if not match:
        raise CheckError(f"could not read the CUDA version of {tool}:\n{output}")
    return match.group(1)


def oldest_supported():
    text = (ROOT / "CMakeLists.txt").read_text()
    match = re.search(r"set\(COURSE_OLDEST_CUDA_TOOLKIT\s+([0-9.]+)\)", text)
    return match.group(1) if match else "12.0"


def fetch_wheels(version, folder):
    """The headers and ptxas of CUDA `version` from NVIDIA's PyPI packages, in `folder`:
    returns (include folder, ptxas). Downloads only once."""
    include, ptxas = folder / "include", folder / "bin" / "ptxas"
    stamp = folder / "complete"
    if stamp.is_file() and stamp.read_text().strip() == version:
        return include, ptxas
    major = version.split(".")[0]
    if major != "12":
        raise CheckError(f"--wheels knows the packages of CUDA 12.x, not {version}: for another "
                         "version, give its nvcc with --nvcc")
    downloads = folder / "downloads"
    shutil.rmtree(folder, ignore_errors=True)
    downloads.mkdir(parents=True)
    include.mkdir()
    ptxas.parent.mkdir()
    for package, keep in WHEELS.items():
        name = package.format(major=major)
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                   "--only-binary=:all:", "--dest", str(downloads), f"{name}=={version}.*"]
        print(f"  pip download {name}=={version}.*", flush=True)
        if subprocess.call(command) != 0:
            raise CheckError(f"pip could not download {name}=={version}.* (is pip installed, "
                             "and PyPI reachable?)")
        wheel = next(downloads.glob(name.replace("-", "_") + "-*.whl"), None)
        if wheel is None:
            raise CheckError(f"pip download left no wheel of {name} in {downloads}")
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.infolist():
                parts = member.filename.split("/")
                # nvidia/<package>/include/... or nvidia/<package>/bin/ptxas
                if len(parts) < 4 or member.is_dir() or parts[-1] == "__init__.py":
                    continue
                inside = "/".join(parts[2:])
                if keep == "include" and parts[2] == "include":
                    target = include / "/".join(parts[3:])
                elif inside == keep:
                    target = ptxas
                else:
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(member) as source, open(target, "wb") as out:
                    shutil.copyfileobj(source, out)
        wheel.unlink()  # cuBLAS's is large, and only its headers were needed
    ptxas.chmod(0o755)
    stamp.write_text(version + "\n")
    return include, ptxas


# ------------------------------------------------------------------------------- commands

def configure(nvcc, archs, folder):
    """Configures the course with CMake in `folder` (afresh: the compiler may have changed)
    and returns its compile commands."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    command = ["cmake", "-S", str(ROOT), "-B", str(folder), "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
               f"-DCMAKE_CUDA_COMPILER={nvcc}", f"-DCMAKE_CUDA_ARCHITECTURES={archs}"]
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        raise CheckError(f"CMake could not configure the course with {nvcc}:\n{result.stdout[-4000:]}")
    return json.loads((folder / "compile_commands.json").read_text())


def course_sources(entries, pattern):
    """One compile command per source file of the course. A test is compiled once for the
    skeleton and once for the solution, with only COURSE_IMPL changed: once is enough."""
    chosen = {}
    for entry in entries:
        path = Path(entry["file"]).resolve()
        try:
            relative = path.relative_to(ROOT).as_posix()
        except ValueError:
            continue  # GoogleTest or Google Benchmark built from source: not the course's
        if pattern and not re.search(pattern, relative):
            continue
        chosen.setdefault(relative, entry)
    return sorted(chosen.items())


def sources_not_built(entries):
    """The course's C++ and CUDA sources that the CMake build does not compile."""
    built = {Path(entry["file"]).resolve() for entry in entries}
    found = []
    for top in ["common", "solutions", *sorted(p.name for p in ROOT.glob("month[0-9]*"))]:
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix in (".cu", ".cpp") and path.resolve() not in built:
                found.append(path.relative_to(ROOT).as_posix())
    return sorted(found)


def arguments(entry):
    return entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])


GENCODE = re.compile(r"^(--generate-code|-gencode)=arch=compute_(\w+),code=(.*)$")


def ptx_only(args):
    """Replaces each GPU architecture's machine code by its PTX, which ptxas then assembles."""
    result = []
    for arg in args:
        match = GENCODE.match(arg)
        if match:
            arch = match.group(2)
            arg = f"{match.group(1)}=arch=compute_{arch},code=compute_{arch}"
        result.append(arg)
    return result


def first_architecture_only(args):
    """Keeps the first GPU architecture of the command (the oldest of CMake's list)."""
    seen = False
    result = []
    for arg in args:
        if GENCODE.match(arg):
            if seen:
                continue
            seen = True
        result.append(arg)
    return result


TARGET = re.compile(r"CMakeFiles/([^/]+)\.dir/")


def is_kernel_library(entry):
    """Whether the command compiles a source of an exercise's kernel library (the target
    <id>_exercise or <id>_solution), where the GPU code is, rather than a test or benchmark."""
    match = TARGET.search(entry.get("output", "") or " ".join(arguments(entry)))
    return bool(match and re.search(r"_(exercise|solution)$", match.group(1)))


# ------------------------------------------------------------------------------- compiling

def run(command, cwd):
    result = subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    return result.returncode, result.stdout


def assemble(ptxas, ptx, arch, folder):
    """Assembles `ptx` for sm_<arch> with `ptxas`. PTX written by a newer compiler declares
    that compiler's PTX version, which an older ptxas refuses before reading on: declared as
    the newest version that ptxas knows, each instruction is then checked against it."""
    text = ptx.read_text()
    source, output = folder / f"sm_{arch}.ptx", folder / f"sm_{arch}.cubin"
    for _ in range(2):
        source.write_text(text)
        code, message = run([ptxas, "-O0", f"-arch=sm_{arch}", str(source), "-o", str(output)],
                            None)
        newest = re.search(r"Unsupported \.version \d+\.\d+; current version is '(\d+\.\d+)'",
                           message)
        if code == 0 or not newest:
            break
        text = re.sub(r"^\.version \d+\.\d+", f".version {newest.group(1)}", text, count=1,
                      flags=re.MULTILINE)
    return code, message


OPTIMIZATION = re.compile(r"^-O[0-9s]$")


def quick(args, is_cuda, every_architecture):
    """The same command, cheaper, for what it tells: whether the source compiles. Nothing
    is optimized (the optimizers are most of a build's time), the host compiler only checks
    the code (-fsyntax-only: no object file), and the GPU code of a test or benchmark is
    compiled for the first architecture only (its kernels are small; the kernel libraries
    get every architecture)."""
    args = ["-O0" if OPTIMIZATION.match(arg) else arg for arg in args]
    if not is_cuda:
        return args + ["-fsyntax-only"]
    args[1:1] = ["-Xcicc", "-O0", "-Xptxas", "-O0", "-Xcompiler=-fsyntax-only"]
    return args if every_architecture else first_architecture_only(args)


# Headers of the compiling toolkit's folders that may stand in for the older toolkit's: the
# compiler's own (crt/: they go with the nvcc that compiles), libcu++'s target macros (nv/),
# which NVIDIA's CCCL package for CUDA 12.0 lacks (it holds only the files named *.h), and
# cuDNN's, a library of its own with its own versions, installed beside the toolkit.
STAND_INS = ("crt/", "nv/", "cudnn")


def headers_from(deps_file, toolkit):
    """The headers of `toolkit` that a compilation read, from its dependency file."""
    if not deps_file.is_file():
        return []
    text = deps_file.read_text().replace("\\\n", " ")
    found = set()
    for word in text.split()[1:]:
        path = Path(word)
        if not path.is_absolute():
            continue
        path = path.resolve()
        if toolkit in path.parents:
            found.add(path)
    return sorted(found)


def compile_one(relative, entry, toolkit, scratch, full):
    """Compiles one source; returns (relative, ok, message, seconds)."""
    start = time.monotonic()
    is_cuda = relative.endswith(".cu")
    args = arguments(entry)
    if not full:
        args = quick(args, is_cuda, is_kernel_library(entry))
    work = scratch / re.sub(r"[^A-Za-z0-9_.]+", "_", relative)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    deps = work / "headers.d"
    if toolkit.headers:
        args = [args[0], f"-I{toolkit.headers}"] + args[1:] + ["-MD", "-MF", str(deps)]
        if is_cuda and toolkit.legacy_launch:
            # Kernel launches (<<<...>>>) in the form the older runtime's headers declare.
            args.insert(1, "--legacy-launch-seq")
    if is_cuda and toolkit.ptxas:
        args = ptx_only(args) + ["--keep", f"--keep-dir={work}"]
    code, message = run(args, entry["directory"])
    problems = [message.strip()] if code != 0 else []
    if code == 0 and toolkit.headers:
        missing = [str(header) for header in headers_from(deps, toolkit.root)
                   if not header.as_posix().split("/include/", 1)[-1].startswith(STAND_INS)]
        if missing:
            more = f" (and {len(missing) - 3} more)" if len(missing) > 3 else ""
            problems.append(f"headers that are not in {toolkit.headers}, read from the "
                            f"compiling toolkit instead: {', '.join(missing[:3])}{more}")
    if code == 0 and is_cuda and toolkit.ptxas:
        for ptx in sorted(work.glob("*.ptx")):
            text = ptx.read_text()
            target = re.search(r"^\.target sm_(\w+)", text, flags=re.MULTILINE)
            if not target or "begin inline asm" not in text:
                continue  # no PTX of the course's own: what the compiler wrote, it assembles
            arch = target.group(1)
            asm_code, asm_message = assemble(toolkit.ptxas, ptx, arch, work)
            if asm_code != 0:
                problems.append(f"ptxas {toolkit.ptxas_version} -arch=sm_{arch}, on the PTX "
                                f"compiled from {relative}:\n{asm_message.strip()}")
    shutil.rmtree(work, ignore_errors=True)
    return relative, not problems, "\n".join(problems), time.monotonic() - start


class Toolkit:
    """What compiles: nvcc, and, to stand for an older toolkit, its headers and ptxas."""

    def __init__(self, nvcc, headers, ptxas):
        self.nvcc = nvcc
        self.root = Path(nvcc).resolve().parent.parent
        self.headers = str(Path(headers).resolve()) if headers else None
        self.ptxas = str(Path(ptxas).resolve()) if ptxas else None
        self.ptxas_version = tool_version(self.ptxas) if ptxas else None
        self.legacy_launch = self.accepts("--legacy-launch-seq")

    def accepts(self, option):
        """Whether this nvcc knows `option` (some are not in its --help)."""
        result = subprocess.run([self.nvcc, option, "-E", "-x", "cu", "-", "-o", os.devnull],
                                input="", stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        return result.returncode == 0

    def describe(self):
        text = f"nvcc {tool_version(self.nvcc)} ({self.nvcc})"
        if self.headers:
            text += f" against the headers in {self.headers}"
        if self.ptxas:
            text += (f", the hand-written PTX assembled by ptxas {self.ptxas_version} "
                     f"({self.ptxas})")
        return text


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nvcc", help="the nvcc to compile with (default: CUDACXX, PATH, "
                        "/usr/local/cuda/bin/nvcc)")
    parser.add_argument("--wheels", nargs="?", const=oldest_supported(), metavar="VERSION",
                        help="compile against the headers, and assemble with the ptxas, of this "
                        "CUDA version's PyPI packages (default: the oldest the course supports)")
    parser.add_argument("--headers", help="a toolkit's include folder to compile against "
                        "(what --wheels sets up)")
    parser.add_argument("--ptxas", help="a toolkit's ptxas to assemble the hand-written PTX "
                        "with (what --wheels sets up)")
    parser.add_argument("--archs", default="75;80;90", help="CUDA architectures (CMake's list)")
    parser.add_argument("--work-dir", help="where to configure and compile "
                        "(default: <BUILD_DIR or build>/oldest-toolkit)")
    parser.add_argument("--full", action="store_true", help="compile exactly as the build "
                        "does: optimized, with object files, every architecture for every "
                        "source (slower)")
    parser.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--filter", help="only the sources whose path matches this regular "
                        "expression")
    args = parser.parse_args(argv)

    build = Path(os.environ.get("BUILD_DIR") or ROOT / "build")
    work = Path(args.work_dir or build / "oldest-toolkit").resolve()
    started = time.monotonic()
    try:
        nvcc = find_nvcc(args.nvcc)
        headers, ptxas = args.headers, args.ptxas
        if args.wheels:
            print(f"CUDA {args.wheels}'s headers and ptxas, from NVIDIA's packages on PyPI:")
            headers, ptxas = fetch_wheels(args.wheels, work / f"cuda-{args.wheels}")
        toolkit = Toolkit(nvcc, headers, ptxas)
        compiler = toolkit.describe()
        print(f"Compiling the course with {compiler}; architectures {args.archs} "
              "(and sm_90a where the build adds it).", flush=True)
        entries = configure(nvcc, args.archs, work / "cmake")
    except CheckError as error:
        print(f"check_oldest_toolkit: {error}", file=sys.stderr)
        return 2

    sources = course_sources(entries, args.filter)
    if not sources:
        print("check_oldest_toolkit: no source matches", file=sys.stderr)
        return 2
    scratch = work / "scratch"
    failed = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(compile_one, relative, entry, toolkit, scratch, args.full)
                   for relative, entry in sources]
        for future in concurrent.futures.as_completed(futures):
            relative, ok, message, seconds = future.result()
            print(f"{'ok    ' if ok else 'FAILED'} {relative} ({seconds:.0f} s)", flush=True)
            if not ok:
                failed.append((relative, message))
    for relative, message in sorted(failed):
        print(f"\n=== {relative}\n{message}")
    if not args.filter:
        print("\nNot compiled here (the PyTorch extensions, built by torch.utils.cpp_extension "
              "when their tests run): " + ", ".join(sources_not_built(entries)))
    minutes, seconds = divmod(int(time.monotonic() - started), 60)
    print(f"\nCompiled with {compiler} in {minutes} min {seconds} s.")
    print(f"{len(sources) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
