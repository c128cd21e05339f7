#!/usr/bin/env bash
# CTest scripts.record_spaces: scripts/record_spaces.sh over the fake worker (no GPU):
# a first call records 6 configurations of the transpose template, a second resumes
# the same run to 12, each time writing a T4 record of distinct configurations.
#
#   check_record_spaces.sh SOURCE_DIR KOPT FAKE_WORKER
set -uo pipefail
src=$1 kopt=$2 fake=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
record() {
  KOPT_RECORD_ARGS="--worker-command $fake" bash "$src/scripts/record_spaces.sh" --kopt "$kopt" \
    --work "$tmp/work" --out "$tmp/out" --cache-dir "$tmp/cache" --target "$1" transpose
}
count() {
  python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results']; \
print(len(r), len({json.dumps(x['configuration'], sort_keys=True) for x in r}))" "$tmp/out/transpose.t4.json"
}
out=$(record 6) || fail "first call: $out"
echo "$out"
[[ "$out" == *"a new run in"* && "$out" == *"transpose: 6 of 6 configurations recorded (62 valid), 6 passed: done"* ]] ||
  fail "first call's report"
[ "$(count)" = "6 6" ] || fail "first record: $(count)"
out=$(record 12) || fail "second call: $out"
echo "$out"
[[ "$out" == *"resuming $tmp/work/transpose/run-001"* && "$out" == *"12 of 12 configurations recorded"* ]] ||
  fail "second call's report"
[ "$(count)" = "12 12" ] || fail "second record: $(count)"
[ -z "$(cd "$src" && git status --porcelain templates 2>/dev/null)" ] || fail "templates/ changed"
echo ok
