#!/usr/bin/env bash
# Installs what the course builds with, on Debian or Ubuntu (22.04, 24.04, Debian 12 and
# newer). The CUDA toolkit and the NVIDIA driver come from NVIDIA
# (https://developer.nvidia.com/cuda-downloads) and are not installed here; docs/setup.md
# says which versions the course supports.
#
# Required (one apt-get install; the script stops if it fails):
#   cmake, g++, make     the build
#   googletest, libgtest-dev, libgmock-dev   GoogleTest (tests)
#   libbenchmark-dev     Google Benchmark (benchmarks)
#   python3              the course's commands, the course checker and the results tables
#   pybind11-dev         pybind11's headers: torch/extension.h includes them, and Debian's
#                        libtorch-dev only recommends the package (m3.01, m3.02, the harness)
#   ninja-build          torch.utils.cpp_extension.load builds extensions with ninja
#
# Optional (one apt-get install each: a package that a release lacks is reported and skipped):
#   python3-pip, python3-venv, python3-setuptools, python3-wheel   pip, virtual environments,
#                        and m3.01's wheel (pip wheel --no-build-isolation in its tests)
#   python3-pytest       runs the Python tests (unittest is the fallback without it)
#   python3-numpy        a second DLPack producer and consumer for m3.02's CPU tests
#   python3-sklearn      scikit-learn's handwritten digits (load_digits, shipped inside the
#                        package, no download): the data of m3.07's capstone CNN
#   python3-torch, libtorch-dev   PyTorch (CPU build) and its C++ headers, so that the
#                        extension exercises' CPU tests run on any machine
#   clang-format         checks that the solutions follow .clang-format (ctest course/clang_format)
#   git                  ./course status compares your files with git's version
#
# In a virtual environment (VIRTUAL_ENV) or a conda environment (CONDA_PREFIX), the Python
# packages go into that environment with pip instead of Debian's python3-* packages, and the
# script prints the pip command for a CUDA PyTorch that matches nvcc's CUDA version (it never
# installs a CPU-only PyTorch there). The build picks that environment's Python as long as it
# is active (cmake/CoursePython.cmake).
#
#   cuobjdump, nvdisasm  read compiled GPU machine code (the SASS checks, e.g. m2.05's 128-bit
#                        loads). They come with the full CUDA toolkit; where it lacks them,
#                        NVIDIA's pip packages nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm do.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

required=(cmake g++ make googletest libgtest-dev libgmock-dev libbenchmark-dev python3
          pybind11-dev ninja-build)
optional=(python3-pip python3-venv python3-setuptools python3-wheel clang-format git)
# What the tests import, as Debian packages (system Python) and as pip packages (an environment).
debian_python=(python3-pytest python3-numpy python3-sklearn python3-torch libtorch-dev)
pip_python=(pytest numpy scikit-learn wheel setuptools ninja matplotlib)

say() { echo "install-deps: $*"; }
warn() { echo "install-deps: $*" >&2; }

# The active environment's Python, or nothing: a virtual environment first (it is activated
# inside a conda environment, not the other way round), then conda.
env_python=""
env_name=""
for variable in VIRTUAL_ENV CONDA_PREFIX; do
  prefix="${!variable:-}"
  if [[ -n "$prefix" && -z "$env_python" ]]; then
    for candidate in "$prefix/bin/python3" "$prefix/bin/python"; do
      if [[ -x "$candidate" ]]; then
        env_python="$candidate"
        env_name="$variable=$prefix"
        break
      fi
    done
  fi
done
if [[ -z "$env_python" ]]; then
  optional+=("${debian_python[@]}")
fi

is_installed() {
  [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]
}

if command -v apt-get >/dev/null 2>&1 && command -v dpkg-query >/dev/null 2>&1; then
  SUDO=()
  if [[ $(id -u) -ne 0 ]]; then
    if ! command -v sudo >/dev/null 2>&1; then
      warn "installing packages needs root: run this script as root, or install sudo"
      exit 1
    fi
    SUDO=(sudo)
  fi
  apt_install() {  # (env: sudo would drop DEBIAN_FRONTEND)
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"
  }

  missing_required=()
  for package in "${required[@]}"; do
    is_installed "$package" || missing_required+=("$package")
  done
  missing_optional=()
  for package in "${optional[@]}"; do
    is_installed "$package" || missing_optional+=("$package")
  done

  if (( ${#missing_required[@]} + ${#missing_optional[@]} == 0 )); then
    say "every package is installed already"
  else
    "${SUDO[@]}" apt-get update
    if (( ${#missing_required[@]} > 0 )); then
      apt_install "${missing_required[@]}"
    fi
    skipped=()
    for package in "${missing_optional[@]}"; do
      if ! apt_install "$package"; then
        skipped+=("$package")
        warn "could not install the optional package $package (this release may not have it);" \
             "going on without it"
      fi
    done
    if (( ${#skipped[@]} > 0 )); then
      warn "optional packages not installed: ${skipped[*]} (./course doctor says what each is for)"
    fi
  fi
else
  warn "apt-get not found: this script knows Debian and Ubuntu only. Install yourself:" \
       "${required[*]} ${optional[*]}"
fi

if [[ -n "$env_python" ]]; then
  say "$env_name is active: installing the course's Python packages into it ($env_python)"
  if ! "$env_python" -m pip --version >/dev/null 2>&1; then
    "$env_python" -m ensurepip --upgrade >/dev/null 2>&1 ||
      warn "this environment has no pip (for conda: conda install pip)"
  fi
  if ! "$env_python" -m pip install --quiet "${pip_python[@]}"; then
    warn "pip could not install ${pip_python[*]} into $env_python;" \
         "./course doctor says which are missing"
  fi

  # PyTorch: never the CPU build here. Say what is there, and the command for a CUDA build
  # that matches nvcc's CUDA major version (a mismatch stops PyTorch's extension builds).
  "$env_python" - "$ROOT" <<'PYTHON' || true
import importlib.util
import sys

sys.path.insert(0, sys.argv[1] + "/common/python")
from course_harness import requirements  # does not import torch

nvcc = requirements.nvcc_cuda_version()
command = requirements.cuda_torch_install_command(nvcc[0] if nvcc else None)
toolkit = f"nvcc's CUDA {nvcc[0]}.{nvcc[1]}" if nvcc else "no nvcc found; CUDA 12 assumed"
if importlib.util.find_spec("torch") is None:
    print(f"install-deps: PyTorch is not installed in this environment. For a CUDA build "
          f"({toolkit}):\n    {command}")
    sys.exit(0)
import torch  # noqa: E402

built_for = torch.version.cuda
# pip keeps an installed torch ("already satisfied") unless it is uninstalled first.
replace = requirements.cuda_torch_replace_command(nvcc[0] if nvcc else None)
if built_for is None:
    print(f"install-deps: this environment's PyTorch {torch.__version__} has no CUDA. For a "
          f"CUDA build ({toolkit}):\n    {replace}")
elif nvcc and int(built_for.split(".")[0]) != nvcc[0]:
    print(f"install-deps: this environment's PyTorch {torch.__version__} is built for CUDA "
          f"{built_for}, but {toolkit}: extensions would not build. For a matching one:\n"
          f"    {replace}")
else:
    print(f"install-deps: PyTorch {torch.__version__} (CUDA {built_for}) is installed")
PYTHON
  pip_python_for_tools="$env_python"
else
  pip_python_for_tools="python3"
fi

pip_packages_present() {  # the distributions are installed in that Python
  "$pip_python_for_tools" -c 'import sys, importlib.metadata as m; [m.version(n) for n in sys.argv[1:]]' \
    "$@" >/dev/null 2>&1
}
if ! command -v cuobjdump >/dev/null 2>&1 && [[ ! -x /usr/local/cuda/bin/cuobjdump ]] &&
   ! pip_packages_present nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm; then
  "$pip_python_for_tools" -m pip install --quiet nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm ||
    warn "could not install cuobjdump with pip; the SASS checks will report themselves skipped"
fi
