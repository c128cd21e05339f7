// heatmap.svg (report/report.h): one row per attempt, one column per
// performance case, coloured by the speedup over the reference.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "model/device_info.h"
#include "report/report.h"
#include "report/speedup.h"
#include "report/text.h"

namespace kopt::report {

using model::Attempt;
using namespace text;
using speedup::Base;
using speedup::base_for;
using speedup::case_speedup;
using speedup::geomean_speedup;
using speedup::label_of;

namespace {

// Text widths assume ~7 px per character at 11 px (wide fonts such as DejaVu
// Sans), ~7.6 px in bold.
constexpr double kCharW = 7.0, kBoldCharW = 7.6;
constexpr int kLegendW = 300;

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

/// The legend: the gradient bar with ticks at powers of two from 1/2^L to
/// 2^L, and the rejected and no-data swatches; its top at `y`.
void draw_legend(std::ostringstream& o, int L, int y) {
  constexpr int legend_w = kLegendW;
  o << "<g class=\"legend\" transform=\"translate(12," << y << ")\">\n";
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
}

// ---------------------------------------------------------------------------
// Row labels by parameter

/// The label area when rows are labelled by their parameters: "#index", then
/// one column per parameter whose value differs between the attempts that
/// have parameters (in the order the first such label names them, else by
/// name); the parameters every such attempt has with one value are `fixed`
/// (said once, above the rows).
struct ParamColumns {
  std::vector<std::string> names;
  std::vector<int> right;  // x of each column's right edge (values are right-aligned)
  std::vector<std::pair<std::string, int64_t>> fixed;
  int index_right = 0;     // x of the index column's right edge
  int width = 0;           // of the whole label area
  bool active() const { return !names.empty(); }
};

ParamColumns param_columns(const std::vector<Attempt>& history) {
  ParamColumns pc;
  std::map<std::string, std::set<int64_t>> values;
  size_t with_params = 0;
  const Attempt* first = nullptr;
  for (const Attempt& a : history) {
    if (a.params.empty()) continue;
    ++with_params;
    if (!first) first = &a;
    for (const auto& [k, v] : a.params) values[k].insert(v);
  }
  if (with_params < 2) return pc;
  std::vector<std::string> varying;
  for (const auto& [k, vs] : values) {
    size_t have = 0;
    for (const Attempt& a : history) have += a.params.count(k);
    if (vs.size() > 1 || have < with_params) varying.push_back(k);
    else pc.fixed.emplace_back(k, *vs.begin());
  }
  if (varying.empty()) return pc;
  // The order the label names them in ("BM=64,BN=128,..." from the search).
  auto position = [&](const std::string& k) {
    const auto p = first->label.find(k + "=");
    return p == std::string::npos ? first->label.size() : p;
  };
  std::stable_sort(varying.begin(), varying.end(),
                   [&](const std::string& x, const std::string& y) { return position(x) < position(y); });
  int max_index = 1;
  for (const Attempt& a : history) max_index = std::max(max_index, a.index);
  pc.index_right = 8 + static_cast<int>(std::lround(kBoldCharW * static_cast<double>(std::to_string(max_index).size() + 1)));
  int x = pc.index_right;
  for (const std::string& k : varying) {
    size_t chars = length_chars(k);
    for (int64_t v : values[k]) chars = std::max(chars, std::to_string(v).size());
    x += 12 + static_cast<int>(std::lround(kBoldCharW * static_cast<double>(chars)));
    pc.names.push_back(k);
    pc.right.push_back(x);
  }
  // Room for the labels of rows without parameters (reference, initial kernel, cuBLAS).
  size_t text_chars = 0;
  for (const Attempt& a : history)
    if (a.params.empty()) text_chars = std::max(text_chars, length_chars(a.label.empty() ? model::attempt_kind_name(a.kind) : a.label));
  text_chars = std::min<size_t>(text_chars, 28);
  pc.width = std::max(x, pc.index_right + 8 + static_cast<int>(std::lround(kCharW * static_cast<double>(text_chars))));
  return pc;
}

/// The parameter columns' headers (at the case columns' height) and the
/// parameters every row shares, in a line above them.
void draw_param_headers(std::ostringstream& o, const ParamColumns& pc, int top) {
  o << "<text class=\"param-header\" x=\"" << pc.index_right << "\" y=\"" << top - 8
    << "\" text-anchor=\"end\" font-weight=\"bold\" fill=\"#222222\">#</text>";
  for (size_t i = 0; i < pc.names.size(); ++i)
    o << "<text class=\"param-header\" x=\"" << pc.right[i] << "\" y=\"" << top - 8
      << "\" text-anchor=\"end\" font-weight=\"bold\" fill=\"#222222\">" << esc(pc.names[i]) << "</text>";
  o << "\n";
  if (!pc.fixed.empty()) {
    std::string same;
    for (const auto& [k, v] : pc.fixed) same += (same.empty() ? "" : ", ") + k + "=" + std::to_string(v);
    o << "<text class=\"fixed-params\" x=\"12\" y=\"" << top - 26 << "\" fill=\"#444444\"><title>" << esc(same)
      << "</title>Same in every row with parameters: " << esc(truncate(same, 110)) << "</text>\n";
  }
}

/// A row's label in the parameter columns: its index, then its values; an
/// attempt without parameters (the reference, the initial kernel, cuBLAS, an
/// agent's rewrite) shows its label across the columns.
void draw_param_label(std::ostringstream& o, const Attempt& a, const ParamColumns& pc, int y, bool ok, bool best) {
  const std::string fill = ok ? "#222222" : "#777777";
  const std::string weight = best ? " font-weight=\"bold\"" : "";
  const std::string name = label_of(a);
  o << "<text class=\"label\" x=\"" << pc.index_right << "\" y=\"" << y << "\" text-anchor=\"end\" fill=\"" << fill
    << "\"" << weight << "><title>" << esc(name) << " (" << esc(model::attempt_kind_name(a.kind)) << ")</title>#"
    << a.index << "</text>";
  if (a.params.empty()) {
    const std::string text = a.label.empty() ? model::attempt_kind_name(a.kind) : a.label;
    const size_t chars = static_cast<size_t>(std::max(6.0, (pc.width - pc.index_right - 8) / kCharW));
    o << "<text class=\"label-text\" x=\"" << pc.index_right + 8 << "\" y=\"" << y << "\" fill=\"" << fill << "\""
      << weight << "><title>" << esc(name) << "</title>" << esc(truncate(text, chars)) << "</text>";
    return;
  }
  for (size_t i = 0; i < pc.names.size(); ++i) {
    const auto it = a.params.find(pc.names[i]);
    o << "<text class=\"param\" x=\"" << pc.right[i] << "\" y=\"" << y << "\" text-anchor=\"end\" fill=\""
      << fill << "\"" << weight << ">" << (it == a.params.end() ? "-" : std::to_string(it->second)) << "</text>";
  }
}

/// Where a row's cells go, and how they are drawn.
struct CellRow {
  int x0, y, col_w, row_h, gap;
  int L;           // the colour range: 1/2^L to 2^L
  bool cell_text;  // the speedup written in each cell
  /// Rows too thin for labels (a long run): a cell's tooltip names the
  /// attempt by its index (the History table has its label), and an untimed
  /// cell is not drawn (the blank grid behind the rows shows it), so that the
  /// file stays small (a class search times each attempt on its class's
  /// cases only).
  bool dense;
  bool simulated;  // the timings are made up: each tooltip says so
};

/// A passing attempt's cells: one per performance case, coloured by its
/// speedup over `ref`; a case without a timing is a blank cell.
void draw_cells(std::ostringstream& o, const Attempt& a, const std::vector<std::string>& performance_cases,
                const Base& ref, const CellRow& r) {
  const std::string name = r.dense ? "#" + std::to_string(a.index) : label_of(a);
  const std::string over = ref.initial ? "the initial kernel" : "the reference";
  const int m = static_cast<int>(performance_cases.size());
  const int x0 = r.x0, y = r.y, col_w = r.col_w, row_h = r.row_h, gap = r.gap, L = r.L;
  const bool cell_text = r.cell_text;
  for (int j = 0; j < m; ++j) {
    const std::string& c = performance_cases[static_cast<size_t>(j)];
    double rms = 0, ms = 0;
    const auto s = case_speedup(a, c, ref, &rms, &ms);
    const int x = x0 + j * col_w;
    if (!s || !finite_positive(*s)) {
      if (r.dense) continue;  // the blank grid behind the rows shows it
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
      << (r.simulated ? kSimulatedTip : "") << "</title></rect>";
    if (cell_text)
      o << "<text x=\"" << x + (col_w - gap) / 2 << "\" y=\"" << y + row_h / 2 + 4
        << "\" text-anchor=\"middle\" fill=\"" << (std::fabs(t) > 0.55 ? "#ffffff" : "#222222")
        << "\" pointer-events=\"none\">" << esc(speedup_text(*s)) << "</text>";
  }
}

}  // namespace

std::string heatmap_svg(const std::vector<Attempt>& history,
                        const std::vector<std::string>& performance_cases, bool simulated) {
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

  // Row labels: the parameters that differ between rows, one column each,
  // when the attempts have parameters; else the index and the label.
  const ParamColumns pc = param_columns(history);
  size_t max_label = 4;
  for (const Attempt& a : history) max_label = std::max(max_label, length_chars(label_of(a)));
  max_label = std::min<size_t>(max_label, 40);
  const int label_w = !row_labels  ? 56
                      : pc.active() ? pc.width + 12
                                    : static_cast<int>(std::lround(18 + kBoldCharW * static_cast<double>(max_label)));

  size_t max_case = 4;
  for (const std::string& c : performance_cases) max_case = std::max(max_case, length_chars(c));
  const int col_w = std::clamp(static_cast<int>(std::lround(14 + kBoldCharW * static_cast<double>(max_case))), 56, 140);
  const size_t case_chars = static_cast<size_t>((col_w - 8) / kBoldCharW);
  const int grid_w = std::max(m, 1) * col_w;
  const int right_w = row_labels ? 76 : 12;
  // Title (and the simulated timings' caption), legend, the parameters all
  // rows share, column headers.
  const int caption = simulated ? 18 : 0;
  const int top = 98 + caption + (row_labels && pc.active() && !pc.fixed.empty() ? 16 : 0);
  const int width = std::max(label_w + grid_w + right_w, 24 + kLegendW + 330);
  const int height = top + std::max(n, 1) * row_h + 28;
  const int x0 = label_w;

  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" << width
    << "\" height=\"" << height << "\" viewBox=\"0 0 " << width << " " << height
    << "\" font-family=\"" << esc(kFont) << "\" font-size=\"11\" role=\"img\" class=\"kopt-heatmap\" data-baseline=\""
    << (ref.initial ? "initial" : "reference") << "\"" << (simulated ? " data-simulated=\"true\"" : "") << ">\n";
  o << "<title>Speedup over " << over << " per performance case: " << n << " attempts, " << m << " cases"
    << (simulated ? std::string("; ") + model::kSimulatedNote : "") << "</title>\n";
  o << "<rect x=\"0\" y=\"0\" width=\"" << width << "\" height=\"" << height << "\" fill=\"#ffffff\"/>\n";
  o << "<text x=\"12\" y=\"20\" font-size=\"14\" font-weight=\"bold\" fill=\"#222222\">Speedup over "
    << over << ", per performance case</text>\n";
  if (simulated)
    o << "<text class=\"simulated\" x=\"12\" y=\"38\" font-weight=\"bold\" fill=\"#9a6700\">"
      << esc(model::kSimulatedNote) << " (no GPU ran the kernels)</text>\n";

  draw_legend(o, L, 32 + caption);

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
  if (row_labels && pc.active()) draw_param_headers(o, pc, top);
  o << "</g>\n";

  // Rows.
  int tick_every = 1;
  for (int t : {1, 2, 5, 10, 20, 25, 50, 100, 200, 500, 1000}) {
    tick_every = t;
    if (t * row_h >= 14) break;
  }
  if (!row_labels && n > 0)  // dense: the untimed cells, one blank grid
    o << "<rect class=\"nodata-grid\" x=\"" << x0 << "\" y=\"" << top << "\" width=\"" << grid_w << "\" height=\""
      << n * row_h << "\" fill=\"" << kNoDataFill << "\" stroke=\"#dddddd\" stroke-width=\"0.5\"><title>blank: no timing</title></rect>\n";
  o << "<g class=\"rows\">\n";
  for (int i = 0; i < n; ++i) {
    const Attempt& a = history[static_cast<size_t>(i)];
    const int y = top + i * row_h;
    const bool ok = a.result.verdict == model::Verdict::ok;
    const std::string name = label_of(a);
    const std::string verdict = model::verdict_name(a.result.verdict);
    o << "<g class=\"row " << (ok ? "ok" : "rejected") << "\" data-index=\"" << a.index << "\">";
    if (row_labels && pc.active()) {
      draw_param_label(o, a, pc, y + row_h / 2 + 4, ok, &a == best);
    } else if (row_labels) {
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
      draw_cells(o, a, performance_cases, ref, {x0, y, col_w, row_h, gap, L, cell_text, !row_labels, simulated});
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

}  // namespace kopt::report
