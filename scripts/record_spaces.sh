#!/usr/bin/env bash
# Records tuning spaces on a GPU for `kopt replay` (docs/search.md, "Recording a space"):
# for each workload, `kopt optimize --strategy random` over its whole space (random
# order without repeats: a sweep cut short is an unbiased sample of the space),
# quick timing (3 warm-up + 15 timed launches unless --timing says, one checking trial), no shape
# classes, no screening, no re-timing; then the run folder as T4 results, a record that
# `kopt replay` and scripts/compare_kernel_tuner.py read.
#
# Resumable: every call continues each workload's run (kopt optimize --resume)
# until it has TARGET evaluations (or its whole space), spending at most MINUTES
# on each workload per call, and rewrites the T4 records. Run it again until
# it says every workload is done.
#
#   scripts/record_spaces.sh [--kopt KOPT] [--work DIR] [--out DIR] [--minutes M]
#                            [--target N] [--cache-dir DIR] [WORKLOAD...]
#
#   WORKLOAD  a template name (templates/NAME/NAME.json) or a spec path
#             (default: the six below, each of 1000 valid configurations or more; others of
#             1000 or more: hotspot, 43580 on sm_90, three compiles a configuration of about
#             0.2 s each, launches estimated at a few ms: SPACES_WORKLOADS=hotspot SPACES_MINUTES=5)
#   --kopt    the kopt binary (default build/tool/kopt)
#   --work    where the run folders live between calls (default build/spaces)
#   --out     where the T4 records go (default tests/data/spaces)
#   --minutes per workload and call (default 4)
#   --timing  W,I: warm-up and timed launches of a new record (default 3,15; fewer for
#             kernels of many milliseconds, e.g. 1,5)
#   --performance-cases-only  the record's spec keeps only the performance cases (each configuration
#             is still checked on them): half the compiles of a spec whose case sizes are
#             compile-time defines with one correctness case (the convolution), at the price of
#             recording as correct a configuration that fails only on an odd size
#   --target  evaluations a record should hold (default 1200; the whole space if smaller)
#   --cache-dir the NVRTC cache (default WORK/kcache, the records' own: a configuration compiled
#             before, in another cache, would record no compile time in its cost)
#
# On the GPU machine: bash scripts/gpu_run.sh spaces (SPACES_MINUTES, SPACES_TARGET,
# SPACES_WORKLOADS), whose run folders stay in build-gpu/spaces between calls.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
KOPT="$ROOT/build/tool/kopt"
WORK="$ROOT/build/spaces"
OUTDIR="$ROOT/tests/data/spaces"
MINUTES=4
TIMING=3,15
TARGET=1200
CACHE_DIR=""
PERF_ONLY=0
WORKLOADS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --kopt) KOPT="$2"; shift 2 ;;
    --work) WORK="$2"; shift 2 ;;
    --out) OUTDIR="$2"; shift 2 ;;
    --minutes) MINUTES="$2"; shift 2 ;;
    --timing) TIMING="$2"; shift 2 ;;
    --target) TARGET="$2"; shift 2 ;;
    --performance-cases-only) PERF_ONLY=1; shift ;;
    --cache-dir) CACHE_DIR="$2"; shift 2 ;;
    -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
    -*) echo "record_spaces: unknown option $1" >&2; exit 2 ;;
    *) WORKLOADS+=("$1"); shift ;;
  esac
done
# SGEMM (FP32 and split TF32, the flagship shapes) and four gallery kernels.
[ ${#WORKLOADS[@]} -eq 0 ] && WORKLOADS=(sgemm sgemm_tf32 convolution pnpoly reduction nbody)
[ -x "$KOPT" ] || { echo "record_spaces: $KOPT is not an executable (--kopt)" >&2; exit 2; }
mkdir -p "$WORK" "$OUTDIR"

spec_of() {  # a workload name or path -> its spec file
  case "$1" in
    *.json) echo "$1" ;;
    sgemm_tf32) echo "templates/sgemm/sgemm_tf32.json" ;;
    *) echo "templates/$1/$1.json" ;;
  esac
}

# The record's spec: a copy in the work folder (its files' paths made absolute) with quick
# timing (--timing), one checking trial, no baseline and no seeds (the sample stays uniform).
quick_spec() {
  python3 - "$1" "$2" "$TIMING" "$PERF_ONLY" <<'PY'
import json, os, sys
spec, copy = sys.argv[1], sys.argv[2]
warmup, iterations = (int(x) for x in sys.argv[3].split(","))
perf_only = sys.argv[4] == "1"
folder = os.path.dirname(os.path.abspath(spec))
def absolute(v):
    if isinstance(v, dict):
        return {k: (os.path.join(folder, x) if k in ("source", "path") and isinstance(x, str) and not os.path.isabs(x)
                    else absolute(x)) for k, x in v.items()}
    return [absolute(x) for x in v] if isinstance(v, list) else v
s = absolute(json.load(open(spec)))
s["timing"] = dict(s.get("timing", {}), warmup=warmup, iterations=iterations)
s["checks"] = dict(s.get("checks", {}), trials=1, repeats=1)
s.pop("baseline", None)
s.get("tuning", {}).pop("seeds", None)
if perf_only:
    s["cases"] = [c for c in s["cases"] if c.get("role") == "performance"]
json.dump(s, open(copy, "w"), indent=1)
PY
}

status=0
summary=()
for w in "${WORKLOADS[@]}"; do
  spec="$(spec_of "$w")"
  name="$(basename "$spec" .json)"
  [ -f "$spec" ] || { echo "record_spaces: $w: no spec $spec" >&2; status=2; continue; }
  dir="$(dirname "$spec")"
  [ -f "$dir/make_inputs.py" ] && [ ! -d "$dir/inputs" ] && python3 "$dir/make_inputs.py" >/dev/null
  results="$WORK/$name"
  run="$(ls -d "$results"/run-* 2>/dev/null | head -1)"
  # --screen-factor 0: every configuration timed in full (a screened one would record its probe).
  common=(--strategy random --seed 1 --budget "evals=$TARGET,minutes=$MINUTES" --shape-classes off
          --screen-factor 0 --retime-rounds 0 --no-specialize --quiet)
  common+=(--cache-dir "${CACHE_DIR:-$WORK/kcache}")
  # Testing: extra kopt optimize arguments (the CTest runs it over the fake worker).
  [ -n "${KOPT_RECORD_ARGS:-}" ] && read -r -a extra <<<"$KOPT_RECORD_ARGS" && common+=("${extra[@]}")
  echo "== $name: $( [ -n "$run" ] && echo "resuming $run" || echo "a new run in $results") ($MINUTES min)"
  if [ -n "$run" ]; then
    "$KOPT" optimize --resume "$run" "${common[@]}" >/dev/null 2>"$results.err"
  else
    quick_spec "$spec" "$WORK/$name.record.json"
    "$KOPT" optimize --spec "$WORK/$name.record.json" --results-dir "$results" "${common[@]}" >/dev/null 2>"$results.err"
  fi
  rc=$?
  # 0 done or budget spent; 1 nothing passed yet (every configuration failed so far).
  if [ $rc -gt 1 ]; then
    echo "record_spaces: $name: kopt optimize exited $rc:" >&2; tail -5 "$results.err" >&2; status=1
  fi
  run="$(ls -d "$results"/run-* 2>/dev/null | head -1)"
  [ -n "$run" ] || continue
  "$KOPT" export --format t4 "$run" -o "$OUTDIR/$name.t4.json" --quiet || { status=1; continue; }
  python3 - "$OUTDIR/$name.t4.json" "$run/summary.json" "$TARGET" "$name" <<'PY'
import json, sys
import os
results = json.load(open(sys.argv[1]))["results"]
summary = json.load(open(sys.argv[2])) if os.path.isfile(sys.argv[2]) else {}
valid = summary.get("valid_configurations")
target = int(sys.argv[3]) if valid is None else min(int(sys.argv[3]), valid)
ok = sum(r["invalidity"] == "correct" for r in results)
state = "done" if len(results) >= target else "not done: run again"
print(f"{sys.argv[4]}: {len(results)} of {target} configurations recorded ({valid} valid), {ok} passed: {state}")
PY
done
echo "Records in $OUTDIR; check them with: $KOPT replay --strategy all $OUTDIR/*.t4.json"
exit $status
