#!/usr/bin/env bash
# The CMake module as a user meets it: configures and builds example_project
# against this build tree and against a temporary install, checks the
# generated kernel and header, the registered tests, re-runs on changes, and
# the error messages of bad optimize_kernel() calls.
# Usage: consumer_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
SRC="$1"; BUILD="$2"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
export PATH="/usr/local/cuda/bin:$PATH"
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

cp -r "$SRC/templates/sgemm" "$T/spec"        # a copy we may touch
GEN="$T/ex/kernel_optimizer/sgemm"

CACHE_SUM="$(sha256sum "$SRC/example_project/sgemm.tuning.json")"

step "configure example_project against the build tree"
cmake -S "$SRC/example_project" -B "$T/ex" -G Ninja -DKernelOptimizer_DIR="$BUILD" \
      -DKOPT_EXAMPLE_SPEC="$T/spec/sgemm.json" -DCMAKE_BUILD_TYPE=Release >"$T/configure.log" 2>&1 \
  || { cat "$T/configure.log"; fail "configure"; }

step "cmake --build --target optimize_sgemm"
cmake --build "$T/ex" --target optimize_sgemm >"$T/tune.log" 2>&1 || { cat "$T/tune.log"; fail "optimize_sgemm"; }
cat "$T/tune.log" | grep -E "kopt generate|KernelOptimizer" || true
[ -f "$GEN/sgemm.cu" ] || fail "sgemm.cu was not generated"
[ -f "$GEN/sgemm_launch.h" ] || fail "sgemm_launch.h was not generated"
grep -q "kopt:entry" "$GEN/sgemm.cu" || fail "sgemm.cu lacks its kopt:entry line"
grep -q "launch_config(long long M, long long N, long long K)" "$GEN/sgemm_launch.h" || fail "launch_config signature"
if ! nvidia-smi >/dev/null 2>&1; then
  grep -q "from the tuning cache" "$T/tune.log" || fail "without a GPU the committed tuning cache should be used"
fi

step "the committed tuning cache is only read; its copy is in the build tree"
[ "$(sha256sum "$SRC/example_project/sgemm.tuning.json")" = "$CACHE_SUM" ] || fail "the build changed the committed cache"
[ -f "$GEN/sgemm.tuning.json" ] || fail "no build-tree copy of the tuning cache ($GEN/sgemm.tuning.json)"
[ -f "$GEN/sgemm.d" ] || fail "kopt generate wrote no depfile"
grep -q "$T/spec/naive.cu" "$GEN/sgemm.d" || { cat "$GEN/sgemm.d"; fail "the depfile lacks the initial kernel"; }

step "the generated kernel and header compile with nvcc"
nvcc -std=c++17 -arch=sm_90 -c "$GEN/sgemm.cu" -o "$T/sgemm.o" || fail "nvcc on sgemm.cu"

step "build the application"
cmake --build "$T/ex" >"$T/build.log" 2>&1 || { cat "$T/build.log"; fail "build"; }

step "tests are registered and report skipped without a GPU"
ctest --test-dir "$T/ex" -N | tee "$T/ctest-list.log"
grep -q "sgemm.correctness" "$T/ctest-list.log" || fail "sgemm.correctness not registered"
grep -q "sgemm.benchmark" "$T/ctest-list.log" || fail "sgemm.benchmark not registered"
ctest --test-dir "$T/ex" -L kernel_optimizer --output-on-failure | tee "$T/ctest.log" || true
if ! nvidia-smi >/dev/null 2>&1; then
  [ "$(grep -c "Skipped" "$T/ctest.log")" -ge 2 ] || fail "expected both kernel_optimizer tests to be skipped"
fi

step "ctest -j --resource-spec-file with two fake gpus: each test runs on the GPU CTest gives it"
cat >"$T/gpus.json" <<'JSON'
{"version": {"major": 1, "minor": 0}, "local": [{"gpus": [{"id": "0", "slots": 4}, {"id": "1", "slots": 4}]}]}
JSON
ctest --test-dir "$T/ex" -j2 -L kernel_optimizer --resource-spec-file "$T/gpus.json" -V >"$T/ctest-res.log" 2>&1 || true
for t in correctness:1 benchmark:4; do
  name="sgemm.${t%%:*}"; slots="${t#*:}"
  # ctest -V prefixes each output line with the test's number: find sgemm.<kind>'s.
  num="$(sed -n "s/^ *Start *\([0-9]*\): $name\$/\1/p" "$T/ctest-res.log" | head -1)"
  [ -n "$num" ] || { cat "$T/ctest-res.log"; fail "$name did not start"; }
  line="$(grep -E "^$num: kopt (evaluate|bench): CTest gave this test GPU [01] " "$T/ctest-res.log" | head -1)"
  [ -n "$line" ] || { cat "$T/ctest-res.log"; fail "$name was not given a GPU by CTest"; }
  [[ "$line" =~ GPU\ ([01])\ \(CTEST_RESOURCE_GROUP_0_GPUS=id:([01]),slots:$slots\):\ --device\ ([01]) ]] \
    || fail "$name: $line"
  [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] && [ "${BASH_REMATCH[2]}" = "${BASH_REMATCH[3]}" ] || fail "$name: $line"
  echo "  $name: ${line#*: }"
done
if ! nvidia-smi >/dev/null 2>&1; then
  [ "$(grep -c "Skipped" "$T/ctest-res.log")" -ge 2 ] || fail "expected both tests to be skipped under the resource spec"
fi

step "nothing changed: no re-tuning"
cmake --build "$T/ex" --target optimize_sgemm >"$T/again.log" 2>&1
grep -q "KernelOptimizer: generating" "$T/again.log" && fail "re-ran the tuning with nothing changed"

step "the spec changed: re-tuning"
sleep 1; touch "$T/spec/sgemm.json"
cmake --build "$T/ex" --target optimize_sgemm >"$T/touched.log" 2>&1
grep -q "KernelOptimizer: generating" "$T/touched.log" || fail "touching the spec did not re-run the tuning"

step "a header the initial kernel includes (known from the depfile only): re-tuning; another file: none"
echo '#include "extra.h"' >>"$T/spec/naive.cu"
echo "// nothing" >"$T/spec/extra.h"
cmake --build "$T/ex" --target optimize_sgemm >"$T/include.log" 2>&1 || { cat "$T/include.log"; fail "build after the include"; }
grep -q "$T/spec/extra.h" "$GEN/sgemm.d" || { cat "$GEN/sgemm.d"; fail "the depfile lacks extra.h"; }
sleep 1; touch "$T/spec/extra.h"
cmake --build "$T/ex" --target optimize_sgemm >"$T/header.log" 2>&1
grep -q "KernelOptimizer: generating" "$T/header.log" || fail "touching an included header did not re-run the tuning"
sleep 1; echo "notes" >"$T/spec/NOTES.txt"; touch "$T/spec/NOTES.txt"
cmake --build "$T/ex" --target optimize_sgemm >"$T/other.log" 2>&1
grep -q "KernelOptimizer: generating" "$T/other.log" && fail "a file the spec does not name re-ran the tuning"

step "the tool changed: re-tuning"
sleep 1; touch "$BUILD/tool/kopt"
cmake --build "$T/ex" --target optimize_sgemm >"$T/tool.log" 2>&1
grep -q "KernelOptimizer: generating" "$T/tool.log" || fail "a new kopt did not re-run the tuning"

step "a temporary install, then the same consumer"
cmake --install "$BUILD" --prefix "$T/inst" >"$T/install.log" 2>&1 || { cat "$T/install.log"; fail "install"; }
cmake -S "$SRC/example_project" -B "$T/ex2" -G Ninja \
      -DKernelOptimizer_DIR="$T/inst/lib/cmake/KernelOptimizer" >"$T/configure2.log" 2>&1 \
  || { cat "$T/configure2.log"; fail "configure against the install"; }
cmake --build "$T/ex2" --target optimize_sgemm >"$T/tune2.log" 2>&1 || { cat "$T/tune2.log"; fail "optimize_sgemm (install)"; }
[ -f "$T/ex2/kernel_optimizer/sgemm/sgemm.cu" ] || fail "sgemm.cu not generated (install)"

step "bad optimize_kernel() calls are errors that name the function and the fix"
expect_error() {  # NAME, CMAKE-CODE, EXPECTED-TEXT
  local d="$T/bad-$1"; mkdir -p "$d"
  cat >"$d/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.25)
project(bad LANGUAGES CXX)
find_package(KernelOptimizer REQUIRED)
add_executable(app main.cpp)
$2
CM
  echo "int main() { return 0; }" >"$d/main.cpp"
  if cmake -S "$d" -B "$d/b" -DKernelOptimizer_DIR="$BUILD" >"$d/log" 2>&1; then fail "$1: configure succeeded"; fi
  # CMake wraps long messages: compare with the line breaks folded away.
  tr -s ' \n' '  ' <"$d/log" >"$d/flat"
  grep -q "optimize_kernel()" "$d/flat" || { cat "$d/log"; fail "$1: message does not name optimize_kernel()"; }
  grep -q "$3" "$d/flat" || { cat "$d/log"; fail "$1: message lacks '$3'"; }
  echo "  $1: ok"
}
S="$T/spec/sgemm.json"
expect_error unknown_keyword "optimize_kernel(NAME k SPEC $S TARGETT app)" "unknown arguments"
expect_error missing_spec "optimize_kernel(NAME k TARGET app)" "SPEC is required"
expect_error no_value "optimize_kernel(NAME k SPEC $S BUDGET)" "needs a value"
expect_error bad_strategy "optimize_kernel(NAME k SPEC $S STRATEGY magic)" \
  "STRATEGY 'magic' of kernel k is rejected by kopt (exit 2): kopt: \\[kopt.cli.010\\] --strategy: expected one of"
expect_error missing_file "optimize_kernel(NAME k SPEC $T/nope.json)" "does not exist"
expect_error not_a_target "optimize_kernel(NAME k SPEC $S TARGET nosuchtarget)" "is not a target"
expect_error duplicate_name "optimize_kernel(NAME k SPEC $S)
optimize_kernel(NAME k SPEC $S)" "already used"
echo "{ not json" >"$T/corrupt.json"
expect_error corrupt_spec "optimize_kernel(NAME k SPEC $T/corrupt.json)" "not valid JSON"

step "a corrupt tuning cache is a build error naming the file"
echo "{ broken" >"$T/broken.tuning.json"
d="$T/badcache"; mkdir -p "$d"
cat >"$d/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.25)
project(badcache LANGUAGES CXX)
find_package(KernelOptimizer REQUIRED)
optimize_kernel(NAME k SPEC $S CACHE_FILE $T/broken.tuning.json)
CM
cmake -S "$d" -B "$d/b" -G Ninja -DKernelOptimizer_DIR="$BUILD" >/dev/null
if cmake --build "$d/b" --target optimize_k >"$d/log" 2>&1; then fail "a corrupt cache built"; fi
grep -q "broken.tuning.json" "$d/log" || { cat "$d/log"; fail "the cache error does not name the file"; }
echo "ALL CHECKS PASSED"
