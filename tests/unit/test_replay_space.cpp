// Recorded spaces replayed (tests/support/replay_space.h) and the synthetic
// development spaces (tests/support/synthetic_spaces.h): Kernel Tuner cache
// files in and out, the measures of a replay, the synthetic families' shape,
// and the default strategy's claims on the development spaces.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "search/strategy.h"
#include "util/error.h"
#include "util/fs.h"

#include "support/replay_space.h"
#include "support/synthetic_spaces.h"
#include "temp_dir.h"

namespace kopt::search::replay {
namespace {

/// A 4 x 3 space: value 1 + a + 2 b ms (the best at a = b = 0), a = 3 failed
/// to compile, each configuration costing 2 s.
RecordedSpace small_space() {
  RecordedSpace s;
  s.label = "small";
  s.params = {{"A", {0, 1, 2, 3}}, {"B", {0, 1, 2}}};
  for (int64_t a = 0; a < 4; ++a)
    for (int64_t b = 0; b < 3; ++b) {
      Outcome o{a == 3 ? "CompilationFailedConfig" : "ok", a == 3 ? 0.0 : 1.0 + double(a) + 2.0 * double(b), 2.0};
      s.entries.push_back({{{"A", a}, {"B", b}}, o});
    }
  return s;
}

TEST(ReplaySpaceTest, KernelTunerCacheRoundTrip) {
  const test::TempDir dir;
  const RecordedSpace s = small_space();
  const std::string text = kernel_tuner_cache(s).dump(0);
  // Kernel Tuner takes a file that does not end with these braces for one left open.
  ASSERT_GE(text.size(), 3u);
  EXPECT_EQ(text.substr(text.size() - 3), "}\n}");
  const auto file = dir.path() / "small.json";
  fs::write_file_atomic(file, text + "\n");
  const RecordedSpace back = read_kernel_tuner_cache(file);
  EXPECT_EQ(back.label, "small");
  ASSERT_EQ(back.params.size(), 2u);
  EXPECT_EQ(back.params[0].name, "A");
  EXPECT_EQ(back.params[1].values, (std::vector<int64_t>{0, 1, 2}));
  ASSERT_EQ(back.entries.size(), 12u);
  EXPECT_TRUE(back.timed());
  size_t failed = 0;
  for (size_t i = 0; i < back.entries.size(); ++i) {
    EXPECT_EQ(back.entries[i].first, s.entries[i].first);
    EXPECT_EQ(back.entries[i].second.verdict, s.entries[i].second.verdict);
    EXPECT_EQ(back.entries[i].second.ms, s.entries[i].second.ms);
    EXPECT_DOUBLE_EQ(back.entries[i].second.seconds, 2.0);
    failed += !back.entries[i].second.ok();
  }
  EXPECT_EQ(failed, 3u);

  // Left open by a session that stopped early (no closing braces, a trailing
  // comma), with a parameter of non-integer values: read on positions.
  const auto open = dir.path() / "open.json";
  fs::write_file_atomic(open, R"({"device_name": "GPU", "kernel_name": "k", "tune_params_keys": ["x", "mode"],
"tune_params": {"x": [1, 2], "mode": ["fast", "safe"]}, "objective": "time", "cache": {
"1,fast": {"x": 1, "mode": "fast", "time": 2.5, "compile_time": 1000, "verification_time": 0, "benchmark_time": 500},
"2,safe": {"x": 2, "mode": "safe", "time": "RuntimeFailedConfig", "compile_time": 800},)");
  const RecordedSpace o = read_kernel_tuner_cache(open);
  EXPECT_EQ(o.device, "GPU");
  ASSERT_EQ(o.entries.size(), 2u);
  EXPECT_EQ(o.params[1].values, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(o.entries[0].first, (Config{{"mode", 0}, {"x", 1}}));
  EXPECT_TRUE(o.entries[0].second.ok());
  EXPECT_DOUBLE_EQ(o.entries[0].second.seconds, 1.5);
  EXPECT_EQ(o.entries[1].second.verdict, "RuntimeFailedConfig");

  const auto bad = dir.path() / "bad.json";
  fs::write_file_atomic(bad, R"({"tune_params": {"x": [1]}, "cache": {"3": {"x": 3, "time": 1}}})");
  try {
    read_kernel_tuner_cache(bad);
    ADD_FAILURE() << "accepted a value outside tune_params";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.id(), "kopt.replay.110");
    EXPECT_NE(std::string(e.what()).find("$.cache[\"3\"].x: 3 is not in tune_params"), std::string::npos) << e.what();
  }
}

TEST(ReplaySpaceTest, MeasuresOfAReplay) {
  const Replay r(small_space());
  EXPECT_EQ(r.size(), 12u);
  EXPECT_EQ(r.failed(), 3u);
  EXPECT_EQ(r.optimum(), 1.0);
  EXPECT_EQ(r.within(0.05), 1u);
  // exhaustive visits A=0,B=0 first: 1 evaluation, 2 s, for every seed.
  ReplayOptions o;
  o.seeds = 3;
  const StrategyMeasures ex = r.measure("exhaustive", o);
  EXPECT_EQ(ex.median_to5(), 1.0);
  EXPECT_EQ(ex.median_to1(), 1.0);
  EXPECT_EQ(ex.median_seconds1(), 2.0);
  EXPECT_DOUBLE_EQ(ex.score, 1.0);  // the optimum from the first evaluation on
  ASSERT_TRUE(ex.score_time);
  // Every strategy finds the optimum within the space, each configuration once.
  for (const std::string& name : strategy_names()) {
    const StrategyMeasures m = r.measure(name, o);
    ASSERT_EQ(m.runs.size(), 3u) << name;
    for (const score::Trace& t : m.runs) {
      EXPECT_LE(t.size(), 12u) << name;
      EXPECT_TRUE(score::evaluations_to(t, 1.0)) << name;
    }
  }
  // Runs made elsewhere are measured alike; one that never gets there counts
  // as worse than any that does.
  const StrategyMeasures ext = r.measure_runs(
      "other", {{{3.0, 2.0}, {1.0, 2.0}}, {{std::nullopt, 2.0}, {5.0, 2.0}}, {{2.0, 2.0}, {1.0, 2.0}}});
  EXPECT_EQ(ext.to5, (std::vector<std::optional<size_t>>{2, std::nullopt, 2}));
  EXPECT_EQ(ext.median_to5(), 2.0);
  const StrategyMeasures never = r.measure_runs("never", {{{3.0, 2.0}}, {{5.0, 2.0}}, {{2.0, 2.0}, {1.0, 2.0}}});
  EXPECT_EQ(never.median_to5(), std::nullopt);
  const std::string table = measures_table(r, {ex, ext, never});
  EXPECT_NE(table.find("| exhaustive | 1.0 | 1.0 | 2 | 2 | 1.000 |"), std::string::npos) << table;
  EXPECT_NE(table.find("| never | - | - |"), std::string::npos) << table;
}

TEST(ReplaySpaceTest, SyntheticFamiliesHaveTheirFeatures) {
  for (const std::string& family : synthetic_families()) {
    const RecordedSpace a = synthetic_space(family, 1), b = synthetic_space(family, 1);
    ASSERT_EQ(a.entries.size(), b.entries.size()) << family;
    for (size_t i = 0; i < a.entries.size(); ++i) {
      ASSERT_EQ(a.entries[i].first, b.entries[i].first);
      ASSERT_EQ(a.entries[i].second.ms, b.entries[i].second.ms) << family << ": not deterministic";
    }
    EXPECT_TRUE(a.timed()) << family;
    EXPECT_GT(a.entries.size(), 1000u) << family;
    double sum1 = 0, sum2 = 0;
    for (const auto& [c, o] : a.entries) sum1 += o.ms;
    for (const auto& [c, o] : synthetic_space(family, 2).entries) sum2 += o.ms;
    EXPECT_NE(sum1, sum2) << family << ": the seed makes no difference";
  }
  // conv: failures beside the best (the shared-memory and register limits).
  const Replay conv(synthetic_space("conv", 2));
  EXPECT_GT(conv.failed(), conv.size() / 5);
  EXPECT_LT(conv.within(0.05), conv.size() / 500) << "a needle: few configurations near the best";
  try {
    synthetic_space("gemv", 1);
    ADD_FAILURE() << "accepted an unknown family";
  } catch (const UsageError& e) {
    EXPECT_EQ(e.id(), "kopt.replay.120");
  }
}

// What the replay tests claim of the default strategy on the recorded SGEMM
// sweeps (test_search_replay.cpp), on the development spaces, which have the
// features of the public sweeps where those claims failed for the earlier
// default (convolution and point-in-polygon landscapes: failures beside the
// best, jagged values, interacting switches, needles): within 5% of the
// optimum in a fifth of the space or less (the mean over the seeds), and,
// where at most 1 in 20 configurations is that near (elsewhere random
// sampling gets there in a handful of evaluations and no strategy can do
// much better), quicker than random sampling (medians) with a higher
// methodology score; the same to 1%. Random sampling often needs thousands
// of evaluations here; runs stop at 2000 (not getting there counts as more).
// The spaces of fewer than 1000 configurations are left out: random-3 has
// 108, half of them failing, and a score range of its first 17 evaluations,
// where every strategy scores about -20 (the calculated baseline ignores
// failures) and the order of two such numbers is noise.
TEST(ReplaySpaceTest, TheDefaultBeatsRandomOnTheDevelopmentSpaces) {
  ReplayOptions o;
  o.seeds = 10;
  o.max_evaluations = 2000;
  const double never = std::numeric_limits<double>::infinity();
  for (const auto& [family, seed] : development_spaces()) {
    const Replay r(synthetic_space(family, seed));
    SCOPED_TRACE(r.recorded().label);
    if (r.size() < 1000) continue;
    const std::string def = default_strategy(r.size());
    const StrategyMeasures d = r.measure(def, o), random = r.measure("random", o);
    double sum = 0;
    for (const auto& n : d.to5) sum += n ? double(*n) : double(o.max_evaluations + 1);
    EXPECT_LE(sum / o.seeds, double(r.size()) / 5) << def;
    const bool hard5 = r.within(0.05) * 20 <= r.size(), hard1 = r.within(0.01) * 20 <= r.size();
    if (hard5) {
      EXPECT_LT(d.median_to5().value_or(never), random.median_to5().value_or(never)) << def << " vs random, to 5%";
      EXPECT_GT(d.score, random.score) << def << " vs random, score";
    }
    if (hard1) EXPECT_LT(d.median_to1().value_or(never), random.median_to1().value_or(never)) << def << " vs random, to 1%";
  }
}

}  // namespace
}  // namespace kopt::search::replay
