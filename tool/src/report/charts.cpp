#include "report/charts.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <sstream>

#include "model/device_info.h"
#include "model/dispatch.h"
#include "report/text.h"
#include "util/error.h"
#include "util/json.h"

namespace kopt::report {

using model::Attempt;
using nlohmann::json;
using namespace text;

namespace {

// ---------------------------------------------------------------------------
// Reading spec.json (every reader tolerates a document of the wrong shape;
// summary.json comes typed, store/summary.h)

const json& member(const json& j, const char* key) {
  static const json null_json;
  if (!j.is_object()) return null_json;
  const auto it = j.find(key);
  return it == j.end() ? null_json : *it;
}

std::string string_of(const json& j) { return j.is_string() ? j.get<std::string>() : std::string(); }

std::map<std::string, int64_t> sizes_of(const json& j) {
  std::map<std::string, int64_t> out;
  if (!j.is_object()) return out;
  for (const auto& [k, v] : j.items())
    if (v.is_number_integer()) out[k] = v.get<int64_t>();
  return out;
}

struct PerfCase {
  std::string name;
  std::map<std::string, int64_t> sizes;
};

/// The performance cases in the spec's order with their sizes; without a
/// spec, the specialisation's cases, else the cases the history timed.
std::vector<PerfCase> performance_cases(const store::Summary& summary, const std::vector<Attempt>& history,
                                        const json& spec) {
  std::vector<PerfCase> out;
  const json& cases = member(spec, "cases");
  if (cases.is_array())
    for (const json& c : cases)
      if (string_of(member(c, "role")) == "performance" && !string_of(member(c, "name")).empty())
        out.push_back({string_of(member(c, "name")), sizes_of(member(c, "sizes"))});
  if (!out.empty()) return out;
  if (summary.specialization && !summary.specialization->cases.empty()) {
    for (const auto& [name, c] : summary.specialization->cases) out.push_back({name, c.sizes.value_or(std::map<std::string, int64_t>{})});
    return out;
  }
  std::set<std::string> seen;
  for (const Attempt& a : history)
    for (const model::CaseResult& c : a.result.cases)
      if ((c.role == "performance" || c.latency) && seen.insert(c.name).second) out.push_back({c.name, {}});
  return out;
}

const Attempt* by_index(const std::vector<Attempt>& history, const std::optional<int>& index) {
  if (!index) return nullptr;
  for (const Attempt& a : history)
    if (a.index == *index) return &a;
  return nullptr;
}

/// A latency worth drawing: finite and positive.
std::optional<double> positive(const std::optional<double>& v) {
  return v && finite_positive(*v) ? v : std::nullopt;
}

/// The winner: the final re-timing's, else the search's best (summary
/// "best"), else the run's best attempt (model::best_attempt).
const Attempt* winner_of(const store::Summary& summary, const std::vector<Attempt>& history) {
  if (summary.final_best)
    if (const Attempt* a = by_index(history, summary.final_best->index)) return a;
  if (summary.best)
    if (const Attempt* a = by_index(history, summary.best->index)) return a;
  return model::best_attempt(history);
}

/// The reference's median on `name`: timed beside an attempt (the initial
/// kernel first), else the reference attempt's own timing.
std::optional<double> reference_median(const std::vector<Attempt>& history, const std::string& name) {
  for (const model::AttemptKind kind : {model::AttemptKind::initial, model::AttemptKind::candidate})
    for (const Attempt& a : history)
      if (a.kind == kind)
        for (const model::CaseResult& c : a.result.cases)
          if (c.name == name && c.reference_latency && finite_positive(c.reference_latency->median_ms))
            return c.reference_latency->median_ms;
  if (const Attempt* r = model::first_ok(history, model::AttemptKind::reference)) return model::case_median_ms(*r, name);
  return std::nullopt;
}

std::optional<double> geomean_of(const std::vector<double>& v) {
  if (v.empty()) return std::nullopt;
  const double g = model::geomean(v);
  return finite_positive(g) ? std::optional<double>(g) : std::nullopt;
}

// The built-in classes, in the order the charts list them.
constexpr const char* kDeepK = "deep K (K >= 16 max(M,N))";
constexpr const char* kSkinny = "skinny (min(M,N) <= 16)";
constexpr const char* kNarrow = "narrow (min(M,N) <= 64)";
constexpr const char* kMedium = "medium (min(M,N) <= 1024)";
constexpr const char* kLarge = "large (min(M,N) > 1024)";
const char* const kClassOrder[] = {kDeepK, kSkinny, kNarrow, kMedium, kLarge};

int class_rank(const std::string& name) {
  for (int i = 0; i < 5; ++i)
    if (name == kClassOrder[i]) return i;
  return 5;
}

}  // namespace

std::string shape_class(const std::map<std::string, int64_t>& sizes) {
  const auto m = sizes.find("M"), n = sizes.find("N"), k = sizes.find("K");
  if (m == sizes.end() || n == sizes.end() || k == sizes.end()) return "";
  const int64_t lo = std::min(m->second, n->second), hi = std::max(m->second, n->second);
  if (k->second >= 16 * hi) return kDeepK;
  if (lo <= 16) return kSkinny;
  if (lo <= 64) return kNarrow;
  if (lo <= 1024) return kMedium;
  return kLarge;
}

ShapeComparison compare_shapes(const store::Summary& summary, const std::vector<Attempt>& history, const json& spec) {
  ShapeComparison out;
  out.simulated = model::is_simulated(summary.gpu);
  const std::vector<PerfCase> cases = performance_cases(summary, history, spec);
  const store::Specialization* sp = summary.specialization ? &*summary.specialization : nullptr;
  const size_t n_variants = sp ? sp->variants.size() : 0;
  const Attempt* winner = winner_of(summary, history);
  const store::RetimeEntry* retimed = nullptr;  // the winner's entry of the final re-timing
  if (winner && summary.retime)
    for (const store::RetimeEntry& r : *summary.retime)
      if (r.index == winner->index) retimed = &r;

  // The baseline: one source for every shape, the first that was timed.
  const Attempt* cublas = model::first_ok(history, model::AttemptKind::baseline);
  const Attempt* initial = model::first_ok(history, model::AttemptKind::initial);
  bool any_reference = false;
  for (const PerfCase& c : cases) any_reference = any_reference || reference_median(history, c.name).has_value();
  if (cublas) out.baseline = "cuBLAS";
  else if (any_reference) out.baseline = "reference";
  else if (initial) out.baseline = "initial kernel";

  out.tuned = n_variants > 1 ? "tuned (" + std::to_string(n_variants) + " shape-specialised variants, as dispatched)"
                             : "tuned (best configuration)";
  for (const PerfCase& c : cases) {
    ShapeTiming t;
    t.name = c.name;
    t.sizes = c.sizes;
    const store::SpecializationCase* sc = nullptr;
    if (sp)
      if (const auto it = sp->cases.find(c.name); it != sp->cases.end()) sc = &it->second;
    if (t.sizes.empty() && sc && sc->sizes) t.sizes = *sc->sizes;
    if (sc) t.variant = sc->variant;
    if (const auto ms = positive(sc ? sc->median_ms : std::nullopt)) t.tuned_ms = ms;
    else if (retimed)
      if (const auto it = retimed->cases_median_ms.find(c.name); it != retimed->cases_median_ms.end())
        t.tuned_ms = positive(it->second);
    if (!t.tuned_ms && winner) t.tuned_ms = model::case_median_ms(*winner, c.name);
    if (cublas) t.baseline_ms = model::case_median_ms(*cublas, c.name);
    else if (any_reference) t.baseline_ms = reference_median(history, c.name);
    else if (initial) t.baseline_ms = model::case_median_ms(*initial, c.name);
    t.shape_class = sc && sc->shape_class ? *sc->shape_class : "";
    if (t.shape_class.empty()) t.shape_class = shape_class(t.sizes);
    if (t.shape_class.empty()) t.shape_class = n_variants > 1 ? "variant " + std::to_string(t.variant) : "all shapes";
    out.shapes.push_back(std::move(t));
  }

  // Classes: built-in ones in their order, others in order of appearance.
  std::vector<std::string> names;
  for (const ShapeTiming& t : out.shapes)
    if (std::find(names.begin(), names.end(), t.shape_class) == names.end()) names.push_back(t.shape_class);
  std::stable_sort(names.begin(), names.end(),
                   [](const std::string& a, const std::string& b) { return class_rank(a) < class_rank(b); });
  auto summarise = [&](const std::string& name, bool all) {
    ClassTiming ct;
    ct.name = name;
    std::vector<double> tuned, base;
    for (const ShapeTiming& t : out.shapes) {
      if (!all && t.shape_class != name) continue;
      ++ct.shapes;
      if (t.tuned_ms && t.baseline_ms) {
        ++ct.timed;
        tuned.push_back(*t.tuned_ms);
        base.push_back(*t.baseline_ms);
      }
    }
    ct.tuned_geomean_ms = geomean_of(tuned);
    ct.baseline_geomean_ms = geomean_of(base);
    return ct;
  };
  for (const std::string& n : names) out.classes.push_back(summarise(n, false));
  out.overall = summarise("all shapes", true);
  return out;
}

// ---------------------------------------------------------------------------
// Drawing helpers

namespace {

constexpr const char* kTunedFill = "#1b7837";     // PRGn green
constexpr const char* kBaselineFill = "#762a83";  // PRGn purple
constexpr const char* kText = "#222222";
constexpr const char* kMuted = "#666666";
constexpr const char* kGrid = "#e3e3e3";

std::string px(double v) { return fmt(v, "%.1f"); }

/// `attrs`: more attributes of the <svg> element, each with a leading space.
std::string svg_open(int width, int height, const std::string& cls, const std::string& title,
                     const std::string& attrs = "") {
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" << width << "\" height=\"" << height
    << "\" viewBox=\"0 0 " << width << " " << height << "\" font-family=\"" << esc(kFont)
    << "\" font-size=\"11\" role=\"img\" class=\"" << cls << "\"" << attrs << ">\n<title>" << esc(title) << "</title>\n"
    << "<rect x=\"0\" y=\"0\" width=\"" << width << "\" height=\"" << height << "\" fill=\"#ffffff\"/>\n";
  return o.str();
}

/// Ticks for a log axis over [lo, hi] (values > 0): decades, with 2 and 5
/// over a short range, and more within a decade.
std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> t;
  const int e0 = static_cast<int>(std::floor(std::log10(lo))), e1 = static_cast<int>(std::ceil(std::log10(hi)));
  const std::vector<double> steps = std::log10(hi / lo) < 1 ? std::vector<double>{1, 1.5, 2, 3, 4, 5, 6, 7, 8}
                                    : e1 - e0 <= 2          ? std::vector<double>{1, 2, 5}
                                                            : std::vector<double>{1};
  for (int e = e0; e <= e1; ++e)
    for (double m : steps) {
      const double v = m * std::pow(10.0, e);
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) t.push_back(v);
    }
  return t;
}

std::string tick_label(double v) { return fmt(v, "%.4g"); }

std::string ratio_text(double r) { return fmt(r, r >= 100 ? "%.0f" : "%.3g") + "x"; }

/// The smallest of 1, 2, 2.5 and 5 times a power of ten that is >= raw (> 0).
double nice_step(double raw) {
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0})
    if (m * p >= raw * (1 - 1e-9)) return m * p;
  return 10 * p;
}

/// The largest value of the 1-2-5 ladder (1, 2 or 5 times a power of ten) <= v (> 0).
double ladder_floor(double v) {
  const double p = std::pow(10.0, std::floor(std::log10(v) + 1e-9));
  for (double m : {5.0, 2.0})
    if (m * p <= v * (1 + 1e-9)) return m * p;
  return p;
}

/// The smallest value of the 1-2-5 ladder >= v (> 0).
double ladder_ceil(double v) {
  const double p = std::pow(10.0, std::floor(std::log10(v) - 1e-9));
  for (double m : {1.0, 2.0, 5.0})
    if (m * p >= v * (1 - 1e-9)) return m * p;
  return 10 * p;
}

}  // namespace

// ---------------------------------------------------------------------------
// The latency axis

double LatencyAxis::fraction(double v) const {
  if (!(hi > lo)) return 0;
  const double f = log ? (std::log10(std::max(v, lo)) - std::log10(lo)) / (std::log10(hi) - std::log10(lo))
                       : (v - lo) / (hi - lo);
  return std::clamp(f, 0.0, 1.0);
}

LatencyAxis latency_axis(const std::vector<double>& values_ms) {
  LatencyAxis a;
  double mn = INFINITY, mx = 0;
  for (double v : values_ms)
    if (finite_positive(v)) {
      mn = std::min(mn, v);
      mx = std::max(mx, v);
    }
  if (!(mx > 0)) return a;
  if (mx / mn <= kLinearRange) {
    // Linear from 0: bar lengths proportional to the times, 4 to 6 ticks.
    const double step = nice_step(mx / 5);
    a.hi = std::ceil(mx / step - 1e-9) * step;
    for (int i = 0; i * step <= a.hi * (1 + 1e-9); ++i) a.ticks.push_back(i * step);
    return a;
  }
  // Log between values of the 1-2-5 ladder: every ladder value labelled over
  // up to two decades, else the decades (and both ends), with lines at 2..9.
  a.log = true;
  a.lo = ladder_floor(mn * 0.9);  // below the smallest: its bar is still seen
  a.hi = ladder_ceil(mx);
  const bool few = a.hi / a.lo <= 100 * (1 + 1e-9);
  const int e0 = static_cast<int>(std::floor(std::log10(a.lo) + 1e-9)), e1 = static_cast<int>(std::ceil(std::log10(a.hi) - 1e-9));
  for (int e = e0; e <= e1; ++e)
    for (int m = 1; m <= 9; ++m) {
      const double v = m * std::pow(10.0, e);
      if (v < a.lo * (1 - 1e-9) || v > a.hi * (1 + 1e-9)) continue;
      const bool labelled = m == 1 || (few && (m == 2 || m == 5)) ||
                            std::fabs(v - a.lo) <= 1e-9 * a.lo || std::fabs(v - a.hi) <= 1e-9 * a.hi;
      (labelled ? a.ticks : a.minor).push_back(v);
    }
  return a;
}

// ---------------------------------------------------------------------------
// Tuned against the baseline

namespace {

struct CompareRow {
  std::string label, tip;
  std::optional<double> tuned, base;
  bool overall = false;
};

/// The rows of a comparison chart: per class (an "all shapes" row first) or per shape.
std::vector<CompareRow> compare_rows(const ShapeComparison& c, bool by_class) {
  std::vector<CompareRow> rows;
  if (by_class) {
    auto add = [&](const ClassTiming& ct, bool overall) {
      CompareRow r;
      r.label = ct.name + " (" + std::to_string(ct.shapes) + (ct.shapes == 1 ? " shape)" : " shapes)");
      r.tip = ct.name + ": geomean over " + std::to_string(ct.timed) + " of " + std::to_string(ct.shapes) +
              " shape(s) timed both ways";
      r.tuned = ct.tuned_geomean_ms;
      r.base = ct.baseline_geomean_ms;
      r.overall = overall;
      rows.push_back(r);
    };
    add(c.overall, true);
    for (const ClassTiming& ct : c.classes) add(ct, false);
  } else {
    for (const ShapeTiming& t : c.shapes) {
      CompareRow r;
      r.label = t.name;
      r.tip = t.name + " (" + t.shape_class + "), variant " + std::to_string(t.variant);
      r.tuned = t.tuned_ms;
      r.base = t.baseline_ms;
      rows.push_back(r);
    }
  }
  return rows;
}

}  // namespace

LatencyAxis comparison_axis(const ShapeComparison& c) {
  std::vector<double> values;
  for (bool by_class : {true, false})
    for (const CompareRow& r : compare_rows(c, by_class))
      for (const auto& v : {r.tuned, r.base})
        if (v) values.push_back(*v);
  return latency_axis(values);
}

std::string comparison_svg(const ShapeComparison& c, bool by_class) {
  using Row = CompareRow;
  const std::vector<Row> rows = compare_rows(c, by_class);
  const std::string base_name = c.baseline.empty() ? "baseline" : c.baseline;

  // One axis and one label width for both charts (per class and per
  // shape), so that they draw the same time at the same place.
  const LatencyAxis axis = comparison_axis(c);
  const bool any = !axis.ticks.empty();
  size_t max_label = 8;
  for (bool classes : {true, false})
    for (const Row& r : compare_rows(c, classes)) max_label = std::max(max_label, length_chars(r.label));
  max_label = std::min<size_t>(max_label, 48);
  const int label_w = static_cast<int>(std::lround(16 + 6.6 * static_cast<double>(max_label)));
  const int plot_w = 560, right_w = 110;
  const int width = label_w + plot_w + right_w;
  const int bar_h = 9, row_h = 2 * bar_h + 8, top = 78;
  const int height = top + std::max<int>(static_cast<int>(rows.size()), 1) * row_h + 34;
  const int x0 = label_w;
  auto xpos = [&](double v) { return x0 + plot_w * axis.fraction(v); };

  const std::string what = by_class ? "per shape class" : "per shape";
  std::ostringstream o;
  o << svg_open(width, height, std::string("kopt-compare ") + (by_class ? "by-class" : "by-shape"),
                "Median latency of the " + c.tuned + " and of " + base_name + ", " + what +
                    (c.simulated ? std::string("; ") + model::kSimulatedNote : ""),
                " data-axis=\"" + std::string(axis.log ? "log" : "linear") + "\" data-axis-min=\"" + num_attr(axis.lo) +
                    "\" data-axis-max=\"" + num_attr(axis.hi) + "\"");
  o << "<text x=\"12\" y=\"20\" font-size=\"14\" font-weight=\"bold\" fill=\"" << kText << "\">Tuned against "
    << esc(base_name) << ", " << esc(what) << "</text>\n";
  // Legend.
  o << "<g class=\"legend\" transform=\"translate(12,32)\">"
    << "<rect x=\"0\" y=\"0\" width=\"14\" height=\"" << bar_h << "\" fill=\"" << kTunedFill << "\"/>"
    << "<text x=\"19\" y=\"9\" fill=\"" << kText << "\">" << esc(c.tuned) << "</text>"
    << "<rect x=\"" << 30 + 6.6 * length_chars(c.tuned) << "\" y=\"0\" width=\"14\" height=\"" << bar_h << "\" fill=\""
    << kBaselineFill << "\"/><text x=\"" << 49 + 6.6 * length_chars(c.tuned) << "\" y=\"9\" fill=\"" << kText << "\">"
    << esc(base_name) << "</text>"
    << "<text x=\"0\" y=\"26\" fill=\"" << kMuted << "\">median ms, " << (axis.log ? "log" : "linear")
    << " scale (shorter is faster)"
    << (by_class ? "; a class shows geomeans" : "") << "; right: " << esc(base_name)
    << " time / tuned time</text></g>\n";

  // Axis: labelled grid lines at the ticks, unlabelled ones between.
  const int y_axis0 = top - 6, y_axis1 = top + static_cast<int>(rows.size()) * row_h;
  o << "<g class=\"axis\">\n";
  if (any) {
    for (double v : axis.minor) {
      const double x = xpos(v);
      o << "<line x1=\"" << px(x) << "\" x2=\"" << px(x) << "\" y1=\"" << y_axis0 << "\" y2=\"" << y_axis1
        << "\" stroke=\"" << kGrid << "\" stroke-width=\"0.6\"/>";
    }
    o << "\n";
    for (size_t i = 0; i < axis.ticks.size(); ++i) {
      const double x = xpos(axis.ticks[i]);
      o << "<line x1=\"" << px(x) << "\" x2=\"" << px(x) << "\" y1=\"" << y_axis0 << "\" y2=\"" << y_axis1
        << "\" stroke=\"#c8c8c8\"/><text class=\"tick\" x=\"" << px(x) << "\" y=\"" << y_axis1 + 14
        << "\" text-anchor=\"middle\" fill=\"" << kMuted << "\">" << esc(tick_label(axis.ticks[i]))
        << (i + 1 == axis.ticks.size() ? " ms" : "") << "</text>\n";
    }
  }
  o << "</g>\n";
  if (rows.empty())
    o << "<text x=\"" << x0 << "\" y=\"" << top + 14 << "\" fill=\"" << kMuted << "\">(no performance cases)</text>\n";

  o << "<g class=\"rows\">\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const int y = top + static_cast<int>(i) * row_h;
    std::optional<double> ratio;
    if (r.tuned && r.base) ratio = *r.base / *r.tuned;
    o << "<g class=\"cmp-row" << (r.overall ? " overall" : "") << "\""
      << (ratio ? " data-ratio=\"" + num_attr(*ratio) + "\"" : std::string()) << "><title>" << esc(r.tip);
    if (r.tuned) o << "; tuned " << fmt(*r.tuned, "%.4g") << " ms";
    if (r.base) o << "; " << esc(base_name) << " " << fmt(*r.base, "%.4g") << " ms";
    if (ratio) o << "; ratio " << fmt(*ratio, "%.3f");
    if (c.simulated && (r.tuned || r.base)) o << kSimulatedTip;
    o << "</title>";
    if (i % 2 == 1 || r.overall)
      o << "<rect x=\"4\" y=\"" << y - 3 << "\" width=\"" << width - 8 << "\" height=\"" << row_h
        << "\" fill=\"" << (r.overall ? "#eef3f8" : "#f7f7f7") << "\"/>";
    o << "<text class=\"label\" x=\"" << x0 - 6 << "\" y=\"" << y + bar_h + 4 << "\" text-anchor=\"end\" fill=\""
      << kText << "\"" << (r.overall ? " font-weight=\"bold\"" : "") << ">" << esc(truncate(r.label, 48)) << "</text>";
    int k = 0;
    for (const auto& [v, fill, cls] : {std::tuple{r.tuned, kTunedFill, "tuned"}, std::tuple{r.base, kBaselineFill, "baseline"}}) {
      const int yb = y + k++ * (bar_h + 1);
      if (v) {
        const double w = std::max(1.0, xpos(*v) - x0);
        o << "<rect class=\"bar " << cls << "\" x=\"" << x0 << "\" y=\"" << yb << "\" width=\"" << px(w)
          << "\" height=\"" << bar_h << "\" fill=\"" << fill << "\" data-ms=\"" << num_attr(*v) << "\"/>"
          << "<text x=\"" << px(x0 + w + 4) << "\" y=\"" << yb + bar_h - 1 << "\" font-size=\"9\" fill=\"" << kMuted
          << "\">" << fmt(*v, "%.3g") << "</text>";
      } else {
        o << "<text class=\"nodata\" x=\"" << x0 + 4 << "\" y=\"" << yb + bar_h - 1 << "\" font-size=\"9\" fill=\""
          << kMuted << "\">" << (k == 1 ? "tuned" : esc(base_name)) << ": no timing</text>";
      }
    }
    if (ratio)
      o << "<text class=\"ratio\" x=\"" << x0 + plot_w + 44 << "\" y=\"" << y + bar_h + 4 << "\" font-weight=\"bold\" fill=\""
        << (*ratio >= 1 ? "#1b5e20" : "#b2182b") << "\">" << esc(ratio_text(*ratio)) << "</text>";
    o << "</g>\n";
  }
  o << "</g>\n";
  o << "<text x=\"12\" y=\"" << height - 8 << "\" fill=\"" << kMuted << "\">Ratio = " << esc(base_name)
    << " median / tuned median (above 1x the tuned kernel is faster); hover a row for the numbers.</text>\n";
  o << "</svg>\n";
  return o.str();
}

// ---------------------------------------------------------------------------
// Best so far

std::vector<ProgressPoint> best_so_far(const std::vector<Attempt>& history) {
  std::vector<ProgressPoint> out;
  std::optional<double> best;
  int e = 0;
  for (const Attempt& a : history) {
    if (a.kind != model::AttemptKind::candidate && a.kind != model::AttemptKind::initial) continue;
    ProgressPoint p;
    p.evaluation = ++e;
    p.index = a.index;
    p.label = a.label.empty() ? model::attempt_kind_name(a.kind) : a.label;
    p.ok = a.result.verdict == model::Verdict::ok && a.result.geomean_ms && finite_positive(*a.result.geomean_ms);
    if (p.ok) {
      p.geomean_ms = a.result.geomean_ms;
      if (!best || *p.geomean_ms < *best) {
        best = p.geomean_ms;
        p.improved = true;
      }
    }
    p.best_ms = best;
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<LevelLine> progress_levels(const store::Summary& summary) {
  std::vector<LevelLine> out;
  if (const auto v = positive(summary.cublas_geomean_ms)) out.push_back({"cuBLAS", *v});
  if (const auto v = positive(summary.reference_geomean_ms)) out.push_back({"reference", *v});
  if (const auto v = positive(summary.specialization ? summary.specialization->geomean_ms : std::nullopt))
    out.push_back({"specialised variants", *v});
  return out;
}

std::string progress_svg(const std::vector<ProgressPoint>& points, const std::vector<LevelLine>& levels,
                         bool simulated) {
  const int width = 960, height = 360;
  const int left = 72, right = 200, top = 56, bottom = 44;
  const int strip = 16;  // at the bottom of the plot: the rejected attempts' marks
  const int pw = width - left - right, ph = height - top - bottom;
  const int n = static_cast<int>(points.size());
  double lo = INFINITY, hi = 0;
  for (const ProgressPoint& p : points)
    if (p.geomean_ms) {
      lo = std::min(lo, *p.geomean_ms);
      hi = std::max(hi, *p.geomean_ms);
    }
  for (const LevelLine& l : levels)
    if (finite_positive(l.ms)) {
      lo = std::min(lo, l.ms);
      hi = std::max(hi, l.ms);
    }
  const bool any = hi > 0;
  if (any) {
    if (hi / lo < 1.5) {  // a flat history: give it some room
      const double mid = std::sqrt(hi * lo);
      lo = mid / 1.25;
      hi = mid * 1.25;
    }
    lo /= 1.08;
    hi *= 1.08;
  }
  auto ypos = [&](double v) {
    return top + (ph - strip) * (std::log10(hi) - std::log10(v)) / (std::log10(hi) - std::log10(lo));
  };
  auto xpos = [&](int e) { return left + (n <= 1 ? pw / 2.0 : pw * static_cast<double>(e - 1) / (n - 1)); };

  std::ostringstream o;
  o << svg_open(width, height, "kopt-progress",
                "Best geomean so far over " + std::to_string(n) + " evaluations" +
                    (simulated ? std::string("; ") + model::kSimulatedNote : ""));
  o << "<text x=\"12\" y=\"20\" font-size=\"14\" font-weight=\"bold\" fill=\"" << kText
    << "\">Best geomean latency so far, over evaluations</text>\n";
  o << "<g class=\"legend\" transform=\"translate(12,32)\">"
    << "<line x1=\"0\" x2=\"18\" y1=\"5\" y2=\"5\" stroke=\"#08519c\" stroke-width=\"2.5\"/>"
    << "<text x=\"23\" y=\"9\" fill=\"" << kText << "\">best so far</text>"
    << "<circle cx=\"112\" cy=\"5\" r=\"3\" fill=\"#9ecae1\"/><text x=\"120\" y=\"9\" fill=\"" << kText
    << "\">an attempt's geomean</text>"
    << "<rect x=\"262\" y=\"0\" width=\"3\" height=\"10\" fill=\"#9e9e9e\"/><text x=\"270\" y=\"9\" fill=\"" << kText
    << "\">rejected</text><text x=\"340\" y=\"9\" fill=\"" << kMuted
    << "\">ms, log scale (lower is faster)</text></g>\n";
  // Frame and grid.
  o << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << pw << "\" height=\"" << ph
    << "\" fill=\"none\" stroke=\"#c8c8c8\"/>\n<g class=\"axis\">\n";
  if (any)
    for (double t : log_ticks(lo, hi)) {
      const double y = ypos(t);
      o << "<line x1=\"" << left << "\" x2=\"" << left + pw << "\" y1=\"" << px(y) << "\" y2=\"" << px(y)
        << "\" stroke=\"" << kGrid << "\"/><text x=\"" << left - 6 << "\" y=\"" << px(y + 4)
        << "\" text-anchor=\"end\" fill=\"" << kMuted << "\">" << esc(tick_label(t)) << " ms</text>\n";
    }
  if (n > 0) {
    // Ticks at 1 and at multiples of a 1-2-5 step, at most about ten.
    const double raw = std::max(1.0, n / 10.0);
    const double p10 = std::pow(10.0, std::floor(std::log10(raw)));
    double step = 10 * p10;
    for (double m : {1.0, 2.0, 5.0})
      if (m * p10 >= raw) {
        step = m * p10;
        break;
      }
    const int s = static_cast<int>(std::lround(step));
    std::vector<int> ticks = {1};
    for (int e = s; e <= n; e += s)
      if (e > 1) ticks.push_back(e);
    for (int e : ticks) {
      const double x = xpos(e);
      o << "<line x1=\"" << px(x) << "\" x2=\"" << px(x) << "\" y1=\"" << top + ph << "\" y2=\"" << top + ph + 4
        << "\" stroke=\"#999999\"/><text x=\"" << px(x) << "\" y=\"" << top + ph + 16
        << "\" text-anchor=\"middle\" fill=\"" << kMuted << "\">" << e << "</text>\n";
    }
  }
  o << "<text x=\"" << left + pw / 2 << "\" y=\"" << height - 8 << "\" text-anchor=\"middle\" fill=\"" << kMuted
    << "\">evaluation (the initial kernel and the candidates, in order)</text>\n</g>\n";
  if (!any) {
    o << "<text x=\"" << left + 12 << "\" y=\"" << top + 24 << "\" fill=\"" << kMuted << "\">"
      << (n == 0 ? "(no evaluations yet)" : "(no attempt passed yet)") << "</text>\n</svg>\n";
    return o.str();
  }
  // Level lines.
  o << "<g class=\"levels\">\n";
  for (const LevelLine& l : levels) {
    if (!finite_positive(l.ms)) continue;
    const double y = ypos(l.ms);
    o << "<g class=\"level\" data-ms=\"" << num_attr(l.ms) << "\"><line x1=\"" << left << "\" x2=\"" << left + pw
      << "\" y1=\"" << px(y) << "\" y2=\"" << px(y) << "\" stroke=\"" << (l.label == "cuBLAS" ? kBaselineFill : "#8c6d31")
      << "\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/><text x=\"" << left + pw + 6 << "\" y=\"" << px(y + 4)
      << "\" fill=\"" << kText << "\">" << esc(l.label) << " " << fmt(l.ms, "%.3g") << " ms</text></g>\n";
  }
  o << "</g>\n<g class=\"points\">\n";
  for (const ProgressPoint& p : points) {
    const double x = xpos(p.evaluation);
    const std::string tip = "evaluation " + std::to_string(p.evaluation) + ": #" + std::to_string(p.index) + " " + p.label;
    if (p.geomean_ms) {
      o << "<circle class=\"point" << (p.improved ? " improved" : "") << "\" cx=\"" << px(x) << "\" cy=\""
        << px(ypos(*p.geomean_ms)) << "\" r=\"" << (p.improved ? "3.5" : "2.5") << "\" fill=\""
        << (p.improved ? "#08519c" : "#9ecae1") << "\"><title>" << esc(tip) << ": " << fmt(*p.geomean_ms, "%.4g")
        << " ms" << (simulated ? kSimulatedTip : "") << "</title></circle>\n";
    } else {
      o << "<rect class=\"rejected\" x=\"" << px(x - 1.5) << "\" y=\"" << top + ph - 12 << "\" width=\"3\" height=\"10\" fill=\"#9e9e9e\"><title>"
        << esc(tip) << ": rejected</title></rect>\n";
    }
  }
  o << "</g>\n";
  // The step line: flat until the next improvement.
  std::string d;
  std::optional<double> last;
  for (const ProgressPoint& p : points) {
    if (!p.best_ms) continue;
    const double x = xpos(p.evaluation), y = ypos(*p.best_ms);
    if (!last) d += "M" + px(x) + " " + px(y);
    else d += " H" + px(x) + (*p.best_ms != *last ? " V" + px(y) : "");
    last = p.best_ms;
  }
  if (!points.empty() && last) d += " H" + px(xpos(points.back().evaluation));
  o << "<path class=\"best-so-far\" d=\"" << d << "\" fill=\"none\" stroke=\"#08519c\" stroke-width=\"2.5\"/>\n";
  o << "</svg>\n";
  return o.str();
}

// ---------------------------------------------------------------------------
// Dispatch table

namespace {

/// launch_config()'s argument order, as `kopt generate` writes it: the
/// signature's scalars whose value is a bare size name, then the other size
/// names sorted.
std::vector<std::string> size_order(const json& spec, const std::vector<DispatchShape>& shapes) {
  std::set<std::string> all;
  for (const DispatchShape& s : shapes)
    for (const auto& [k, v] : s.sizes) all.insert(k);
  std::vector<std::string> order;
  const json& sig = member(spec, "signature");
  if (sig.is_array())
    for (const json& p : sig) {
      const std::string v = string_of(member(p, "value"));
      if (member(p, "role").is_null() && all.count(v) && std::find(order.begin(), order.end(), v) == order.end())
        order.push_back(v);
    }
  for (const std::string& n : all)
    if (std::find(order.begin(), order.end(), n) == order.end()) order.push_back(n);
  return order;
}

}  // namespace

DispatchTable dispatch_table(const store::Summary& summary, const json& spec) {
  DispatchTable t;
  const std::vector<Attempt> no_history;
  const std::vector<PerfCase> cases = performance_cases(summary, no_history, spec);
  const store::Specialization* sp = summary.specialization ? &*summary.specialization : nullptr;
  if (sp && !sp->variants.empty()) {
    t.source = "summary.json \"specialization\": what kopt generate writes into the launch header";
    for (const store::SpecializationVariant& v : sp->variants)
      t.variants.push_back({v.variant, v.index, v.label, model::params_json(v.params), v.file});
    std::vector<std::string> names;
    for (const PerfCase& c : cases) names.push_back(c.name);
    for (const auto& [name, c] : sp->cases)
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    for (const std::string& name : names) {
      const auto it = sp->cases.find(name);
      if (it == sp->cases.end()) continue;
      DispatchShape s;
      s.name = name;
      s.sizes = it->second.sizes.value_or(std::map<std::string, int64_t>{});
      s.variant = it->second.variant;
      s.median_ms = positive(it->second.median_ms);
      s.variant0_ms = positive(it->second.single_median_ms);
      t.shapes.push_back(std::move(s));
    }
  } else {
    t.source = "summary.json \"final_best\" (no shape specialisation)";
    // The winner: the final re-timing's, else the search's best.
    std::optional<int> index;
    if (summary.final_best || summary.best) {
      DispatchVariant dv;
      if (summary.final_best) {
        index = summary.final_best->index;
        dv.label = summary.final_best->label.value_or("");
        if (summary.final_best->params) dv.params = model::params_json(*summary.final_best->params);
      } else {
        index = summary.best->index;
        dv.label = summary.best->label;
        dv.params = model::params_json(summary.best->params);
      }
      dv.index = index;
      dv.file = "best.cu";
      t.variants.push_back(std::move(dv));
    }
    std::map<std::string, double> best_ms;
    if (summary.best && summary.best->index == index)
      for (const store::SummaryCase& c : summary.best->cases)
        if (const auto ms = positive(c.median_ms)) best_ms[c.name] = *ms;
    for (const PerfCase& c : cases) {
      DispatchShape s;
      s.name = c.name;
      s.sizes = c.sizes;
      if (best_ms.count(c.name)) s.median_ms = s.variant0_ms = best_ms[c.name];
      t.shapes.push_back(std::move(s));
    }
  }
  t.size_names = size_order(spec, t.shapes);
  std::string args;
  for (size_t i = 0; i < t.size_names.size(); ++i) args += (i ? ", " : "") + t.size_names[i];
  // The measured tree (a damaged one was left out when the summary was read).
  std::optional<model::DispatchTree> tree;
  if (sp && t.variants.size() > 1) {
    try {
      tree = sp->dispatch_tree("summary.json");
    } catch (const Error&) {
      tree.reset();
    }
  }
  if (tree) {
    t.code = tree->to_cpp(2);
    t.rule = "launch_config(" + args + ") calls select_variant(" + args + ")" +
             (tree->model ? ", which on the tuned shapes asks measured_variant(" + args + ")," : std::string()) +
             " the decision tree below: grown on every variant's re-timed median on every tuned shape, so "
             "that each tuned shape runs a variant within " + fmt(tree->noise * 100, "%.3g") +
             "% of its fastest where a few questions can say so, and no leaf takes a variant measured slower "
             "than variant 0 on one of its shapes (docs/dispatch.md).";
    if (tree->model)
      t.rule += tree->model->margin
                    ? " Off the tuned shapes, the variant a cost model (whole and spread waves of block work at the "
                      "measured occupancy" + std::string(tree->model->traffic.empty() ? "" : ", plus the launch's traffic") +
                          std::string(tree->model->data_bytes.empty() ? "" : " and the case's data") +
                          ", fitted on the same medians) predicts fastest runs where it is predicted faster than "
                          "variant 0 by " + fmt(*tree->model->margin * 100, "%.3g") +
                          "%, a margin chosen by leave-one-out" +
                          std::string(tree->model->support.empty() ? "" : ", and within 2x of the sizes it was "
                                                                          "measured on") +
                          "; else variant 0."
                    : " Off the tuned shapes variant 0 runs: no margin of the cost model passed the leave-one-out "
                      "check.";
  } else if (t.variants.size() > 1)
    t.rule = "launch_config(" + args + ") calls select_variant(" + args +
             "), which returns the variant of the nearest tuned shape below: the one with the smallest sum of "
             "squared log size ratios (a size below 1 counts as 1). On a tuned shape that is the variant "
             "chosen for it; variant 0 is the best single configuration.";
  else if (t.variants.size() == 1)
    t.rule = "One configuration: launch_config(" + args + ") launches it for every shape.";
  else
    t.rule = "No attempt passed every check: there is nothing to dispatch.";
  return t;
}

std::string dispatch_html(const DispatchTable& t) {
  std::ostringstream o;
  o << "<p class=\"rule\">" << esc(t.rule) << "</p>\n<p class=\"muted\">Source: " << esc(t.source) << ".</p>\n";
  // The header's C++ as written: one line per line (a preformatted block).
  if (!t.code.empty()) o << "<pre id=\"dispatch-code\"><code>" << esc(t.code, true) << "</code></pre>\n";
  if (!t.variants.empty()) {
    o << "<table id=\"dispatch-variants\">\n<thead><tr><th>variant</th><th>attempt</th><th>configuration</th>"
         "<th>file</th><th>tuned shapes it serves</th></tr></thead>\n<tbody>\n";
    for (const DispatchVariant& v : t.variants) {
      std::string params;
      for (const auto& [k, val] : v.params.items())
        params += (params.empty() ? "" : ", ") + k + "=" + (val.is_string() ? val.get<std::string>() : dump_json(val));
      if (params.empty()) params = v.label;
      std::string shapes;
      int count = 0;
      for (const DispatchShape& s : t.shapes)
        if (s.variant == v.variant) {
          shapes += (count++ ? ", " : "") + s.name;
        }
      o << "<tr><td class=\"num\">" << v.variant << "</td><td>" << (v.index ? "#" + std::to_string(*v.index) : "")
        << "</td><td>" << esc(params) << "</td><td class=\"file\"><code>" << esc(v.file) << "</code></td><td class=\"name\">"
        << (count ? esc(shapes) : "<span class=\"muted\">none</span>") << "</td></tr>\n";
    }
    o << "</tbody>\n</table>\n";
  }
  if (!t.shapes.empty()) {
    o << "<table class=\"sortable\" id=\"dispatch-shapes\">\n<thead><tr><th>shape</th>";
    for (const std::string& n : t.size_names) o << "<th data-type=\"num\">" << esc(n) << "</th>";
    o << "<th data-type=\"num\">variant</th><th data-type=\"num\">median ms</th>"
         "<th data-type=\"num\">variant 0 ms</th><th data-type=\"num\">gain over variant 0</th></tr></thead>\n<tbody>\n";
    for (const DispatchShape& s : t.shapes) {
      o << "<tr><td class=\"name\">" << esc(s.name) << "</td>";
      for (const std::string& n : t.size_names) {
        const auto it = s.sizes.find(n);
        if (it == s.sizes.end()) o << "<td class=\"num\" data-v=\"\"></td>";
        else o << "<td class=\"num\" data-v=\"" << it->second << "\">" << it->second << "</td>";
      }
      o << "<td class=\"num\" data-v=\"" << s.variant << "\">" << s.variant << "</td>";
      for (const auto& v : {s.median_ms, s.variant0_ms}) {
        if (v) o << "<td class=\"num\" data-v=\"" << num_attr(*v) << "\">" << fmt(*v, "%.4g") << "</td>";
        else o << "<td class=\"num\" data-v=\"\"></td>";
      }
      if (s.median_ms && s.variant0_ms)
        o << "<td class=\"num\" data-v=\"" << num_attr(*s.variant0_ms / *s.median_ms) << "\">"
          << esc(speedup_text(*s.variant0_ms / *s.median_ms)) << "</td>";
      else
        o << "<td class=\"num\" data-v=\"\"></td>";
      o << "</tr>\n";
    }
    o << "</tbody>\n</table>\n";
  }
  return o.str();
}

}  // namespace kopt::report
