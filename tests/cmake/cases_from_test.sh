#!/usr/bin/env bash
# optimize_kernel(CASES_FROM) end to end without a GPU, under Ninja and Make:
# a tiny project whose kopt::kopt is the built kopt (no GPU: kopt generate
# falls back to the initial kernel in a fraction of a second). Checks that
#   - a missing capture configures and builds on the spec's cases;
#   - a build with nothing changed does not run kopt generate again;
#   - the capture written by a host program that includes the generated
#     launch header (run with KOPT_CAPTURE) makes the next build generate
#     again, on the captured shapes (<name>.cases.json), and a newer capture
#     again; removing it goes back to the spec's cases;
#   - the tests run on those cases (ctest: skipped without a GPU, not failed).
# Usage: cases_from_test.sh KOPT MODULE_FILE SPEC
set -euo pipefail
KOPT="$1" MODULE="$2" SPEC="$3"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v c++ >/dev/null || { echo "no C++ compiler: skipped"; exit 77; }

mkdir -p "$T/src"
cat >"$T/src/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.25)
project(cases_from LANGUAGES NONE)
enable_testing()
add_executable(kopt::kopt IMPORTED)
set_target_properties(kopt::kopt PROPERTIES IMPORTED_LOCATION "$KOPT")
include("$MODULE")
optimize_kernel(NAME sgemm SPEC "$SPEC" CASES_FROM "\${CMAKE_BINARY_DIR}/sgemm.capture.json" BUDGET evals=2)
CM
# The application: calls launch_config() with the sizes it is given.
cat >"$T/app.cpp" <<'CPP'
#include <cstdlib>
#include "sgemm_launch.h"
int main(int argc, char** argv) {
  for (int i = 1; i + 2 < argc; i += 3)
    (void)kopt_sgemm::launch_config(std::atoll(argv[i]), std::atoll(argv[i + 1]), std::atoll(argv[i + 2]));
  return 0;
}
CPP

run_generator() {  # GENERATOR, folder name
  local gen="$1" b="$T/$2"
  local out="$b/kernel_optimizer/sgemm"
  build() { cmake --build "$b" --target optimize_sgemm >"$b/build.log" 2>&1 || { cat "$b/build.log"; fail "$gen: build failed"; }; }
  generated() { grep -q "KernelOptimizer: generating sgemm" "$b/build.log"; }
  cmake -S "$T/src" -B "$b" -G "$gen" >"$b.configure.log" 2>&1 || { cat "$b.configure.log"; fail "$gen: configure failed"; }
  tr -s ' \n' '  ' <"$b.configure.log" | grep -qF "does not exist yet: tuning on the spec's cases" \
    || { cat "$b.configure.log"; fail "$gen: configure did not say that the capture is missing"; }

  build
  generated || { cat "$b/build.log"; fail "$gen: the first build did not generate"; }
  grep -qF "does not exist (yet): using the spec's cases" "$b/build.log" || { cat "$b/build.log"; fail "$gen: no fallback message"; }
  [ -f "$out/sgemm.cases.json" ] || fail "$gen: no sgemm.cases.json"
  if grep -q captured_ "$out/sgemm.cases.json"; then fail "$gen: captured cases without a capture"; fi
  build
  if generated; then cat "$b/build.log"; fail "$gen: nothing changed, yet kopt generate ran again"; fi
  echo "  $gen: missing capture: the spec's cases, once: ok"

  # The application, built with the generated header, records its launches.
  c++ -std=c++17 -Wall -Werror -pthread -I"$out" "$T/app.cpp" -o "$b/app" || fail "$gen: the app does not compile"
  KOPT_CAPTURE="$b/sgemm.capture.json" "$b/app" 256 128 64 256 128 64 32 16 8 || fail "$gen: the app failed"
  grep -q '"count": 2' "$b/sgemm.capture.json" || { cat "$b/sgemm.capture.json"; fail "$gen: capture counts"; }
  build
  generated || { cat "$b/build.log"; fail "$gen: the new capture did not re-generate"; }
  grep -q '"captured_M256_N128_K64"' "$out/sgemm.cases.json" || { cat "$out/sgemm.cases.json"; fail "$gen: no captured case"; }
  grep -q '"weight": 2.0' "$out/sgemm.cases.json" || { cat "$out/sgemm.cases.json"; fail "$gen: no weight"; }
  build
  if generated; then cat "$b/build.log"; fail "$gen: capture unchanged, yet kopt generate ran again"; fi
  echo "  $gen: the capture appears: generated again on its shapes, once: ok"

  KOPT_CAPTURE="$b/sgemm.capture.json" "$b/app" 512 64 32 || fail "$gen: the app failed"
  build
  generated || { cat "$b/build.log"; fail "$gen: a newer capture did not re-generate"; }
  grep -q '"captured_M512_N64_K32"' "$out/sgemm.cases.json" || fail "$gen: the newer capture's shape is missing"
  echo "  $gen: a newer capture: generated again: ok"

  # The tests run on the generated cases: without a GPU they are skipped (77), never failed.
  (cd "$b" && ctest -R 'sgemm\.' --output-on-failure >"$b/ctest.log" 2>&1) || { cat "$b/ctest.log"; fail "$gen: ctest failed"; }
  grep -qF "\"--input-cases\" \"$out/sgemm.cases.json\"" <(cd "$b" && ctest -R sgemm.correctness -V -N 2>&1) \
    || fail "$gen: sgemm.correctness does not take --input-cases"
  [ "$(grep -c 'Skipped' "$b/ctest.log")" -ge 2 ] || { cat "$b/ctest.log"; fail "$gen: the tests were not skipped"; }
  echo "  $gen: ctest runs the tests on the captured cases (skipped without a GPU): ok"

  rm "$b/sgemm.capture.json"
  build
  generated || { cat "$b/build.log"; fail "$gen: removing the capture did not re-generate"; }
  if grep -q captured_ "$out/sgemm.cases.json"; then fail "$gen: captured cases after the capture went away"; fi
  build
  if generated; then cat "$b/build.log"; fail "$gen: kopt generate ran again with the capture still gone"; fi
  echo "  $gen: capture removed: back to the spec's cases, once: ok"
}

if command -v ninja >/dev/null; then run_generator Ninja ninja; else echo "  (ninja not found: skipped)"; fi
if command -v make >/dev/null; then run_generator "Unix Makefiles" make; else echo "  (make not found: skipped)"; fi
echo "cases_from: ALL PASSED"
