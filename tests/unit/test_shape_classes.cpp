// Shape classes: the grouping of performance cases (model/shape_classes.h),
// and `kopt optimize --shape-classes N` end to end with the fake worker
// (propose/class_search.h; the finalists' re-timing on every case in
// driver/finalists.cpp; screening, CaseSpec::screen_ms).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/attempt.h"
#include "model/shape_classes.h"
#include "propose/proposer.h"
#include "store/fingerprint.h"
#include "spec/spec.h"
#include "support/files.h"
#include "temp_dir.h"
#include "util/fs.h"

namespace {

namespace fsys = std::filesystem;
using kopt::model::group_shape_classes;
using kopt::model::ShapePoint;
using kopt::test::read_json;
using kopt::test::TempDir;
using nlohmann::json;

std::vector<std::string> names_of(const std::vector<ShapePoint>& p, const kopt::model::ShapeClass& c) {
  std::vector<std::string> n;
  for (size_t m : c.members) n.push_back(p[m].name);
  return n;
}

// DeepBench-like regimes (M N K): deep-K skinny, skinny N, M = 35, large.
const std::vector<ShapePoint> kRegimes = {
    {"deep1", {512, 1, 500000}},  {"deep2", {1024, 4, 500000}}, {"skinny1", {7680, 1, 2560}},
    {"skinny2", {6144, 2, 2048}}, {"m35a", {35, 700, 2048}},    {"m35b", {35, 1500, 2560}},
    {"large1", {5124, 1500, 2560}}, {"large2", {7680, 3000, 2560}},
};
const std::vector<std::string> kMNK = {"M", "N", "K"};

TEST(ShapeClasses, GroupsTheRegimesOfAGemmSuite) {
  const auto classes = group_shape_classes(kRegimes, kMNK, 4);
  ASSERT_EQ(classes.size(), 4u);
  std::set<std::vector<std::string>> got;
  for (const auto& c : classes) got.insert(names_of(kRegimes, c));
  const std::set<std::vector<std::string>> want = {
      {"deep1", "deep2"}, {"skinny1", "skinny2"}, {"m35a", "m35b"}, {"large1", "large2"}};
  EXPECT_EQ(got, want);
  // Names give the spans of the sizes.
  for (const auto& c : classes)
    if (names_of(kRegimes, c).front() == "deep1") EXPECT_EQ(c.name, "M 512-1024, N 1-4, K 500000");
}

TEST(ShapeClasses, EveryCaseInExactlyOneClassAndNeverMoreClassesThanAsked) {
  for (int k = 1; k <= 10; ++k) {
    const auto classes = group_shape_classes(kRegimes, kMNK, k);
    EXPECT_EQ(classes.size(), std::min<size_t>(static_cast<size_t>(k), kRegimes.size())) << k;
    std::vector<size_t> all;
    for (const auto& c : classes) all.insert(all.end(), c.members.begin(), c.members.end());
    std::sort(all.begin(), all.end());
    std::vector<size_t> want(kRegimes.size());
    for (size_t i = 0; i < want.size(); ++i) want[i] = i;
    EXPECT_EQ(all, want) << k;
  }
}

TEST(ShapeClasses, OrderStartsWithTheLargestClassThenNearestNeighbours) {
  std::vector<ShapePoint> p = kRegimes;
  p.push_back({"large3", {6144, 6000, 2048}});
  const auto classes = group_shape_classes(p, kMNK, 4);
  ASSERT_EQ(classes.size(), 4u);
  EXPECT_EQ(classes.front().members.size(), 3u) << classes.front().name;  // the three large shapes
  // Each later class is at least as near to one before it as any class after it is.
  for (size_t i = 1; i + 1 < classes.size(); ++i) {
    auto nearest = [&](size_t k) {
      double d = 1e300;
      for (size_t j = 0; j < i; ++j) d = std::min(d, kopt::model::class_distance(p, classes[k], classes[j]));
      return d;
    };
    for (size_t later = i + 1; later < classes.size(); ++later) EXPECT_LE(nearest(i), nearest(later)) << i;
  }
}

TEST(ShapeClasses, DeterministicAndChecksTheSizeCount) {
  const auto a = group_shape_classes(kRegimes, kMNK, 3), b = group_shape_classes(kRegimes, kMNK, 3);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].members, b[i].members);
  EXPECT_THROW(group_shape_classes({{"x", {1, 2}}}, kMNK, 2), std::invalid_argument);
  EXPECT_EQ(kopt::model::auto_shape_classes(5), 0);
  EXPECT_EQ(kopt::model::auto_shape_classes(6), 3);
  EXPECT_EQ(kopt::model::auto_shape_classes(75), 8);
}

// ---------------------------------------------------------------------------
// End to end with the fake worker on the transpose template (4 performance
// cases: with 2 classes, 8192x8192, 4096x4096 and 16384x1024 in one, 1024x16384
// in the other).

const std::string kSpec = std::string(KOPT_SOURCE_DIR) + "/templates/transpose/transpose.json";

std::string optimize(const TempDir& d, const std::string& extra) {
  return std::string(KOPT_CLI) + " optimize --spec " + kSpec + " --arch sm_90 --top 2 --retime-rounds 1" +
         " --results-dir " + (d.path() / "results").string() + " --cache-dir " + (d.path() / "cache").string() +
         " --worker-command " + KOPT_FAKE_WORKER + " " + extra;
}

int run(const std::string& cmd, const fsys::path& err) {
  const int status = std::system((cmd + " >/dev/null 2>" + err.string()).c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// `kopt optimize` in `d` over two shape classes, screening off, with `budget`
// ("evals=N"): it succeeds, its stderr in `err`; *r gets its run folder.
void optimize_two_classes(const TempDir& d, const fsys::path& err, const std::string& budget, fsys::path* r) {
  ASSERT_EQ(run(optimize(d, "--shape-classes 2 --screen-factor 0 --budget " + budget), err), 0)
      << kopt::fs::read_file(err);
  *r = d.path() / "results" / "run-001";
}

std::set<std::string> timed_performance_cases(const json& attempt) {
  std::set<std::string> s;
  for (const auto& c : attempt["cases"])
    if (c["role"] == "performance" && c.contains("latency")) s.insert(c["name"].get<std::string>());
  return s;
}

const std::set<std::string> kAllPerf = {"8192x8192", "16384x1024", "1024x16384", "4096x4096"};

// Without a GPU (--arch: candidates compiled only) nothing is searched, and
// the run does not list the classes as if it searched them.
TEST(ShapeClassesE2E, ACompileOnlyRunDoesNotSayItSearchesTheClasses) {
  TempDir d;
  const fsys::path err = d.path() / "err";
  const int code = run(std::string(KOPT_CLI) + " optimize --spec " + kSpec + " --arch sm_90 --shape-classes 2" +
                           " --budget evals=2 --results-dir " + (d.path() / "results").string() + " --cache-dir " +
                           (d.path() / "cache").string(),
                       err);
  const std::string log = kopt::fs::read_file(err);
  if (code == 0) GTEST_SKIP() << "a CUDA device is present; this covers a run without one";
  ASSERT_EQ(code, 77) << log;
  EXPECT_NE(log.find("checking and timing need a GPU"), std::string::npos) << log;
  EXPECT_EQ(log.find("shape classes, searched in this order"), std::string::npos) << log;
}

TEST(ShapeClassesE2E, EachClassIsSearchedOnItsCasesAndTheFinalistsOnAll) {
  TempDir d;
  const fsys::path err = d.path() / "err";
  fsys::path r;
  ASSERT_NO_FATAL_FAILURE(optimize_two_classes(d, err, "evals=12", &r));
  const std::string log = kopt::fs::read_file(err);
  EXPECT_NE(log.find("2 shape classes, searched in this order"), std::string::npos) << log;
  // The progress line speaks of the class being searched, its geomeans being over its cases.
  EXPECT_NE(log.find("] class 2/2 best "), std::string::npos) << log;
  EXPECT_NE(log.find("re-timing"), std::string::npos) << log;
  const json s = read_json(r / "summary.json");
  ASSERT_TRUE(s.contains("shape_classes")) << s.dump(1);
  const json& classes = s["shape_classes"];
  ASSERT_EQ(classes.size(), 2u);
  std::map<std::string, std::set<std::string>> class_cases;  // "c1:" -> cases
  int64_t total = 0;
  std::set<std::string> covered;
  for (const auto& c : classes) {
    std::set<std::string> cases;
    for (const auto& n : c["cases"]) cases.insert(n.get<std::string>());
    class_cases["c" + std::to_string(c["class"].get<int>()) + ":"] = cases;
    covered.insert(cases.begin(), cases.end());
    total += c["evaluations"].get<int64_t>();
    EXPECT_EQ(c["evaluations"], 6) << "the budget split evenly: " << c.dump();
    EXPECT_TRUE(c.contains("best")) << c.dump();
  }
  EXPECT_EQ(total, 12);
  EXPECT_EQ(covered, kAllPerf);
  EXPECT_EQ(class_cases["c1:"].size(), 3u) << "the larger class first";
  // Every candidate timed on its class's cases alone; the initial kernel on all.
  const json h = read_json(r / "history.json");
  int candidates = 0;
  for (const auto& a : h["attempts"]) {
    if (a["kind"] == "initial") {
      EXPECT_EQ(timed_performance_cases(a), kAllPerf);
      continue;
    }
    ++candidates;
    const std::string label = a["label"].get<std::string>();
    ASSERT_TRUE(class_cases.count(label.substr(0, 3))) << label;
    EXPECT_EQ(timed_performance_cases(a), class_cases[label.substr(0, 3)]) << label;
    EXPECT_EQ(a["cases"].size(), 8u + class_cases[label.substr(0, 3)].size())
        << "every correctness case checked: " << label;
  }
  EXPECT_EQ(candidates, 12);
  // The re-timing timed every finalist on every performance case, and the
  // winner's geomean is over all of them.
  ASSERT_GE(s["retime"].size(), 3u) << s["retime"].dump(1);
  std::set<std::string> finalist_classes;
  for (const auto& e : s["retime"]) {
    std::set<std::string> keys;
    for (const auto& [k, v] : e["cases_median_ms"].items()) keys.insert(k);
    EXPECT_EQ(keys, kAllPerf) << e.dump();
    finalist_classes.insert(e["label"].get<std::string>().substr(0, 3));
  }
  EXPECT_TRUE(finalist_classes.count("c1:") && finalist_classes.count("c2:")) << "each class's best is a finalist";
  ASSERT_TRUE(s.contains("final_best"));
  EXPECT_TRUE(s["final_best"].contains("search_geomean_ms")) << s["final_best"].dump();
  for (const auto& e : s["retime"])
    if (e["label"] == s["final_best"]["label"]) EXPECT_DOUBLE_EQ(e["median_ms"], s["final_best"]["geomean_ms"]);
  // Variants come only from finalists re-timed on every case.
  if (s.contains("specialization"))
    for (const auto& v : s["specialization"]["variants"]) {
      bool retimed = false;
      for (const auto& e : s["retime"]) retimed = retimed || (e["label"] == v["label"] && !e["failed_recheck"]);
      EXPECT_TRUE(retimed) << v.dump();
    }
  // The search's best was timed on its class's cases: no ratio to the initial
  // kernel's geomean over all of them, here or in best.cu.
  ASSERT_TRUE(s["best"].is_object()) << s.dump(1);
  if (s["best"]["kind"] == "candidate") {
    EXPECT_TRUE(s["best"]["speedup_vs_initial"].is_null()) << s["best"].dump();
    EXPECT_TRUE(s["best"].contains("note")) << s["best"].dump();
  }
  const std::string best_cu = kopt::fs::read_file(r / "best.cu");
  if (s["final_best"]["label"].get<std::string>().rfind("c", 0) == 0)
    EXPECT_NE(best_cu.find("its shape class's; summary.json \"final_best\""), std::string::npos) << best_cu.substr(0, 800);
  EXPECT_EQ(best_cu.find("x the initial kernel"), std::string::npos) << best_cu.substr(0, 800);
  // The time split.
  for (const char* k : {"setup_minutes", "search_minutes", "retime_minutes", "total_minutes"})
    EXPECT_TRUE(s["time_split"].contains(k)) << k;
  EXPECT_NE(log.find("wall time"), std::string::npos) << log;
  // Where the search's time went, and the compiles that gave no timing.
  const size_t t = log.find("kopt: search time (min): compiling ");
  ASSERT_NE(t, std::string::npos) << log;
  const std::string line = log.substr(t, log.find('\n', t) - t);
  for (const char* part : {" thread(s), the GPU loop waiting for compiles ", "; worker checking ", ", timed loops ",
                           "; compiles that gave no timing: ", " compile error(s), ", " infeasible, ", " withdrawn"})
    EXPECT_NE(line.find(part), std::string::npos) << part << " in " << line;
}

// Resumes run `r` with `budget` and neither --shape-classes nor
// --screen-factor: both must come from the run (2 classes, factor 0; 4 cases
// alone would mean no classes). The resumed summary.json goes to *summary.
void resume_keeps_the_class_options(const TempDir& d, const fsys::path& r, const fsys::path& err,
                                    const std::string& budget, json* summary) {
  ASSERT_EQ(run(optimize(d, "--resume " + r.string() + " --budget " + budget), err), 0) << kopt::fs::read_file(err);
  const std::string log = kopt::fs::read_file(err);
  EXPECT_NE(log.find("shape classes 2"), std::string::npos) << log;
  EXPECT_NE(log.find("screen factor 0"), std::string::npos) << log;
  *summary = read_json(r / "summary.json");
  EXPECT_EQ((*summary)["screen_factor"], 0.0);
}

TEST(ShapeClassesE2E, ResumeGoesOnWithTheClassWhereItStopped) {
  TempDir d;
  const fsys::path err = d.path() / "err";
  fsys::path r;
  ASSERT_NO_FATAL_FAILURE(optimize_two_classes(d, err, "evals=9", &r));
  {
    const json s = read_json(r / "summary.json");
    EXPECT_EQ(s["shape_classes"][0]["evaluations"], 4);  // 9 / 2
    EXPECT_EQ(s["shape_classes"][1]["evaluations"], 5);
  }
  json s;
  ASSERT_NO_FATAL_FAILURE(resume_keeps_the_class_options(d, r, err, "evals=14", &s));
  int64_t total = 0;
  for (const auto& c : s["shape_classes"]) total += c["evaluations"].get<int64_t>();
  EXPECT_EQ(total, 14) << s["shape_classes"].dump(1);
  // Nothing evaluated twice.
  const json h = read_json(r / "history.json");
  std::set<std::string> labels;
  for (const auto& a : h["attempts"])
    if (a["kind"] == "candidate") EXPECT_TRUE(labels.insert(a["label"].get<std::string>()).second) << a["label"];
}

// A session killed before it wrote its first summary.json: the options come
// from run.json, so the resume still has two classes (4 cases alone would
// mean none) and the screen factor given.
TEST(ShapeClassesE2E, ResumeWithoutASummaryTakesTheOptionsFromRunJson) {
  TempDir d;
  const fsys::path err = d.path() / "err";
  fsys::path r;
  ASSERT_NO_FATAL_FAILURE(optimize_two_classes(d, err, "evals=4", &r));
  EXPECT_EQ(read_json(r / "run.json")["options"], json({{"shape_classes", 2}, {"screen_factor", 0.0}}));
  fsys::remove(r / "summary.json");
  json s;
  ASSERT_NO_FATAL_FAILURE(resume_keeps_the_class_options(d, r, err, "evals=8", &s));
  EXPECT_EQ(s["shape_classes"].size(), 2u) << s.dump(1);
}

// Results are credited to a class by its number and the cases they were
// timed on: a resume with another grouping would credit results timed on
// other cases, so it is refused, naming the option and the run's value, and
// the run folder is left as it was.
TEST(ShapeClassesE2E, ResumeWithAnotherGroupingIsRefused) {
  TempDir d;
  const fsys::path err = d.path() / "err";
  fsys::path r;
  ASSERT_NO_FATAL_FAILURE(optimize_two_classes(d, err, "evals=4", &r));
  const std::string history = kopt::fs::read_file(r / "history.json");
  for (const char* other : {"--shape-classes 3", "--shape-classes off", "--shape-classes auto"}) {
    const std::string cmd = std::string(KOPT_CLI) + " optimize --resume " + r.string() + " --arch sm_90 " + other +
                            " --budget evals=8 --worker-command " + KOPT_FAKE_WORKER;
    EXPECT_EQ(run(cmd, err), 2) << other;
    const std::string e = kopt::fs::read_file(err);
    EXPECT_NE(e.find("[kopt.opt.007] " + std::string(other) + ": the run "), std::string::npos) << e;
    EXPECT_NE(e.find("in 2 shape classes (its --shape-classes 2)"), std::string::npos) << e;
    EXPECT_EQ(kopt::fs::read_file(r / "history.json"), history) << other;
  }
  // The same grouping, given or not, goes on.
  const std::string same = std::string(KOPT_CLI) + " optimize --resume " + r.string() +
                           " --arch sm_90 --shape-classes 2 --budget evals=6 --worker-command " + KOPT_FAKE_WORKER;
  EXPECT_EQ(run(same, err), 0) << kopt::fs::read_file(err);
}

// The fastest medians screening's limits come from: unscreened performance
// cases with a finite positive median lower the record; screened ones are
// counted and left out.
TEST(Screening, FoldFastestMediansKeepsTheLowestUnscreenedMedianPerCase) {
  auto perf = [](const std::string& name, double ms, bool screened) {
    kopt::model::CaseResult c;
    c.name = name;
    c.role = "performance";
    c.latency = kopt::model::latency_stats({ms});
    c.screened = screened;
    return c;
  };
  kopt::model::Attempt a;
  kopt::model::CaseResult small;
  small.name = "small";
  small.role = "correctness";
  a.result.cases = {small, perf("x", 2.0, false), perf("y", 0.5, true), perf("z", 0.0, false), perf("w", 3.0, false)};
  std::map<std::string, double> fastest = {{"x", 1.5}, {"w", 4.0}};
  EXPECT_EQ(kopt::model::fold_fastest_medians(a, fastest), 1);
  EXPECT_EQ(fastest, (std::map<std::string, double>{{"x", 1.5}, {"w", 3.0}}));
  EXPECT_TRUE(kopt::model::has_screened_case(a));
  a.result.cases[2].screened = false;
  EXPECT_FALSE(kopt::model::has_screened_case(a));
  EXPECT_EQ(kopt::model::fold_fastest_medians(a, fastest), 0);
  EXPECT_EQ(fastest.at("y"), 0.5);
}

// A screened case's latency is the probe alone, over the first stage's limit,
// or the first kScreenLaunches timed launches, their median over the second
// stage's limit (kScreenMedianFactor x the same fastest median: tighter than
// a screen factor of 1.2).
void expect_screened_by_a_stage(const json& c) {
  const double median = c["latency"]["median_ms"].get<double>();
  const int samples = c["latency"]["samples"].get<int>();
  if (samples == 1) {
    EXPECT_GT(median, c["screen_ms"].get<double>()) << "the probe alone: " << c.dump();
  } else {
    EXPECT_EQ(samples, 10) << "the probe alone or the first kScreenLaunches launches: " << c.dump();
    ASSERT_TRUE(c.contains("screen_median_ms")) << c.dump();
    EXPECT_GT(median, c["screen_median_ms"].get<double>()) << c.dump();
    EXPECT_LE(median, c["screen_ms"].get<double>()) << "the probe's limit was not checked first: " << c.dump();
  }
}

TEST(ShapeClassesE2E, ScreeningStopsTimingFarSlowerCasesAfterOneProbe) {
  TempDir d;
  const fsys::path err = d.path() / "err";
  // The fake latencies lie in [0.5, 1.5) ms: a factor 1.2 screens many cases.
  ASSERT_EQ(run(optimize(d, "--shape-classes 2 --screen-factor 1.2 --budget evals=16"), err), 0)
      << kopt::fs::read_file(err);
  const fsys::path r = d.path() / "results" / "run-001";
  const json h = read_json(r / "history.json");
  int screened = 0;
  for (const auto& a : h["attempts"])
    for (const auto& c : a["cases"])
      if (c.value("screened", false)) {
        ++screened;
        expect_screened_by_a_stage(c);
      }
  EXPECT_GT(screened, 0);
  const json s = read_json(r / "summary.json");
  int64_t counted = 0;
  for (const auto& c : s["shape_classes"]) counted += c["screened_cases"].get<int64_t>();
  EXPECT_GT(counted, 0) << s["shape_classes"].dump(1);
  EXPECT_EQ(s["screen_factor"], 1.2);
}

// Without shape classes the search screens too: each candidate's limit on a
// case is the factor times the fastest unscreened median of a candidate
// recorded there before it started (the driver sends a candidate before it records the one
// before, so the limit may lag one result behind, never lead).
TEST(ShapeClassesE2E, APlainSearchScreensAgainstTheFastestMedianRecordedBefore) {
  TempDir d;
  const fsys::path err = d.path() / "err";
  ASSERT_EQ(run(optimize(d, "--shape-classes off --screen-factor 1.2 --budget evals=16"), err), 0)
      << kopt::fs::read_file(err);
  const fsys::path r = d.path() / "results" / "run-001";
  const json h = read_json(r / "history.json");
  std::map<std::string, std::vector<double>> medians;  // per case, candidates' unscreened ok medians
  int screened = 0, limited = 0;
  for (const auto& a : h["attempts"]) {
    const bool candidate = a["kind"] == "candidate";
    for (const auto& c : a["cases"]) {
      if (c["role"] != "performance" || !c.contains("latency")) continue;
      const std::string name = c["name"].get<std::string>();
      if (candidate && c.contains("screen_ms")) {
        ++limited;
        const double limit = c["screen_ms"].get<double>();
        const auto& before = medians[name];
        ASSERT_FALSE(before.empty()) << "a limit before any median on " << name << ": " << a["label"];
        const double fastest = *std::min_element(before.begin(), before.end());
        EXPECT_GE(limit, 1.2 * fastest - 1e-9) << a["label"] << " " << name;
        EXPECT_TRUE(std::any_of(before.begin(), before.end(),
                                [&](double m) { return std::abs(1.2 * m - limit) < 1e-9; }))
            << a["label"] << " " << name << ": " << limit << " is not 1.2 x a recorded median";
        if (c.value("screened", false)) {
          ++screened;
          expect_screened_by_a_stage(c);
        }
      }
      if (candidate && a["verdict"] == "ok" && !c.value("screened", false))
        medians[name].push_back(c["latency"]["median_ms"].get<double>());
    }
  }
  EXPECT_GT(limited, 0);
  EXPECT_GT(screened, 0);
  const json s = read_json(r / "summary.json");
  EXPECT_EQ(s["screen_factor"], 1.2);
  EXPECT_EQ(s["screened_cases"], screened);
  EXPECT_FALSE(s.contains("shape_classes"));

  // Off: no limits at all.
  TempDir off;
  ASSERT_EQ(run(optimize(off, "--shape-classes off --screen-factor 0 --budget evals=8"), err), 0)
      << kopt::fs::read_file(err);
  const json h0 = read_json(off.path() / "results" / "run-001" / "history.json");
  for (const auto& a : h0["attempts"])
    for (const auto& c : a["cases"]) EXPECT_FALSE(c.contains("screen_ms")) << a["label"] << ": " << c.dump();
  const json s0 = read_json(off.path() / "results" / "run-001" / "summary.json");
  EXPECT_EQ(s0["screen_factor"], 0.0);
  EXPECT_EQ(s0["screened_cases"], 0);
}

// Screening's second stage: a case whose median over the first
// kScreenLaunches timed launches is more than kScreenMedianFactor times the fastest
// candidate median recorded before is not timed further either; its
// latency is those launches. With the default factor 2 and fake latencies in
// [0.5, 1.5) ms, both stages stop cases.
TEST(ShapeClassesE2E, TheSecondStageStopsCasesAfterTenLaunches) {
  TempDir d;
  const fsys::path err = d.path() / "err";
  ASSERT_EQ(run(optimize(d, "--shape-classes off --budget evals=24"), err), 0) << kopt::fs::read_file(err);
  const fsys::path r = d.path() / "results" / "run-001";
  const json h = read_json(r / "history.json");
  int probe_stops = 0, median_stops = 0, full = 0;
  for (const auto& a : h["attempts"]) {
    if (a["kind"] != "candidate") continue;
    for (const auto& c : a["cases"]) {
      if (c["role"] != "performance" || !c.contains("latency")) continue;
      const double t = c["latency"]["median_ms"].get<double>();
      const int samples = c["latency"]["samples"].get<int>();
      if (!c.contains("screen_ms")) {
        EXPECT_FALSE(c.value("screened", false)) << c.dump();
        continue;
      }
      ASSERT_TRUE(c.contains("screen_median_ms")) << a["label"] << ": " << c.dump();
      const double probe = c["screen_ms"].get<double>(), second = c["screen_median_ms"].get<double>();
      EXPECT_NEAR(second, probe * kopt::propose::kScreenMedianFactor / 2.0, 1e-9) << "both limits from the same fastest median: " << c.dump();
      if (t > probe) {
        EXPECT_TRUE(c.value("screened", false)) << c.dump();
        EXPECT_EQ(samples, 1) << c.dump();
        ++probe_stops;
      } else if (t > second) {
        EXPECT_TRUE(c.value("screened", false)) << c.dump();
        EXPECT_EQ(samples, 10) << "the first kScreenLaunches launches: " << c.dump();
        ++median_stops;
      } else {
        EXPECT_FALSE(c.value("screened", false)) << c.dump();
        ++full;
      }
    }
  }
  EXPECT_GT(probe_stops + median_stops, 0);
  EXPECT_GT(median_stops, 0) << "no case between 1.05x and 2x the fastest: the fake latencies changed";
  EXPECT_GT(full, 0);
  EXPECT_EQ(read_json(r / "summary.json")["screened_cases"], probe_stops + median_stops);
}

// The finalists' re-timing is not screened in a run without classes, nor has
// a second stage in any run: the re-timing requests (a finalist's label again,
// after the search) carry no limit from the search.
TEST(ShapeClassesE2E, TheFinalistsAreRetimedWithoutTheSearchsLimits) {
  for (const char* classes : {"off", "2"}) {
    SCOPED_TRACE(std::string("--shape-classes ") + classes);
    TempDir d;
    const fsys::path err = d.path() / "err", log = d.path() / "requests.jsonl";
    const std::string cmd = "KOPT_FAKE_REQUEST_LOG=" + log.string() + " " +
                            optimize(d, std::string("--shape-classes ") + classes + " --budget evals=16");
    ASSERT_EQ(run(cmd, err), 0) << kopt::fs::read_file(err);
    std::ifstream in(log);
    std::set<std::string> seen;
    int retimed = 0, limited_in_search = 0;
    for (std::string line; std::getline(in, line);) {
      const json rq = json::parse(line);
      const std::string label = rq["candidate"]["label"].get<std::string>();
      const bool again = !seen.insert(label).second;
      for (const auto& c : rq["cases"]) {
        if (!again && c.contains("screen_median_ms")) ++limited_in_search;
        if (!again) continue;
        EXPECT_FALSE(c.contains("screen_median_ms")) << label << ": " << c.dump();
        if (std::string(classes) == "off") EXPECT_FALSE(c.contains("screen_ms")) << label << ": " << c.dump();
      }
      if (again) ++retimed;
    }
    EXPECT_GT(retimed, 0) << "no re-timing request in the log";
    EXPECT_GT(limited_in_search, 0) << "the search set no second-stage limit";
  }
}

// A plain run started with --screen-factor 0 keeps it when resumed without
// the option (the summary records the factor, 0 included).
TEST(ShapeClassesE2E, AResumedPlainRunKeepsScreeningOff) {
  TempDir d;
  const fsys::path err = d.path() / "err";
  ASSERT_EQ(run(optimize(d, "--shape-classes off --screen-factor 0 --budget evals=6"), err), 0)
      << kopt::fs::read_file(err);
  const fsys::path r = d.path() / "results" / "run-001";
  EXPECT_EQ(read_json(r / "summary.json")["screen_factor"], 0.0);
  const size_t before = read_json(r / "history.json")["attempts"].size();
  const std::string resume = std::string(KOPT_CLI) + " optimize --resume " + r.string() +
                             " --arch sm_90 --budget evals=14 --cache-dir " + (d.path() / "cache").string() +
                             " --worker-command " + KOPT_FAKE_WORKER;
  ASSERT_EQ(run(resume, err), 0) << kopt::fs::read_file(err);
  const json h = read_json(r / "history.json");
  ASSERT_GT(h["attempts"].size(), before);
  for (size_t i = before; i < h["attempts"].size(); ++i)
    for (const auto& c : h["attempts"][i]["cases"])
      EXPECT_FALSE(c.contains("screen_ms")) << h["attempts"][i]["label"] << ": " << c.dump();
  EXPECT_EQ(read_json(r / "summary.json")["screen_factor"], 0.0);
}

// A search's best whose latency on a case is one probe launch (screened
// there) is re-timed in full before it is reported, even with --top 1 and
// --retime-rounds 0, which re-time nothing otherwise.
TEST(ShapeClassesE2E, AScreenedBestIsRetimedBeforeItIsReported) {
  TempDir d;
  const fsys::path err = d.path() / "err";
  const std::string cmd = std::string(KOPT_CLI) + " optimize --spec " + kSpec +
                          " --arch sm_90 --top 1 --retime-rounds 0 --shape-classes off --screen-factor 1"
                          " --budget evals=24 --results-dir " + (d.path() / "results").string() +
                          " --cache-dir " + (d.path() / "cache").string() + " --worker-command " + KOPT_FAKE_WORKER;
  ASSERT_EQ(run(cmd, err), 0) << kopt::fs::read_file(err);
  const fsys::path r = d.path() / "results" / "run-001";
  const json h = read_json(r / "history.json");
  const json* best = nullptr;  // the search's best: the fastest ok candidate by its own geomean
  for (const auto& a : h["attempts"])
    if (a["kind"] == "candidate" && a["verdict"] == "ok" &&
        (!best || a["geomean_ms"].get<double>() < (*best)["geomean_ms"].get<double>()))
      best = &a;
  ASSERT_NE(best, nullptr);
  bool screened = false;
  for (const auto& c : (*best)["cases"]) screened = screened || c.value("screened", false);
  ASSERT_TRUE(screened) << "the fake latencies no longer make the best a screened one: " << (*best)["label"];
  const json s = read_json(r / "summary.json");
  ASSERT_TRUE(s.contains("retime")) << "the screened best was reported without re-timing: " << s.dump(1);
  bool retimed = false;
  for (const auto& e : s["retime"]) retimed = retimed || e["label"] == (*best)["label"];
  EXPECT_TRUE(retimed) << s["retime"].dump(1);
  EXPECT_NE(kopt::fs::read_file(err).find("re-timed once although --retime-rounds is 0"), std::string::npos)
      << kopt::fs::read_file(err);
}

/// The transpose template's folder copied into `d`, its spec without the
/// initial kernel (so nothing but the classes' candidates is ever ok).
std::string spec_without_initial(const TempDir& d) {
  const fsys::path dir = d.path() / "transpose";
  fsys::copy(fsys::path(KOPT_SOURCE_DIR) / "templates" / "transpose", dir, fsys::copy_options::recursive);
  json s = read_json(dir / "transpose.json");
  s.erase("initial");
  std::ofstream(dir / "transpose.json") << s.dump(1);
  return (dir / "transpose.json").string();
}

std::string optimize_spec(const TempDir& d, const std::string& spec, const std::string& extra) {
  return std::string(KOPT_CLI) + " optimize --spec " + spec + " --arch sm_90 --top 2" + " --results-dir " +
         (d.path() / "results").string() + " --cache-dir " + (d.path() / "cache").string() + " --worker-command " +
         KOPT_FAKE_WORKER + " " + extra;
}

// Before a case has a candidate median, the cuBLAS baseline's median times
// baseline_screen_factor (4) stands in for the best known there. On the SGEMM
// template (5 performance cases, 2 classes): with the fake cuBLAS at 0.05 ms
// every timed case of every candidate, the first of each class included, gets
// the limit 2 x 4 x 0.05 = 0.4 ms and is screened (the fake latencies lie in
// [0.5, 1.5) ms); with the baseline at 1 ms the first candidate's limit is
// 2 x 4 x 1 = 8 ms and it is timed in full.
TEST(ShapeClassesE2E, TheBaselineBoundsTheScreeningBeforeAnyCandidateIsTimed) {
  const std::string sgemm = std::string(KOPT_SOURCE_DIR) + "/templates/sgemm/sgemm.json";
  for (const double baseline_ms : {0.05, 1.0}) {
    SCOPED_TRACE("fake cuBLAS at " + std::to_string(baseline_ms) + " ms");
    TempDir d;
    const fsys::path err = d.path() / "err";
    const std::string cmd = "KOPT_FAKE_BASELINE_MS=" + std::to_string(baseline_ms) + " " +
                            optimize_spec(d, sgemm, "--shape-classes 2 --budget evals=4 --retime-rounds 1");
    ASSERT_EQ(run(cmd, err), 0) << kopt::fs::read_file(err);
    const fsys::path r = d.path() / "results" / "run-001";
    const json h = read_json(r / "history.json");
    std::set<std::string> first_seen;  // classes whose first candidate was checked
    int timed = 0;
    for (const auto& a : h["attempts"]) {
      if (a["kind"] != "candidate") continue;
      const std::string label = a["label"].get<std::string>();
      const std::string cls = label.substr(0, label.find(':'));
      const bool first = first_seen.insert(cls).second;
      for (const auto& c : a["cases"]) {
        if (c["role"] != "performance" || !c.contains("latency")) continue;
        ++timed;
        ASSERT_TRUE(c.contains("screen_ms")) << label << ": " << c.dump();
        if (baseline_ms < 0.5) {
          EXPECT_NEAR(c["screen_ms"].get<double>(), 0.4, 1e-9) << label << ": " << c.dump();
          EXPECT_TRUE(c.value("screened", false)) << label << ": " << c.dump();
        } else if (first) {
          EXPECT_NEAR(c["screen_ms"].get<double>(), 8.0, 1e-9) << label << ": " << c.dump();
          EXPECT_FALSE(c.value("screened", false)) << label << ": " << c.dump();
        }
      }
    }
    EXPECT_EQ(first_seen.size(), 2u) << h.dump(1);
    EXPECT_GT(timed, 0);
    EXPECT_EQ(read_json(r / "summary.json")["baseline_screen_factor"], 4.0);
    if (baseline_ms >= 0.5) continue;
    // Resumed, the bound comes from the recorded baseline (the run does not time it again): with the
    // fake cuBLAS now at 1 ms, the new candidates' limit is still 0.4 ms.
    const size_t before = h["attempts"].size();
    const std::string resume =
        "KOPT_FAKE_BASELINE_MS=1 " + optimize_spec(d, sgemm, "--resume " + r.string() + " --budget evals=6 --retime-rounds 1");
    ASSERT_EQ(run(resume, err), 0) << kopt::fs::read_file(err);
    const json h2 = read_json(r / "history.json");
    int resumed_timed = 0;
    for (size_t i = before; i < h2["attempts"].size(); ++i) {
      const json& a = h2["attempts"][i];
      EXPECT_NE(a["kind"], "baseline") << "the baseline was timed again on resume";
      if (a["kind"] != "candidate") continue;
      for (const auto& c : a["cases"])
        if (c["role"] == "performance" && c.contains("latency")) {
          ++resumed_timed;
          EXPECT_NEAR(c.value("screen_ms", 0.0), 0.4, 1e-9) << a["label"] << ": " << c.dump();
        }
    }
    EXPECT_GT(resumed_timed, 0) << "the resumed session evaluated no candidate";
  }
}

TEST(ShapeClassesE2E, WithoutAnInitialKernelTheWinnerIsStillReTimedOnEveryCase) {
  TempDir d;
  const fsys::path err = d.path() / "err";
  // One evaluation: only the first class has an ok candidate.
  ASSERT_EQ(run(optimize_spec(d, spec_without_initial(d), "--shape-classes 2 --budget evals=1 --retime-rounds 2"),
                err),
            0)
      << kopt::fs::read_file(err);
  const json s = read_json(d.path() / "results" / "run-001" / "summary.json");
  ASSERT_EQ(s["retime"].size(), 1u) << s.dump(1);
  std::set<std::string> keys;
  for (const auto& [k, v] : s["retime"][0]["cases_median_ms"].items()) keys.insert(k);
  EXPECT_EQ(keys, kAllPerf);
  EXPECT_TRUE(s["final_best"].contains("search_geomean_ms")) << s["final_best"].dump();
  EXPECT_DOUBLE_EQ(s["final_best"]["geomean_ms"].get<double>(), s["retime"][0]["median_ms"].get<double>());
}

TEST(ShapeClassesE2E, RetimeRoundsZeroStillChecksTheFinalistsOnEveryCase) {
  TempDir d;
  const fsys::path err = d.path() / "err";
  ASSERT_EQ(run(optimize_spec(d, kSpec, "--shape-classes 2 --budget evals=8 --retime-rounds 0"), err), 0)
      << kopt::fs::read_file(err);
  EXPECT_NE(kopt::fs::read_file(err).find("although --retime-rounds is 0"), std::string::npos);
  const json s = read_json(d.path() / "results" / "run-001" / "summary.json");
  ASSERT_GE(s["retime"].size(), 2u) << s.dump(1);
  // The winner is a class candidate (the fake latencies make one beat the
  // initial kernel), re-timed on every case, not the initial kernel by default.
  EXPECT_EQ(s["final_best"]["label"].get<std::string>().rfind("c", 0), 0u) << s["final_best"].dump();
  EXPECT_TRUE(s["final_best"].contains("search_geomean_ms"));
}

TEST(ShapeClassesE2E, AClassWhoseMinutesRunOutLeavesItsQueueToTheNext) {
  TempDir d;
  const fsys::path err = d.path() / "err";
  // 100 ms per evaluation, about 30 candidates compiled ahead: without the
  // withdrawal the first class would spend the later classes' minutes.
  ASSERT_EQ(run("KOPT_FAKE_EVAL_MS=100 " +
                    optimize_spec(d, kSpec, "--shape-classes 4 --budget minutes=0.2 --compile-threads 8 --retime-rounds 1"),
                err),
            0)
      << kopt::fs::read_file(err);
  const json s = read_json(d.path() / "results" / "run-001" / "summary.json");
  int64_t withdrawn = 0;
  for (const auto& c : s["shape_classes"]) {
    EXPECT_GE(c["evaluations"].get<int64_t>(), 1) << c.dump();
    withdrawn += c["withdrawn"].get<int64_t>();
  }
  EXPECT_GT(withdrawn, 0) << s["shape_classes"].dump(1);
  EXPECT_EQ(s["tuner"]["withdrawn_before_evaluation"].get<int64_t>(), withdrawn);
}

TEST(ShapeClassesE2E, AClassWhoseSpaceIsExhaustedStillEvaluatesWhatItQueued) {
  TempDir d;
  const fsys::path err = d.path() / "err";
  // A budget larger than the space: each class evaluates every valid
  // configuration; an exhausted search never withdraws anything (only a
  // class's minutes or patience do).
  ASSERT_EQ(run(optimize_spec(d, kSpec, "--shape-classes 2 --strategy exhaustive --budget evals=1000 --compile-threads 8"),
                err),
            0)
      << kopt::fs::read_file(err);
  const json s = read_json(d.path() / "results" / "run-001" / "summary.json");
  ASSERT_TRUE(s["valid_configurations"].is_number()) << s.dump(1);
  for (const auto& c : s["shape_classes"]) {
    EXPECT_EQ(c["evaluations"], s["valid_configurations"]) << c.dump();
    EXPECT_EQ(c["withdrawn"], 0) << c.dump();
  }
}

/// The transpose spec with its files named absolutely and two seeds, then
/// `third`, written to d/seeded.json; *spec gets the document.
fsys::path seeded_transpose(const TempDir& d, const json& third, json* spec) {
  *spec = read_json(kSpec);
  const std::string dir = std::string(KOPT_SOURCE_DIR) + "/templates/transpose/";
  for (const char* k : {"reference", "initial", "template"})
    (*spec)[k]["source"] = dir + (*spec)[k]["source"].get<std::string>();
  (*spec)["tuning"]["seeds"] = json::parse(R"([{"TILE": 64, "BLOCK_ROWS": 16, "PAD": 1, "VEC": 4},
                                               {"TILE": 16, "BLOCK_ROWS": 8, "PAD": 0, "VEC": 1}])");
  (*spec)["tuning"]["seeds"].push_back(third);
  const fsys::path file = d.path() / "seeded.json";
  std::ofstream(file) << spec->dump(1);
  return file;
}

TEST(ShapeClassesE2E, TheSpecsSeedsAreEvaluatedFirstInEveryClass) {
  TempDir d;
  const fsys::path err = d.path() / "err";
  // The third seed is outside the space (TILE % BLOCK_ROWS != 0).
  json spec;
  const fsys::path file = seeded_transpose(d, {{"TILE", 16}, {"BLOCK_ROWS", 32}, {"PAD", 0}, {"VEC", 1}}, &spec);
  ASSERT_EQ(run(optimize_spec(d, file.string(), "--shape-classes 2 --screen-factor 0 --budget evals=10"), err), 0)
      << kopt::fs::read_file(err);
  const std::string log = kopt::fs::read_file(err);
  EXPECT_NE(log.find("$.tuning.seeds: 2 of 3 configuration(s) are in the space and are evaluated first"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("not in the space (first: $.tuning.seeds[2]"), std::string::npos) << log;
  // Class 2 also has class 1's best as seeds, after the spec's.
  EXPECT_NE(log.find("warm start of class 2 ($.tuning.seeds, the best of the nearest tuned classes): "),
            std::string::npos)
      << log;
  std::map<std::string, std::vector<json>> by_class;  // "c1:" -> its candidates' params, in order
  const json h = read_json(d.path() / "results" / "run-001" / "history.json");
  for (const auto& a : h["attempts"])
    if (a["kind"] == "candidate") by_class[a["label"].get<std::string>().substr(0, 3)].push_back(a["params"]);
  ASSERT_EQ(by_class.size(), 2u);
  for (const auto& [c, params] : by_class) {
    ASSERT_GE(params.size(), 2u) << c;
    EXPECT_EQ(params[0], spec["tuning"]["seeds"][0]) << c;
    EXPECT_EQ(params[1], spec["tuning"]["seeds"][1]) << c;
  }
  // Both classes evaluated the seeds: a configuration is re-timed, and is a
  // variant, once however many classes found it.
  const json sum = read_json(d.path() / "results" / "run-001" / "summary.json");
  auto expect_each_once = [](const json& entries, const std::string& what) {
    std::set<std::string> configs;  // the labels without their class prefix
    for (const auto& e : entries) {
      const std::string label = e["label"].get<std::string>();
      EXPECT_TRUE(configs.insert(label.substr(label.find(':') + 1)).second) << what << " twice: " << label;
    }
  };
  expect_each_once(sum["retime"], "re-timed");
  if (sum.contains("specialization")) expect_each_once(sum["specialization"]["variants"], "a variant");
  // The seeds are no part of the workload: the run is the unseeded spec's.
  const std::string run_hash = read_json(d.path() / "results" / "run-001" / "run.json")["spec_hash"];
  EXPECT_EQ(run_hash, kopt::store::spec_fingerprint(kopt::spec::load_spec(kSpec)));
}

TEST(ShapeClassesE2E, SeedsTakeAtMostHalfOfAClassShare) {
  // 2 classes of 3 evaluations: one seed each, then the strategy's own.
  TempDir d;
  const fsys::path err = d.path() / "err";
  json spec;
  const fsys::path file = seeded_transpose(d, {{"TILE", 32}, {"BLOCK_ROWS", 8}, {"PAD", 1}, {"VEC", 1}}, &spec);
  ASSERT_EQ(run(optimize_spec(d, file.string(), "--shape-classes 2 --screen-factor 0 --budget evals=6"), err), 0)
      << kopt::fs::read_file(err);
  const std::string log = kopt::fs::read_file(err);
  EXPECT_NE(log.find("$.tuning.seeds: 1 of 3 configuration(s) are in the space and are evaluated first"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("2 not used, over the seeds' share (first: $.tuning.seeds[1]: at most 1 seed(s), half of "
                     "class 1's 3 evaluations)"),
            std::string::npos)
      << log;
  const json h = read_json(d.path() / "results" / "run-001" / "history.json");
  std::map<std::string, std::set<std::string>> distinct;  // class -> its configurations
  for (const auto& a : h["attempts"])
    if (a["kind"] == "candidate") distinct[a["label"].get<std::string>().substr(0, 3)].insert(a["params"].dump());
  ASSERT_EQ(distinct.size(), 2u);
  for (const auto& [c, configs] : distinct) {
    EXPECT_EQ(configs.size(), 3u) << c << ": a seed and the strategy's own";
    EXPECT_TRUE(configs.count(spec["tuning"]["seeds"][0].dump())) << c;
    EXPECT_FALSE(configs.count(spec["tuning"]["seeds"][1].dump()) && configs.count(spec["tuning"]["seeds"][2].dump()))
        << c;
  }
}

TEST(ShapeClassesE2E, BadValuesAreUsageErrors) {
  TempDir d;
  const fsys::path err = d.path() / "err";
  for (const char* bad : {"--shape-classes 0", "--shape-classes 65", "--shape-classes many", "--screen-factor -1",
                          "--screen-factor nan", "--screen-factor 0.5"}) {
    EXPECT_EQ(run(optimize(d, std::string(bad) + " --budget evals=2"), err), 2) << bad;
    const std::string e = kopt::fs::read_file(err);
    EXPECT_NE(e.find(std::string(bad).substr(0, std::string(bad).find(' '))), std::string::npos) << bad << ": " << e;
  }
  EXPECT_FALSE(fsys::exists(d.path() / "results" / "run-001"));
}

}  // namespace
