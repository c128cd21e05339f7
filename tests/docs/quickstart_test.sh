#!/usr/bin/env bash
# scripts/quickstart.sh without a GPU, on this build's kopt (nothing is built
# in the source tree): it ends with exit 0, says once why there is no GPU,
# calls the compile-only candidates compiled (not evaluated), keeps its log
# readable (a short first line), and says where things are. GPUs are hidden (CUDA_VISIBLE_DEVICES=-1), as on a machine
# without one; skipped (77) without nvcc (the example is a CUDA project).
#
#   quickstart_test.sh SOURCE_DIR BUILD_DIR WORK_DIR
set -euo pipefail
src=$1 build=$2 work=$3
export CUDA_VISIBLE_DEVICES=-1
export PATH="/usr/local/cuda/bin:$PATH"
command -v nvcc >/dev/null || { echo "SKIP: nvcc is needed to configure the example (a CUDA project)"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
code=0
KOPT_QUICKSTART_KOPT_BUILD="$build" KOPT_QUICKSTART_EXAMPLE_BUILD="$work/example" \
  KOPT_QUICKSTART_RESULTS="$work/results" KOPT_CACHE_DIR="$work/cache" \
  "$src/scripts/quickstart.sh" >"$work/out.txt" 2>&1 || code=$?
cat "$work/out.txt"
fails=0
check() {  # check WHAT COUNT PATTERN: PATTERN (fixed string) occurs COUNT times (+: at least once)
  local n
  n=$(grep -c -F -- "$3" "$work/out.txt" || true)
  if { [ "$2" = + ] && [ "$n" -lt 1 ]; } || { [ "$2" != + ] && [ "$n" -ne "$2" ]; }; then
    echo "FAIL: $1: '$3' on $n line(s), expected $2"
    fails=$((fails + 1))
  fi
}
[ "$code" -eq 0 ] || { echo "FAIL: scripts/quickstart.sh exit $code"; fails=$((fails + 1)); }
check "the missing GPU is said once" 1 "[kopt.cuda.077]"
check "nothing is said to be evaluated" 0 "evaluated first"
check "the compile-only step's result" 1 "quickstart: compiled 8 candidate(s) for sm_90 (0 failed); checking and timing need a GPU"
check "the example is built from the cache" 1 "quickstart: matmul built with the cached kernel; running it needs a GPU"
check "where things are" 1 "quickstart: done. In $src:"
check "the generated kernel" + "kernel_optimizer/sgemm/sgemm.cu"
check "how to draw a copied run's report" 1 "a run folder copied here from a GPU machine can be drawn with"
check "no sentence without a subject" 0 "copied here, "
[ -s "$work/results/compile-only.json" ] || { echo "FAIL: no $work/results/compile-only.json"; fails=$((fails + 1)); }
# The log reads as lines: a short headline first (the device limits that
# left configurations out follow it, one a line), no line of thousands.
log="$work/results/compile-only.log"
first=$(head -n 1 "$log" 2>/dev/null || true)
longest=$(awk '{ if (length($0) > n) n = length($0) } END { print n + 0 }' "$log" 2>/dev/null || echo 0)
[ "${#first}" -le 160 ] || { echo "FAIL: $log: its first line has ${#first} characters"; fails=$((fails + 1)); }
[ "$longest" -le 600 ] || { echo "FAIL: $log: a line of $longest characters"; fails=$((fails + 1)); }
[ "$fails" -eq 0 ] && echo "quickstart_test: all checks hold"
exit $((fails > 0))
