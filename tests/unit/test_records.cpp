// The run folder's typed records (store/summary.h, store/tuning_cache.h, run.json
// in store/store.h) and the enums behind them: one reader and one writer each,
// byte-compatible with what kopt wrote before, validating with the file and
// the JSON path; verdicts and attempt kinds exhaustive.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <set>
#include <string>

#include "model/attempt.h"
#include "model/result.h"
#include "store/interop.h"
#include "store/store.h"
#include "store/summary.h"
#include "store/tuning_cache.h"
#include "spec/spec.h"
#include "spec_error.h"
#include "support/run_fixture.h"
#include "temp_dir.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/json_read.h"

namespace {

using namespace kopt::model;  // Attempt, AttemptKind, Verdict: the enums and records under test
using namespace kopt::store;  // Summary, ReadMode, the run folder's other records
using kopt::test::TempDir;
using kopt::test::spec_error;
using nlohmann::json;

const std::string kSource = KOPT_SOURCE_DIR;

Attempt attempt(int index, AttemptKind kind, Verdict v, std::optional<double> geomean) {
  Attempt a;
  a.index = index;
  a.kind = kind;
  a.label = "a" + std::to_string(index);
  a.result.verdict = v;
  a.result.geomean_ms = geomean;
  return a;
}

json schema_enum(const std::string& file, const std::string& def) {
  return kopt::parse_json_file(kSource + "/docs/schemas/" + file, "schema")["$defs"][def]["enum"];
}

// ---------------------------------------------------------------------------
// Enums: every verdict and kind is listed, named, parsed, mapped and in the schema

/// Each value of enum E below `probe` that `name_of` names (not "unknown"): it
/// stands at its place in `all` (called `all_name`), `parse` reads its name
/// back, and `also(value, name)` holds; `listed` gets the names.
template <typename E, size_t N, typename NameOf, typename Parse, typename Also>
void check_every_value(int probe, const E (&all)[N], const char* all_name, NameOf name_of, Parse parse, Also also,
                       std::set<std::string>* listed) {
  for (int i = 0; i < probe; ++i) {
    const E v = static_cast<E>(i);
    const std::string name = name_of(v);
    if (name == "unknown") continue;
    ASSERT_LT(static_cast<size_t>(i), N) << name << " is not in " << all_name;
    EXPECT_EQ(all[i], v) << name;
    EXPECT_EQ(parse(name), v) << name;
    also(v, name);
    listed->insert(name);
  }
}

TEST(Records, EveryVerdictIsListedMappedAndInTheSchema) {
  // A verdict added to the enum (and, as the compiler demands, to
  // verdict_name's switch) but not to kAllVerdicts fails here.
  std::set<std::string> listed;
  ASSERT_NO_FATAL_FAILURE(check_every_value(
      64, kopt::model::kAllVerdicts, "kAllVerdicts", kopt::model::verdict_name, kopt::model::parse_verdict,
      [](Verdict v, const std::string&) {
        const std::string t4 = kopt::store::t4_invalidity(v);
        EXPECT_NE(std::string("timeout compile runtime correctness constraints correct").find(t4), std::string::npos)
            << t4;
      },
      &listed));
  EXPECT_EQ(listed.size(), std::size(kopt::model::kAllVerdicts));
  std::set<std::string> in_schema;
  for (const auto& n : schema_enum("history.schema.json", "verdict")) in_schema.insert(n.get<std::string>());
  EXPECT_EQ(in_schema, listed) << "docs/schemas/history.schema.json lists other verdicts than kopt";
}

TEST(Records, EveryAttemptKindIsListedNamedAndInTheSchema) {
  std::set<std::string> listed;
  ASSERT_NO_FATAL_FAILURE(check_every_value(
      16, kopt::model::kAllAttemptKinds, "kAllAttemptKinds", kopt::model::attempt_kind_name,
      kopt::model::parse_attempt_kind,
      [](AttemptKind k, const std::string& name) { EXPECT_EQ(json(k), json(name)) << "JSON of a kind is its name"; },
      &listed));
  EXPECT_FALSE(kopt::model::parse_attempt_kind("Candidate"));
  std::set<std::string> in_schema;
  for (const auto& n : schema_enum("history.schema.json", "kind")) in_schema.insert(n.get<std::string>());
  EXPECT_EQ(in_schema, listed);
  // history.json refuses a kind it does not know (it used to take any string).
  json j = {{"index", 1}, {"kind", "cuda"}, {"verdict", "ok"}};
  EXPECT_THROW(Attempt::from_json(j), kopt::Error);
}

// ---------------------------------------------------------------------------
// One rule for the best attempt

TEST(Records, TheBestAttemptRule) {
  std::vector<Attempt> h = {attempt(1, AttemptKind::baseline, Verdict::ok, 0.5),   // not a contender
                            attempt(2, AttemptKind::reference, Verdict::ok, 0.6),  // nor this
                            attempt(3, AttemptKind::initial, Verdict::ok, 4.0),
                            attempt(4, AttemptKind::candidate, Verdict::wrong_result, 1.0),
                            attempt(5, AttemptKind::candidate, Verdict::ok, 2.0),
                            attempt(6, AttemptKind::candidate, Verdict::ok, 2.0),  // a tie: the earlier wins
                            attempt(7, AttemptKind::candidate, Verdict::ok, NAN),
                            attempt(8, AttemptKind::candidate, Verdict::ok, 0.0)};
  ASSERT_NE(kopt::model::best_attempt(h), nullptr);
  EXPECT_EQ(kopt::model::best_attempt(h)->index, 5);
  EXPECT_FALSE(kopt::model::competes_for_best(h[6]));
  EXPECT_FALSE(kopt::model::competes_for_best(h[7]));
  h.resize(3);
  EXPECT_EQ(kopt::model::best_attempt(h)->index, 3);
  h.resize(2);
  EXPECT_EQ(kopt::model::best_attempt(h), nullptr);
  EXPECT_EQ(kopt::model::first_ok(h, AttemptKind::reference)->index, 2);
}

// ---------------------------------------------------------------------------
// summary.json

json full_summary() {
  return {{"format_version", 1}, {"tool_version", "0.1.0"}, {"run", "run-001"}, {"workload", "sgemm"},
          {"gpu", {{"name", "NVIDIA H200"}, {"arch", "sm_90"}}}, {"spec_hash", "ab"}, {"strategy", "random"},
          {"seed", 7}, {"created", "2026-01-01T00:00:00Z"},
          {"best", {{"index", 3}, {"kind", "candidate"}, {"label", "BM=64"}, {"params", {{"BM", 64}}},
                    {"geomean_ms", 0.5},
                    {"cases", json::array({json{{"name", "big"}, {"median_ms", 1.0}, {"mean_ms", "NaN"},
                                                {"min_ms", 1.0}, {"max_ms", 1.0}, {"stddev_ms", 0.0},
                                                {"samples", 10}}})},
                    {"speedup_vs_reference", nullptr}, {"speedup_vs_initial", 16.0}}},
          {"reference_geomean_ms", nullptr}, {"initial_geomean_ms", 8.0},
          {"counts", {{"ok", 5}, {"timeout", 0}}}, {"attempts", 7},
          {"accuracy", {{"cublas_index", 2},
                        {"kernels", json::array({json{{"variant", 0}, {"index", 3}, {"label", "BM=64"},
                                                      {"cases", json::array({json{{"name", "big"}, {"role", "performance"},
                                                                                  {"rel_error_max", 2.5e-7},
                                                                                  {"rel_error_rms", 6e-8},
                                                                                  {"cublas_rel_error_max", 2e-7},
                                                                                  {"cublas_rel_error_rms", 5e-8}},
                                                                             json{{"name", "1x1x1"},
                                                                                  {"rel_error_max", 0.0}}})}}})}}},
          {"budget", {{"evaluations", 40}, {"minutes", 0.0}, {"patience", 0}}},
          {"budget_used", {{"evaluations", 6}, {"search_minutes", 0.25}}}, {"stop", "evaluations: 6 of 6"},
          {"tuner", {{"candidates_per_minute", 24.0}, {"gpu_measured_fraction", 0.5}, {"compile_ms_median", 80.0},
                     {"compile_cache_hit_rate", 0.0}, {"compile_threads", 1}, {"compiles_ready_when_needed", 5},
                     {"withdrawn_before_evaluation", 0}, {"compile_wait_ms", 3.5}, {"worker_check_ms", 1.0},
                     {"worker_timing_ms", 2.0}, {"host_gap_ms", 0.5}, {"worker_other_ms", 0.25},
                     {"compile_ahead", {{"median", 5.0}, {"max", 30.0}, {"auto", true}}},
                     {"devices", json::array({json{{"device", 0}, {"name", "H200"}, {"evaluated", 6},
                                                   {"measured_fraction", 0.5}, {"busy_fraction", 0.9},
                                                   {"uuid", "GPU-1"}}})}}},
          {"retime", json::array({json{{"index", 3}, {"label", "BM=64"}, {"geomeans_ms", {0.5}}, {"median_ms", 0.5},
                                       {"cases_median_ms", {{"big", 1.0}, {"tall", nullptr}}},
                                       {"failed_recheck", false}, {"device", 0}}})},
          {"time_split", {{"setup_minutes", 0.1}, {"search_minutes", 0.25}, {"retime_minutes", 0.05},
                          {"total_minutes", 0.4}}},
          {"cublas_geomean_ms", 0.4},
          {"interrupted", {{"signal", "SIGTERM"}, {"resume", "kopt optimize --resume results/run-001"}}},
          {"final_best", {{"index", 3}, {"label", "BM=64"}, {"params", {{"BM", 64}}}, {"geomean_ms", 0.5},
                          {"ratio_to_cublas", 0.8}}},
          {"specialization",
           {{"threshold", 0.03},
            {"variants", json::array({kopt::test::specialization_variant(0, 3, "BM=64", {{"BM", 64}}),
                                      kopt::test::specialization_variant(1, 5, "BM=16", {{"BM", 16}})})},
            {"cases", {{"big", {{"variant", 0}, {"median_ms", 1.0}, {"single_median_ms", 1.0},
                                {"sizes", {{"M", 4096}, {"N", 4096}}}}},
                       {"tall", {{"variant", 1}, {"median_ms", nullptr}, {"single_median_ms", 2.0},
                                 {"sizes", {{"M", 4096}, {"N", 2}}}, {"class", "skinny"}}}}},
            {"latency_ms", {{"big", {1.0, 3.0}}, {"tall", {2.0, nullptr}}}},
            {"dispatch", {{"sizes", {"M", "N"}}, {"noise", 0.03},
                          {"nodes", json::array({json{{"dim", 1}, {"threshold", 64}, {"left", 1}, {"right", 2}},
                                                 json{{"variant", 1}}, json{{"variant", 0}}})}}},
            {"geomean_ms", 0.9}, {"single_geomean_ms", 1.4}}},
          {"shape_classes", json::array({json{{"class", 1}, {"name", "skinny"}, {"cases", {"tall"}},
                                              {"evaluations", 3}, {"evaluations_share", 3}, {"minutes", 0.1},
                                              {"screened_cases", 0}, {"withdrawn", 0},
                                              {"best", {{"label", "BM=16"}, {"geomean_ms", 2.0}}}}})},
          {"screen_factor", 4.0},
          {"agent", {{"calls", 3}}},
          {"warm_start", {{"from", "--warm-start w.json"}}}};
}

TEST(Records, SummaryReadsEveryKeyAndWritesTheSameDocument) {
  const json doc = full_summary();
  const Summary s = Summary::from_json(doc, "summary.json");
  EXPECT_EQ(s.to_json(), doc);
  EXPECT_EQ(kopt::dump_json(s.to_json(), 2), kopt::dump_json(doc, 2));
  ASSERT_TRUE(s.best && s.best->kind);
  EXPECT_EQ(*s.best->kind, AttemptKind::candidate);
  EXPECT_TRUE(std::isnan(*s.best->cases[0].mean_ms));
  ASSERT_TRUE(s.specialization);
  EXPECT_EQ(s.specialization->variants.size(), 2u);
  EXPECT_EQ(*s.specialization->cases.at("tall").shape_class, "skinny");
  EXPECT_FALSE(s.specialization->latency_ms.at("tall")[1]);
  ASSERT_TRUE(s.specialization->dispatch_tree("summary.json"));
  EXPECT_EQ(s.specialization->dispatch_tree("summary.json")->select({4096, 2}), 1);
  EXPECT_EQ(s.shape_classes->size(), 1u);
  EXPECT_EQ(s.others.size(), 2u);  // the proposer's own: agent, warm_start
  EXPECT_EQ(s.interrupted->signal, "SIGTERM");
  ASSERT_TRUE(s.accuracy);
  EXPECT_EQ(*s.accuracy->cublas_index, 2);
  ASSERT_EQ(s.accuracy->kernels.size(), 1u);
  EXPECT_DOUBLE_EQ(*s.accuracy->kernels[0].cases[0].cublas_rel_error_rms, 5e-8);
  EXPECT_FALSE(s.accuracy->kernels[0].cases[1].cublas_rel_error_max);
}

TEST(Records, SummaryErrorsNameTheFileAndTheJsonPath) {
  struct Case {
    std::function<void(json&)> damage;
    std::string where;
  };
  const Case cases[] = {
      {[](json& d) { d["attempts"] = "7"; }, "summary.json: $.attempts: expected an integer"},
      {[](json& d) { d["specialization"]["latency_ms"]["big"][1] = "3.0"; },
       "summary.json: $.specialization.latency_ms.big[1]: expected a number"},
      {[](json& d) { d["specialization"]["variants"][1]["file"] = "../../x.cu"; },
       "summary.json: $.specialization.variants[1].file: expected a file name inside the run folder"},
      {[](json& d) { d["specialization"]["cases"]["tall"]["variant"] = 2; },
       "summary.json: $.specialization.cases.tall.variant: the integer 2 is out of range"},
      {[](json& d) { d["specialization"]["dispatch"]["nodes"][1]["variant"] = 7; }, "summary.json: "},
      {[](json& d) { d["best"]["kind"] = "baseline2"; }, "summary.json: $.best.kind: expected initial, baseline"},
      {[](json& d) { d["retime"][0]["geomeans_ms"][0] = -1; }, "summary.json: $.retime[0].geomeans_ms[0]: "},
      {[](json& d) { d["budget_used"]["search_minutes"] = "1"; }, "summary.json: $.budget_used.search_minutes: "},
      {[](json& d) { d["accuracy"]["kernels"][0]["cases"][0]["rel_error_max"] = "2.5e-7"; },
       "summary.json: $.accuracy.kernels[0].cases[0].rel_error_max: expected a number"},
      {[](json& d) { d["accuracy"]["kernels"][0]["cases"][1]["cublas_rel_error_rms"] = -1; },
       "summary.json: $.accuracy.kernels[0].cases[1].cublas_rel_error_rms: "},
  };
  for (const Case& c : cases) {
    json doc = full_summary();
    c.damage(doc);
    SCOPED_TRACE(c.where);
    const auto [id, what] = spec_error([&] { Summary::from_json(doc, "summary.json"); });
    EXPECT_EQ(id, "kopt.json.005") << what;
    EXPECT_NE(what.find(c.where), std::string::npos) << what;
    // Tolerant (the report, --resume): the damaged member is left out, the rest is read.
    const Summary t = Summary::from_json(doc, "summary.json", ReadMode::tolerant);
    EXPECT_EQ(t.run, "run-001");
    EXPECT_TRUE(t.final_best);
  }
  // A damaged tree: a tolerant read keeps the specialisation without it.
  json doc = full_summary();
  doc["specialization"]["dispatch"]["nodes"][1]["variant"] = 7;
  const Summary t = Summary::from_json(doc, "summary.json", ReadMode::tolerant);
  ASSERT_TRUE(t.specialization);
  EXPECT_TRUE(t.specialization->dispatch.is_null());
  EXPECT_EQ(t.specialization->variants.size(), 2u);
}

// summary.json "accuracy": the errors of the kernels the run ships beside
// cuBLAS's, derived from the history; the store writes it for the kernels the
// summary names when it is written.
TEST(Records, AccuracyFollowsTheShippedKernels) {
  auto with_errors = [](Attempt a, double scale) {
    for (const char* name : {"1x1x1", "big"}) {
      kopt::model::CaseResult c;
      c.name = name;
      c.role = std::string(name) == "big" ? "performance" : "correctness";
      c.passed = true;
      c.rel_error_max = scale * (c.role == "performance" ? 4e-7 : 1e-7);
      c.rel_error_rms = scale * 1e-7 / 4;
      a.result.cases.push_back(c);
    }
    return a;
  };
  std::vector<Attempt> h = {with_errors(attempt(1, AttemptKind::initial, Verdict::ok, 9.0), 1),
                            with_errors(attempt(2, AttemptKind::baseline, Verdict::ok, 1.0), 0.5),
                            with_errors(attempt(3, AttemptKind::candidate, Verdict::ok, 2.0), 1.5),
                            with_errors(attempt(4, AttemptKind::candidate, Verdict::ok, 1.5), 3),
                            attempt(5, AttemptKind::candidate, Verdict::ok, 1.2)};  // no errors measured
  Summary s;
  s.best = kopt::store::SummaryBest{};
  s.best->index = 4;
  auto acc = kopt::store::accuracy_of(s, h);
  ASSERT_TRUE(acc);
  EXPECT_EQ(*acc->cublas_index, 2);
  ASSERT_EQ(acc->kernels.size(), 1u);
  EXPECT_EQ(*acc->kernels[0].index, 4);
  ASSERT_EQ(acc->kernels[0].cases.size(), 2u);
  EXPECT_EQ(acc->kernels[0].cases[1].name, "big");
  EXPECT_EQ(acc->kernels[0].cases[1].role, "performance");
  EXPECT_DOUBLE_EQ(*acc->kernels[0].cases[1].rel_error_max, 12e-7);
  EXPECT_DOUBLE_EQ(*acc->kernels[0].cases[1].cublas_rel_error_max, 2e-7);
  // The re-timing's winner wins over the search's best; the variants over both.
  s.final_best = kopt::store::FinalBest{};
  s.final_best->index = 3;
  EXPECT_EQ(*kopt::store::accuracy_of(s, h)->kernels[0].index, 3);
  s.specialization = kopt::store::Specialization{};
  for (int v : {3, 4}) {
    kopt::store::SpecializationVariant sv;
    sv.variant = static_cast<int>(s.specialization->variants.size());
    sv.index = v;
    s.specialization->variants.push_back(sv);
  }
  acc = kopt::store::accuracy_of(s, h);
  ASSERT_EQ(acc->kernels.size(), 2u);
  EXPECT_EQ(acc->kernels[1].variant, 1);
  EXPECT_EQ(*acc->kernels[1].index, 4);
  // Nothing measured (another tolerance), or no winner: no key.
  s = Summary{};
  s.best = kopt::store::SummaryBest{};
  s.best->index = 5;
  EXPECT_FALSE(kopt::store::accuracy_of(s, h));
  EXPECT_FALSE(kopt::store::accuracy_of(Summary{}, h));

  // The store: summary() has the search's best (#4, the fastest of #1-#4);
  // write_summary follows the final_best the driver sets afterwards.
  TempDir d;
  auto store = kopt::store::RunStore::create(d.path(), json{{"name", "w"}}, json::object(), {});
  for (size_t i = 0; i < 4; ++i) {
    Attempt a = h[i];
    a.index = 0;
    store.record(a);
  }
  Summary fresh = store.summary();
  ASSERT_TRUE(fresh.accuracy);
  EXPECT_EQ(*fresh.accuracy->kernels[0].index, 4);
  fresh.final_best = kopt::store::FinalBest{};
  fresh.final_best->index = 3;
  store.write_summary(fresh);
  const json written = kopt::parse_json_file(store.dir() / "summary.json", "summary");
  EXPECT_EQ(written["accuracy"]["kernels"][0]["index"], 3) << written["accuracy"].dump();
  EXPECT_EQ(written["accuracy"]["cublas_index"], 2);
  EXPECT_EQ(written["accuracy"]["kernels"][0]["cases"][1]["cublas_rel_error_max"], 2e-7);
}

TEST(Records, TheStoreCountsEveryVerdict) {
  TempDir d;
  auto store = kopt::store::RunStore::create(d.path(), json{{"name", "w"}}, json::object(), {});
  Attempt a = attempt(0, AttemptKind::candidate, Verdict::compiled, std::nullopt);
  a.source = "// k\n";
  store.record(a);
  const Summary s = store.summary();
  for (Verdict v : kopt::model::kAllVerdicts) {
    const std::string name = kopt::model::verdict_name(v);
    ASSERT_TRUE(s.counts.count(name)) << name;
    EXPECT_EQ(s.counts.at(name), v == Verdict::compiled ? 1 : 0) << name;
  }
  // ... and "compiled" only when there is one.
  TempDir e;
  auto plain = kopt::store::RunStore::create(e.path(), json{{"name", "w"}}, json::object(), {});
  EXPECT_EQ(plain.summary().counts.count("compiled"), 0u);
  EXPECT_EQ(plain.summary().counts.size(), std::size(kopt::model::kAllVerdicts) - 1);
}

// ---------------------------------------------------------------------------
// run.json

TEST(Records, RunJsonIsWrittenAndReadByTheStore) {
  TempDir d;
  kopt::store::RunInfo info;
  info.strategy = "anneal";
  info.seed = 18446744073709551615ull;
  info.budget = {{"evaluations", 10}};
  info.shape_classes = -1;
  info.screen_factor = 4;
  auto store = kopt::store::RunStore::create(d.path(), json{{"name", "w"}}, json::object(), info);
  const kopt::store::RunInfo back = kopt::store::RunStore::read_info(store.dir());
  EXPECT_EQ(back.strategy, "anneal");
  EXPECT_EQ(back.seed, info.seed);
  EXPECT_EQ(back.shape_classes, -1);
  EXPECT_EQ(back.screen_factor, 4.0);
  EXPECT_EQ(back.spec_file_hash, kopt::store::RunStore::hash_spec(json{{"name", "w"}}));
  // A drafted workload replaces spec.json before the first attempt: run.json follows.
  store.replace_spec(json{{"name", "moved"}});
  EXPECT_EQ(kopt::store::RunStore::read_info(store.dir()).spec_file_hash,
            kopt::store::RunStore::hash_spec(json{{"name", "moved"}}));
  EXPECT_NO_THROW(kopt::store::RunStore::open(store.dir(), ""));
  // A damaged option is named.
  json run = kopt::parse_json_file(store.dir() / "run.json", "run.json");
  run["options"]["shape_classes"] = "auto";
  kopt::fs::write_file_atomic(store.dir() / "run.json", run.dump());
  try {
    kopt::store::RunStore::read_info(store.dir());
    ADD_FAILURE() << "no error";
  } catch (const kopt::UsageError& e) {
    EXPECT_EQ(e.id(), "kopt.run.901");
    EXPECT_NE(std::string(e.what()).find("$.options.shape_classes: expected an integer"), std::string::npos)
        << e.what();
  }
}

// ---------------------------------------------------------------------------
// The tuning cache

json example_cache() { return kopt::parse_json_file(kSource + "/example_project/sgemm.tuning.json", "cache"); }

TEST(Records, TheExampleCacheReadsAndIsWrittenBackByteForByte) {
  TempDir d;
  const std::filesystem::path in = kSource + "/example_project/sgemm.tuning.json";
  const kopt::store::TuningCache c = kopt::store::read_tuning_cache(in);
  ASSERT_EQ(c.entries.size(), 1u);
  ASSERT_TRUE(c.entries[0].specialization && c.entries[0].variants);
  EXPECT_EQ(c.entries[0].variants->size(), c.entries[0].specialization->variants.size());
  kopt::store::write_tuning_cache(d / "copy.json", c);
  EXPECT_EQ(kopt::fs::read_file(d / "copy.json"), kopt::fs::read_file(in));
  // Every parameter it records is one of the template's values.
  const kopt::spec::Spec spec = kopt::spec::load_spec(kSource + "/templates/sgemm/sgemm.json");
  EXPECT_NO_THROW(kopt::store::check_entry_against_spec(c.entries[0], 0, spec, "sgemm.tuning.json"));
}

TEST(Records, AHandEditedCacheIsRefusedWithTheJsonPath) {
  struct Case {
    std::function<void(json&)> damage;
    std::string id, where;
  };
  const Case cases[] = {
      {[](json& e) { e["specialization"]["latency_ms"].begin().value()[0] = "0.1"; }, "kopt.json.005",
       "$.entries[0].specialization.latency_ms.captured_M1024_N4000_K1536[0]: expected a number"},
      {[](json& e) { e["cublas_geomean_ms"] = "0.16"; }, "kopt.json.005",
       "$.entries[0].cublas_geomean_ms: expected a number"},
      {[](json& e) { e.erase("variants"); }, "kopt.cache.105",
       "$.entries[0]: has no \"variants\", but $.entries[0].specialization lists 11 variants"},
      {[](json& e) { e["variants"].erase(e["variants"].begin()); }, "kopt.cache.105",
       "$.entries[0].variants: has 10 variant(s), but $.entries[0].specialization lists 11"},
      {[](json& e) { e["specialization"]["cases"].begin().value()["variant"] = 11; }, "kopt.json.005",
       ".variant: the integer 11 is out of range"},
      {[](json& e) { e["variants"][2]["shapes"][0]["M"] = -4; }, "kopt.json.005",
       "$.entries[0].variants[2].shapes[0].M: the integer -4 is out of range"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.where);
    json doc = example_cache();
    c.damage(doc["entries"][0]);
    const auto [id, what] = spec_error([&] { kopt::store::TuningCache::from_json(doc, "sgemm.tuning.json"); });
    EXPECT_EQ(id, c.id) << what;
    EXPECT_NE(what.find("sgemm.tuning.json: $.entries[0]"), std::string::npos) << what;
    EXPECT_NE(what.find(c.where), std::string::npos) << what;
  }
  // A parameter value the spec does not have (it would change the cost model's fit).
  json doc = example_cache();
  doc["entries"][0]["specialization"]["variants"][3]["params"]["BM"] = -64;
  const kopt::store::TuningCache c = kopt::store::TuningCache::from_json(doc, "sgemm.tuning.json");
  const kopt::spec::Spec spec = kopt::spec::load_spec(kSource + "/templates/sgemm/sgemm.json");
  const auto [id, what] =
      spec_error([&] { kopt::store::check_entry_against_spec(c.entries[0], 0, spec, "sgemm.tuning.json"); });
  EXPECT_EQ(id, "kopt.cache.105");
  EXPECT_NE(what.find("sgemm.tuning.json: $.entries[0].specialization.variants[3].params.BM: -64 is not a value of "
                      "the spec's tuning parameter BM (64, 128, 256)"),
            std::string::npos)
      << what;
}

}  // namespace
