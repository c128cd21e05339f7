#!/usr/bin/env bash
# Installs the Debian packages KernelOptimizer needs on Debian 12 (as root, or
# with sudo). The CUDA toolkit (nvcc, NVRTC, headers) is expected at
# /usr/local/cuda; it is not a Debian package here.
#
#   scripts/install_deps.sh          what the main job (scripts/quickstart.sh)
#                                    uses: the compiler, CMake, Ninja and the
#                                    libraries kopt is built with (72 packages,
#                                    91 MB to download, where only Debian 12's
#                                    required packages are installed)
#   scripts/install_deps.sh --tests  also what the test command
#                                    (scripts/build_and_test.sh) uses:
#                                    GoogleTest, cpp-httplib, Chromium (the
#                                    report's screenshot test), python3 with
#                                    jsonschema and venv, curl (194 packages,
#                                    211 MB more)
#
# The local LLM server of the agent's real-server test is not installed here:
# scripts/build_and_test.sh installs it (scripts/install_llm_server.sh).
set -euo pipefail
tests=0
case "${1:-}" in
  "") ;;
  --tests) tests=1 ;;
  *) echo "install_deps: unknown argument '$1' (expected nothing, or --tests)" >&2; exit 2 ;;
esac
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
packages=(cmake ninja-build g++
          nlohmann-json3-dev libcli11-dev libxxhash-dev libbenchmark-dev libcurl4-openssl-dev)
if [ "$tests" = 1 ]; then
  packages+=(libgtest-dev libgmock-dev libcpp-httplib-dev
             python3 python3-jsonschema python3-venv chromium curl)
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
  echo "install_deps: the CUDA toolkit was not found at /usr/local/cuda; install CUDA 12.4+ (13.0 tested)" >&2
  exit 1
fi
echo "install_deps: done"
