#include "report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "util/error.h"
#include "util/fs.h"
#include "util/json_read.h"
#include "util/json.h"
#include "report/charts.h"
#include "report/text.h"

namespace kopt::report {

namespace stdfs = std::filesystem;
using nlohmann::json;
using model::Attempt;
using namespace text;

namespace {

std::string label_of(const Attempt& a) {
  std::string l = "#" + std::to_string(a.index);
  if (!a.label.empty()) l += " " + a.label;
  else if (a.kind != model::AttemptKind::candidate) l += std::string(" ") + model::attempt_kind_name(a.kind);
  return l;
}

// ---------------------------------------------------------------------------
// Speedups

// What the heatmap's speedups are over: the reference, or (when the
// reference was never timed) the initial kernel.
struct Base {
  const Attempt* ref = nullptr;      // the reference attempt, if any (reference mode)
  const Attempt* initial = nullptr;  // set: initial-kernel mode
};

// Base median / candidate median on case `name`. Reference mode: the
// reference timed with this attempt when it was, else the reference
// attempt's. Initial mode: the initial kernel's median.
std::optional<double> case_speedup(const Attempt& a, const std::string& name, const Base& base,
                                   double* ref_ms = nullptr, double* own_ms = nullptr) {
  for (const model::CaseResult& c : a.result.cases) {
    if (c.name != name || !c.latency || !finite_positive(c.latency->median_ms)) continue;
    std::optional<double> r;
    if (base.initial)
      r = model::case_median_ms(*base.initial, name);
    else if (c.reference_latency && finite_positive(c.reference_latency->median_ms))
      r = c.reference_latency->median_ms;
    else if (base.ref)
      r = model::case_median_ms(*base.ref, name);
    if (!r) return std::nullopt;
    if (ref_ms) *ref_ms = *r;
    if (own_ms) *own_ms = c.latency->median_ms;
    return *r / c.latency->median_ms;
  }
  return std::nullopt;
}

std::optional<double> geomean_speedup(const Attempt& a, const Base& base) {
  if (a.result.verdict != model::Verdict::ok || !a.result.geomean_ms ||
      !finite_positive(*a.result.geomean_ms))
    return std::nullopt;
  if (base.initial) {
    if (base.initial->result.geomean_ms && finite_positive(*base.initial->result.geomean_ms))
      return *base.initial->result.geomean_ms / *a.result.geomean_ms;
    return std::nullopt;
  }
  if (a.result.reference_geomean_ms && finite_positive(*a.result.reference_geomean_ms))
    return *a.result.reference_geomean_ms / *a.result.geomean_ms;
  if (base.ref && base.ref->result.geomean_ms && finite_positive(*base.ref->result.geomean_ms))
    return *base.ref->result.geomean_ms / *a.result.geomean_ms;
  return std::nullopt;
}

// Reference mode when any attempt has a speedup over the reference; else the
// first initial kernel that passed, when there is one.
Base base_for(const std::vector<Attempt>& history, const std::vector<std::string>& cases) {
  Base b;
  b.ref = model::first_ok(history, model::AttemptKind::reference);
  for (const Attempt& a : history) {
    if (a.result.verdict != model::Verdict::ok) continue;
    if (geomean_speedup(a, b)) return b;
    for (const std::string& c : cases)
      if (case_speedup(a, c, b)) return b;
  }
  for (const Attempt& a : history)
    if (a.kind == model::AttemptKind::initial && a.result.verdict == model::Verdict::ok && a.result.geomean_ms &&
        finite_positive(*a.result.geomean_ms)) {
      b.initial = &a;
      break;
    }
  return b;
}


// ---------------------------------------------------------------------------
// Colours: a diverging red (slower) - grey-white (1x) - blue (faster) scale
// (ColorBrewer RdBu, colour-blind safe).

struct Rgb { int r, g, b; };
constexpr Rgb kRamp[] = {{0xb2, 0x18, 0x2b}, {0xd6, 0x60, 0x4d}, {0xf4, 0xa5, 0x82},
                         {0xfd, 0xdb, 0xc7}, {0xf7, 0xf7, 0xf7}, {0xd1, 0xe5, 0xf0},
                         {0x92, 0xc5, 0xde}, {0x43, 0x93, 0xc3}, {0x21, 0x66, 0xac}};
constexpr int kRampN = sizeof kRamp / sizeof kRamp[0];
constexpr const char* kRejectedFill = "#bdbdbd";
constexpr const char* kNoDataFill = "#ffffff";

std::string hex(Rgb c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c.r, c.g, c.b);
  return buf;
}

// t in [-1, 1]: -1 slowest (red), 0 neutral, 1 fastest (blue).
Rgb ramp(double t) {
  t = std::clamp(t, -1.0, 1.0);
  const double x = (t + 1) / 2 * (kRampN - 1);
  const int i = std::min(static_cast<int>(x), kRampN - 2);
  const double f = x - i;
  auto mix = [&](int a, int b) { return static_cast<int>(std::lround(a + (b - a) * f)); };
  return {mix(kRamp[i].r, kRamp[i + 1].r), mix(kRamp[i].g, kRamp[i + 1].g),
          mix(kRamp[i].b, kRamp[i + 1].b)};
}

std::string pow2_label(int k) {
  if (k >= 0) return std::to_string(1LL << k) + "x";
  return "1/" + std::to_string(1LL << -k) + "x";
}


}  // namespace

// ---------------------------------------------------------------------------
// Heatmap

std::string heatmap_svg(const std::vector<Attempt>& history,
                        const std::vector<std::string>& performance_cases) {
  const Base ref = base_for(history, performance_cases);
  const std::string over = ref.initial ? "the initial kernel" : "the reference";
  const Attempt* best = model::best_attempt(history);
  const int n = static_cast<int>(history.size());
  const int m = static_cast<int>(performance_cases.size());

  // Colour range: symmetric in log2, from 1/2^L to 2^L (L = 1..6).
  double max_log = 0;
  for (const Attempt& a : history) {
    if (a.result.verdict != model::Verdict::ok) continue;
    for (const std::string& c : performance_cases)
      if (auto s = case_speedup(a, c, ref); s && finite_positive(*s))
        max_log = std::max(max_log, std::fabs(std::log2(*s)));
  }
  const int L = std::clamp(static_cast<int>(std::ceil(max_log - 1e-9)), 1, 6);

  // Geometry. Rows shrink with the history (down to 6 px); below 10 px the
  // per-row labels give way to index ticks every few rows.
  const int row_h = std::clamp(n > 0 ? 1200 / n : 18, 6, 18);
  const bool row_labels = row_h >= 10;
  const bool cell_text = row_h >= 14;
  const int gap = row_h >= 10 ? 1 : 0;

  size_t max_label = 4;
  for (const Attempt& a : history) max_label = std::max(max_label, length_chars(label_of(a)));
  max_label = std::min<size_t>(max_label, 40);
  // Widths assume ~7 px per character at 11 px (wide fonts such as DejaVu
  // Sans), ~7.6 px in bold.
  const int label_w = row_labels ? static_cast<int>(std::lround(18 + 7.6 * static_cast<double>(max_label))) : 56;

  size_t max_case = 4;
  for (const std::string& c : performance_cases) max_case = std::max(max_case, length_chars(c));
  const int col_w = std::clamp(static_cast<int>(std::lround(14 + 7.6 * static_cast<double>(max_case))), 56, 140);
  const size_t case_chars = static_cast<size_t>((col_w - 8) / 7.6);
  const int grid_w = std::max(m, 1) * col_w;
  const int right_w = row_labels ? 76 : 12;
  const int legend_w = 300;
  const int top = 98;  // title, legend, column headers
  const int width = std::max(label_w + grid_w + right_w, 24 + legend_w + 330);
  const int height = top + std::max(n, 1) * row_h + 28;
  const int x0 = label_w;

  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" << width
    << "\" height=\"" << height << "\" viewBox=\"0 0 " << width << " " << height
    << "\" font-family=\"" << esc(kFont) << "\" font-size=\"11\" role=\"img\" class=\"kopt-heatmap\" data-baseline=\""
    << (ref.initial ? "initial" : "reference") << "\">\n";
  o << "<title>Speedup over " << over << " per performance case: " << n << " attempts, " << m
    << " cases</title>\n";
  o << "<rect x=\"0\" y=\"0\" width=\"" << width << "\" height=\"" << height << "\" fill=\"#ffffff\"/>\n";
  o << "<text x=\"12\" y=\"20\" font-size=\"14\" font-weight=\"bold\" fill=\"#222222\">Speedup over "
    << over << ", per performance case</text>\n";

  // Legend: gradient bar with ticks at powers of two, plus the rejected and
  // no-data swatches.
  o << "<g class=\"legend\" transform=\"translate(12,32)\">\n";
  o << "<defs><linearGradient id=\"kopt-legend-gradient\" x1=\"0\" x2=\"1\" y1=\"0\" y2=\"0\">";
  for (int i = 0; i < kRampN; ++i)
    o << "<stop offset=\"" << fmt(static_cast<double>(i) / (kRampN - 1), "%.4f") << "\" stop-color=\""
      << hex(kRamp[i]) << "\"/>";
  o << "</linearGradient></defs>\n";
  o << "<text x=\"0\" y=\"9\" fill=\"#444444\">slower</text>"
    << "<text x=\"" << legend_w << "\" y=\"9\" text-anchor=\"end\" fill=\"#444444\">faster</text>\n";
  o << "<rect class=\"legend-bar\" x=\"0\" y=\"13\" width=\"" << legend_w
    << "\" height=\"12\" fill=\"url(#kopt-legend-gradient)\" stroke=\"#999999\" stroke-width=\"0.5\"/>\n";
  const int tick_step = (L + 2) / 3;  // at most ~7 labels
  for (int k = -L; k <= L; ++k) {
    const double x = legend_w * (static_cast<double>(k + L) / (2 * L));
    o << "<line x1=\"" << fmt(x, "%.1f") << "\" x2=\"" << fmt(x, "%.1f")
      << "\" y1=\"25\" y2=\"29\" stroke=\"#666666\"/>";
    if (k % tick_step == 0)
      o << "<text x=\"" << fmt(x, "%.1f") << "\" y=\"40\" text-anchor=\""
        << (k == -L ? "start" : (k == L ? "end" : "middle")) << "\" fill=\"#444444\">"
        << esc(pow2_label(k)) << "</text>";
    o << "\n";
  }
  const int sw = legend_w + 24;
  o << "<rect x=\"" << sw << "\" y=\"13\" width=\"16\" height=\"12\" fill=\"" << kRejectedFill
    << "\"/><text x=\"" << sw + 21 << "\" y=\"23\" fill=\"#444444\">rejected (verdict shown)</text>\n";
  o << "<rect x=\"" << sw + 170 << "\" y=\"13\" width=\"16\" height=\"12\" fill=\"" << kNoDataFill
    << "\" stroke=\"#bbbbbb\"/><text x=\"" << sw + 191 << "\" y=\"23\" fill=\"#444444\">no timing</text>\n";
  o << "</g>\n";

  // Column headers.
  o << "<g class=\"columns\">\n";
  for (int j = 0; j < m; ++j) {
    const std::string& c = performance_cases[static_cast<size_t>(j)];
    o << "<text class=\"column\" x=\"" << x0 + j * col_w + col_w / 2 << "\" y=\"" << top - 8
      << "\" text-anchor=\"middle\" font-weight=\"bold\" fill=\"#222222\"><title>" << esc(c) << "</title>"
      << esc(truncate(c, case_chars)) << "</text>\n";
  }
  if (m == 0)
    o << "<text x=\"" << x0 << "\" y=\"" << top - 8 << "\" fill=\"#666666\">(no performance cases)</text>\n";
  if (row_labels)
    o << "<text x=\"" << x0 + grid_w + 8 << "\" y=\"" << top - 8
      << "\" font-weight=\"bold\" fill=\"#222222\">geomean</text>\n";
  o << "</g>\n";

  // Rows.
  int tick_every = 1;
  for (int t : {1, 2, 5, 10, 20, 25, 50, 100, 200, 500, 1000}) {
    tick_every = t;
    if (t * row_h >= 14) break;
  }
  o << "<g class=\"rows\">\n";
  for (int i = 0; i < n; ++i) {
    const Attempt& a = history[static_cast<size_t>(i)];
    const int y = top + i * row_h;
    const bool ok = a.result.verdict == model::Verdict::ok;
    const std::string name = label_of(a);
    const std::string verdict = model::verdict_name(a.result.verdict);
    o << "<g class=\"row " << (ok ? "ok" : "rejected") << "\" data-index=\"" << a.index << "\">";
    if (row_labels) {
      o << "<text class=\"label\" x=\"" << x0 - 6 << "\" y=\"" << y + row_h / 2 + 4
        << "\" text-anchor=\"end\" fill=\"" << (ok ? "#222222" : "#777777") << "\""
        << (&a == best ? " font-weight=\"bold\"" : "") << "><title>" << esc(name) << " ("
        << esc(model::attempt_kind_name(a.kind)) << ")</title>" << esc(truncate(name, 40)) << "</text>";
    } else if (a.index % tick_every == 0 || i == 0 || &a == best) {
      o << "<text class=\"tick\" x=\"" << x0 - 6 << "\" y=\"" << y + row_h / 2 + 4
        << "\" text-anchor=\"end\" fill=\"#444444\"" << (&a == best ? " font-weight=\"bold\"" : "")
        << ">#" << a.index << "</text>";
    }
    if (!ok) {
      std::string text = verdict;
      if (!a.result.detail.empty()) text += ": " + a.result.detail;
      o << "<rect class=\"rejected\" x=\"" << x0 << "\" y=\"" << y << "\" width=\"" << grid_w - gap
        << "\" height=\"" << row_h - gap << "\" fill=\"" << kRejectedFill << "\"><title>" << esc(name)
        << ": " << esc(text) << "</title></rect>";
      if (row_labels) {
        o << "<text class=\"verdict\" x=\"" << x0 + 6 << "\" y=\"" << y + row_h / 2 + 4
          << "\" fill=\"#222222\">" << esc(truncate(text, static_cast<size_t>(std::max(8.0, (grid_w + right_w - 12) / 7.0))))
          << "</text>";
      }
    } else {
      for (int j = 0; j < m; ++j) {
        const std::string& c = performance_cases[static_cast<size_t>(j)];
        double rms = 0, ms = 0;
        const auto s = case_speedup(a, c, ref, &rms, &ms);
        const int x = x0 + j * col_w;
        if (!s || !finite_positive(*s)) {
          o << "<rect class=\"cell nodata\" x=\"" << x << "\" y=\"" << y << "\" width=\"" << col_w - gap
            << "\" height=\"" << row_h - gap << "\" fill=\"" << kNoDataFill
            << "\" stroke=\"#dddddd\" stroke-width=\"0.5\"><title>" << esc(name) << ", " << esc(c)
            << ": no timing" << (model::case_median_ms(a, c) ? " of " + over : std::string()) << "</title></rect>";
          continue;
        }
        const double t = std::log2(*s) / L;
        o << "<rect class=\"cell\" x=\"" << x << "\" y=\"" << y << "\" width=\"" << col_w - gap
          << "\" height=\"" << row_h - gap << "\" fill=\"" << hex(ramp(t)) << "\" data-speedup=\""
          << num_attr(*s) << "\"><title>" << esc(name) << ", " << esc(c) << ": " << fmt(ms, "%.4g")
          << " ms vs " << (ref.initial ? "initial " : "reference ") << fmt(rms, "%.4g") << " ms = " << esc(speedup_text(*s))
          << "</title></rect>";
        if (cell_text)
          o << "<text x=\"" << x + (col_w - gap) / 2 << "\" y=\"" << y + row_h / 2 + 4
            << "\" text-anchor=\"middle\" fill=\"" << (std::fabs(t) > 0.55 ? "#ffffff" : "#222222")
            << "\" pointer-events=\"none\">" << esc(speedup_text(*s)) << "</text>";
      }
      if (row_labels) {
        if (auto g = geomean_speedup(a, ref))
          o << "<text class=\"geomean\" x=\"" << x0 + grid_w + 8 << "\" y=\"" << y + row_h / 2 + 4
            << "\" fill=\"#222222\"" << (&a == best ? " font-weight=\"bold\"" : "") << ">"
            << esc(speedup_text(*g)) << (&a == best ? " best" : "") << "</text>";
      }
    }
    o << "</g>\n";
  }
  o << "</g>\n";
  if (best) {
    const int y = top + static_cast<int>(best - history.data()) * row_h;
    o << "<rect class=\"best\" x=\"" << x0 - 1 << "\" y=\"" << y - 1 << "\" width=\"" << grid_w - gap + 2
      << "\" height=\"" << row_h - gap + 2 << "\" fill=\"none\" stroke=\"#111111\" stroke-width=\"2\"><title>best: "
      << esc(label_of(*best)) << "</title></rect>\n";
  }
  if (n == 0)
    o << "<text x=\"" << x0 << "\" y=\"" << top + 13 << "\" fill=\"#666666\">(no attempts yet)</text>\n";
  o << "<text x=\"12\" y=\"" << height - 9 << "\" fill=\"#666666\">Speedup = "
    << (ref.initial ? "initial kernel median / attempt median on each case (the reference was not timed)"
                    : "reference median / attempt median on each case")
    << "; hover a cell for the latencies.</text>\n";
  o << "</svg>\n";
  return o.str();
}

// ---------------------------------------------------------------------------
// HTML report

namespace {

constexpr const char* kCss = R"css(
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       margin: 0; padding: 0 24px 48px; color: #1f2328; background: #ffffff; font-size: 14px; line-height: 1.45; }
header { border-bottom: 1px solid #d0d7de; margin-bottom: 8px; padding: 16px 0 8px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #eaeef2; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
.sub { color: #57606a; margin: 0; }
nav a { margin-right: 14px; color: #0969da; text-decoration: none; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 12px 0; }
.card { border: 1px solid #d0d7de; border-radius: 6px; padding: 8px 14px; min-width: 150px; background: #f6f8fa; }
.card .big { font-size: 22px; font-weight: 600; }
.card .small { color: #57606a; font-size: 12px; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
table.kv th { width: 210px; }
td.num { text-align: right; white-space: nowrap; }
table.sortable th { cursor: pointer; user-select: none; white-space: nowrap; }
table.sortable th:hover { background: #eaeef2; }
table.sortable th[aria-sort="ascending"]::after { content: " \25B2"; font-size: 10px; }
table.sortable th[aria-sort="descending"]::after { content: " \25BC"; font-size: 10px; }
tr.rejected td { background: #f3f3f3; color: #57606a; }
tr.best td { background: #ddf4ff; font-weight: 600; }
.v { display: inline-block; padding: 0 6px; border-radius: 10px; font-size: 12px; white-space: nowrap; }
.v-ok { background: #dafbe1; color: #116329; }
.v-bad { background: #ffebe9; color: #a40e26; }
.v-zero { background: #f6f8fa; color: #8c959f; }
.chips .v { margin: 0 4px 4px 0; }
.scroll { overflow: auto; max-width: 100%; border: 1px solid #eaeef2; }
.heat { max-height: 1400px; }
.chart { max-height: 1200px; margin: 8px 0 14px; }
details.raw-json { margin: 4px 0; }
details.raw-json summary { cursor: pointer; }
details.raw-json pre { margin-top: 4px; }
p.rule { max-width: 900px; }
pre { background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 6px; padding: 10px; overflow: auto;
      max-height: 640px; font-size: 12.5px; line-height: 1.4; tab-size: 4; }
td.detail { max-width: 420px; overflow-wrap: anywhere; font-size: 12px; }
.muted { color: #57606a; }
)css";

constexpr const char* kJs = R"js(
(function () {
  function key(td) {
    var v = td.getAttribute('data-v');
    return v !== null ? v : td.textContent.trim();
  }
  var tables = document.querySelectorAll('table.sortable');
  Array.prototype.forEach.call(tables, function (table) {
    var head = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(head, function (th, col) {
      function sort() {
        var asc = th.getAttribute('aria-sort') !== 'ascending';
        Array.prototype.forEach.call(head, function (h) { h.removeAttribute('aria-sort'); });
        th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
        var numeric = th.getAttribute('data-type') === 'num';
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.forEach(function (r, i) { r._kopt_i = i; });
        rows.sort(function (a, b) {
          var x = key(a.cells[col]), y = key(b.cells[col]), d = 0;
          if (numeric) {
            var xe = x === '' || isNaN(Number(x)), ye = y === '' || isNaN(Number(y));
            if (xe || ye) { d = xe === ye ? 0 : (xe ? 1 : -1); return d || a._kopt_i - b._kopt_i; }
            d = asc ? Number(x) - Number(y) : Number(y) - Number(x);
          } else {
            d = asc ? x.localeCompare(y, undefined, {numeric: true}) : y.localeCompare(x, undefined, {numeric: true});
          }
          return d || a._kopt_i - b._kopt_i;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      }
      th.tabIndex = 0;
      th.title = 'Sort by this column';
      th.addEventListener('click', sort);
      th.addEventListener('keydown', function (e) {
        if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); sort(); }
      });
    });
  });
})();
)js";

std::string jstr(const json& j, const char* key, const std::string& dflt = "") {
  if (!j.is_object()) return dflt;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return dflt;
  if (it->is_string()) return it->get<std::string>();
  return dump_json(*it);
}

/// A value worth showing: finite.
std::optional<double> shown(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? v : std::nullopt;
}

std::string ms_text(const std::optional<double>& v) { return v ? fmt(*v, "%.4g") + " ms" : "n/a"; }

std::string verdict_chip(const std::string& v) {
  return "<span class=\"v " + std::string(v == "ok" ? "v-ok" : "v-bad") + "\">" + esc(v) + "</span>";
}

std::string num_td(const std::optional<double>& v, const std::string& text) {
  if (!v) return "<td class=\"num\" data-v=\"\"></td>";
  return "<td class=\"num\" data-v=\"" + num_attr(*v) + "\">" + esc(text) + "</td>";
}

std::string gpu_text(const json& gpu) {
  std::string name = jstr(gpu, "name"), arch = jstr(gpu, "arch");
  if (name.empty()) return arch.empty() ? "unknown" : arch;
  return arch.empty() ? name : name + " (" + arch + ")";
}

/// What the report calls the best: the winner of the final interleaved
/// re-timing when there is one (summary.json "final_best"), else the fastest
/// attempt as measured during the search ("best").
struct ShownBest {
  std::optional<int> index;
  std::string label, kind;
  std::map<std::string, int64_t> params;
  std::optional<double> geomean_ms, speedup_vs_reference, speedup_vs_initial, ratio_to_cublas;
  const std::vector<run::SummaryCase>* cases = nullptr;  // the search's best only
};

std::optional<ShownBest> shown_best(const run::Summary& s, const std::vector<Attempt>& history) {
  ShownBest b;
  if (s.final_best && s.final_best->index) {
    const run::FinalBest& fb = *s.final_best;
    b.index = fb.index;
    b.label = fb.label.value_or("");
    b.params = fb.params.value_or(std::map<std::string, int64_t>{});
    b.geomean_ms = shown(fb.geomean_ms);
    b.speedup_vs_reference = shown(fb.speedup_vs_reference);
    b.speedup_vs_initial = shown(fb.speedup_vs_initial);
    b.ratio_to_cublas = shown(fb.ratio_to_cublas);
    for (const Attempt& a : history)
      if (a.index == *b.index) b.kind = model::attempt_kind_name(a.kind);
    return b;
  }
  if (!s.best) return std::nullopt;
  b.index = s.best->index;
  b.label = s.best->label;
  if (s.best->kind) b.kind = model::attempt_kind_name(*s.best->kind);
  b.params = s.best->params;
  b.geomean_ms = shown(s.best->geomean_ms);
  b.speedup_vs_reference = shown(s.best->speedup_vs_reference);
  b.speedup_vs_initial = shown(s.best->speedup_vs_initial);
  b.cases = &s.best->cases;
  return b;
}

/// The summary section: cards, the table of the best attempt, its per-case
/// timings, and the summary's other documents.
void summary_section(std::ostringstream& o, const run::Summary& s, const std::optional<ShownBest>& best,
                     const std::vector<Attempt>& history) {
  o << "<section id=\"summary\">\n<h2>Summary</h2>\n<div class=\"cards\">\n";
  const ShownBest none;
  const ShownBest& b = best ? *best : none;
  const std::optional<double> sref = b.speedup_vs_reference, sini = b.speedup_vs_initial, bgeo = b.geomean_ms,
                              bratio = b.ratio_to_cublas;
  const run::Specialization* sp = s.specialization ? &*s.specialization : nullptr;
  auto card = [&](const std::string& big, const std::string& small) {
    o << "<div class=\"card\"><div class=\"big\">" << esc(big) << "</div><div class=\"small\">" << esc(small)
      << "</div></div>\n";
  };
  card(sref ? speedup_text(*sref) : "n/a", "best vs reference (geomean)");
  card(sini ? speedup_text(*sini) : "n/a", "best vs initial kernel");
  card(bgeo ? fmt(*bgeo, "%.4g") + " ms" : "n/a", "best geomean latency");
  // Against cuBLAS: the specialised variants when there are some, else the best.
  if (const auto r = shown(sp ? sp->ratio_to_cublas : std::nullopt))
    card(fmt(*r, "%.3f"), "of cuBLAS, specialised (cuBLAS time / ours)");
  else if (bratio)
    card(fmt(*bratio, "%.3f"), "of cuBLAS (cuBLAS time / ours)");
  int64_t n_ok = 0;
  for (const Attempt& a : history) n_ok += a.result.verdict == model::Verdict::ok ? 1 : 0;
  card(std::to_string(n_ok) + " / " + std::to_string(history.size()), "attempts that passed");
  o << "</div>\n<table class=\"kv\">\n";
  auto kv = [&](const std::string& k, const std::string& v_html) {
    o << "<tr><th>" << esc(k) << "</th><td>" << v_html << "</td></tr>\n";
  };
  if (best) {
    kv("Best attempt", "#" + esc(best->index ? std::to_string(*best->index) : "") + " " + esc(best->label) +
                           " <span class=\"muted\">(" + esc(best->kind) + ")</span>");
    std::string params;
    for (const auto& [k, v] : best->params) params += (params.empty() ? "" : ", ") + esc(k) + "=" + std::to_string(v);
    kv("Parameters", params.empty() ? "<span class=\"muted\">none</span>" : params);
  } else {
    kv("Best attempt", "<span class=\"muted\">none: no attempt passed every check</span>");
  }
  kv("Best geomean", esc(ms_text(bgeo)));
  kv("Speedup vs reference", esc(sref ? speedup_text(*sref) : "n/a"));
  kv("Speedup vs initial", esc(sini ? speedup_text(*sini) : "n/a"));
  if (bratio)
    kv("Ratio to cuBLAS (FP32)", esc(fmt(*bratio, "%.3f")) + " <span class=\"muted\">(cuBLAS geomean " +
                                     esc(ms_text(shown(s.cublas_geomean_ms))) + ")</span>");
  if (sp) {
    std::string v = esc(ms_text(shown(sp->geomean_ms))) + " with " + std::to_string(sp->variants.size()) +
                    " shape-specialised variant(s)";
    if (const auto r = shown(sp->ratio_to_cublas)) v += ", " + esc(fmt(*r, "%.3f")) + " of cuBLAS";
    kv("Specialised geomean", v);
  }
  kv("Reference geomean", esc(ms_text(shown(s.reference_geomean_ms))));
  kv("Initial geomean", esc(ms_text(shown(s.initial_geomean_ms))));
  {
    std::string chips = "<div class=\"chips\">";
    for (const auto& [k, c] : s.counts)
      chips += "<span class=\"v " + std::string(c == 0 ? "v-zero" : (k == "ok" ? "v-ok" : "v-bad")) + "\">" + esc(k) +
               ": " + std::to_string(c) + "</span>";
    kv("Verdicts", chips + "</div>");
  }
  kv("Attempts", esc(std::to_string(s.attempts.value_or(static_cast<int64_t>(history.size())))));
  kv("GPU", esc(gpu_text(s.gpu)));
  if (!s.strategy.empty()) kv("Strategy", esc(s.strategy) + ", seed " + esc(std::to_string(s.seed)));
  if (!s.spec_hash.empty()) kv("Spec hash", "<code>" + esc(s.spec_hash) + "</code>");
  o << "</table>\n";

  // Best per case.
  if (best && best->cases && !best->cases->empty()) {
    o << "<h3>Best kernel per case</h3>\n<table class=\"sortable\" id=\"best-cases\">\n<thead><tr>"
         "<th>case</th><th data-type=\"num\">median ms</th><th data-type=\"num\">mean ms</th>"
         "<th data-type=\"num\">min ms</th><th data-type=\"num\">max ms</th><th data-type=\"num\">stddev ms</th>"
         "<th data-type=\"num\">samples</th><th data-type=\"num\">reference median ms</th>"
         "<th data-type=\"num\">speedup</th></tr></thead>\n<tbody>\n";
    for (const run::SummaryCase& c : *best->cases) {
      o << "<tr><td>" << esc(c.name) << "</td>";
      for (const auto& v : {c.median_ms, c.mean_ms, c.min_ms, c.max_ms, c.stddev_ms}) {
        const auto x = shown(v);
        o << num_td(x, x ? fmt(*x, "%.4g") : "");
      }
      const std::optional<double> ns = c.samples ? std::optional<double>(static_cast<double>(*c.samples)) : std::nullopt;
      o << num_td(ns, ns ? fmt(*ns, "%.0f") : "");
      const auto rm = shown(c.reference_median_ms);
      o << num_td(rm, rm ? fmt(*rm, "%.4g") : "");
      const auto su = shown(c.speedup);
      o << num_td(su, su ? speedup_text(*su) : "") << "</tr>\n";
    }
    o << "</tbody>\n</table>\n";
  }

  // Everything the driver and the proposer added (re-timing, baselines,
  // budget...): plain values in a table; documents (budget, final_best,
  // retime, specialization...) as raw JSON, collapsed.
  const json doc = s.to_json();
  const auto& std_keys = run::Summary::store_keys();
  std::vector<std::pair<std::string, const json*>> extra;
  for (const auto& [k, v] : doc.items())
    if (std::find(std_keys.begin(), std_keys.end(), k) == std_keys.end()) extra.emplace_back(k, &v);
  if (!extra.empty()) {
    o << "<h3>More results</h3>\n";
    bool table = false;
    for (const auto& [k, v] : extra) {
      if (!v->is_primitive()) continue;
      if (!table) o << "<table class=\"kv\">\n";
      table = true;
      kv(k, esc(v->is_string() ? v->get<std::string>() : dump_json(*v)));
    }
    if (table) o << "</table>\n";
    o << "<div class=\"raw\">\n";
    for (const auto& [k, v] : extra) {
      if (v->is_primitive()) continue;
      o << "<details class=\"raw-json\" id=\"raw-" << esc(k) << "\"><summary><code>" << esc(k)
        << "</code> <span class=\"muted\">(raw JSON, " << v->size() << (v->is_array() ? " item" : " key")
        << (v->size() == 1 ? "" : "s") << ")</span></summary>\n<pre>" << esc(dump_json(*v, 2), true)
        << "</pre>\n</details>\n";
    }
    o << "</div>\n";
  }
  o << "</section>\n";
}

}  // namespace

std::string report_html(const run::Summary& s, const std::vector<Attempt>& history,
                        const std::string& heatmap, const std::string& best_source, const json& spec) {
  const std::optional<ShownBest> best = shown_best(s, history);
  const std::string workload = s.workload.empty() ? "(unnamed workload)" : s.workload;
  const std::string& run_name = s.run;
  // The performance cases: the spec's, else those the history timed.
  std::vector<std::string> cases;
  if (spec.is_object() && spec.contains("cases") && spec["cases"].is_array())
    for (const json& c : spec["cases"])
      if (jstr(c, "role") == "performance" && !jstr(c, "name").empty()) cases.push_back(jstr(c, "name"));
  {
    std::set<std::string> seen(cases.begin(), cases.end());
    for (const Attempt& a : history)
      for (const model::CaseResult& c : a.result.cases)
        if ((c.role == "performance" || c.latency) && seen.insert(c.name).second) cases.push_back(c.name);
  }
  const Base ref = base_for(history, cases);
  const Attempt* best_attempt = nullptr;
  if (best && best->index)
    for (const Attempt& a : history)
      if (a.index == *best->index) best_attempt = &a;

  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    << "<title>kopt report: " << esc(workload) << (run_name.empty() ? "" : " (" + esc(run_name) + ")")
    << "</title>\n<style>" << kCss << "</style>\n</head>\n<body>\n";

  // Header.
  o << "<header>\n<h1>KernelOptimizer report: " << esc(workload) << "</h1>\n<p class=\"sub\">";
  std::vector<std::string> sub;
  if (!run_name.empty()) sub.push_back(esc(run_name));
  sub.push_back("GPU: " + esc(gpu_text(s.gpu)));
  if (!s.created.empty()) sub.push_back("started " + esc(s.created));
  if (!s.tool_version.empty()) sub.push_back("kopt " + esc(s.tool_version));
  for (size_t i = 0; i < sub.size(); ++i) o << (i ? " &middot; " : "") << sub[i];
  o << "</p>\n<nav><a href=\"#summary\">Summary</a><a href=\"#shapes\">Per shape</a>"
       "<a href=\"#progress\">Progress</a><a href=\"#dispatch\">Dispatch</a><a href=\"#heatmap\">Heatmap</a>"
       "<a href=\"#history\">History</a><a href=\"#source\">Best kernel source</a></nav>\n</header>\n";

  summary_section(o, s, best, history);

  // Tuned against cuBLAS (or the reference, or the initial kernel) per shape
  // class and per shape; the best so far; the launch header's dispatch table.
  {
    const ShapeComparison cmp = compare_shapes(s, history, spec);
    const std::string base = cmp.baseline.empty() ? "a baseline" : cmp.baseline;
    o << "<section id=\"shapes\">\n<h2>Tuned against " << esc(base) << " per shape</h2>\n<p class=\"muted\">"
      << "Median latencies of the kernel the launch header dispatches on each performance case"
      << (cmp.baseline == "cuBLAS" ? ", beside cuBLAS FP32 measured in the same run" : "")
      << (cmp.baseline == "reference" ? "; no cuBLAS baseline was timed, so the reference stands in" : "")
      << (cmp.baseline == "initial kernel" ? "; neither cuBLAS nor the reference was timed, so the initial kernel stands in" : "")
      << ". Log scale. Classes group shapes by regime; a class shows the geomeans of its shapes.</p>\n";
    if (cmp.shapes.empty()) {
      o << "<p class=\"muted\">No performance cases.</p>\n";
    } else {
      o << "<div class=\"scroll chart\">\n" << comparison_svg(cmp, true) << "</div>\n";
      o << "<div class=\"scroll chart\">\n" << comparison_svg(cmp, false) << "</div>\n";
    }
    o << "</section>\n";
    o << "<section id=\"progress\">\n<h2>Best so far</h2>\n<p class=\"muted\">The best geomean latency found "
         "after each evaluation of the search (the initial kernel and the candidates, in order). The final "
         "re-timing and the specialised variants come after the search; their levels are drawn dashed.</p>\n"
      << "<div class=\"scroll chart\">\n" << progress_svg(best_so_far(history), progress_levels(s)) << "</div>\n"
      << "</section>\n";
    o << "<section id=\"dispatch\">\n<h2>Dispatch table</h2>\n<p class=\"muted\">How the launch header that "
         "<code>kopt generate</code> writes from this run chooses a variant for the sizes it is given.</p>\n"
      << dispatch_html(dispatch_table(s, spec)) << "</section>\n";
  }

  // Heatmap (our own SVG, inlined; an XML declaration is not allowed inline).
  std::string svg = heatmap;
  if (svg.rfind("<?xml", 0) == 0) {
    auto e = svg.find("?>");
    svg = e == std::string::npos ? "" : svg.substr(e + 2);
  }
  const std::string over = ref.initial ? "the initial kernel" : "the reference";
  o << "<section id=\"heatmap\">\n<h2>Speedup heatmap</h2>\n<p class=\"muted\">One row per attempt in "
       "evaluation order, one column per performance case; blue is faster than "
    << over << ", red slower, grey rows were rejected."
    << (ref.initial ? " The reference was not timed, so the speedups are over the initial kernel." : "")
    << "</p>\n<div class=\"scroll heat\">\n" << svg << "</div>\n</section>\n";

  // History.
  o << "<section id=\"history\">\n<h2>History</h2>\n<p class=\"muted\">" << history.size()
    << " attempts. Click a column header to sort (again to reverse).</p>\n<div class=\"scroll\">\n"
       "<table class=\"sortable\" id=\"history-table\">\n<thead><tr>"
       "<th data-type=\"num\">#</th><th>kind</th><th>label</th><th>verdict</th>"
       "<th data-type=\"num\">geomean ms</th><th data-type=\"num\">speedup"
    << (ref.initial ? " vs initial" : "") << "</th>";
  for (const std::string& c : cases) o << "<th data-type=\"num\">" << esc(c) << " ms</th>";
  o << "<th data-type=\"num\">compile ms</th><th>cache</th><th data-type=\"num\">time s</th>"
       "<th>detail</th></tr></thead>\n<tbody>\n";
  for (const Attempt& a : history) {
    const bool ok = a.result.verdict == model::Verdict::ok;
    o << "<tr class=\"" << (ok ? "ok" : "rejected") << (&a == best_attempt ? " best" : "") << "\">";
    o << num_td(static_cast<double>(a.index), std::to_string(a.index));
    o << "<td>" << esc(model::attempt_kind_name(a.kind)) << "</td><td>" << esc(a.label) << "</td>";
    o << "<td data-v=\"" << esc(model::verdict_name(a.result.verdict)) << "\">"
      << verdict_chip(model::verdict_name(a.result.verdict)) << "</td>";
    std::optional<double> g;
    if (a.result.geomean_ms && std::isfinite(*a.result.geomean_ms)) g = a.result.geomean_ms;
    o << num_td(g, g ? fmt(*g, "%.4g") : "");
    auto sp = geomean_speedup(a, ref);
    o << num_td(sp, sp ? speedup_text(*sp) : "");
    for (const std::string& c : cases) {
      auto med = model::case_median_ms(a, c);
      o << num_td(med, med ? fmt(*med, "%.4g") : "");
    }
    o << num_td(a.result.compile_ms, fmt(a.result.compile_ms, "%.0f"));
    o << "<td>" << (a.result.compile_cache_hit ? "hit" : "") << "</td>";
    o << num_td(a.seconds_since_start, fmt(a.seconds_since_start, "%.1f"));
    std::string detail = a.result.detail;
    if (!a.result.failed_case.empty()) detail += (detail.empty() ? "" : " ") + std::string("[case ") + a.result.failed_case + "]";
    o << "<td class=\"detail\">" << esc(detail) << "</td></tr>\n";
  }
  o << "</tbody>\n</table>\n</div>\n</section>\n";

  // Best source.
  o << "<section id=\"source\">\n<h2>Best kernel source</h2>\n";
  if (best_source.empty()) {
    o << "<p class=\"muted\">No attempt passed every check.</p>\n";
  } else {
    if (best)
      o << "<p class=\"muted\">Attempt #" << esc(best->index ? std::to_string(*best->index) : "") << " "
        << esc(best->label)
        << " (best.cu in the run folder adds the parameters and launch annotations).</p>\n";
    o << "<pre><code>" << esc(best_source, true) << "</code></pre>\n";
  }
  o << "</section>\n<script>" << kJs << "</script>\n</body>\n</html>\n";
  return o.str();
}

void write_reports(const run::RunStore& store, const std::vector<std::string>& performance_cases) {
  // The report shows summary.json as the caller last wrote it (with its
  // extras, e.g. a re-timed reference) when it is up to date with the
  // history; a stale one (the run was killed before rewriting it) is rebuilt,
  // keeping the driver's and the proposer's keys. A damaged one shows what
  // reads of it (ReadMode::tolerant); one that is no JSON is rebuilt from the
  // history.
  std::optional<run::Summary> summary;
  std::error_code ec;
  if (stdfs::is_regular_file(store.dir() / "summary.json", ec)) {
    try {
      summary = store.read_summary(run::ReadMode::tolerant);
    } catch (const std::exception&) {
    }
  }
  if (!summary) {
    summary = store.summary();
  } else if (summary->attempts != static_cast<int64_t>(store.history().size())) {
    summary->assign_store_keys(store.summary());
  }
  // spec.json: the performance cases' sizes (charts, dispatch table); the
  // report does without when it is missing or damaged.
  json spec;
  if (stdfs::is_regular_file(store.dir() / "spec.json", ec)) {
    try {
      spec = parse_json_file(store.dir() / "spec.json", "run spec");
    } catch (const std::exception&) {
      spec = nullptr;
    }
  }
  const std::string svg = heatmap_svg(store.history(), performance_cases);
  const model::Attempt* best = store.best();
  if (summary->final_best && summary->final_best->index)
    for (const auto& a : store.history())
      if (a.index == *summary->final_best->index) best = &a;  // the re-timing's winner
  fs::write_file_atomic(store.dir() / "heatmap.svg", "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + svg);
  fs::write_file_atomic(store.dir() / "report.html",
                        report_html(*summary, store.history(), svg, best ? best->source : "", spec));
}

}  // namespace kopt::report
