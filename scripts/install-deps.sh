#!/usr/bin/env bash
# Installs what the course builds with, on Debian or Ubuntu. The CUDA toolkit itself
# comes from NVIDIA (https://developer.nvidia.com/cuda-downloads) and is not installed here.
#   cmake, g++           the build
#   googletest, libgtest-dev, libgmock-dev   GoogleTest (tests)
#   libbenchmark-dev     Google Benchmark (benchmarks)
#   python3              the course checker and the results tables
set -euo pipefail

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi

packages=(cmake g++ make googletest libgtest-dev libgmock-dev libbenchmark-dev python3)
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${packages[@]}"
