#!/usr/bin/env bash
# `kopt report` and scripts/example_report.sh on a real run folder, without a GPU.
#
#   tests/report/example_report_test.sh KOPT FAKE_WORKER SOURCE_DIR WORK_DIR
#
# 1. `kopt optimize` tunes templates/sgemm/sgemm.json with the fake worker
#    (a few evaluations; the timings and errors are made up) into WORK_DIR;
# 2. its report.html and heatmap.svg are deleted and `kopt report RUN_DIR`
#    makes them again, saying that the timings are simulated; `--out` writes
#    them elsewhere and leaves the run folder as it was (every file hashed);
# 3. scripts/example_report.sh refuses the simulated run; with
#    KOPT_EXAMPLE_ALLOW_SIMULATED=1 it still refuses a folder under docs/, and
#    fills WORK_DIR/example: the report, the comparison chart SVGs, summary.json
#    with the accuracy record, and a 1280 px wide PNG preview;
# 4. the example's report is laid out at 1280 and 800 px (layout_check.py):
#    no horizontal scroll, the simulated warning, the accuracy table;
#    screenshots go to WORK_DIR/example-layout/ for a person to look at.
# Exit status: 0 pass, 1 fail, 77 skipped (no chromium or python3).
set -u

if [ $# -ne 4 ]; then
  echo "usage: $0 KOPT FAKE_WORKER SOURCE_DIR WORK_DIR" >&2
  exit 2
fi
kopt=$1 fake=$2 src=$3 work=$4
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }
if [ -z "${CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  echo "SKIP: chromium is not installed (apt-get install chromium): no preview can be rendered"
  exit 77
fi

fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work"

# 1. A fake-worker run of the SGEMM template.
"$kopt" optimize --spec "$src/templates/sgemm/sgemm.json" --arch sm_90 --budget evals=6 --top 2 \
    --retime-rounds 1 --shape-classes off --results-dir "$work/results" --cache-dir "$work/cache" \
    --worker-command "$fake" >"$work/optimize.out" 2>"$work/optimize.err" ||
  fail "kopt optimize with the fake worker failed: $(tail -n 5 "$work/optimize.err")"
run=$work/results/run-001
grep -q "simulated (fake worker): the timings are made up" "$work/optimize.err" ||
  fail "kopt optimize's progress does not say the timings are made up: $(tail -n 3 "$work/optimize.err")"
# Every progress line with a ratio says it.
if grep -E '^\[[0-9]+(/[0-9]+)?\] .*x (cuBLAS|ref)' "$work/optimize.err" | grep -vq "simulated (fake worker)"; then
  fail "a progress line shows a ratio without saying the timings are made up"
fi

# 2. kopt report, in place and with --out.
rm -f "$run/report.html" "$run/heatmap.svg"
"$kopt" report "$run" >"$work/report.out" 2>"$work/report.err" || fail "kopt report failed: $(cat "$work/report.err")"
[ -s "$run/report.html" ] && [ -s "$run/heatmap.svg" ] || fail "kopt report wrote no report.html/heatmap.svg into $run"
[ "$(cat "$work/report.out")" = "$run/report.html" ] || fail "kopt report printed $(cat "$work/report.out"), not the report's path"
grep -q "simulated (fake worker): the timings are made up" "$work/report.err" ||
  fail "kopt report does not say the run is simulated: $(cat "$work/report.err")"
grep -q 'id="simulated"' "$run/report.html" || fail "report.html does not say the timings are made up"
grep -q 'id="accuracy-v0"' "$run/report.html" || fail "report.html has no accuracy table"
before=$(cd "$run" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
"$kopt" report "$run" --out "$work/elsewhere/r.html" --quiet >/dev/null 2>"$work/report-out.err" ||
  fail "kopt report --out failed: $(cat "$work/report-out.err")"
[ -s "$work/elsewhere/r.html" ] && [ -s "$work/elsewhere/heatmap.svg" ] || fail "--out wrote no report or heatmap"
[ ! -s "$work/report-out.err" ] || fail "--quiet printed: $(cat "$work/report-out.err")"
after=$(cd "$run" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
[ "$before" = "$after" ] || fail "kopt report --out changed the run folder: $(diff <(echo "$before") <(echo "$after"))"
python3 - "$run/summary.json" <<'PY' || fail "summary.json has no accuracy record"
import json, sys
s = json.load(open(sys.argv[1]))
acc = s.get("accuracy")
assert acc and acc["kernels"] and acc.get("cublas_index"), acc
case = acc["kernels"][0]["cases"][0]
assert case["rel_error_max"] > 0 and case["cublas_rel_error_max"] > 0, case
assert s["gpu"].get("simulated") is True, s["gpu"]
PY

# 3. The example script: refused for a simulated run, then into WORK_DIR/example.
if KOPT="$kopt" "$src/scripts/example_report.sh" "$run" "$work/refused" >/dev/null 2>"$work/refused.err"; then
  fail "example_report.sh took a run made with the fake worker"
fi
grep -q "fake worker" "$work/refused.err" || fail "example_report.sh's refusal does not say why: $(cat "$work/refused.err")"
[ ! -e "$work/refused" ] || fail "the refused example wrote $work/refused"
# Not into docs/ even with the override (a folder of docs/ that does not
# exist, so that nothing committed is at risk if the refusal is broken).
never=$src/docs/example-run/never-written-by-example-report-test
if KOPT="$kopt" KOPT_EXAMPLE_ALLOW_SIMULATED=1 "$src/scripts/example_report.sh" "$run" "$never" \
     >/dev/null 2>"$work/refused-docs.err"; then
  rm -rf "$never"
  fail "example_report.sh wrote a simulated run into docs/"
fi
grep -q "never written into" "$work/refused-docs.err" ||
  fail "example_report.sh's refusal of docs/ does not say why: $(cat "$work/refused-docs.err")"
[ ! -e "$never" ] || { rm -rf "$never"; fail "the refused example wrote $never"; }
KOPT="$kopt" KOPT_EXAMPLE_ALLOW_SIMULATED=1 "$src/scripts/example_report.sh" "$run" "$work/example" \
    >"$work/example.out" 2>&1 || fail "example_report.sh failed: $(tail -n 20 "$work/example.out")"
for f in report.html compare-classes.svg compare-shapes.svg summary.json report.png; do
  [ -s "$work/example/$f" ] || fail "example_report.sh wrote no $f"
done
for f in heatmap.svg progress.svg; do  # in report.html; as files they would double a long run's folder
  [ ! -e "$work/example/$f" ] || fail "example_report.sh wrote $f beside report.html"
done
python3 - "$work/example" <<'PY' || fail "the example's files are not what they should be"
import struct, sys, xml.dom.minidom
d = sys.argv[1]
with open(d + "/report.png", "rb") as f:
    head = f.read(24)
assert head[:8] == b"\x89PNG\r\n\x1a\n", "report.png is no PNG"
w, h = struct.unpack(">II", head[16:24])
assert (w, h) == (1280, 1800), "report.png is %dx%d" % (w, h)
for name in ("compare-classes.svg", "compare-shapes.svg"):
    xml.dom.minidom.parse(d + "/" + name)  # well-formed SVG files
PY
echo "example: $(tr '\n' ' ' <"$work/example.out")"

# 4. The layout of the example's report at 1280 and 800 px.
python3 "$src/tests/report/layout_check.py" "$work/example/report.html" "$work/example-layout" \
    --expect-simulated --expect-accuracy --expect-param-labels || fail "the example's report does not lay out"
echo "OK: kopt report and scripts/example_report.sh on a fake-worker run; screenshots in $work/example-layout"
