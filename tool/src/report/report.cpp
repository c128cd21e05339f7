#include "report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "model/device_info.h"
#include "report/charts.h"
#include "report/speedup.h"
#include "report/text.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/json_read.h"

namespace kopt::report {

namespace stdfs = std::filesystem;
using nlohmann::json;
using model::Attempt;
using namespace text;
using speedup::Base;
using speedup::base_for;
using speedup::geomean_speedup;

// ---------------------------------------------------------------------------
// HTML report

namespace {

constexpr const char* kCss = R"css(
:root { color-scheme: light; }
/* A long word (a label of 13 NAME=VALUE pairs without a space) breaks where
   it would leave the page; table cells below break anywhere. */
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       margin: 0; padding: 0 24px 48px; color: #1f2328; background: #ffffff; font-size: 14px; line-height: 1.45;
       overflow-wrap: break-word; }
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
/* Tables fit the page at 800 px and up: long labels, case names and hashes
   wrap anywhere, numbers never; no table scrolls sideways. */
table { border-collapse: collapse; font-variant-numeric: tabular-nums; max-width: 100%; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; text-align: left; vertical-align: top; overflow-wrap: anywhere; }
th { background: #f6f8fa; overflow-wrap: normal; }  /* headers are short words: whole */
table.kv th { width: 210px; }
table.full { width: 100%; }
td.num, td.file { white-space: nowrap; }
/* A case name ("4096x2048x1024") keeps a width of its own before it wraps. */
td.name { min-width: 9em; }
table + table { margin-top: 12px; }
td.num { text-align: right; }
th[data-type="num"] { text-align: right; }
table.sortable th { cursor: pointer; user-select: none; }
td.worse { color: #a40e26; font-weight: 600; }
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
/* Charts scale down to the page's width (their text with them). */
.chart { margin: 8px 0 14px; max-width: 100%; }
.chart svg { display: block; max-width: 100%; height: auto; }
.simulated { background: #fff8c5; border: 1px solid #d4a72c; border-radius: 6px; padding: 6px 12px;
             margin: 8px 0; font-weight: 600; }
details.variant { margin: 6px 0; }
details.variant summary { cursor: pointer; }
details.raw-json { margin: 4px 0; }
details.raw-json summary { cursor: pointer; }
details.raw-json pre { margin-top: 4px; }
p.rule { max-width: 900px; }
pre { background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 6px; padding: 10px; overflow: auto;
      max-height: 640px; font-size: 12.5px; line-height: 1.4; tab-size: 4; }
td.detail { font-size: 12px; }
td.label .kind { color: #57606a; font-size: 12px; }
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
  const std::vector<store::SummaryCase>* cases = nullptr;  // the search's best only
};

std::optional<ShownBest> shown_best(const store::Summary& s, const std::vector<Attempt>& history) {
  ShownBest b;
  if (s.final_best && s.final_best->index) {
    const store::FinalBest& fb = *s.final_best;
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
void summary_section(std::ostringstream& o, const store::Summary& s, const std::optional<ShownBest>& best,
                     const std::vector<Attempt>& history) {
  o << "<section id=\"summary\">\n<h2>Summary</h2>\n<div class=\"cards\">\n";
  const ShownBest none;
  const ShownBest& b = best ? *best : none;
  const std::optional<double> sref = b.speedup_vs_reference, sini = b.speedup_vs_initial, bgeo = b.geomean_ms,
                              bratio = b.ratio_to_cublas;
  const store::Specialization* sp = s.specialization ? &*s.specialization : nullptr;
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
    kv("Best attempt", "#" + esc(best->index ? std::to_string(*best->index) : "") + " " + esc_label(best->label) +
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
    for (const store::SummaryCase& c : *best->cases) {
      o << "<tr><td class=\"name\">" << esc(c.name) << "</td>";
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
  const auto& std_keys = store::Summary::store_keys();
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

/// The performance cases: the spec's in order, then any other case the
/// history timed (a spec that is missing or damaged has none).
std::vector<std::string> case_names(const json& spec, const std::vector<Attempt>& history) {
  std::vector<std::string> cases;
  if (spec.is_object() && spec.contains("cases") && spec["cases"].is_array())
    for (const json& c : spec["cases"])
      if (jstr(c, "role") == "performance" && !jstr(c, "name").empty()) cases.push_back(jstr(c, "name"));
  std::set<std::string> seen(cases.begin(), cases.end());
  for (const Attempt& a : history)
    for (const model::CaseResult& c : a.result.cases)
      if ((c.role == "performance" || c.latency) && seen.insert(c.name).second) cases.push_back(c.name);
  return cases;
}

/// Accuracy against the FP64 oracle: per kernel the run ships, per case, its
/// errors beside cuBLAS FP32's on the same inputs (store::accuracy_of of the
/// history; the summary's "accuracy" for a run folder without one).
void accuracy_section(std::ostringstream& o, const store::Summary& s, const std::vector<Attempt>& history) {
  std::optional<store::Accuracy> acc = store::accuracy_of(s, history);
  if (!acc) acc = s.accuracy;
  if (!acc || acc->kernels.empty()) return;
  o << "<section id=\"accuracy\">\n<h2>Accuracy against the FP64 oracle</h2>\n<p class=\"muted\">Per case, each "
       "output element's error relative to the scale of its products, |C - R| / sqrt(sum_k (a_ik b_kj)^2), R the "
       "FP64 oracle rounded once to FP32: the max and the root mean square over the output, on the seeded inputs "
       "that every kernel and cuBLAS FP32"
    << (acc->cublas_index ? " (attempt #" + std::to_string(*acc->cublas_index) + ")" : std::string(" (not timed in this run)"))
    << " are checked on. Ratio = ours / cuBLAS's; a kind that replaces FP32 SIMT must stay within 2x on every case "
       "with K of 64 or more (docs/evaluation.md, Accuracy). Ratios over 2 are in red.</p>\n";
  std::map<int, std::string> serves;  // variant -> the tuned shapes it serves
  if (s.specialization)
    for (const auto& [name, c] : s.specialization->cases) serves[c.variant] += (serves[c.variant].empty() ? "" : ", ") + name;
  auto ratio_td = [](const std::optional<double>& ours, const std::optional<double>& theirs) {
    if (!ours || !theirs || *theirs <= 0) return std::string("<td class=\"num\" data-v=\"\"></td>");
    const double r = *ours / *theirs;
    return std::string("<td class=\"num") + (r > 2 ? " worse" : "") + "\" data-v=\"" + num_attr(r) + "\">" +
           fmt(r, "%.3g") + "</td>";
  };
  auto err_td = [](const std::optional<double>& v) { return num_td(v, v ? fmt(*v, "%.3g") : ""); };
  const bool variants = acc->kernels.size() > 1;
  for (const store::AccuracyKernel& k : acc->kernels) {
    const std::string who = (k.index ? "#" + std::to_string(*k.index) + " " : std::string()) + k.label;
    if (variants) {
      o << "<details class=\"variant\"" << (k.variant == 0 ? " open" : "") << "><summary>Variant " << k.variant << ": "
        << esc_label(who);
      if (serves.count(k.variant)) o << " <span class=\"muted\">(serves " << esc(serves[k.variant]) << ")</span>";
      o << "</summary>\n";
    } else {
      o << "<p>The winner, " << esc_label(who) << ":</p>\n";
    }
    o << "<table class=\"sortable full\" id=\"accuracy-v" << k.variant << "\">\n<thead><tr><th>case</th><th>role</th>"
         "<th data-type=\"num\">max</th><th data-type=\"num\">cuBLAS max</th><th data-type=\"num\">ratio</th>"
         "<th data-type=\"num\">RMS</th><th data-type=\"num\">cuBLAS RMS</th><th data-type=\"num\">ratio</th>"
         "</tr></thead>\n<tbody>\n";
    for (const store::AccuracyCase& c : k.cases)
      o << "<tr><td class=\"name\">" << esc(c.name) << "</td><td>" << esc(c.role) << "</td>" << err_td(c.rel_error_max)
        << err_td(c.cublas_rel_error_max) << ratio_td(c.rel_error_max, c.cublas_rel_error_max) << err_td(c.rel_error_rms)
        << err_td(c.cublas_rel_error_rms) << ratio_td(c.rel_error_rms, c.cublas_rel_error_rms) << "</tr>\n";
    o << "</tbody>\n</table>\n" << (variants ? "</details>\n" : "");
  }
  o << "</section>\n";
}

/// The history: one row per attempt, sortable. Per-case medians are in the
/// heatmap (its cells' tooltips) and history.json: a column per case made
/// the table scroll sideways.
void history_section(std::ostringstream& o, const std::vector<Attempt>& history, const Base& ref,
                     const Attempt* best_attempt) {
  o << "<section id=\"history\">\n<h2>History</h2>\n<p class=\"muted\">" << history.size()
    << " attempts. Click a column header to sort (again to reverse). Each case's median is in the heatmap's "
       "tooltips and in history.json.</p>\n"
       "<table class=\"sortable full\" id=\"history-table\">\n<thead><tr>"
       "<th data-type=\"num\">#</th><th>label</th><th>verdict</th>"
       "<th data-type=\"num\">geomean ms</th><th data-type=\"num\">speedup"
    << (ref.initial ? " vs initial" : "") << "</th><th data-type=\"num\">compile ms</th>"
       "<th data-type=\"num\">time s</th><th>detail</th></tr></thead>\n<tbody>\n";
  for (const Attempt& a : history) {
    const bool ok = a.result.verdict == model::Verdict::ok;
    o << "<tr class=\"" << (ok ? "ok" : "rejected") << (&a == best_attempt ? " best" : "") << "\">";
    o << num_td(static_cast<double>(a.index), std::to_string(a.index));
    o << "<td class=\"label\">" << esc_label(a.label);
    if (a.kind != model::AttemptKind::candidate)
      o << (a.label.empty() ? "" : " ") << "<span class=\"kind\">(" << esc(model::attempt_kind_name(a.kind)) << ")</span>";
    o << "</td>";
    o << "<td data-v=\"" << esc(model::verdict_name(a.result.verdict)) << "\">"
      << verdict_chip(model::verdict_name(a.result.verdict)) << "</td>";
    std::optional<double> g;
    if (a.result.geomean_ms && std::isfinite(*a.result.geomean_ms)) g = a.result.geomean_ms;
    o << num_td(g, g ? fmt(*g, "%.4g") : "");
    auto sp = geomean_speedup(a, ref);
    o << num_td(sp, sp ? speedup_text(*sp) : "");
    o << num_td(a.result.compile_ms, fmt(a.result.compile_ms, "%.0f") + (a.result.compile_cache_hit ? " (cached)" : ""));
    o << num_td(a.seconds_since_start, fmt(a.seconds_since_start, "%.1f"));
    std::string detail = a.result.detail;
    if (!a.result.failed_case.empty()) detail += (detail.empty() ? "" : " ") + std::string("[case ") + a.result.failed_case + "]";
    o << "<td class=\"detail\">" << esc(detail) << "</td></tr>\n";
  }
  o << "</tbody>\n</table>\n</section>\n";
}

}  // namespace

std::string report_html(const store::Summary& s, const std::vector<Attempt>& history,
                        const std::string& heatmap, const std::string& best_source, const json& spec) {
  const std::optional<ShownBest> best = shown_best(s, history);
  const std::string workload = s.workload.empty() ? "(unnamed workload)" : s.workload;
  const std::string& run_name = s.run;
  const std::vector<std::string> cases = case_names(spec, history);
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
  o << "</p>\n";
  if (model::is_simulated(s.gpu))
    o << "<p class=\"simulated\" id=\"simulated\">" << esc(model::kSimulatedNote)
      << ". The GPU was a stand-in (tests/fake_worker) that answers the worker protocol without running the "
         "kernels: every latency, speedup and error below is invented, and shows only how the report looks.</p>\n";
  const bool accuracy = store::accuracy_of(s, history) || (s.accuracy && !s.accuracy->kernels.empty());
  o << "<nav><a href=\"#summary\">Summary</a>" << (accuracy ? "<a href=\"#accuracy\">Accuracy</a>" : "")
    << "<a href=\"#shapes\">Per shape</a>"
       "<a href=\"#progress\">Progress</a><a href=\"#dispatch\">Dispatch</a><a href=\"#heatmap\">Heatmap</a>"
       "<a href=\"#history\">History</a><a href=\"#source\">Best kernel source</a></nav>\n</header>\n";

  summary_section(o, s, best, history);
  accuracy_section(o, s, history);

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
      << ". " << (comparison_axis(cmp).log ? "Log" : "Linear") << " scale, one axis for both charts. Classes group "
      << "shapes by regime; a class shows the geomeans of its shapes.</p>\n";
    if (cmp.shapes.empty()) {
      o << "<p class=\"muted\">No performance cases.</p>\n";
    } else {
      o << "<div class=\"chart\">\n" << comparison_svg(cmp, true) << "</div>\n";
      o << "<div class=\"chart\">\n" << comparison_svg(cmp, false) << "</div>\n";
    }
    o << "</section>\n";
    o << "<section id=\"progress\">\n<h2>Best so far</h2>\n<p class=\"muted\">The best geomean latency found "
         "after each evaluation of the search (the initial kernel and the candidates, in order). The final "
         "re-timing and the specialised variants come after the search; their levels are drawn dashed.</p>\n"
      << "<div class=\"chart\">\n" << progress_svg(best_so_far(history), progress_levels(s), model::is_simulated(s.gpu)) << "</div>\n"
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

  history_section(o, history, ref, best_attempt);

  // Best source.
  o << "<section id=\"source\">\n<h2>Best kernel source</h2>\n";
  if (best_source.empty()) {
    o << "<p class=\"muted\">No attempt passed every check.</p>\n";
  } else {
    if (best)
      o << "<p class=\"muted\">Attempt #" << esc(best->index ? std::to_string(*best->index) : "") << " "
        << esc_label(best->label)
        << " (best.cu in the run folder adds the parameters and launch annotations).</p>\n";
    o << "<pre><code>" << esc(best_source, true) << "</code></pre>\n";
  }
  o << "</section>\n<script>" << kJs << "</script>\n</body>\n</html>\n";
  return o.str();
}

namespace {

/// The run folder's spec.json (the performance cases and their sizes), null
/// when it is missing or damaged; `note`, when given, says why it is null.
json run_spec(const store::RunStore& store, std::string* note = nullptr) {
  std::error_code ec;
  if (!stdfs::is_regular_file(store.dir() / "spec.json", ec)) return nullptr;
  try {
    return parse_json_file(store.dir() / "spec.json", "run spec");
  } catch (const std::exception& e) {
    if (note) *note = std::string(e.what()) + "; the charts do without the cases' sizes";
    return nullptr;
  }
}

}  // namespace

std::vector<std::string> performance_cases(const store::RunStore& store) {
  return case_names(run_spec(store), store.history());
}

namespace {

/// The summary the report shows: summary.json as the caller last wrote it
/// (with its extras, e.g. a re-timed reference) when it is up to date with
/// the history; a stale one (the run was killed before rewriting it) with
/// the store's keys rebuilt, keeping the driver's and the proposer's; a
/// damaged one as far as it reads (ReadMode::tolerant); one that is missing
/// or no JSON rebuilt from the history. Says in `notes` what it did not
/// show as written.
store::Summary summary_to_show(const store::RunStore& store, std::vector<std::string>& notes) {
  const stdfs::path file = store.dir() / "summary.json";
  std::optional<store::Summary> summary;
  std::error_code ec;
  if (!stdfs::exists(file, ec)) {
    notes.push_back(fs::display(file) + " is missing (the run did not finish): the report is made from history.json");
  } else {
    try {
      summary = store.read_summary(store::ReadMode::strict);
    } catch (const std::exception& e) {
      try {
        summary = store.read_summary(store::ReadMode::tolerant);
        notes.push_back(std::string(e.what()) + "; the report shows the rest of it");
      } catch (const std::exception& e2) {
        notes.push_back(std::string(e2.what()) + "; the report is made from history.json");
      }
    }
  }
  if (!summary) return store.summary();
  if (summary->attempts != static_cast<int64_t>(store.history().size())) {
    notes.push_back(fs::display(file) + " counts " +
                    (summary->attempts ? std::to_string(*summary->attempts) : std::string("no")) +
                    " attempts and history.json " + std::to_string(store.history().size()) +
                    ": its best and counts are made from history.json");
    summary->assign_store_keys(store.summary());
  }
  return *summary;
}

}  // namespace

WrittenReports write_reports(const store::RunStore& store, const std::vector<std::string>& performance_cases,
                             const stdfs::path& html_file) {
  WrittenReports w;
  const store::Summary summary = summary_to_show(store, w.notes);
  // spec.json: the performance cases' sizes (charts, dispatch table); the
  // report does without when it is missing or damaged.
  std::string spec_note;
  const json spec = run_spec(store, &spec_note);
  if (!spec_note.empty()) w.notes.push_back(spec_note);
  const std::string svg = heatmap_svg(store.history(), performance_cases, model::is_simulated(summary.gpu));
  const model::Attempt* best = store.best();
  if (summary.final_best && summary.final_best->index)
    for (const auto& a : store.history())
      if (a.index == *summary.final_best->index) best = &a;  // the re-timing's winner
  w.html = html_file.empty() ? store.dir() / "report.html" : html_file;
  w.heatmap = w.html.parent_path() / "heatmap.svg";
  fs::write_file_atomic(w.heatmap, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + svg);
  const std::string html = report_html(summary, store.history(), svg, best ? best->source : "", spec);
  if (html_file.empty()) fs::write_file_atomic(w.html, html);
  else fs::write_output_file(w.html, html);  // a file the user named: through a symlink, as --json does
  return w;
}

}  // namespace kopt::report
