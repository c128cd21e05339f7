#!/usr/bin/env bash
# bench/run.sh GENERATED_DIR [--shape MxNxK]... [--shapes-file FILE] [other sgemm_bench options]
#   (--shapes-file FILE: "M N K" lines, e.g. bench/shapes/deepbench_inference_server_nn.txt;
#   per-class geomeans and, for a file with several variants, every variant on every shape;
#   --precision: errors against FP64 on every element, cuBLAS FAST_TF32 beside cuBLAS FP32)
#
# Configures and builds bench/ (sgemm_bench) against GENERATED_DIR (the folder holding sgemm.cu
# and sgemm_launch.h written by `kopt generate --name sgemm`), runs the benchmark twice to show
# the run-to-run spread, and prints both tables. JSON (and the text output) go to $OUT when it is
# set, else to the build folder. Needs only the CUDA toolkit at /usr/local/cuda and CMake: no
# network. Environment: KOPT_BENCH_BUILD_DIR (default <repo>/build-bench), JOBS (default nproc).
# The GPU's settings (clocks, power limit, persistence, ECC) are left as found: this script only
# reads them (nvidia-smi --query-gpu) to record them beside the results.
set -euo pipefail

usage() {
  sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2
}
if [[ $# -lt 1 || $1 == -h || $1 == --help ]]; then
  usage
  exit 2
fi
gen=$1
shift
if [[ ! -f $gen/sgemm.cu || ! -f $gen/sgemm_launch.h ]]; then
  echo "run.sh: $gen must hold sgemm.cu and sgemm_launch.h (as written by kopt generate --name sgemm)" >&2
  exit 2
fi
gen=$(cd "$gen" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
export PATH=/usr/local/cuda/bin:$PATH
build=${KOPT_BENCH_BUILD_DIR:-$root/build-bench}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 4)}

cuda_compiler=()
if [[ -x /usr/local/cuda/bin/nvcc ]]; then
  cuda_compiler=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
fi
echo "== configure + build ($build, -j$jobs) against $gen"
mkdir -p "$build"
cmake -S "$here" -B "$build" -DKOPT_GENERATED_DIR="$gen" -DCMAKE_BUILD_TYPE=Release "${cuda_compiler[@]}" >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 2; }
grep -E -A3 "sgemm_bench|Warning" "$build/configure.log" || true
cmake --build "$build" -j "$jobs"

dest=${OUT:-$build}
mkdir -p "$dest"
if [[ -f $gen/sgemm.json ]]; then
  cp "$gen/sgemm.json" "$dest/sgemm_generated.json"
  echo "== generated kernel: $(cat "$gen/sgemm.json" | tr -s ' \n' ' ')"
fi
if command -v nvidia-smi >/dev/null 2>&1; then
  # Read only: record the card's state as found (nothing is changed).
  nvidia-smi --query-gpu=name,driver_version,persistence_mode,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu,ecc.mode.current,clocks_throttle_reasons.active \
    --format=csv >"$dest/sgemm_bench_gpu_state.csv" 2>/dev/null || true
  cat "$dest/sgemm_bench_gpu_state.csv" 2>/dev/null || true
fi

# The SM clock, power and throttle reasons every 500 ms during the runs (read only).
clock_pid=
if command -v nvidia-smi >/dev/null 2>&1; then
  reasons=,clocks_throttle_reasons.active
  nvidia-smi --query-gpu=clocks_throttle_reasons.active --format=csv,noheader >/dev/null 2>&1 || reasons=
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.max.sm,power.draw,temperature.gpu$reasons \
    --format=csv,noheader -lms 500 >"$dest/sgemm_bench_clocks.csv" 2>/dev/null &
  clock_pid=$!
  trap 'kill $clock_pid 2>/dev/null' EXIT
fi

status=0
for run in 1 2; do
  echo "== run $run of 2"
  set +e
  "$build/sgemm_bench" --label "run $run of 2" --json "$dest/sgemm_bench_run$run.json" "$@" >"$dest/sgemm_bench_run$run.txt"
  rc=$?
  set -e
  if [[ $rc -eq 77 ]]; then
    cat "$dest/sgemm_bench_run$run.txt"
    echo "run.sh: no CUDA device: built, nothing measured"
    exit 77
  fi
  if [[ $rc -ne 0 ]]; then
    echo "run.sh: run $run exited with $rc" >&2
    status=$rc
  fi
done

[[ -n $clock_pid ]] && kill "$clock_pid" 2>/dev/null

for run in 1 2; do
  echo
  echo "================================ run $run of 2 ================================"
  cat "$dest/sgemm_bench_run$run.txt"
done
if [[ -s $dest/sgemm_bench_clocks.csv ]]; then
  cut -d, -f2 "$dest/sgemm_bench_clocks.csv" | awk '{print $1}' | grep -E '^[0-9]+$' | sort -n |
    awk '{a[NR] = $1} END {if (NR) printf "\nSM clock during the runs (nvidia-smi every 500 ms, %d samples): min %d, median %d, max %d MHz (%s)\n", NR, a[1], a[int((NR + 1) / 2)], a[NR], "sgemm_bench_clocks.csv"}'
fi

# Run-to-run spread of the medians (needs python3; the JSON files are the data either way).
if command -v python3 >/dev/null 2>&1 && [[ -s $dest/sgemm_bench_run1.json && -s $dest/sgemm_bench_run2.json ]]; then
  python3 - "$dest/sgemm_bench_run1.json" "$dest/sgemm_bench_run2.json" <<'PY' || true
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
print("\nrun-to-run spread of the medians (|run1 - run2| / mean)")
print(f"  {'case':16} {'cuBLAS ms 1/2':>20} {'spread':>7} {'single ms 1/2':>20} {'spread':>7} {'special ms 1/2':>20} {'spread':>7}")
def sp(x, y):
    return abs(x - y) / ((x + y) / 2) * 100 if x and y else float('nan')
for ca, cb in zip(a["cases"], b["cases"]):
    row = f"  {ca['case']:16}"
    for get in (lambda c: c["cublas"]["time"]["median_ms"], lambda c: c["single"]["time"]["median_ms"],
                lambda c: c["specialised"]["time"]["median_ms"]):
        x, y = get(ca) or 0, get(cb) or 0
        row += f" {x:9.4f}/{y:<10.4f} {sp(x, y):6.1f}%"
    print(row)
PY
fi
echo
echo "run.sh: results in $dest (sgemm_bench_run1.{txt,json}, sgemm_bench_run2.{txt,json}, sgemm_bench_clocks.csv)"
exit $status
