"""What a test needs from the machine, and the skip reasons ./course grade understands.

The Python twin of common/include/course/requirements.h:

    from course_harness import requirements
    requirements.require_compute_capability(8, 0, "bfloat16 mma.sync")   # skips the test

Two kinds of skip, told apart by their wording (tools/course.py reads it):
- "needs compute capability 8.0 (...); this GPU has 7.5": this machine cannot run the test.
  An exercise whose only unpassed tests say so is done on this machine.
- "...; to fix: <command>": something the learner can install or switch on. The exercise
  shows as blocked, with that command, and the path goes on.

COURSE_COMPUTE_CAPABILITY=7.5 makes every check see an older GPU than the real one (never a
newer one), for running the course's T4 and A100 code paths on a newer GPU.
"""
import os
import re
import shutil
import subprocess
import unittest

_CC_TEXT = re.compile(r"^(\d+)\.(\d)$")


def emulated_compute_capability():
    """(major, minor) from COURSE_COMPUTE_CAPABILITY, or None when it is unset."""
    text = os.environ.get("COURSE_COMPUTE_CAPABILITY", "").strip()
    if not text:
        return None
    match = _CC_TEXT.match(text)
    if match is None:
        raise ValueError(f"COURSE_COMPUTE_CAPABILITY must look like 7.5, not {text!r}")
    return int(match.group(1)), int(match.group(2))


def physical_compute_capability():
    import torch
    return tuple(torch.cuda.get_device_capability())


def compute_capability_emulated():
    emulated = emulated_compute_capability()
    return emulated is not None and emulated < physical_compute_capability()


def device_compute_capability():
    """The compute capability the course acts on: the GPU's, or the older emulated one."""
    real = physical_compute_capability()
    emulated = emulated_compute_capability()
    return emulated if emulated is not None and emulated < real else real


def compute_capability_shortfall(major, minor, what):
    """'' when the GPU has major.minor or newer, else the reason (the C++ twin's wording)."""
    have = device_compute_capability()
    if have >= (major, minor):
        return ""
    note = " (emulated by COURSE_COMPUTE_CAPABILITY)" if compute_capability_emulated() else ""
    return (f"needs compute capability {major}.{minor} ({what}); "
            f"this GPU has {have[0]}.{have[1]}{note}")


def require_compute_capability(major, minor, what):
    """Skips the calling test (unittest.SkipTest) when the GPU is older than major.minor."""
    shortfall = compute_capability_shortfall(major, minor, what)
    if shortfall:
        raise unittest.SkipTest(shortfall)


# The two wordings, as ./course grade, the course checker and the benchmark tables read them:
# what this GPU lacks (a launcher's error or a test's skip), and the command of a fixable skip.
MACHINE_LIMIT = re.compile(r"needs compute capability \d+\.\d+|needs \d+ KiB of shared memory "
                           r"per block|needs a Hopper GPU")
FIX_COMMAND = re.compile(r";\s*to fix:\s*(.+?)\s*$")


def skip_reason_with_fix(reason, command):
    """A skip the learner can fix: './course status' shows `command` as the way on."""
    return f"{reason}; to fix: {command}"


def find_nvcc():
    """The CUDA toolkit's nvcc: CUDA_HOME, CUDA_PATH, PATH, then /usr/local/cuda; or None."""
    candidates = [os.path.join(home, "bin", "nvcc")
                  for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")) if home]
    candidates += [shutil.which("nvcc") or "", "/usr/local/cuda/bin/nvcc"]
    return next((nvcc for nvcc in candidates if nvcc and os.path.isfile(nvcc)), None)


def nvcc_cuda_version():
    """(major, minor) of the CUDA toolkit's nvcc (find_nvcc()), or None."""
    nvcc = find_nvcc()
    if nvcc is None:
        return None
    try:
        output = subprocess.run([nvcc, "--version"], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"release (\d+)\.(\d+)", output)
    return (int(match.group(1)), int(match.group(2))) if match else None


# PyTorch's wheel index per CUDA major version: a wheel built for CUDA 12.6 runs with any 12.x
# driver and builds extensions with any 12.x nvcc; 13.0 likewise for 13.x.
TORCH_INDEX_FOR_CUDA_MAJOR = {12: "cu126", 13: "cu130"}


def cuda_torch_install_command(cuda_major=None):
    """The pip command that installs a CUDA PyTorch matching nvcc's CUDA major version."""
    if cuda_major is None:
        version = nvcc_cuda_version()
        cuda_major = version[0] if version else 12
    index = TORCH_INDEX_FOR_CUDA_MAJOR.get(cuda_major, TORCH_INDEX_FOR_CUDA_MAJOR[12])
    return f"python3 -m pip install torch --index-url https://download.pytorch.org/whl/{index}"


def cuda_torch_replace_command(cuda_major=None):
    """The same, for a machine that has a PyTorch already (pip would answer "already
    satisfied" and keep it): uninstall it first."""
    return "python3 -m pip uninstall -y torch && " + cuda_torch_install_command(cuda_major)
