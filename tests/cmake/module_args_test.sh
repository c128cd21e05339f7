#!/usr/bin/env bash
# optimize_kernel()'s configure-time checks, fast and without a GPU: each case
# configures a tiny project (no languages) whose kopt::kopt is an imported
# target for the built kopt, as find_package() makes it, and checks that
# configuring fails with a message naming optimize_kernel() and the argument
# (or, for the good cases, succeeds). The module checks the call's shape
# itself and asks kopt about the rest (`kopt generate ... --check`): budgets,
# strategies and specs get kopt's own messages, and every strategy kopt knows
# is accepted. Last, the same bad calls in a project that builds kopt itself
# (as add_subdirectory/FetchContent do): they configure, and the build stops
# with kopt's message.
# Usage: module_args_test.sh MODULE_FILE KOPT   (cmake/KernelOptimizer.cmake, the built kopt)
set -euo pipefail
MODULE="$1"; KOPT="$2"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# A spec naming its three kernel files, all present.
mkdir -p "$T/spec" "$T/a_folder"
for f in template initial reference; do
  printf '// kopt:entry k_%s\n// kopt:grid ceil_div(N, 64), 1, 1\n// kopt:block 64, 1, 1\n' "$f" >"$T/spec/$f.cu"
  echo "__global__ void k_$f(float* x, int N) {}" >>"$T/spec/$f.cu"
done
spec() {  # FILE, TEMPLATE-SOURCE-JSON, INITIAL-SOURCE-JSON, REFERENCE-SOURCE-JSON [, TUNING-JSON]
  local tuning='{"params": {"BS": [64, 128]}}'
  [ $# -ge 5 ] && tuning="$5"
  cat >"$1" <<JSON
{"name": "k",
 "signature": [{"name": "x", "type": "float", "role": "output", "count": "N"}, {"name": "N", "type": "int32", "value": "N"}],
 "launch": {"grid": ["ceil_div(N, 64)", 1, 1], "block": [64, 1, 1]},
 "template": {"source": $2, "entry": "k_template"},
 "initial": {"source": $3, "entry": "k_initial"},
 "reference": {"kind": "kernel", "source": $4, "entry": "k_reference"},
 "cases": [{"name": "n1", "role": "correctness", "sizes": {"N": 1}}, {"name": "n17", "role": "correctness", "sizes": {"N": 17}},
           {"name": "n4k", "role": "performance", "sizes": {"N": 4096}}],
 "tuning": $tuning}
JSON
}
spec "$T/spec/good.json" '"template.cu"' '"initial.cu"' '"reference.cu"'
spec "$T/spec/no_initial.json" '"template.cu"' '"gone/initial.cu"' '"reference.cu"'
spec "$T/spec/no_template.json" '"nope.cu"' '"initial.cu"' '"reference.cu"'
spec "$T/spec/no_reference.json" '"template.cu"' '"initial.cu"' '"../reference.cu"'
spec "$T/spec/number_source.json" '"template.cu"' '5' '"reference.cu"'
spec "$T/spec/dir_source.json" '"template.cu"' '"../a_folder"' '"reference.cu"'
spec "$T/spec/no_params.json" '"template.cu"' '"initial.cu"' '"reference.cu"' '{}'
echo '[1, 2]' >"$T/spec/array.json"
echo "{ not json" >"$T/spec/corrupt.json"
echo "__global__ void k() {}" >"$T/no_entry.cu"
echo "// kopt:entry other" >"$T/other.cu"
S="$T/spec/good.json"

n=0
project() {  # DIR, CMAKE-CODE
  mkdir -p "$1"
  cat >"$1/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.25)
project(args LANGUAGES NONE)
add_executable(kopt::kopt IMPORTED)  # as find_package() makes it: only the configure step runs
set_target_properties(kopt::kopt PROPERTIES IMPORTED_LOCATION "$KOPT")
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

echo "== BUDGET: kopt's grammar and messages"
expect_error budget_not_a_number "optimize_kernel(NAME k SPEC $S BUDGET evals=abc)" \
  "BUDGET 'evals=abc' of kernel k is rejected by kopt (exit 2): kopt: [kopt.cli.005] --budget: evals=abc: evals must be a whole number from 1"
expect_error budget_cmake_list "optimize_kernel(NAME k SPEC $S BUDGET \"evals=10;minutes=2\")" \
  "BUDGET 'evals=10;minutes=2' contains ';'"
expect_error budget_negative "optimize_kernel(NAME k SPEC $S BUDGET evals=-5)" "--budget: evals=-5: evals must be a whole number"
expect_error budget_zero "optimize_kernel(NAME k SPEC $S BUDGET evals=0)" "--budget: evals=0: evals must be a whole number from 1"
expect_error budget_fraction "optimize_kernel(NAME k SPEC $S BUDGET evals=2.5)" "--budget: evals=2.5: evals must be a whole number"
expect_error budget_minutes_nan "optimize_kernel(NAME k SPEC $S BUDGET minutes=nan)" \
  "BUDGET 'minutes=nan' of kernel k is rejected by kopt (exit 2): kopt: [kopt.cli.005] --budget: minutes=nan: minutes must be a finite number > 0"
expect_error budget_minutes_negative "optimize_kernel(NAME k SPEC $S BUDGET evals=5,minutes=-1)" \
  "--budget: minutes=-1: minutes must be a finite number > 0"
expect_error budget_minutes_zero "optimize_kernel(NAME k SPEC $S BUDGET minutes=0.0)" "minutes must be a finite number > 0"
expect_error budget_patience "optimize_kernel(NAME k SPEC $S BUDGET evals=5,patience=x)" \
  "--budget: patience=x: patience must be a whole number"
expect_error budget_unknown_key "optimize_kernel(NAME k SPEC $S BUDGET iterations=5)" \
  "[kopt.cli.004] --budget: unknown key 'iterations' in 'iterations=5' (known: evals, minutes, patience)"
expect_error budget_twice "optimize_kernel(NAME k SPEC $S BUDGET evals=5,evals=6)" "--budget: evals is given twice"
expect_error budget_empty_item "optimize_kernel(NAME k SPEC $S BUDGET evals=5,)" "--budget 'evals=5,': empty item"
expect_error budget_blank "optimize_kernel(NAME k SPEC $S BUDGET \"evals=5, minutes=2\")" \
  "BUDGET 'evals=5, minutes=2' of kernel k is rejected by kopt (exit 2): kopt: [kopt.cli.004] --budget: unknown key ' minutes'"
expect_error budget_word "optimize_kernel(NAME k SPEC $S BUDGET lots)" "BUDGET 'lots' of kernel k is rejected by kopt"
expect_error budget_empty "optimize_kernel(NAME k SPEC $S BUDGET \"\")" "the keyword BUDGET has an empty value"
expect_error default_budget "optimize_kernel(NAME k SPEC $S)" \
  "KOPT_DEFAULT_BUDGET 'evals=abc' of kernel k is rejected by kopt (exit 2): kopt: [kopt.cli.005] --budget: evals=abc" \
  -DKOPT_DEFAULT_BUDGET=evals=abc

echo "== files: the module's checks, then kopt's"
expect_error spec_missing "optimize_kernel(NAME k SPEC $T/nope.json)" "SPEC file '$T/nope.json' does not exist"
expect_error spec_relative_missing "optimize_kernel(NAME k SPEC nope.json)" "SPEC file '$T/case-spec_relative_missing/nope.json' does not exist"
expect_error spec_directory "optimize_kernel(NAME k SPEC $T/a_folder)" "SPEC file '$T/a_folder' is a directory"
expect_error spec_not_object "optimize_kernel(NAME k SPEC $T/spec/array.json)" \
  "SPEC '$T/spec/array.json' of kernel k is rejected by kopt (exit 2): kopt: [kopt.spec.104] $T/spec/array.json: $: expected an object, got an array"
expect_error spec_not_json "optimize_kernel(NAME k SPEC $T/spec/corrupt.json)" \
  "SPEC '$T/spec/corrupt.json' of kernel k is rejected by kopt (exit 2): kopt: [kopt.json.001] $T/spec/corrupt.json: not valid JSON"
expect_error spec_initial_missing "optimize_kernel(NAME k SPEC $T/spec/no_initial.json)" \
  "$.initial.source: file not found: '$T/spec/gone/initial.cu' (from 'gone/initial.cu')"
expect_error spec_template_missing "optimize_kernel(NAME k SPEC $T/spec/no_template.json)" \
  "SPEC '$T/spec/no_template.json' of kernel k is rejected by kopt (exit 2): kopt: [kopt.spec.122] $T/spec/no_template.json: $.template.source: file not found"
expect_error spec_reference_missing "optimize_kernel(NAME k SPEC $T/spec/no_reference.json)" \
  "$.reference.source: file not found: '$T/reference.cu' (from '../reference.cu')"
expect_error spec_source_not_string "optimize_kernel(NAME k SPEC $T/spec/number_source.json)" \
  "$.initial.source: expected a string"
expect_error spec_source_directory "optimize_kernel(NAME k SPEC $T/spec/dir_source.json)" \
  "$.initial.source: a directory, not a file: '$T/a_folder' (from '../a_folder')"
# The build would stop there (the parameter search has no space): so does configuring.
expect_error spec_no_params "optimize_kernel(NAME k SPEC $T/spec/no_params.json)" \
  "[kopt.opt.004] $T/spec/no_params.json: $.tuning.params: the template has no parameter space"
expect_error override_missing "optimize_kernel(NAME k SPEC $S TEMPLATE $T/none.cu)" "TEMPLATE file '$T/none.cu' does not exist"
expect_error override_directory "optimize_kernel(NAME k SPEC $S REFERENCE $T/a_folder)" "REFERENCE file '$T/a_folder' is a directory"
expect_error override_no_entry "optimize_kernel(NAME k SPEC $S INITIAL_KERNEL $T/no_entry.cu)" \
  "INITIAL_KERNEL '$T/no_entry.cu' of kernel k is rejected by kopt (exit 2): kopt: [kopt.opt.001] --initial-kernel $T/no_entry.cu: the file needs a '// kopt:entry NAME' line"
expect_error cache_directory "optimize_kernel(NAME k SPEC $S CACHE_FILE $T/a_folder)" "CACHE_FILE '$T/a_folder' is a directory"

echo "== CASES_FROM"
echo '{"kopt_capture": 1, "kernel": "k", "sizes": ["N"], "launches": [{"sizes": {"N": 5}, "count": 2}]}' >"$T/capture.json"
echo '{"kopt_capture": 1,' >"$T/broken_capture.json"
echo '"just a string"' >"$T/string_capture.json"
expect_error cases_from_directory "optimize_kernel(NAME k SPEC $S CASES_FROM $T/a_folder)" \
  "CASES_FROM '$T/a_folder' is a directory"
expect_error cases_from_not_json "optimize_kernel(NAME k SPEC $S CASES_FROM $T/broken_capture.json)" \
  "CASES_FROM '$T/broken_capture.json' of kernel k is rejected by kopt (exit 2): kopt: [kopt.json.001] $T/broken_capture.json: not valid JSON"
expect_error cases_from_scalar "optimize_kernel(NAME k SPEC $S CASES_FROM $T/string_capture.json)" \
  "CASES_FROM '$T/string_capture.json' of kernel k is rejected by kopt (exit 2): kopt: [kopt.spec.104] $T/string_capture.json: $: expected an array, got a string"
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
echo "== STRATEGY: kopt's names, UPDATE_CACHE"
expect_error strategy_unknown "optimize_kernel(NAME k SPEC $S STRATEGY magic)" \
  "STRATEGY 'magic' of kernel k is rejected by kopt (exit 2): kopt: [kopt.cli.010] --strategy: expected one of"
grep -qF "(STRATEGY also takes search" "$T/case-strategy_unknown/flat" || fail "strategy_unknown: no word of search"
expect_error default_strategy_unknown "optimize_kernel(NAME k SPEC $S)" "KOPT_DEFAULT_STRATEGY 'magic' of kernel k is rejected" \
  -DKOPT_DEFAULT_STRATEGY=magic
# Every name kopt's --strategy takes (from kopt's own message), and search.
names="$( ("$KOPT" generate --spec "$S" --name k --out-dir "$T/x" --check --strategy not-a-strategy 2>&1 || true) \
  | sed -n 's/.*expected one of \(.*\), got .*/\1/p' | tr -d ',')"
[ "$(echo "$names" | wc -w)" -ge 3 ] || fail "no strategy names from kopt: '$names'"
calls="optimize_kernel(NAME k_search SPEC $S STRATEGY search)"
for name in $names; do calls="$calls
optimize_kernel(NAME k_$name SPEC $S STRATEGY $name)"; done
expect_ok strategies_of_kopt "$calls"
echo "  every strategy of kopt configures: search $names"
# ... and the module's code names none of them: kopt's list is the only one.
code="$(sed '/^#\[=/,/^#\]=/d; s/#.*//' "$MODULE")"
for name in $names; do
  if grep -qw -- "$name" <<<"$code"; then fail "the module's code names the strategy '$name'"; fi
done
echo "  the module's code names no strategy: ok"
expect_error search_strategy_with_agent "optimize_kernel(NAME k SPEC $S STRATEGY agent SEARCH_STRATEGY random)" \
  "SEARCH_STRATEGY applies to STRATEGY search only"
expect_ok search_strategy_alias "optimize_kernel(NAME k SPEC $S SEARCH_STRATEGY random)"
tr -s ' \n' '  ' <"$T/case-search_strategy_alias/log" | grep -qF "SEARCH_STRATEGY is deprecated; write STRATEGY random" \
  || { cat "$T/case-search_strategy_alias/log"; fail "search_strategy_alias: no deprecation warning"; }
echo "  SEARCH_STRATEGY: deprecated, an alias of STRATEGY: ok"
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

# kopt built by the same project (add_subdirectory, FetchContent): it does not
# exist when configuring, so kopt's checks come when optimize_<name> builds,
# from kopt generate itself. The project's kopt is a tiny program that runs
# the built one.
echo "== kopt built by the project: configures, and the build gives kopt's message"
if command -v cc >/dev/null; then
  d="$T/case-built_here"
  mkdir -p "$d"
  cat >"$d/kopt_shim.c" <<C
#include <unistd.h>
int main(int argc, char** argv) { (void)argc; argv[0] = "$KOPT"; execv("$KOPT", argv); return 127; }
C
  cat >"$d/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.25)
project(built_here LANGUAGES C)
add_executable(kopt kopt_shim.c)
add_executable(kopt::kopt ALIAS kopt)
include("$MODULE")
optimize_kernel(NAME bad_budget SPEC $S BUDGET evals=abc)
optimize_kernel(NAME bad_strategy SPEC $S STRATEGY magic)
optimize_kernel(NAME bad_spec SPEC $T/spec/no_initial.json)
optimize_kernel(NAME good SPEC $S BUDGET evals=1)
CM
  cmake -S "$d" -B "$d/b" >"$d/log" 2>&1 || { cat "$d/log"; fail "built_here: configure failed"; }
  build_fails() {  # KERNEL, EXPECTED-TEXT
    if cmake --build "$d/b" --target "optimize_$1" >"$d/$1.log" 2>&1; then cat "$d/$1.log"; fail "built_here: optimize_$1 built"; fi
    grep -qF -- "$2" "$d/$1.log" || { cat "$d/$1.log"; fail "built_here: optimize_$1 lacks '$2'"; }
    n=$((n + 1))
    echo "  built_here: optimize_$1 fails: $2: ok"
  }
  build_fails bad_budget "kopt: [kopt.cli.005] --budget: evals=abc: evals must be a whole number"
  build_fails bad_strategy "kopt: [kopt.cli.010] --strategy: expected one of"
  build_fails bad_spec "$.initial.source: file not found: '$T/spec/gone/initial.cu'"
  cmake --build "$d/b" --target optimize_good >"$d/good.log" 2>&1 || { cat "$d/good.log"; fail "built_here: optimize_good failed"; }
  [ -f "$d/b/kernel_optimizer/good/good.cu" ] || fail "built_here: optimize_good wrote no good.cu"
  n=$((n + 1))
  echo "  built_here: a good call builds: ok"
else
  echo "  (no C compiler: skipped)"
fi
echo "ALL $n CASES PASSED"
