#!/usr/bin/env bash
# Prints the search-replay tables (what docs/performance.md and docs/search.md
# quote): `kopt replay --strategy all` on every recorded space in
# tests/data/spaces/ and on the synthetic SGEMM space of the unit tests
# (written by kopt_synthetic_spaces). No GPU needed.
#
#   scripts/search_replay.sh [BUILD_DIR] [kopt replay options...]   (default: build)
#
# SEEDS=N changes the number of seeds (default 16, as in CI). The JSON report
# (replay.json) and the synthetic space's cache are left in $OUT (default: a
# temporary folder).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
[ $# -gt 0 ] && shift
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
cmake --build "$build" --target kopt kopt_synthetic_spaces -j "${JOBS:-2}" >/dev/null
kopt="$build/tool/kopt"
synthetic="$build/tests/kopt_synthetic_spaces"
[ -x "$kopt" ] && [ -x "$synthetic" ] || { echo "search_replay: no kopt or kopt_synthetic_spaces under $build" >&2; exit 2; }
"$synthetic" "$out" sgemm-synthetic 2>/dev/null
"$kopt" replay --strategy all --seeds "${SEEDS:-16}" --json "$out/replay.json" "$@" \
  "$out/sgemm-synthetic.json" "$root"/tests/data/spaces/*.json
echo "(JSON report in $out/replay.json)"
