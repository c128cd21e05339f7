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
#
# For the test of this script (scripts.quickstart, no GPU), all relative to
# the repository root or absolute: KOPT_QUICKSTART_KOPT_BUILD=DIR takes the
# kopt already built in DIR (nothing is configured or built there);
# KOPT_QUICKSTART_EXAMPLE_BUILD=DIR (default build-example) and
# KOPT_QUICKSTART_RESULTS=DIR (default results) move the example's build and
# the compile-only listing.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
export PATH="/usr/local/cuda/bin:$PATH"
build=${KOPT_QUICKSTART_KOPT_BUILD:-build}
example=${KOPT_QUICKSTART_EXAMPLE_BUILD:-build-example}
results=${KOPT_QUICKSTART_RESULTS:-results}
if [ -z "${KOPT_QUICKSTART_KOPT_BUILD:-}" ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DKOPT_BUILD_TESTS=OFF >/dev/null
  cmake --build build --target kopt -j "$(nproc)"
fi
kopt=$build/tool/kopt
mkdir -p "$results"
gpu=1
if ! "$kopt" devices >/dev/null 2>&1; then
  gpu=0
  echo "quickstart: no CUDA device here: compiling 8 candidate kernels of templates/sgemm for sm_90" >&2
  code=0
  # Its messages go to a log: the example's step below says once why there is no GPU.
  "$kopt" optimize --spec templates/sgemm/sgemm.json --arch sm_90 --budget evals=8 \
    >"$results/compile-only.json" 2>"$results/compile-only.log" || code=$?
  if [ "$code" -ne 77 ]; then
    cat "$results/compile-only.log" >&2
    echo "quickstart: compile-only run failed (exit $code)" >&2
    exit "$code"
  fi
  echo "quickstart: $(tail -n 1 "$results/compile-only.log" | sed 's/^kopt: //')" \
       "($results/compile-only.json; its log $results/compile-only.log)" >&2
fi
cmake -S example_project -B "$example" -G Ninja -DKernelOptimizer_DIR="$(cd "$build" && pwd)" >/dev/null
cmake --build "$example" --target optimize_sgemm
cmake --build "$example"
code=0
"$example/matmul" || code=$?
if [ "$code" -eq 77 ]; then
  echo "quickstart: matmul built with the cached kernel; running it needs a GPU" >&2
elif [ "$code" -ne 0 ]; then
  exit "$code"
fi

# Where things are (paths relative to the repository root).
gen=$example/kernel_optimizer/sgemm
echo
echo "quickstart: done. In $ROOT:"
echo "  $kopt                the tool ($kopt --help)"
echo "  $gen/sgemm.cu"
echo "  $gen/sgemm_launch.h"
echo "                                 the generated kernel and its launch header, compiled into matmul"
echo "  $example/matmul           the example application (matmul M N K; needs a GPU)"
if [ "$gpu" = 1 ]; then
  run=$(ls -d "$gen"/runs/run-* 2>/dev/null | sort | tail -n 1 || true)
  if [ -n "$run" ] && [ -f "$run/report.html" ]; then
    echo "  $run/report.html"
    echo "                                 the tuning run's report: open it in a browser"
  fi
else
  echo "  $results/compile-only.json      the candidates compiled without a GPU"
  echo "  (no report of your own: a tuning run on a GPU writes report.html into its run folder;"
  echo "   a run folder copied here from a GPU machine can be drawn with \`$kopt report RUN_DIR\`:"
  echo "   docs/example-run/README.md)"
  if [ -f docs/example-run/report.html ]; then
    echo "  docs/example-run/report.html   the report of a tuning run on an H100: open it in a browser"
  fi
fi
