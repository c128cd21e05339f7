// heatmap.svg and report.html: structure, escaping, colours, large histories.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "report/report.h"
#include "run/store.h"
#include "temp_dir.h"
#include "xml_check.h"
#include "util/fs.h"
#include "util/json.h"

namespace stdfs = std::filesystem;
using kopt::test::TempDir;
using kopt::test::valid_utf8;
using kopt::test::xml_problem;
using kopt::model::CaseResult;
using kopt::model::LatencyStats;
using kopt::model::Verdict;
using kopt::model::Attempt;
using nlohmann::json;

namespace {

const char* kHostile = "<script>alert(\"x\")</script> & 'q'";
const std::vector<std::string> kCases = {"big", "tall", "wide"};

/// A summary.json document as the report reads it (run::ReadMode::tolerant:
/// what reads of a damaged one is shown).
kopt::run::Summary typed(const json& summary) {
  return kopt::run::Summary::from_json(summary, "summary.json", kopt::run::ReadMode::tolerant);
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

// medians: per case of kCases; a negative value leaves the case untimed.
Attempt attempt(int index, const std::string& kind, const std::string& label, Verdict v,
                std::vector<double> medians = {}) {
  Attempt a;
  a.index = index;
  a.kind = kopt::model::parse_attempt_kind(kind).value();
  a.label = label;
  a.source = "// " + label + "\n";
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
    a.result.cases.push_back(c);
  }
  if (!ok.empty()) a.result.geomean_ms = kopt::model::geomean(ok);
  a.seconds_since_start = index;
  return a;
}

std::vector<Attempt> sample_history() {
  std::vector<Attempt> h;
  h.push_back(attempt(1, "reference", "reference", Verdict::ok, {8, 4, 2}));
  h.push_back(attempt(2, "initial", "naive.cu", Verdict::ok, {16, 8, 4}));        // 0.5x
  h.push_back(attempt(3, "candidate", "BM=64", Verdict::ok, {1, 0.5, 0.25}));     // 8x
  h.push_back(attempt(4, "candidate", kHostile, Verdict::compile_error));
  Attempt r = attempt(5, "candidate", "BM=32", Verdict::ok, {2, 4, 2});
  r.result.cases[0].reference_latency = stats(16);  // timed with it: 16/2 = 8x, not 8/2
  h.push_back(r);
  h.push_back(attempt(6, "candidate", "BM=16", Verdict::wrong_result));
  h.push_back(attempt(7, "candidate", "BM=8", Verdict::ok, {4, -1, 2}));  // "tall" untimed
  return h;
}

// The <g class="row ..."> element of attempt `index`.
std::string row_of(const std::string& svg, int index) {
  const auto p = svg.find("data-index=\"" + std::to_string(index) + "\"");
  if (p == std::string::npos) return "";
  const auto s = svg.rfind("<g ", p);
  return svg.substr(s, svg.find("</g>", p) - s);
}

std::vector<double> speedups_of(const std::string& row) {
  std::vector<double> v;
  static const std::regex re("data-speedup=\"([^\"]+)\"");
  for (auto it = std::sregex_iterator(row.begin(), row.end(), re); it != std::sregex_iterator(); ++it)
    v.push_back(std::stod((*it)[1]));
  return v;
}

}  // namespace

// ---------------------------------------------------------------------------
// Heatmap

TEST(Heatmap, IsStandaloneWellFormedSvg) {
  const std::string svg = kopt::report::heatmap_svg(sample_history(), kCases);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u) << svg.substr(0, 200);
  EXPECT_NE(svg.find(" viewBox=\"0 0 "), std::string::npos);
  EXPECT_TRUE(std::regex_search(svg, std::regex(R"(<svg [^>]*width="\d+" height="\d+")")));
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_TRUE(valid_utf8(svg));
  // No external references.
  EXPECT_EQ(svg.find("href"), std::string::npos);
  EXPECT_EQ(count(svg, "http"), 1u);  // the xmlns only
}

TEST(Heatmap, RowsCellsLegendAndVerdicts) {
  const auto h = sample_history();
  const std::string svg = kopt::report::heatmap_svg(h, kCases);
  EXPECT_EQ(count(svg, "<g class=\"row "), 7u);
  EXPECT_EQ(count(svg, "<g class=\"row ok\""), 5u);
  EXPECT_EQ(count(svg, "<g class=\"row rejected\""), 2u);
  // One cell per case for each passing row; one grey bar per rejected row.
  EXPECT_EQ(count(svg, "<rect class=\"cell"), 5u * kCases.size());
  EXPECT_EQ(count(svg, "<rect class=\"rejected\""), 2u);
  EXPECT_EQ(count(svg, "fill=\"#bdbdbd\""), 3u);  // two rows + the legend swatch
  // Column headers.
  for (const auto& c : kCases) EXPECT_NE(svg.find(">" + c + "</text>"), std::string::npos) << c;
  // Legend: gradient bar, 1x in the middle, rejected swatch.
  EXPECT_NE(svg.find("<g class=\"legend\""), std::string::npos);
  EXPECT_NE(svg.find("url(#kopt-legend-gradient)"), std::string::npos);
  EXPECT_NE(svg.find(">1x</text>"), std::string::npos);
  EXPECT_NE(svg.find(">8x</text>"), std::string::npos);  // range reaches the 8x candidate
  EXPECT_NE(svg.find("rejected"), std::string::npos);
  // Rejected rows show their verdict as text (the detail may be cut to fit;
  // the tooltip has all of it).
  EXPECT_NE(row_of(svg, 4).find("<text class=\"verdict\" x=\""), std::string::npos) << row_of(svg, 4);
  EXPECT_NE(row_of(svg, 4).find("\">compile_error: it went"), std::string::npos) << row_of(svg, 4);
  EXPECT_NE(row_of(svg, 4).find(": compile_error: it went wrong on purpose</title>"), std::string::npos);
  EXPECT_NE(row_of(svg, 6).find("\">wrong_result: "), std::string::npos);
  // Row labels: index and label.
  EXPECT_NE(row_of(svg, 3).find(">#3 BM=64</text>"), std::string::npos) << row_of(svg, 3);
  // The best row is outlined.
  EXPECT_EQ(count(svg, "<rect class=\"best\""), 1u);
  EXPECT_NE(svg.find("<title>best: #3 BM=64</title>"), std::string::npos);
}

TEST(Heatmap, SpeedupIsReferenceMedianOverCandidateMedian) {
  const std::string svg = kopt::report::heatmap_svg(sample_history(), kCases);
  const auto ref = speedups_of(row_of(svg, 1));
  ASSERT_EQ(ref.size(), 3u);
  for (double s : ref) EXPECT_DOUBLE_EQ(s, 1.0);
  const auto slow = speedups_of(row_of(svg, 2));
  ASSERT_EQ(slow.size(), 3u);
  for (double s : slow) EXPECT_DOUBLE_EQ(s, 0.5);
  const auto fast = speedups_of(row_of(svg, 3));
  ASSERT_EQ(fast.size(), 3u);
  for (double s : fast) EXPECT_DOUBLE_EQ(s, 8.0);
  // reference_latency of the attempt wins over the reference attempt's.
  const auto own = speedups_of(row_of(svg, 5));
  ASSERT_EQ(own.size(), 3u);
  EXPECT_DOUBLE_EQ(own[0], 8.0);
  EXPECT_DOUBLE_EQ(own[1], 1.0);
  EXPECT_DOUBLE_EQ(own[2], 1.0);
  // An untimed case is a "no timing" cell.
  const std::string r7 = row_of(svg, 7);
  EXPECT_EQ(speedups_of(r7).size(), 2u);
  EXPECT_EQ(count(r7, "class=\"cell nodata\""), 1u);
  // Colours: faster is blue, slower red, 1x neutral.
  EXPECT_NE(row_of(svg, 3).find("fill=\"#2166ac\""), std::string::npos);
  EXPECT_NE(row_of(svg, 1).find("fill=\"#f7f7f7\""), std::string::npos);
  EXPECT_EQ(row_of(svg, 2).find("fill=\"#2166ac\""), std::string::npos);
}

TEST(Heatmap, EscapesHostileLabelsAndCaseNames) {
  auto h = sample_history();
  h[2].label = kHostile;
  h[1].label = "bad \xff\xfe utf8 \x01 control";
  const std::vector<std::string> cases = {"big", "tall", "<wide & \"quoted\">"};
  const std::string svg = kopt::report::heatmap_svg(h, cases);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  EXPECT_NE(svg.find("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;"), std::string::npos);
  EXPECT_NE(svg.find("&lt;wide &amp; &quot;quoted&quot;&gt;"), std::string::npos);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_TRUE(valid_utf8(svg));
  EXPECT_EQ(svg.find('\x01'), std::string::npos);
}

TEST(Heatmap, LargeHistoryStaysUsable) {
  std::vector<Attempt> h;
  h.push_back(attempt(1, "reference", "reference", Verdict::ok, {8, 4, 2}));
  for (int i = 2; i <= 500; ++i) {
    if (i % 7 == 0)
      h.push_back(attempt(i, "candidate", "BM=" + std::to_string(i), Verdict::timeout));
    else
      h.push_back(attempt(i, "candidate", "BM=" + std::to_string(i), Verdict::ok,
                          {8.0 / (1 + i % 13), 4.0 * (1 + i % 5) / 3, 2.0}));
  }
  const std::string svg = kopt::report::heatmap_svg(h, kCases);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svg, "<g class=\"row "), 500u);
  EXPECT_EQ(count(svg, "<g class=\"row rejected\""), 71u);
  EXPECT_EQ(count(svg, "<rect class=\"cell"), 429u * 3);
  // Rows shrink to the 6 px minimum: the image stays a few thousand px tall.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, std::regex(R"re(height="(\d+)")re")));
  const int height = std::stoi(m[1]);
  EXPECT_GE(height, 500 * 6);
  EXPECT_LE(height, 500 * 6 + 200);
  // Per-row labels give way to index ticks; verdicts stay in tooltips.
  EXPECT_EQ(count(svg, "class=\"label\""), 0u);
  EXPECT_GE(count(svg, "class=\"tick\""), 20u);
  EXPECT_LE(count(svg, "class=\"tick\""), 260u);
  EXPECT_EQ(count(svg, "class=\"verdict\""), 0u);
  EXPECT_NE(svg.find("<title>#7 BM=7: timeout: it went wrong on purpose</title>"), std::string::npos);
}

TEST(Heatmap, EmptyInputs) {
  EXPECT_EQ(xml_problem(kopt::report::heatmap_svg({}, kCases)), "");
  EXPECT_EQ(xml_problem(kopt::report::heatmap_svg(sample_history(), {})), "");
  const std::string svg = kopt::report::heatmap_svg({}, {});
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_NE(svg.find("no attempts yet"), std::string::npos);
}

// ---------------------------------------------------------------------------
// HTML report

namespace {

json sample_summary() {
  return json{{"format_version", 1},
              {"tool_version", "0.1.0"},
              {"run", "run-003"},
              {"workload", "sgemm <fast>"},
              {"gpu", {{"name", "NVIDIA H200"}, {"arch", "sm_90"}}},
              {"best",
               {{"index", 3},
                {"kind", "candidate"},
                {"label", "BM=64"},
                {"params", {{"BM", 64}}},
                {"geomean_ms", 0.5},
                {"cases", json::array({json{{"name", "big"}, {"median_ms", 1.0}, {"mean_ms", 1.0},
                                            {"min_ms", 1.0}, {"max_ms", 1.0}, {"stddev_ms", 0.0},
                                            {"samples", 10}, {"reference_median_ms", 8.0},
                                            {"speedup", 8.0}}})},
                {"speedup_vs_reference", 8.0},
                {"speedup_vs_initial", 16.0}}},
              {"reference_geomean_ms", 4.0},
              {"initial_geomean_ms", 8.0},
              {"counts", {{"ok", 5}, {"compile_error", 1}, {"wrong_result", 1}, {"timeout", 0}}},
              {"attempts", 7},
              {"cublas", {{"geomean_ms", 0.4}, {"note", "<b>not bold</b>"}}}};
}

}  // namespace

TEST(Report, IsStandaloneAndEscaped) {
  const auto h = sample_history();
  const std::string svg = kopt::report::heatmap_svg(h, kCases);
  const std::string html = kopt::report::report_html(typed(sample_summary()), h, svg,
                                                      "if (a < b && c > d) x = \"</pre>\";\n");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<meta charset=\"utf-8\">"), std::string::npos);
  EXPECT_TRUE(valid_utf8(html));
  // No network: no external scripts, styles, images or fonts.
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  // Only the SVGs' xmlns: the heatmap, the two comparison charts, the progress chart.
  EXPECT_EQ(count(html, "<svg xmlns=\"http://www.w3.org/2000/svg\""), 4u);
  EXPECT_EQ(count(html, "http://") + count(html, "https://"), 4u);
  EXPECT_EQ(count(html, "<script"), 1u);  // ours, inline
  EXPECT_EQ(count(html, "</script>"), 1u);
  EXPECT_EQ(count(html, "<style>"), 1u);
  // Escaping: labels, workload, extras, source.
  EXPECT_NE(html.find("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("sgemm &lt;fast&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<b>not bold</b>"), std::string::npos);
  EXPECT_NE(html.find("<pre><code>if (a &lt; b &amp;&amp; c &gt; d) x = &quot;&lt;/pre&gt;&quot;;\n</code></pre>"),
            std::string::npos);
  // The heatmap is inlined (without an XML declaration).
  EXPECT_NE(html.find(svg), std::string::npos);
  EXPECT_EQ(html.find("<?xml"), std::string::npos);
}

TEST(Report, SummaryAndSortableHistory) {
  const auto h = sample_history();
  const std::string html =
      kopt::report::report_html(typed(sample_summary()), h, kopt::report::heatmap_svg(h, kCases), "x");
  for (const char* want : {"NVIDIA H200 (sm_90)", "8x", "16x", "0.5 ms", "#3 BM=64", "BM=64",
                           "compile_error: 1", "wrong_result: 1", "run-003", "cublas", "Best kernel per case"})
    EXPECT_NE(html.find(want), std::string::npos) << want;
  // History table: one body row per attempt, numeric columns marked.
  const auto t = html.find("<table class=\"sortable\" id=\"history-table\">");
  ASSERT_NE(t, std::string::npos);
  const std::string table = html.substr(t, html.find("</table>", t) - t);
  EXPECT_EQ(count(table, "<tr class=\""), h.size());
  EXPECT_EQ(count(table, "<tr class=\"rejected"), 2u);
  EXPECT_EQ(count(table, "<tr class=\"ok best\""), 1u);
  EXPECT_GE(count(table, "<th data-type=\"num\">"), 7u);  // #, geomean, speedup, 3 cases, compile, time
  EXPECT_NE(table.find("<th data-type=\"num\">big ms</th>"), std::string::npos);
  EXPECT_NE(table.find("data-v=\"0.25\""), std::string::npos);
  EXPECT_NE(table.find("it went wrong on purpose"), std::string::npos);
  // Numbers sort numerically: the script compares Number(data-v).
  EXPECT_NE(html.find("Number(x) - Number(y)"), std::string::npos);
  EXPECT_NE(html.find("addEventListener('click'"), std::string::npos);
}

// The final interleaved re-timing may name another winner than the search's
// fastest measurement: the report shows the re-timing's winner, its cuBLAS
// ratio and the shape-specialised figures.
TEST(Report, ShowsTheRetimedWinnerAndSpecialisation) {
  auto h = sample_history();
  h.push_back(attempt(8, "candidate", "BM=128", Verdict::ok, {1.1, 0.55, 0.26}));
  json s = sample_summary();
  s["attempts"] = h.size();
  s["final_best"] = {{"index", 8}, {"label", "BM=128"}, {"params", {{"BM", 128}}}, {"geomean_ms", 0.52},
                     {"speedup_vs_reference", 7.7}, {"speedup_vs_initial", 15.4}, {"ratio_to_cublas", 0.931}};
  s["cublas_geomean_ms"] = 0.484;
  s["specialization"] = {{"geomean_ms", 0.497}, {"ratio_to_cublas", 0.974},
                         {"variants", json::array({json{{"variant", 0}}, json{{"variant", 1}}})}};
  const std::string html = kopt::report::report_html(typed(s), h, kopt::report::heatmap_svg(h, kCases), "// BM=128\n");
  for (const char* want : {"#8 BM=128", "0.931", "0.974 of cuBLAS", "2 shape-specialised variant(s)", "0.52 ms"})
    EXPECT_NE(html.find(want), std::string::npos) << want;
  EXPECT_NE(html.find("<th>Best attempt</th><td>#8 BM=128"), std::string::npos)
      << "the re-timing's winner, not the search-time best (#3)";
}

TEST(Report, WithoutABestAttempt) {
  std::vector<Attempt> h = {attempt(1, "candidate", "A", Verdict::timeout)};
  json s = sample_summary();
  s["best"] = nullptr;
  const std::string html = kopt::report::report_html(typed(s), h, kopt::report::heatmap_svg(h, kCases), "");
  EXPECT_NE(html.find("No attempt passed every check"), std::string::npos);
  EXPECT_EQ(count(html, "<pre><code>"), 0u);
  // A summary of the wrong shape does not crash the report.
  EXPECT_NO_THROW(kopt::report::report_html(typed(json::array()), h, "", ""));
  EXPECT_NO_THROW(kopt::report::report_html(typed(json{{"best", "weird"}, {"gpu", 3}}), h, "", ""));
}

TEST(Report, WriteReportsIntoTheRunFolder) {
  TempDir t;
  auto store = kopt::run::RunStore::create(t.path(), json{{"name", "sgemm"}},
                                           json{{"name", "NVIDIA H200"}, {"arch", "sm_90"}}, {});
  for (Attempt a : sample_history()) {
    a.index = 0;
    store.record(a);
  }
  store.write_summary({{"cublas", {{"geomean_ms", 0.4}}}});
  kopt::report::write_reports(store, kCases);
  const std::string svg = kopt::fs::read_file(store.dir() / "heatmap.svg");
  const std::string html = kopt::fs::read_file(store.dir() / "report.html");
  EXPECT_EQ(svg.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg ", 0), 0u);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("cublas"), std::string::npos);  // the caller's extras survive
  EXPECT_NE(html.find("<pre><code>// BM=64\n</code></pre>"), std::string::npos);  // best source
  EXPECT_NE(html.find("sgemm"), std::string::npos);
  EXPECT_EQ(count(html, "<g class=\"row "), 7u);

  // An up-to-date summary.json is shown as written (extras overriding
  // standard keys included)...
  store.write_summary({{"reference_geomean_ms", 123.0}});
  kopt::report::write_reports(store, kCases);
  EXPECT_NE(kopt::fs::read_file(store.dir() / "report.html").find("<td>123 ms</td>"), std::string::npos);
  // ...a stale one (attempts recorded after it) is rebuilt, keeping extras.
  store.write_summary({{"cublas", {{"geomean_ms", 0.4}}}});
  Attempt late = attempt(0, "candidate", "late one", Verdict::ok, {0.5, 0.25, 0.125});
  store.record(late);
  kopt::report::write_reports(store, kCases);
  const std::string html2 = kopt::fs::read_file(store.dir() / "report.html");
  EXPECT_NE(html2.find("cublas"), std::string::npos);
  EXPECT_NE(html2.find("#8 late one"), std::string::npos);  // the new best
  EXPECT_NE(html2.find("<th>Attempts</th><td>8</td>"), std::string::npos);
  EXPECT_EQ(count(kopt::fs::read_file(store.dir() / "heatmap.svg"), "<g class=\"row "), 8u);
}
