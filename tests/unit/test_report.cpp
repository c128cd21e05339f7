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
#include "report/text.h"
#include "store/store.h"
#include "temp_dir.h"
#include "xml_check.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/json_read.h"

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

// Labels of 13 parameters are cut long before the ones that differ: rows are
// labelled by the parameters that vary, a column each, the rest said once.
TEST(Heatmap, RowsAreLabelledByTheParametersThatDiffer) {
  auto h = sample_history();  // the reference, the initial kernel: no parameters
  std::vector<Attempt> tuned;
  int index = 8;
  for (int bm : {64, 128})
    for (int stages : {2, 3}) {
      std::map<std::string, int64_t> p = {{"ASYNC_A", 1}, {"BK", 16}, {"BM", bm},  {"BN", 128}, {"KIND", 0},
                                          {"MINB", 1},    {"PAD", 4},  {"SPLITK", 1}, {"STAGES", stages},
                                          {"TM", 8},      {"TN", 8},  {"WM", 64},   {"WN", 64}};
      std::string label;
      for (const auto& [k, v] : p) label += (label.empty() ? "" : ",") + k + "=" + std::to_string(v);
      Attempt a = attempt(index++, "candidate", label, Verdict::ok, {1.0 * bm / 64, 0.5 * stages, 0.5});
      a.params = p;
      h.push_back(a);
    }
  h.push_back(attempt(index, "candidate", "agent's rewrite", Verdict::ok, {1, 1, 1}));  // no parameters
  const std::string svg = kopt::report::heatmap_svg(h, kCases);
  EXPECT_EQ(xml_problem(svg), "");
  // Columns: # and the two parameters that vary, in the label's order.
  EXPECT_EQ(count(svg, "class=\"param-header\""), 3u);
  EXPECT_NE(svg.find("font-weight=\"bold\" fill=\"#222222\">BM</text>"), std::string::npos);
  EXPECT_LT(svg.find(">BM</text>"), svg.find(">STAGES</text>"));
  // The eleven others, once.
  EXPECT_NE(svg.find("Same in every row with parameters: ASYNC_A=1, BK=16, BN=128, KIND=0, MINB=1, PAD=4, "
                     "SPLITK=1, TM=8, TN=8, WM=64, WN=64</text>"),
            std::string::npos);
  // A candidate's row: its index and its two values, nothing cut.
  const std::string r10 = row_of(svg, 10);  // BM=128, STAGES=2
  EXPECT_NE(r10.find(">#10</text>"), std::string::npos) << r10;
  EXPECT_NE(r10.find("class=\"param\" x=\""), std::string::npos);
  EXPECT_NE(r10.find("\">128</text>"), std::string::npos) << r10;
  EXPECT_NE(r10.find("\">2</text>"), std::string::npos) << r10;
  EXPECT_NE(r10.find("<title>#10 ASYNC_A=1,BK=16,BM=128"), std::string::npos);  // the whole label in the tooltip
  // Nothing of the label columns is cut (the index, the parameters, their
  // headers); a long label of a row without parameters and a verdict across a
  // rejected row may be, with the whole text in their tooltips.
  const std::regex label_text(R"re(<text class="(label|param|param-header)"[^>]*>(<title>[^<]*</title>)?([^<]*)</text>)re");
  int labels = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), label_text); it != std::sregex_iterator(); ++it, ++labels)
    EXPECT_EQ((*it)[3].str().find("\u2026"), std::string::npos) << (*it)[0];
  EXPECT_GE(labels, 3 + 3 * 4);  // 3 headers; an index and two values in each of the 4 tuned rows
  // Rows without parameters keep their label.
  EXPECT_NE(row_of(svg, 1).find("class=\"label-text\""), std::string::npos);
  EXPECT_NE(row_of(svg, 1).find(">reference</text>"), std::string::npos) << row_of(svg, 1);
  EXPECT_NE(row_of(svg, index).find(">agent&#39;s rewrite</text>"), std::string::npos);
  // The cells start right of the labels (the headers' right edges).
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r10, m, std::regex(R"re(<rect class="cell" x="(\d+)")re")));
  const double grid_left = std::stod(m[1]);
  const std::regex header(R"re(class="param-header" x="(\d+)")re");
  int headers = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), header); it != std::sregex_iterator(); ++it, ++headers)
    EXPECT_LT(std::stod((*it)[1]), grid_left);
  EXPECT_EQ(headers, 3);
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
  const auto t = html.find("<table class=\"sortable full\" id=\"history-table\">");
  ASSERT_NE(t, std::string::npos);
  const std::string table = html.substr(t, html.find("</table>", t) - t);
  EXPECT_EQ(count(table, "<tr class=\""), h.size());
  EXPECT_EQ(count(table, "<tr class=\"rejected"), 2u);
  EXPECT_EQ(count(table, "<tr class=\"ok best\""), 1u);
  EXPECT_EQ(count(table, "<th data-type=\"num\">"), 5u);  // #, geomean, speedup, compile, time
  // No column per case (the table would scroll sideways): the heatmap has them.
  EXPECT_EQ(table.find("big ms"), std::string::npos);
  EXPECT_NE(table.find("data-v=\"0.5\""), std::string::npos);  // BM=64's geomean
  EXPECT_NE(table.find("it went wrong on purpose"), std::string::npos);
  // The kind beside the label, for all but candidates.
  EXPECT_NE(table.find("<td class=\"label\">naive.cu <span class=\"kind\">(initial)</span></td>"), std::string::npos);
  EXPECT_NE(table.find("<td class=\"label\">BM=64</td>"), std::string::npos);
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
  auto store = kopt::store::RunStore::create(t.path(), json{{"name", "sgemm"}},
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

// A label of NAME=VALUE pairs without a space wraps between its pairs (a
// <wbr> after each comma), not inside a name; the charts' note names the
// axis they share.
TEST(Report, LongLabelsWrapBetweenPairsAndTheScaleIsNamed) {
  auto h = sample_history();
  h[2].label = "BM=64,BN=128,STAGES=3";  // #3, the best
  json s = sample_summary();
  s["best"]["label"] = h[2].label;
  std::string html = kopt::report::report_html(typed(s), h, "", "x");
  EXPECT_NE(html.find("<td class=\"label\">BM=64,<wbr>BN=128,<wbr>STAGES=3</td>"), std::string::npos);
  EXPECT_NE(html.find("#3 BM=64,<wbr>BN=128,<wbr>STAGES=3 <span class=\"muted\">(candidate)</span>"),
            std::string::npos);
  // The best (0.25 to 1 ms) against the reference (2 to 8 ms): 32x, a log axis.
  EXPECT_NE(html.find("Log scale, one axis for both charts."), std::string::npos);
  // The reference 4 times faster (also where it was timed with #5): 0.25 to
  // 4 ms, 16x, linear.
  for (auto& c : h[0].result.cases) c.latency->median_ms /= 4;
  h[4].result.cases[0].reference_latency->median_ms /= 4;
  html = kopt::report::report_html(typed(s), h, "", "x");
  EXPECT_NE(html.find("Linear scale, one axis for both charts."), std::string::npos);
  EXPECT_EQ(html.find("Log scale"), std::string::npos);
}

// A run with the fake worker: the header says that the timings are made up.
TEST(Report, SaysWhenTheTimingsAreSimulated) {
  const auto h = sample_history();
  json s = sample_summary();
  const std::string real = kopt::report::report_html(typed(s), h, kopt::report::heatmap_svg(h, kCases), "x");
  EXPECT_EQ(real.find("id=\"simulated\""), std::string::npos);
  EXPECT_EQ(real.find("made up"), std::string::npos);
  s["gpu"]["simulated"] = true;
  const std::string fake = kopt::report::report_html(typed(s), h, kopt::report::heatmap_svg(h, kCases), "x");
  const auto p = fake.find("<p class=\"simulated\" id=\"simulated\">simulated (fake worker): the timings are made up.");
  ASSERT_NE(p, std::string::npos);
  EXPECT_LT(p, fake.find("<section id=\"summary\">"));  // before any number
  // The heatmap, on its own a file: its title, a caption under the heading,
  // and each cell's tooltip; the charts' titles and tooltips.
  EXPECT_EQ(real.find(kopt::report::text::kSimulatedTip), std::string::npos);
  const std::string svg = kopt::report::heatmap_svg(h, kCases, true);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_NE(svg.find("data-simulated=\"true\""), std::string::npos);
  EXPECT_NE(svg.find("cases; simulated (fake worker): the timings are made up</title>"), std::string::npos);
  EXPECT_NE(svg.find("<text class=\"simulated\" x=\"12\" y=\"38\""), std::string::npos);
  const std::string tip = std::string(kopt::report::text::kSimulatedTip) + "</title>";
  EXPECT_GT(count(svg, "<rect class=\"cell\""), 0u);
  EXPECT_EQ(count(svg, tip), count(svg, "<rect class=\"cell\""));
  EXPECT_EQ(kopt::report::heatmap_svg(h, kCases).find("simulated"), std::string::npos);
  const std::string with_charts = kopt::report::report_html(typed(s), h, svg, "x");
  EXPECT_GT(count(with_charts, "<circle class=\"point"), 0u);
  EXPECT_EQ(count(with_charts, "ms" + tip + "</circle>"), count(with_charts, "<circle class=\"point"));
  const std::regex title("<title>([^<]*)</title>"), time(R"([0-9] ms\b)");
  size_t timed = 0;
  for (std::sregex_iterator it(with_charts.begin(), with_charts.end(), title), end; it != end; ++it) {
    const std::string t = (*it)[1].str();
    if (!std::regex_search(t, time)) continue;
    ++timed;
    EXPECT_NE(t.find("simulated"), std::string::npos) << t;
  }
  EXPECT_GT(timed, count(svg, tip) + count(with_charts, "<circle class=\"point"));  // the shapes' rows too
  // Only true says so.
  s["gpu"]["simulated"] = "yes";
  EXPECT_EQ(kopt::report::report_html(typed(s), h, "", "x").find("id=\"simulated\""), std::string::npos);
}

// The shipped kernels' errors beside cuBLAS's, per case, ratios over 2 marked.
TEST(Report, ShowsAccuracyBesideCublas) {
  auto h = sample_history();
  Attempt cublas = attempt(8, "baseline", "cuBLAS sgemm (FP32, no TF32)", Verdict::ok, {0.9, 0.45, 0.2});
  const double ulp = std::ldexp(1.0, -24);  // errors in units of 2^-24: ratios exact
  for (auto& c : cublas.result.cases) {
    c.rel_error_max = 2 * ulp;
    c.rel_error_rms = ulp / 2;
  }
  h.push_back(cublas);
  for (auto& c : h[2].result.cases) {  // #3 BM=64, the best
    c.rel_error_max = (c.name == "tall" ? 5 : 3) * ulp;
    c.rel_error_rms = ulp / 2;
  }
  const std::string html = kopt::report::report_html(typed(sample_summary()), h, "", "x");
  const auto sec = html.find("<section id=\"accuracy\">");
  ASSERT_NE(sec, std::string::npos);
  EXPECT_NE(html.find("<a href=\"#accuracy\">Accuracy</a>"), std::string::npos);
  const std::string table = html.substr(sec, html.find("</section>", sec) - sec);
  EXPECT_NE(table.find("The winner, #3 BM=64"), std::string::npos) << table;
  EXPECT_NE(table.find("(attempt #8)"), std::string::npos);
  EXPECT_EQ(count(table, "<tr><td class=\"name\">"), 3u);  // big, tall, wide
  // big: ours 3 units, cuBLAS's 2: 1.5x; the RMS alike: 1x.
  EXPECT_NE(table.find("<tr><td class=\"name\">big</td><td>performance</td><td class=\"num\" data-v=\"1.7881393432617188e-07\">1.79e-07</td>"
                       "<td class=\"num\" data-v=\"1.1920928955078125e-07\">1.19e-07</td><td class=\"num\" data-v=\"1.5\">1.5</td>"),
            std::string::npos)
      << table;
  EXPECT_EQ(count(table, "<td class=\"num\" data-v=\"1\">1</td>"), 3u);
  EXPECT_NE(table.find("<td class=\"num worse\" data-v=\"2.5\">2.5</td>"), std::string::npos);  // tall: over 2x
  // Without errors measured (another tolerance): no section, no link.
  const std::string none = kopt::report::report_html(typed(sample_summary()), sample_history(), "", "x");
  EXPECT_EQ(none.find("id=\"accuracy\""), std::string::npos);
  EXPECT_EQ(none.find("#accuracy"), std::string::npos);
}

// write_reports: what it could not show as the run folder has it, and --out.
TEST(Report, WriteReportsSaysWhatItCouldNotShow) {
  TempDir t;
  auto store = kopt::store::RunStore::create(t.path(), json{{"name", "sgemm"}}, json{{"name", "NVIDIA H200"}}, {});
  for (Attempt a : sample_history()) {
    a.index = 0;
    store.record(a);
  }
  // Missing: made from the history.
  auto w = kopt::report::write_reports(store, kCases);
  EXPECT_EQ(w.html, store.dir() / "report.html");
  EXPECT_EQ(w.heatmap, store.dir() / "heatmap.svg");
  ASSERT_EQ(w.notes.size(), 1u);
  EXPECT_NE(w.notes[0].find("summary.json is missing"), std::string::npos) << w.notes[0];
  // Up to date: nothing to say.
  store.write_summary();
  EXPECT_TRUE(kopt::report::write_reports(store, kCases).notes.empty());
  // Damaged: the file and the JSON path, and the rest is shown.
  json doc = kopt::parse_json_file(store.dir() / "summary.json", "summary");
  doc["final_best"] = "x";
  kopt::fs::write_file_atomic(store.dir() / "summary.json", doc.dump());
  w = kopt::report::write_reports(store, kCases);
  ASSERT_EQ(w.notes.size(), 1u);
  EXPECT_NE(w.notes[0].find("summary.json: $.final_best: expected an object"), std::string::npos) << w.notes[0];
  EXPECT_NE(w.notes[0].find("the report shows the rest of it"), std::string::npos);
  EXPECT_NE(kopt::fs::read_file(w.html).find("#3 BM=64"), std::string::npos);
  // No JSON: made from the history.
  kopt::fs::write_file_atomic(store.dir() / "summary.json", "{ garbage");
  w = kopt::report::write_reports(store, kCases);
  ASSERT_EQ(w.notes.size(), 1u);
  EXPECT_NE(w.notes[0].find("summary.json"), std::string::npos) << w.notes[0];
  EXPECT_NE(w.notes[0].find("made from history.json"), std::string::npos) << w.notes[0];
  // Stale: its history keys are made again.
  store.write_summary();
  Attempt late = attempt(0, "candidate", "late one", Verdict::ok, {0.5, 0.25, 0.125});
  store.record(late);
  w = kopt::report::write_reports(store, kCases);
  ASSERT_EQ(w.notes.size(), 1u);
  EXPECT_NE(w.notes[0].find("counts 7 attempts and history.json 8"), std::string::npos) << w.notes[0];
  // Elsewhere: the report where it is asked for, the heatmap beside it, the run folder untouched.
  const std::string before = kopt::fs::read_file(store.dir() / "report.html");
  w = kopt::report::write_reports(store, kCases, t.path() / "out" / "r.html");
  EXPECT_EQ(w.heatmap, t.path() / "out" / "heatmap.svg");
  EXPECT_TRUE(stdfs::is_regular_file(t.path() / "out" / "r.html"));
  EXPECT_TRUE(stdfs::is_regular_file(t.path() / "out" / "heatmap.svg"));
  EXPECT_EQ(kopt::fs::read_file(store.dir() / "report.html"), before);
  // The performance cases: the spec's (none here: {"name": "sgemm"}), else those the history timed.
  EXPECT_EQ(kopt::report::performance_cases(store), kCases);
}
