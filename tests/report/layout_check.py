#!/usr/bin/env python3
"""Lays report.html out in headless Chromium at several widths and checks it.

    layout_check.py REPORT_HTML OUT_DIR [--widths 1280,800] [--expect-dispatch-code]
                    [--expect-accuracy] [--expect-param-labels] [--expect-simulated]

For each width, a copy of the page with a small measuring script added at the
end of <body> is loaded with `chromium --headless --dump-dom` (a window of that
width; the page's own script is left alone); the script writes what it
measured into the DOM, as JSON, and this program checks it:

  - no horizontal scroll: the page's scrollWidth equals its clientWidth, no
    table is wider than the box it sits in, and no element or text other than
    the heatmap (which scrolls in its own box) reaches past the right edge;
  - the dispatch tree (#dispatch-code) is a preformatted block of several
    lines, drawn one line per line (at least 3/4 of a line's height each);
  - the comparison charts (per class and per shape) share one axis, and it
    ends within 2.5x of the longest latency drawn (the axis fits the data);
  - the heatmap's row labels are not cut, and (--expect-param-labels) its
    candidates are labelled by parameter columns (at least 3) whose values
    tell every row apart;
  - (--expect-accuracy) the accuracy table is there with numbers;
  - (--expect-simulated) the page says that the timings are made up.

Then it takes a full-page PNG screenshot at each width into
OUT_DIR/report-<width>.png, for a person to look at.

Exit status: 0 pass, 1 fail, 2 bad usage, 77 skipped (CTest's skip code) when
Chromium is not installed. CHROMIUM=/path overrides the browser looked up on
PATH (chromium, then chromium-browser). Python 3 standard library only.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

MEASURE = r"""
<script>
(function () {
  function box(e) { var r = e.getBoundingClientRect(); return {left: r.left, right: r.right, width: r.width, height: r.height}; }
  // Inside a box that scrolls or clips on its own (the heatmap's, a <pre>):
  // such content does not make the page scroll.
  function inScrollBox(e) {
    for (var p = e.parentElement; p && p !== document.body; p = p.parentElement)
      if (getComputedStyle(p).overflowX !== 'visible') return true;
    return false;
  }
  function name(e) {
    return e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
           (e.className && typeof e.className === 'string' ? '.' + e.className.trim().replace(/\s+/g, '.') : '');
  }
  var de = document.documentElement, out = {};
  out.scrollWidth = de.scrollWidth;
  out.clientWidth = de.clientWidth;
  out.scrollHeight = de.scrollHeight;
  out.tables = [];
  Array.prototype.forEach.call(document.querySelectorAll('table'), function (t) {
    var holder = t.parentElement;
    var scrolled = [];
    for (var p = t.parentElement; p && p !== de; p = p.parentElement)
      if (p.scrollWidth > p.clientWidth + 1 && getComputedStyle(p).overflowX !== 'visible') scrolled.push(name(p));
    out.tables.push({name: name(t), width: box(t).width, holder: holder.clientWidth, right: box(t).right,
                     scrolledBy: scrolled, rows: t.rows.length});
  });
  out.outside = [];
  Array.prototype.forEach.call(document.body.querySelectorAll('*'), function (e) {
    if (inScrollBox(e) || e.closest('svg') && !e.matches('svg')) return;
    var r = box(e);
    if (r.width > 0 && r.right > de.clientWidth + 1) out.outside.push(name(e) + ' right=' + Math.round(r.right));
  });
  // Text that runs past the right edge (a long word in a box of its own
  // width: no element box shows it).
  out.textOutside = [];
  var walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (var t = walk.nextNode(); t; t = walk.nextNode()) {
    var el = t.parentElement;
    if (!el || !t.textContent.trim() || el.closest('svg') || el.closest('script, style') || inScrollBox(t)) continue;
    var range = document.createRange();
    range.selectNodeContents(t);
    var rr = range.getBoundingClientRect();
    if (rr.width > 0 && rr.right > de.clientWidth + 1)
      out.textOutside.push(name(el) + ' "' + t.textContent.trim().slice(0, 40) + '" right=' + Math.round(rr.right));
  }
  var code = document.getElementById('dispatch-code');
  if (code) {
    var lh = parseFloat(getComputedStyle(code).lineHeight) || 16;
    out.dispatch = {lines: code.textContent.split('\n').filter(function (l) { return l.trim(); }).length,
                    height: code.querySelector('code').getBoundingClientRect().height, lineHeight: lh,
                    whiteSpace: getComputedStyle(code).whiteSpace};
  }
  out.charts = [];
  Array.prototype.forEach.call(document.querySelectorAll('svg.kopt-compare'), function (s) {
    var ms = [], plot = 0;
    Array.prototype.forEach.call(s.querySelectorAll('rect.bar'), function (b) {
      ms.push(parseFloat(b.getAttribute('data-ms')));
      plot = Math.max(plot, parseFloat(b.getAttribute('width')));
    });
    out.charts.push({cls: s.getAttribute('class'), axis: s.getAttribute('data-axis'),
                     min: parseFloat(s.getAttribute('data-axis-min')), max: parseFloat(s.getAttribute('data-axis-max')),
                     maxMs: ms.length ? Math.max.apply(null, ms) : 0, bars: ms.length, longestBar: plot,
                     ticks: Array.prototype.map.call(s.querySelectorAll('text.tick'), function (t) { return t.textContent; }),
                     shown: box(s).width, drawn: parseFloat(s.getAttribute('width'))});
  });
  var heat = document.querySelector('svg.kopt-heatmap');
  if (heat) {
    var h = {labels: [], headers: [], rows: [], fixed: ''};
    Array.prototype.forEach.call(heat.querySelectorAll('text.label, text.label-text, text.param, text.param-header'), function (t) {
      var bb = t.getBBox();
      h.labels.push({text: t.textContent.replace(/^.*<\/title>/, ''), cls: t.getAttribute('class'), x: bb.x, right: bb.x + bb.width});
    });
    Array.prototype.forEach.call(heat.querySelectorAll('text.param-header'), function (t) { h.headers.push(t.textContent); });
    var firstCell = heat.querySelector('rect.cell, rect.rejected');
    h.gridLeft = firstCell ? parseFloat(firstCell.getAttribute('x')) : 0;
    Array.prototype.forEach.call(heat.querySelectorAll('g.row.ok'), function (g) {
      var vals = Array.prototype.map.call(g.querySelectorAll('text.param'), function (t) { return t.textContent; });
      if (vals.length) h.rows.push(vals.join(' '));
    });
    var f = heat.querySelector('text.fixed-params');
    if (f) h.fixed = f.lastChild ? f.lastChild.textContent : f.textContent;
    out.heatmap = h;
  }
  var acc = document.querySelectorAll('#accuracy table tbody tr');
  out.accuracyRows = acc.length;
  out.accuracyNumbers = document.querySelectorAll('#accuracy td.num[data-v]:not([data-v=""])').length;
  out.simulated = !!document.getElementById('simulated');
  var pre = document.createElement('pre');
  pre.id = 'kopt-layout-result';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


def find_browser():
    b = os.environ.get("CHROMIUM")
    if b:
        return b
    for name in ("chromium", "chromium-browser"):
        p = shutil.which(name)
        if p:
            return p
    return None


def chromium(browser, profile, width, height, *args):
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
           "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--user-data-dir=" + profile,
           "--window-size=%d,%d" % (width, height)] + list(args)
    return subprocess.run(cmd, capture_output=True, timeout=180)


def measure(browser, profile, page, width):
    p = chromium(browser, profile, width, 1200, "--virtual-time-budget=5000", "--dump-dom", page)
    m = re.search(rb'<pre id="kopt-layout-result">(.*?)</pre>', p.stdout, re.S)
    if not m:
        raise RuntimeError("chromium (exit %d) printed no measurement at %d px; stderr: %s"
                           % (p.returncode, width, p.stderr.decode(errors="replace")[-1500:]))
    text = m.group(1).decode()
    for a, b in (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&#39;", "'"), ("&amp;", "&")):
        text = text.replace(a, b)
    return json.loads(text)


def check(m, width, args):
    fails = []
    if m["scrollWidth"] > m["clientWidth"]:
        fails.append("the page scrolls sideways: scrollWidth %d > clientWidth %d" % (m["scrollWidth"], m["clientWidth"]))
    for t in m["tables"]:
        if t["width"] > t["holder"] + 1:
            fails.append("table %s is %d px wide in a box of %d px" % (t["name"], t["width"], t["holder"]))
        if t["scrolledBy"]:
            fails.append("table %s scrolls sideways in %s" % (t["name"], ", ".join(t["scrolledBy"])))
        if t["right"] > m["clientWidth"] + 1:
            fails.append("table %s reaches x=%d past the page's %d px" % (t["name"], t["right"], m["clientWidth"]))
    if m["outside"]:
        fails.append("%d element(s) reach past the right edge: %s" % (len(m["outside"]), "; ".join(m["outside"][:8])))
    if m["textOutside"]:
        fails.append("%d text(s) run past the right edge: %s" % (len(m["textOutside"]), "; ".join(m["textOutside"][:8])))
    if args.expect_dispatch_code:
        d = m.get("dispatch")
        if not d:
            fails.append("no #dispatch-code block")
        else:
            if d["lines"] < 2:
                fails.append("the dispatch code has %d line(s) of text" % d["lines"])
            # Drawn one line per line (a squashed block is about one line high).
            if d["height"] < 0.75 * d["lineHeight"] * d["lines"]:
                fails.append("the dispatch code is drawn %.0f px high for %d lines (line height %.0f): squashed"
                             % (d["height"], d["lines"], d["lineHeight"]))
            if not d["whiteSpace"].startswith("pre"):
                fails.append("the dispatch code's white-space is %s" % d["whiteSpace"])
    charts = m["charts"]
    if len(charts) != 2:
        fails.append("%d comparison charts, expected 2" % len(charts))
    else:
        if (charts[0]["axis"], charts[0]["min"], charts[0]["max"]) != (charts[1]["axis"], charts[1]["min"], charts[1]["max"]):
            fails.append("the per-class and per-shape charts have different axes: %s" % charts)
        if abs(charts[0]["drawn"] - charts[1]["drawn"]) > 0.5:
            fails.append("the two charts are drawn %s and %s px wide: they would scale differently"
                         % (charts[0]["drawn"], charts[1]["drawn"]))
        for c in charts:
            if c["bars"] == 0:
                fails.append("%s has no bars" % c["cls"])
                continue
            if c["max"] > 2.5 * c["maxMs"]:
                fails.append("%s: the axis runs to %g ms for a longest latency of %g ms" % (c["cls"], c["max"], c["maxMs"]))
            if c["shown"] > m["clientWidth"]:
                fails.append("%s is shown %d px wide in a %d px page" % (c["cls"], c["shown"], m["clientWidth"]))
            if len(c["ticks"]) < 3:
                fails.append("%s has %d axis labels" % (c["cls"], len(c["ticks"])))
    h = m.get("heatmap")
    if not h:
        fails.append("no heatmap")
    else:
        for lab in h["labels"]:
            if "\u2026" in lab["text"] and lab["cls"] != "label-text":
                fails.append("heatmap label cut: %r" % lab["text"])
            if lab["x"] < -0.5 or lab["right"] > h["gridLeft"] + 0.5:
                fails.append("heatmap label %r is drawn from x=%.0f to %.0f, outside its area (0..%.0f)"
                             % (lab["text"], lab["x"], lab["right"], h["gridLeft"]))
        if args.expect_param_labels:
            if len(h["headers"]) < 3:
                fails.append("heatmap: %d parameter columns %s" % (len(h["headers"]), h["headers"]))
            if len(h["rows"]) < 5:
                fails.append("heatmap: only %d rows labelled by parameters" % len(h["rows"]))
            elif len(set(h["rows"])) != len(h["rows"]):
                fails.append("heatmap: rows with the same parameter labels: %s" % sorted(h["rows"]))
    if args.expect_accuracy and (m["accuracyRows"] < 2 or m["accuracyNumbers"] < 4):
        fails.append("the accuracy table has %d rows and %d numbers" % (m["accuracyRows"], m["accuracyNumbers"]))
    if args.expect_simulated and not m["simulated"]:
        fails.append("the page does not say that the timings are simulated")
    return ["%d px: %s" % (width, f) for f in fails]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("html")
    ap.add_argument("out_dir")
    ap.add_argument("--widths", default="1280,800")
    ap.add_argument("--expect-dispatch-code", action="store_true")
    ap.add_argument("--expect-accuracy", action="store_true")
    ap.add_argument("--expect-param-labels", action="store_true")
    ap.add_argument("--expect-simulated", action="store_true")
    args = ap.parse_args()
    browser = find_browser()
    if not browser:
        print("SKIP: chromium is not installed (apt-get install chromium), so report.html cannot be laid out")
        return 77
    if not os.path.isfile(args.html):
        print("FAIL: %s does not exist" % args.html, file=sys.stderr)
        return 1
    os.makedirs(args.out_dir, exist_ok=True)
    with open(args.html, encoding="utf-8") as f:
        page = f.read()
    if "</body>" not in page:
        print("FAIL: %s has no </body>" % args.html, file=sys.stderr)
        return 1
    work = tempfile.mkdtemp(prefix="kopt-layout-")
    try:
        probe = os.path.join(work, "report-measure.html")
        with open(probe, "w", encoding="utf-8") as f:
            f.write(page.replace("</body>", MEASURE + "</body>", 1))
        fails = []
        for width in [int(w) for w in args.widths.split(",")]:
            profile = tempfile.mkdtemp(prefix="profile-", dir=work)
            m = measure(browser, profile, "file://" + probe, width)
            fails += check(m, width, args)
            png = os.path.abspath(os.path.join(args.out_dir, "report-%d.png" % width))
            height = max(600, min(int(m["scrollHeight"]) + 16, 16000))
            p = chromium(browser, profile, width, height, "--screenshot=" + png, "file://" + os.path.abspath(args.html))
            if p.returncode != 0 or not os.path.isfile(png):
                fails.append("%d px: no screenshot (chromium exit %d)" % (width, p.returncode))
            print("%d px: page %dx%d, %d tables, %d charts; screenshot %s"
                  % (width, m["clientWidth"], m["scrollHeight"], len(m["tables"]), len(m["charts"]), png))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if fails:
        for f in fails:
            print("FAIL: " + f, file=sys.stderr)
        return 1
    print("OK: %s has no horizontal scroll at %s px, and its dispatch code, charts' axes and heatmap labels hold"
          % (args.html, args.widths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
