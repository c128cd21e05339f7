// Recorded spaces (store/recorded.h): read from a Kernel Tuner cache, T4
// results and a kopt run folder alike; written back as a Kernel Tuner cache;
// each error names the file and the JSON path.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/attempt.h"
#include "store/recorded.h"
#include "store/store.h"
#include "util/error.h"
#include "util/fs.h"

#include "temp_dir.h"

namespace {

namespace fsys = std::filesystem;
using namespace kopt::store;  // RecordedSpace, read_recorded_space: the recorded spaces under test
using kopt::test::TempDir;
using nlohmann::json;
using Config = std::map<std::string, int64_t>;

const fsys::path kSpaces = fsys::path(KOPT_TEST_DATA_DIR) / "spaces";

const kopt::store::RecordedOutcome& outcome(const RecordedSpace& s, const Config& c) {
  for (const auto& [k, o] : s.entries)
    if (k == c) return o;
  throw std::runtime_error("not recorded");
}

void expect_error(const fsys::path& file, const std::string& id, const std::string& needle) {
  try {
    read_recorded_space(file);
    ADD_FAILURE() << "accepted " << file;
  } catch (const kopt::Error& e) {
    EXPECT_EQ(e.id(), id) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(file.filename().string()), std::string::npos) << e.what();
  }
}

TEST(Recorded, KernelTunerCacheWithPositionsCostsAndFailures) {
  TempDir d;
  // Left open by a session that stopped early; "mode" is no integer.
  kopt::fs::write_file_atomic(d / "k.json", R"({"device_name": "GPU", "kernel_name": "k", "tune_params_keys": ["x", "mode"],
"tune_params": {"x": [1, 2], "mode": ["safe", "fast"]}, "objective": "time", "cache": {
"1,fast": {"x": 1, "mode": "fast", "time": 2.5, "compile_time": 1000, "verification_time": 0, "benchmark_time": 500},
"2,fast": {"x": 2, "mode": "fast", "time": "CompilationFailedConfig", "compile_time": 800},
"1,safe": {"x": 1, "mode": "safe", "time": 3.5},
"2,safe": {"x": 2, "mode": "safe", "time": "RuntimeFailedConfig", "compile_time": 800, "benchmark_time": 7},)");
  const RecordedSpace s = read_recorded_space(d / "k.json");
  EXPECT_EQ(s.format, "Kernel Tuner cache");
  EXPECT_EQ(s.label, "k");
  EXPECT_EQ(s.device, "GPU");
  ASSERT_EQ(s.params.size(), 2u);
  EXPECT_EQ(s.params[0].name, "x");
  EXPECT_EQ(s.params[0].values, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(s.params[1].name, "mode");  // positions in tune_params' order: safe 0, fast 1
  EXPECT_EQ(s.params[1].values, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(s.positions.at("mode"), (std::vector<std::string>{"\"safe\"", "\"fast\""}));
  ASSERT_EQ(s.entries.size(), 4u);
  EXPECT_EQ(s.failed(), 2u);
  EXPECT_FALSE(s.timed());  // "1,safe" records no cost
  const auto& fast = outcome(s, {{"x", 1}, {"mode", 1}});
  EXPECT_TRUE(fast.ok());
  EXPECT_DOUBLE_EQ(fast.ms, 2.5);
  EXPECT_DOUBLE_EQ(fast.seconds, 1.5);
  EXPECT_EQ(outcome(s, {{"x", 2}, {"mode", 1}}).verdict, "compile_error");
  EXPECT_EQ(outcome(s, {{"x", 2}, {"mode", 0}}).verdict, "runtime_error");
  EXPECT_DOUBLE_EQ(outcome(s, {{"x", 2}, {"mode", 0}}).seconds, 0.807);
  bool noted = false;
  for (const std::string& n : s.notes) noted = noted || n.find("not closed") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(Recorded, T4ResultsWithDuplicatesAndEveryInvalidity) {
  TempDir d;
  auto r = [](int a, const std::string& inv, double ms, double compile) {
    json x{{"configuration", {{"A", a}, {"flag", a % 2 == 0}}},
           {"invalidity", inv},
           {"times", {{"compilation", compile}, {"validation", 10}, {"benchmark", 90}}},
           {"measurements", json::array()}};
    if (inv == "correct") x["measurements"].push_back({{"name", "time"}, {"value", ms}, {"unit", "us"}});
    return x;
  };
  json doc{{"schema_version", "1.0.0"},
           {"results",
            {r(8, "correct", 2000, 900), r(4, "compile", 0, 700), r(2, "correctness", 0, 600), r(6, "constraints", 0, 1),
             r(1, "correct", 1500, 400), r(8, "correct", 100, 900), r(3, "timeout", 0, 800)}}};
  doc["results"][4]["times"].erase("compilation");
  doc["results"][4]["times"]["compilation_time"] = 400;  // kopt's name
  kopt::fs::write_file_atomic(d / "t.t4.json", doc.dump());
  const RecordedSpace s = read_recorded_space(d / "t.t4.json");
  EXPECT_EQ(s.format, "T4 results");
  EXPECT_EQ(s.label, "t.t4");
  ASSERT_EQ(s.params.size(), 2u);
  EXPECT_EQ(s.params[0].name, "A");
  EXPECT_EQ(s.params[0].values, (std::vector<int64_t>{1, 2, 3, 4, 6, 8}));  // sorted
  EXPECT_EQ(s.params[1].name, "flag");  // booleans: positions, first seen first
  EXPECT_EQ(s.positions.at("flag"), (std::vector<std::string>{"true", "false"}));
  ASSERT_EQ(s.entries.size(), 6u);  // A=8 twice: the first counts
  EXPECT_TRUE(s.timed());
  const auto& a8 = outcome(s, {{"A", 8}, {"flag", 0}});
  EXPECT_DOUBLE_EQ(a8.ms, 2.0);  // 2000 us
  EXPECT_DOUBLE_EQ(a8.seconds, 1.0);
  EXPECT_DOUBLE_EQ(outcome(s, {{"A", 1}, {"flag", 1}}).seconds, 0.5);
  EXPECT_EQ(outcome(s, {{"A", 4}, {"flag", 0}}).verdict, "compile_error");
  EXPECT_EQ(outcome(s, {{"A", 2}, {"flag", 0}}).verdict, "wrong_result");
  EXPECT_EQ(outcome(s, {{"A", 6}, {"flag", 0}}).verdict, "infeasible");
  EXPECT_EQ(outcome(s, {{"A", 3}, {"flag", 1}}).verdict, "timeout");
  bool noted = false;
  for (const std::string& n : s.notes) noted = noted || n.find("1 configuration(s) recorded more than once") == 0;
  EXPECT_TRUE(noted) << testing::PrintToString(s.notes);
}

kopt::model::Attempt candidate(Config params, kopt::model::Verdict v, std::vector<std::string> cases, double ms) {
  kopt::model::Attempt a;
  a.kind = kopt::model::AttemptKind::candidate;
  a.params = std::move(params);
  a.label = "c";
  a.result.verdict = v;
  a.result.compile_ms = 500;
  a.result.check_ms = 200;
  a.result.timing_ms = 300;
  for (const std::string& name : cases) {
    kopt::model::CaseResult c;
    c.name = name;
    c.role = "performance";
    c.passed = v == kopt::model::Verdict::ok;
    if (v == kopt::model::Verdict::ok) {
      kopt::model::LatencyStats l;
      l.median_ms = l.mean_ms = l.min_ms = l.max_ms = ms;
      l.samples = 3;
      c.latency = l;
    }
    a.result.cases.push_back(c);
  }
  if (v == kopt::model::Verdict::ok) a.result.geomean_ms = ms;
  return a;
}

fsys::path run_folder(const TempDir& d, const std::vector<kopt::model::Attempt>& attempts) {
  const json spec{{"name", "w"}, {"tuning", {{"params", {{"BM", {128, 64, 32}}, {"BK", {8, 16}}}}}}};
  auto store = kopt::store::RunStore::create(d / "results", spec, json{{"name", "NVIDIA H200"}}, {});
  kopt::model::Attempt initial;
  initial.kind = kopt::model::AttemptKind::initial;
  initial.result.geomean_ms = 9.0;
  store.record(initial);
  for (const auto& a : attempts) store.record(a);
  return store.dir();
}

TEST(Recorded, RunFolderCandidatesWithTheSpecsValueLists) {
  TempDir d;
  using kopt::model::Verdict;
  const fsys::path dir =
      run_folder(d, {candidate({{"BM", 64}, {"BK", 8}}, Verdict::ok, {"x", "y"}, 1.5),
                     candidate({{"BM", 128}, {"BK", 8}}, Verdict::launch_error, {"x", "y"}, 0),
                     candidate({{"BM", 64}, {"BK", 16}}, Verdict::ok, {"x", "y"}, 1.25),
                     candidate({{"BM", 128}, {"BK", 16}}, Verdict::compiled, {}, 0)});
  const RecordedSpace s = read_recorded_space(dir);
  EXPECT_EQ(s.format, "kopt run folder");
  EXPECT_EQ(s.label, dir.filename().string());
  EXPECT_EQ(s.device, "NVIDIA H200");
  EXPECT_EQ(s.kernel, "w");
  ASSERT_EQ(s.params.size(), 2u);
  EXPECT_EQ(s.params[0].name, "BK");
  EXPECT_EQ(s.params[1].name, "BM");
  EXPECT_EQ(s.params[1].values, (std::vector<int64_t>{128, 64, 32}));  // the spec's list and order
  ASSERT_EQ(s.entries.size(), 3u);  // the initial kernel and the compile-only candidate left out
  EXPECT_TRUE(s.timed());
  EXPECT_DOUBLE_EQ(outcome(s, {{"BM", 64}, {"BK", 16}}).ms, 1.25);
  EXPECT_DOUBLE_EQ(outcome(s, {{"BM", 64}, {"BK", 16}}).seconds, 1.0);
  EXPECT_EQ(outcome(s, {{"BM", 128}, {"BK", 8}}).verdict, "launch_error");
}

TEST(Recorded, ErrorsNameTheFileAndWhere) {
  TempDir d;
  kopt::fs::write_file_atomic(d / "empty.json", R"({"tune_params_keys": ["x"], "tune_params": {"x": [1]}, "cache": {}})");
  expect_error(d / "empty.json", "kopt.replay.101", "nothing recorded");
  kopt::fs::write_file_atomic(d / "failed.json", R"({"tune_params_keys": ["x"], "tune_params": {"x": [1, 2]},
"cache": {"1": {"x": 1, "time": "InvalidConfig"}, "2": {"x": 2, "time": "RuntimeFailedConfig"}}})");
  expect_error(d / "failed.json", "kopt.replay.102", "none of the 2 recorded configurations passed");
  kopt::fs::write_file_atomic(d / "notime.json", R"({"schema_version": "1.0.0", "results": [
{"configuration": {"A": 1}, "invalidity": "correct", "measurements": [{"name": "time", "value": 1}]},
{"configuration": {"A": 2}, "invalidity": "correct", "measurements": []}]})");
  expect_error(d / "notime.json", "kopt.replay.103", "$.results[1]: passed but records no time");
  kopt::fs::write_file_atomic(d / "params.json", R"({"schema_version": "1.0.0", "results": [
{"configuration": {"A": 1}, "invalidity": "correct", "measurements": [{"name": "time", "value": 1}]},
{"configuration": {"A": 2, "B": 1}, "invalidity": "correct", "measurements": [{"name": "time", "value": 2}]}]})");
  expect_error(d / "params.json", "kopt.replay.104", "its parameters (A, B) differ from $.results[0]'s (A)");
  kopt::fs::write_file_atomic(d / "neither.json", R"({"entries": []})");
  expect_error(d / "neither.json", "kopt.interop.001", "neither T4 results");

  using kopt::model::Verdict;
  const fsys::path classes = run_folder(d, {candidate({{"BM", 64}, {"BK", 8}}, Verdict::ok, {"x", "y"}, 1.5),
                                            candidate({{"BM", 32}, {"BK", 8}}, Verdict::ok, {"z"}, 1.0)});
  try {
    read_recorded_space(classes);
    ADD_FAILURE() << "accepted a run searched in shape classes";
  } catch (const kopt::SpecError& e) {
    EXPECT_EQ(e.id(), "kopt.replay.105");
    EXPECT_NE(std::string(e.what()).find("--shape-classes off"), std::string::npos) << e.what();
  }
}

TEST(Recorded, KernelTunerCacheRoundTrip) {
  // The committed small space: its cache and its T4 form read alike, and the
  // cache written back reads the same again.
  const RecordedSpace c = read_recorded_space(kSpaces / "small.cache.json");
  const RecordedSpace t = read_recorded_space(kSpaces / "small.t4.json");
  ASSERT_EQ(c.entries.size(), 120u);
  EXPECT_EQ(c.failed(), 16u);
  EXPECT_TRUE(c.timed());
  ASSERT_EQ(t.entries.size(), c.entries.size());
  for (const auto& [k, o] : c.entries) {
    const auto& other = outcome(t, k);
    EXPECT_EQ(other.verdict, o.verdict);
    EXPECT_DOUBLE_EQ(other.ms, o.ms);
    EXPECT_NEAR(other.seconds, o.seconds, 1e-9);
  }
  TempDir d;
  kopt::fs::write_file_atomic(d / "back.json", kopt::store::kernel_tuner_cache(c).dump(0) + "\n");
  const RecordedSpace back = read_recorded_space(d / "back.json");
  ASSERT_EQ(back.entries.size(), c.entries.size());
  for (size_t i = 0; i < c.params.size(); ++i) EXPECT_EQ(back.params[i].values, c.params[i].values);
  for (const auto& [k, o] : c.entries) {
    EXPECT_EQ(outcome(back, k).verdict, o.verdict);
    EXPECT_DOUBLE_EQ(outcome(back, k).seconds, o.seconds);
  }

  // Positions are written back as the values they stand for.
  RecordedSpace p;
  p.label = "p";
  p.params = {{"mode", {0, 1}}};
  p.positions["mode"] = {"\"safe\"", "\"fast\""};
  p.entries.push_back({{{"mode", 1}}, {"ok", 2.0, 1.0}});
  p.entries.push_back({{{"mode", 0}}, {"compile_error", 0, 1.0}});
  const auto doc = kopt::store::kernel_tuner_cache(p);
  EXPECT_EQ(doc["tune_params"]["mode"], nlohmann::ordered_json({"safe", "fast"}));
  EXPECT_EQ(doc["cache"]["fast"]["mode"], "fast");
  EXPECT_EQ(doc["cache"]["safe"]["time"], "CompilationFailedConfig");
  const std::string text = doc.dump(0);
  EXPECT_EQ(text.substr(text.size() - 3), "}\n}");  // what Kernel Tuner takes for a closed file
}

}  // namespace
