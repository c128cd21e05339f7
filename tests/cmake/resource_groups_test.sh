#!/usr/bin/env bash
# CTest GPU resources of the tests optimize_kernel() registers, without a GPU
# or a built kopt: a tiny project with three kernels whose kopt::kopt is a
# stand-in that records what each test received (its arguments, the
# CTEST_RESOURCE_GROUP_* variables, when it started and ended), run by
# `ctest -j --resource-spec-file` with a hand-written spec of two "gpus".
# Checks: each correctness test holds one slot and each benchmark a whole GPU
# (all of its slots); every test is told to take its device from CTest
# (--device-from-ctest); nothing runs on a GPU while a benchmark does;
# benchmarks run at once on the two GPUs; without a spec file no resource
# variables are set and the tests still run.
# Usage: resource_groups_test.sh MODULE_FILE CHECKER   (cmake/KernelOptimizer.cmake,
#        tests/cmake/check_resource_spec.cmake)
set -euo pipefail
MODULE="$1"; CHECKER="$2"
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to read ctest's JSON"; exit 77; }
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

mkdir -p "$T/spec" "$T/log"
for f in template initial reference; do echo "// kopt:entry k_$f" >"$T/spec/$f.cu"; done
cat >"$T/spec/k.json" <<'JSON'
{"name": "k", "template": {"source": "template.cu", "entry": "k_template"},
 "initial": {"source": "initial.cu", "entry": "k_initial"},
 "reference": {"kind": "kernel", "source": "reference.cu", "entry": "k_reference"},
 "tuning": {"params": {"BS": [64, 128]}}}
JSON

# The stand-in kopt: one line per test in $T/log/<kernel>.<kind>.
cat >"$T/fake_kopt.sh" <<'SH'
#!/usr/bin/env bash
[ "$1" = generate ] && exit 0  # optimize_kernel()'s `kopt generate --check` when configuring
kind="$1"; kernel=""; prev=""
for a in "$@"; do [ "$prev" = "--kernel" ] && kernel="$(basename "$a" .cu)"; prev="$a"; done
start=$(date +%s%N)
if [ "$kind" = bench ]; then sleep 1.5; else sleep 0.4; fi
end=$(date +%s%N)
from_ctest=no
for a in "$@"; do [ "$a" = "--device-from-ctest" ] && from_ctest=yes; done
echo "count=${CTEST_RESOURCE_GROUP_COUNT-unset} group0=${CTEST_RESOURCE_GROUP_0-unset}" \
     "gpus=${CTEST_RESOURCE_GROUP_0_GPUS-unset} from_ctest=$from_ctest start=$start end=$end" \
     >"@LOG@/$kernel.$kind"
SH
sed -i "s|@LOG@|$T/log|" "$T/fake_kopt.sh"
chmod +x "$T/fake_kopt.sh"

mkdir -p "$T/proj"
cat >"$T/proj/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.25)
project(resources LANGUAGES NONE)
enable_testing()
add_executable(kopt::kopt IMPORTED)
set_target_properties(kopt::kopt PROPERTIES IMPORTED_LOCATION "$T/fake_kopt.sh")
include("$MODULE")
optimize_kernel(NAME k1 SPEC "$T/spec/k.json")
optimize_kernel(NAME k2 SPEC "$T/spec/k.json")
optimize_kernel(NAME k3 SPEC "$T/spec/k.json")
CM
step "configure (KOPT_CTEST_GPU_SLOTS=4, the default)"
cmake -S "$T/proj" -B "$T/b" >"$T/configure.log" 2>&1 || { cat "$T/configure.log"; fail "configure"; }

step "the tests' RESOURCE_GROUPS"
ctest --test-dir "$T/b" --show-only=json-v1 >"$T/tests.json"
for k in k1 k2 k3; do
  for want in "$k.correctness:gpus:1" "$k.benchmark:gpus:4"; do
    name="${want%%:*}"; slots="${want#*:gpus:}"
    # {"name": "...", ..., "properties": [..., {"name": "RESOURCE_GROUPS", "value": [{"requirements": [{".type": "gpus", "slots": N}]}]}]}
    python3 - "$T/tests.json" "$name" "$slots" <<'PY' || fail "$name: RESOURCE_GROUPS is not gpus:$slots"
import json, sys
doc = json.load(open(sys.argv[1]))
t = next(t for t in doc["tests"] if t["name"] == sys.argv[2])
groups = [p["value"] for p in t.get("properties", []) if p["name"] == "RESOURCE_GROUPS"]
assert groups, "no RESOURCE_GROUPS"
reqs = [r for g in groups[0] for r in g["requirements"]]
assert reqs == [{".type": "gpus", "slots": int(sys.argv[3])}], reqs
assert not any(p["name"] == "RUN_SERIAL" and p["value"] for p in t.get("properties", [])), "RUN_SERIAL"
PY
  done
done
echo "  correctness gpus:1, benchmark gpus:4, no RUN_SERIAL: ok"

step "a hand-written resource spec of two gpus, 4 slots each"
cat >"$T/gpus.json" <<'JSON'
{
  "version": {"major": 1, "minor": 0},
  "local": [
    {"gpus": [{"id": "0", "slots": 4}, {"id": "1", "slots": 4}]}
  ]
}
JSON
cmake -DFILE="$T/gpus.json" -DEXPECT_GPUS=2 -DEXPECT_SLOTS=4 -P "$CHECKER"

step "ctest -j8 --resource-spec-file"
ctest --test-dir "$T/b" -j8 --resource-spec-file "$T/gpus.json" --output-on-failure >"$T/ctest.log" 2>&1 \
  || { cat "$T/ctest.log"; fail "ctest with the resource spec"; }
grep -q "100% tests passed" "$T/ctest.log" || { cat "$T/ctest.log"; fail "not every test ran"; }
for k in k1 k2 k3; do
  for kind in evaluate bench; do
    f="$T/log/$k.$kind"
    [ -f "$f" ] || fail "$k $kind did not run"
    line="$(cat "$f")"
    echo "  $k.$kind: $line" | sed 's/ start=.*//'
    case "$line" in *"from_ctest=yes"*) ;; *) fail "$k $kind: no --device-from-ctest";; esac
    case "$line" in *"count=1 group0=gpus "*) ;; *) fail "$k $kind: CTEST_RESOURCE_GROUP_COUNT/_0 not 1/gpus";; esac
    if [ "$kind" = bench ]; then
      [[ "$line" =~ gpus=id:[01],slots:4\  ]] || fail "$k benchmark did not get a whole GPU: $line"
    else
      [[ "$line" =~ gpus=id:[01],slots:1\  ]] || fail "$k correctness did not get one slot: $line"
    fi
  done
done

step "nothing runs on a GPU while a benchmark does; benchmarks share no GPU"
python3 - "$T/log" <<'PY' || fail "overlap on one GPU"
import os, re, sys
runs = []
for f in os.listdir(sys.argv[1]):
    text = open(os.path.join(sys.argv[1], f)).read()
    gpu = re.search(r"gpus=id:(\d+)", text).group(1)
    start, end = (int(re.search(k + r"=(\d+)", text).group(1)) for k in ("start", "end"))
    runs.append((f, gpu, start, end))
for b in (r for r in runs if r[0].endswith(".bench")):
    for o in runs:
        if o is not b and o[1] == b[1] and o[2] < b[3] and b[2] < o[3]:
            sys.exit(f"{o[0]} ran on GPU {o[1]} during {b[0]}")
print("  no overlap with a benchmark on its GPU: ok")
PY

step "benchmarks run at once on the two GPUs (ctest -j2 -L benchmark)"
rm -f "$T/log"/*
ctest --test-dir "$T/b" -j2 -L benchmark --resource-spec-file "$T/gpus.json" >"$T/bench.log" 2>&1 \
  || { cat "$T/bench.log"; fail "benchmarks"; }
python3 - "$T/log" <<'PY' || fail "no two benchmarks ran at once on different GPUs"
import os, re, sys
runs = []
for f in os.listdir(sys.argv[1]):
    text = open(os.path.join(sys.argv[1], f)).read()
    gpu = re.search(r"gpus=id:(\d+)", text).group(1)
    start, end = (int(re.search(k + r"=(\d+)", text).group(1)) for k in ("start", "end"))
    runs.append((f, gpu, start, end))
assert len(runs) == 3, runs
pairs = [(a, b) for a in runs for b in runs if a[0] < b[0] and a[2] < b[3] and b[2] < a[3]]
assert pairs, "no overlap"
assert all(a[1] != b[1] for a, b in pairs), pairs
print("  %s and %s ran at once on GPUs %s and %s: ok" % (pairs[0][0][0], pairs[0][1][0], pairs[0][0][1], pairs[0][1][1]))
PY

step "a GPU with fewer slots than a benchmark takes: ctest says so"
cat >"$T/small.json" <<'JSON'
{"version": {"major": 1, "minor": 0}, "local": [{"gpus": [{"id": "0", "slots": 2}]}]}
JSON
if ctest --test-dir "$T/b" -R 'k1\.benchmark' --resource-spec-file "$T/small.json" >"$T/small.log" 2>&1; then
  cat "$T/small.log"; fail "a benchmark ran on a GPU with 2 slots"
fi
grep -qi "insufficient resources" "$T/small.log" || { cat "$T/small.log"; fail "no 'Insufficient resources'"; }
echo "  Insufficient resources: ok (write the spec with kopt devices --ctest-slots \$KOPT_CTEST_GPU_SLOTS)"

step "without a resource spec file: no resource variables, the tests still run"
rm -f "$T/log"/*
ctest --test-dir "$T/b" -j8 >"$T/plain.log" 2>&1 || { cat "$T/plain.log"; fail "plain ctest"; }
for f in "$T/log"/*; do
  grep -q "count=unset group0=unset gpus=unset from_ctest=yes" "$f" || fail "$(basename "$f"): $(cat "$f")"
done
echo "  6 tests, no CTEST_RESOURCE_GROUP_*: ok"

step "KOPT_CTEST_GPU_SLOTS sets what a benchmark takes"
cmake -S "$T/proj" -B "$T/b8" -DKOPT_CTEST_GPU_SLOTS=8 >/dev/null
ctest --test-dir "$T/b8" --show-only=json-v1 | python3 -c '
import json, sys
t = next(t for t in json.load(sys.stdin)["tests"] if t["name"] == "k1.benchmark")
g = [p["value"] for p in t["properties"] if p["name"] == "RESOURCE_GROUPS"][0]
assert g[0]["requirements"] == [{".type": "gpus", "slots": 8}], g' || fail "KOPT_CTEST_GPU_SLOTS=8"
if cmake -S "$T/proj" -B "$T/b0" -DKOPT_CTEST_GPU_SLOTS=0 >"$T/zero.log" 2>&1; then fail "KOPT_CTEST_GPU_SLOTS=0 configured"; fi
tr -s ' \n' '  ' <"$T/zero.log" | grep -q "KOPT_CTEST_GPU_SLOTS '0' must be a whole number of 1 or more" \
  || { cat "$T/zero.log"; fail "KOPT_CTEST_GPU_SLOTS=0 message"; }
echo "  gpus:8, and 0 is an error: ok"
echo "ALL CHECKS PASSED"
