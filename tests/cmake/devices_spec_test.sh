#!/usr/bin/env bash
# `kopt devices --ctest-resource-spec FILE` on this machine: the file it
# writes passes tests/cmake/check_resource_spec.cmake with one "gpus" entry
# per device, and ctest accepts it. Without a GPU kopt exits 77 and writes
# nothing (shown as skipped).
# Usage: devices_spec_test.sh KOPT CMAKE CHECKER
set -euo pipefail
KOPT="$1"; CMAKE="$2"; CHECKER="$3"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
code=0
"$KOPT" devices --ctest-resource-spec "$T/gpus.json" >"$T/devices.json" 2>"$T/err" || code=$?
if [ "$code" -eq 77 ]; then
  cat "$T/err"
  [ ! -e "$T/gpus.json" ] || { echo "FAIL: a resource spec was written without a GPU" >&2; exit 1; }
  echo "SKIP: no CUDA device here; no resource spec file written (as it should be)"
  exit 77
fi
[ "$code" -eq 0 ] || { cat "$T/err"; echo "FAIL: kopt devices exited $code" >&2; exit 1; }
n="$(grep -c '"ordinal"' "$T/devices.json")"
"$CMAKE" -DFILE="$T/gpus.json" -DEXPECT_GPUS="$n" -DEXPECT_SLOTS=4 -P "$CHECKER"
# ctest reads it: a project with one test that needs a GPU slot.
mkdir -p "$T/p"
cat >"$T/p/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.25)
project(p LANGUAGES NONE)
enable_testing()
add_test(NAME gpu COMMAND sh -c "echo GPUS=$CTEST_RESOURCE_GROUP_0_GPUS")
set_tests_properties(gpu PROPERTIES RESOURCE_GROUPS "gpus:4")
CM
"$CMAKE" -S "$T/p" -B "$T/p/b" >/dev/null
"$(dirname "$CMAKE")/ctest" --test-dir "$T/p/b" --resource-spec-file "$T/gpus.json" -V | grep "GPUS=id:0,slots:4"
echo "PASSED"
