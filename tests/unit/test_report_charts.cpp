// report.html's charts and dispatch table (report/charts.h): the data each
// one shows, from synthetic run documents and from a run folder that
// `kopt optimize` wrote with the fake worker; the SVG they are drawn as; the
// raw JSON collapsed; the heatmap over the initial kernel when the reference
// was not timed.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "report/charts.h"
#include "report/report.h"
#include "store/store.h"
#include "support/run_fixture.h"
#include "temp_dir.h"
#include "util/fs.h"
#include "xml_check.h"

namespace stdfs = std::filesystem;
using kopt::model::Attempt;
using kopt::model::CaseResult;
using kopt::model::LatencyStats;
using kopt::model::Verdict;
using kopt::test::TempDir;
using kopt::test::xml_problem;
using nlohmann::json;
namespace rp = kopt::report;

namespace {

// Three GEMM shapes of three regimes.
const std::vector<std::string> kCases = {"big", "tall", "deep"};

/// A summary.json document as the report reads it (store::ReadMode::tolerant:
/// what reads of a damaged one is shown).
kopt::store::Summary typed(const json& summary) {
  return kopt::store::Summary::from_json(summary, "summary.json", kopt::store::ReadMode::tolerant);
}

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + needle.size())) ++n;
  return n;
}

LatencyStats stats(double median) {
  LatencyStats s;
  s.median_ms = s.mean_ms = s.min_ms = s.max_ms = median;
  s.samples = 10;
  return s;
}

// medians per case of kCases (<= 0: untimed); `reference` (when given): the
// reference's medians timed beside it.
Attempt attempt(int index, const std::string& kind, const std::string& label, Verdict v,
                std::vector<double> medians = {}, std::vector<double> reference = {}) {
  Attempt a;
  a.index = index;
  a.kind = kopt::model::parse_attempt_kind(kind).value();
  a.label = label;
  a.result.verdict = v;
  if (v != Verdict::ok) {
    a.result.detail = "it went wrong on purpose";
    return a;
  }
  std::vector<double> ok;
  for (size_t i = 0; i < medians.size() && i < kCases.size(); ++i) {
    CaseResult c;
    c.name = kCases[i];
    c.role = "performance";
    c.passed = true;
    if (medians[i] > 0) {
      c.latency = stats(medians[i]);
      ok.push_back(medians[i]);
    }
    if (i < reference.size()) c.reference_latency = stats(reference[i]);
    a.result.cases.push_back(c);
  }
  if (!ok.empty()) a.result.geomean_ms = kopt::model::geomean(ok);
  return a;
}

json spec_doc() {
  json s = {{"name", "sgemm"}, {"cases", json::array()}};
  // The signature's size order is M, N, K (not the sizes' alphabetical K, M, N).
  s["signature"] = json::array({json{{"name", "A"}, {"type", "float"}, {"role", "input"}, {"count", "M*K"}},
                                json{{"name", "M"}, {"type", "int32"}, {"value", "M"}},
                                json{{"name", "N"}, {"type", "int32"}, {"value", "N"}},
                                json{{"name", "K"}, {"type", "int32"}, {"value", "K"}}});
  s["cases"].push_back({{"name", "1x1x1"}, {"role", "correctness"}, {"sizes", {{"M", 1}, {"N", 1}, {"K", 1}}}});
  s["cases"].push_back({{"name", "big"}, {"role", "performance"}, {"sizes", {{"M", 4096}, {"N", 4096}, {"K", 4096}}}});
  s["cases"].push_back({{"name", "tall"}, {"role", "performance"}, {"sizes", {{"M", 7680}, {"N", 2}, {"K", 2560}}}});
  s["cases"].push_back({{"name", "deep"}, {"role", "performance"}, {"sizes", {{"M", 512}, {"N", 1}, {"K", 500000}}}});
  return s;
}

// initial, cuBLAS baseline, three candidates (#5 fastest overall, #4 fastest on "tall").
std::vector<Attempt> history() {
  return {attempt(1, "initial", "naive.cu", Verdict::ok, {40, 8, 100}),
          attempt(2, "baseline", "cuBLAS sgemm (FP32, no TF32)", Verdict::ok, {2, 0.5, 0.25}),
          attempt(3, "candidate", "BM=64", Verdict::ok, {8, 4, 20}),
          attempt(4, "candidate", "BM=16", Verdict::ok, {16, 1, 50}),
          attempt(5, "candidate", "BM=128", Verdict::ok, {2.5, 2, 10}),
          attempt(6, "candidate", "BM=512", Verdict::compile_error)};
}

json specialised_summary() {
  return {{"best", {{"index", 5}, {"label", "BM=128"}, {"geomean_ms", 3.68}}},
          {"final_best", {{"index", 5}, {"label", "BM=128"}, {"params", {{"BM", 128}}}, {"geomean_ms", 3.6}}},
          {"cublas_geomean_ms", 0.63},
          {"reference_geomean_ms", nullptr},
          {"retime", json::array({json{{"index", 5}, {"cases_median_ms", {{"big", 2.4}, {"tall", 2.1}, {"deep", 9.0}}}},
                                  json{{"index", 4}, {"cases_median_ms", {{"big", 15.0}, {"tall", 0.9}, {"deep", 48.0}}}}})},
          {"specialization",
           {{"threshold", 0.03},
            {"variants", json::array({kopt::test::specialization_variant(0, 5, "BM=128", {{"BM", 128}}),
                                      kopt::test::specialization_variant(1, 4, "BM=16", {{"BM", 16}})})},
            {"cases",
             {{"big", {{"variant", 0}, {"median_ms", 2.4}, {"single_median_ms", 2.4}, {"sizes", {{"M", 4096}, {"N", 4096}, {"K", 4096}}}}},
              {"tall", {{"variant", 1}, {"median_ms", 0.9}, {"single_median_ms", 2.1}, {"sizes", {{"M", 7680}, {"N", 2}, {"K", 2560}}}}},
              {"deep", {{"variant", 0}, {"median_ms", 9.0}, {"single_median_ms", 9.0}, {"sizes", {{"M", 512}, {"N", 1}, {"K", 500000}}}}}}},
            {"geomean_ms", 2.69},
            {"single_geomean_ms", 3.6}}}};
}

const rp::ShapeTiming& shape(const rp::ShapeComparison& c, const std::string& name) {
  for (const auto& s : c.shapes)
    if (s.name == name) return s;
  throw std::runtime_error("no shape " + name);
}

std::vector<double> attr_values(const std::string& text, const std::string& attr) {
  std::vector<double> v;
  const std::regex re(attr + "=\"([^\"]+)\"");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
    v.push_back(std::stod((*it)[1]));
  return v;
}

/// The inline <svg> elements of an HTML page.
std::vector<std::string> svgs_of(const std::string& html) {
  std::vector<std::string> out;
  for (size_t p = html.find("<svg "); p != std::string::npos; p = html.find("<svg ", p + 1))
    out.push_back(html.substr(p, html.find("</svg>", p) + 6 - p));
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------
// Shape classes and the comparison's data

TEST(ReportCharts, BuiltInShapeClasses) {
  auto cls = [](int64_t m, int64_t n, int64_t k) { return rp::shape_class({{"M", m}, {"N", n}, {"K", k}}); };
  EXPECT_EQ(cls(512, 1, 500000), "deep K (K >= 16 max(M,N))");
  EXPECT_EQ(cls(1024, 4, 500000), "deep K (K >= 16 max(M,N))");
  EXPECT_EQ(cls(7680, 1, 2560), "skinny (min(M,N) <= 16)");
  EXPECT_EQ(cls(16, 3072, 1024), "skinny (min(M,N) <= 16)");
  EXPECT_EQ(cls(35, 700, 2048), "narrow (min(M,N) <= 64)");
  EXPECT_EQ(cls(512, 1500, 2048), "medium (min(M,N) <= 1024)");
  EXPECT_EQ(cls(5124, 1024, 2048), "medium (min(M,N) <= 1024)");
  EXPECT_EQ(cls(5124, 1500, 2560), "large (min(M,N) > 1024)");
  EXPECT_EQ(rp::shape_class({{"ROWS", 8}, {"COLS", 8}}), "");
}

TEST(ReportCharts, ComparesTheDispatchedVariantWithCublas) {
  const auto c = rp::compare_shapes(typed(specialised_summary()), history(), spec_doc());
  EXPECT_EQ(c.baseline, "cuBLAS");
  EXPECT_NE(c.tuned.find("2 shape-specialised variants"), std::string::npos) << c.tuned;
  ASSERT_EQ(c.shapes.size(), 3u);  // performance cases only, in the spec's order
  EXPECT_EQ(c.shapes[0].name, "big");
  EXPECT_EQ(c.shapes[2].name, "deep");
  // Tuned: the specialisation's median of the variant each shape gets.
  EXPECT_DOUBLE_EQ(*shape(c, "tall").tuned_ms, 0.9);
  EXPECT_EQ(shape(c, "tall").variant, 1);
  EXPECT_DOUBLE_EQ(*shape(c, "big").tuned_ms, 2.4);
  // Baseline: the cuBLAS attempt's medians.
  EXPECT_DOUBLE_EQ(*shape(c, "big").baseline_ms, 2);
  EXPECT_DOUBLE_EQ(*shape(c, "deep").baseline_ms, 0.25);
  EXPECT_EQ(shape(c, "deep").sizes.at("K"), 500000);
  // Classes in the fixed order (deep K, skinny, ..., large), geomeans.
  ASSERT_EQ(c.classes.size(), 3u);
  EXPECT_EQ(c.classes[0].name, "deep K (K >= 16 max(M,N))");
  EXPECT_EQ(c.classes[1].name, "skinny (min(M,N) <= 16)");
  EXPECT_EQ(c.classes[2].name, "large (min(M,N) > 1024)");
  EXPECT_EQ(c.classes[0].shapes, 1);
  EXPECT_DOUBLE_EQ(*c.classes[0].tuned_geomean_ms, 9.0);
  EXPECT_EQ(c.overall.shapes, 3);
  EXPECT_EQ(c.overall.timed, 3);
  EXPECT_NEAR(*c.overall.tuned_geomean_ms, std::cbrt(2.4 * 0.9 * 9.0), 1e-12);
  EXPECT_NEAR(*c.overall.baseline_geomean_ms, std::cbrt(2 * 0.5 * 0.25), 1e-12);
}

TEST(ReportCharts, RecordedClassesWinOverTheBuiltInRule) {
  json s = specialised_summary();
  s["specialization"]["cases"]["big"]["class"] = "square";
  s["specialization"]["cases"]["tall"]["class"] = "square";
  const auto c = rp::compare_shapes(typed(s), history(), spec_doc());
  EXPECT_EQ(shape(c, "big").shape_class, "square");
  ASSERT_EQ(c.classes.size(), 2u);
  EXPECT_EQ(c.classes[0].name, "deep K (K >= 16 max(M,N))");  // built-in ones first
  EXPECT_EQ(c.classes[1].name, "square");
  EXPECT_EQ(c.classes[1].shapes, 2);
}

TEST(ReportCharts, TunedAndBaselineFallBack) {
  // No specialisation: the winner's re-timed medians.
  json s = specialised_summary();
  s.erase("specialization");
  auto c = rp::compare_shapes(typed(s), history(), spec_doc());
  EXPECT_EQ(c.tuned, "tuned (best configuration)");
  EXPECT_DOUBLE_EQ(*shape(c, "tall").tuned_ms, 2.1);
  EXPECT_EQ(shape(c, "tall").variant, 0);
  // No re-timing either: the winner's own measurement.
  s.erase("retime");
  c = rp::compare_shapes(typed(s), history(), spec_doc());
  EXPECT_DOUBLE_EQ(*shape(c, "tall").tuned_ms, 2);
  // No final_best: the summary's best.
  s.erase("final_best");
  s["best"]["index"] = 3;
  c = rp::compare_shapes(typed(s), history(), spec_doc());
  EXPECT_DOUBLE_EQ(*shape(c, "tall").tuned_ms, 4);

  // No cuBLAS baseline, the reference timed beside the initial kernel.
  std::vector<Attempt> h = history();
  h.erase(h.begin() + 1);
  h[0] = attempt(1, "initial", "naive.cu", Verdict::ok, {40, 8, 100}, {20, 4, 50});
  c = rp::compare_shapes(typed(specialised_summary()), h, spec_doc());
  EXPECT_EQ(c.baseline, "reference");
  EXPECT_DOUBLE_EQ(*shape(c, "big").baseline_ms, 20);
  // Neither: the initial kernel.
  h[0] = attempt(1, "initial", "naive.cu", Verdict::ok, {40, 8, 100});
  c = rp::compare_shapes(typed(specialised_summary()), h, spec_doc());
  EXPECT_EQ(c.baseline, "initial kernel");
  EXPECT_DOUBLE_EQ(*shape(c, "deep").baseline_ms, 100);
  // Nothing at all.
  c = rp::compare_shapes(typed(json::object()), {}, json());
  EXPECT_EQ(c.baseline, "");
  EXPECT_TRUE(c.shapes.empty());
  // Documents of the wrong shape do not throw.
  EXPECT_NO_THROW(rp::compare_shapes(typed(json::array()), h, json("x")));
  EXPECT_NO_THROW(rp::compare_shapes(typed(json{{"specialization", 3}, {"retime", "x"}, {"final_best", {{"index", "a"}}}}), h,
                                     json{{"cases", json::array({1, json{{"role", 2}}})}}));
}

// ---------------------------------------------------------------------------
// Drawing

TEST(ReportCharts, ComparisonSvgIsWellFormedLogScaledAndEscaped) {
  json spec = spec_doc();
  spec["cases"][1]["name"] = "<big & \"bold\">";
  json s = specialised_summary();
  s["specialization"]["cases"]["<big & \"bold\">"] = s["specialization"]["cases"]["big"];
  std::vector<Attempt> h = history();
  const auto c = rp::compare_shapes(typed(s), h, spec);
  for (bool by_class : {true, false}) {
    const std::string svg = rp::comparison_svg(c, by_class);
    EXPECT_EQ(xml_problem(svg), "") << by_class;
    EXPECT_TRUE(kopt::test::valid_utf8(svg));
    EXPECT_EQ(svg.find("href"), std::string::npos);
    EXPECT_EQ(svg.find("<big"), std::string::npos);
    // A log axis (9 ms is 36x 0.25 ms) between 1-2-5 values around the data:
    // 0.2 .. 10 ms, labelled at 0.2, 0.5, 1, 2, 5, 10.
    EXPECT_NE(svg.find("data-axis=\"log\" data-axis-min=\"0.20000000000000001\" data-axis-max=\"10\""),
              std::string::npos) << svg.substr(0, 400);
    for (const char* tick : {">0.2</text>", ">0.5</text>", ">1</text>", ">5</text>", ">10 ms</text>"})
      EXPECT_NE(svg.find(tick), std::string::npos) << tick;
    EXPECT_EQ(svg.find(">100"), std::string::npos);
  }
  // Both charts: one axis and one width, so that they draw a time at the same place.
  EXPECT_EQ(attr_values(rp::comparison_svg(c, true), "width")[0], attr_values(rp::comparison_svg(c, false), "width")[0]);
  const std::string shapes = rp::comparison_svg(c, false);
  EXPECT_NE(shapes.find("&lt;big &amp; &quot;bold&quot;&gt;"), std::string::npos);
  EXPECT_EQ(count(shapes, "<g class=\"cmp-row\""), 3u);
  EXPECT_EQ(count(shapes, "class=\"bar tuned\""), 3u);
  EXPECT_EQ(count(shapes, "class=\"bar baseline\""), 2u);
  EXPECT_EQ(count(shapes, "class=\"nodata\""), 1u);  // cuBLAS never ran a case of the new name
  const auto ratios = attr_values(shapes, "data-ratio");
  ASSERT_EQ(ratios.size(), 2u);
  EXPECT_DOUBLE_EQ(ratios[0], 0.5 / 0.9);
  EXPECT_DOUBLE_EQ(ratios[1], 0.25 / 9.0);
  // Bars are log scaled: width is proportional to log10(ms) - log10(axis start).
  const auto c2 = rp::compare_shapes(typed(specialised_summary()), history(), spec_doc());
  const std::string svg = rp::comparison_svg(c2, false);
  std::smatch m;
  std::map<double, double> width_of;
  const std::regex bar(R"re(<rect class="bar (tuned|baseline)" x="(\d+)" y="\d+" width="([0-9.]+)" height="\d+" fill="#[0-9a-f]+" data-ms="([^"]+)")re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), bar); it != std::sregex_iterator(); ++it)
    width_of[std::stod((*it)[4])] = std::stod((*it)[3]);
  ASSERT_GE(width_of.size(), 5u);
  // Equal ratios, equal width differences: w(2.4) - w(0.25) vs log10(2.4/0.25).
  const double per_decade = (width_of[2.4] - width_of[0.25]) / std::log10(2.4 / 0.25);
  EXPECT_NEAR(width_of[9.0] - width_of[0.9], per_decade, 0.2);
  EXPECT_NEAR(width_of[2.0] - width_of[0.5], per_decade * std::log10(4.0), 0.2);
  // Per class: an "all shapes" row first, then one per class.
  const std::string classes = rp::comparison_svg(c2, true);
  EXPECT_EQ(count(classes, "<g class=\"cmp-row"), 4u);
  EXPECT_EQ(count(classes, "<g class=\"cmp-row overall\""), 1u);
  EXPECT_NE(classes.find(">all shapes (3 shapes)</text>"), std::string::npos);
  EXPECT_NE(classes.find(">skinny (min(M,N) &lt;= 16) (1 shape)</text>"), std::string::npos);
  // Empty: still a well-formed chart.
  EXPECT_EQ(xml_problem(rp::comparison_svg(rp::ShapeComparison{}, true)), "");
  EXPECT_NE(rp::comparison_svg(rp::ShapeComparison{}, false).find("(no performance cases)"), std::string::npos);
}

// The axis fits the data: every latency below 1 ms gives an axis to 1 ms,
// not 10; a spread over 20x goes logarithmic between 1-2-5 values.
TEST(ReportCharts, LatencyAxisFitsTheData) {
  rp::LatencyAxis a = rp::latency_axis({0.21, 0.35, 0.87, 0.5});
  EXPECT_FALSE(a.log);
  EXPECT_DOUBLE_EQ(a.lo, 0);
  EXPECT_DOUBLE_EQ(a.hi, 1.0);
  ASSERT_EQ(a.ticks.size(), 6u);  // 0, 0.2, ..., 1
  EXPECT_NEAR(a.ticks[1], 0.2, 1e-12);
  EXPECT_DOUBLE_EQ(a.fraction(0.5), 0.5);
  EXPECT_DOUBLE_EQ(a.fraction(0), 0);
  // Linear ends on the first round step at or above the largest: 2.5, 25, 0.05...
  EXPECT_DOUBLE_EQ(rp::latency_axis({1.1, 2.3}).hi, 2.5);
  EXPECT_DOUBLE_EQ(rp::latency_axis({3, 21}).hi, 25);
  EXPECT_DOUBLE_EQ(rp::latency_axis({0.004, 0.05}).hi, 0.05);
  // Log: the spread is over 20x.
  a = rp::latency_axis({0.25, 9});
  EXPECT_TRUE(a.log);
  EXPECT_DOUBLE_EQ(a.lo, 0.2);
  EXPECT_DOUBLE_EQ(a.hi, 10);
  EXPECT_EQ(a.ticks, (std::vector<double>{0.2, 0.5, 1, 2, 5, 10}));
  EXPECT_NEAR(a.fraction(1), std::log10(5) / std::log10(50), 1e-12);
  // Over many decades: the decades and both ends, lines at 2..9 between.
  a = rp::latency_axis({0.003, 40});
  EXPECT_DOUBLE_EQ(a.lo, 0.002);
  EXPECT_DOUBLE_EQ(a.hi, 50);
  ASSERT_EQ(a.ticks.size(), 6u);
  EXPECT_DOUBLE_EQ(a.ticks.front(), 0.002);
  EXPECT_NEAR(a.ticks[1], 0.01, 1e-15);
  EXPECT_DOUBLE_EQ(a.ticks.back(), 50);
  EXPECT_FALSE(a.minor.empty());
  for (double v : a.minor) EXPECT_TRUE(v > a.lo && v < a.hi) << v;
  // The smallest value always has a bar: the axis starts below it.
  EXPECT_GT(rp::latency_axis({0.2, 9}).fraction(0.2), 0);
  // Nothing to show: no ticks; values that are not finite and positive are ignored.
  EXPECT_TRUE(rp::latency_axis({}).ticks.empty());
  EXPECT_TRUE(rp::latency_axis({0, -1, NAN, INFINITY}).ticks.empty());
  EXPECT_EQ(rp::latency_axis({0.5, NAN}).hi, 0.5);
}

// The per-shape chart of a run whose latencies are all below 1 ms runs to 1
// ms (linear) and on the same axis as the per-class chart.
TEST(ReportCharts, ComparisonChartsShareAFittedAxis) {
  std::vector<Attempt> h = {attempt(1, "initial", "naive.cu", Verdict::ok, {4, 0.8, 2}),
                            attempt(2, "baseline", "cuBLAS sgemm (FP32, no TF32)", Verdict::ok, {0.61, 0.12, 0.45}),
                            attempt(3, "candidate", "BM=64", Verdict::ok, {0.55, 0.2, 0.48})};
  json s = {{"final_best", {{"index", 3}, {"label", "BM=64"}, {"geomean_ms", 0.37}}}};
  const auto c = rp::compare_shapes(typed(s), h, spec_doc());
  const rp::LatencyAxis axis = rp::comparison_axis(c);
  EXPECT_FALSE(axis.log);
  EXPECT_DOUBLE_EQ(axis.hi, 0.8);  // the largest is 0.61 ms: steps of 0.2 (0.61 / 5 = 0.122 -> 0.2)
  const std::string classes = rp::comparison_svg(c, true), shapes = rp::comparison_svg(c, false);
  for (const std::string& svg : {classes, shapes}) {
    EXPECT_NE(svg.find("data-axis=\"linear\" data-axis-min=\"0\" data-axis-max=\"0.80000000000000004\""),
              std::string::npos) << svg.substr(0, 400);
    EXPECT_NE(svg.find(">0.8 ms</text>"), std::string::npos);
    EXPECT_NE(svg.find("median ms, linear scale"), std::string::npos);
  }
  // Linear: a bar's width is proportional to its time, and equal in both charts.
  const std::regex bar(R"re(<rect class="bar (tuned|baseline)" x="(\d+)" y="\d+" width="([0-9.]+)" height="\d+" fill="#[0-9a-f]+" data-ms="([^"]+)")re");
  std::map<double, double> width_of;
  for (const std::string& svg : {classes, shapes})
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), bar); it != std::sregex_iterator(); ++it)
      width_of[std::stod((*it)[4])] = std::stod((*it)[3]);
  ASSERT_TRUE(width_of.count(0.61) && width_of.count(0.12));
  EXPECT_NEAR(width_of[0.61] / width_of[0.12], 0.61 / 0.12, 0.05);
  EXPECT_NEAR(width_of[0.61], 560 * 0.61 / 0.8, 0.1);
}

TEST(ReportCharts, BestSoFarOverEvaluations) {
  std::vector<Attempt> h = history();
  h.insert(h.begin(), attempt(0, "reference", "reference.cu", Verdict::ok, {1, 1, 1}));
  const auto p = rp::best_so_far(h);
  // The reference and the cuBLAS baseline are not evaluations of the search.
  ASSERT_EQ(p.size(), 5u);
  EXPECT_EQ(p[0].evaluation, 1);
  EXPECT_EQ(p[0].index, 1);  // the initial kernel
  EXPECT_EQ(p[1].index, 3);
  EXPECT_EQ(p[4].index, 6);
  EXPECT_FALSE(p[4].ok);
  EXPECT_FALSE(p[4].geomean_ms);
  std::vector<bool> improved;
  for (const auto& q : p) improved.push_back(q.improved);
  EXPECT_EQ(improved, (std::vector<bool>{true, true, false, true, false}));
  // Best so far never rises and ends at the fastest geomean (#5).
  for (size_t i = 1; i < p.size(); ++i) EXPECT_LE(*p[i].best_ms, *p[i - 1].best_ms);
  EXPECT_DOUBLE_EQ(*p.back().best_ms, *h[5].result.geomean_ms);
  // Before any attempt passed, there is no best.
  const auto none = rp::best_so_far({attempt(1, "candidate", "x", Verdict::timeout)});
  ASSERT_EQ(none.size(), 1u);
  EXPECT_FALSE(none[0].best_ms);

  const auto levels = rp::progress_levels(typed(specialised_summary()));
  ASSERT_EQ(levels.size(), 2u);  // cuBLAS and the specialised variants (the reference is null)
  EXPECT_EQ(levels[0].label, "cuBLAS");
  EXPECT_DOUBLE_EQ(levels[1].ms, 2.69);
  const std::string svg = rp::progress_svg(p, levels);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svg, "<circle class=\"point"), 4u);
  EXPECT_EQ(count(svg, "<circle class=\"point improved\""), 3u);
  EXPECT_EQ(count(svg, "<rect class=\"rejected\""), 1u);
  EXPECT_EQ(count(svg, "<g class=\"level\""), 2u);
  EXPECT_NE(svg.find(">cuBLAS 0.63 ms</text>"), std::string::npos);
  // The step line: starts at evaluation 1, one vertical step per later improvement.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, std::regex(R"re(<path class="best-so-far" d="([^"]+)")re")));
  const std::string d = m[1];
  EXPECT_EQ(d[0], 'M');
  EXPECT_EQ(count(d, " V"), 2u) << d;
  // A y axis of latency: the longer, the higher up (SVG y grows downwards).
  const auto cy = attr_values(svg.substr(svg.find("<g class=\"points\">")), "cy");
  ASSERT_EQ(cy.size(), 4u);
  EXPECT_LT(cy[0], cy[1]);  // the initial kernel (slow) above candidate #3
  // Empty histories.
  EXPECT_NE(rp::progress_svg({}, {}).find("(no evaluations yet)"), std::string::npos);
  EXPECT_NE(rp::progress_svg(none, {}).find("(no attempt passed yet)"), std::string::npos);
  EXPECT_EQ(xml_problem(rp::progress_svg(none, {})), "");
}

// ---------------------------------------------------------------------------
// Dispatch table

TEST(ReportCharts, DispatchTableFromTheSpecialisation) {
  const rp::DispatchTable t = rp::dispatch_table(typed(specialised_summary()), spec_doc());
  EXPECT_NE(t.source.find("specialization"), std::string::npos);
  EXPECT_EQ(t.size_names, (std::vector<std::string>{"M", "N", "K"}));  // launch_config()'s order
  EXPECT_NE(t.rule.find("launch_config(M, N, K) calls select_variant(M, N, K)"), std::string::npos) << t.rule;
  EXPECT_NE(t.rule.find("nearest tuned shape"), std::string::npos);
  ASSERT_EQ(t.variants.size(), 2u);
  EXPECT_EQ(t.variants[1].variant, 1);
  EXPECT_EQ(*t.variants[1].index, 4);
  EXPECT_EQ(t.variants[1].file, "variants/v1.cu");
  ASSERT_EQ(t.shapes.size(), 3u);
  EXPECT_EQ(t.shapes[0].name, "big");  // the spec's order, not the JSON object's
  EXPECT_EQ(t.shapes[1].name, "tall");
  EXPECT_EQ(t.shapes[1].variant, 1);
  EXPECT_DOUBLE_EQ(*t.shapes[1].median_ms, 0.9);
  EXPECT_DOUBLE_EQ(*t.shapes[1].variant0_ms, 2.1);
  EXPECT_EQ(t.shapes[2].sizes.at("K"), 500000);

  const std::string html = rp::dispatch_html(t);
  EXPECT_NE(html.find("<table id=\"dispatch-variants\">"), std::string::npos);
  EXPECT_NE(html.find("<table class=\"sortable\" id=\"dispatch-shapes\">"), std::string::npos);
  EXPECT_NE(html.find("<td>BM=16</td><td class=\"file\"><code>variants/v1.cu</code></td><td class=\"name\">tall</td>"), std::string::npos) << html;
  EXPECT_NE(html.find("<td class=\"name\">big, deep</td>"), std::string::npos);
  EXPECT_NE(html.find("<th data-type=\"num\">M</th><th data-type=\"num\">N</th><th data-type=\"num\">K</th>"),
            std::string::npos);
  EXPECT_NE(html.find("<td class=\"name\">tall</td><td class=\"num\" data-v=\"7680\">7680</td>"), std::string::npos);
  EXPECT_NE(html.find(">2.33x</td>"), std::string::npos);  // 2.1 / 0.9
}

// A run with a measured dispatch: the table shows the header's own ifs.
TEST(ReportCharts, DispatchTableShowsTheMeasuredTree) {
  json s = specialised_summary();
  s["specialization"]["dispatch"] = {{"sizes", {"M", "N", "K"}},
                                     {"noise", 0.03},
                                     {"nodes", json::array({json{{"dim", 1}, {"threshold", 64}, {"left", 1}, {"right", 2}},
                                                            json{{"variant", 1}}, json{{"variant", 0}}})}};
  const rp::DispatchTable t = rp::dispatch_table(typed(s), spec_doc());
  EXPECT_EQ(t.code, "  if (N <= 64) return 1;\n  return 0;\n");
  EXPECT_NE(t.rule.find("decision tree"), std::string::npos) << t.rule;
  EXPECT_EQ(t.rule.find("nearest tuned shape"), std::string::npos) << t.rule;
  // One line per line of C++: a preformatted block, its line breaks kept.
  EXPECT_NE(rp::dispatch_html(t).find("<pre id=\"dispatch-code\"><code>  if (N &lt;= 64) return 1;\n  return 0;\n</code></pre>"),
            std::string::npos)
      << rp::dispatch_html(t);
  // A damaged tree (a variant that does not exist) falls back to the words of the nearest-shape rule.
  s["specialization"]["dispatch"]["nodes"][1]["variant"] = 7;
  const rp::DispatchTable bad = rp::dispatch_table(typed(s), spec_doc());
  EXPECT_TRUE(bad.code.empty());
  EXPECT_NE(bad.rule.find("nearest tuned shape"), std::string::npos) << bad.rule;
}

TEST(ReportCharts, DispatchTableOfOneConfiguration) {
  json s = specialised_summary();
  s.erase("specialization");
  s["best"] = {{"index", 5}, {"cases", json::array({json{{"name", "big"}, {"median_ms", 2.5}}})}};
  const rp::DispatchTable t = rp::dispatch_table(typed(s), spec_doc());
  EXPECT_NE(t.rule.find("One configuration"), std::string::npos) << t.rule;
  ASSERT_EQ(t.variants.size(), 1u);
  EXPECT_EQ(t.variants[0].file, "best.cu");
  EXPECT_EQ(t.variants[0].label, "BM=128");
  ASSERT_EQ(t.shapes.size(), 3u);
  for (const auto& sh : t.shapes) EXPECT_EQ(sh.variant, 0);
  EXPECT_DOUBLE_EQ(*t.shapes[0].median_ms, 2.5);
  EXPECT_NE(rp::dispatch_html(t).find("<td class=\"name\">big, tall, deep</td>"), std::string::npos);
  // No winner at all.
  const rp::DispatchTable none = rp::dispatch_table(typed(json::object()), json());
  EXPECT_TRUE(none.variants.empty());
  EXPECT_NE(none.rule.find("nothing to dispatch"), std::string::npos);
  EXPECT_NO_THROW(rp::dispatch_html(none));
  // Hostile labels are escaped.
  s["final_best"]["params"] = json::object();
  s["final_best"]["label"] = "<script>x</script>";
  EXPECT_EQ(rp::dispatch_html(rp::dispatch_table(typed(s), spec_doc())).find("<script>"), std::string::npos);
}

// ---------------------------------------------------------------------------
// The report page

TEST(ReportCharts, ReportShowsChartsDispatchAndCollapsedRawJson) {
  json s = specialised_summary();
  s["budget"] = {{"evaluations", 40}};
  s["workload"] = "sgemm";
  s["specialization"]["ratio_to_cublas"] = 0.234;
  const auto h = history();
  const std::string html =
      rp::report_html(typed(s), h, rp::heatmap_svg(h, kCases), "// best\n", spec_doc());
  for (const char* id : {"<section id=\"shapes\">", "<section id=\"progress\">", "<section id=\"dispatch\">",
                         "<a href=\"#dispatch\">"})
    EXPECT_NE(html.find(id), std::string::npos) << id;
  const auto svgs = svgs_of(html);
  ASSERT_EQ(svgs.size(), 4u);  // per class, per shape, best so far, heatmap
  for (const auto& svg : svgs) EXPECT_EQ(xml_problem(svg), "") << svg.substr(0, 200);
  EXPECT_NE(svgs[0].find("class=\"kopt-compare by-class\""), std::string::npos);
  EXPECT_NE(svgs[1].find("class=\"kopt-compare by-shape\""), std::string::npos);
  EXPECT_NE(svgs[2].find("class=\"kopt-progress\""), std::string::npos);
  EXPECT_NE(html.find("Tuned against cuBLAS per shape</h2>"), std::string::npos);
  // The ratio card: the specialised geomean against cuBLAS.
  EXPECT_NE(html.find("of cuBLAS, specialised"), std::string::npos);
  // Raw JSON: each document in its own collapsed <details> (no "open"), none outside.
  for (const char* k : {"budget", "final_best", "retime", "specialization"}) {
    const std::string tag = std::string("<details class=\"raw-json\" id=\"raw-") + k + "\">";
    EXPECT_NE(html.find(tag), std::string::npos) << k;
  }
  EXPECT_EQ(count(html, "<details"), 4u);
  EXPECT_FALSE(std::regex_search(html, std::regex(R"(<details[^>]*\bopen\b)")));
  EXPECT_EQ(count(html, "<pre>") - count(html, "<pre><code>"), 4u);  // the raw JSON, each in its details
  // Plain values stay in the table.
  EXPECT_NE(html.find("<th>cublas_geomean_ms</th><td>0.63</td>"), std::string::npos);
}

// ---------------------------------------------------------------------------
// The heatmap without a timed reference

TEST(Heatmap, FallsBackToTheInitialKernelWhenTheReferenceWasNotTimed) {
  std::vector<Attempt> h = {attempt(1, "initial", "naive.cu", Verdict::ok, {8, 4, 2}),
                            attempt(2, "candidate", "BM=64", Verdict::ok, {1, 2, 4}),
                            attempt(3, "candidate", "BM=32", Verdict::timeout)};
  const std::string svg = rp::heatmap_svg(h, kCases);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_NE(svg.find("data-baseline=\"initial\""), std::string::npos);
  EXPECT_NE(svg.find("Speedup over the initial kernel, per performance case"), std::string::npos);
  EXPECT_NE(svg.find("(the reference was not timed)"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"cell nodata\""), 0u);
  EXPECT_EQ(attr_values(svg, "data-speedup"), (std::vector<double>{1, 1, 1, 8, 2, 0.5}));
  EXPECT_NE(svg.find(">2x best</text>"), std::string::npos);  // geomean 4 ms over 2 ms
  const std::string html = rp::report_html(typed(json::object()), h, svg, "");
  EXPECT_NE(html.find("The reference was not timed, so the speedups are over the initial kernel."),
            std::string::npos);
  EXPECT_NE(html.find("speedup vs initial</th>"), std::string::npos);

  // With the reference timed beside any attempt, the heatmap stays on the reference.
  h[1] = attempt(2, "candidate", "BM=64", Verdict::ok, {1, 2, 4}, {16, 16, 16});
  const std::string ref = rp::heatmap_svg(h, kCases);
  EXPECT_NE(ref.find("data-baseline=\"reference\""), std::string::npos);
  EXPECT_EQ(attr_values(ref, "data-speedup"), (std::vector<double>{16, 8, 4}));  // the initial: no reference
  // Neither: blank cells, as before.
  h = {attempt(1, "candidate", "BM=64", Verdict::ok, {1, 2, 4})};
  const std::string blank = rp::heatmap_svg(h, kCases);
  EXPECT_EQ(count(blank, "class=\"cell nodata\""), 3u);
  EXPECT_NE(blank.find("data-baseline=\"reference\""), std::string::npos);
}

TEST(Heatmap, ALongClassRunDrawsOnlyItsTimedCellsAndNamesAttemptsByIndex) {
  // 300 attempts (rows too thin for labels), each timed on one case, as a
  // class search times an attempt on its class's cases only.
  const std::string label = "c1:ASYNC_A=0,BK=16,BM=128,BN=256,KIND=0,MINB=1,PAD=0,SPLITK=1,STAGES=3";
  std::vector<Attempt> h = {attempt(1, "initial", "naive.cu", Verdict::ok, {8, 8, 8}, {8, 8, 8})};
  for (int i = 2; i <= 300; ++i) {
    std::vector<double> medians = {0, 0, 0};
    medians[static_cast<size_t>(i % 3)] = 1.0 + i % 7;
    h.push_back(attempt(i, "candidate", label, Verdict::ok, medians, {8, 8, 8}));
  }
  const std::string svg = rp::heatmap_svg(h, kCases);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svg, "class=\"cell\""), 3u + 299u);  // every timing still has its cell
  // The untimed cells are the one blank grid behind the rows.
  EXPECT_EQ(count(svg, "class=\"cell nodata\""), 0u);
  EXPECT_EQ(count(svg, "class=\"nodata-grid\""), 1u);
  const size_t at = svg.find("data-index=\"4\"");
  ASSERT_NE(at, std::string::npos);
  const std::string row4 = svg.substr(at, svg.find("</g>", at) - at);  // 4 % 3 == 1: timed on "tall" only
  EXPECT_EQ(count(row4, "class=\"cell\""), 1u);
  EXPECT_NE(row4.find("<title>#4, tall: 5 ms vs reference 8 ms = 1.6x</title>"), std::string::npos) << row4;
  // The configuration is not repeated in every cell (the History table has
  // it): only the best attempt's frame names it.
  EXPECT_EQ(count(svg, "BK=16,BM=128"), 1u);
  const size_t best_at = svg.find("<title>best: ");
  ASSERT_NE(best_at, std::string::npos);
  EXPECT_NE(svg.find(label, best_at), std::string::npos);
  EXPECT_LT(svg.size(), 300u * 400u);
  // With room for labels, each untimed cell stays its own, with the attempt's label.
  h.resize(40);
  const std::string roomy = rp::heatmap_svg(h, kCases);
  EXPECT_EQ(count(roomy, "class=\"cell nodata\""), 39u * 2);
  EXPECT_NE(roomy.find(label + ", tall: no timing</title>"), std::string::npos);
  EXPECT_EQ(count(roomy, "nodata-grid"), 0u);
}

// ---------------------------------------------------------------------------
// A run folder written by `kopt optimize` with the fake worker

namespace {

int run_quiet(const std::string& cmd) {
  const int status = std::system((cmd + " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

json read_json(const stdfs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

// A small SGEMM workload that compiles fast: naive kernels, a one-parameter
// template, a cuBLAS baseline, performance cases of four regimes.
void write_small_gemm(const stdfs::path& dir) {
  const std::string naive = R"cu(// kopt:entry gemm_naive
// kopt:grid ceil_div(N, 16), ceil_div(M, 16), 1
// kopt:block 16, 16, 1
// kopt:shared 0
extern "C" __global__ void gemm_naive(const float* A, const float* B, float* C, int M, int N, int K) {
  const int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
  C[(size_t)row * N + col] = acc;
}
)cu";
  std::string tuned = naive;
  tuned = std::regex_replace(tuned, std::regex("gemm_naive"), "gemm_bs");
  kopt::fs::write_file_atomic(dir / "naive.cu", naive);
  kopt::fs::write_file_atomic(dir / "tuned.cu", tuned);
  json spec = {
      {"format_version", 1},
      {"name", "small_gemm"},
      {"seed", 7},
      {"signature", json::array({json{{"name", "A"}, {"type", "float"}, {"role", "input"}, {"count", "M*K"}},
                                 json{{"name", "B"}, {"type", "float"}, {"role", "input"}, {"count", "K*N"}},
                                 json{{"name", "C"}, {"type", "float"}, {"role", "output"}, {"count", "M*N"}},
                                 json{{"name", "M"}, {"type", "int32"}, {"value", "M"}},
                                 json{{"name", "N"}, {"type", "int32"}, {"value", "N"}},
                                 json{{"name", "K"}, {"type", "int32"}, {"value", "K"}}})},
      {"launch", {{"grid", {"ceil_div(N, 16)", "ceil_div(M, 16)", 1}}, {"block", {16, 16, 1}}, {"shared_bytes", 0}}},
      {"baseline", {{"kind", "cublas"}, {"op", "sgemm"}, {"a", "A"}, {"b", "B"}, {"c", "C"}, {"m", "M"}, {"n", "N"}, {"k", "K"}}},
      {"reference", {{"kind", "kernel"}, {"source", "naive.cu"}, {"entry", "gemm_naive"}}},
      {"initial", {{"source", "naive.cu"}, {"entry", "gemm_naive"}}},
      {"template",
       {{"source", "tuned.cu"},
        {"entry", "gemm_bs"},
        {"launch", {{"grid", {"ceil_div(N, BS)", "ceil_div(M, BS)", 1}}, {"block", {"BS", "BS", 1}}, {"shared_bytes", 0}}}}},
      {"cases", json::array({json{{"name", "17x17x17"}, {"role", "correctness"}, {"sizes", {{"M", 17}, {"N", 17}, {"K", 17}}}},
                             json{{"name", "2048x2048x512"}, {"role", "performance"}, {"sizes", {{"M", 2048}, {"N", 2048}, {"K", 512}}}},
                             json{{"name", "768x2x256"}, {"role", "performance"}, {"sizes", {{"M", 768}, {"N", 2}, {"K", 256}}}},
                             json{{"name", "64x1x50000"}, {"role", "performance"}, {"sizes", {{"M", 64}, {"N", 1}, {"K", 50000}}}},
                             json{{"name", "35x700x512"}, {"role", "performance"}, {"sizes", {{"M", 35}, {"N", 700}, {"K", 512}}}}})},
      {"tolerance", {{"C", {{"kind", "gemm"}, {"factor", 8}, {"a", "A"}, {"b", "B"}, {"m", "M"}, {"n", "N"}, {"k", "K"}}}}},
      {"timing", {{"warmup", 1}, {"iterations", 3}}},
      {"tuning", {{"params", {{"BS", {8, 16, 32}}, {"UNROLL", {1, 2, 4}}}}, {"constraints", json::array()}, {"compile_options", json::array()}}}};
  kopt::fs::write_file_atomic(dir / "small_gemm.json", spec.dump(2));
}

}  // namespace

// The charts' data from what a real run folder holds: the fake worker times
// every candidate (a fixed pseudo-random latency per configuration and case)
// and cuBLAS (1 ms a case), never the reference: the heatmap falls back to
// the initial kernel, the comparison is against cuBLAS, and the dispatch
// table is the specialisation that `kopt generate` reads.
TEST(ReportE2E, ChartsFromAFakeWorkerRun) {
  TempDir d;
  write_small_gemm(d.path());
  ASSERT_EQ(run_quiet(std::string(KOPT_CLI) + " optimize --spec " + (d.path() / "small_gemm.json").string() +
                      " --arch sm_90 --quiet --top 3 --retime-rounds 1 --budget evals=9 --results-dir " +
                      (d.path() / "results").string() + " --cache-dir " + (d.path() / "cache").string() +
                      " --worker-command " + KOPT_FAKE_WORKER),
            0);
  const stdfs::path run = d.path() / "results" / "run-001";
  const json summary = read_json(run / "summary.json");
  const json spec = read_json(run / "spec.json");
  const auto store = kopt::store::RunStore::open(run, "");
  ASSERT_TRUE(summary.contains("specialization")) << summary.dump(1);

  const rp::ShapeComparison c = rp::compare_shapes(typed(summary), store.history(), spec);
  EXPECT_EQ(c.baseline, "cuBLAS");
  ASSERT_EQ(c.shapes.size(), 4u);
  std::vector<std::string> classes;
  for (const auto& sh : c.shapes) {
    const json& sc = summary["specialization"]["cases"][sh.name];
    EXPECT_DOUBLE_EQ(*sh.tuned_ms, sc["median_ms"].get<double>()) << sh.name;
    EXPECT_EQ(sh.variant, sc["variant"].get<int>()) << sh.name;
    EXPECT_DOUBLE_EQ(*sh.baseline_ms, 1.0) << sh.name;  // the fake worker's cuBLAS
    classes.push_back(sh.shape_class);
  }
  EXPECT_EQ(classes, (std::vector<std::string>{"large (min(M,N) > 1024)", "skinny (min(M,N) <= 16)",
                                               "deep K (K >= 16 max(M,N))", "narrow (min(M,N) <= 64)"}));
  EXPECT_EQ(c.overall.timed, 4);

  const auto points = rp::best_so_far(store.history());
  EXPECT_EQ(points.size(), static_cast<size_t>(summary["budget_used"]["evaluations"].get<int>() + 1));  // + initial
  EXPECT_NEAR(*points.back().best_ms, summary["best"]["geomean_ms"].get<double>(), 1e-9);

  const rp::DispatchTable t = rp::dispatch_table(typed(summary), spec);
  EXPECT_EQ(t.variants.size(), summary["specialization"]["variants"].size());
  EXPECT_EQ(t.size_names, (std::vector<std::string>{"M", "N", "K"}));
  ASSERT_EQ(t.shapes.size(), 4u);
  EXPECT_EQ(t.shapes[0].name, "2048x2048x512");
  for (const auto& sh : t.shapes) EXPECT_TRUE(stdfs::exists(run / t.variants[static_cast<size_t>(sh.variant)].file));

  // The report.html the run wrote shows all of it.
  const std::string html = kopt::fs::read_file(run / "report.html");
  const auto svgs = svgs_of(html);
  ASSERT_EQ(svgs.size(), 4u);
  for (const auto& svg : svgs) EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svgs[1], "class=\"bar tuned\""), 4u);
  EXPECT_EQ(count(svgs[1], "class=\"bar baseline\""), 4u);
  EXPECT_NE(html.find("data-baseline=\"initial\""), std::string::npos) << "the fake worker never times the reference";
  EXPECT_EQ(count(svgs[3], "class=\"cell nodata\""), 0u);
  EXPECT_NE(html.find("<details class=\"raw-json\" id=\"raw-specialization\">"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"name\">2048x2048x512</td><td class=\"num\" data-v=\"2048\">2048</td>"), std::string::npos);
}
