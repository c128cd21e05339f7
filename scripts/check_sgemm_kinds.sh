#!/usr/bin/env bash
# One call on the GPU machine to check the SGEMM template's kinds (templates/sgemm/sgemm_tiled.cu,
# KIND 0 tiled with cluster split-K, KIND 1 rows): representative configurations of each, through
# the harness and against cuBLAS.
#
# Usage (from the repository root):
#   bash scripts/check_sgemm_kinds.sh [evaluate] [bench] [--kind K]...
#   stages (default: evaluate bench):
#     evaluate  builds kopt, then `kopt evaluate` of every configuration of scripts/sgemm_kinds.py
#               on every correctness case of templates/sgemm/sgemm.json (K = 1, K = 500000, N = 1,
#               M = 35, odd sizes) plus ten DeepBench shapes as performance cases (L2 flushed,
#               5 + 30 launches); prints one line per configuration: verdict, geomean and the median
#               of each performance case
#     bench     builds bench/ against a synthetic generated pair holding every configuration as a
#               variant and runs sgemm_bench once over the DeepBench inference-server suite
#               (bench/shapes/deepbench_inference_server_nn.txt or $SHAPES_FILE) and the five performance cases of sgemm.json,
#               --all-variants: every variant checked and timed on every shape against cuBLAS
#               (variants more than 8x slower than cuBLAS on a shape are shown but not timed)
#   --kind K    only configurations of this KIND
# Environment: OUT (default ./gpu-out), BENCH_ITERS (default 30), SHAPES_FILE.
# Logs and JSON go to $OUT/kinds/. Exit status: 0 when every configuration passed every check.
source "$(dirname "$0")/gpu_env.sh" || exit 2  # ROOT (the cwd), OUT, machine_info, build_*, evaluate_kernels
K_OUT="$OUT/kinds"
mkdir -p "$K_OUT"
STAGES=()
KIND_ARGS=()
while [[ $# -gt 0 ]]; do
  case $1 in
    evaluate|bench) STAGES+=("$1") ;;
    --kind) KIND_ARGS+=(--kind "$2"); shift ;;
    *) echo "check_sgemm_kinds.sh: unknown argument '$1' (stages: evaluate, bench; --kind K)" >&2; exit 2 ;;
  esac
  shift
done
[[ ${#STAGES[@]} -eq 0 ]] && STAGES=(evaluate bench)
BUILD="$ROOT/build-gpu"
K="$BUILD/tool/kopt"
SHAPES_FILE="${SHAPES_FILE:-}"
if [[ -z $SHAPES_FILE ]]; then
  SHAPES_FILE="$ROOT/bench/shapes/deepbench_inference_server_nn.txt"
fi
status=0

machine_info "$K_OUT/machine.txt" name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw

echo "== configurations (scripts/sgemm_kinds.py)"
python3 scripts/sgemm_kinds.py "$K_OUT" "${KIND_ARGS[@]}" || exit 2
cat "$K_OUT/configs.txt"

if [[ " ${STAGES[*]} " == *" evaluate "* ]]; then
  echo "== build kopt ($BUILD)"
  if ! build_kopt "$BUILD" "$K_OUT" "$(nproc)"; then
    if [[ -s $K_OUT/build.log ]]; then grep -E -A3 "error" "$K_OUT/build.log" | head -40; else tail -30 "$K_OUT/configure.log"; fi
    exit 1
  fi
  echo "== kopt evaluate: every configuration on every case of $K_OUT/sgemm_kinds.json"
  evaluate_kernels "$K_OUT" "$K_OUT/sgemm_kinds.json" "$K_OUT"/cfg_*.cu || status=1
  python3 - "$K_OUT/evaluate.json" "$K_OUT/configs.txt" <<'PY' || status=1
import json, sys
sys.path.insert(0, "scripts")
from tf32_report import read_labels, timed_cases
res = json.load(open(sys.argv[1]))
labels = read_labels(sys.argv[2])
perf = timed_cases(res)
print("\nverdict and median ms per performance case (correctness cases: checked, not timed)")
print("%-7s %-14s %9s " % ("config", "verdict", "geomean") + " ".join("%14s" % p for p in perf))
bad = 0
for r in res:
    cfg = r.get("kernel", "?").rsplit("/", 1)[-1].replace(".cu", "")
    med = {c["name"]: c["latency"]["median_ms"] for c in r.get("cases", []) if c.get("latency")}
    v = r.get("verdict")
    bad += v != "ok"
    g = r.get("geomean_ms")
    print("%-7s %-14s %9s " % (cfg, v, "%.4f" % g if g else "-") +
          " ".join("%14s" % ("%.4f" % med[p] if p in med else "-") for p in perf))
    if v != "ok":
        print("        failed case %s: %s" % (r.get("failed_case") or "-", (r.get("detail") or "")[:300]))
        failed = ["%s: max error / bound %s, worst at %s" % (c["name"], c.get("max_error_ratio"), c.get("worst_output"))
                  for c in r.get("cases", []) if c.get("passed") is False]
        for f in failed[:6]:
            print("          " + f)
print("\nconfigurations:")
for k, l in labels.items():
    print("  %s %s" % (k, l))
print("\n%d of %d configurations ok" % (len(res) - bad, len(res)))
sys.exit(1 if bad else 0)
PY
fi

if [[ " ${STAGES[*]} " == *" bench "* ]]; then
  echo "== bench: every configuration as a variant, DeepBench suite + the five sgemm.json shapes, vs cuBLAS"
  if [[ -z $SHAPES_FILE ]]; then
    echo "check_sgemm_kinds.sh: no shapes file (set SHAPES_FILE)"; exit 2
  fi
  BB="$ROOT/build-bench-kinds"
  t0=$(date +%s)
  if ! build_bench "$BB" "$K_OUT/gen" "$K_OUT" "$(nproc)"; then
    if [[ -s $K_OUT/bench.build.log ]]; then
      grep -E -B2 -A6 "error" "$K_OUT/bench.build.log" | head -60
    else
      tail -30 "$K_OUT/bench.configure.log"
    fi
    exit 1
  fi
  echo "bench built ($(( $(date +%s) - t0 )) s); ptxas: $(grep -cE 'Used [0-9]+ registers' "$K_OUT/bench.build.log") kernels"
  grep -E "Compiling entry|Used [0-9]+ registers|spill" "$K_OUT/bench.build.log" | sed 's/^ptxas info *: //' >"$K_OUT/bench.ptxas.txt"
  t0=$(date +%s)
  "$BB/sgemm_bench" --shapes-file "$SHAPES_FILE" --shape 4096x2048x1024 --shape 2048x4096x3072 \
      --shape 8192x1024x4096 --shape 1024x8192x512 --shape 3000x1000x2000 --all-variants --skip-slower 8 \
      --iters "${BENCH_ITERS:-30}" --warmup 5 --label "check_sgemm_kinds" --json "$K_OUT/bench.json" \
      >"$K_OUT/bench.txt" 2>"$K_OUT/bench.err"
  rc=$?
  echo "sgemm_bench exit $rc ($(( $(date +%s) - t0 )) s)"
  [[ $rc -ne 0 ]] && status=1
  tail -5 "$K_OUT/bench.err"
  sed -n '/^per shape class/,$p' "$K_OUT/bench.txt"
fi
tar -C "$OUT" -czf "$OUT/kinds.tgz" kinds 2>/dev/null
exit $status
