#!/usr/bin/env bash
# Configures, builds and runs every test. GPU tests report "skipped" (exit 77)
# on machines without a CUDA device. Usage: scripts/build_and_test.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKOPT_BUILD_TESTS=ON
cmake --build "$BUILD" -j "$(nproc)"
ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc)"
