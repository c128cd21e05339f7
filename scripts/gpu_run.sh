#!/usr/bin/env bash
# One call on the GPU machine: build, run every test (the hostile-kernel suite
# included), run `kopt optimize` on the SGEMM template, and run the example
# project's three steps. Logs go to $OUT (default ./gpu-out); the full set is
# also packed into $OUT/logs.tgz.
#
# Usage (from the repository root): bash scripts/gpu_run.sh [test] [optimize] [example]
#   stages to run (default: all three)
#   OPT_BUDGET (env): the optimize budget (default evals=40,minutes=4)
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
OUT="${OUT:-$ROOT/gpu-out}"
LOGS="$OUT/logs"
mkdir -p "$LOGS"
STAGES="${*:-test optimize example}"
OPT_BUDGET="${OPT_BUDGET:-evals=40,minutes=4}"
export PATH="/usr/local/cuda/bin:$PATH"
BUILD="$ROOT/build-gpu"
K="$BUILD/tool/kopt"
pack() { tar -C "$OUT" -czf "$OUT/logs.tgz" logs 2>/dev/null; }
trap pack EXIT

{
  echo "== machine"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv 2>&1
  nvcc --version | tail -1; cmake --version | head -1; date -u
} 2>&1 | tee "$LOGS/machine.txt"

echo "== build"
if ! cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$LOGS/configure.log" 2>&1; then
  tail -30 "$LOGS/configure.log"; exit 1
fi
if ! cmake --build "$BUILD" -j "$(nproc)" >"$LOGS/build.log" 2>&1; then
  grep -E -A3 "error" "$LOGS/build.log" | head -40; exit 1
fi
"$K" devices >"$LOGS/devices.json" && grep -E '"name"|"sm_count"' "$LOGS/devices.json"

if [[ " $STAGES " == *" test "* ]]; then
  echo "== ctest: unit tests (the GPU suite runs next, the CMake consumer test is left out: the example stage covers it)"
  ctest --test-dir "$BUILD" -E "cmake.consumer|gpu.harness" --output-on-failure -j 8 >"$LOGS/ctest.log" 2>&1
  echo "ctest exit $?"
  grep -E "tests passed|Failed|\*\*\*|Skipped" "$LOGS/ctest.log" | tail -15
  echo "-- gpu.harness: the hostile-kernel suite and the plain SGEMM"
  "$BUILD/tests/kopt_gpu_tests" >"$LOGS/gpu_tests.log" 2>&1
  echo "kopt_gpu_tests exit $?"
  grep -vE "^\[ *(RUN|OK) " "$LOGS/gpu_tests.log" | tail -60
fi

if [[ " $STAGES " == *" optimize "* ]]; then
  echo "== kopt optimize on templates/sgemm (budget $OPT_BUDGET)"
  rm -rf "$ROOT/results-gpu"
  "$K" optimize --spec templates/sgemm/sgemm.json --budget "$OPT_BUDGET" --results-dir "$ROOT/results-gpu" \
       --cache-dir "$BUILD/kcache" >"$LOGS/optimize.summary.json" 2>"$LOGS/optimize.err"
  echo "optimize exit $?"
  tail -8 "$LOGS/optimize.err"
  RUN="$(ls -d "$ROOT"/results-gpu/run-* 2>/dev/null | head -1)"
  if [ -n "$RUN" ]; then
    cp "$RUN/summary.json" "$OUT/summary.json"; cp "$RUN/best.cu" "$OUT/best.cu" 2>/dev/null
    cp "$RUN/report.html" "$OUT/report.html" 2>/dev/null
    mkdir -p "$LOGS/run"; cp "$RUN"/*.json "$RUN"/*.svg "$LOGS/run/" 2>/dev/null
    python3 - "$RUN/summary.json" <<'PY' || true
import json, sys
s = json.load(open(sys.argv[1]))
fb = s.get("final_best", {})
print("final best:", fb.get("label"), "geomean", fb.get("geomean_ms"), "ms",
      "| x initial", fb.get("speedup_vs_initial"), "| x reference", fb.get("speedup_vs_reference"),
      "| / cuBLAS", fb.get("ratio_to_cublas"))
print("tuner:", json.dumps(s.get("tuner")), "| counts:", json.dumps(s.get("counts_by_verdict", s.get("verdicts"))))
PY
  fi
fi

if [[ " $STAGES " == *" example "* ]]; then
  echo "== example_project: configure, optimize_sgemm, build, ctest"
  EX="$ROOT/build-example"
  rm -rf "$EX"
  cmake -S example_project -B "$EX" -G Ninja -DKernelOptimizer_DIR="$BUILD" >"$LOGS/example.configure.log" 2>&1 \
    || { tail -20 "$LOGS/example.configure.log"; exit 1; }
  cmake --build "$EX" --target optimize_sgemm >"$LOGS/example.tune.log" 2>&1
  echo "optimize_sgemm exit $?"; grep -E "kopt generate|kopt: best|evaluated" "$LOGS/example.tune.log" | tail -5
  cmake --build "$EX" >"$LOGS/example.build.log" 2>&1; echo "build exit $?"
  ctest --test-dir "$EX" --output-on-failure >"$LOGS/example.ctest.log" 2>&1
  echo "example ctest exit $?"; grep -E "Test +#|tests passed|matmul " "$LOGS/example.ctest.log"
  cp example_project/sgemm.tuning.json "$OUT/sgemm.tuning.json" 2>/dev/null && echo "tuning cache written"
fi
