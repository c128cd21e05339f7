#!/usr/bin/env bash
# Fills docs/example-run/ (or DEST) with a run's report, small enough to commit.
#
#   scripts/example_report.sh RUN_DIR [DEST]
#
# RUN_DIR is a run folder of `kopt optimize` made on a GPU (e.g. copied from
# the GPU machine); DEST defaults to docs/example-run beside this script. The
# report is drawn again by this checkout's kopt (`kopt report RUN_DIR --out`,
# which leaves RUN_DIR alone), then DEST gets:
#   report.html          the self-contained report (opens from disk, no network),
#                        with every chart, the heatmap and the progress chart
#                        included (a long run's heatmap and progress chart are
#                        hundreds of KiB each: not written again as files)
#   compare-classes.svg, compare-shapes.svg
#                        the report's charts against cuBLAS as files of their
#                        own (a README on GitHub can show an SVG, not the
#                        report's HTML)
#   summary.json         the run's summary (the record the report reads)
#   report.png           a preview: the top of the report at 1280 px wide,
#                        KOPT_EXAMPLE_PNG_HEIGHT px high (default 1800),
#                        rendered with headless Chromium
# Files of DEST not in this list are left alone (its README.md). Nothing is
# written to DEST unless every step worked.
#
# Refused (exit 1): a run made with the fake worker (summary.json
# gpu.simulated: its timings are made up) unless KOPT_EXAMPLE_ALLOW_SIMULATED=1,
# and even then into any folder under this checkout's docs/ (the test of this
# script sets it and writes into the build folder); files larger together
# than KOPT_EXAMPLE_MAX_KB (default 1536 KiB); a file holding RUN_DIR's
# absolute path (say where the run was made, not the machine's folders).
#
# Environment: KOPT (the kopt to use; default build/tool/kopt beside this
# script, else kopt on PATH), CHROMIUM (the browser; default chromium, then
# chromium-browser on PATH), python3 (standard library only).
# Exit status: 0 done, 1 refused or failed, 2 bad usage, 3 a tool is missing.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 RUN_DIR [DEST]   (DEST defaults to docs/example-run)" >&2
  exit 2
fi
run_dir=$1
dest=${2:-$root/docs/example-run}
max_kb=${KOPT_EXAMPLE_MAX_KB:-1536}
png_height=${KOPT_EXAMPLE_PNG_HEIGHT:-1800}

kopt=${KOPT:-}
if [ -z "$kopt" ]; then
  if [ -x "$root/build/tool/kopt" ]; then kopt=$root/build/tool/kopt; else kopt=$(command -v kopt || true); fi
fi
if [ -z "$kopt" ] || [ ! -x "$kopt" ]; then
  echo "$0: no kopt: build it (scripts/quickstart.sh) or set KOPT=/path/to/kopt" >&2
  exit 3
fi
browser=${CHROMIUM:-}
if [ -z "$browser" ]; then
  for b in chromium chromium-browser; do
    if command -v "$b" >/dev/null 2>&1; then browser=$(command -v "$b"); break; fi
  done
fi
if [ -z "$browser" ]; then
  echo "$0: chromium is needed for the preview (apt-get install chromium), or set CHROMIUM=/path" >&2
  exit 3
fi
command -v python3 >/dev/null 2>&1 || { echo "$0: python3 is needed" >&2; exit 3; }

if [ ! -f "$run_dir/summary.json" ]; then
  echo "$0: $run_dir/summary.json is missing: pass the folder of a finished run (results/run-NNN)" >&2
  exit 1
fi
if python3 -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1])).get("gpu", {}).get("simulated") is True else 1)' \
     "$run_dir/summary.json"; then
  if [ "${KOPT_EXAMPLE_ALLOW_SIMULATED:-0}" != 1 ]; then
    echo "$0: $run_dir was made with the fake worker (summary.json gpu.simulated): its timings are made up;" \
         "the example must be a run on a GPU (KOPT_EXAMPLE_ALLOW_SIMULATED=1 overrides, for tests, into a folder" \
         "outside docs/)" >&2
    exit 1
  fi
  # Never into docs/: the committed example is a real run.
  if python3 -c 'import os, sys; d, docs = (os.path.realpath(p) for p in sys.argv[1:]); sys.exit(0 if os.path.commonpath([d, docs]) == docs else 1)' \
       "$dest" "$root/docs"; then
    echo "$0: $run_dir was made with the fake worker (summary.json gpu.simulated): its timings are made up;" \
         "it is never written into $root/docs (KOPT_EXAMPLE_ALLOW_SIMULATED=1 is for a folder outside it)" >&2
    exit 1
  fi
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/kopt-example-XXXXXX")
trap 'rm -rf "$work"' EXIT
out=$work/out
mkdir -p "$out"

"$kopt" report "$run_dir" --out "$out/report.html" --quiet >/dev/null
rm -f "$out/heatmap.svg"  # it is in report.html
cp "$run_dir/summary.json" "$out/summary.json"

# The charts as SVG files of their own: the report's inline <svg> elements
# (each is a complete SVG document with its xmlns), by their class.
python3 - "$out" <<'PY'
import re, sys
out = sys.argv[1]
html = open(out + "/report.html", encoding="utf-8").read()
want = {"kopt-compare by-class": "compare-classes.svg", "kopt-compare by-shape": "compare-shapes.svg"}
for m in re.finditer(r'<svg xmlns="http://www.w3.org/2000/svg"[^>]*class="([^"]+)"[^>]*>.*?</svg>', html, re.S):
    name = want.pop(m.group(1), None)
    if name:
        with open(out + "/" + name, "w", encoding="utf-8") as f:
            f.write('<?xml version="1.0" encoding="UTF-8"?>\n' + m.group(0) + "\n")
if want:
    sys.exit("the report has no chart of class %s" % ", ".join(sorted(want)))
PY

# The preview: the top of the page at 1280 px.
profile=$work/profile
url=$(python3 -c 'import pathlib, sys; print(pathlib.Path(sys.argv[1]).resolve().as_uri())' "$out/report.html")
if ! timeout 180 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars \
       --no-first-run --no-default-browser-check --disable-extensions --user-data-dir="$profile" \
       --window-size="1280,$png_height" --screenshot="$out/report.png" "$url" >"$work/chromium.log" 2>&1 ||
   [ ! -s "$out/report.png" ]; then
  echo "$0: chromium wrote no preview; its output:" >&2
  tail -n 20 "$work/chromium.log" >&2
  exit 1
fi

# Small enough to commit, and nothing that names the machine's folders.
python3 - "$out" "$max_kb" "$(cd "$run_dir" && pwd)" <<'PY'
import os, sys
out, max_kb, run_abs = sys.argv[1], int(sys.argv[2]), sys.argv[3]
total, problems = 0, []
for name in sorted(os.listdir(out)):
    size = os.path.getsize(os.path.join(out, name))
    total += size
    print("  %-20s %8.1f KiB" % (name, size / 1024.0))
    if name.endswith((".html", ".svg", ".json")):
        with open(os.path.join(out, name), encoding="utf-8", errors="replace") as f:
            if run_abs in f.read():
                problems.append("%s holds the run folder's absolute path %s" % (name, run_abs))
print("  %-20s %8.1f KiB (limit %d KiB, KOPT_EXAMPLE_MAX_KB)" % ("total", total / 1024.0, max_kb))
if total > max_kb * 1024:
    problems.append("%.0f KiB is too large to commit (limit %d KiB): take a run with fewer attempts"
                    % (total / 1024.0, max_kb))
if problems:
    sys.exit("refused: " + "; ".join(problems))
PY

mkdir -p "$dest"
for f in "$out"/*; do
  cp "$f" "$dest/$(basename "$f").tmp.$$"
  mv -f "$dest/$(basename "$f").tmp.$$" "$dest/$(basename "$f")"
done
echo "$0: wrote $(ls "$out" | wc -l) files into $dest from $run_dir"
