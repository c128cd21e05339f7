#!/usr/bin/env bash
# The main job: build kopt, then the example project's optimization of its
# SGEMM kernel (configure, `--target optimize_sgemm`, build, run), and say
# where everything is.
#  - With a GPU: tunes the kernel (the example's defaults: the 18 shapes of
#    templates/sgemm/application_shapes.json in shape classes, evals=1000,minutes=5,
#    about 5 minutes on an H200), writes the
#    updated tuning cache to build-example/kernel_optimizer/sgemm/ (the
#    committed example_project/sgemm.tuning.json is only read), builds
#    `matmul` with the tuned kernel and runs it.
#  - Without a GPU: compiles candidate kernels of the SGEMM template with NVRTC
#    for sm_90, says that checking and timing need a GPU, and builds `matmul`
#    with the kernel from the committed tuning cache (tuned on an H200).
# kopt is built in build/ in Release (-O2), in unity batches
# (KOPT_UNITY_BUILD), without the tests. Measured on a fresh clone, no ccache,
# 2 cores: see README's Set-up and docs/testing.md, "Build times".
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DKOPT_BUILD_TESTS=OFF >/dev/null
cmake --build build --target kopt -j "$(nproc)"
mkdir -p results
gpu=1
if ! build/tool/kopt devices >/dev/null 2>&1; then
  gpu=0
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
elif [ "$code" -ne 0 ]; then
  exit "$code"
fi

# Where things are (paths relative to the repository root).
gen=build-example/kernel_optimizer/sgemm
echo
echo "quickstart: done. In $ROOT:"
echo "  build/tool/kopt                the tool (build/tool/kopt --help)"
echo "  $gen/sgemm.cu"
echo "  $gen/sgemm_launch.h"
echo "                                 the generated kernel and its launch header, compiled into matmul"
echo "  build-example/matmul           the example application (matmul M N K; needs a GPU)"
if [ "$gpu" = 1 ]; then
  run=$(ls -d "$gen"/runs/run-* 2>/dev/null | sort | tail -n 1 || true)
  if [ -n "$run" ] && [ -f "$run/report.html" ]; then
    echo "  $run/report.html"
    echo "                                 the tuning run's report: open it in a browser"
  fi
else
  echo "  results/compile-only.json      the candidates compiled without a GPU"
  echo "  (no report of your own: a tuning run on a GPU writes report.html into its run folder, docs/run-folder.md)"
  if [ -f docs/example-run/report.html ]; then
    echo "  docs/example-run/report.html   the report of a tuning run on an H200: open it in a browser"
  fi
fi
