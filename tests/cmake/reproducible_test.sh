#!/usr/bin/env bash
# Reproducible outputs: example_project built in two folders (its source, the
# spec and the build tree each elsewhere, at paths of different lengths),
# from the committed tuning cache, writes byte-identical sgemm.cu,
# sgemm_launch.h and sgemm.nvcc_options, and no generated file, cache copy
# or cases file carries a path of the machine (the depfile aside: it is the
# build system's, and names the inputs by absolute path as Make needs). GPUs are hidden
# (CUDA_VISIBLE_DEVICES=-1), so the cache serves on every machine.
# Usage: reproducible_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
SRC="$1"; BUILD="$2"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
export PATH="/usr/local/cuda/bin:$PATH"
export CUDA_VISIBLE_DEVICES=-1
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }
command -v nvcc >/dev/null || { echo "SKIP: nvcc is needed to configure the example (a CUDA project)"; exit 77; }

build() {  # WHERE: a folder for this build's copies and its build tree
  local w="$1"
  mkdir -p "$w/spec" "$w/src"
  cp -r "$SRC/example_project/." "$w/src/"
  cp -r "$SRC/templates/sgemm/." "$w/spec/"
  cmake -S "$w/src" -B "$w/build" -G Ninja -DKernelOptimizer_DIR="$BUILD" -DCMAKE_BUILD_TYPE=Release \
        -DKOPT_EXAMPLE_SPEC="$w/spec/sgemm.json" -DKOPT_EXAMPLE_CASES_FROM="$w/spec/application_shapes.json" \
        >"$w/configure.log" 2>&1 || { cat "$w/configure.log"; fail "configure in $w"; }
  cmake --build "$w/build" --target optimize_sgemm >"$w/generate.log" 2>&1 || { cat "$w/generate.log"; fail "optimize_sgemm in $w"; }
  grep -q "from the tuning cache sgemm.tuning.json" "$w/generate.log" || { cat "$w/generate.log"; fail "$w: the committed cache was not used"; }
}

A="$T/a"
B="$T/second build/with a longer path"
step "example_project in $A"
build "$A"
step "example_project in $B"
build "$B"

GA="$A/build/kernel_optimizer/sgemm"
GB="$B/build/kernel_optimizer/sgemm"
step "the same bytes"
for f in sgemm.cu sgemm_launch.h; do
  [ -s "$GA/$f" ] || fail "$GA/$f was not generated"
  cmp "$GA/$f" "$GB/$f" || { diff "$GA/$f" "$GB/$f" | head -20; fail "$f differs between the two builds"; }
  echo "  $f: identical ($(wc -c <"$GA/$f") bytes)"
done
cmp "$GA/sgemm.nvcc_options" "$GB/sgemm.nvcc_options" || fail "sgemm.nvcc_options differs between the two builds"

step "no path of the machine in what was written"
for g in "$GA" "$GB"; do
  for f in "$g"/sgemm.cu "$g"/sgemm_launch.h "$g"/sgemm.nvcc_options "$g"/sgemm.json "$g"/sgemm.tuning.json \
           "$g"/sgemm.cases.json; do
    [ -f "$f" ] || fail "$f was not written"
    if grep -n -F "$T" "$f" | head -3; then fail "$f names a folder of this build ($T)"; fi
  done
done
# The committed cache, whose kernels are copied into sgemm.cu: no absolute path either.
if grep -n -E '"kernel_source": "// [^"]* of /' "$SRC/example_project/sgemm.tuning.json" | cut -c1-200 | head -3; then
  fail "the committed cache's kernels name an absolute run folder"
fi
if grep -n -E '(^|[ (])/(home|work|tmp|root|Users)/' "$GA/sgemm.cu" "$GA/sgemm_launch.h" | cut -c1-200 | head -3; then
  fail "the generated files hold an absolute path"
fi
echo "  ok"
