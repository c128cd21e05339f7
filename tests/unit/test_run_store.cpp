// The run folder: creation, numbering, recording, resuming after a kill,
// open() validation, summary.json and best.cu.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "store/store.h"
#include "spec/annotations.h"
#include "util/error.h"
#include "temp_dir.h"
#include "util/fs.h"
#include "util/json.h"

namespace stdfs = std::filesystem;
using kopt::test::TempDir;
using kopt::model::CaseResult;
using kopt::model::LatencyStats;
using kopt::model::Result;
using kopt::model::Verdict;
using kopt::model::Attempt;
using kopt::store::RunInfo;
using kopt::store::RunStore;
using nlohmann::json;

namespace {

json spec_json(const std::string& name = "sgemm") {
  return json{{"format_version", 1},
              {"name", name},
              {"cases", json::array({json{{"name", "small"}, {"role", "correctness"}},
                                     json{{"name", "big"}, {"role", "performance"}},
                                     json{{"name", "tall"}, {"role", "performance"}}})},
              {"timing", {{"warmup", 10}, {"iterations", 100}}}};
}

json device_json() { return json{{"name", "NVIDIA H200"}, {"arch", "sm_90"}, {"sm_count", 132}}; }

RunInfo run_info() {
  RunInfo info;
  info.strategy = "random";
  info.seed = 42;
  info.budget = json{{"evaluations", 50}, {"minutes", 10}};
  return info;
}

LatencyStats stats(double median) {
  LatencyStats s;
  s.median_ms = median;
  s.mean_ms = median * 1.01;
  s.min_ms = median * 0.98;
  s.max_ms = median * 1.1;
  s.stddev_ms = median * 0.02;
  s.samples = 100;
  return s;
}

// An attempt with performance cases "big" and "tall" (median latencies as given).
Attempt make_attempt(const std::string& kind, const std::string& label,
                     std::map<std::string, int64_t> params, Verdict verdict,
                     std::vector<double> medians = {}, const std::string& source = "") {
  Attempt a;
  a.kind = kopt::model::parse_attempt_kind(kind).value();
  a.label = label;
  a.params = std::move(params);
  a.source = source.empty() ? "// kernel " + label + "\nextern \"C\" __global__ void k() {}\n" : source;
  a.compile_options = {"-O3", "--use_fast_math"};
  a.result.verdict = verdict;
  a.result.compile_ms = 12.5;
  a.result.compile_log = "ptxas info: " + label + "\n";
  CaseResult small;
  small.name = "small";
  small.role = "correctness";
  small.passed = verdict == Verdict::ok;
  a.result.cases.push_back(small);
  if (verdict == Verdict::ok) {
    const char* names[] = {"big", "tall"};
    std::vector<double> ok;
    for (size_t i = 0; i < medians.size() && i < 2; ++i) {
      CaseResult c;
      c.name = names[i];
      c.role = "performance";
      c.passed = true;
      c.latency = stats(medians[i]);
      a.result.cases.push_back(c);
      ok.push_back(medians[i]);
    }
    if (!ok.empty()) a.result.geomean_ms = kopt::model::geomean(ok);
  } else {
    a.result.detail = std::string(kopt::model::verdict_name(verdict)) + " in " + label;
    a.result.failed_case = "small";
  }
  a.seconds_since_start = 1.5 * (a.index + 1);
  return a;
}

// Every file under `dir` (relative path -> content, plus its mtime), to prove
// that a call left the folder byte-for-byte unchanged.
std::map<std::string, std::pair<std::string, stdfs::file_time_type>> snapshot(const stdfs::path& dir) {
  std::map<std::string, std::pair<std::string, stdfs::file_time_type>> files;
  for (const auto& e : stdfs::recursive_directory_iterator(dir)) {
    const std::string rel = stdfs::relative(e.path(), dir).string();
    if (e.is_regular_file())
      files[rel] = {kopt::fs::read_file(e.path()), stdfs::last_write_time(e.path())};
    else
      files[rel + "/"] = {"", {}};
  }
  return files;
}

// Runs f, expects a kopt::UsageError with `id`, returns its message.
std::string usage_error_of(const std::function<void()>& f, const std::string& id) {
  try {
    f();
  } catch (const kopt::UsageError& e) {
    EXPECT_EQ(e.id(), id) << e.what();
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected UsageError " << id << ", got: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected UsageError " << id << ", nothing thrown";
  return "";
}

// A run with a reference, an initial kernel, two passing candidates and a
// rejected one.
RunStore populated(const stdfs::path& results) {
  RunStore s = RunStore::create(results, spec_json(), device_json(), run_info());
  s.record(make_attempt("reference", "reference", {}, Verdict::ok, {8.0, 4.0}));
  s.record(make_attempt("initial", "naive.cu", {}, Verdict::ok, {4.0, 2.0}));
  s.record(make_attempt("candidate", "BM=64,BN=64", {{"BM", 64}, {"BN", 64}}, Verdict::ok, {1.0, 0.5}));
  s.record(make_attempt("candidate", "BM=128,BN=8", {{"BM", 128}, {"BN", 8}}, Verdict::compile_error));
  s.record(make_attempt("candidate", "BM=128,BN=64", {{"BM", 128}, {"BN", 64}}, Verdict::ok, {2.0, 1.0}));
  return s;
}

void expect_same_attempt(const Attempt& a, const Attempt& b) {
  EXPECT_EQ(kopt::dump_json(a.to_json()), kopt::dump_json(b.to_json())) << "attempt " << a.index;
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.result.compile_log, b.result.compile_log);
  EXPECT_EQ(a.compile_options, b.compile_options);
  ASSERT_EQ(a.result.cases.size(), b.result.cases.size());
  // The full result (raw samples included) as result.json has it.
  EXPECT_EQ(kopt::dump_json(a.result.to_json()), kopt::dump_json(b.result.to_json())) << "attempt " << a.index;
  for (size_t i = 0; i < a.result.cases.size(); ++i) {
    EXPECT_EQ(a.result.cases[i].reference_latency.has_value(), b.result.cases[i].reference_latency.has_value());
    if (a.result.cases[i].reference_latency && b.result.cases[i].reference_latency) {
      EXPECT_EQ(a.result.cases[i].reference_latency->median_ms, b.result.cases[i].reference_latency->median_ms);
    }
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// Creation and numbering

TEST(RunStore, CreateWritesTheRunFolder) {
  TempDir t;
  RunStore s = RunStore::create(t.path() / "results", spec_json(), device_json(), run_info());
  EXPECT_EQ(s.dir(), t.path() / "results" / "run-001");
  for (const char* f : {"spec.json", "device.json", "run.json", "history.json"})
    EXPECT_TRUE(stdfs::is_regular_file(s.dir() / f)) << f;

  const json run = json::parse(kopt::fs::read_file(s.dir() / "run.json"));
  EXPECT_EQ(run["format_version"], kopt::store::kFormatVersion);
  EXPECT_EQ(run["tool_version"], KOPT_VERSION);
  EXPECT_EQ(run["spec_hash"], RunStore::hash_spec(spec_json()));
  EXPECT_EQ(run["strategy"], "random");
  EXPECT_EQ(run["seed"], 42);
  EXPECT_EQ(run["budget"], (json{{"evaluations", 50}, {"minutes", 10}}));
  EXPECT_TRUE(std::regex_match(run["created"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
      << run["created"];

  EXPECT_EQ(json::parse(kopt::fs::read_file(s.dir() / "spec.json")), spec_json());
  EXPECT_EQ(json::parse(kopt::fs::read_file(s.dir() / "device.json")), device_json());
  EXPECT_EQ(json::parse(kopt::fs::read_file(s.dir() / "history.json")),
            (json{{"format_version", 1}, {"attempts", json::array()}}));
  EXPECT_EQ(s.info().spec_hash, RunStore::hash_spec(spec_json()));
  EXPECT_EQ(s.info().tool_version, KOPT_VERSION);
  EXPECT_TRUE(s.history().empty());
  EXPECT_EQ(s.next_index(), 1);
}

TEST(RunStore, CreateThenOpenRoundTrip) {
  TempDir t;
  RunStore s = RunStore::create(t.path(), spec_json(), device_json(), run_info());
  RunStore o = RunStore::open(s.dir(), RunStore::hash_spec(spec_json()));
  EXPECT_EQ(o.dir(), s.dir());
  EXPECT_EQ(o.info().spec_hash, s.info().spec_hash);
  EXPECT_EQ(o.info().strategy, "random");
  EXPECT_EQ(o.info().seed, 42u);
  EXPECT_EQ(o.info().budget, s.info().budget);
  EXPECT_EQ(o.info().created, s.info().created);
  EXPECT_EQ(o.info().tool_version, KOPT_VERSION);
  EXPECT_TRUE(o.history().empty());
}

TEST(RunStore, NumbersRunsAndNeverTouchesExistingFolders) {
  TempDir t;
  const stdfs::path results = t.path() / "results";
  EXPECT_EQ(RunStore::create(results, spec_json(), device_json(), run_info()).dir().filename(), "run-001");
  EXPECT_EQ(RunStore::create(results, spec_json(), device_json(), run_info()).dir().filename(), "run-002");

  // A folder someone else made (or a run killed while being created), a
  // non-run folder and a file with a run-like name.
  stdfs::create_directories(results / "run-007");
  kopt::fs::write_file_atomic(results / "run-007" / "keep.txt", "mine");
  stdfs::create_directories(results / "run-abc");
  kopt::fs::write_file_atomic(results / "run-099.txt", "not a folder name");
  const auto before = snapshot(results / "run-007");

  RunStore s = RunStore::create(results, spec_json(), device_json(), run_info());
  EXPECT_EQ(s.dir().filename(), "run-008");
  EXPECT_EQ(snapshot(results / "run-007"), before);
  EXPECT_EQ(kopt::fs::read_file(results / "run-007" / "keep.txt"), "mine");

  // Numbers beyond 999 keep growing.
  stdfs::create_directories(results / "run-999");
  EXPECT_EQ(RunStore::create(results, spec_json(), device_json(), run_info()).dir().filename(), "run-1000");
}

TEST(RunStore, ConcurrentCreatesGetDistinctFolders) {
  TempDir t;
  constexpr int kThreads = 8;
  std::vector<std::string> names(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      names[i] = RunStore::create(t.path(), spec_json(), device_json(), run_info()).dir().filename().string();
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), static_cast<size_t>(kThreads));
  for (const std::string& n : names) {
    RunStore o = RunStore::open(t.path() / n, RunStore::hash_spec(spec_json()));
    EXPECT_TRUE(o.history().empty());
  }
}

TEST(RunStore, HashSpecIsCanonicalAndHex) {
  json a = json::object();
  a["zeta"] = 1;
  a["alpha"] = {{"y", 2}, {"x", 3}};
  json b = json::parse(R"({"alpha": {"x": 3, "y": 2}, "zeta": 1})");
  EXPECT_EQ(RunStore::hash_spec(a), RunStore::hash_spec(b));
  const std::string h = RunStore::hash_spec(spec_json());
  EXPECT_TRUE(std::regex_match(h, std::regex("[0-9a-f]{32}"))) << h;
  EXPECT_NE(h, RunStore::hash_spec(spec_json("other")));
}

// ---------------------------------------------------------------------------
// Recording

TEST(RunStore, RecordWritesCandidateFilesAndHistory) {
  TempDir t;
  RunStore s = RunStore::create(t.path(), spec_json(), device_json(), run_info());
  Attempt a = make_attempt("candidate", "BM=64", {{"BM", 64}}, Verdict::ok, {1.0, 2.0});
  a.result.compile_log = "warning: \xff\xfe invalid UTF-8 from the compiler\n";
  s.record(a);
  ASSERT_EQ(s.history().size(), 1u);
  EXPECT_EQ(s.history()[0].index, 1);  // index 0 means "next"
  EXPECT_EQ(s.next_index(), 2);

  const stdfs::path c = s.dir() / "candidates" / "0001";
  EXPECT_EQ(kopt::fs::read_file(c / "kernel.cu"), a.source);
  EXPECT_EQ(kopt::fs::read_file(c / "compile.log"), a.result.compile_log);  // raw bytes
  EXPECT_EQ(json::parse(kopt::fs::read_file(c / "params.json")), (json{{"BM", 64}}));
  const json r = json::parse(kopt::fs::read_file(c / "result.json"));
  EXPECT_EQ(r["index"], 1);
  EXPECT_EQ(r["kind"], "candidate");
  EXPECT_EQ(r["label"], "BM=64");
  EXPECT_EQ(r["verdict"], "ok");
  EXPECT_TRUE(r.contains("compile_log"));
  EXPECT_EQ(r["cases"].size(), 3u);

  const json h = json::parse(kopt::fs::read_file(s.dir() / "history.json"));
  EXPECT_EQ(h["format_version"], 1);
  ASSERT_EQ(h["attempts"].size(), 1u);
  const json& e = h["attempts"][0];
  EXPECT_FALSE(e.contains("source"));
  EXPECT_FALSE(e.contains("compile_log"));
  for (const char* k : {"index", "kind", "label", "params", "verdict", "detail", "geomean_ms",
                        "median_ms", "compile_ms", "compile_cache_hit", "seconds_since_start", "cases"})
    EXPECT_TRUE(e.contains(k)) << k;
  EXPECT_EQ(e["median_ms"], (json{{"big", 1.0}, {"tall", 2.0}}));
  EXPECT_DOUBLE_EQ(e["geomean_ms"].get<double>(), std::sqrt(2.0));

  // Indices are consecutive.
  Attempt wrong = make_attempt("candidate", "x", {}, Verdict::ok, {1, 1});
  wrong.index = 5;
  EXPECT_THROW(s.record(wrong), std::invalid_argument);
  EXPECT_EQ(s.history().size(), 1u);
}

TEST(RunStore, RecordThenReloadGivesTheSameHistory) {
  TempDir t;
  RunStore s = populated(t.path());
  // Extra details that must survive: reference latency timed with the
  // candidate, non-finite numbers, a speedup, a cache hit, invalid UTF-8.
  Attempt a = make_attempt("candidate", "BM=32", {{"BM", 32}, {"SPLIT", -1}}, Verdict::ok, {3.0, 1.5});
  a.result.cases[1].reference_latency = stats(7.5);
  a.result.cases[1].latency->raw_ms = {3.1, 2.9, 3.0};
  a.result.cases[1].reference_latency->raw_ms = {7.5, 7.4};
  a.result.reference_geomean_ms = 5.0;
  a.result.speedup = 2.5;
  a.result.compile_cache_hit = true;
  a.result.cases[0].max_error_ratio = std::numeric_limits<double>::infinity();
  a.result.compile_log = "bad bytes \xc3\x28 here";
  a.seconds_since_start = 12.25;
  s.record(a);
  Attempt w = make_attempt("candidate", "NaN", {{"BM", 16}}, Verdict::wrong_result);
  w.result.cases[0].max_abs_error = std::numeric_limits<double>::quiet_NaN();
  s.record(w);

  // Raw samples stay out of history.json (rewritten at every attempt) but are
  // kept in result.json, and come back from there.
  EXPECT_EQ(kopt::fs::read_file(s.dir() / "history.json").find("raw_ms"), std::string::npos);
  EXPECT_NE(kopt::fs::read_file(s.dir() / "candidates" / "0006" / "result.json").find("raw_ms"),
            std::string::npos);

  RunStore o = RunStore::open(s.dir(), RunStore::hash_spec(spec_json()));
  ASSERT_EQ(o.history().size(), s.history().size());
  for (size_t i = 0; i < s.history().size(); ++i) expect_same_attempt(s.history()[i], o.history()[i]);
  EXPECT_EQ(o.history()[5].result.cases[1].latency->raw_ms, (std::vector<double>{3.1, 2.9, 3.0}));
  EXPECT_EQ(o.history()[5].result.cases[1].reference_latency->raw_ms, (std::vector<double>{7.5, 7.4}));
  EXPECT_TRUE(o.history()[5].result.cases[1].reference_latency.has_value());
  EXPECT_TRUE(std::isinf(o.history()[5].result.cases[0].max_error_ratio));
  EXPECT_TRUE(std::isnan(o.history()[6].result.cases[0].max_abs_error));
  EXPECT_EQ(o.next_index(), 8);

  // And recording continues where it stopped.
  o.record(make_attempt("candidate", "BM=256", {{"BM", 256}}, Verdict::timeout));
  EXPECT_EQ(o.history().back().index, 8);
  EXPECT_TRUE(stdfs::is_regular_file(o.dir() / "candidates" / "0008" / "kernel.cu"));
  EXPECT_EQ(RunStore::open(o.dir(), "").history().size(), 8u);
}

TEST(RunStore, AttemptJsonRoundTrip) {
  Attempt a = make_attempt("initial", "naive.cu", {{"X", 1}}, Verdict::ok, {1.25, 2.5});
  a.index = 3;
  a.result.cases[2].reference_latency = stats(9.0);
  const Attempt b = Attempt::from_json(json::parse(kopt::dump_json(a.to_json())));
  EXPECT_EQ(b.index, 3);
  EXPECT_EQ(b.kind, kopt::model::AttemptKind::initial);
  EXPECT_EQ(b.params, a.params);
  EXPECT_TRUE(b.source.empty());  // not in history.json
  EXPECT_EQ(kopt::dump_json(b.to_json()), kopt::dump_json(a.to_json()));
  EXPECT_THROW(Attempt::from_json(json{{"kind", "candidate"}}), kopt::Error);  // no index
}

// ---------------------------------------------------------------------------
// Resuming after a kill

TEST(RunStore, ResumeIgnoresACandidateFolderMissingFromHistory) {
  TempDir t;
  RunStore s = RunStore::create(t.path(), spec_json(), device_json(), run_info());
  s.record(make_attempt("reference", "reference", {}, Verdict::ok, {8, 4}));
  s.record(make_attempt("candidate", "A", {{"BM", 1}}, Verdict::ok, {2, 1}));
  // Killed after writing candidates/0003 (partly) but before history.json.
  const stdfs::path stale = s.dir() / "candidates" / "0003";
  kopt::fs::write_file_atomic(stale / "kernel.cu", "// stale kernel\n");
  kopt::fs::write_file_atomic(stale / "params.json", "{\"BM\": 999}");
  std::ofstream(stale / "result.json.tmp.4242.7") << "{\"verdict\": \"o";  // torn temp file
  kopt::fs::write_file_atomic(stale / "junk.txt", "left over");

  const auto before = snapshot(s.dir());
  RunStore o = RunStore::open(s.dir(), RunStore::hash_spec(spec_json()));
  EXPECT_EQ(snapshot(s.dir()), before);
  ASSERT_EQ(o.history().size(), 2u);
  EXPECT_EQ(o.next_index(), 3);
  EXPECT_EQ(o.find({{"BM", 999}}, "// stale kernel\n"), nullptr);

  Attempt fresh = make_attempt("candidate", "B", {{"BM", 2}}, Verdict::ok, {1, 1});
  o.record(fresh);
  std::set<std::string> files;
  for (const auto& e : stdfs::directory_iterator(stale)) files.insert(e.path().filename().string());
  EXPECT_EQ(files, (std::set<std::string>{"kernel.cu", "params.json", "compile.log", "result.json"}));
  EXPECT_EQ(kopt::fs::read_file(stale / "kernel.cu"), fresh.source);
  EXPECT_EQ(json::parse(kopt::fs::read_file(stale / "params.json")), (json{{"BM", 2}}));
  EXPECT_EQ(RunStore::open(s.dir(), "").history().size(), 3u);
}

TEST(RunStore, ResumeWithALeftoverTemporaryFile) {
  TempDir t;
  RunStore s = populated(t.path());
  // Killed while writing history.json: the temp file is torn, the real one intact.
  const stdfs::path tmp = s.dir() / "history.json.tmp.4242.17";
  std::ofstream(tmp) << "{\"format_version\": 1, \"attempts\": [{\"ind";
  const auto before = snapshot(s.dir());
  RunStore o = RunStore::open(s.dir(), RunStore::hash_spec(spec_json()));
  EXPECT_EQ(snapshot(s.dir()), before);
  EXPECT_EQ(o.history().size(), 5u);
  kopt::fs::write_file_atomic(s.dir() / "notes.tmp.txt", "the user's, not ours");
  o.record(make_attempt("candidate", "C", {{"BM", 3}}, Verdict::ok, {1, 1}));
  EXPECT_FALSE(stdfs::exists(tmp)) << "stale temporary files are removed once recording resumes";
  EXPECT_TRUE(stdfs::exists(s.dir() / "notes.tmp.txt"));
  EXPECT_EQ(RunStore::open(s.dir(), "").history().size(), 6u);
}

TEST(RunStore, ResumeWhenHistoryWasWrittenButNotTheSummary) {
  TempDir t;
  RunStore s = RunStore::create(t.path(), spec_json(), device_json(), run_info());
  s.record(make_attempt("reference", "reference", {}, Verdict::ok, {8, 4}));
  s.record(make_attempt("candidate", "A", {{"BM", 1}}, Verdict::ok, {2, 1}));
  s.write_summary();
  s.record(make_attempt("candidate", "B", {{"BM", 2}}, Verdict::ok, {1, 0.5}));  // killed here

  RunStore o = RunStore::open(s.dir(), RunStore::hash_spec(spec_json()));
  ASSERT_EQ(o.history().size(), 3u);
  EXPECT_EQ(json::parse(kopt::fs::read_file(o.dir() / "summary.json"))["attempts"], 2);  // stale
  ASSERT_NE(o.best(), nullptr);
  EXPECT_EQ(o.best()->label, "B");
  o.write_summary();
  const json sum = json::parse(kopt::fs::read_file(o.dir() / "summary.json"));
  EXPECT_EQ(sum["attempts"], 3);
  EXPECT_EQ(sum["best"]["label"], "B");
}

// ---------------------------------------------------------------------------
// One writer at a time

TEST(RunStore, ASecondWriterIsRefusedAndToldWhoHoldsTheFolder) {
  TempDir t;
  RunStore s = populated(t.path());
  EXPECT_TRUE(s.locked());
  EXPECT_TRUE(stdfs::is_regular_file(s.dir() / "run.lock"));
  const json holder = json::parse(kopt::fs::read_file(s.dir() / "run.lock.json"));
  EXPECT_EQ(holder["pid"], ::getpid());

  const auto before = snapshot(s.dir());
  const std::string msg = usage_error_of([&] { kopt::store::RunLock::acquire(s.dir()); }, "kopt.run.908");
  EXPECT_NE(msg.find(s.dir().string() + " is in use: pid " + std::to_string(::getpid()) + " on host "),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("(lock " + (s.dir() / "run.lock").string() + ")"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_EQ(snapshot(s.dir()), before) << "a refused writer changes nothing";

  // A reader takes no lock.
  EXPECT_EQ(RunStore::open(s.dir(), "").history().size(), 5u);
}

TEST(RunStore, TheLockGoesWithTheStoreAndCanBeHandedOn) {
  TempDir t;
  stdfs::path dir;
  {
    RunStore s = populated(t.path());
    dir = s.dir();
  }
  EXPECT_FALSE(stdfs::exists(dir / "run.lock")) << "a holder that ends removes its lock files";
  EXPECT_FALSE(stdfs::exists(dir / "run.lock.json"));

  kopt::store::RunLock lock = kopt::store::RunLock::acquire(dir);
  ASSERT_TRUE(lock.held());
  RunStore o = RunStore::open(dir, RunStore::hash_spec(spec_json()), std::move(lock));
  EXPECT_TRUE(o.locked());
  usage_error_of([&] { kopt::store::RunLock::acquire(dir); }, "kopt.run.908");
  // Reopened with the same lock (as the agent's drafting run does).
  RunStore again = RunStore::open(dir, "", o.release_lock());
  EXPECT_TRUE(again.locked());
  EXPECT_FALSE(o.locked());
  EXPECT_THROW(RunStore::open(t.path(), "", again.release_lock()), std::invalid_argument)
      << "the lock of another folder";
}

TEST(RunStore, TheLockIsNeverTakenOnAFolderThatIsNotARun) {
  TempDir t;
  stdfs::create_directories(t.path() / "plain");
  usage_error_of([&] { kopt::store::RunLock::acquire(t.path() / "plain"); }, "kopt.run.901");
  EXPECT_TRUE(stdfs::is_empty(t.path() / "plain")) << "nothing written into it";
  usage_error_of([&] { kopt::store::RunLock::acquire(t.path() / "nope"); }, "kopt.run.901");
  EXPECT_FALSE(stdfs::exists(t.path() / "nope"));
}

// The corruption of issue 12: a second process with a stale view of the run
// removed candidates/0013, which history.json named, and rewrote it.
TEST(RunStore, RecordNeverTouchesACandidateFolderThatHistoryNames) {
  TempDir t;
  RunStore s = RunStore::create(t.path(), spec_json(), device_json(), run_info());
  s.record(make_attempt("initial", "naive.cu", {}, Verdict::ok, {4.0, 2.0}));
  for (int i = 2; i <= 12; ++i)
    s.record(make_attempt("candidate", "BM=" + std::to_string(i), {{"BM", i}}, Verdict::ok, {1.0 + i, 1.0}));
  // A second store of the same folder (a writer that bypassed the lock) opens it now.
  RunStore stale = RunStore::open(s.dir(), RunStore::hash_spec(spec_json()));
  ASSERT_EQ(stale.next_index(), 13);
  // The first records attempt 13.
  s.record(make_attempt("candidate", "BM=64,BN=256", {{"BM", 64}, {"BN", 256}}, Verdict::ok, {1.026, 1.026}));
  const stdfs::path c13 = s.dir() / "candidates" / "0013";
  const auto before = snapshot(c13);

  // The second records its own: it must not land on 0013.
  stale.record(make_attempt("candidate", "BM=128,BN=128", {{"BM", 128}, {"BN", 128}}, Verdict::ok, {0.936, 0.936}));
  EXPECT_EQ(snapshot(c13), before) << "candidates/0013 is byte-for-byte what the first process recorded";
  EXPECT_EQ(stale.history().back().index, 14);
  EXPECT_EQ(stale.history()[12].label, "BM=64,BN=256") << "the other's attempt is taken in";

  const RunStore reread = RunStore::open(s.dir(), "");
  ASSERT_EQ(reread.history().size(), 14u);
  EXPECT_EQ(reread.history()[12].label, "BM=64,BN=256");
  EXPECT_EQ(reread.history()[13].label, "BM=128,BN=128");
  EXPECT_EQ(json::parse(kopt::fs::read_file(s.dir() / "candidates" / "0013" / "params.json")),
            (json{{"BM", 64}, {"BN", 256}}));
  EXPECT_EQ(json::parse(kopt::fs::read_file(s.dir() / "candidates" / "0014" / "params.json")),
            (json{{"BM", 128}, {"BN", 128}}));

  // And the first, whose view is now stale in turn, goes on at 15.
  s.record(make_attempt("candidate", "BM=7", {{"BM", 7}}, Verdict::ok, {3.0, 1.0}));
  EXPECT_EQ(s.history().back().index, 15);
  EXPECT_EQ(RunStore::open(s.dir(), "").history().size(), 15u);
}

TEST(RunStore, RecordStopsWhenHistoryWasRewrittenUnderIt) {
  TempDir t;
  RunStore s = populated(t.path());
  // Someone rewrote history.json: attempt 3 is not the one this store recorded.
  json h = json::parse(kopt::fs::read_file(s.dir() / "history.json"));
  h["attempts"][2]["label"] = "BM=1,BN=1";
  kopt::fs::write_file_atomic(s.dir() / "history.json", h.dump(2));
  const auto before = snapshot(s.dir());
  try {
    s.record(make_attempt("candidate", "BM=256", {{"BM", 256}}, Verdict::ok, {1, 1}));
    ADD_FAILURE() << "recorded over a rewritten history";
  } catch (const kopt::EnvironmentError& e) {
    EXPECT_EQ(e.id(), "kopt.run.909");
    EXPECT_NE(std::string(e.what()).find((s.dir() / "history.json").string()), std::string::npos) << e.what();
  }
  EXPECT_EQ(snapshot(s.dir()), before) << "nothing written";
  EXPECT_EQ(s.history().size(), 5u);
}

TEST(RunStore, ReadInfoReadsRunJsonOnly) {
  TempDir t;
  RunStore s = populated(t.path());
  const auto before = snapshot(s.dir());
  const RunInfo info = RunStore::read_info(s.dir());
  EXPECT_EQ(info.strategy, "random");
  EXPECT_EQ(info.seed, 42u);
  EXPECT_EQ(info.budget, (json{{"evaluations", 50}, {"minutes", 10}}));
  EXPECT_EQ(snapshot(s.dir()), before);
  usage_error_of([&] { RunStore::read_info(t.path()); }, "kopt.run.901");
}

TEST(RunStore, RunKilledWhileBeingCreatedIsNotResumableAndNotReused) {
  TempDir t;
  RunStore s = RunStore::create(t.path(), spec_json(), device_json(), run_info());
  stdfs::remove(s.dir() / "run.json");  // as if killed before run.json was written
  const auto before = snapshot(s.dir());
  const std::string msg = usage_error_of([&] { RunStore::open(s.dir(), ""); }, "kopt.run.901");
  EXPECT_NE(msg.find("run.json"), std::string::npos) << msg;
  EXPECT_EQ(snapshot(s.dir()), before);
  EXPECT_EQ(RunStore::create(t.path(), spec_json(), device_json(), run_info()).dir().filename(), "run-002");
}

// ---------------------------------------------------------------------------
// open() errors

TEST(RunStore, OpenRejectsWhatIsNotARunFolder) {
  TempDir t;
  std::string msg = usage_error_of([&] { RunStore::open(t.path() / "nope", ""); }, "kopt.run.901");
  EXPECT_NE(msg.find("nope"), std::string::npos) << msg;
  EXPECT_NE(msg.find("does not exist"), std::string::npos) << msg;

  stdfs::create_directories(t.path() / "plain");
  kopt::fs::write_file_atomic(t.path() / "plain" / "notes.txt", "hello");
  const auto before = snapshot(t.path() / "plain");
  msg = usage_error_of([&] { RunStore::open(t.path() / "plain", ""); }, "kopt.run.901");
  EXPECT_NE(msg.find((t.path() / "plain").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("not a run folder"), std::string::npos) << msg;
  EXPECT_NE(msg.find("run.json"), std::string::npos) << msg;
  EXPECT_EQ(snapshot(t.path() / "plain"), before);

  kopt::fs::write_file_atomic(t.path() / "afile", "x");
  usage_error_of([&] { RunStore::open(t.path() / "afile", ""); }, "kopt.run.901");
}

TEST(RunStore, OpenRejectsARunOfAnotherSpec) {
  TempDir t;
  RunStore s = populated(t.path());
  const auto before = snapshot(s.dir());
  const std::string other = RunStore::hash_spec(spec_json("other"));
  const std::string msg = usage_error_of([&] { RunStore::open(s.dir(), other); }, "kopt.run.902");
  EXPECT_NE(msg.find(s.dir().string()), std::string::npos) << msg;
  EXPECT_NE(msg.find(s.info().spec_hash), std::string::npos) << msg;
  EXPECT_NE(msg.find(other), std::string::npos) << msg;
  EXPECT_NE(msg.find("start a new run"), std::string::npos) << msg;
  // The hash covers the kernel files and the local headers they include.
  EXPECT_NE(msg.find("or a header they include changed since"), std::string::npos) << msg;
  EXPECT_EQ(snapshot(s.dir()), before);
  // An empty expected hash skips the check.
  EXPECT_EQ(RunStore::open(s.dir(), "").history().size(), 5u);
}

TEST(RunStore, OpenRejectsAnUnsupportedFormatVersion) {
  TempDir t;
  RunStore s = populated(t.path());
  json run = json::parse(kopt::fs::read_file(s.dir() / "run.json"));
  run["format_version"] = 2;
  kopt::fs::write_file_atomic(s.dir() / "run.json", run.dump(2));
  auto before = snapshot(s.dir());
  std::string msg = usage_error_of([&] { RunStore::open(s.dir(), s.info().spec_hash); }, "kopt.run.903");
  EXPECT_NE(msg.find("format_version 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("run.json"), std::string::npos) << msg;
  EXPECT_EQ(snapshot(s.dir()), before);

  run["format_version"] = 1;
  kopt::fs::write_file_atomic(s.dir() / "run.json", run.dump(2));
  json hist = json::parse(kopt::fs::read_file(s.dir() / "history.json"));
  hist["format_version"] = "one";
  kopt::fs::write_file_atomic(s.dir() / "history.json", hist.dump(2));
  before = snapshot(s.dir());
  msg = usage_error_of([&] { RunStore::open(s.dir(), s.info().spec_hash); }, "kopt.run.903");
  EXPECT_NE(msg.find("history.json"), std::string::npos) << msg;
  EXPECT_EQ(snapshot(s.dir()), before);
}

TEST(RunStore, OpenRejectsDamagedFiles) {
  TempDir t;
  RunStore s = populated(t.path());
  const std::string hash = s.info().spec_hash;
  const std::string history = kopt::fs::read_file(s.dir() / "history.json");
  const std::string spec = kopt::fs::read_file(s.dir() / "spec.json");

  // history.json cut short (not something our atomic writes produce, but a disk can).
  kopt::fs::write_file_atomic(s.dir() / "history.json", history.substr(0, history.size() / 2));
  auto before = snapshot(s.dir());
  std::string msg = usage_error_of([&] { RunStore::open(s.dir(), hash); }, "kopt.run.901");
  EXPECT_NE(msg.find("history.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not valid JSON"), std::string::npos) << msg;
  EXPECT_EQ(snapshot(s.dir()), before);

  // An attempt with a field of the wrong type.
  json h = json::parse(history);
  h["attempts"][2]["verdict"] = "splendid";
  kopt::fs::write_file_atomic(s.dir() / "history.json", h.dump(2));
  msg = usage_error_of([&] { RunStore::open(s.dir(), hash); }, "kopt.run.901");
  EXPECT_NE(msg.find("attempts[2]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("splendid"), std::string::npos) << msg;

  // history.json missing.
  stdfs::remove(s.dir() / "history.json");
  msg = usage_error_of([&] { RunStore::open(s.dir(), hash); }, "kopt.run.901");
  EXPECT_NE(msg.find("history.json"), std::string::npos) << msg;
  kopt::fs::write_file_atomic(s.dir() / "history.json", history);

  // spec.json edited after the run began.
  json sp = json::parse(spec);
  sp["timing"]["iterations"] = 5;
  kopt::fs::write_file_atomic(s.dir() / "spec.json", sp.dump(2));
  before = snapshot(s.dir());
  msg = usage_error_of([&] { RunStore::open(s.dir(), hash); }, "kopt.run.901");
  EXPECT_NE(msg.find("spec.json"), std::string::npos) << msg;
  EXPECT_EQ(snapshot(s.dir()), before);
  kopt::fs::write_file_atomic(s.dir() / "spec.json", spec);

  // A recorded attempt whose kernel.cu vanished.
  stdfs::remove(s.dir() / "candidates" / "0002" / "kernel.cu");
  msg = usage_error_of([&] { RunStore::open(s.dir(), hash); }, "kopt.run.901");
  EXPECT_NE(msg.find("0002"), std::string::npos) << msg;
}

TEST(RunStore, OpenNamesFileAndPathForStrictJsonErrors) {
  TempDir t;
  RunStore s = populated(t.path());
  const std::string hash = s.info().spec_hash;
  const std::string history = kopt::fs::read_file(s.dir() / "history.json");
  const std::string run = kopt::fs::read_file(s.dir() / "run.json");

  // A duplicate key (nlohmann would keep the last one silently).
  std::string dup = history;
  dup.insert(dup.find('{') + 1, "\"format_version\": 1, ");
  kopt::fs::write_file_atomic(s.dir() / "history.json", dup);
  auto before = snapshot(s.dir());
  std::string msg = usage_error_of([&] { RunStore::open(s.dir(), hash); }, "kopt.run.901");
  EXPECT_NE(msg.find("history.json: $: duplicate key 'format_version'"), std::string::npos) << msg;
  EXPECT_EQ(snapshot(s.dir()), before);
  kopt::fs::write_file_atomic(s.dir() / "history.json", history);

  // A number beyond a double: before, nlohmann's raw out_of_range.406.
  std::string big = run;
  big.insert(big.find('{') + 1, "\"x\": 1e999, ");
  kopt::fs::write_file_atomic(s.dir() / "run.json", big);
  msg = usage_error_of([&] { RunStore::open(s.dir(), hash); }, "kopt.run.901");
  EXPECT_NE(msg.find("run.json: $.x: the number 1e999 is out of range"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("json.exception"), std::string::npos) << msg;
  kopt::fs::write_file_atomic(s.dir() / "run.json", run);

  // history.json replaced by a folder, or by /dev/zero: named, never read forever.
  stdfs::remove(s.dir() / "history.json");
  stdfs::create_directory(s.dir() / "history.json");
  msg = usage_error_of([&] { RunStore::open(s.dir(), hash); }, "kopt.run.901");
  EXPECT_NE(msg.find("a directory, not a file"), std::string::npos) << msg;
  stdfs::remove(s.dir() / "history.json");
  stdfs::create_symlink("/dev/zero", s.dir() / "history.json");
  msg = usage_error_of([&] { RunStore::open(s.dir(), hash); }, "kopt.run.901");
  EXPECT_NE(msg.find("not a regular file"), std::string::npos) << msg;
  stdfs::remove(s.dir() / "history.json");
  kopt::fs::write_file_atomic(s.dir() / "history.json", history);

  // A damaged device.json or summary.json does not block a resume.
  kopt::fs::write_file_atomic(s.dir() / "device.json", "{\"name\": \"x\", \"name\": 1e999");
  kopt::fs::write_file_atomic(s.dir() / "summary.json", "\x00garbage{{{");
  RunStore again = RunStore::open(s.dir(), hash);
  EXPECT_EQ(again.history().size(), s.history().size());
}

TEST(RunStore, OpenReportsAnUnreadableFileAsPermissionDenied) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root, which ignores file permissions";
  TempDir t;
  RunStore s = populated(t.path());
  ::chmod((s.dir() / "history.json").c_str(), 0);
  const std::string msg = usage_error_of([&] { RunStore::open(s.dir(), s.info().spec_hash); }, "kopt.run.901");
  EXPECT_NE(msg.find("permission denied"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fix its permissions"), std::string::npos) << msg;
  ::chmod((s.dir() / "history.json").c_str(), 0644);
}

// ---------------------------------------------------------------------------
// find / best

TEST(RunStore, FindMatchesParamsAndSource) {
  TempDir t;
  RunStore s = populated(t.path());
  const Attempt& c = s.history()[2];
  const Attempt* f = s.find(c.params, c.source);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->index, 3);
  EXPECT_EQ(s.find(c.params, c.source + " "), nullptr);
  EXPECT_EQ(s.find({{"BM", 64}, {"BN", 32}}, c.source), nullptr);
  // Also after reloading (the source comes back from kernel.cu).
  RunStore o = RunStore::open(s.dir(), "");
  ASSERT_NE(o.find(c.params, c.source), nullptr);
  EXPECT_EQ(o.find(c.params, c.source)->index, 3);
  // The rejected one is found too (so it is not evaluated again).
  ASSERT_NE(o.find({{"BM", 128}, {"BN", 8}}, s.history()[3].source), nullptr);
}

TEST(RunStore, BestIsTheFastestPassingCandidateOrInitial) {
  TempDir t;
  RunStore s = RunStore::create(t.path(), spec_json(), device_json(), run_info());
  EXPECT_EQ(s.best(), nullptr);
  s.record(make_attempt("reference", "reference", {}, Verdict::ok, {0.1, 0.1}));  // fastest, but the reference
  EXPECT_EQ(s.best(), nullptr);
  s.record(make_attempt("initial", "naive.cu", {}, Verdict::ok, {4, 2}));
  ASSERT_NE(s.best(), nullptr);
  EXPECT_EQ(s.best()->kind, kopt::model::AttemptKind::initial);
  s.record(make_attempt("candidate", "rejected", {{"BM", 1}}, Verdict::wrong_result));
  EXPECT_EQ(s.best()->index, 2);
  s.record(make_attempt("candidate", "fast", {{"BM", 2}}, Verdict::ok, {1, 1}));
  s.record(make_attempt("candidate", "slower", {{"BM", 3}}, Verdict::ok, {1, 2}));
  EXPECT_EQ(s.best()->label, "fast");
  EXPECT_EQ(RunStore::open(s.dir(), "").best()->label, "fast");
}

// ---------------------------------------------------------------------------
// summary.json

TEST(RunStore, SummaryFields) {
  TempDir t;
  RunStore s = populated(t.path());
  s.write_summary({{"retiming", {{"geomean_ms", 0.7}}}, {"attempts", 99}});
  const json sum = json::parse(kopt::fs::read_file(s.dir() / "summary.json"));
  EXPECT_EQ(sum["format_version"], 1);
  EXPECT_EQ(sum["tool_version"], KOPT_VERSION);
  EXPECT_EQ(sum["workload"], "sgemm");
  EXPECT_EQ(sum["run"], "run-001");
  EXPECT_EQ(sum["gpu"]["name"], "NVIDIA H200");
  EXPECT_EQ(sum["gpu"]["arch"], "sm_90");
  EXPECT_EQ(sum["spec_hash"], s.info().spec_hash);
  EXPECT_EQ(sum["retiming"]["geomean_ms"], 0.7);
  EXPECT_EQ(sum["attempts"], 99);  // overridden by extra
  // A typed record: a key of the wrong type is refused, naming it (it used to be written as given).
  try {
    s.write_summary({{"attempts", "overridden by extra"}});
    ADD_FAILURE() << "a string attempts count was accepted";
  } catch (const kopt::SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("$.attempts: expected an integer"), std::string::npos) << e.what();
  }

  const json& b = sum["best"];
  EXPECT_EQ(b["index"], 3);
  EXPECT_EQ(b["label"], "BM=64,BN=64");
  EXPECT_EQ(b["kind"], "candidate");
  EXPECT_EQ(b["params"], (json{{"BM", 64}, {"BN", 64}}));
  const double g = std::sqrt(1.0 * 0.5);
  EXPECT_DOUBLE_EQ(b["geomean_ms"].get<double>(), g);
  EXPECT_DOUBLE_EQ(sum["reference_geomean_ms"].get<double>(), std::sqrt(8.0 * 4.0));
  EXPECT_DOUBLE_EQ(sum["initial_geomean_ms"].get<double>(), std::sqrt(4.0 * 2.0));
  EXPECT_DOUBLE_EQ(b["speedup_vs_reference"].get<double>(), std::sqrt(32.0) / g);
  EXPECT_DOUBLE_EQ(b["speedup_vs_initial"].get<double>(), std::sqrt(8.0) / g);
  ASSERT_EQ(b["cases"].size(), 2u);
  EXPECT_EQ(b["cases"][0]["name"], "big");
  for (const char* k : {"median_ms", "mean_ms", "min_ms", "max_ms", "stddev_ms", "samples"})
    EXPECT_TRUE(b["cases"][0].contains(k)) << k;
  EXPECT_DOUBLE_EQ(b["cases"][0]["median_ms"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(b["cases"][0]["reference_median_ms"].get<double>(), 8.0);
  EXPECT_DOUBLE_EQ(b["cases"][1]["speedup"].get<double>(), 8.0);

  const json& c = sum["counts"];
  EXPECT_EQ(c.size(), 10u);  // every verdict, zeros included
  EXPECT_EQ(c["ok"], 4);
  EXPECT_EQ(c["compile_error"], 1);
  EXPECT_EQ(c["timeout"], 0);

  // summary() is what write_summary writes.
  EXPECT_EQ(s.summary({{"retiming", {{"geomean_ms", 0.7}}}, {"attempts", 99}}).to_json(), sum);
  EXPECT_EQ(s.summary().to_json()["attempts"], 5);
}

TEST(RunStore, SummaryWithoutAPassingAttempt) {
  TempDir t;
  RunStore s = RunStore::create(t.path(), spec_json(), json::object(), run_info());
  s.record(make_attempt("candidate", "A", {{"BM", 1}}, Verdict::runtime_error));
  const json sum = s.summary().to_json();
  EXPECT_TRUE(sum["best"].is_null());
  EXPECT_TRUE(sum["reference_geomean_ms"].is_null());
  EXPECT_TRUE(sum["initial_geomean_ms"].is_null());
  EXPECT_EQ(sum["counts"]["runtime_error"], 1);
  EXPECT_EQ(sum["attempts"], 1);
}

// ---------------------------------------------------------------------------
// best.cu

TEST(RunStore, WriteBestIsSelfContained) {
  TempDir t;
  RunStore s = RunStore::create(t.path(), spec_json(), device_json(), run_info());
  s.record(make_attempt("reference", "reference", {}, Verdict::ok, {8, 4}));
  const std::string src =
      "// tiled sgemm\n// kopt:entry sgemm_tiled\n// kopt:grid ceil_div(N, 16), ceil_div(M, 16), 1\n"
      "// kopt:block 16, 16, 1\nextern \"C\" __global__ void sgemm_tiled() { int x = BM * BN; }\n";
  Attempt a = make_attempt("candidate", "BM=128,BN=64", {{"BM", 128}, {"BN", 64}}, Verdict::ok, {1, 0.5}, src);
  a.compile_options = {"-O3", "-DBM=128", "-maxrregcount=128"};
  s.record(a);
  s.write_best("sgemm_tiled", {"// kopt:grid ceil_div(N, BN), ceil_div(M, BM), 1",
                               "// kopt:block 256, 1, 1", "// kopt:shared 0"});
  const std::string best = kopt::fs::read_file(s.dir() / "best.cu");
  for (const char* want : {"#ifndef BM\n#define BM 128\n#endif\n", "#ifndef BN\n#define BN 64\n#endif\n",
                           "// kopt:param BM=128\n", "// kopt:param BN=64\n",
                           "// kopt:entry sgemm_tiled\n",
                           "// kopt:grid ceil_div(N, BN), ceil_div(M, BM), 1\n",
                           "// kopt:block 256, 1, 1\n", "// kopt:shared 0\n",
                           "// kopt:options -O3 -maxrregcount=128\n", "sgemm", "NVIDIA H200",
                           "Geomean:", "ms", "8x the reference",
                           "extern \"C\" __global__ void sgemm_tiled() { int x = BM * BN; }\n"})
    EXPECT_NE(best.find(want), std::string::npos) << "missing: " << want << "\n" << best;
  // The #defines come before the source; the source's own annotations that
  // the header supersedes are neutralised.
  EXPECT_LT(best.find("#define BM 128"), best.find("__global__"));
  EXPECT_NE(best.find("// kopt-superseded:grid ceil_div(N, 16)"), std::string::npos) << best;
  EXPECT_EQ(best.find("// kopt:grid ceil_div(N, 16)"), std::string::npos) << best;

  // The annotations parse back to the header's launch and parameters.
  const auto ann = kopt::spec::parse_annotations(best, "best.cu");
  ASSERT_TRUE(ann.entry.has_value());
  EXPECT_EQ(*ann.entry, "sgemm_tiled");
  ASSERT_TRUE(ann.grid.has_value());
  EXPECT_EQ((*ann.grid)[0].text(), kopt::spec::Expr::parse("ceil_div(N, BN)").text());
  ASSERT_TRUE(ann.block.has_value());
  EXPECT_EQ(ann.options, (std::vector<std::string>{"-O3", "-maxrregcount=128"}));
  EXPECT_EQ(ann.params, (std::map<std::string, int64_t>{{"BM", 128}, {"BN", 64}}));
}

TEST(RunStore, WriteBestFromAPreviousBestCu) {
  // The initial kernel was an earlier best.cu: its own kopt:param lines for
  // parameters tuned again are superseded; the others are kept.
  TempDir t;
  RunStore s = RunStore::create(t.path(), spec_json(), device_json(), run_info());
  const std::string src =
      "// kopt:entry k\n// kopt:param BM=64\n// kopt:param BK=8\n"
      "#ifndef BM\n#define BM 64\n#endif\n#ifndef BK\n#define BK 8\n#endif\n"
      "extern \"C\" __global__ void k() {}\n";
  s.record(make_attempt("candidate", "BM=128", {{"BM", 128}}, Verdict::ok, {1, 1}, src));
  s.write_best("k", {"// kopt:block 128, 1, 1"});
  const std::string best = kopt::fs::read_file(s.dir() / "best.cu");
  EXPECT_NE(best.find("// kopt-superseded:param BM=64"), std::string::npos) << best;
  EXPECT_NE(best.find("\n// kopt:param BK=8\n"), std::string::npos) << best;
  EXPECT_NE(best.find("// kopt-superseded:entry k"), std::string::npos) << best;
  const auto ann = kopt::spec::parse_annotations(best, "best.cu");
  EXPECT_EQ(ann.params, (std::map<std::string, int64_t>{{"BK", 8}, {"BM", 128}}));
  EXPECT_EQ(ann.entry.value_or(""), "k");
}

TEST(RunStore, WriteBestForAGivenAttempt) {
  TempDir t;
  RunStore s = populated(t.path());
  // Attempt 5 (BM=128,BN=64) won a final re-timing although best() is attempt 3.
  s.write_best(s.history()[4], "sgemm_tiled", {"// kopt:block 128, 1, 1"});
  const std::string best = kopt::fs::read_file(s.dir() / "best.cu");
  EXPECT_NE(best.find("#define BM 128\n"), std::string::npos) << best;
  EXPECT_NE(best.find("#define BN 64\n"), std::string::npos);
  EXPECT_NE(best.find("// kopt:param BM=128\n"), std::string::npos);
  EXPECT_NE(best.find("// Attempt:   #5 of 5"), std::string::npos) << best;
  EXPECT_NE(best.find("4x the reference"), std::string::npos) << best;  // sqrt(32) / sqrt(2)
  EXPECT_NE(best.find(s.history()[4].source), std::string::npos);
}

TEST(RunStore, WriteBestWithoutAPassingAttemptThrows) {
  TempDir t;
  RunStore s = RunStore::create(t.path(), spec_json(), device_json(), run_info());
  s.record(make_attempt("candidate", "A", {{"BM", 1}}, Verdict::compile_error));
  try {
    s.write_best("k", {});
    ADD_FAILURE() << "expected kopt.run.906";
  } catch (const kopt::Error& e) {
    EXPECT_EQ(e.id(), "kopt.run.906");
  }
  EXPECT_FALSE(stdfs::exists(s.dir() / "best.cu"));
}
