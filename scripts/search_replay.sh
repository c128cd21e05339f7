#!/usr/bin/env bash
# Prints the search-replay tables (what docs/performance.md quotes):
# every strategy replayed against the synthetic SGEMM sweep and against each
# recorded sweep in tests/data/search/ (see tests/unit/test_search_replay.cpp).
#
#   scripts/search_replay.sh [BUILD_DIR]      (default: build)
#
# SEEDS=N changes the number of seeds (default 16, as in CI). The JSON
# reports (search_replay_<record>.json) and the synthetic record
# (synthetic_sweep.json) are left in $OUT (default: a temporary folder).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
cmake --build "$build" --target kopt_unit_tests -j "${JOBS:-2}" >/dev/null
bin=$(find "$build" -name kopt_unit_tests -type f -perm -u+x | head -n 1)
[ -n "$bin" ] || { echo "search_replay: no kopt_unit_tests under $build" >&2; exit 2; }
KOPT_REPLAY_OUT_DIR=$out KOPT_REPLAY_SEEDS=${SEEDS:-16} "$bin" \
  --gtest_filter='SearchReplayTest.SyntheticSgemmSweep:SearchReplayTest.RecordedSweeps' >"$out/log.txt" 2>&1 ||
  { cat "$out/log.txt" >&2; exit 1; }
# The tables: from each "Replay of" line to the end of its table.
awk '/^Replay of/ {on = 1; seen = 0}
     on && seen && !/^\|/ {on = 0; print ""}
     on {print; if (/^\|/) seen = 1}' \
  "$out/log.txt"
echo "(JSON reports in $out)"
