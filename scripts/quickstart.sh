#!/usr/bin/env bash
# The main job: build kopt and evaluate the plain SGEMM kernel of
# templates/sgemm on every case of its spec (checked against the reference,
# timed with CUDA events). On a machine without a GPU it still builds and
# compiles the kernels with NVRTC for sm_90, and says that timing needs a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${BUILD:-build}"
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" --target kopt -j "$(nproc)"
mkdir -p results
set +e
"$BUILD/tool/kopt" evaluate --spec templates/sgemm/sgemm.json --json results/quickstart.json "$@"
code=$?
if [ "$code" -eq 77 ]; then
  echo "quickstart: no GPU here: compiling the candidate and the reference for sm_90 instead" >&2
  "$BUILD/tool/kopt" evaluate --spec templates/sgemm/sgemm.json --arch sm_90 --json results/quickstart.json "$@"
  echo "quickstart: compiled; checking and timing need a CUDA GPU (exit 77)" >&2
  exit 0
fi
exit "$code"
