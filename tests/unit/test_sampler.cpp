// Spaces far beyond enumeration (search/sampler.h, Space's depth-first
// searches): drawing valid configurations without listing them, the
// empty-space error within a bounded effort, and the parameter search
// (propose/search_proposer.h) on a space of more than 10^12 configurations.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/attempt.h"
#include "propose/search_proposer.h"
#include "search/sampler.h"
#include "search/space.h"
#include "search/strategy.h"
#include "support/expect_error.h"
#include "util/error.h"

namespace kopt::search {
namespace {

using spec::Expr;
using spec::TuningParam;

std::vector<Expr> exprs(const std::vector<std::string>& texts) {
  std::vector<Expr> out;
  for (const auto& t : texts) out.push_back(Expr::parse(t));
  return out;
}

/// Runs `f`, expects a SpecError with `id` whose what() contains every needle
/// (kopt::test::expect_error).
void expect_spec_error(const std::function<void()>& f, const std::string& id,
                       const std::vector<std::string>& needles = {}) {
  kopt::test::expect_error(f, id, needles);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

/// 14 parameters of 8 values: 8^14 = 4.4e12 configurations. Constraints in
/// the style of a GEMM template (tile products, divisibility, a device
/// limit), each over two or three parameters; about 1 in 6000 configurations
/// is valid, so that uniform draws alone rarely succeed.
Space huge_space() {
  std::vector<TuningParam> ps;
  for (const char* name : {"BM", "BN", "BK", "WM", "WN", "TM", "TN", "STAGES", "VEC", "UNROLL", "SPLIT", "GROUP",
                           "PAD", "SWIZZLE"})
    ps.push_back({name, {1, 2, 4, 8, 16, 32, 64, 128}});
  return Space(ps,
               exprs({"BM % WM == 0 && BN % WN == 0", "WM % TM == 0 && WN % TN == 0",
                      "(BM / WM) * (BN / WN) * WARP_SIZE <= MAX_THREADS_PER_BLOCK",
                      "STAGES * BK * (BM + BN + PAD) * 4 <= MAX_SHARED_PER_BLOCK", "VEC <= 8 && BK % VEC == 0",
                      "UNROLL <= BK", "SPLIT * GROUP <= 64", "SWIZZLE <= GROUP", "PAD <= 8"}),
               {{"MAX_THREADS_PER_BLOCK", 1024}, {"MAX_SHARED_PER_BLOCK", 232448}, {"WARP_SIZE", 32}});
}

TEST(SamplerTest, DrawsAThousandValidDistinctConfigurationsOfAHugeSpaceInUnderASecond) {
  const Space space = huge_space();
  ASSERT_GT(space.cartesian_size(), uint64_t{1'000'000'000'000});
  Sampler sampler(space);
  Sampler::Rng rng(1);
  std::set<Point> seen;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) {
    std::optional<Point> p = sampler.draw(rng, [&](const Point& q) { return seen.count(q) > 0; });
    ASSERT_TRUE(p) << "draw " << i;
    EXPECT_TRUE(space.valid_point(*p)) << config_key(space.to_config(*p));
    EXPECT_TRUE(seen.insert(*p).second) << "drawn twice: " << config_key(space.to_config(*p));
  }
  const double s = seconds_since(t0);
  std::printf("[ sampler   ] 1000 draws in %.3f s: %llu uniform attempts (%llu hits), %llu walks (%llu hits), "
              "%llu searches; %llu steps\n",
              s, (unsigned long long)sampler.stats().uniform_attempts,
              (unsigned long long)sampler.stats().uniform_hits, (unsigned long long)sampler.stats().walks,
              (unsigned long long)sampler.stats().walk_hits, (unsigned long long)sampler.stats().searches,
              (unsigned long long)sampler.work());
  EXPECT_LT(s, 1.0);
  EXPECT_EQ(sampler.stats().searches, 0u) << "the biased complete search should not be needed here";
}

TEST(SamplerTest, WalksAreCorrectedToUniform) {
  // A: 10 values, B: 10 values, "A == 0 || B == 0": 19 valid configurations,
  // 10 of them in the A=0 branch. An uncorrected walk would return each A=0
  // configuration with probability 1/100 and each other one with 1/10. C
  // (50 values, one of them valid) makes uniform draws fail, so that the
  // walks do the work.
  std::vector<int64_t> c_values;
  for (int i = 0; i < 50; ++i) c_values.push_back(i);
  const Space s({{"A", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}, {"B", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}, {"C", c_values}},
                exprs({"A == 0 || B == 0", "C == 7"}));
  ASSERT_EQ(s.count_valid(), 19u);
  Sampler sampler(s);
  Sampler::Rng rng(3);
  std::map<Point, int> counts;
  constexpr int kDraws = 3800;  // 200 per configuration
  for (int i = 0; i < kDraws; ++i) {
    std::optional<Point> p = sampler.draw(rng);
    ASSERT_TRUE(p);
    ASSERT_TRUE(s.valid_point(*p));
    ++counts[*p];
  }
  EXPECT_EQ(counts.size(), 19u);
  EXPECT_GT(sampler.stats().walk_hits, kDraws / 2) << "uniform draws should have been given up";
  for (const auto& [p, n] : counts) {
    // Binomial(3800, 1/19): mean 200, sd 13.7; 5 sd either side.
    EXPECT_GT(n, 130) << config_key(s.to_config(p));
    EXPECT_LT(n, 270) << config_key(s.to_config(p));
  }
}

TEST(SamplerTest, ProvesAHugeSpaceWithFewValidConfigurationsExhausted) {
  // 10^13 configurations, 5 valid: P0 <= 4 and every other parameter equal to P0.
  std::vector<TuningParam> ps;
  std::vector<std::string> cs = {"P0 <= 4"};
  for (int d = 0; d < 13; ++d) {
    ps.push_back({"P" + std::to_string(d), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}});
    if (d > 0) cs.push_back("P" + std::to_string(d) + " == P" + std::to_string(d - 1));
  }
  const Space space(ps, exprs(cs));
  EXPECT_EQ(space.count_valid(), 5u);
  Sampler sampler(space);
  Sampler::Rng rng(5);
  std::set<Point> seen;
  while (std::optional<Point> p = sampler.draw(rng, [&](const Point& q) { return seen.count(q) > 0; })) {
    EXPECT_TRUE(space.valid_point(*p));
    ASSERT_TRUE(seen.insert(*p).second);
    ASSERT_LE(seen.size(), 5u);
  }
  EXPECT_EQ(seen.size(), 5u);
  EXPECT_TRUE(sampler.exhausted());
  // Every sampling strategy ends there too: "space exhausted" without a count.
  for (const std::string& name : {"random", "anneal", "genetic", "surrogate", "portfolio"}) {
    auto s = make_strategy(name);
    s->initialize(space, 1);
    std::set<std::string> keys;
    while (std::optional<Config> c = s->next()) {
      EXPECT_TRUE(space.valid(*c)) << name;
      EXPECT_TRUE(keys.insert(config_key(*c)).second) << name;
      s->observe({*c, true, 1.0 + keys.size()});
      ASSERT_LE(keys.size(), 5u) << name;
    }
    EXPECT_EQ(keys.size(), 5u) << name;
  }
}

TEST(SamplerTest, TheSearchFindsWhatWalksCannot) {
  // P0 < P1 < ... < P9 over 0..9 has one solution; X, Y, Z are free: 1000
  // valid configurations in 10^13. A walk reaches the chain's solution with
  // probability 1/10!, so only the randomized depth-first search finds them;
  // once every one is seen, it proves the space exhausted.
  std::vector<TuningParam> ps;
  std::vector<std::string> cs;
  const std::vector<int64_t> digits = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  for (int d = 0; d < 10; ++d) {
    ps.push_back({"P" + std::to_string(d), digits});
    if (d > 0) cs.push_back("P" + std::to_string(d) + " > P" + std::to_string(d - 1));
  }
  for (const char* free : {"X", "Y", "Z"}) ps.push_back({free, digits});
  const Space space(ps, exprs(cs));
  ASSERT_EQ(space.count_valid(), 1000u);
  Sampler sampler(space);
  Sampler::Rng rng(2);
  std::set<Point> seen;
  const auto t0 = std::chrono::steady_clock::now();
  while (std::optional<Point> p = sampler.draw(rng, [&](const Point& q) { return seen.count(q) > 0; })) {
    ASSERT_TRUE(space.valid_point(*p));
    ASSERT_TRUE(seen.insert(*p).second);
    ASSERT_LE(seen.size(), 1000u);
  }
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_TRUE(sampler.exhausted());
  EXPECT_GT(sampler.stats().search_hits, 990u);
  EXPECT_LT(seconds_since(t0), 5.0);
}

TEST(SamplerTest, TheSearchStopsAtItsEffort) {
  // "the sum of all twelve <= 1" is decided only once every parameter has a
  // value, so nothing prunes the search early: with every point skipped and
  // a small effort, the draw gives up without claiming exhaustion.
  std::vector<TuningParam> ps;
  std::string sum;
  for (int d = 0; d < 12; ++d) {
    ps.push_back({"P" + std::to_string(d), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}});
    sum += (d ? " + P" : "P") + std::to_string(d);
  }
  const Space rare(ps, exprs({sum + " <= 1"}));
  Sampler sampler(rare);
  Sampler::Rng rng(2);
  const Sampler::Skip all_seen = [](const Point&) { return true; };
  EXPECT_FALSE(sampler.draw(rng, all_seen, 1000));
  EXPECT_FALSE(sampler.exhausted());
  EXPECT_LT(sampler.work(), 300'000u);  // phases 1 and 2, then 1000 steps of search
}

TEST(SamplerTest, CountValidIsExactWhereTheSearchIsSmallEnough) {
  const Space space = huge_space();
  EXPECT_EQ(space.count_valid(10'000), std::nullopt);  // the effort runs out
  // A small space: the count is the enumeration's.
  const Space small({{"A", {1, 2, 3, 4}}, {"B", {1, 2, 3}}, {"C", {0, 1}}}, exprs({"A * B <= 6", "C <= A - 2"}));
  EXPECT_EQ(small.count_valid(), small.enumerate_valid().size());
  EXPECT_EQ(small.count_valid(1'000'000), small.enumerate_valid().size());
}

TEST(SamplerTest, ValidPointAgreesWithValid) {
  const Space space({{"A", {1, 2, 4}}, {"B", {3, 6}}}, exprs({"B % A == 0"}));
  for (int32_t a = 0; a < 3; ++a)
    for (int32_t b = 0; b < 2; ++b) {
      const Point p{a, b};
      EXPECT_EQ(space.valid_point(p), space.valid(space.to_config(p))) << a << "," << b;
    }
  EXPECT_FALSE(space.valid_point({3, 0}));  // index out of range
  EXPECT_FALSE(space.valid_point({0}));     // too short
}

TEST(SamplerTest, TheSamplingPlanDecidesConstraintsEarly) {
  // C alone decides "C == 7": it comes first; A and B follow.
  const Space s({{"A", {0, 1}}, {"B", {0, 1}}, {"C", {6, 7}}}, exprs({"A == 0 || B == 0", "C == 7"}));
  const detail::Plan& plan = s.sampling_plan();
  ASSERT_EQ(plan.order.size(), 3u);
  EXPECT_EQ(plan.order[0], 2u);
  EXPECT_EQ(plan.checks[0], (std::vector<size_t>{1}));
  EXPECT_TRUE(plan.checks[1].empty());
  EXPECT_EQ(plan.checks[2], (std::vector<size_t>{0}));
  // The enumeration plan is params() order.
  EXPECT_EQ(s.enumeration_plan().order, (std::vector<size_t>{0, 1, 2}));
}

// ---------------------------------------------------------------------------
// The empty-space error on huge spaces

TEST(SamplerTest, EmptyHugeSpaceIsReportedQuicklyNamingTheConstraint) {
  std::vector<TuningParam> ps;
  for (int d = 0; d < 12; ++d) ps.push_back({"P" + std::to_string(d), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}});
  // Decided by two parameters: the complete search ends at once.
  const Space two(ps, exprs({"P3 <= 9", "P0 + P1 > 100"}));
  auto t0 = std::chrono::steady_clock::now();
  expect_spec_error([&] { two.check_not_empty(); }, "kopt.space.701",
                    {"complete search", "1000000000000 configurations", "'P0 + P1 > 100' removed the most",
                     "all 4096 of 4096"});
  EXPECT_LT(seconds_since(t0), 1.0);
  // Decided only by all twelve: the search stops at its effort and says so.
  std::string sum;
  for (int d = 0; d < 12; ++d) sum += (d ? " + P" : "P") + std::to_string(d);
  const Space all(ps, exprs({sum + " > 200"}));
  t0 = std::chrono::steady_clock::now();
  expect_spec_error([&] { all.check_not_empty(); }, "kopt.space.701",
                    {"within the search effort", "'" + sum + " > 200' removed the most"});
  EXPECT_LT(seconds_since(t0), 15.0);  // bounded (about 1 s alone; the machine may be busy)
  // A constraint naming no parameter that fails: every configuration.
  const Space constant(ps, exprs({"WARP_SIZE > 64"}), {{"WARP_SIZE", 32}});
  expect_spec_error([&] { constant.check_not_empty(); }, "kopt.space.701", {"'WARP_SIZE > 64'", "all 4096"});
  // A name that is neither a parameter nor a constant (a size, say).
  const Space unknown(ps, exprs({"COLS % P0 == 0"}));
  expect_spec_error([&] { unknown.check_not_empty(); }, "kopt.space.701",
                    {"'COLS % P0 == 0'", "unknown name 'COLS'"});
  // Every strategy that samples reports it at initialize().
  for (const std::string& name : {"random", "anneal", "genetic", "surrogate", "portfolio"})
    expect_spec_error([&] { make_strategy(name)->initialize(two, 1); }, "kopt.space.701", {"'P0 + P1 > 100'"});
}

TEST(SamplerTest, ExhaustiveRefusesAHugeSpaceNamingItsSizeAndTheAlternatives) {
  const Space space = huge_space();
  expect_spec_error([&] { make_strategy("exhaustive")->initialize(space, 1); }, "kopt.space.702",
                    {"'exhaustive'", std::to_string(space.cartesian_size()), "random, anneal, genetic, surrogate, portfolio"});
  EXPECT_EQ(default_strategy(std::nullopt, space.cartesian_size()), "portfolio");
  EXPECT_EQ(default_strategy(uint64_t{10}, space.cartesian_size()), "portfolio");  // cannot be enumerated
  EXPECT_EQ(default_strategy(uint64_t{10}, 1000), "exhaustive");
  EXPECT_EQ(default_strategy(uint64_t{65}, 1000), "portfolio");
}

// ---------------------------------------------------------------------------
// Space::check_config (what `kopt evaluate --params` checks)

TEST(SamplerTest, CheckConfigSaysWhatIsWrong) {
  const Space s({{"TILE", {16, 32, 64}}, {"VEC", {1, 2, 4}}}, exprs({"TILE % VEC == 0", "TILE * 4 <= LIMIT"}),
                {{"LIMIT", 128}});
  EXPECT_EQ(s.check_config({{"TILE", 32}, {"VEC", 4}}), std::nullopt);
  EXPECT_EQ(s.check_config({{"TILE", 32}, {"VEC", 4}, {"THREADZ", 256}}),
            "unknown parameter 'THREADZ' (the parameters: TILE, VEC)");
  EXPECT_EQ(s.check_config({{"TILE", 32}}), "parameter 'VEC' missing (the parameters: TILE, VEC)");
  EXPECT_EQ(s.check_config({{"TILE", 32}, {"VEC", 3}}), "VEC=3 is not one of its values 1, 2, 4");
  EXPECT_EQ(s.check_config({{"TILE", 64}, {"VEC", 4}}), "violates the constraint 'TILE * 4 <= LIMIT'");
  // Partial configurations: constraints on a missing parameter are not checked.
  EXPECT_EQ(s.check_config({{"TILE", 32}}, false), std::nullopt);
  EXPECT_EQ(s.check_config({{"TILE", 64}}, false), "violates the constraint 'TILE * 4 <= LIMIT'");
  // Evaluation errors are named.
  const Space z({{"A", {0, 1}}}, exprs({"4 / A >= 1"}));
  const std::optional<std::string> why = z.check_config({{"A", 0}});
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("violates the constraint '4 / A >= 1' (it cannot be evaluated:"), std::string::npos) << *why;
  EXPECT_NE(why->find("division by zero"), std::string::npos) << *why;
}

}  // namespace
}  // namespace kopt::search

// ---------------------------------------------------------------------------
// The parameter search as `kopt optimize` runs it, on a space of 4.4e12.

namespace kopt::propose {
namespace {

/// A deterministic score per configuration: a bowl in log2 of the values.
double score_of(const search::Config& c) {
  double s = 1.0;
  for (const auto& [name, v] : c) {
    const double l = std::log2(static_cast<double>(v)) - 3.0;
    s += 0.01 * l * l * (1 + name.size() % 3);
  }
  return s;
}

TEST(SearchProposerTest, SamplingStrategiesSearchAHugeSpaceWithoutEnumerating) {
  const search::Space space = search::huge_space();
  for (const std::string& strategy : {"random", "anneal", "genetic", "surrogate", "portfolio", ""}) {
    SCOPED_TRACE(strategy.empty() ? "(default)" : strategy);
    SearchProposerOptions o;
    o.base.label = "template";
    o.base.source = "// the template";
    o.params = space.params();
    o.constraints = space.constraints();
    o.strategy = strategy;
    o.seed = 7;
    o.max_proposals = 120;
    SearchProposer p(std::move(o));
    const auto t0 = std::chrono::steady_clock::now();
    p.prepare(space.constants());
    EXPECT_LT(search::seconds_since(t0), 3.0) << "prepare() must not enumerate";
    EXPECT_EQ(p.name(), strategy.empty() ? "portfolio" : strategy);
    EXPECT_EQ(p.valid_configurations(), std::nullopt);  // too many to count
    EXPECT_TRUE(p.summary().at("valid_configurations").is_null());

    std::set<std::string> keys;
    int index = 0;
    while (true) {
      // Pipelined like the driver: up to three proposals before their results.
      std::vector<spec::Candidate> batch;
      Proposal prop = p.propose();
      while (prop.kind == Proposal::Kind::candidate) {
        batch.push_back(prop.candidate);
        if (batch.size() == 3) break;
        prop = p.propose();
      }
      if (batch.empty()) break;
      for (const spec::Candidate& c : batch) {
        EXPECT_EQ(c.source, "// the template");
        std::string why;
        EXPECT_TRUE(space.valid(c.params, &why)) << search::config_key(c.params) << ": " << why;
        EXPECT_TRUE(keys.insert(search::config_key(c.params)).second) << "proposed twice: " << c.label;
        model::Attempt a;
        a.index = ++index;
        a.label = c.label;
        a.params = c.params;
        a.result.verdict = index % 11 == 0 ? model::Verdict::wrong_result : model::Verdict::ok;
        if (a.result.verdict == model::Verdict::ok) a.result.geomean_ms = score_of(c.params);
        p.observe(c, a);
      }
    }
    EXPECT_EQ(keys.size(), 120u);
    EXPECT_TRUE(p.settled());
  }
}

TEST(SearchProposerTest, HugeSpaceErrorsComeAtPrepare) {
  const search::Space space = search::huge_space();
  SearchProposerOptions o;
  o.params = space.params();
  o.constraints = space.constraints();
  o.strategy = "exhaustive";
  search::expect_spec_error([&] { SearchProposer(o).prepare(space.constants()); }, "kopt.space.702");
  o.strategy = "";
  o.constraints.push_back(spec::Expr::parse("BM * BN > 100000"));
  const auto t0 = std::chrono::steady_clock::now();
  search::expect_spec_error([&] { SearchProposer(o).prepare(space.constants()); }, "kopt.space.701");
  EXPECT_LT(search::seconds_since(t0), 5.0);
}

}  // namespace
}  // namespace kopt::propose
