#!/usr/bin/env bash
# KernelOptimizer as a subproject of a user's project, the two ways CMake
# users take it from source (the build-tree and install cases are in
# consumer_test.sh):
#
#   fetchcontent      FetchContent_Declare(GIT_REPOSITORY file://...) from a
#                     local git repository made of this source tree (no
#                     network), FetchContent_MakeAvailable; builds kopt and
#                     optimize_sgemm, the application, runs ctest.
#   add_subdirectory  example_project with -DKOPT_EXAMPLE_IN_TREE=ON (it does
#                     add_subdirectory(..)); configures, then checks the build
#                     graph with `ninja -t commands` (the kopt build itself is the
#                     fetchcontent case's).
#
# Both check that the subproject leaves the parent's cache alone (no
# CMAKE_BUILD_TYPE forced into it: its CUDA and C++ flags stay the user's),
# registers none of its own tests, and that optimize_kernel() works.
# Usage: subproject_test.sh MODE SOURCE_DIR WORK_DIR [COMPILER_LAUNCHER]
# WORK_DIR is emptied first; a fixed one (in the build tree) lets ccache hit
# on the next run.
set -euo pipefail
MODE="$1"; SRC="$2"; W="$3"; LAUNCHER="${4:-}"
export PATH="/usr/local/cuda/bin:$PATH"
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }
rm -rf "$W"; mkdir -p "$W"
gen=(-G Ninja)
command -v ninja >/dev/null || fail "ninja is needed"
launch=()
[ -n "$LAUNCHER" ] && launch=(-DCMAKE_CXX_COMPILER_LAUNCHER="$LAUNCHER")
has_gpu() { nvidia-smi >/dev/null 2>&1; }

# The parent's cache must not have changed: CMAKE_BUILD_TYPE as given (or
# empty), and the application compiled with the parent's flags only.
check_parent_cache() {  # BUILD_DIR WANTED_BUILD_TYPE
  local got
  got="$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$1/CMakeCache.txt")"
  [ "$got" = "$2" ] || fail "the parent's CMAKE_BUILD_TYPE is '$got', expected '$2' (the subproject changed it)"
  echo "  CMAKE_BUILD_TYPE stays '$2': ok"
  if grep -q "KOPT_BUILD_TESTS:BOOL=ON" "$1/CMakeCache.txt"; then fail "KOPT_BUILD_TESTS is ON in a subproject"; fi
}

if [ "$MODE" = fetchcontent ]; then
  command -v git >/dev/null || { echo "SKIP: git is needed for the FetchContent test"; exit 77; }
  step "a local git repository of this source tree"
  mkdir -p "$W/repo"
  if git -C "$SRC" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # What a commit of this tree would hold: tracked files plus new ones, as they are now.
    (cd "$SRC" && git ls-files -co --exclude-standard -z | xargs -0 -r cp --parents -t "$W/repo" 2>/dev/null || true)
  else
    (cd "$SRC" && tar --exclude='./build*' --exclude='./results' --exclude='./.git' -cf - .) | tar -xf - -C "$W/repo"
  fi
  # Headers carried to a machine that lacks them (scripts/gpu_carry.sh): git-ignored, needed to build.
  [ -d "$SRC/.carry" ] && cp -r "$SRC/.carry" "$W/repo/"
  [ -f "$W/repo/CMakeLists.txt" ] || fail "the copy of $SRC has no CMakeLists.txt"
  git -C "$W/repo" init -q
  git -C "$W/repo" add -A
  git -C "$W/repo" -c user.name=kopt-test -c user.email=kopt-test@localhost commit -q -m "snapshot for the FetchContent test"
  sha="$(git -C "$W/repo" rev-parse HEAD)"
  echo "  file://$W/repo at $sha"

  step "a consumer that fetches it"
  mkdir -p "$W/app"
  cp "$SRC/example_project/main.cu" "$W/app/main.cu"
  cp "$SRC/example_project/sgemm.tuning.json" "$W/app/sgemm.tuning.json"
  cat >"$W/app/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.25)
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 90)
endif()
project(fetch_consumer LANGUAGES CXX CUDA)
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CUDA_STANDARD 17)
enable_testing()
include(FetchContent)
FetchContent_Declare(KernelOptimizer GIT_REPOSITORY "file://$W/repo" GIT_TAG $sha)
FetchContent_MakeAvailable(KernelOptimizer)
find_package(CUDAToolkit REQUIRED)
add_executable(matmul main.cu)
target_link_libraries(matmul PRIVATE CUDA::cudart)
optimize_kernel(NAME sgemm SPEC "\${KernelOptimizer_TEMPLATES_DIR}/sgemm/sgemm.json" TARGET matmul
                CACHE_FILE sgemm.tuning.json BUDGET evals=4)
CM
  # No CMAKE_BUILD_TYPE: the subproject must not set one (its RelWithDebInfo
  # used to leak into the consumer, with -O2 -g in the CUDA flags).
  cmake -S "$W/app" -B "$W/b" "${gen[@]}" "${launch[@]}" >"$W/configure.log" 2>&1 \
    || { cat "$W/configure.log"; fail "configure"; }
  check_parent_cache "$W/b" ""
  [ -d "$W/b/_deps/kerneloptimizer-src/.git" ] || fail "FetchContent did not clone the repository"

  step "cmake --build --target optimize_sgemm (builds kopt from the fetched source)"
  start=$(date +%s)
  cmake --build "$W/b" --target optimize_sgemm >"$W/tune.log" 2>&1 || { tail -50 "$W/tune.log"; fail "optimize_sgemm"; }
  echo "  built in $(( $(date +%s) - start )) s"
  [ -f "$W/b/kernel_optimizer/sgemm/sgemm.cu" ] || fail "sgemm.cu not generated"
  [ -f "$W/b/kernel_optimizer/sgemm/sgemm_launch.h" ] || fail "sgemm_launch.h not generated"
  if ! has_gpu; then
    grep -q "from the tuning cache" "$W/tune.log" || { cat "$W/tune.log"; fail "without a GPU the tuning cache should be used"; }
  fi

  step "the application builds with the parent's flags"
  cmake --build "$W/b" -v >"$W/build.log" 2>&1 || { tail -50 "$W/build.log"; fail "build"; }
  line="$(grep -E "nvcc.* -c .*main\.cu" "$W/build.log" | head -1)"
  [ -n "$line" ] || { cat "$W/build.log"; fail "no nvcc line for main.cu"; }
  case " $line " in *" -O2 "*|*" -g "*) fail "main.cu was compiled with the subproject's RelWithDebInfo flags: $line";; esac
  echo "  main.cu without -O2/-g: ok"

  step "ctest: the consumer's kernel tests only, skipped without a GPU"
  ctest --test-dir "$W/b" -N >"$W/list.log"
  grep -q "sgemm.correctness" "$W/list.log" && grep -q "sgemm.benchmark" "$W/list.log" || { cat "$W/list.log"; fail "tests not registered"; }
  grep -q "Total Tests: 2" "$W/list.log" || { cat "$W/list.log"; fail "KernelOptimizer's own tests leaked into the consumer"; }
  ctest --test-dir "$W/b" --output-on-failure >"$W/ctest.log" 2>&1 || { cat "$W/ctest.log"; has_gpu && fail "ctest"; }
  if ! has_gpu; then
    [ "$(grep -c "Skipped" "$W/ctest.log")" -ge 2 ] || { cat "$W/ctest.log"; fail "expected both tests to be skipped"; }
  fi

  step "nothing changed: no re-tuning, no kopt rebuild"
  cmake --build "$W/b" >"$W/again.log" 2>&1
  grep -q "KernelOptimizer: generating" "$W/again.log" && fail "re-ran the tuning with nothing changed"
  echo "ALL CHECKS PASSED"
  exit 0
fi

[ "$MODE" = add_subdirectory ] || fail "MODE is fetchcontent or add_subdirectory, not '$MODE'"
step "example_project with add_subdirectory(..), no CMAKE_BUILD_TYPE"
cmake -S "$SRC/example_project" -B "$W/b" "${gen[@]}" -DKOPT_EXAMPLE_IN_TREE=ON >"$W/configure.log" 2>&1 \
  || { cat "$W/configure.log"; fail "configure"; }
check_parent_cache "$W/b" ""
step "the same with -DCMAKE_BUILD_TYPE=Debug"
cmake -S "$SRC/example_project" -B "$W/bd" "${gen[@]}" -DKOPT_EXAMPLE_IN_TREE=ON -DCMAKE_BUILD_TYPE=Debug \
  >"$W/configure-debug.log" 2>&1 || { cat "$W/configure-debug.log"; fail "configure (Debug)"; }
check_parent_cache "$W/bd" "Debug"

step "the build graph: optimize_sgemm builds kopt, then runs kopt generate with a depfile"
ninja -C "$W/b" -t commands optimize_sgemm >"$W/dry.log" 2>&1 || { cat "$W/dry.log"; fail "ninja -t commands optimize_sgemm"; }
grep -q "tool/kopt" "$W/dry.log" || { cat "$W/dry.log"; fail "optimize_sgemm does not build kopt"; }
grep -qE "kopt generate .*--depfile [^ ]*kernel_optimizer/sgemm/sgemm\.d" "$W/dry.log" \
  || { grep generate "$W/dry.log"; fail "no kopt generate --depfile in the graph"; }
grep -qE "kopt generate .*--cache-out [^ ]*kernel_optimizer/sgemm/sgemm\.tuning\.json" "$W/dry.log" \
  || { grep generate "$W/dry.log"; fail "the committed cache is not kept apart (--cache-out)"; }
echo "  ok"
step "ctest: the example's tests only"
ctest --test-dir "$W/b" -N >"$W/list.log"
grep -q "Total Tests: 3" "$W/list.log" || { cat "$W/list.log"; fail "expected sgemm.correctness, sgemm.benchmark, matmul.selfcheck only"; }
echo "ALL CHECKS PASSED"
