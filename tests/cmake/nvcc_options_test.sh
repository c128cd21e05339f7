#!/usr/bin/env bash
# optimize_kernel() compiles the generated kernel with the NVRTC options it
# was tuned with. A tiny CUDA project whose spec tunes with -use_fast_math
# (tuning.compile_options), its kopt::kopt the built kopt, no GPU (kopt
# generate falls back to the initial kernel, which the spec's options apply
# to as well), the target in a subdirectory (source properties are per
# directory), under Ninja and Make. Checks that
#   - kopt generate writes <name>.nvcc_options holding --use_fast_math;
#   - the compile command of the generated source passes that file to nvcc
#     (--options-file), and nvcc's device compile ran with fast math (nvcc -v:
#     cicc's -ftz=1 -prec_div=0 -prec_sqrt=0 ... -fast-math);
#   - the code is fast math: the same source compiled to PTX by a second
#     target of that directory has .ftz and approximate instructions;
#   - with the option gone from the spec, the build generates and compiles
#     again, without them.
# Usage: nvcc_options_test.sh KOPT MODULE_FILE
set -euo pipefail
KOPT="$1" MODULE="$2"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
export PATH="/usr/local/cuda/bin:$PATH"
export CUDA_VISIBLE_DEVICES=-1
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v nvcc >/dev/null || { echo "SKIP: nvcc is needed (a CUDA project)"; exit 77; }

mkdir -p "$T/src/app"
cat >"$T/src/k.cu" <<'CU'
// kopt:entry rsqrt_all
// kopt:grid ceil_div(n, BS), 1, 1
// kopt:block BS, 1, 1
#ifndef BS
#define BS 128
#endif
extern "C" __global__ void rsqrt_all(float* x, int n) {
  int i = blockIdx.x * BS + threadIdx.x;
  if (i < n) x[i] = 1.0f / sqrtf(x[i]);
}
CU
spec() {  # TUNING-COMPILE-OPTIONS-JSON
  cat >"$T/src/k.json" <<JSON
{"name": "rsqrt_all",
 "signature": [{"name": "x", "type": "float", "role": "inout", "count": "n"}, {"name": "n", "type": "int32", "value": "n"}],
 "launch": {"grid": ["ceil_div(n, BS)", 1, 1], "block": ["BS", 1, 1]},
 "template": {"source": "k.cu", "entry": "rsqrt_all"},
 "initial": {"source": "k.cu", "entry": "rsqrt_all", "defines": {"BS": 128}},
 "reference": {"kind": "kernel", "source": "k.cu", "entry": "rsqrt_all", "defines": {"BS": 128}},
 "cases": [{"name": "n1", "role": "correctness", "sizes": {"n": 1}}, {"name": "n17", "role": "correctness", "sizes": {"n": 17}},
           {"name": "n4k", "role": "performance", "sizes": {"n": 4096}}],
 "tuning": {"params": {"BS": [128, 256]}, "compile_options": $1}}
JSON
}
spec '["-use_fast_math"]'
cat >"$T/src/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.25)
project(nvcc_options LANGUAGES CUDA)
set(CMAKE_CUDA_ARCHITECTURES 90)
enable_testing()
add_executable(kopt::kopt IMPORTED)
set_target_properties(kopt::kopt PROPERTIES IMPORTED_LOCATION "$KOPT")
include("$MODULE")
add_subdirectory(app)
optimize_kernel(NAME rsqrt SPEC k.json TARGET kernels BUDGET evals=2)
# The same source as PTX, to read the code nvcc makes with the options.
target_sources(kernels_ptx PRIVATE "\${CMAKE_CURRENT_BINARY_DIR}/kernel_optimizer/rsqrt/rsqrt.cu")
add_dependencies(kernels_ptx optimize_rsqrt)
CM
cat >"$T/src/app/CMakeLists.txt" <<'CM'
add_library(kernels OBJECT)
add_library(kernels_ptx OBJECT)
set_target_properties(kernels_ptx PROPERTIES CUDA_PTX_COMPILATION ON)
CM

# nvcc -v prints the device compile (cicc) of each of the two compiles of
# rsqrt.cu (the object, the PTX): each must carry FLAGS.
device_compiles() {  # BUILD-LOG, FLAGS, WHAT
  grep -E '^#\$ .*cicc.*rsqrt\.cu' "$1" >"$1.cicc" || { cat "$1"; fail "$gen: no nvcc -v output in $1"; }
  [ "$(wc -l <"$1.cicc")" -eq 2 ] || { cat "$1.cicc"; fail "$gen: expected two device compiles of rsqrt.cu in $1"; }
  if grep -v -F -- "$2" "$1.cicc"; then fail "$gen: nvcc did not compile rsqrt.cu $3"; fi
}

run_generator() {  # GENERATOR, folder name
  local gen="$1" b="$T/$2"
  local out="$b/kernel_optimizer/rsqrt"
  spec '["-use_fast_math"]'
  # nvcc -v: the commands nvcc runs, its device compile (cicc) among them.
  cmake -S "$T/src" -B "$b" -G "$gen" -DCMAKE_CUDA_FLAGS=-v >"$b.configure.log" 2>&1 \
    || { cat "$b.configure.log"; fail "$gen: configure failed"; }
  cmake --build "$b" -v >"$b/build.log" 2>&1 || { cat "$b/build.log"; fail "$gen: build failed"; }
  grep -q "kopt generate: rsqrt.cu: " "$b/build.log" || { cat "$b/build.log"; fail "$gen: nothing generated"; }

  [ "$(cat "$out/rsqrt.nvcc_options")" = "--use_fast_math" ] \
    || { cat "$out/rsqrt.nvcc_options"; fail "$gen: rsqrt.nvcc_options does not hold --use_fast_math alone"; }
  # The compile command of the generated source, and what nvcc ran for it.
  grep -E "nvcc.* -c .*kernel_optimizer/rsqrt/rsqrt\.cu" "$b/build.log" >"$b/compile.txt" \
    || { cat "$b/build.log"; fail "$gen: no compile command for rsqrt.cu in the verbose build"; }
  grep -qF -- "--options-file=$out/rsqrt.nvcc_options" "$b/compile.txt" \
    || { cat "$b/compile.txt"; fail "$gen: the compile command does not pass rsqrt.nvcc_options"; }
  device_compiles "$b/build.log" "-ftz=1 -prec_div=0 -prec_sqrt=0 -fmad=1 -fast-math" "with fast math"
  echo "  $gen: the compile command passes rsqrt.nvcc_options (--use_fast_math), and nvcc compiled with fast math: ok"

  local ptx
  ptx="$(find "$b" -name 'rsqrt.ptx' | head -1)"
  [ -n "$ptx" ] || fail "$gen: no PTX of rsqrt.cu"
  grep -q "approx.ftz.f32" "$ptx" || { cat "$ptx"; fail "$gen: the PTX is not fast math"; }
  echo "  $gen: the code is fast math: ok"

  cmake --build "$b" -v >"$b/build2.log" 2>&1 || { cat "$b/build2.log"; fail "$gen: second build failed"; }
  if grep -q "kopt generate: rsqrt.cu: " "$b/build2.log"; then fail "$gen: nothing changed, yet generated again"; fi

  # Tuned without it: generated and compiled again, IEEE code.
  sleep 1  # a newer spec than the outputs, for Make's one-second file times
  spec '[]'
  cmake --build "$b" -v >"$b/build3.log" 2>&1 || { cat "$b/build3.log"; fail "$gen: build without the option failed"; }
  grep -q "kopt generate: rsqrt.cu: " "$b/build3.log" || { cat "$b/build3.log"; fail "$gen: not generated again"; }
  [ ! -s "$out/rsqrt.nvcc_options" ] || { cat "$out/rsqrt.nvcc_options"; fail "$gen: rsqrt.nvcc_options not empty"; }
  device_compiles "$b/build3.log" "-ftz=0 -prec_div=1 -prec_sqrt=1 -fmad=1 --include_file_name" "without fast math"
  if grep -q "\.ftz\.f32\|approx" "$ptx"; then cat "$ptx"; fail "$gen: fast math without the option"; fi
  grep -q "div.rn.f32\|sqrt.rn.f32" "$ptx" || { cat "$ptx"; fail "$gen: no IEEE division or root"; }
  echo "  $gen: without the option: generated and compiled again, IEEE code: ok"
}

if command -v ninja >/dev/null; then run_generator Ninja ninja; else echo "  (ninja not found: skipped)"; fi
if command -v make >/dev/null; then run_generator "Unix Makefiles" make; else echo "  (make not found: skipped)"; fi
echo "nvcc_options: ALL PASSED"
