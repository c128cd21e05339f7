// Kernel Tuner interop (store/interop.h): a run folder as T4 results, T4
// results and Kernel Tuner cache files read back as a warm start, the search
// proposer's seeds, and the CLI end to end (`kopt export --format t4`,
// `kopt optimize --warm-start`) with the fake worker standing in for the GPU.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/attempt.h"
#include "propose/search_proposer.h"
#include "store/interop.h"
#include "store/store.h"
#include "spec_error.h"
#include "support/files.h"
#include "support/run_fixture.h"
#include "support/shell.h"
#include "temp_dir.h"
#include "util/error.h"
#include "util/fs.h"

namespace {

namespace fsys = std::filesystem;
using kopt::model::Attempt;
using kopt::model::Verdict;
using kopt::test::ShellRun;
using kopt::test::read_json;
using kopt::test::run_shell;
using kopt::test::TempDir;
using kopt::test::spec_error;
using nlohmann::json;

const std::string kData = std::string(KOPT_TEST_DATA_DIR) + "/interop";

void write(const fsys::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

/// The SpecError `f` throws: its id and message (fails the test when none).
// ---------------------------------------------------------------------------
// Export

/// A synthetic attempt (kopt::test::synthetic_attempt: three launches a
/// performance case) labelled by its configuration, then a correctness case "1x1".
Attempt attempt(const std::string& kind, std::map<std::string, int64_t> params, Verdict v,
                const kopt::test::CaseMedians& cases = {}) {
  Attempt a = kopt::test::synthetic_attempt(kind, kopt::search::config_key(params), params, v, cases);
  a.source = "// kernel\n";
  a.result.compile_ms = 321.5;
  a.result.check_ms = 12.25;
  a.result.timing_ms = 40.5;
  if (v != Verdict::ok) a.result.detail = "why";
  kopt::model::CaseResult small;
  small.name = "1x1";
  small.role = "correctness";
  small.passed = v == Verdict::ok;
  a.result.cases.push_back(small);
  return a;
}

fsys::path make_run(const TempDir& d, const std::vector<Attempt>& attempts) {
  return kopt::test::make_run(d / "results", attempts, json{{"format_version", 1}, {"name", "t"}},
                              json{{"name", "Fake GPU"}})
      .dir();
}

TEST(InteropExport, MapsEveryVerdictAndLeavesOutWhatIsNoConfiguration) {
  TempDir d;
  const std::vector<std::pair<std::string, double>> one = {{"big", 2.0}};
  std::vector<Attempt> as = {attempt("reference", {}, Verdict::ok, one), attempt("initial", {}, Verdict::ok, one),
                             attempt("baseline", {}, Verdict::ok, one)};
  const Verdict verdicts[] = {Verdict::ok,           Verdict::compile_error, Verdict::infeasible,
                              Verdict::launch_error, Verdict::runtime_error, Verdict::timeout,
                              Verdict::wrong_result, Verdict::out_of_bounds, Verdict::nondeterministic,
                              Verdict::worker_crash, Verdict::compiled};
  int64_t n = 0;
  for (Verdict v : verdicts) as.push_back(attempt("candidate", {{"TILE", 16 << (n % 3)}, {"N", n++}}, v, one));
  const fsys::path run = make_run(d, as);

  const kopt::store::T4Export x = kopt::store::export_t4(run);
  EXPECT_EQ(x.exported, 10);
  EXPECT_EQ(x.not_configurations, 3);
  EXPECT_EQ(x.compiled_only, 1);
  EXPECT_EQ(x.doc.at("schema_version"), "1.0.0");
  const json& r = x.doc.at("results");
  ASSERT_EQ(r.size(), 10u);
  const char* expected[] = {"correct", "compile",     "constraints", "runtime",     "runtime",
                            "timeout", "correctness", "runtime",     "correctness", "runtime"};
  for (size_t i = 0; i < r.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(r[i].at("invalidity"), expected[i]);
    EXPECT_EQ(r[i].at("correctness"), i == 0 ? 1 : 0);
    EXPECT_EQ(r[i].at("configuration").at("N"), static_cast<int64_t>(i));
    EXPECT_EQ(r[i].at("objectives"), json::array({"time"}));
    EXPECT_DOUBLE_EQ(r[i].at("times").at("compilation_time").get<double>(), 321.5);
    EXPECT_DOUBLE_EQ(r[i].at("times").at("validation").get<double>(), 12.25);
    EXPECT_TRUE(r[i].at("timestamp").is_string());
    EXPECT_NE(r[i].at("timestamp").get<std::string>().find("+00:00"), std::string::npos);
  }
  // The valid one: its objective in ms, its per-case median, its launches (one performance case).
  const json& m = r[0].at("measurements");
  ASSERT_EQ(m.size(), 2u) << m.dump();
  EXPECT_EQ(m[0].at("name"), "time");
  EXPECT_EQ(m[0].at("unit"), "ms");
  EXPECT_DOUBLE_EQ(m[0].at("value").get<double>(), 2.0);
  EXPECT_EQ(m[1].at("name"), "time:big");
  EXPECT_EQ(r[0].at("times").at("runtimes").size(), 3u);
  EXPECT_TRUE(r[1].at("measurements").empty());
  EXPECT_TRUE(r[1].at("times").at("runtimes").empty());
}

TEST(InteropExport, SeveralPerformanceCasesGiveTheGeomeanAndNoRuntimeSeries) {
  TempDir d;
  const fsys::path run =
      make_run(d, {attempt("candidate", {{"A", 1}}, Verdict::ok, {{"x", 1.0}, {"y", 4.0}})});
  const json r = kopt::store::export_t4(run).doc.at("results").at(0);
  EXPECT_DOUBLE_EQ(r.at("measurements").at(0).at("value").get<double>(), 2.0);
  EXPECT_EQ(r.at("measurements").size(), 3u);
  EXPECT_TRUE(r.at("times").at("runtimes").empty());
}

TEST(InteropExport, CountsTheCandidatesScreenedOnACase) {
  TempDir d;
  Attempt screened = attempt("candidate", {{"A", 2}}, Verdict::ok, {{"x", 3.0}});
  for (auto& c : screened.result.cases)
    if (c.role == "performance") c.screened = true;
  const fsys::path run =
      make_run(d, {attempt("candidate", {{"A", 1}}, Verdict::ok, {{"x", 1.0}}), screened,
                   attempt("candidate", {{"A", 3}}, Verdict::wrong_result, {{"x", 1.0}})});
  const kopt::store::T4Export x = kopt::store::export_t4(run);
  EXPECT_EQ(x.exported, 3);
  EXPECT_EQ(x.screened, 1);
}

TEST(InteropExport, NotARunFolderIsNamed) {
  TempDir d;
  try {
    kopt::store::export_t4(d.path());
    FAIL() << "no error";
  } catch (const kopt::UsageError& e) {
    EXPECT_EQ(e.id(), "kopt.run.901");
    EXPECT_NE(std::string(e.what()).find(d.path().string()), std::string::npos) << e.what();
  }
}

TEST(InteropExport, InvalidityTable) {
  EXPECT_EQ(kopt::store::t4_invalidity(kopt::model::parse_verdict("ok")), "correct");
  EXPECT_EQ(kopt::store::t4_invalidity(kopt::model::parse_verdict("compile_error")), "compile");
  EXPECT_EQ(kopt::store::t4_invalidity(kopt::model::parse_verdict("infeasible")), "constraints");
  EXPECT_EQ(kopt::store::t4_invalidity(kopt::model::parse_verdict("timeout")), "timeout");
  EXPECT_EQ(kopt::store::t4_invalidity(kopt::model::parse_verdict("wrong_result")), "correctness");
  EXPECT_EQ(kopt::store::t4_invalidity(kopt::model::parse_verdict("worker_crash")), "runtime");
}

// ---------------------------------------------------------------------------
// Reading a warm start

TEST(InteropWarmStart, ReadsKernelTunerCacheBestFirst) {
  const kopt::store::WarmStart w = kopt::store::read_warm_start(kData + "/transpose_kernel_tuner_cache.json");
  EXPECT_EQ(w.format, "Kernel Tuner cache");
  EXPECT_EQ(w.device, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(w.kernel, "transpose_tuned");
  EXPECT_EQ(w.objective, "time");
  EXPECT_TRUE(w.note.empty());
  ASSERT_EQ(w.entries.size(), 6u);
  // Valid ones by time: 48,8,0,1 (0.3), 64,16,1,2 (0.48), 32,8,1,1 (0.52), 16,4,0,4 (0.9); then the failed ones.
  EXPECT_EQ(w.entries[0].path, "$.cache[\"48,8,0,1\"]");
  EXPECT_EQ(w.entries[1].config, (std::map<std::string, int64_t>{{"TILE", 64}, {"BLOCK_ROWS", 16}, {"PAD", 1}, {"VEC", 2}}));
  EXPECT_DOUBLE_EQ(*w.entries[1].time_ms, 0.48);
  EXPECT_EQ(w.entries[3].path, "$.cache[\"16,4,0,4\"]");
  EXPECT_EQ(w.entries[4].failed, "CompilationFailedConfig");
  EXPECT_EQ(w.entries[5].failed, "InvalidConfig");
  EXPECT_FALSE(w.entries[4].time_ms);
}

TEST(InteropWarmStart, ReadsAnOpenKernelTunerCacheAsIfClosed) {
  const kopt::store::WarmStart w = kopt::store::read_warm_start(kData + "/transpose_kernel_tuner_cache_open.json");
  EXPECT_EQ(w.format, "Kernel Tuner cache");
  EXPECT_NE(w.note.find("not closed"), std::string::npos);
  ASSERT_EQ(w.entries.size(), 2u);
  EXPECT_EQ(w.entries[0].path, "$.cache[\"16,16,1,1\"]");  // 0.55 before 0.61

  // Just the header: a session stopped before its first result.
  TempDir d;
  write(d / "open.json",
        "{\n\"device_name\": \"X\",\n\"kernel_name\": \"k\",\n\"tune_params_keys\": [\n\"A\"\n],\n\"cache\": {");
  EXPECT_TRUE(kopt::store::read_warm_start(d / "open.json").entries.empty());
}

TEST(InteropWarmStart, CacheValuesFromTheKeyAndValuesThatAreNoIntegers) {
  TempDir d;
  write(d / "c.json", R"({"tune_params_keys": ["A", "B"], "cache": {
    "1,2": {"time": 1.5},
    "3,x": {"time": 1.0},
    "4,5": {"A": 4, "B": 0.5, "time": 2.0},
    "6,7": {"A": 6.0, "B": true, "time": 3.0}}})");
  const kopt::store::WarmStart w = kopt::store::read_warm_start(d / "c.json");
  ASSERT_EQ(w.entries.size(), 4u);
  EXPECT_EQ(w.entries[0].config, (std::map<std::string, int64_t>{{"A", 1}, {"B", 2}}));
  EXPECT_TRUE(w.entries[0].unusable.empty());
  EXPECT_NE(w.entries[1].unusable.find("B=\"x\" is not an integer"), std::string::npos) << w.entries[1].unusable;
  EXPECT_NE(w.entries[2].unusable.find("B=0.5 is not an integer"), std::string::npos) << w.entries[2].unusable;
  EXPECT_EQ(w.entries[3].config.at("A"), 6);
  EXPECT_NE(w.entries[3].unusable.find("B=true"), std::string::npos) << w.entries[3].unusable;
}

TEST(InteropWarmStart, ReadsT4Results) {
  const kopt::store::WarmStart w = kopt::store::read_warm_start(kData + "/kernel_tuner_style_t4.json");
  EXPECT_EQ(w.format, "T4 results");
  EXPECT_EQ(w.objective, "time");
  ASSERT_EQ(w.entries.size(), 3u);
  EXPECT_EQ(w.entries[0].path, "$.results[2]");  // 0.75 ms
  EXPECT_DOUBLE_EQ(*w.entries[0].time_ms, 0.75);
  EXPECT_EQ(w.entries[1].path, "$.results[0]");
  EXPECT_DOUBLE_EQ(*w.entries[1].time_ms, 1.3333);
  EXPECT_EQ(w.entries[2].failed, "invalidity \"compile\"");
  EXPECT_EQ(w.entries[2].config.at("block_size_x"), 64);
}

TEST(InteropWarmStart, T4TimeFromUnitsOrRuntimes) {
  TempDir d;
  write(d / "t.json", R"({"schema_version": "1.0.0", "results": [
    {"configuration": {"A": 1}, "times": {"runtimes": [2, 4]}, "invalidity": "correct", "correctness": 1},
    {"configuration": {"A": 2}, "times": {}, "invalidity": "correct", "correctness": 1,
     "measurements": [{"name": "time", "value": 0.001, "unit": "s"}]},
    {"configuration": {"A": 3}, "times": {}, "invalidity": "correct", "correctness": 0.5},
    {"configuration": {"A": 4}, "times": {}, "invalidity": "correct", "correctness": 1}]})");
  const kopt::store::WarmStart w = kopt::store::read_warm_start(d / "t.json");
  ASSERT_EQ(w.entries.size(), 4u);
  EXPECT_EQ(w.entries[0].config.at("A"), 2);
  EXPECT_DOUBLE_EQ(*w.entries[0].time_ms, 1.0);
  EXPECT_EQ(w.entries[1].config.at("A"), 1);
  EXPECT_DOUBLE_EQ(*w.entries[1].time_ms, 3.0);
  EXPECT_EQ(w.entries[2].config.at("A"), 4);  // valid, time unknown
  EXPECT_FALSE(w.entries[2].time_ms);
  EXPECT_EQ(w.entries[3].failed, "correctness 0.5");
}

TEST(InteropWarmStart, ErrorsNameTheFileAndTheJsonPath) {
  TempDir d;
  struct Case {
    const char* text;
    const char* id;
    const char* where;
  };
  const Case cases[] = {
      {R"([1, 2])", "kopt.interop.001", ": $: expected T4 results or a Kernel Tuner cache"},
      {R"({"name": "x"})", "kopt.interop.001", ": $: neither T4 results"},
      {R"({"results": {}})", "kopt.json.005", ": $.results: "},
      {R"({"results": [{"configuration": {"A": 1}, "invalidity": "fine"}]})", "kopt.interop.002",
       ": $.results[0].invalidity: expected one of timeout, compile"},
      {R"({"results": [{"invalidity": "correct"}]})", "kopt.json.005", ": $.results[0]: "},
      {R"({"results": [{"configuration": [1], "invalidity": "correct"}]})", "kopt.json.005",
       ": $.results[0].configuration: "},
      {R"({"schema_version": "2.0.0", "results": []})", "kopt.interop.003", ": $.schema_version: "},
      {R"({"schema_version": "one", "results": []})", "kopt.interop.002", ": $.schema_version: "},
      {R"({"tune_params_keys": ["A", "B"], "cache": {"1": {"A": 1, "time": 1}}})", "kopt.interop.002",
       ": $.cache[\"1\"]: has no \"B\""},
      {R"({"tune_params_keys": ["A"], "cache": {"1": {"times": []}}})", "kopt.json.005", ": $.cache[\"1\"]: "},
      {R"({"tune_params_keys": ["A"], "cache": {"1": {"time": -1}}})", "kopt.json.005", ": $.cache[\"1\"].time: "},
      {R"({"tune_params_keys": "A", "cache": {}})", "kopt.json.005", ": $.tune_params_keys: "},
      // A recorded time that cannot be one is refused, never skipped without a word.
      {R"({"results": [{"configuration": {"A": 1}, "invalidity": "correct",
           "measurements": [{"name": "time", "value": 1, "unit": "furlong"}]}]})",
       "kopt.interop.002", ": $.results[0].measurements[0].unit: expected a unit of time"},
      {R"({"results": [{"configuration": {"A": 1}, "invalidity": "correct",
           "measurements": [{"name": "time", "value": -1.5, "unit": "ms"}]}]})",
       "kopt.json.005", ": $.results[0].measurements[0].value: the number -1.5 is out of range"},
      {R"({"results": [{"configuration": {"A": 1}, "invalidity": "correct",
           "measurements": [{"name": "time", "value": "1.5", "unit": "ms"}]}]})",
       "kopt.json.005", ": $.results[0].measurements[0].value: expected a number"},
      {R"({"results": [{"configuration": {"A": 1}, "invalidity": "correct", "times": {"runtimes": [1, "2"]}}]})",
       "kopt.json.005", ": $.results[0].times.runtimes[1]: expected a number"},
      {R"({"tune_params_keys": ["A"], "cache": {"1": {"time": "fast"}}})", "kopt.interop.002",
       ": $.cache[\"1\"].time: expected a time in ms or one of InvalidConfig"},
      {R"({"results": [}")", "kopt.json.001", ""},
      {R"({"a": 1, "a": 2, "results": []})", "kopt.json.002", ""},
  };
  int n = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const fsys::path f = d / ("w" + std::to_string(++n) + ".json");
    write(f, c.text);
    const auto [id, what] = spec_error([&] { kopt::store::read_warm_start(f); });
    EXPECT_EQ(id, c.id) << what;
    EXPECT_NE(what.find(f.string() + c.where), std::string::npos) << what;
  }
  const auto [id, what] = spec_error([&] { kopt::store::read_warm_start(d / "missing.json"); });
  EXPECT_EQ(id, "kopt.io.003") << what;
  EXPECT_NE(what.find("warm-start file"), std::string::npos) << what;
}

// ---------------------------------------------------------------------------
// Seeds of the search proposer

using kopt::propose::Proposal;
using kopt::propose::SearchProposer;
using kopt::propose::SearchProposerOptions;
using kopt::propose::Seed;

SearchProposerOptions small_space(const std::string& strategy) {
  SearchProposerOptions o;
  o.base.source = "// template";
  o.params = {{"A", {1, 2, 4, 8}}, {"B", {1, 2, 4}}};
  o.constraints = {kopt::spec::Expr::parse("A * B <= 16")};
  o.strategy = strategy;
  o.seed = 3;
  return o;
}

Seed seed(std::map<std::string, int64_t> c, const std::string& at, const std::string& skip = "",
          const std::string& kind = "") {
  return Seed{std::move(c), at, skip, kind};
}

/// Runs the proposer to the end (up to `limit` proposals), pipelined two
/// deep; returns the configurations in proposal order.
std::vector<std::string> drive(SearchProposer& p, size_t limit = 100) {
  std::vector<std::string> order;
  std::vector<kopt::spec::Candidate> inflight;
  int index = 0;
  for (;;) {
    Proposal prop = p.propose();
    if (prop.kind == Proposal::Kind::candidate) {
      order.push_back(kopt::search::config_key(prop.candidate.params));
      inflight.push_back(prop.candidate);
      if (inflight.size() < 2 && order.size() < limit) continue;
    }
    if (inflight.empty()) break;
    const kopt::spec::Candidate c = inflight.front();
    inflight.erase(inflight.begin());
    Attempt a;
    a.index = ++index;
    a.params = c.params;
    a.result.verdict = Verdict::ok;
    a.result.geomean_ms = 1.0 + static_cast<double>(c.params.at("A") * 10 + c.params.at("B"));
    p.observe(c, a);
    if (order.size() >= limit && inflight.empty()) break;
  }
  return order;
}

TEST(InteropSeeds, FittingSeedsComeFirstAndAreNeverProposedAgain) {
  for (const std::string& strategy : {"exhaustive", "random", "anneal", "genetic", "surrogate", "portfolio"}) {
    SCOPED_TRACE(strategy);
    SearchProposerOptions o = small_space(strategy);
    o.seeds = {seed({{"A", 8}, {"B", 2}}, "$.r[0]"),
               seed({{"A", 8}, {"B", 4}}, "$.r[1]"),                // 32 > 16: a constraint
               seed({{"A", 3}, {"B", 1}}, "$.r[2]"),                // 3 is no value of A
               seed({{"A", 1}, {"B", 1}, {"C", 1}}, "$.r[3]"),      // unknown parameter
               seed({{"A", 1}}, "$.r[4]"),                          // B missing
               seed({{"A", 2}, {"B", 4}}, "$.r[5]"),
               seed({{"A", 8}, {"B", 2}}, "$.r[6]"),                // the same as $.r[0]
               seed({{"A", 4}, {"B", 1}}, "$.r[7]", "CompilationFailedConfig", "recorded as failed")};
    o.seeds_from = "--warm-start w.json";
    std::vector<std::string> notes;
    o.note = [&](const std::string& l) { notes.push_back(l); };
    SearchProposer p(std::move(o));
    p.prepare({});
    ASSERT_EQ(p.accepted_seeds().size(), 2u);
    EXPECT_TRUE(notes.empty());  // said at the first proposal, once a resumed run's records are known

    const std::vector<std::string> order = drive(p);
    ASSERT_EQ(notes.size(), 4u);
    EXPECT_EQ(notes[0],
              "--warm-start w.json: 2 of 8 configuration(s) are in the space and are evaluated first, then the " +
                  strategy + " search goes on");
    EXPECT_NE(notes[1].find("1 not used, listed twice (first: $.r[6]: the configuration of $.r[0])"),
              std::string::npos)
        << notes[1];
    EXPECT_NE(notes[2].find("4 not used, not in the space (first: $.r[1]: violates the constraint"),
              std::string::npos)
        << notes[2];
    EXPECT_NE(notes[3].find("1 not used, recorded as failed (first: $.r[7]: CompilationFailedConfig)"),
              std::string::npos)
        << notes[3];
    ASSERT_GE(order.size(), 2u);
    EXPECT_EQ(order[0], "A=8,B=2");
    EXPECT_EQ(order[1], "A=2,B=4");
    EXPECT_EQ(std::set<std::string>(order.begin(), order.end()).size(), order.size()) << "a configuration twice";
    if (strategy == "exhaustive") EXPECT_EQ(order.size(), 11u);  // every valid one, each once
    const json s = p.summary().at("warm_start");
    EXPECT_EQ(s.at("entries"), 8);
    EXPECT_EQ(s.at("tried_first"), 2);
    EXPECT_EQ(s.at("not_used").at("not in the space").at("count"), 4);
    EXPECT_EQ(s.at("not_used").at("not in the space").at("first").at("at"), "$.r[1]");
  }
}

/// Two seeds from a warm-start file, with the report's lines kept in `notes`.
SearchProposerOptions two_seeds(std::vector<std::string>* notes) {
  SearchProposerOptions o = small_space("exhaustive");
  o.seeds = {seed({{"A", 8}, {"B", 2}}, "$.r[0]"), seed({{"A", 2}, {"B", 4}}, "$.r[1]")};
  o.seeds_from = "--warm-start w.json";
  o.note = [notes](const std::string& l) { notes->push_back(l); };
  return o;
}

/// An ok attempt of `params` that an earlier session of the run recorded.
void observe_recorded(SearchProposer& p, int index, std::map<std::string, int64_t> params) {
  Attempt recorded;
  recorded.index = index;
  recorded.params = std::move(params);
  recorded.result.verdict = Verdict::ok;
  recorded.result.geomean_ms = 1.0;
  p.observe_recorded(recorded);
}

TEST(InteropSeeds, AResumedRunSkipsSeedsItRecorded) {
  std::vector<std::string> notes;
  SearchProposer p(two_seeds(&notes));
  p.prepare({});
  observe_recorded(p, 1, {{"A", 8}, {"B", 2}});
  const std::vector<std::string> order = drive(p);
  ASSERT_FALSE(order.empty());
  EXPECT_EQ(order[0], "A=2,B=4");
  EXPECT_EQ(order.size(), 10u);
  EXPECT_EQ(p.summary().at("warm_start").at("not_used").at("already recorded in this run").at("count"), 1);
  // The report counts only the seed still to be evaluated as tried first.
  EXPECT_EQ(p.summary().at("warm_start").at("tried_first"), 1);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0], "--warm-start w.json: 1 of 2 configuration(s) are in the space and are evaluated first, then "
                      "the exhaustive search goes on");
  EXPECT_EQ(notes[1], "--warm-start w.json: 1 not used, already recorded in this run (first: $.r[0]: a previous "
                      "session of the run evaluated it)");
}

TEST(InteropSeeds, AResumedRunThatRecordedEverySeedSaysNoneComesFirst) {
  std::vector<std::string> notes;
  SearchProposer p(two_seeds(&notes));
  p.prepare({});
  observe_recorded(p, 1, {{"A", 2}, {"B", 4}});
  observe_recorded(p, 2, {{"A", 8}, {"B", 2}});
  const std::vector<std::string> order = drive(p);
  EXPECT_EQ(order.size(), 9u);  // the 11 valid ones less the 2 recorded
  EXPECT_EQ(std::count(order.begin(), order.end(), "A=8,B=2") + std::count(order.begin(), order.end(), "A=2,B=4"), 0);
  ASSERT_FALSE(notes.empty());
  EXPECT_EQ(notes[0], "--warm-start w.json: 0 of 2 configuration(s) are in the space and are evaluated first, then "
                      "the exhaustive search goes on");
  EXPECT_EQ(p.summary().at("warm_start").at("tried_first"), 0);
  EXPECT_EQ(p.summary().at("warm_start").at("not_used").at("already recorded in this run").at("count"), 2);
}

TEST(InteropSeeds, TheBudgetCountsSeeds) {
  SearchProposerOptions o = small_space("random");
  o.max_proposals = 1;
  o.seeds = {seed({{"A", 8}, {"B", 2}}, "$.r[0]"), seed({{"A", 2}, {"B", 4}}, "$.r[1]")};
  SearchProposer p(std::move(o));
  p.prepare({});
  EXPECT_EQ(drive(p), std::vector<std::string>{"A=8,B=2"});
}

// ---------------------------------------------------------------------------
// The CLI end to end: optimize with the fake worker, export, warm start.

const std::string kSpec = std::string(KOPT_SOURCE_DIR) + "/templates/transpose/transpose.json";

std::string optimize(const TempDir& d, const std::string& results, const std::string& extra) {
  return std::string(KOPT_CLI) + " optimize --spec " + kSpec +
         " --arch sm_90 --top 1 --retime-rounds 1 --no-specialize --results-dir " +
         (d / results).string() + " --cache-dir " + (d / "cache").string() + " --worker-command " +
         KOPT_FAKE_WORKER + " " + extra;
}

/// The parameters of the run's candidates, in evaluation order.
std::vector<std::string> candidates(const fsys::path& run) {
  std::vector<std::string> keys;
  const json history = read_json(run / "history.json");
  for (const json& a : history.at("attempts"))
    if (a.at("kind") == "candidate") {
      std::map<std::string, int64_t> p;
      for (const auto& [k, v] : a.at("params").items()) p[k] = v.get<int64_t>();
      keys.push_back(kopt::search::config_key(p));
    }
  return keys;
}

TEST(InteropCli, ExportThenWarmStartFromTheExport) {
  TempDir d;
  ShellRun r = run_shell(optimize(d, "first", "--strategy random --budget evals=4 --seed 11 --quiet"));
  ASSERT_EQ(r.code, 0) << r.err;
  const fsys::path first = d / "first" / "run-001";

  // To stdout, and to a file: the same document.
  r = run_shell(std::string(KOPT_CLI) + " export --format t4 " + first.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const json doc = json::parse(r.out);
  EXPECT_NE(r.err.find("kopt: exported 4 candidate(s)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("reference/initial/baseline attempt(s) (no configuration)"), std::string::npos) << r.err;
  r = run_shell(std::string(KOPT_CLI) + " export --format t4 --quiet " + first.string() + " -o " +
                 (d / "t4.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.out.empty());
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_EQ(read_json(d / "t4.json"), doc);
  ASSERT_EQ(doc.at("results").size(), 4u);
  const std::vector<std::string> first_candidates = candidates(first);
  ASSERT_EQ(first_candidates.size(), 4u);
  std::vector<std::pair<double, std::string>> by_time;
  for (size_t i = 0; i < 4; ++i) {
    const json& e = doc.at("results")[i];
    EXPECT_EQ(e.at("invalidity"), "correct");
    std::map<std::string, int64_t> p;
    for (const auto& [k, v] : e.at("configuration").items()) p[k] = v.get<int64_t>();
    EXPECT_EQ(kopt::search::config_key(p), first_candidates[i]);
    by_time.push_back({e.at("measurements").at(0).at("value").get<double>(), kopt::search::config_key(p)});
  }
  std::sort(by_time.begin(), by_time.end());

  // A new run from it: the four come first, fastest first, then the search's own.
  r = run_shell(optimize(d, "second", "--strategy random --budget evals=6 --seed 99 --warm-start " + (d / "t4.json").string()));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("kopt: --warm-start " + (d / "t4.json").string() +
                       " (T4 results, 4 entries): 4 of 4 configuration(s) are in the space and are evaluated first"),
            std::string::npos)
      << r.err;
  const fsys::path second = d / "second" / "run-001";
  const std::vector<std::string> got = candidates(second);
  ASSERT_EQ(got.size(), 6u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(got[i], by_time[i].second) << i;
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()).size(), 6u);
  const json ws = read_json(second / "summary.json").at("warm_start");
  EXPECT_EQ(ws.at("tried_first"), 4);
  EXPECT_TRUE(ws.at("not_used").empty());
}

TEST(InteropCli, WarmStartFromAKernelTunerCacheReportsWhatDoesNotFit) {
  TempDir d;
  const ShellRun r = run_shell(optimize(d, "results", "--strategy random --budget evals=3 --warm-start " + kData +
                                                  "/transpose_kernel_tuner_cache.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("(Kernel Tuner cache of kernel 'transpose_tuned' on 'NVIDIA A100-SXM4-40GB', 6 entries): "
                       "2 of 6 configuration(s) are in the space"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("2 not used, not in the space (first: $.cache[\"48,8,0,1\"]: TILE=48 is not one of its values"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("2 not used, recorded as failed (first: $.cache[\"32,32,0,1\"]: CompilationFailedConfig)"),
            std::string::npos)
      << r.err;
  const std::vector<std::string> got = candidates(d / "results" / "run-001");
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], "BLOCK_ROWS=16,PAD=1,TILE=64,VEC=2");
  EXPECT_EQ(got[1], "BLOCK_ROWS=8,PAD=1,TILE=32,VEC=1");
}

TEST(InteropCli, BadUseIsRefusedBeforeAnyWork) {
  TempDir d;
  const std::string kopt = KOPT_CLI;
  ShellRun r = run_shell(kopt + " export --format csv " + d.path().string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("kopt.cli.010"), std::string::npos) << r.err;
  r = run_shell(kopt + " export " + d.path().string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--format"), std::string::npos) << r.err;
  r = run_shell(kopt + " export --format t4 " + d.path().string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("kopt.run.901"), std::string::npos) << r.err;

  write(d / "bad.json", R"({"results": [{"configuration": {"TILE": 32}, "invalidity": "great"}]})");
  r = run_shell(optimize(d, "results", "--budget evals=3 --warm-start " + (d / "bad.json").string()));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("[kopt.interop.002] " + (d / "bad.json").string() + ": $.results[0].invalidity: "),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fsys::exists(d / "results" / "run-001"));
  r = run_shell(optimize(d, "results", "--budget evals=3 --warm-start " + (d / "nothere.json").string()));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--warm-start"), std::string::npos) << r.err;
  r = run_shell(optimize(d, "results", "--strategy agent --warm-start " + kData + "/kernel_tuner_style_t4.json"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("kopt.opt.006"), std::string::npos) << r.err;
}

}  // namespace
