#!/usr/bin/env bash
# The gallery (docs/gallery.md) on the GPU machine, in one call: kopt against Kernel Tuner on the
# kernels ported from public autotuner suites (templates/{stencil,spmv,reduction,expdist,nbody}).
#
# Usage (from the repository root):
#   bash scripts/gallery.sh [planted] [compare] [record] [-- gallery.py options]
#     planted  the planted wrong kernels of tests/gpu/gallery/*.json must be rejected (and each
#              template's control accepted): tests/templates/check_templates.py planted
#     compare  scripts/gallery.py compare: kopt and Kernel Tuner tune each kernel, both bests are
#              re-timed side by side, the library op is timed, the bound and the convergence
#              computed; the table goes to stdout (and $OUT/gallery.md)
#     record   scripts/gallery.py record: each kernel's whole space with quick timing, as T4
#              results (build-gpu/gallery/record/<name>.t4.json, packed into
#              $OUT/gallery-record.tgz); resumed where the last call stopped
#   default: planted compare. Options after -- go to gallery.py (--kernels limits the planted
#   stage too), e.g.
#     bash scripts/gallery.sh compare -- --kernels stencil,spmv --evals 48
#     bash scripts/gallery.sh record -- --kernels reduction --minutes 6
#
# Environment: OUT (default ./gallery-out; plain files only: the table, gallery.json and a
# tarball of every log, so that the device tool brings them back), KOPT (default
# build-gpu/tool/kopt; built here when missing, as scripts/gpu_run.sh builds it, with the
# headers of .carry/ from scripts/gpu_carry.sh), GALLERY_RECORD (a folder of <name>.t4.json
# records that compare scores convergence against; default: build-gpu/gallery/record when it
# exists, which a record stage of this or an earlier call on the same machine leaves).
# Kernel Tuner 1.5 and the pure-Python packages it needs that the GPU machine lacks come as
# wheels in .whl/ (docs/gallery.md lists them): installed into /tmp/kt-site and put on
# PYTHONPATH when kernel_tuner is not importable.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
OUT="${OUT:-$ROOT/gallery-out}"
WORK="$ROOT/build-gpu/gallery"
mkdir -p "$OUT" "$WORK"
export PATH="/usr/local/cuda/bin:$PATH" PYTHONUNBUFFERED=1
export KOPT="${KOPT:-$ROOT/build-gpu/tool/kopt}"

stages=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do stages+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
[ ${#stages[@]} -eq 0 ] && stages=(planted compare)

if [ ! -x "$KOPT" ]; then
  echo "== building kopt into build-gpu"
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DKOPT_BUILD_TESTS=ON -DKOPT_UNIT_TESTS=OFF \
    >"$WORK/configure.log" 2>&1 || { tail -30 "$WORK/configure.log"; exit 1; }
  cmake --build build-gpu -j "$(nproc)" --target kopt >"$WORK/build.log" 2>&1 || { grep -E -A3 error "$WORK/build.log" | head -40; exit 1; }
fi
"$KOPT" devices | grep -E '"name"' || { echo "kopt devices found no GPU"; exit 77; }

if ! python3 -c "import kernel_tuner" 2>/dev/null; then
  if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/kt-site .whl/*.whl \
      || { echo "installing the wheels of .whl/ failed"; exit 1; }
    export PYTHONPATH="/tmp/kt-site${PYTHONPATH:+:$PYTHONPATH}"
  fi
fi
python3 -c "import kernel_tuner, cupy; print('kernel_tuner', kernel_tuner.__version__ if hasattr(kernel_tuner, '__version__') else '?', '| cupy', cupy.__version__)" \
  || { echo "kernel_tuner or cupy cannot be imported (carry .whl/: docs/gallery.md)"; exit 1; }

# --kernels a,b (for gallery.py) also limits the planted stage to those templates.
only=""
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  [ "${args[$i]}" = "--kernels" ] && only="${args[$((i + 1))]:-}"
done

status=0
for stage in "${stages[@]}"; do
  case "$stage" in
    planted)
      echo "== planted wrong kernels (tests/gpu/gallery)"
      python3 tests/templates/check_templates.py planted --kopt "$KOPT" --source-dir "$ROOT" --work-dir "$WORK/planted" \
        --only "$only" 2>&1 | tee "$WORK/planted.log"
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
      ;;
    compare)
      rec="${GALLERY_RECORD:-$WORK/record}"
      extra=()
      [ -d "$rec" ] && extra=(--record "$rec")
      echo "== compare (logs: $WORK/compare)"
      python3 scripts/gallery.py compare --out "$WORK/compare" "${extra[@]}" "$@" 2> >(tee "$WORK/compare.log" >&2) || status=1
      cp "$WORK/compare/gallery.md" "$WORK/compare/gallery.json" "$OUT/" 2>/dev/null
      ;;
    record)
      echo "== record (run folders kept in $WORK)"
      python3 scripts/gallery.py record --out "$WORK/record" --work "$WORK" "$@" 2> >(tee "$WORK/record.log" >&2) || status=1
      tar -C "$WORK" -czf "$OUT/gallery-record.tgz" record
      ;;
    *) echo "unknown stage '$stage' (planted, compare, record)"; exit 2 ;;
  esac
done
tar -C "$WORK" -czf "$OUT/gallery-logs.tgz" --exclude='kopt-cache' --exclude='record-cache' --exclude='copies' \
  --exclude='*.npy' . 2>/dev/null
exit $status
