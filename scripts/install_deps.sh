#!/usr/bin/env bash
# Installs the Debian packages KernelOptimizer needs to build and test on
# Debian 12 (as root, or with sudo); about a minute. The CUDA toolkit (nvcc,
# NVRTC, headers) is expected at /usr/local/cuda; it is not a Debian package
# here. The local LLM server of the agent's real-server test is not installed
# here: scripts/build_and_test.sh installs it (scripts/install_llm_server.sh),
# since only the tests use it.
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
echo "install_deps: done"
