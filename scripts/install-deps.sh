#!/usr/bin/env bash
# Installs what the course builds with, on Debian or Ubuntu. The CUDA toolkit itself
# comes from NVIDIA (https://developer.nvidia.com/cuda-downloads) and is not installed here.
#   cmake, g++           the build
#   googletest, libgtest-dev, libgmock-dev   GoogleTest (tests)
#   libbenchmark-dev     Google Benchmark (benchmarks)
#   python3              the course checker and the results tables
#   python3-torch, libtorch-dev   PyTorch (CPU build) and its C++ headers, for the extension
#                        exercises' Python tests (m1.05); a GPU machine brings its own CUDA PyTorch
#   ninja-build          torch.utils.cpp_extension.load builds extensions with ninja
#   python3-pytest       runs those tests (unittest is the fallback without it)
#   pybind11-dev         pybind11's headers: torch/extension.h includes them, and Debian's
#                        libtorch-dev only recommends the package (m3.01, m3.02, the harness)
#   python3-numpy        a second DLPack producer and consumer for m3.02's CPU tests
#   python3-sklearn      scikit-learn's handwritten digits (load_digits, shipped inside the
#                        package, no download): the data of m3.07's capstone CNN
#   clang-format         checks that the solutions follow .clang-format (ctest course/clang_format)
#   python3-pip, python3-setuptools, python3-wheel   build and install m3.01's wheel
#                        (pip wheel --no-build-isolation, pip install --target) in its tests
#   cuobjdump, nvdisasm  read compiled GPU machine code (the SASS checks, e.g. m2.05's 128-bit
#                        loads). They come with the full CUDA toolkit; where it lacks them,
#                        NVIDIA's pip packages nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm do.
set -euo pipefail

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi

packages=(cmake g++ make googletest libgtest-dev libgmock-dev libbenchmark-dev python3
          python3-torch libtorch-dev ninja-build python3-pytest pybind11-dev python3-numpy
          python3-sklearn clang-format python3-pip python3-setuptools python3-wheel)
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${packages[@]}"

if ! command -v cuobjdump >/dev/null 2>&1 && [[ ! -x /usr/local/cuda/bin/cuobjdump ]]; then
  python3 -m pip install --quiet nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm ||
    echo "install-deps: could not install cuobjdump with pip; the SASS checks will report" \
         "themselves skipped" >&2
fi
