#!/usr/bin/env bash
# The main job: build kopt, then the example project's optimization of its
# SGEMM kernel (configure, `--target optimize_sgemm`, build, run).
#  - With a GPU: tunes the kernel (the example's defaults: the 18 shapes of
#    templates/sgemm/application_shapes.json in shape classes, evals=1000,minutes=5,
#    about 5 minutes on an H200), writes the
#    updated tuning cache to build-example/kernel_optimizer/sgemm/ (the
#    committed example_project/sgemm.tuning.json is only read), builds
#    `matmul` with the tuned kernel and runs it.
#  - Without a GPU: compiles candidate kernels of the SGEMM template with NVRTC
#    for sm_90, says that checking and timing need a GPU, and builds `matmul`
#    with the kernel from the committed tuning cache (tuned on an H200).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target kopt -j "$(nproc)"
mkdir -p results
if ! build/tool/kopt devices >/dev/null 2>&1; then
  echo "quickstart: no CUDA device here: compiling 8 candidate kernels of templates/sgemm for sm_90" >&2
  code=0
  build/tool/kopt optimize --spec templates/sgemm/sgemm.json --arch sm_90 --budget evals=8 \
    >results/compile-only.json || code=$?
  [ "$code" -eq 77 ] || { echo "quickstart: compile-only run failed (exit $code)" >&2; exit "$code"; }
  echo "quickstart: candidates compiled (results/compile-only.json); checking and timing them needs a GPU" >&2
fi
cmake -S example_project -B build-example -G Ninja -DKernelOptimizer_DIR="$ROOT/build" >/dev/null
cmake --build build-example --target optimize_sgemm
cmake --build build-example
code=0
build-example/matmul || code=$?
if [ "$code" -eq 77 ]; then
  echo "quickstart: matmul built with the cached kernel; running it needs a GPU" >&2
  exit 0
fi
exit "$code"
