#!/usr/bin/env bash
# Renders a report.html with headless Chromium and checks the screenshot.
#
#   tests/report/screenshot_check.sh REPORT_HTML OUT_PNG
#
# Takes a 1280x3400 screenshot of REPORT_HTML (opened from disk, no network)
# into OUT_PNG, then verifies with python3 (standard library only: the PNG is
# decoded with zlib) that it has the expected size, is not blank (many
# distinct colours), and shows
#   - the charts of tuned against cuBLAS (per shape class and per shape): flat
#     bars in the tuned green and the cuBLAS purple (report/charts.cpp);
#   - the best-so-far curve: its dark blue step line;
#   - the heatmap: flat areas in its "faster" (blue) and "slower" (red)
#     colours and the grey of rejected rows.
#
# Exit status: 0 pass, 1 fail, 2 bad usage, 77 skipped (CTest's skip code)
# when Chromium (or python3) is not installed. CHROMIUM=/path overrides the
# browser looked up on PATH (chromium, then chromium-browser).
set -u

WIDTH=1280
HEIGHT=3400

if [ $# -ne 2 ]; then
  echo "usage: $0 REPORT_HTML OUT_PNG" >&2
  exit 2
fi
html=$1
png=$2

browser=${CHROMIUM:-}
if [ -z "$browser" ]; then
  for b in chromium chromium-browser; do
    if command -v "$b" >/dev/null 2>&1; then
      browser=$(command -v "$b")
      break
    fi
  done
fi
if [ -z "$browser" ]; then
  echo "SKIP: chromium is not installed (apt-get install chromium), so report.html cannot be rendered"
  exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
  echo "SKIP: python3 is not installed, so the screenshot cannot be checked"
  exit 77
fi
if [ ! -f "$html" ]; then
  echo "FAIL: $html does not exist" >&2
  exit 1
fi

url=$(python3 -c 'import pathlib, sys; print(pathlib.Path(sys.argv[1]).resolve().as_uri())' "$html")
mkdir -p "$(dirname "$png")"
png_abs=$(python3 -c 'import os, sys; print(os.path.abspath(sys.argv[1]))' "$png")
rm -f "$png_abs"

# A throwaway profile: no state from (or to) the user's browser, and it works
# when HOME is not writable.
profile=$(mktemp -d "${TMPDIR:-/tmp}/kopt-chromium-XXXXXX")
log="$profile.log"
cleanup() { rm -rf "$profile" "$log"; }
trap cleanup EXIT

timeout 180 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
  --hide-scrollbars --no-first-run --no-default-browser-check --disable-extensions \
  --user-data-dir="$profile" --window-size="$WIDTH,$HEIGHT" \
  --screenshot="$png_abs" "$url" >"$log" 2>&1
rc=$?
if [ $rc -ne 0 ] || [ ! -s "$png_abs" ]; then
  echo "FAIL: $browser exited with status $rc and wrote no screenshot to $png_abs; its output:" >&2
  tail -n 30 "$log" >&2
  exit 1
fi

python3 - "$png_abs" "$WIDTH" "$HEIGHT" <<'PY'
import collections
import struct
import sys
import zlib

path, want_w, want_h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


def fail(msg):
    print("FAIL: %s: %s" % (path, msg), file=sys.stderr)
    sys.exit(1)


def read_png(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail("not a PNG file")
    pos, idat, ihdr = 8, [], None
    while pos + 8 <= len(data):
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if ctype == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", chunk)
        elif ctype == b"IDAT":
            idat.append(chunk)
        elif ctype == b"IEND":
            break
        pos += 12 + length
    if ihdr is None:
        fail("no IHDR chunk")
    width, height, depth, colour, _, _, interlace = ihdr
    if depth != 8 or colour not in (2, 6) or interlace != 0:
        fail("unsupported PNG format (bit depth %d, colour type %d, interlace %d)"
             % (depth, colour, interlace))
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    if len(raw) != height * (stride + 1):
        fail("image data has %d bytes, expected %d" % (len(raw), height * (stride + 1)))
    out = bytearray(height * stride)
    prev = bytearray(stride)
    for y in range(height):
        base = y * (stride + 1)
        ft = raw[base]
        line = bytearray(raw[base + 1:base + 1 + stride])
        if ft == 1:  # Sub
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif ft == 2:  # Up
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif ft == 3:  # Average
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif ft == 4:  # Paeth
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        elif ft != 0:
            fail("bad filter type %d on row %d" % (ft, y))
        out[y * stride:(y + 1) * stride] = line
        prev = line
    return width, height, bpp, out


width, height, bpp, px = read_png(path)
if (width, height) != (want_w, want_h):
    fail("size is %dx%d, expected %dx%d" % (width, height, want_w, want_h))

counts = collections.Counter(zip(px[0::bpp], px[1::bpp], px[2::bpp]))
total = width * height
white = sum(n for c, n in counts.items() if min(c) >= 250)
if len(counts) < 64:
    fail("only %d distinct colours: the page looks blank or unstyled" % len(counts))
if total - white < total // 50:
    fail("%.1f%% of the pixels are white: the page looks blank" % (100.0 * white / total))

# The heatmap's diverging ramp (tool/src/report/report.cpp, kRamp): index 0 is
# the slowest (red), 8 the fastest (blue), 4 is 1x. Sample it finely and
# classify the screenshot's colours that lie on it.
ramp = [(0xb2, 0x18, 0x2b), (0xd6, 0x60, 0x4d), (0xf4, 0xa5, 0x82), (0xfd, 0xdb, 0xc7),
        (0xf7, 0xf7, 0xf7), (0xd1, 0xe5, 0xf0), (0x92, 0xc5, 0xde), (0x43, 0x93, 0xc3),
        (0x21, 0x66, 0xac)]
samples = []
for k in range(801):
    x = k / 800.0 * (len(ramp) - 1)
    i = min(int(x), len(ramp) - 2)
    f = x - i
    col = tuple(int(round(ramp[i][j] + (ramp[i + 1][j] - ramp[i][j]) * f)) for j in range(3))
    samples.append((col, x / (len(ramp) - 1) * 2 - 1))  # t in [-1, 1]


def on_ramp(c, tol=3):
    for s, t in samples:
        if abs(s[0] - c[0]) <= tol and abs(s[1] - c[1]) <= tol and abs(s[2] - c[2]) <= tol:
            return t
    return None


def near(c, ref, tol=3):
    return all(abs(c[j] - ref[j]) <= tol for j in range(3))


fast = slow = grey = tuned = cublas = curve = 0
for c, n in counts.items():
    if n < 20:  # anti-aliased text edges, not flat cells
        continue
    # The charts (report/charts.cpp: kTunedFill, kBaselineFill, the step line).
    if near(c, (0x1b, 0x78, 0x37)):
        tuned += n
        continue
    if near(c, (0x76, 0x2a, 0x83)):
        cublas += n
        continue
    if near(c, (0x08, 0x51, 0x9c)):
        curve += n
        continue
    if all(abs(c[j] - 0xbd) <= 3 for j in range(3)):
        grey += n
        continue
    t = on_ramp(c)
    if t is None:
        continue
    if t >= 0.35:
        fast += n
    elif t <= -0.35:
        slow += n

problems = []
if fast < 2000:
    problems.append("only %d px in the heatmap's 'faster' colours" % fast)
if slow < 500:
    problems.append("only %d px in the heatmap's 'slower' colours" % slow)
if grey < 500:
    problems.append("only %d px in the grey of rejected rows" % grey)
if problems:
    fail("the heatmap does not show: " + "; ".join(problems))
if tuned < 3000:
    problems.append("only %d px in the tuned bars' green" % tuned)
if cublas < 3000:
    problems.append("only %d px in the cuBLAS bars' purple" % cublas)
if curve < 400:
    problems.append("only %d px in the best-so-far line's blue" % curve)
if problems:
    fail("the charts do not show: " + "; ".join(problems))
print("OK: %s is %dx%d, %d distinct colours, %.1f%% non-white; heatmap: %d px faster, "
      "%d px slower, %d px rejected grey; charts: %d px tuned, %d px cuBLAS, %d px best-so-far line"
      % (path, width, height, len(counts), 100.0 * (total - white) / total, fast, slow, grey,
         tuned, cublas, curve))
PY
