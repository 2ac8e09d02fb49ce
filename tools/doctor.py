#!/usr/bin/env python3
"""./course doctor: what this machine has for the course, one line per item.

Each line is OK, or says what is missing and the command that fixes it:

    OK    GPU: NVIDIA GeForce RTX 4090, compute capability 8.9, 99 KiB shared memory per block
    FIX   PyTorch: 2.5.1 built for CUDA 12.4, but nvcc is CUDA 13.0 ...; to fix: python3 -m pip ...
    NEED  CMake: not found; to fix: sudo apt-get install cmake

NEED is something the build cannot do without (a C++ compiler nvcc accepts, CMake, the CUDA
toolkit, GoogleTest, Google Benchmark): the exit status is 1 when there is one, else 0.
FIX is something some exercises need; their tests report themselves skipped without it, with
the same command. Nothing here needs a GPU, PyTorch or nvcc to run: it says what is missing.
PyTorch is asked about in a separate process, by the Python the build's tests use (the one in
<build>/course_python/interpreter.txt; the build folder is $BUILD_DIR or build/).

    python3 tools/doctor.py [--build-dir DIR]      (./course doctor)
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "common" / "python"))
from course_harness import requirements  # noqa: E402  (imports no torch)

sys.path.insert(0, str(ROOT / "tools"))
import sass  # noqa: E402  (where the SASS checks find cuobjdump)

OK, FIX, NEED = "OK", "FIX", "NEED"
GPU_OLDEST = (7, 5)  # compute capability: Turing (T4, RTX 20xx)
# The shared memory a block may opt in to, by compute capability, when the driver cannot be
# asked (the twin of course/requirements.h's table).
SHARED_KIB_BY_CC = {(7, 5): 64, (8, 0): 163, (8, 6): 99, (8, 7): 163, (8, 9): 99, (9, 0): 227}
# The driver a CUDA major version needs (CUDA's release notes, "minor version compatibility").
DRIVER_FOR_CUDA_MAJOR = {12: "525", 13: "580"}


class Item:
    def __init__(self, status, name, text):
        self.status, self.name, self.text = status, name, text

    def line(self):
        return f"{self.status:<5} {self.name}: {self.text}"


# --------------------------------------------------------------------------- pure helpers

def version_tuple(text):
    """(3, 25, 1) from '3.25.1' or 'cmake version 3.25.1-dirty'; () when there is none."""
    match = re.search(r"(\d+(?:\.\d+)+)", text or "")
    return tuple(int(part) for part in match.group(1).split(".")) if match else ()


def version_text(version):
    return ".".join(str(part) for part in version)


def cmake_minimum(cmakelists_text):
    """The version in cmake_minimum_required(VERSION x.y), as a tuple."""
    match = re.search(r"cmake_minimum_required\s*\(\s*VERSION\s+([\d.]+)", cmakelists_text, re.I)
    return version_tuple(match.group(1)) if match else ()


def oldest_cuda_toolkit(cmakelists_text):
    """COURSE_OLDEST_CUDA_TOOLKIT of the top-level CMakeLists.txt, as (major, minor)."""
    match = re.search(r"set\s*\(\s*COURSE_OLDEST_CUDA_TOOLKIT\s+\"?([\d.]+)", cmakelists_text)
    return version_tuple(match.group(1))[:2] if match else (12, 0)


def newest_gcc_accepted(host_config_text):
    """The newest GCC major version this nvcc accepts, from its crt/host_config.h ('#if
    __GNUC__ > 15' guards the 'unsupported GNU version' error), or None."""
    match = re.search(r"#if\s+__GNUC__\s*>\s*(\d+)", host_config_text or "")
    return int(match.group(1)) if match else None


def profiling_restricted(params_text):
    """True when only root may read the GPU's performance counters (RmProfilingAdminOnly: 1 in
    /proc/driver/nvidia/params), False when everyone may, None when the file does not say."""
    match = re.search(r"^RmProfilingAdminOnly:\s*(\d+)", params_text or "", re.M)
    return None if match is None else match.group(1) != "0"


def parse_smi_csv(text):
    """[{name, compute_capability, driver}] from `nvidia-smi --query-gpu=name,compute_cap,
    driver_version --format=csv,noheader`."""
    gpus = []
    for line in (text or "").splitlines():
        fields = [field.strip() for field in line.split(",")]
        if len(fields) >= 3 and fields[0]:
            cc = version_tuple(fields[1])[:2]
            gpus.append({"name": fields[0], "compute_capability": cc or None, "driver": fields[2]})
    return gpus


def driver_cuda_version(smi_text):
    """(12, 8) from nvidia-smi's banner 'CUDA Version: 12.8', or None."""
    match = re.search(r"CUDA Version:\s*(\d+)\.(\d+)", smi_text or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def sudo():
    return "" if hasattr(os, "geteuid") and os.geteuid() == 0 else "sudo "


def python_word(probe):
    """How to name the Python `probe` describes in a command: python3 when that is what
    python3 on PATH runs, else its path."""
    python = probe.get("executable") or "python3"
    return "python3" if python == shutil.which("python3") else python


def python_install_command(probe, pip_names, apt_names):
    """How to install Python packages for the Python `probe` describes: pip for that very
    interpreter, or apt for a system Python that pip may not change (PEP 668)."""
    if probe.get("externally_managed") and apt_names:
        return f"{sudo()}apt-get install {' '.join(apt_names)}"
    return f"{python_word(probe)} -m pip install {' '.join(pip_names)}"


def torch_install_command(probe, cuda_major):
    """The pip command for a CUDA PyTorch matching nvcc's CUDA major version, run by the build's
    Python; a system Python that pip may not change gets a virtual environment first. Over an
    installed PyTorch, pip would answer "already satisfied", so that one is uninstalled first."""
    command = requirements.cuda_torch_install_command(cuda_major)
    if probe.get("externally_managed"):
        return (f"python3 -m venv ~/.venvs/course && . ~/.venvs/course/bin/activate && {command}"
                " (then ./course setup in that shell)")
    python = python_word(probe)
    if command.startswith("python3 ") and python != "python3":
        command = python + command[len("python3"):]
    if probe.get("torch"):
        command = f"{python} -m pip uninstall -y torch && {command}"
    return command


def torch_item(probe, nvcc, gpu_found):
    """The PyTorch line: its version and CUDA, against nvcc's CUDA major version."""
    major = nvcc[0] if nvcc else None
    install = torch_install_command(probe, major)
    if probe.get("error"):
        return Item(FIX, "PyTorch", f"could not ask {probe.get('executable')}: {probe['error']}")
    if not probe.get("torch"):
        why = probe.get("torch_error") or "not installed"
        return Item(FIX, "PyTorch", f"{why} in {probe.get('executable')} (the extension exercises, "
                    f"m1.05 and month 3, skip without it); to fix: {install}")
    version, cuda = probe["torch"], probe.get("torch_cuda")
    if not cuda:
        return Item(FIX, "PyTorch", f"{version} has no CUDA (its CPU tests run; its CUDA tests "
                    f"skip); to fix: {install}")
    cuda_major = version_tuple(cuda)[:1]
    if nvcc and cuda_major and cuda_major[0] != nvcc[0]:
        return Item(FIX, "PyTorch", f"{version} is built for CUDA {cuda}, but nvcc is CUDA "
                    f"{nvcc[0]}.{nvcc[1]}: PyTorch refuses to build extensions with an nvcc of "
                    f"another major version; to fix: {install}")
    if gpu_found and not probe.get("cuda_available"):
        return Item(FIX, "PyTorch", f"{version} (CUDA {cuda}) finds no GPU: the driver may be "
                    f"older than CUDA {cuda} needs (see the driver line)")
    where = f", sees {probe['device']}" if probe.get("device") else ""
    return Item(OK, "PyTorch", f"{version}, CUDA {cuda}{where}")


def in_environment(python, prefix):
    """True when `python` (a path, not resolved: a venv's python links to the system's) lies in
    the environment at `prefix`."""
    if not python or not prefix:
        return False
    return os.path.abspath(python).startswith(os.path.abspath(prefix).rstrip("/") + "/")


def choose_python(candidates, probe, course_python=""):
    """The Python configure would choose (cmake/CoursePython.cmake): COURSE_PYTHON if it has
    PyTorch, else the first candidate whose PyTorch has CUDA, else the first with PyTorch, else
    the first. Returns (path, its probe); probe(path) asks a Python what it has."""
    answers = []
    for path in candidates:
        answer = probe(path)
        answers.append((path, answer))
        if answer.get("torch") and (answer.get("torch_cuda") or path == course_python):
            return path, answer
    for path, answer in answers:
        if answer.get("torch"):
            return path, answer
    return answers[0] if answers else (None, {})


def python_candidates(course_python):
    """Where configure looks for a Python, in its order, without repeats."""
    found = [course_python] if course_python else []
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        if os.environ.get(variable):
            found.append(os.path.join(os.environ[variable], "bin", "python3"))
    found += [shutil.which("python3") or shutil.which("python"), "/usr/bin/python3",
              "/usr/local/bin/python3"]
    unique = []
    for path in found:
        if path and os.path.isfile(path) and path not in unique:
            unique.append(path)
    return unique


def python_choice_item(build_python, environment, course_python, env_python_has_torch, build_dir,
                       predicted=None):
    """Which Python the build's tests use, against the active virtual or conda environment.

    environment: (variable, prefix) of the active one, or None; course_python: the CMake cache's
    COURSE_PYTHON ('' when unset); env_python_has_torch: whether its Python can import torch;
    predicted: the Python configure would pick, for a build not configured yet."""
    build = str(build_dir)
    if not build_python:
        what = f"will pick {predicted}" if predicted else "finds no Python"
        return Item(OK, "Python of the build", f"not configured yet: the first build {what} "
                    "(the first with a CUDA PyTorch, else with any PyTorch: the active "
                    "environment's, python3 on PATH, /usr/bin/python3)")
    if environment is None or in_environment(build_python, environment[1]):
        return Item(OK, "Python of the build", build_python)
    variable, prefix = environment
    env_python = os.path.join(prefix, "bin", "python3")
    if course_python:
        return Item(FIX, "Python of the build", f"{build_python} (COURSE_PYTHON), not the active "
                    f"environment's ({variable}={prefix}); to fix: cmake -S {ROOT} -B {build} "
                    f"-DCOURSE_PYTHON={env_python}")
    if not env_python_has_torch:
        return Item(FIX, "Python of the build", f"{build_python}: the active environment's Python "
                    f"({env_python}) has no PyTorch, so the build uses another; install PyTorch "
                    f"there (see the PyTorch line), and the next ctest picks it")
    return Item(FIX, "Python of the build", f"{build_python}, chosen before {variable}={prefix} "
                f"was active: the next ./course grade or test (ctest) picks the environment's "
                f"Python; to fix now: cmake -S {ROOT} -B {build}")


# --------------------------------------------------------------------------- the machine

def run(command, timeout=60):
    """(exit status, stdout + stderr); (None, why) when it could not run."""
    try:
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, timeout=timeout)
        return result.returncode, result.stdout
    except (OSError, subprocess.SubprocessError) as error:
        return None, str(error)


def is_wsl():
    try:
        return "microsoft" in Path("/proc/sys/kernel/osrelease").read_text().lower()
    except OSError:
        return False


def read_text(path):
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def cmake_cache(build_dir):
    values = {}
    for line in read_text(Path(build_dir) / "CMakeCache.txt").splitlines():
        match = re.match(r"^([A-Za-z0-9_]+):[A-Z]+=(.*)$", line)
        if match:
            values[match.group(1)] = match.group(2)
    return values


# Asks the driver itself (libcuda, no toolkit needed), in a child process so that a broken
# driver cannot take the doctor down with it.
_GPU_PROBE = r"""
import ctypes, json
out = {}
try:
    cuda = ctypes.CDLL("libcuda.so.1")
except OSError as error:
    print(json.dumps({"error": "no NVIDIA driver here (libcuda.so.1 not found)"}))
    raise SystemExit
status = cuda.cuInit(0)
version = ctypes.c_int(0)
cuda.cuDriverGetVersion(ctypes.byref(version))
out["driver_cuda"] = [version.value // 1000, (version.value % 1000) // 10]
if status != 0:
    out["error"] = "the driver found no usable GPU (cuInit returned %d)" % status
    print(json.dumps(out))
    raise SystemExit
count = ctypes.c_int(0)
cuda.cuDeviceGetCount(ctypes.byref(count))
gpus = []
for index in range(count.value):
    device = ctypes.c_int(0)
    cuda.cuDeviceGet(ctypes.byref(device), index)
    name = ctypes.create_string_buffer(256)
    cuda.cuDeviceGetName(name, 256, device)
    values = []
    for attribute in (75, 76, 97):  # compute capability major, minor; shared memory opt-in
        value = ctypes.c_int(0)
        cuda.cuDeviceGetAttribute(ctypes.byref(value), attribute, device)
        values.append(value.value)
    gpus.append({"name": name.value.decode(errors="replace"),
                 "compute_capability": values[:2], "shared_bytes": values[2]})
out["gpus"] = gpus
print(json.dumps(out))
"""


def gpu_facts():
    """{'gpus': [...], 'driver': '570.86.15', 'driver_cuda': (12, 8), 'error': ...}."""
    facts = {"gpus": [], "driver": None, "driver_cuda": None, "error": None}
    status, output = run([sys.executable, "-c", _GPU_PROBE], timeout=120)
    try:
        answer = json.loads(output.strip().splitlines()[-1]) if status == 0 and output.strip() else {}
    except (ValueError, IndexError):
        answer = {}
    if answer.get("driver_cuda") and answer["driver_cuda"][0]:
        facts["driver_cuda"] = tuple(answer["driver_cuda"])
    for gpu in answer.get("gpus", []):
        gpu["compute_capability"] = tuple(gpu["compute_capability"])
        facts["gpus"].append(gpu)
    facts["error"] = answer.get("error")

    smi = shutil.which("nvidia-smi") or next(
        (p for p in ("/usr/lib/wsl/lib/nvidia-smi", "/usr/bin/nvidia-smi") if os.path.isfile(p)), None)
    if smi:
        status, output = run([smi, "--query-gpu=name,compute_cap,driver_version",
                              "--format=csv,noheader"])
        listed = parse_smi_csv(output) if status == 0 else []
        if not listed:  # drivers before compute_cap was a field
            status, output = run([smi, "--query-gpu=name,driver_version,driver_version",
                                  "--format=csv,noheader"])
            listed = [dict(g, compute_capability=None, driver=g["driver"])
                      for g in (parse_smi_csv(output) if status == 0 else [])]
        if listed:
            facts["driver"] = listed[0]["driver"]
            if not facts["gpus"]:
                facts["gpus"] = [{"name": g["name"], "compute_capability": g["compute_capability"],
                                  "shared_bytes": None} for g in listed]
        banner_status, banner = run([smi])
        if facts["driver_cuda"] is None and banner_status == 0:
            facts["driver_cuda"] = driver_cuda_version(banner)
        if not listed and not facts["error"]:
            facts["error"] = f"nvidia-smi finds no GPU: {output.strip()[:200]}"
    elif not facts["gpus"] and not facts["error"]:
        facts["error"] = "no NVIDIA driver (no nvidia-smi)"
    return facts


_PYTHON_PROBE = r"""
import importlib.util, json, os, sys, sysconfig
out = {"executable": sys.executable, "version": sys.version.split()[0]}
in_venv = sys.prefix != getattr(sys, "base_prefix", sys.prefix)
marker = os.path.join(sysconfig.get_path("stdlib") or "", "EXTERNALLY-MANAGED")
out["externally_managed"] = (not in_venv) and os.path.isfile(marker)
def present(name):
    try:
        return importlib.util.find_spec(name) is not None
    except Exception:
        return False
for name in ("pytest", "numpy", "sklearn", "wheel", "setuptools", "pip", "ninja"):
    out[name] = present(name)
try:
    spec = importlib.util.find_spec("nvidia.cudnn")
    out["cudnn_wheel"] = list(spec.submodule_search_locations)[0] if spec else None
except Exception:
    out["cudnn_wheel"] = None
try:
    import torch
    out["torch"] = torch.__version__
    out["torch_cuda"] = torch.version.cuda
    out["cuda_available"] = bool(torch.version.cuda) and torch.cuda.is_available()
    if out["cuda_available"]:
        out["device"] = torch.cuda.get_device_name()
except Exception as error:
    out["torch"] = None
    if not isinstance(error, ImportError) or "No module named 'torch'" not in str(error):
        out["torch_error"] = "import torch failed (%s: %s)" % (type(error).__name__, error)
print("DOCTOR " + json.dumps(out))
"""


def probe_python(python):
    """What `python` has (PyTorch, the packages the tests import), asked in a child process."""
    status, output = run([python, "-c", _PYTHON_PROBE], timeout=180)
    for line in reversed((output or "").splitlines()):
        if line.startswith("DOCTOR "):
            try:
                return json.loads(line[len("DOCTOR "):])
            except ValueError:
                break
    return {"executable": python, "error": (output or "no answer").strip()[-300:]}


def active_environment():
    """(variable, prefix) of the active virtual environment, else conda environment, or None."""
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = os.environ.get(variable)
        if prefix and os.path.isdir(prefix):
            return variable, prefix
    return None


def environment_python(environment):
    if environment is None:
        return None
    for name in ("python3", "python"):
        candidate = os.path.join(environment[1], "bin", name)
        if os.path.isfile(candidate):
            return candidate
    return None


# --------------------------------------------------------------------------- the checks

def check_compiler(cache, nvcc_path, nvcc, build_dir):
    compiler = (cache.get("CMAKE_CUDA_HOST_COMPILER") or cache.get("CMAKE_CXX_COMPILER")
                or shutil.which("c++") or shutil.which("g++"))
    if not compiler or not os.path.isfile(compiler):
        return Item(NEED, "C++ compiler", f"not found; to fix: {sudo()}apt-get install g++")
    status, output = run([compiler, "-dumpfullversion", "-dumpversion"])
    version = version_tuple(output) if status == 0 else ()
    is_gcc = "clang" not in os.path.basename(compiler)
    text = f"{compiler} {version_text(version) or '(version unknown)'}"
    if nvcc_path and version and is_gcc:
        base = Path(nvcc_path).resolve().parent.parent
        host_config = next((p for p in [base / "include" / "crt" / "host_config.h",
                                        *base.glob("targets/*/include/crt/host_config.h")]
                            if p.is_file()), None)
        newest = newest_gcc_accepted(read_text(host_config)) if host_config else None
        if newest is not None and version[0] > newest:
            older = f"g++-{newest}"
            return Item(NEED, "C++ compiler", f"{text}: nvcc {nvcc[0]}.{nvcc[1]} accepts GCC {newest} "
                        f"at most; to fix: {sudo()}apt-get install {older} && cmake -S {ROOT} -B "
                        f"{build_dir} -DCMAKE_CUDA_HOST_COMPILER={older} (or a newer CUDA toolkit)")
        if newest is not None:
            text += f" (nvcc accepts GCC {newest} and older)"
    return Item(OK, "C++ compiler", text)


def check_cmake():
    needed = cmake_minimum(read_text(ROOT / "CMakeLists.txt"))
    cmake = shutil.which("cmake")
    if not cmake:
        return Item(NEED, "CMake", f"not found; to fix: {sudo()}apt-get install cmake")
    status, output = run([cmake, "--version"])
    version = version_tuple(output) if status == 0 else ()
    if needed and version and version < needed:
        return Item(NEED, "CMake", f"{version_text(version)}, older than the {version_text(needed)} "
                    f"the course needs; to fix: python3 -m pip install cmake (in a virtual "
                    f"environment), or a newer release from https://cmake.org/download/")
    return Item(OK, "CMake", f"{version_text(version)} (the course needs {version_text(needed)} or newer)")


def check_nvcc(nvcc_path, nvcc):
    oldest = oldest_cuda_toolkit(read_text(ROOT / "CMakeLists.txt"))
    supported = f"the course supports CUDA {oldest[0]}.{oldest[1]} and newer"
    wsl = " (on WSL2: the toolkit for WSL-Ubuntu, never a Linux driver)" if is_wsl() else ""
    if nvcc is None:
        return Item(NEED, "CUDA toolkit", f"nvcc not found on PATH, in CUDA_HOME or /usr/local/cuda/bin "
                    f"({supported}); to fix: install it from https://developer.nvidia.com/cuda-downloads"
                    f"{wsl}, then export PATH=/usr/local/cuda/bin:$PATH")
    if nvcc < oldest:
        return Item(NEED, "CUDA toolkit", f"nvcc {nvcc[0]}.{nvcc[1]} at {nvcc_path} is too old "
                    f"({supported}); to fix: install a newer one from "
                    f"https://developer.nvidia.com/cuda-downloads{wsl}")
    return Item(OK, "CUDA toolkit", f"nvcc {nvcc[0]}.{nvcc[1]} at {nvcc_path} ({supported})")


def check_gpu(facts):
    if not facts["gpus"]:
        why = facts["error"] or "none found"
        if is_wsl():
            fix = ("install the NVIDIA driver for Windows on the Windows side (never a Linux "
                   "driver inside WSL), then wsl --shutdown")
        else:
            fix = ("a machine with an NVIDIA GPU of compute capability 7.5 or newer and its driver "
                   f"({sudo()}ubuntu-drivers install on Ubuntu; Debian: the nvidia-driver package)")
        return [Item(FIX, "GPU", f"{why}: everything builds, and the tests that need a GPU report "
                     f"themselves skipped; to fix: {fix}")]
    items = []
    for index, gpu in enumerate(facts["gpus"]):
        name = "GPU" if len(facts["gpus"]) == 1 else f"GPU {index}"
        cc = gpu.get("compute_capability")
        if gpu.get("shared_bytes"):
            shared = f"{gpu['shared_bytes'] // 1024} KiB shared memory per block"
        elif cc in SHARED_KIB_BY_CC:
            shared = f"{SHARED_KIB_BY_CC[cc]} KiB shared memory per block (its compute capability's)"
        else:
            shared = "shared memory per block unknown"
        if not cc:
            items.append(Item(OK, name, f"{gpu['name']} ({shared}; compute capability unknown)"))
            continue
        text = f"{gpu['name']}, compute capability {cc[0]}.{cc[1]}, {shared}"
        if cc < GPU_OLDEST:
            items.append(Item(FIX, name, f"{text}: the course needs compute capability 7.5 (Turing) "
                              "or newer, and CUDA 13 runs nothing older; to fix: a newer GPU"))
            continue
        notes = []
        if cc < (8, 0):
            notes.append("bfloat16 tensor cores and cp.async need 8.0: those tests skip")
        if cc != (9, 0):
            notes.append("m2.08 and m3.05 part 3 need a Hopper (9.0): they skip")
        items.append(Item(OK, name, text + ("; " + "; ".join(notes) if notes else "")))
    return items


def check_driver(facts, nvcc):
    if not facts["gpus"]:
        return Item(FIX, "driver", "none found (see the GPU line)")
    version = facts["driver"] or "version unknown"
    cuda = facts["driver_cuda"]
    if cuda is None:
        return Item(OK, "driver", version)
    text = f"{version}, for CUDA {cuda[0]}.{cuda[1]} and older"
    if nvcc and cuda[0] < nvcc[0]:
        needed = DRIVER_FOR_CUDA_MAJOR.get(nvcc[0], "a newer")
        return Item(FIX, "driver", f"{text}: programs built by nvcc {nvcc[0]}.{nvcc[1]} will not "
                    f"run; to fix: install driver {needed} or newer "
                    "(https://www.nvidia.com/drivers; on WSL2 on the Windows side), or a CUDA "
                    f"{cuda[0]}.x toolkit")
    return Item(OK, "driver", text)


def find_first(patterns):
    for pattern in patterns:
        matches = sorted(glob.glob(pattern))
        if matches:
            return matches[-1]
    return None


def check_library(name, packages, patterns, fetched, build_dir):
    found = find_first(patterns)
    if found:
        return Item(OK, name, found)
    fetched_dir = Path(build_dir) / "_deps" / fetched
    if fetched_dir.is_dir():
        return Item(OK, name, f"downloaded by the build into {fetched_dir}")
    return Item(NEED, name, f"not installed (the first build downloads it where it may); to fix: "
                f"{sudo()}apt-get install {packages}")


def check_cudnn(probe, nvcc):
    roots = [os.environ.get("CUDNN_ROOT"), probe.get("cudnn_wheel"), "/usr/local/cuda",
             "/usr"]
    for root in [r for r in roots if r]:
        header = find_first([f"{root}/include/cudnn_version.h", f"{root}/include/cudnn.h",
                             f"{root}/include/*/cudnn_version.h"])
        library = find_first([f"{root}/lib/libcudnn.so*", f"{root}/lib64/libcudnn.so*",
                              f"{root}/lib/*/libcudnn.so*"])
        if header and library:
            text = read_text(header)
            numbers = [re.search(rf"#define CUDNN_{part}\s+(\d+)", text) for part in ("MAJOR", "MINOR")]
            version = ".".join(m.group(1) for m in numbers if m) or "version unknown"
            return Item(OK, "cuDNN", f"{version}: {library} (month3/cudnn_algorithms' table)")
    wheel = f"nvidia-cudnn-cu{nvcc[0] if nvcc else 12}"
    return Item(FIX, "cuDNN", "headers and library not found (only month3/cudnn_algorithms' table "
                f"needs them); to fix: {python_word(probe)} -m pip install {wheel}, then "
                "configure again")


def find_ncu(nvcc_path):
    chosen = os.environ.get("COURSE_NCU")
    if chosen:
        return chosen if os.access(chosen, os.X_OK) else None
    found = shutil.which("ncu")
    if found:
        return found
    patterns = [str(Path(nvcc_path).parent / "ncu")] if nvcc_path else []
    patterns += ["/usr/local/cuda/bin/ncu", "/usr/local/cuda/nsight-compute*/ncu",
                 "/usr/local/cuda-*/nsight-compute*/ncu", "/opt/nvidia/nsight-compute/*/ncu",
                 "/usr/local/NVIDIA-Nsight-Compute*/ncu"]
    return find_first(patterns)


def ncu_install_command(nvcc):
    if nvcc:
        return f"{sudo()}apt-get install cuda-nsight-compute-{nvcc[0]}-{nvcc[1]}"
    return "install Nsight Compute from https://developer.nvidia.com/nsight-compute"


PROFILING_FIX = ("echo 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' | sudo tee "
                 "/etc/modprobe.d/ncu.conf && sudo update-initramfs -u && sudo reboot")


def check_ncu(nvcc_path, nvcc):
    ncu = find_ncu(nvcc_path)
    if not ncu:
        return Item(FIX, "Nsight Compute", "ncu not found (m2.04's counter test skips without it); "
                    f"to fix: {ncu_install_command(nvcc)}, or COURSE_NCU=/path/to/ncu")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return Item(OK, "Nsight Compute", f"{ncu} (running as root: the counters are readable)")
    restricted = profiling_restricted(read_text("/proc/driver/nvidia/params"))
    if restricted:
        return Item(FIX, "Nsight Compute", f"{ncu}, but only root may read the GPU's counters "
                    f"(m2.04's counter test skips); to fix: {PROFILING_FIX}")
    if restricted is None and is_wsl():
        return Item(OK, "Nsight Compute", f"{ncu} (on WSL2 the counters are allowed on Windows: "
                    "NVIDIA Control Panel, Developer, Manage GPU Performance Counters)")
    if restricted is None:
        return Item(OK, "Nsight Compute", f"{ncu} (whether the counters are readable shows when "
                    "m2.04's counter test runs)")
    return Item(OK, "Nsight Compute", f"{ncu}, counters readable by every user")


def check_tool(name, tool, nvcc_path, why, fix):
    found = shutil.which(tool)
    if not found and nvcc_path and os.path.isfile(Path(nvcc_path).parent / tool):
        found = str(Path(nvcc_path).parent / tool)
    if found:
        return Item(OK, name, found)
    return Item(FIX, name, f"{tool} not found ({why}); to fix: {fix}")


def check_cuobjdump(nvcc_path, nvcc):
    """Where the SASS checks (tools/sass.py, run by this same python3) find cuobjdump."""
    found = sass.find_tool("cuobjdump", [str(Path(nvcc_path).parent)] if nvcc_path else [])
    if found:
        return Item(OK, "cuobjdump", found)
    me = {"executable": sys.executable, "externally_managed": python_is_externally_managed()}
    if me["externally_managed"] and nvcc:
        version = f"{nvcc[0]}-{nvcc[1]}"
        fix = f"{sudo()}apt-get install cuda-cuobjdump-{version} cuda-nvdisasm-{version}"
    else:
        fix = f"{python_word(me)} -m pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm"
    return Item(FIX, "cuobjdump", f"not found (the SASS checks, e.g. m2.05's, skip); to fix: {fix}")


def python_is_externally_managed():
    """This Python is a system one that pip may not change (PEP 668: Debian's, Ubuntu's)."""
    import sysconfig
    if sys.prefix != getattr(sys, "base_prefix", sys.prefix):
        return False
    return os.path.isfile(os.path.join(sysconfig.get_path("stdlib") or "", "EXTERNALLY-MANAGED"))


def check_python_packages(probe):
    if probe.get("error"):
        return []
    wanted = [("scikit-learn", "sklearn", "python3-sklearn", "m3.07's digits"),
              ("wheel", "wheel", "python3-wheel", "m3.01's wheel test"),
              ("setuptools", "setuptools", "python3-setuptools", "m3.01's wheel test"),
              ("pip", "pip", "python3-pip", "m3.01's wheel test"),
              ("pytest", "pytest", "python3-pytest", "the Python tests' runner; unittest otherwise"),
              ("numpy", "numpy", "python3-numpy", "m3.02's NumPy tests"),
              ("ninja", "ninja", "ninja-build", "PyTorch builds the extensions with it")]
    items = []
    for pip_name, module, apt_name, why in wanted:
        if probe.get(module) or (module == "ninja" and shutil.which("ninja")):
            items.append(Item(OK, pip_name, f"in {probe['executable']}"))
        elif module == "ninja":
            items.append(Item(FIX, pip_name, f"not found ({why}); to fix: {sudo()}apt-get install "
                              "ninja-build"))
        else:
            command = python_install_command(probe, [pip_name], [apt_name])
            items.append(Item(FIX, pip_name, f"not in {probe['executable']} ({why}); to fix: "
                              f"{command}"))
    return items


def build_python_of(build_dir):
    text = read_text(Path(build_dir) / "course_python" / "interpreter.txt").strip()
    return text or None


def diagnose(build_dir):
    """Every item, in the order printed."""
    cache = cmake_cache(build_dir)
    nvcc = requirements.nvcc_cuda_version()
    nvcc_path = requirements.find_nvcc()
    items = [check_compiler(cache, nvcc_path, nvcc, build_dir), check_cmake(),
             check_nvcc(nvcc_path, nvcc)]

    facts = gpu_facts()
    items += check_gpu(facts)
    items.append(check_driver(facts, nvcc))
    items.append(check_library(
        "GoogleTest", "googletest libgtest-dev libgmock-dev",
        ["/usr/src/googletest/CMakeLists.txt", "/usr/lib/*/cmake/GTest/GTestConfig.cmake",
         "/usr/local/lib/cmake/GTest/GTestConfig.cmake", "/usr/lib/cmake/GTest/GTestConfig.cmake"],
        "googletest-src", build_dir))
    items.append(check_library(
        "Google Benchmark", "libbenchmark-dev",
        ["/usr/lib/*/cmake/benchmark/benchmarkConfig.cmake",
         "/usr/local/lib/cmake/benchmark/benchmarkConfig.cmake",
         "/usr/lib/cmake/benchmark/benchmarkConfig.cmake"],
        "benchmark-src", build_dir))

    # The Python the tests use: the build's, or the one its first configure will pick. With an
    # environment active (and no COURSE_PYTHON), PyTorch and the packages are reported for the
    # environment's Python instead: that is where they belong, and once it has PyTorch the
    # build picks it.
    environment = active_environment()
    env_python = environment_python(environment)
    build_python = build_python_of(build_dir)
    course_python = cache.get("COURSE_PYTHON", "")
    probes = {}

    def probe_once(path):
        if path not in probes:
            probes[path] = probe_python(path)
        return probes[path]

    predicted = build_python
    if not build_python:
        predicted, _ = choose_python(python_candidates(course_python), probe_once, course_python)
    if env_python and not course_python:
        python = env_python
    else:
        python = build_python or predicted or sys.executable
    probe = probe_once(python)
    env_has_torch = bool(env_python and probe_once(env_python).get("torch"))
    items.append(python_choice_item(build_python, environment, course_python, env_has_torch,
                                    build_dir, predicted=predicted))
    items.append(torch_item(probe, nvcc, bool(facts["gpus"])))
    items += check_python_packages(probe)
    items.append(check_cudnn(probe, nvcc))
    items.append(check_ncu(nvcc_path, nvcc))
    sanitizer = (f"{sudo()}apt-get install cuda-sanitizer-{nvcc[0]}-{nvcc[1]}" if nvcc else
                 "install the full CUDA toolkit")
    items.append(check_tool("compute-sanitizer", "compute-sanitizer", nvcc_path,
                            "m1.03 uses it", sanitizer))
    items.append(check_cuobjdump(nvcc_path, nvcc))
    items.append(check_tool("clang-format", "clang-format", nvcc_path,
                            "the solutions' format check skips",
                            f"{sudo()}apt-get install clang-format"))
    return items


def main(argv=None):
    """./course doctor [--build-dir DIR]: prints the report; 1 when something required is
    missing, else 0. argv: the arguments after the command's name."""
    parser = argparse.ArgumentParser(prog="./course doctor", description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", default=os.environ.get("BUILD_DIR") or str(ROOT / "build"),
                        help="the build folder (default: $BUILD_DIR or build/)")
    args = parser.parse_args(argv)
    build_dir = Path(args.build_dir).resolve()

    try:
        items = diagnose(build_dir)
    except Exception as error:  # a bug here must not hide the rest of the course
        print(f"./course doctor failed: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    for item in items:
        print(item.line())
    needed = [item.name for item in items if item.status == NEED]
    to_fix = [item.name for item in items if item.status == FIX]
    print()
    if needed:
        print(f"The build needs: {', '.join(needed)} (the NEED lines say how).")
    elif to_fix:
        print(f"The course builds here. {len(to_fix)} item(s) to fix for the exercises that use "
              "them; until then their tests report themselves skipped and say the same command.")
    else:
        print("Everything the course uses is here.")
    return 1 if needed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
