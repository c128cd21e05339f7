#!/usr/bin/env bash
# One call on the GPU machine (about 5 minutes on an H100/H200; 12 configurations) to check and measure the split-TF32
# SGEMM kind (templates/sgemm/sgemm_tf32.cu, spec templates/sgemm/sgemm_tf32.json): correctness of
# representative configurations on every correctness case, their accuracy beside cuBLAS FP32's as
# the harness records it, and their speed and accuracy beside cuBLAS FP32 and cuBLAS FAST_TF32.
#
# Usage (from the repository root):
#   bash scripts/check_tf32.sh [evaluate] [accuracy] [bench]     (default: all three)
#     evaluate  `kopt evaluate` of the configurations of scripts/tf32_configs.py on every
#               correctness case of sgemm_tf32.json, two adversarial accuracy cases (wide exponent
#               range; every element at the TF32 rounding tie) and six DeepBench/flagship shapes
#               (5 + 30 launches): verdict, median per shape, the worst relative error per config;
#               with the accuracy stage's cuBLAS baseline, each configuration's worst error ratio
#               to cuBLAS FP32 over the cases with K >= 64 (contract.txt: the 2x contract per config)
#     accuracy  `kopt optimize` on sgemm_tf32.json with the adversarial cases (budget
#               $ACC_BUDGET, default evals=6,minutes=2: the five seeds and one more): the run folder
#               holds the cuBLAS FP32 baseline's max and RMS relative error on every case beside
#               every candidate's (CaseResult rel_error_max / rel_error_rms); prints, per case,
#               cuBLAS's and the worst accepted candidate's, and their ratio (contract: <= 2)
#     wgmma     the sm_90a kernel (templates/sgemm/sgemm_tf32_wgmma.cu; not in the default: run
#               `bash scripts/check_tf32.sh wgmma`, about 5-6 minutes for the first 23 variants, about
#               4 with WG_EVALUATE=0, which also skips building kopt; of the 29 now, choose with
#               WG_VARIANTS below or raise WG_DEADLINE): bench/tf32_wgmma_check.cu built with nvcc
#               for sm_90a (registers, spills, HGMMA count in the SASS), then each of its
#               variants in a process of its own under a timeout (WG_TIMEOUT, default 90 s; the
#               variants left when WG_DEADLINE, default 330 s, has passed are reported skipped): an
#               exact-integer probe (with a one-hot decode of what each output read when it is
#               wrong), every element of every case against an FP64 oracle with the harness's
#               tolerance, max and RMS error beside cuBLAS FP32's, speed on the flagship shapes beside
#               cuBLAS FP32 (WG_ITERS launches, default 20); a warp-specialized variant (WS 1) also
#               against the bits of its WS 0 twin (the same sums: twin_same_bits=yes expected); with
#               WG_VARIANTS=13,23,24 (numbers, commas) only those variants are compiled and run
#               (about 10 s of build and 10 s of run per variant); WG_NVCC_FLAGS adds nvcc options
#               (-DTF32WG_WAIT_TRAP=100000000: a WS variant's hung mbarrier wait prints which and
#               traps; for diagnosis, the timings are not the kernel's); then `kopt evaluate` of the spec's seeds
#               (scripts/tf32_configs.py --wgmma: NVRTC for sm_90a through the file's kopt:options
#               line, the harness's verdicts; WG_EVALUATE=0 skips it). wgmma/summary.txt: a table of
#               each correct variant's ratio to cuBLAS FP32 per timed shape (flagship and others),
#               the best variant per shape (what dispatch can pick) and its flagship geomean, and a
#               verdict: CORRECT or WRONG, the fastest correct single variant, the worst error ratios
#     bench     bench/sgemm_bench --precision --all-variants on the synthetic generated pair of the
#               configurations: the five flagship shapes, 4096^3, 8192^3 and DeepBench shapes; per
#               shape every variant, cuBLAS FP32 (pedantic) and cuBLAS CUBLAS_COMPUTE_32F_FAST_TF32:
#               TFLOP/s, fraction of the FP32 / TF32 / split-TF32 ceilings, ratio to cuBLAS FP32,
#               max and RMS error against an FP64 oracle on every element; bench_summary.txt: per
#               shape the fastest variant's effective TFLOP/s, its fraction of the split-TF32
#               ceiling (494.7 / 3 = 164.9 TFLOP/s: NVIDIA's dense TF32 figure for the H100 SXM and
#               the H200, and at the card's maximum clock), its ratio to cuBLAS FP32, the flagship
#               geomean against the 1.6x bar
# The SM clock is sampled read-only (nvidia-smi --query-gpu ... -lms 500) during the whole call, and
# bench/tf32_peak.cu measures what FFMA, mma.sync TF32 and wgmma TF32 reach on this card (peak.txt).
# Environment: OUT (default ./gpu-out; everything goes to $OUT/tf32/), BENCH_ITERS (default 30),
#   ACC_BUDGET, JOBS (default nproc).
# Exit status: 0 when every configuration passed every check (cuBLAS FAST_TF32 is expected to
# fail the FP32 bound: it is measured, not checked).
source "$(dirname "$0")/gpu_env.sh" || exit 2  # ROOT (the cwd), OUT, machine_info, build_*, evaluate_kernels
T_OUT="$OUT/tf32"
mkdir -p "$T_OUT"
JOBS="${JOBS:-$(nproc)}"
ACC_BUDGET="${ACC_BUDGET:-evals=6,minutes=2}"
STAGES=()
for a in "$@"; do
  case $a in
    evaluate|accuracy|bench|wgmma) STAGES+=("$a") ;;
    *) echo "check_tf32.sh: unknown argument '$a' (stages: evaluate, accuracy, bench, wgmma)" >&2; exit 2 ;;
  esac
done
[[ ${#STAGES[@]} -eq 0 ]] && STAGES=(evaluate accuracy bench)
has() { [[ " ${STAGES[*]} " == *" $1 "* ]]; }
BUILD="$ROOT/build-gpu"
BB="$ROOT/build-bench-tf32"
K="$BUILD/tool/kopt"
status=0
T0=$(date +%s)
since() { echo "$(( $(date +%s) - T0 )) s"; }

machine_info "$T_OUT/machine.txt" name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu
# Read-only: the SM clock, power and throttle reasons every 500 ms while this script runs.
reasons=,clocks_throttle_reasons.active
nvidia-smi --query-gpu=clocks_throttle_reasons.active --format=csv,noheader >/dev/null 2>&1 || reasons=
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.max.sm,power.draw,temperature.gpu$reasons \
  --format=csv,noheader -lms 500 >"$T_OUT/clocks.csv" 2>/dev/null &
SAMPLER=$!
finish() {
  kill "$SAMPLER" 2>/dev/null
  rm -f "$T_OUT"/adv_*.npy  # 16 MB of inputs that scripts/tf32_configs.py writes again on demand
  rm -f "$T_OUT"/wgmma/eval/adv_*.npy "$T_OUT/wgmma/sass.txt"  # written again on demand; the SASS is large
  tar -C "$OUT" --exclude=tf32/wgmma/tf32_wgmma_check -czf "$OUT/tf32.tgz" tf32 2>/dev/null
}
trap finish EXIT

echo "== configurations (scripts/tf32_configs.py)"
python3 scripts/tf32_configs.py "$T_OUT" || exit 2
cat "$T_OUT/configs.txt"

# kopt is needed by evaluate, accuracy and the wgmma stage's kopt evaluate (not with WG_EVALUATE=0).
NEED_KOPT=0
{ has evaluate || has accuracy || { has wgmma && [[ ${WG_EVALUATE:-1} != 0 ]]; }; } && NEED_KOPT=1
echo "== build ($(since)): kopt (if needed: $NEED_KOPT) and bench/ in parallel"
KOPT_BUILD=
if [[ $NEED_KOPT == 1 ]]; then
  build_kopt "$BUILD" "$T_OUT" "$JOBS" &
  KOPT_BUILD=$!
fi
BENCH_BUILD=
if has bench; then
  build_bench "$BB" "$T_OUT/gen" "$T_OUT" "$JOBS" &
  BENCH_BUILD=$!
fi
WG="$T_OUT/wgmma"
WG_BUILD=
if has wgmma; then
  mkdir -p "$WG"
  select=()
  if [[ -n ${WG_VARIANTS:-} ]]; then
    [[ $WG_VARIANTS =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "check_tf32.sh: WG_VARIANTS='$WG_VARIANTS': numbers and commas" >&2; exit 2; }
    select=(-DTW_SELECT)
    for v in ${WG_VARIANTS//,/ }; do select+=("-DTW_SELECT_$v=1"); done
  fi
  (
    # shellcheck disable=SC2086  # WG_NVCC_FLAGS: words, e.g. -DTF32WG_WAIT_TRAP=100000000 (a WS hang traps and says where)
    nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Xptxas -v "${select[@]}" ${WG_NVCC_FLAGS:-} -o "$WG/tf32_wgmma_check" \
      bench/tf32_wgmma_check.cu -lcublas \
      >"$WG/build.log" 2>&1
  ) &
  WG_BUILD=$!
fi
# The instruction ceilings of this card (bench/tf32_peak.cu: FFMA, mma.sync TF32 and, on sm_90,
# wgmma TF32, with no memory traffic), while the builds run on the CPU.
cc="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')"
peak_arch=(-arch=sm_80)
[[ $cc == 90 ]] && peak_arch=(-arch=sm_90a -DKOPT_TF32_PEAK_WGMMA)
[[ -n $cc && $cc != 90 ]] && peak_arch=(-arch=sm_"$cc")
if nvcc -O3 "${peak_arch[@]}" -o "$T_OUT/tf32_peak" bench/tf32_peak.cu >"$T_OUT/tf32_peak.build.log" 2>&1; then
  "$T_OUT/tf32_peak" >"$T_OUT/peak.txt" 2>&1 || echo "tf32_peak failed (see $T_OUT/peak.txt)"
  cat "$T_OUT/peak.txt"
else
  echo "tf32_peak did not build:"; tail -5 "$T_OUT/tf32_peak.build.log"
fi
# The wgmma stage's variants run first, while kopt builds (its kopt evaluate part follows the build).
wgmma_variants() {
  echo "== wgmma ($(since)): bench/tf32_wgmma_check.cu, each variant in its own process"
  if ! wait "$WG_BUILD"; then
    echo "tf32_wgmma_check did not build:"; grep -E -m8 "error" "$WG/build.log"
    echo "WGMMA VERDICT: NOT BUILT (see $WG/build.log)" >"$WG/summary.txt"
    status=1
    return
  fi
  echo "built ($(since)); per variant (ptxas):"
  awk '/Compiling entry function .wg_v[0-9]+. for .sm_90a./ {v=$0; sub(/.*wg_v/, "v", v); sub(/. for.*/, "", v)}
       v != "" && /spill stores/ {s=$0; sub(/^ */, "", s); sub(/ bytes stack frame, /, " B stack, ", s)}
       v != "" && /Used [0-9]+ registers/ {r=$0; sub(/.*Used /, "", r); sub(/ registers.*/, "", r);
                                           printf "  %s: %s registers, %s\n", v, r, s; v=""}' \
    "$WG/build.log" | sort -V | tee "$WG/ptxas.txt"
  if command -v cuobjdump >/dev/null; then
    cuobjdump -sass "$WG/tf32_wgmma_check" >"$WG/sass.txt" 2>&1
    echo "  SASS: $(grep -c 'HGMMA.64x[0-9]*x8.F32.TF32' "$WG/sass.txt") HGMMA.*.F32.TF32 instructions," \
         "$(grep -c 'WARPGROUP.ARRIVE' "$WG/sass.txt") WARPGROUP.ARRIVE"
  fi
  "$WG/tf32_wgmma_check" --list >"$WG/variants.txt" 2>&1
  : >"$WG/summaries.txt"
  local deadline=$(( $(date +%s) + ${WG_DEADLINE:-330} ))
  while read -r v rest; do
    [[ $v =~ ^[0-9]+$ ]] || continue
    if (( $(date +%s) >= deadline )); then
      echo "SUMMARY v$v correct=NO skipped=\"the variants' time (WG_DEADLINE ${WG_DEADLINE:-330} s) ran out\" label=\"$rest\"" \
        | tee -a "$WG/summaries.txt"
      continue
    fi
    timeout "${WG_TIMEOUT:-90}" "$WG/tf32_wgmma_check" --variant "$v" --iters "${WG_ITERS:-20}" </dev/null \
      >"$WG/v$v.txt" 2>&1
    rc=$?
    if ! grep -q "^SUMMARY v$v " "$WG/v$v.txt"; then
      why="exit $rc"; [[ $rc -eq 124 ]] && why="timeout after ${WG_TIMEOUT:-90} s (a hang?)"
      echo "SUMMARY v$v correct=NO crashed=\"$why\" label=\"$rest\"" >>"$WG/v$v.txt"
    fi
    grep "^SUMMARY v$v " "$WG/v$v.txt" | tail -1 | tee -a "$WG/summaries.txt"
    grep -q "correct=yes probe=exact" "$WG/v$v.txt" || { sed -n '/probe/,/^  case/p' "$WG/v$v.txt" | head -30; grep WRONG "$WG/v$v.txt" | head -5; }
  done <"$WG/variants.txt"
  python3 - "$WG/summaries.txt" <<'PY' | tee "$WG/summary.txt"
import math, re, sys
rows = []
for line in open(sys.argv[1]):
    d = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', line))
    d["v"] = line.split()[1]
    d["label"] = d.get("label", "").strip('"')
    d["x"] = {}
    for item in d.get("x_cublas", "-").split(","):
        if ":" in item:
            shape, ratio = item.split(":")
            d["x"][shape] = float(ratio)
    rows.append(d)
good = [r for r in rows if r.get("correct") == "yes" and r.get("probe") == "exact"
        and not r.get("twin_same_bits", "-").startswith("NO")]
bad = [r for r in rows if r not in good]
def g(r):
    try:
        return float(r.get("flagship_geomean_x_cublas", "nan"))
    except ValueError:
        return float("nan")
FLAG = ["4096x2048x1024", "2048x4096x3072", "8192x1024x4096", "1024x8192x512", "3000x1000x2000"]
shapes = FLAG + sorted({s for r in good for s in r["x"]} - set(FLAG), key=lambda s: [int(x) for x in s.split("x")])
short = lambda s: s.replace("x", "x", 2)
print("x cuBLAS FP32 per shape (time ratio, > 1: faster), correct variants; flagship shapes first:")
print("  %-4s %-30s %4s %7s %5s " % ("v", "label", "regs", "smem KB", "geo") + " ".join("%9s" % s[:9] for s in shapes))
print("  %-4s %-30s %4s %7s %5s " % ("", "", "", "", "") + " ".join("%9s" % s[9:18] for s in shapes))
for r in good:
    print("  %-4s %-30s %4s %7.1f %5.3f " % (r["v"], r["label"][:30], r.get("regs", "?"), int(r.get("smem", "0")) / 1024.0, g(r))
          + " ".join("%9s" % ("%.3f" % r["x"][s] if s in r["x"] else "-") for s in shapes))
best = {s: max((r for r in good if s in r["x"]), key=lambda r: r["x"][s], default=None) for s in shapes}
print("  %-4s %-30s %4s %7s %5s " % ("best", "per shape (what dispatch can pick)", "", "", "")
      + " ".join("%9s" % ("%.3f" % best[s]["x"][s] if best[s] else "-") for s in shapes))
print("  %-4s %-30s %4s %7s %5s " % ("", "  the variant", "", "", "") + " ".join("%9s" % (best[s]["v"] if best[s] else "-") for s in shapes))
fl = [best[s]["x"][s] for s in FLAG if best[s]]
print("WGMMA VERDICT: %s (%d of %d variants correct on every case%s)" % (
    "CORRECT" if good and not bad else "WRONG" if not good else "PARTLY CORRECT", len(good), len(rows),
    "; wrong: " + ", ".join(r["v"] for r in bad) + " (their SUMMARY lines above)" if bad else ""))
if good:
    top = max(good, key=lambda r: g(r) if g(r) == g(r) else -1)
    print("  fastest correct single variant: %s %s: flagship geomean %.3fx cuBLAS FP32 (bar 1.6x); its worst error"
          " ratio to cuBLAS max %s, rms %s (contract <= 2: %s)" % (top["v"], top.get("label", ""), g(top),
          top.get("worst_max_ratio"), top.get("worst_rms_ratio"), top.get("contract")))
    if len(fl) == len(FLAG):
        print("  best variant per flagship shape: geomean %.3fx cuBLAS FP32" % math.exp(sum(map(math.log, fl)) / len(fl)))
    others = [(s, best[s]["x"][s]) for s in shapes if s not in FLAG and best[s]]
    if others:
        print("  other shapes, best variant: " + ", ".join("%s %.3f" % o for o in others) +
              "; worst: %s %.3f" % min(others, key=lambda o: o[1]))
    met = [r for r in good if r.get("contract") == "met"]
    print("  contract met by %d of %d correct variants" % (len(met), len(good)))
twins = [r for r in rows if r.get("twin_same_bits", "-") != "-"]
if twins:
    print("  warp-specialized variants, C against the twin's bits: " +
          ", ".join("%s %s" % (r["v"], r["twin_same_bits"]) for r in twins))
PY
}

if has wgmma; then
  wgmma_variants
fi

if [[ -n $KOPT_BUILD ]]; then
  if ! wait "$KOPT_BUILD"; then
    echo "kopt build FAILED"; tail -30 "$T_OUT/configure.log"; grep -E -A3 "error" "$T_OUT/build.log" | head -40; exit 1
  fi
  echo "kopt built ($(since))"
fi

if has wgmma && [[ ${WG_EVALUATE:-1} != 0 ]]; then
  echo "== wgmma ($(since)): kopt evaluate of the seeds of sgemm_tf32_wgmma.json (NVRTC, the harness)"
  python3 scripts/tf32_configs.py --wgmma "$WG/eval" >/dev/null || status=1
  EVAL_TIMEOUT=200 evaluate_kernels "$WG" "$WG/eval/tf32_wgmma_kinds.json" "$WG"/eval/cfg_*.cu
  rc=$?
  python3 scripts/tf32_report.py evaluate "$WG/evaluate.json" "$WG/eval/configs.txt" >"$WG/evaluate.txt" || status=1
  [[ $rc -ne 0 ]] && status=1
fi

if has evaluate; then
  echo "== kopt evaluate ($(since)): every configuration on every case of $T_OUT/tf32_kinds.json"
  evaluate_kernels "$T_OUT" "$T_OUT/tf32_kinds.json" "$T_OUT"/cfg_*.cu || status=1
  python3 scripts/tf32_report.py evaluate "$T_OUT/evaluate.json" "$T_OUT/configs.txt" >"$T_OUT/evaluate.txt" || status=1
fi

if has accuracy; then
  echo "== kopt optimize ($(since)) on sgemm_tf32.json + adversarial cases, budget $ACC_BUDGET: cuBLAS's errors beside the candidates'"
  rm -rf "$T_OUT/results"
  "$K" optimize --spec "$T_OUT/accuracy.json" --budget "$ACC_BUDGET" --no-specialize --results-dir "$T_OUT/results" \
    --cache-dir "$BUILD/kcache" >"$T_OUT/optimize.summary.json" 2>"$T_OUT/optimize.err"
  rc=$?
  echo "kopt optimize exit $rc ($(since))"
  tail -4 "$T_OUT/optimize.err"
  RUN="$(ls -d "$T_OUT"/results/run-* 2>/dev/null | head -1)"
  if [[ -n $RUN ]]; then
    python3 scripts/tf32_report.py accuracy "$RUN" >"$T_OUT/accuracy.txt" || status=1
  else
    echo "no run folder"; status=1
  fi
fi

if has bench; then
  echo "== bench ($(since)): every configuration, cuBLAS FP32 and cuBLAS FAST_TF32, errors against FP64"
  if ! wait "$BENCH_BUILD"; then
    echo "bench build FAILED"; grep -E -B2 -A6 "error" "$T_OUT/bench.build.log" | head -60; exit 1
  fi
  grep -E "Compiling entry|Used [0-9]+ registers|spill" "$T_OUT/bench.build.log" | sed 's/^ptxas info *: //' >"$T_OUT/bench.ptxas.txt"
  DB=(512x1500x2048 1024x3000x2560 7680x1500x2560 35x700x2048 3072x1500x1024 5124x700x2048 512x3000x1536 6144x4x2048)
  args=()
  for s in 4096x2048x1024 2048x4096x3072 8192x1024x4096 1024x8192x512 3000x1000x2000 4096x4096x4096 \
           8192x8192x8192 "${DB[@]}"; do args+=(--shape "$s"); done
  "$BB/sgemm_bench" --no-default-shapes "${args[@]}" --all-variants --precision --iters "${BENCH_ITERS:-30}" --warmup 5 \
    --label "check_tf32" --json "$T_OUT/bench.json" >"$T_OUT/bench.txt" 2>"$T_OUT/bench.err"
  rc=$?
  echo "sgemm_bench exit $rc ($(since))"
  [[ $rc -ne 0 ]] && status=1
  tail -3 "$T_OUT/bench.err"
fi

# ---- the compact summary, last ------------------------------------------------------------------
kill "$SAMPLER" 2>/dev/null
echo
echo "================================ summary ($(since)) ================================"
head -2 "$T_OUT/machine.txt" | tail -1
python3 scripts/tf32_report.py clocks "$T_OUT/clocks.csv"
[[ -f $T_OUT/peak.txt ]] && cat "$T_OUT/peak.txt"
grep -h "registers\|spill" "$T_OUT/bench.ptxas.txt" 2>/dev/null | grep -E "[1-9][0-9]* bytes spill" | head -3
[[ -f $T_OUT/evaluate.txt ]] && cat "$T_OUT/evaluate.txt"
[[ -f $T_OUT/accuracy.txt ]] && cat "$T_OUT/accuracy.txt"
RUN="$(ls -d "$T_OUT"/results/run-* 2>/dev/null | head -1)"
if [[ -f $T_OUT/evaluate.json && -n $RUN ]]; then
  python3 scripts/tf32_report.py contract "$T_OUT/evaluate.json" "$RUN" "$T_OUT/configs.txt" | tee "$T_OUT/contract.txt"
fi
if [[ -f $T_OUT/bench.txt ]]; then
  sed -n '/^variants (cudaFuncGetAttributes/,/^  (dynamic B/p' "$T_OUT/bench.txt"
  sed -n '/^precision:/,/contract: <= 2)$/p' "$T_OUT/bench.txt"
  sed -n '/^variants on every shape/,/^  dispatched more than/p' "$T_OUT/bench.txt"
  grep -E "^sgemm_bench: (all|FAILED)" "$T_OUT/bench.txt"
fi
if [[ -f $T_OUT/bench.json ]]; then
  python3 scripts/tf32_report.py bench "$T_OUT/bench.json" | tee "$T_OUT/bench_summary.txt"
fi
if has wgmma; then
  echo
  echo "---- wgmma (sm_90a) kernel: templates/sgemm/sgemm_tf32_wgmma.cu ----"
  [[ -f $WG/ptxas.txt ]] && cat "$WG/ptxas.txt"
  [[ -f $WG/summaries.txt ]] && cat "$WG/summaries.txt"
  [[ -f $WG/evaluate.txt ]] && cat "$WG/evaluate.txt"
  [[ -f $WG/summary.txt ]] && cat "$WG/summary.txt"
  grep -q "WGMMA VERDICT: CORRECT" "$WG/summary.txt" 2>/dev/null || status=1
fi
echo "full logs: $T_OUT (and $OUT/tf32.tgz); exit $status"
exit $status
