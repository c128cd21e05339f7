# What the GPU check scripts (check_tf32.sh, check_sgemm_kinds.sh) share; sourced as their first
# command:
#   source "$(dirname "$0")/gpu_env.sh" || exit 2
# It sets -uo pipefail, changes to the repository root and sets ROOT (that folder) and OUT ($OUT,
# default $ROOT/gpu-out), and puts /usr/local/cuda/bin on PATH. The functions below run there.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || return 2
ROOT="$PWD"
OUT="${OUT:-$ROOT/gpu-out}"
export PATH="/usr/local/cuda/bin:$PATH"

# machine_info FILE QUERY: "== machine", the GPU's nvidia-smi --query-gpu=QUERY fields (CSV), nvcc's
# version and the date, on stdout and in FILE.
machine_info() {
  {
    echo "== machine"
    nvidia-smi --query-gpu="$2" --format=csv 2>&1
    nvcc --version | tail -1; date -u
  } 2>&1 | tee "$1"
}

# build_kopt BUILD LOGS JOBS: configures kopt in BUILD (Release, the GPU tests, no unit tests) and
# builds the kopt target with JOBS jobs; the logs go to LOGS/configure.log and LOGS/build.log.
# Fails as the step that failed (no build.log: the configure step).
build_kopt() {
  rm -f "$2/build.log"
  cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKOPT_BUILD_TESTS=ON -DKOPT_UNIT_TESTS=OFF \
    >"$2/configure.log" 2>&1 &&
    cmake --build "$1" --target kopt -j "$3" >"$2/build.log" 2>&1
}

# build_bench BUILD GENERATED LOGS JOBS: configures bench/ in BUILD against the generated pair in
# GENERATED (KOPT_GENERATED_DIR; Release) and builds it with JOBS jobs; the logs go to
# LOGS/bench.configure.log and LOGS/bench.build.log. Fails as the step that failed (no
# bench.build.log: the configure step).
build_bench() {
  rm -f "$3/bench.build.log"
  cmake -S bench -B "$1" -DKOPT_GENERATED_DIR="$2" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc >"$3/bench.configure.log" 2>&1 &&
    cmake --build "$1" -j "$4" >"$3/bench.build.log" 2>&1
}

# evaluate_kernels LOGS SPEC KERNEL...: `$K evaluate` (K: the kopt built) of the KERNELs on SPEC, no
# reference timing, the compile cache in $BUILD/kcache, stopped after $EVAL_TIMEOUT seconds when set;
# the JSON results in LOGS/evaluate.json, the output in LOGS/evaluate.stdout and LOGS/evaluate.err.
# Then prints "kopt evaluate exit RC (SECONDS s)" and the last lines of the errors; returns RC.
evaluate_kernels() {
  local logs=$1 spec=$2 t0 rc
  shift 2
  t0=$(date +%s)
  timeout "${EVAL_TIMEOUT:-0}" "$K" evaluate --spec "$spec" --kernel "$@" --no-reference-timing \
    --cache-dir "$BUILD/kcache" --json "$logs/evaluate.json" >"$logs/evaluate.stdout" 2>"$logs/evaluate.err"
  rc=$?
  echo "kopt evaluate exit $rc ($(( $(date +%s) - t0 )) s)"
  tail -3 "$logs/evaluate.err"
  return $rc
}
