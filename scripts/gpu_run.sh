#!/usr/bin/env bash
# One call on the GPU machine: build, run every test (the hostile-kernel suite
# included), run `kopt optimize` on the SGEMM template, and run the example
# project's three steps. Logs go to $OUT (default ./gpu-out); the full set is
# also packed into $OUT/logs.tgz.
#
# The CPU unit tests are left out (KOPT_UNIT_TESTS=OFF: that machine lacks
# cpp-httplib; CI runs them); the CMake consumer test too (the example stage
# covers it on the GPU).
#
# Usage (from the repository root):
#   bash scripts/gpu_run.sh [test] [optimize] [bench] [spaces] [templates] [example] [suite] [capture] [agent] [kinds] [tf32]
#   tf32: the split-TF32 SGEMM kind (templates/sgemm/sgemm_tf32.cu): kopt evaluate, the harness's accuracy
#   beside cuBLAS, and bench/ --precision beside cuBLAS FP32 and FAST_TF32 (scripts/check_tf32.sh; about 5 min)
#   classes: kopt optimize on templates/sgemm/application_shapes.json (18 shapes, 8 shape classes,
#   budget $CLASSES_BUDGET, default evals=1000,minutes=6), then kopt generate from the run
#   suite: a generated kernel (the classes stage's, else the example's) benchmarked against cuBLAS
#   on the five flagship shapes and on DeepBench's inference-server suite (every variant on every
#   shape, leaving out a variant whose probe launch is over 2x cuBLAS's: with 11 variants the full
#   table took over 10 minutes; with it, under 2 minutes a run); run after either.
#   The classes stage keeps its run and kernel in build-gpu/ (results-classes, gen-classes), which
#   the device keeps between calls; the working tree's untracked folders are replaced each call
#   stages to run (default: test optimize bench example)
#   capture: the example's shape-capture loop (docs/capture.md) in build-capture/
#   gallery: scripts/gallery.sh planted compare (docs/gallery.md): the gallery's planted kernels, then kopt
#   against Kernel Tuner on each gallery kernel; needs .whl/ carried (Kernel Tuner's wheels)
#   resources: the example's tests under ctest -j --resource-spec-file (kopt devices --ctest-resource-spec);
#   run after the example stage
#   launchers: the plain run, --devices 0 and --worker-launcher "bash -c" compared (docs/multi-gpu.md);
#   LAUNCH_BUDGET (env), default evals=40
#   OPT_BUDGET (env): the optimize budget (default evals=40,minutes=4)
#   spaces: scripts/record_spaces.sh: tuning spaces recorded for kopt replay (docs/search.md,
#   "Replaying a recorded space"), SPACES_MINUTES (default 1.2: six workloads fit a 10-minute call) a
#   workload per call, resumed by the next call
#   until each holds SPACES_TARGET (default 1200) configurations; SPACES_WORKLOADS (default: the six
#   of the script); SPACES_TIMING (W,I: a new record's warm-up and timed launches, record_spaces.sh's
#   --timing); SPACES_PERF_ONLY=1: a new record's spec keeps only the performance cases
#   (--performance-cases-only); the T4 records come back in $OUT/spaces
#   CAPTURE_BUDGET (env): optimize_sgemm's budget in the capture stage (default evals=16,minutes=1.5)
#   EXAMPLE_ARGS (env): extra -D options of the example stage's configure, e.g. "-DKOPT_EXAMPLE_BUDGET=evals=60"
#     (the example tunes on templates/sgemm/application_shapes.json with evals=1000,minutes=5 by default)
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
OUT="${OUT:-$ROOT/gpu-out}"
LOGS="$OUT/logs"
mkdir -p "$LOGS"
STAGES="${*:-test optimize bench example}"
SPACES_MINUTES="${SPACES_MINUTES:-1.2}"
SPACES_TARGET="${SPACES_TARGET:-1200}"
SPACES_WORKLOADS="${SPACES_WORKLOADS:-}"
CAPTURE_BUDGET="${CAPTURE_BUDGET:-evals=16,minutes=1.5}"
OPT_BUDGET="${OPT_BUDGET:-evals=40,minutes=4}"
CLASSES_BUDGET="${CLASSES_BUDGET:-evals=1000,minutes=6}"
LAUNCH_BUDGET="${LAUNCH_BUDGET:-evals=40}"
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
if ! cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKOPT_BUILD_TESTS=ON -DKOPT_UNIT_TESTS=OFF >"$LOGS/configure.log" 2>&1; then
  tail -30 "$LOGS/configure.log"; exit 1
fi
if ! cmake --build "$BUILD" -j "$(nproc)" >"$LOGS/build.log" 2>&1; then
  grep -E -A3 "error" "$LOGS/build.log" | head -40; exit 1
fi
"$K" devices >"$LOGS/devices.json" && grep -E '"name"|"sm_count"' "$LOGS/devices.json"

if [[ " $STAGES " == *" test "* ]]; then
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
print("tuner:", json.dumps(s.get("tuner")), "| counts:", json.dumps(s.get("counts")))
# Per candidate (medians over the search): wall time between results, the
# worker's checking and timed loops, and the measured launches themselves.
import glob, os, statistics
cand = []
for f in sorted(glob.glob(os.path.join(os.path.dirname(sys.argv[1]), "candidates", "*", "result.json"))):
    a = json.load(open(f))
    if a.get("kind") == "candidate": cand.append(a)
t = [a.get("seconds_since_start", 0) for a in cand]
walls = [1000 * (b - a) for a, b in zip(t, t[1:])]
def med(v): return round(statistics.median(v), 1) if v else None
checks = [a.get("check_ms", 0) for a in cand]
timing = [a.get("timing_ms", 0) for a in cand]
measured = [sum(c["latency"]["mean_ms"] * c["latency"]["samples"] for c in a.get("cases", []) if c.get("latency"))
            for a in cand]
print("per candidate (median ms): wall", med(walls), "| check", med(checks), "| timed loops", med(timing),
      "| measured launches", med(measured))
sp = s.get("specialization")
if sp:
    print("specialised: geomean", sp.get("geomean_ms"), "ms, / cuBLAS", sp.get("ratio_to_cublas"),
          "| single", sp.get("single_geomean_ms"), "ms, / cuBLAS", sp.get("single_ratio_to_cublas"),
          "|", len(sp.get("variants", [])), "variants:", [v.get("label") for v in sp.get("variants", [])])
    for name, c in sp.get("cases", {}).items():
        print("  ", name, "variant", c.get("variant"), c.get("median_ms"), "ms (single", c.get("single_median_ms"), ")")
PY
  fi
fi

if [[ " $STAGES " == *" bench "* ]]; then
  RUN="$(ls -d "$ROOT"/results-gpu/run-* 2>/dev/null | head -1)"
  if [ -n "$RUN" ]; then
    echo "== bench: cuBLAS vs the tuned kernel built by nvcc (twice)"
    GEN="$ROOT/build-gpu/generated-sgemm"
    "$K" generate --spec templates/sgemm/sgemm.json --name sgemm --out-dir "$GEN" --from-run "$RUN" \
      >"$LOGS/bench.generate.log" 2>&1 || { cat "$LOGS/bench.generate.log"; }
    cp "$GEN/sgemm.cu" "$GEN/sgemm_launch.h" "$OUT/" 2>/dev/null
    OUT="$OUT" bash bench/run.sh "$GEN" --shape 512x512x512 --shape 256x8192x1024 --shape 8192x8192x8192 \
      --shape 128x128x8192 --shape 6144x6144x256 >"$LOGS/bench.log" 2>&1
    echo "bench exit $?"; tail -60 "$LOGS/bench.log"
  else
    echo "== bench: skipped (no optimize run)"
  fi
fi

if [[ " $STAGES " == *" spaces "* ]]; then
  echo "== spaces: recorded tuning spaces for kopt replay ($SPACES_MINUTES min a workload; resumable)"
  # The run folders stay in build-gpu/spaces between calls; the records come back in $OUT/spaces.
  bash scripts/record_spaces.sh --kopt "$K" --work "$BUILD/spaces" --out "$OUT/spaces" \
       --minutes "$SPACES_MINUTES" --target "$SPACES_TARGET" ${SPACES_TIMING:+--timing "$SPACES_TIMING"} \
       ${SPACES_PERF_ONLY:+--performance-cases-only} $SPACES_WORKLOADS \
       2>&1 | tee "$LOGS/spaces.log"
fi

if [[ " $STAGES " == *" agent "* ]]; then
  echo "== agent: the agent loop against a scripted OpenAI-compatible server, real checks and timings"
  rm -rf "$ROOT/results-agent"
  bash tests/agent/gpu_agent_demo.sh "$K" "$ROOT/results-agent" >"$LOGS/agent.log" 2>&1
  echo "agent demo exit $?"; tail -14 "$LOGS/agent.log"
  A="$(ls -d "$ROOT"/results-agent/run-* 2>/dev/null | tail -1)"
  [ -n "$A" ] && mkdir -p "$LOGS/agent-run" && cp -r "$A"/*.json "$A/agent" "$LOGS/agent-run/" 2>/dev/null
fi

if [[ " $STAGES " == *" templates "* ]]; then
  echo "== the other templates: kopt optimize on softmax and transpose (1.5 min each)"
  for t in softmax transpose; do
    rm -rf "$ROOT/results-$t"
    "$K" optimize --spec "templates/$t/$t.json" --budget evals=200,minutes=1.5 --results-dir "$ROOT/results-$t" \
         --cache-dir "$BUILD/kcache" >"$LOGS/$t.summary.json" 2>"$LOGS/$t.err"
    echo "$t: optimize exit $?"; grep -E "^kopt: (initial|best|[0-9]+ candidate)" "$LOGS/$t.err" | tail -4
  done
  echo "-- the hostile suite with KOPT_HOST_COMPARE=1 (host comparator only, no on-GPU screen)"
  KOPT_HOST_COMPARE=1 "$BUILD/tests/kopt_gpu_tests" --gtest_filter='HostileSuite.*' >"$LOGS/gpu_tests.host_compare.log" 2>&1
  echo "exit $?"; grep -E "^\[  (PASSED|FAILED)|expect" "$LOGS/gpu_tests.host_compare.log" | tail -26
fi

if [[ " $STAGES " == *" kinds "* ]]; then
  echo "== kinds: the SGEMM template's kinds, kopt evaluate and bench (scripts/check_sgemm_kinds.sh)"
  OUT="$OUT" bash scripts/check_sgemm_kinds.sh >"$LOGS/kinds.log" 2>&1
  echo "check_sgemm_kinds exit $?"; tail -120 "$LOGS/kinds.log"
fi

if [[ " $STAGES " == *" gallery "* ]]; then
  echo "== gallery: planted kernels, kopt against Kernel Tuner (scripts/gallery.sh)"
  OUT="$OUT" KOPT="$K" bash scripts/gallery.sh planted compare
  echo "gallery exit $?"
fi

if [[ " $STAGES " == *" tf32 "* ]]; then
  echo "== tf32: the split-TF32 SGEMM kind (scripts/check_tf32.sh)"
  OUT="$OUT" bash scripts/check_tf32.sh >"$LOGS/tf32.log" 2>&1
  echo "check_tf32 exit $?"; sed -n '/==== summary/,$p' "$LOGS/tf32.log"
fi

if [[ " $STAGES " == *" example "* ]]; then
  echo "== example_project: configure, optimize_sgemm, build, ctest"
  EX="$ROOT/build-example"
  rm -rf "$EX"
  # shellcheck disable=SC2086  # EXAMPLE_ARGS: extra -D options, e.g. the application shapes and a larger budget
  cmake -S example_project -B "$EX" -G Ninja -DKernelOptimizer_DIR="$BUILD" -DKOPT_UPDATE_CACHE=ON ${EXAMPLE_ARGS:-} >"$LOGS/example.configure.log" 2>&1 \
    || { tail -20 "$LOGS/example.configure.log"; exit 1; }
  cmake --build "$EX" --target optimize_sgemm >"$LOGS/example.tune.log" 2>&1
  echo "optimize_sgemm exit $?"; grep -E "kopt generate|kopt: best|evaluated" "$LOGS/example.tune.log" | tail -5
  cmake --build "$EX" >"$LOGS/example.build.log" 2>&1; echo "build exit $?"
  ctest --test-dir "$EX" --output-on-failure >"$LOGS/example.ctest.log" 2>&1
  echo "example ctest exit $?"; grep -E "Test +#|tests passed|matmul " "$LOGS/example.ctest.log"
  cp example_project/sgemm.tuning.json "$OUT/sgemm.tuning.json" 2>/dev/null && echo "tuning cache written"
  mkdir -p "$LOGS/gen-example" && cp "$EX"/kernel_optimizer/sgemm/sgemm.cu "$EX"/kernel_optimizer/sgemm/sgemm_launch.h \
    "$LOGS/gen-example/" 2>/dev/null
  cp "$EX"/kernel_optimizer/sgemm/runs/run-*/summary.json "$LOGS/example.summary.json" 2>/dev/null
  # The whole run folder (for kopt report and scripts/example_report.sh on a machine without a GPU).
  tar -C "$EX"/kernel_optimizer/sgemm/runs -czf "$LOGS/example-run.tgz" . 2>/dev/null
  grep -E "wall time|compiles|time split" "$LOGS/example.tune.log" | tail -4
  echo "-- a second build of optimize_sgemm with nothing changed (must not tune again)"
  cmake --build "$EX" --target optimize_sgemm >"$LOGS/example.retune.log" 2>&1
  echo "exit $?"; grep -cE "kopt generate|kopt: " "$LOGS/example.retune.log" | sed 's/^/kopt lines: /'; tail -2 "$LOGS/example.retune.log"
fi

if [[ " $STAGES " == *" classes "* ]]; then
  echo "== classes: kopt optimize over templates/sgemm/application_shapes.json in shape classes (budget $CLASSES_BUDGET)"
  rm -rf "$BUILD/results-classes" "$BUILD/gen-classes"
  SHAPES=templates/sgemm/application_shapes.json
  "$K" optimize --spec templates/sgemm/sgemm.json --input-cases "$SHAPES" --budget "$CLASSES_BUDGET" \
       --results-dir "$BUILD/results-classes" --cache-dir "$BUILD/kcache" >"$LOGS/classes.summary.json" 2>"$LOGS/classes.err"
  echo "optimize exit $?"; grep -E "shape classes|kopt:   c|wall time|kopt: best|evaluated" "$LOGS/classes.err"
  CR="$(ls -d "$BUILD"/results-classes/run-* 2>/dev/null | head -1)"
  if [ -n "$CR" ]; then
    mkdir -p "$LOGS/classes-run" && cp "$CR"/summary.json "$CR"/history.json "$LOGS/classes-run/"
    "$K" generate --spec templates/sgemm/sgemm.json --input-cases "$SHAPES" --name sgemm --out-dir "$BUILD/gen-classes" \
      --from-run "$CR" >"$LOGS/classes.generate.log" 2>&1
    echo "generate exit $?"
    mkdir -p "$LOGS/gen-classes" && cp "$BUILD"/gen-classes/sgemm.cu "$BUILD"/gen-classes/sgemm_launch.h "$LOGS/gen-classes/" 2>/dev/null
  fi
fi

if [[ " $STAGES " == *" suite "* ]]; then
  GEN="$BUILD/gen-classes"
  [[ -f $GEN/sgemm.cu ]] || GEN="$ROOT/build-example/kernel_optimizer/sgemm"
  if [[ -f $GEN/sgemm.cu ]]; then
    echo "== suite: $GEN against cuBLAS, flagship shapes and DeepBench (bench/run.sh, two runs each)"
    grep -E "^// (kopt|variant|  )" "$GEN/sgemm.cu" | head -12
    OUT="$LOGS/suite-flagship" bash bench/run.sh "$GEN" >"$LOGS/suite.flagship.log" 2>&1
    echo "flagship bench exit $?"; grep -E "geomean|ratio|dispatch" "$LOGS/suite.flagship.log" | tail -12
    OUT="$LOGS/suite-deepbench" bash bench/run.sh "$GEN" --shapes-file bench/shapes/deepbench_inference_server_nn.txt --skip-slower 2 \
      >"$LOGS/suite.deepbench.log" 2>&1
    echo "deepbench bench exit $?"; grep -E "geomean|class|within|slower" "$LOGS/suite.deepbench.log" | tail -30
  else
    echo "== suite: skipped (no generated kernel in $GEN: run the classes or example stage first)"
  fi
fi

if [[ " $STAGES " == *" capture "* ]]; then
  echo "== capture: matmul records its shapes (KOPT_CAPTURE), optimize_sgemm tunes on them ($CAPTURE_BUDGET), ctest checks them"
  CX="$ROOT/build-capture"
  CAP="$CX/sgemm.capture.json"
  rm -rf "$CX"
  # Its own build tree, and the committed cache only read (no KOPT_UPDATE_CACHE).
  cmake -S example_project -B "$CX" -G Ninja -DKernelOptimizer_DIR="$BUILD" -DKOPT_EXAMPLE_BUDGET="$CAPTURE_BUDGET" \
    -DKOPT_EXAMPLE_CASES_FROM="$CAP" \
    >"$LOGS/capture.configure.log" 2>&1 || { tail -20 "$LOGS/capture.configure.log"; exit 1; }
  grep -F "does not exist yet" "$LOGS/capture.configure.log" | head -2
  echo "-- 1. first build: no capture yet, tuned on the spec's cases"
  cmake --build "$CX" >"$LOGS/capture.build1.log" 2>&1
  echo "build exit $?"; grep -E "kopt generate|kopt: best" "$LOGS/capture.build1.log" | tail -4
  echo "-- 2. matmul with KOPT_CAPTURE=$CAP"
  : >"$LOGS/capture.matmul.log"
  for shape in "4096 1024 512" "4096 1024 512" "4096 1024 512" "128 4096 1024" "1000 1000 17"; do
    # shellcheck disable=SC2086  # the shape is three arguments
    KOPT_CAPTURE="$CAP" "$CX/matmul" $shape >>"$LOGS/capture.matmul.log" 2>&1
    echo "matmul $shape: exit $?"
  done
  tail -5 "$LOGS/capture.matmul.log"
  if [ -f "$CAP" ]; then cp "$CAP" "$OUT/sgemm.capture.json"; cat "$CAP"; else echo "no capture file written"; fi
  echo "-- 3. optimize_sgemm again: tunes on the captured shapes"
  cmake --build "$CX" --target optimize_sgemm >"$LOGS/capture.tune.log" 2>&1
  echo "optimize_sgemm exit $?"
  grep -E "application shapes|kopt generate|kopt: best|evaluated" "$LOGS/capture.tune.log" | tail -6
  cp "$CX/kernel_optimizer/sgemm/sgemm.cases.json" "$LOGS/capture.cases.json" 2>/dev/null
  CRUN="$(ls -d "$CX"/kernel_optimizer/sgemm/runs/run-* 2>/dev/null | tail -1)"
  if [ -n "$CRUN" ]; then
    mkdir -p "$LOGS/capture-run"; cp "$CRUN"/*.json "$LOGS/capture-run/" 2>/dev/null
    python3 - "$CRUN/summary.json" "$CRUN/spec.json" <<'PY' || true
import json, sys
s, spec = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
perf = [(c["name"], c.get("weight", 1)) for c in spec["cases"] if c.get("role") == "performance"]
print("tuned on", len(perf), "performance cases:", perf)
fb = s.get("final_best", {})
print("final best:", fb.get("label"), "weighted geomean", fb.get("geomean_ms"), "ms | / cuBLAS", fb.get("ratio_to_cublas"))
sp = s.get("specialization")
if sp:
    print("specialised: weighted geomean", sp.get("geomean_ms"), "ms | single", sp.get("single_geomean_ms"), "ms")
    for name, c in sp.get("cases", {}).items():
        print("  ", name, "variant", c.get("variant"), c.get("median_ms"), "ms (single", c.get("single_median_ms"), ")")
PY
  fi
  echo "-- 4. build and ctest: sgemm.correctness and sgemm.benchmark on the captured shapes"
  cmake --build "$CX" >"$LOGS/capture.build2.log" 2>&1; echo "build exit $?"
  ctest --test-dir "$CX" --output-on-failure >"$LOGS/capture.ctest.log" 2>&1
  echo "ctest exit $?"; grep -E "Test +#|tests passed" "$LOGS/capture.ctest.log"
  ctest --test-dir "$CX" -R 'sgemm\.correctness' -V >"$LOGS/capture.correctness.log" 2>&1
  echo "sgemm.correctness exit $?; captured cases checked: $(grep -o '"captured_[A-Za-z0-9_]*"' "$LOGS/capture.correctness.log" | sort -u | tr '\n' ' ')"
  echo "-- 5. optimize_sgemm with nothing changed (must not tune again)"
  cmake --build "$CX" --target optimize_sgemm >"$LOGS/capture.retune.log" 2>&1
  echo "exit $?; kopt generate runs: $(grep -c 'KernelOptimizer: generating' "$LOGS/capture.retune.log")"
fi

if [[ " $STAGES " == *" resources "* ]]; then
  EX="$ROOT/build-example"
  if [[ -f $EX/CTestTestfile.cmake ]]; then
    echo "== resources: the example's tests under ctest -j 4 --resource-spec-file"
    "$K" devices --ctest-resource-spec "$EX/gpus.json" >/dev/null 2>"$LOGS/resources.devices.err"
    echo "kopt devices --ctest-resource-spec exit $?"; cat "$EX/gpus.json"; cp "$EX/gpus.json" "$LOGS/" 2>/dev/null
    ctest --test-dir "$EX" -j 4 --resource-spec-file "$EX/gpus.json" -V >"$LOGS/resources.ctest.log" 2>&1
    echo "ctest exit $?"; grep -E "CTest gave this test GPU|tests passed|Test +#" "$LOGS/resources.ctest.log" | sed -E 's/^[0-9]+: //'
  else
    echo "== resources: skipped (run the example stage first)"
  fi
fi

if [[ " $STAGES " == *" launchers "* ]]; then
  echo "== launchers: the plain run, --devices 0 and --worker-launcher \"bash -c\" (random strategy, seed 1, $LAUNCH_BUDGET)"
  M="$BUILD/launchers"; rm -rf "$M"; mkdir -p "$M"
  S=templates/sgemm/sgemm.json
  for r in plain devices0 launcher; do
    extra=()
    [[ $r == devices0 ]] && extra=(--devices 0)
    [[ $r == launcher ]] && extra=(--worker-launcher "bash -c")
    start=$(date +%s)
    "$K" optimize --spec $S --strategy random --seed 1 --budget "$LAUNCH_BUDGET" --results-dir "$M/$r" \
         --cache-dir "$M/c-$r" "${extra[@]}" >"$LOGS/launchers.$r.json" 2>"$LOGS/launchers.$r.err"
    echo "$r: exit $?, $(( $(date +%s) - start )) s"
  done
  python3 - "$M" <<'PY' || true
import glob, json, statistics, sys
m = sys.argv[1]
def load(name, f):
    return json.load(open(glob.glob(f"{m}/{name}/run-*/{f}")[0]))
def geomeans(name):
    h = load(name, "history.json")["attempts"]
    return {a["label"]: a["geomean_ms"] for a in h if a["kind"] == "candidate" and a.get("geomean_ms")}
for r in ("plain", "devices0", "launcher"):
    s = load(r, "summary.json"); fb = s.get("final_best", {}); t = s.get("tuner", {})
    ret = [x.get("median_ms") for x in s.get("retime", []) if x.get("index") == fb.get("index")]
    print(r, "| winner", fb.get("label"), "| geomean", fb.get("geomean_ms"), "ms | retimed", ret[:1],
          "| per min", t.get("candidates_per_minute"), "| measured", t.get("gpu_measured_fraction"),
          "| devices", [(d.get("device"), d.get("evaluated")) for d in t.get("devices", [])])
plain = geomeans("plain")
for r in ("devices0", "launcher"):
    o = geomeans(r); q = [o[k] / plain[k] for k in plain if k in o]
    if q:
        print(r, len(q), "paired with plain; geomean ratio median %.4f min %.4f max %.4f" % (statistics.median(q), min(q), max(q)))
PY
  mkdir -p "$LOGS/launchers" && for r in plain devices0 launcher; do
    cp "$M/$r"/run-*/summary.json "$LOGS/launchers/$r.summary.json" 2>/dev/null; done
fi
