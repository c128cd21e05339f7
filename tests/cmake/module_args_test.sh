#!/usr/bin/env bash
# optimize_kernel()'s configure-time checks, fast and without a GPU or a built
# kopt: each case configures a tiny project (no languages) whose kopt::kopt is
# a stand-in imported target, and checks that configuring fails with the
# module's own message naming the argument (or, for the good cases, succeeds).
# Usage: module_args_test.sh MODULE_FILE   (cmake/KernelOptimizer.cmake)
set -euo pipefail
MODULE="$1"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# A spec naming its three kernel files, all present.
mkdir -p "$T/spec" "$T/a_folder"
for f in template initial reference; do echo "// kopt:entry k_$f" >"$T/spec/$f.cu"; done
spec() {  # FILE, TEMPLATE-SOURCE-JSON, INITIAL-SOURCE-JSON, REFERENCE-SOURCE-JSON
  cat >"$1" <<JSON
{"name": "k", "template": {"source": $2, "entry": "k_template"},
 "initial": {"source": $3, "entry": "k_initial"},
 "reference": {"kind": "kernel", "source": $4, "entry": "k_reference"},
 "tuning": {"params": {"BS": [64, 128]}}}
JSON
}
spec "$T/spec/good.json" '"template.cu"' '"initial.cu"' '"reference.cu"'
spec "$T/spec/no_initial.json" '"template.cu"' '"gone/initial.cu"' '"reference.cu"'
spec "$T/spec/no_template.json" '"nope.cu"' '"initial.cu"' '"reference.cu"'
spec "$T/spec/no_reference.json" '"template.cu"' '"initial.cu"' '"../reference.cu"'
spec "$T/spec/number_source.json" '"template.cu"' '5' '"reference.cu"'
spec "$T/spec/dir_source.json" '"template.cu"' '"../a_folder"' '"reference.cu"'
echo '[1, 2]' >"$T/spec/array.json"
echo "__global__ void k() {}" >"$T/no_entry.cu"
echo "// kopt:entry other" >"$T/other.cu"
S="$T/spec/good.json"

n=0
project() {  # DIR, CMAKE-CODE
  mkdir -p "$1"
  cat >"$1/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.25)
project(args LANGUAGES NONE)
add_executable(kopt::kopt IMPORTED)  # a stand-in: only the configure step runs
set_target_properties(kopt::kopt PROPERTIES IMPORTED_LOCATION /bin/true)
include("$MODULE")
$2
CM
}
# NAME, CMAKE-CODE, EXPECTED-TEXT [, extra cmake -D arguments...]
expect_error() {
  local name="$1" code="$2" want="$3"; shift 3
  local d="$T/case-$name"
  project "$d" "$code"
  if cmake -S "$d" -B "$d/b" "$@" >"$d/log" 2>&1; then cat "$d/log"; fail "$name: configure succeeded"; fi
  # CMake wraps long messages: compare with the line breaks folded away.
  tr -s ' \n' '  ' <"$d/log" >"$d/flat"
  grep -qF "optimize_kernel()" "$d/flat" || { cat "$d/log"; fail "$name: the message does not name optimize_kernel()"; }
  grep -qF -- "$want" "$d/flat" || { cat "$d/log"; fail "$name: the message lacks '$want'"; }
  grep -qF "CMake Error at" "$d/flat" || { cat "$d/log"; fail "$name: not a configure error"; }
  n=$((n + 1))
  echo "  $name: ok"
}
expect_ok() {  # NAME, CMAKE-CODE
  local d="$T/case-$1"
  project "$d" "$2"
  cmake -S "$d" -B "$d/b" >"$d/log" 2>&1 || { cat "$d/log"; fail "$1: configure failed"; }
  n=$((n + 1))
  echo "  $1: ok"
}

echo "== BUDGET"
expect_error budget_not_a_number "optimize_kernel(NAME k SPEC $S BUDGET evals=abc)" \
  "BUDGET item 'evals=abc': evals must be a whole number of 1 or more"
expect_error budget_cmake_list "optimize_kernel(NAME k SPEC $S BUDGET \"evals=10;minutes=2\")" \
  "BUDGET 'evals=10;minutes=2' contains ';'"
expect_error budget_negative "optimize_kernel(NAME k SPEC $S BUDGET evals=-5)" "BUDGET item 'evals=-5'"
expect_error budget_zero "optimize_kernel(NAME k SPEC $S BUDGET evals=0)" "whole number of 1 or more"
expect_error budget_fraction "optimize_kernel(NAME k SPEC $S BUDGET evals=2.5)" "BUDGET item 'evals=2.5'"
expect_error budget_minutes_nan "optimize_kernel(NAME k SPEC $S BUDGET minutes=nan)" \
  "BUDGET item 'minutes=nan': minutes must be a number greater than 0"
expect_error budget_minutes_negative "optimize_kernel(NAME k SPEC $S BUDGET evals=5,minutes=-1)" \
  "BUDGET item 'minutes=-1'"
expect_error budget_minutes_zero "optimize_kernel(NAME k SPEC $S BUDGET minutes=0.0)" "greater than 0"
expect_error budget_patience "optimize_kernel(NAME k SPEC $S BUDGET evals=5,patience=x)" \
  "BUDGET item 'patience=x': patience must be a whole number"
expect_error budget_unknown_key "optimize_kernel(NAME k SPEC $S BUDGET iterations=5)" \
  "BUDGET item 'iterations=5': unknown key 'iterations' (known: evals, minutes, patience)"
expect_error budget_twice "optimize_kernel(NAME k SPEC $S BUDGET evals=5,evals=6)" "gives evals twice"
expect_error budget_empty_item "optimize_kernel(NAME k SPEC $S BUDGET evals=5,)" "has an empty item"
expect_error budget_blank "optimize_kernel(NAME k SPEC $S BUDGET \"evals=5, minutes=2\")" "contains blanks"
expect_error budget_word "optimize_kernel(NAME k SPEC $S BUDGET lots)" "BUDGET item 'lots' is not KEY=VALUE"
expect_error budget_empty "optimize_kernel(NAME k SPEC $S BUDGET \"\")" "the keyword BUDGET has an empty value"
expect_error default_budget "optimize_kernel(NAME k SPEC $S)" "KOPT_DEFAULT_BUDGET item 'evals=abc'" \
  -DKOPT_DEFAULT_BUDGET=evals=abc

echo "== files"
expect_error spec_missing "optimize_kernel(NAME k SPEC $T/nope.json)" "SPEC file '$T/nope.json' does not exist"
expect_error spec_relative_missing "optimize_kernel(NAME k SPEC nope.json)" "SPEC file '$T/case-spec_relative_missing/nope.json' does not exist"
expect_error spec_directory "optimize_kernel(NAME k SPEC $T/a_folder)" "SPEC file '$T/a_folder' is a directory"
expect_error spec_not_object "optimize_kernel(NAME k SPEC $T/spec/array.json)" "its top level is ARRAY, not an object"
expect_error spec_initial_missing "optimize_kernel(NAME k SPEC $T/spec/no_initial.json)" \
  "initial.source 'gone/initial.cu' does not exist ($T/spec/gone/initial.cu)"
expect_error spec_template_missing "optimize_kernel(NAME k SPEC $T/spec/no_template.json)" \
  "SPEC '$T/spec/no_template.json': template.source 'nope.cu' does not exist"
expect_error spec_reference_missing "optimize_kernel(NAME k SPEC $T/spec/no_reference.json)" \
  "reference.source '../reference.cu' does not exist ($T/reference.cu)"
expect_error spec_source_not_string "optimize_kernel(NAME k SPEC $T/spec/number_source.json)" \
  "initial.source must be a string"
expect_error spec_source_directory "optimize_kernel(NAME k SPEC $T/spec/dir_source.json)" \
  "initial.source '../a_folder' is a directory"
expect_error override_missing "optimize_kernel(NAME k SPEC $S TEMPLATE $T/none.cu)" "TEMPLATE file '$T/none.cu' does not exist"
expect_error override_directory "optimize_kernel(NAME k SPEC $S REFERENCE $T/a_folder)" "REFERENCE file '$T/a_folder' is a directory"
expect_error override_no_entry "optimize_kernel(NAME k SPEC $S INITIAL_KERNEL $T/no_entry.cu)" \
  "INITIAL_KERNEL file '$T/no_entry.cu' has no '// kopt:entry NAME' line"
expect_error cache_directory "optimize_kernel(NAME k SPEC $S CACHE_FILE $T/a_folder)" "CACHE_FILE '$T/a_folder' is a directory"

echo "== CASES_FROM"
echo '{"kopt_capture": 1, "kernel": "k", "sizes": ["N"], "launches": [{"sizes": {"N": 5}, "count": 2}]}' >"$T/capture.json"
echo '{"kopt_capture": 1,' >"$T/broken_capture.json"
echo '"just a string"' >"$T/string_capture.json"
expect_error cases_from_directory "optimize_kernel(NAME k SPEC $S CASES_FROM $T/a_folder)" \
  "CASES_FROM '$T/a_folder' is a directory"
expect_error cases_from_not_json "optimize_kernel(NAME k SPEC $S CASES_FROM $T/broken_capture.json)" \
  "CASES_FROM '$T/broken_capture.json' is not valid JSON"
expect_error cases_from_scalar "optimize_kernel(NAME k SPEC $S CASES_FROM $T/string_capture.json)" \
  "its top level is STRING, not an object or an array"
expect_error cases_from_empty "optimize_kernel(NAME k SPEC $S CASES_FROM \"\")" "the keyword CASES_FROM has an empty value"
expect_ok cases_from_present "optimize_kernel(NAME k SPEC $S CASES_FROM $T/capture.json)"
# A capture that does not exist yet configures, and says what happens.
expect_ok cases_from_missing "optimize_kernel(NAME k SPEC $S CASES_FROM not_yet.json)"
tr -s ' \n' '  ' <"$T/case-cases_from_missing/log" | grep -qF \
  "CASES_FROM '$T/case-cases_from_missing/not_yet.json' does not exist yet: tuning on the spec's cases" \
  || { cat "$T/case-cases_from_missing/log"; fail "cases_from_missing: no message"; }
echo "  cases_from_missing: says so: ok"

echo "== good calls configure"
expect_ok good_budgets "optimize_kernel(NAME a SPEC $S BUDGET evals=10,minutes=2)
optimize_kernel(NAME b SPEC $S BUDGET 200)
optimize_kernel(NAME c SPEC $S BUDGET 5m)
optimize_kernel(NAME d SPEC $S BUDGET evaluations=3,min=.5,patience=2)
optimize_kernel(NAME e SPEC $S)"
# The override replaces the spec's missing file.
expect_ok override_replaces_missing "optimize_kernel(NAME k SPEC $T/spec/no_initial.json INITIAL_KERNEL $T/other.cu)"
echo "== STRATEGY, UPDATE_CACHE"
expect_error search_strategy_with_agent "optimize_kernel(NAME k SPEC $S STRATEGY agent SEARCH_STRATEGY random)" \
  "SEARCH_STRATEGY applies to STRATEGY search only"
expect_error update_cache_without_file "optimize_kernel(NAME k SPEC $S UPDATE_CACHE)" "UPDATE_CACHE needs CACHE_FILE"
expect_error bad_gpu_slots "optimize_kernel(NAME k SPEC $S)" "KOPT_CTEST_GPU_SLOTS 'x' must be a whole number" \
  -DKOPT_CTEST_GPU_SLOTS=x

# The build commands, as Ninja gets them (a configure with the Ninja generator).
expect_ninja() {  # NAME, CMAKE-CODE; then checks on $T/case-NAME/b/build.ninja
  local d="$T/case-$1"
  project "$d" "$2"
  OPENAI_API_KEY=sk-kopt-test-secret-key OPENAI_BASE_URL=http://llm.invalid:9/v1 \
    cmake -S "$d" -B "$d/b" -G Ninja >"$d/log" 2>&1 || { cat "$d/log"; fail "$1: configure failed"; }
  NINJA="$d/b/build.ninja"
  n=$((n + 1))
}
has() { grep -qF -- "$2" "$NINJA" || fail "$1: build.ninja lacks '$2'"; }
lacks() { if grep -qF -- "$2" "$NINJA"; then fail "$1: build.ninja has '$2'"; fi; }
if command -v ninja >/dev/null; then
  expect_ninja agent "optimize_kernel(NAME a SPEC $S STRATEGY agent)
optimize_kernel(NAME h SPEC $S STRATEGY hybrid)
optimize_kernel(NAME s SPEC $S SEARCH_STRATEGY random)"
  has agent "generate --spec $S --name a"
  grep -E -- "--name a .*--strategy agent" "$NINJA" >/dev/null || fail "agent: no --strategy agent"
  grep -E -- "--name h .*--strategy hybrid" "$NINJA" >/dev/null || fail "hybrid: no --strategy hybrid"
  grep -E -- "--name s .*--strategy random" "$NINJA" >/dev/null || fail "search: no --strategy random"
  # The LLM settings stay in the build's environment: nothing of them in the build tree.
  if grep -rqF -e sk-kopt-test-secret-key -e llm.invalid "$T/case-agent/b"; then
    fail "agent: the LLM settings were written into the build tree"
  fi
  echo "  agent, hybrid: --strategy passed, no LLM settings in the build tree: ok"
  # One tuning at a time under Ninja: USES_TERMINAL is the console pool.
  [ "$(grep -B1 -A8 'COMMAND = cd .* generate --spec' "$NINJA" | grep -c 'pool = console')" -ge 3 ] \
    || fail "agent: the kopt generate commands are not in Ninja's console pool"
  echo "  the tuning commands share Ninja's console pool: ok"
  # The depfile is the command's.
  has agent "--depfile $T/case-agent/b/kernel_optimizer/a/a.d"
  grep -E -- "--name a .*--depfile [^ ]*/a\\.d .*&& .*cmake_transform_depfile .*/a\\.d" "$NINJA" >/dev/null \
    || fail "agent: the custom command has no DEPFILE"
  echo "  DEPFILE kernel_optimizer/a/a.d: ok"

  touch "$T/cache.json"
  expect_ninja cache "enable_testing()
optimize_kernel(NAME ro SPEC $S CACHE_FILE $T/cache.json)
optimize_kernel(NAME rw SPEC $S CACHE_FILE $T/cache.json UPDATE_CACHE)"
  grep -E -- "--name ro .*--cache-file $T/cache.json .*--cache-out $T/case-cache/b/kernel_optimizer/ro/ro.tuning.json" \
    "$NINJA" >/dev/null || fail "cache: without UPDATE_CACHE the updated cache must go to the build tree"
  grep -E -- "--name rw .*--cache-out" "$NINJA" >/dev/null && fail "cache: UPDATE_CACHE still has --cache-out"
  grep -E -- "--name rw .*--cache-file $T/cache.json" "$NINJA" >/dev/null || fail "cache: UPDATE_CACHE lacks --cache-file"
  # The benchmark test reads the cache the build wrote.
  grep -F -- "\"--cache-file\" \"$T/case-cache/b/kernel_optimizer/ro/ro.tuning.json\"" "$T/case-cache/b/CTestTestfile.cmake" \
    >/dev/null || fail "cache: ro.benchmark does not read the build tree's cache"
  grep -F -- "\"--cache-file\" \"$T/cache.json\"" "$T/case-cache/b/CTestTestfile.cmake" >/dev/null \
    || fail "cache: rw.benchmark does not read CACHE_FILE"
  OPENAI_API_KEY= cmake -S "$T/case-cache" -B "$T/case-cache/b2" -G Ninja -DKOPT_UPDATE_CACHE=ON >/dev/null
  grep -E -- "--name ro .*--cache-out" "$T/case-cache/b2/build.ninja" >/dev/null && fail "cache: KOPT_UPDATE_CACHE=ON ignored"
  echo "  UPDATE_CACHE / KOPT_UPDATE_CACHE: ok"

  expect_ninja cases "enable_testing()
optimize_kernel(NAME c SPEC $S CASES_FROM $T/capture.json)"
  grep -E -- "--name c .*--cases-from $T/capture.json --cases-out $T/case-cases/b/kernel_optimizer/c/c.cases.json" \
    "$NINJA" >/dev/null || fail "cases: kopt generate lacks --cases-from/--cases-out"
  has cases "kernel_optimizer/c/c.cases_from.stamp"
  grep -F -- "\"--input-cases\" \"$T/case-cases/b/kernel_optimizer/c/c.cases.json\"" "$T/case-cases/b/CTestTestfile.cmake" \
    >/dev/null || fail "cases: the tests do not run on the generated cases"
  [ "$(grep -c -- '--input-cases' "$T/case-cases/b/CTestTestfile.cmake")" -eq 2 ] || fail "cases: not both tests"
  echo "  CASES_FROM: --cases-from, --cases-out, the stamp, the tests' --input-cases: ok"
else
  echo "  (ninja not found: the build-command checks are skipped)"
fi
echo "ALL $n CASES PASSED"
