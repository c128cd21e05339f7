// The parameter space, search strategies and stop conditions (search/).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "search/space.h"
#include "search/strategy.h"
#include "support/expect_error.h"
#include "util/error.h"

namespace kopt::search {
namespace {

using spec::Expr;
using spec::TuningParam;
using kopt::test::expect_error;

std::vector<Expr> exprs(const std::vector<std::string>& texts) {
  std::vector<Expr> out;
  for (const auto& t : texts) out.push_back(Expr::parse(t));
  return out;
}

// ---------------------------------------------------------------------------
// Space

Space small_space() {
  return Space({{"BM", {32, 64, 128}}, {"BN", {32, 64}}, {"BK", {8, 16}}}, exprs({"BM * BN <= 4096"}));
}

TEST(SpaceTest, ConfigKeyIsSortedAndStable) {
  EXPECT_EQ(config_key({{"BN", 64}, {"BM", 128}}), "BM=128,BN=64");
  EXPECT_EQ(config_key({}), "");
  EXPECT_EQ(config_key({{"X", -3}}), "X=-3");
}

TEST(SpaceTest, ConstructorRejectsBadParameters) {
  expect_error<SpecError>([] { Space({{"BM", {}}}, {}); }, "kopt.space.703", {"'BM'", "no values"});
  expect_error<SpecError>([] { Space({{"BM", {1}}, {"BM", {2}}}, {}); }, "kopt.space.704", {"'BM'"});
  expect_error<SpecError>([] { Space({{"BM", {1, 2, 1}}}, {}); }, "kopt.space.705", {"'BM'", "1 twice"});
  expect_error<SpecError>([] { Space({{"WARP_SIZE", {1}}}, {}, {{"WARP_SIZE", 32}}); }, "kopt.space.706",
                          {"'WARP_SIZE'"});
}

TEST(SpaceTest, CartesianSizeAndSaturation) {
  EXPECT_EQ(small_space().cartesian_size(), 12u);
  EXPECT_EQ(Space({}, {}).cartesian_size(), 1u);
  std::vector<TuningParam> many;
  for (int i = 0; i < 63; ++i) many.push_back({"P" + std::to_string(i), {0, 1}});
  EXPECT_EQ(Space(many, {}).cartesian_size(), uint64_t{1} << 63);
  many.push_back({"Q", {0, 1, 2}});  // 3 * 2^63 overflows
  EXPECT_EQ(Space(many, {}).cartesian_size(), std::numeric_limits<uint64_t>::max());
}

TEST(SpaceTest, ValidReportsTheViolatedConstraint) {
  const Space s = small_space();
  std::string why;
  EXPECT_TRUE(s.valid({{"BM", 64}, {"BN", 64}, {"BK", 8}}, &why));
  EXPECT_FALSE(s.valid({{"BM", 128}, {"BN", 64}, {"BK", 8}}, &why));
  EXPECT_EQ(why, "BM * BN <= 4096");
  // Not a point of the space at all.
  EXPECT_FALSE(s.valid({{"BM", 64}, {"BN", 64}}, &why));
  EXPECT_NE(why.find("'BK' missing"), std::string::npos) << why;
  EXPECT_FALSE(s.valid({{"BM", 48}, {"BN", 64}, {"BK", 8}}, &why));
  EXPECT_NE(why.find("BM=48"), std::string::npos) << why;
  EXPECT_FALSE(s.valid({{"BM", 64}, {"BN", 64}, {"BK", 8}, {"ZZ", 1}}, &why));
  EXPECT_NE(why.find("'ZZ'"), std::string::npos) << why;
}

TEST(SpaceTest, ConstantsAreUsableInConstraints) {
  const Space s({{"BM", {32, 64, 128}}, {"BK", {8, 16, 32}}}, exprs({"BM * BK * 4 <= MAX_SHARED"}),
                {{"MAX_SHARED", 8192}});
  EXPECT_TRUE(s.valid({{"BM", 64}, {"BK", 32}}));   // 8192
  EXPECT_FALSE(s.valid({{"BM", 128}, {"BK", 32}}));  // 16384
  EXPECT_EQ(s.enumerate_valid().size(), 8u);         // all but 128x32
}

TEST(SpaceTest, ConstraintThatCannotBeEvaluatedCountsAsViolated) {
  const Space s({{"A", {0, 1, 2}}}, exprs({"6 / A >= 3", "A < 100"}));
  std::string why;
  EXPECT_FALSE(s.valid({{"A", 0}}, &why));  // division by zero
  EXPECT_EQ(why, "6 / A >= 3");
  EXPECT_TRUE(s.valid({{"A", 1}}));
  EXPECT_TRUE(s.valid({{"A", 2}}));
  EXPECT_EQ(s.enumerate_valid().size(), 2u);
  // An unknown name is an evaluation error too.
  const Space t({{"A", {1}}}, exprs({"A < Q"}));
  EXPECT_FALSE(t.valid({{"A", 1}}, &why));
  EXPECT_EQ(why, "A < Q");
}

TEST(SpaceTest, EnumerateValidIsLexicographicInValueIndices) {
  const Space s({{"A", {3, 1, 2}}, {"B", {10, 20}}}, exprs({"A != 1"}));
  const std::vector<Config> v = s.enumerate_valid();
  std::vector<std::string> keys;
  for (const auto& c : v) keys.push_back(config_key(c));
  EXPECT_EQ(keys, (std::vector<std::string>{"A=3,B=10", "A=3,B=20", "A=2,B=10", "A=2,B=20"}));
  // No constraints and no parameters: the single empty configuration.
  EXPECT_EQ(Space({}, {}).enumerate_valid().size(), 1u);
}

TEST(SpaceTest, EmptySpaceErrorNamesTheCulprit) {
  // One constraint removes everything.
  const Space all({{"BM", {64, 128}}, {"BK", {16, 32}}},
                  exprs({"BM >= 64", "BM * BK * 8 <= MAX_SHARED_PER_BLOCK"}),
                  {{"MAX_SHARED_PER_BLOCK", 1024}});
  expect_error<SpecError>([&] { all.enumerate_valid(); }, "kopt.space.701",
                          {"every configuration violates 'BM * BK * 8 <= MAX_SHARED_PER_BLOCK'", "all 4"});
  // Two constraints that are satisfiable separately but not together.
  const Space both({{"A", {1, 2, 3, 4}}}, exprs({"A <= 1", "A >= 2"}));
  expect_error<SpecError>([&] { both.enumerate_valid(); }, "kopt.space.701",
                          {"satisfies every constraint", "'A <= 1' removed the most: 3 of 4"});
  // A constraint that never evaluates says why.
  const Space bad({{"A", {1, 2}}}, exprs({"A < Q"}));
  expect_error<SpecError>([&] { bad.enumerate_valid(); }, "kopt.space.701", {"'A < Q'", "unknown name 'Q'"});
}

TEST(SpaceTest, EnumerationLimit) {
  std::vector<TuningParam> ps;
  for (int i = 0; i < 10; ++i) ps.push_back({"P" + std::to_string(i), {1, 2, 3, 4}});  // 4^10 = 1048576
  const Space s(ps, {});
  expect_error<SpecError>([&] { s.enumerate_valid(1000); }, "kopt.space.702", {"1048576", "1000"});
}

TEST(SpaceTest, NeighboursStepOneValueAndSkipInvalid) {
  const Space s = small_space();  // BM {32,64,128}, BN {32,64}, BK {8,16}; BM*BN <= 4096
  std::set<std::string> got;
  for (const auto& c : s.neighbours({{"BM", 64}, {"BN", 32}, {"BK", 8}})) got.insert(config_key(c));
  EXPECT_EQ(got, (std::set<std::string>{"BK=8,BM=32,BN=32", "BK=8,BM=128,BN=32", "BK=8,BM=64,BN=64",
                                         "BK=16,BM=64,BN=32"}));
  got.clear();
  // From 64x64: BM=128 would be 8192 > 4096, so only BM-1, BN-1 and BK+1.
  for (const auto& c : s.neighbours({{"BM", 64}, {"BN", 64}, {"BK", 8}})) got.insert(config_key(c));
  EXPECT_EQ(got, (std::set<std::string>{"BK=8,BM=32,BN=64", "BK=8,BM=64,BN=32", "BK=16,BM=64,BN=64"}));
}

TEST(SpaceTest, IndexOf) {
  const Space s({{"A", {5, 7, 9}}}, {});
  EXPECT_EQ(s.index_of(0, 7), 1);
  EXPECT_EQ(s.index_of(0, 8), -1);
  EXPECT_EQ(s.index_of(3, 7), -1);
}

TEST(SpaceTest, SampleReturnsValidConfigurations) {
  const Space s = small_space();
  std::mt19937_64 rng(7);
  for (int i = 0; i < 50; ++i) {
    std::optional<Config> c = s.sample(rng);
    ASSERT_TRUE(c);
    EXPECT_TRUE(s.valid(*c));
  }
  const Space none({{"A", {1}}}, exprs({"A == 2"}));
  EXPECT_FALSE(none.sample(rng, 10));
}

// ---------------------------------------------------------------------------
// Synthetic objectives

/// splitmix64: a deterministic "random" number per configuration.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// A space plus a score per configuration (nullopt: the configuration fails).
struct Objective {
  std::string name;
  Space space;
  std::function<std::optional<double>(const std::vector<int>&)> score_of_indices;

  std::vector<int> indices(const Config& c) const {
    std::vector<int> idx;
    for (size_t d = 0; d < space.params().size(); ++d)
      idx.push_back(space.index_of(d, c.at(space.params()[d].name)));
    return idx;
  }
  std::optional<double> score(const Config& c) const { return score_of_indices(indices(c)); }
  /// The best score over every valid configuration (brute force).
  double optimum() const {
    double best = std::numeric_limits<double>::infinity();
    for (const Config& c : space.enumerate_valid())
      if (auto s = score(c)) best = std::min(best, *s);
    return best;
  }
};

double quadratic(const std::vector<int>& i, const std::vector<int>& centre, const std::vector<double>& w) {
  double f = 0;
  for (size_t d = 0; d < i.size(); ++d) f += w[d] * (i[d] - centre[d]) * (i[d] - centre[d]);
  return f;
}

/// Rugged deterministic noise in [0, 1) per index vector (and salt).
double rugged(const std::vector<int>& i, uint64_t salt = 0) {
  uint64_t h = salt;
  for (int v : i) h = mix(h * 31 + static_cast<uint64_t>(v));
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

/// Five parameters, 3600 configurations, all valid. log(score) is a shallow
/// bowl in index space (like kernel latencies: a plateau of near-optimal
/// configurations) with a second basin 10% worse elsewhere (a deceptive local
/// optimum), plus up to 4% of rugged noise.
Objective bowl_objective() {
  Space space({{"BM", {16, 32, 64, 128, 256, 512}},
               {"BN", {16, 32, 64, 128, 256, 512}},
               {"BK", {8, 16, 32, 64}},
               {"WARPS", {1, 2, 4, 8, 16}},
               {"STAGES", {1, 2, 3, 4, 5}}},
              {});
  auto f = [](const std::vector<int>& i) -> std::optional<double> {
    const std::vector<double> w{0.024, 0.030, 0.036, 0.027, 0.015};
    const double main_basin = quadratic(i, {3, 2, 1, 2, 3}, w);
    const double decoy = 0.10 + quadratic(i, {0, 5, 3, 4, 0}, w);
    return 0.5 * std::exp(std::min(main_basin, decoy) + 0.04 * rugged(i));
  };
  return {"bowl", std::move(space), f};
}

/// Six parameters, 10800 configurations, of which constraints (tile area,
/// shared memory per stage with a device constant, threads per block) leave
/// a few thousand valid. The unconstrained optimum lies in the invalid region
/// so the best valid configurations sit on the constraint boundary; 3% of
/// the configurations fail (ok = false).
Objective constrained_objective() {
  Space space({{"BM", {16, 32, 64, 128, 256, 512}},
               {"BN", {16, 32, 64, 128, 256, 512}},
               {"BK", {8, 16, 32, 64}},
               {"WARPS", {1, 2, 4, 8, 16}},
               {"STAGES", {1, 2, 3, 4, 5}},
               {"UNROLL", {1, 2, 4}}},
              exprs({"BM * BN <= 32768", "(BM + BN) * BK * 4 * STAGES <= MAX_SHARED",
                     "WARPS * WARP_SIZE <= BM * BN / 16"}),
              {{"MAX_SHARED", 98304}, {"WARP_SIZE", 32}});
  auto f = [](const std::vector<int>& i) -> std::optional<double> {
    if (rugged(i) < 0.03) return std::nullopt;  // fails its checks
    const std::vector<double> w{0.018, 0.018, 0.025, 0.02, 0.015, 0.03};
    const double bowl = quadratic(i, {5, 4, 3, 3, 4, 1}, w);  // (512, 256, ...) is invalid
    return 1.0 * std::exp(bowl + 0.04 * rugged(i, 99));
  };
  return {"constrained", std::move(space), f};
}

/// What a search did: every proposal in order with its score (nullopt: failed).
struct Trace {
  std::vector<Config> proposed;
  std::vector<std::optional<double>> scores;
  bool exhausted = false;
};

/// Drives `strategy` for up to `budget` proposals in rounds of `batch`
/// next() calls followed by the matching observe() calls. Stops early once a
/// score <= `target` is seen.
Trace drive(Strategy& strategy, const Objective& obj, uint64_t seed, size_t budget, size_t batch = 1,
            double target = -1) {
  strategy.initialize(obj.space, seed);
  Trace t;
  while (t.proposed.size() < budget && !t.exhausted) {
    const size_t first = t.proposed.size();
    while (t.proposed.size() < std::min(budget, first + batch)) {
      std::optional<Config> c = strategy.next();
      if (!c) {
        t.exhausted = true;
        break;
      }
      t.proposed.push_back(*c);
    }
    bool reached = false;
    for (size_t i = first; i < t.proposed.size(); ++i) {
      std::optional<double> s = obj.score(t.proposed[i]);
      t.scores.push_back(s);
      strategy.observe({t.proposed[i], s.has_value(), s.value_or(0)});
      reached = reached || (s && *s <= target);
    }
    if (reached) break;
  }
  return t;
}

Trace drive(const std::string& name, const Objective& obj, uint64_t seed, size_t budget, size_t batch = 1,
            double target = -1) {
  auto s = make_strategy(name);
  return drive(*s, obj, seed, budget, batch, target);
}

/// Fails the test if `t` proposed a configuration twice or an invalid one.
void expect_distinct_and_valid(const Trace& t, const Space& space, const std::string& what) {
  std::set<std::string> keys;
  for (const Config& c : t.proposed) {
    std::string why;
    EXPECT_TRUE(space.valid(c, &why)) << what << ": invalid " << config_key(c) << " (" << why << ")";
    EXPECT_TRUE(keys.insert(config_key(c)).second) << what << ": proposed twice " << config_key(c);
  }
}

const std::vector<std::string> kSamplers = {"random", "anneal",  "genetic", "surrogate",
                                            "portfolio", "forest", "local",   "walk"};

// ---------------------------------------------------------------------------
// Strategies

TEST(StrategyTest, NamesAndUnknownName) {
  EXPECT_EQ(strategy_names(),
            (std::vector<std::string>{"exhaustive", "random", "anneal", "genetic", "surrogate", "portfolio", "forest",
                                      "local", "walk"}));
  for (const std::string& n : strategy_names()) EXPECT_EQ(make_strategy(n)->name(), n);
  expect_error<UsageError>([] { make_strategy("hillclimb"); }, "kopt.search.801",
                           {"'hillclimb'", "exhaustive, random, anneal, genetic, surrogate, portfolio, forest, local, walk"});
}

TEST(StrategyTest, DefaultStrategy) {
  EXPECT_EQ(default_strategy(1), "exhaustive");
  EXPECT_EQ(default_strategy(64), "exhaustive");
  EXPECT_EQ(default_strategy(65), "portfolio");
  EXPECT_EQ(default_strategy(1'000'000), "portfolio");
  for (uint64_t n : {1ull, 100ull}) {
    const auto names = strategy_names();
    EXPECT_NE(std::find(names.begin(), names.end(), default_strategy(n)), names.end());
  }
}

TEST(StrategyTest, ExhaustiveVisitsEveryValidConfigurationInOrderAndFindsTheOptimum) {
  for (const Objective& obj : {bowl_objective(), constrained_objective()}) {
    const std::vector<Config> all = obj.space.enumerate_valid();
    const Trace t = drive("exhaustive", obj, 1, all.size() + 10);
    EXPECT_TRUE(t.exhausted);
    ASSERT_EQ(t.proposed, all) << obj.name;
    double best = std::numeric_limits<double>::infinity();
    for (const auto& s : t.scores)
      if (s) best = std::min(best, *s);
    EXPECT_EQ(best, obj.optimum()) << obj.name;
  }
}

TEST(StrategyTest, EveryStrategyExhaustsASmallSpaceWithoutRepeats) {
  const Objective obj{"small", small_space(), [](const std::vector<int>& i) -> std::optional<double> {
                        if (i[0] == 0 && i[1] == 0 && i[2] == 1) return std::nullopt;  // one failure
                        return 1.0 + i[0] + i[1] + i[2];
                      }};
  const std::vector<Config> all = obj.space.enumerate_valid();
  ASSERT_EQ(all.size(), 10u);
  for (const std::string& name : strategy_names()) {
    for (size_t batch : {1, 3}) {
      const Trace t = drive(name, obj, 42, 100, batch);
      EXPECT_TRUE(t.exhausted) << name;
      EXPECT_EQ(t.proposed.size(), all.size()) << name;
      expect_distinct_and_valid(t, obj.space, name);
    }
  }
}

TEST(StrategyTest, NoDuplicatesNoInvalidWithPipelining) {
  const Objective obj = constrained_objective();
  for (const std::string& name : kSamplers) {
    for (uint64_t seed : {1, 2}) {
      const Trace t = drive(name, obj, seed, 400, 4);
      EXPECT_EQ(t.proposed.size(), 400u) << name;
      expect_distinct_and_valid(t, obj.space, name + " seed " + std::to_string(seed));
    }
  }
}

TEST(StrategyTest, DeterministicPerSeed) {
  const Objective obj = constrained_objective();
  for (const std::string& name : kSamplers) {
    const Trace a = drive(name, obj, 11, 120, 2);
    const Trace b = drive(name, obj, 11, 120, 2);
    const Trace c = drive(name, obj, 12, 120, 2);
    EXPECT_EQ(a.proposed, b.proposed) << name;
    EXPECT_NE(a.proposed, c.proposed) << name;
  }
}

// The surrogate's first proposals cover every value of the small switches
// (StrategyBase::covering_unseen): here KIND = 1 is 1 in 101 valid
// configurations (KIND = 1 pins A and B to their first values), so uniform
// draws would take about 100 proposals to reach it; the covering start gives
// it within the first four, for every seed, before any result comes back.
TEST(StrategyTest, TheSurrogateStartCoversARareValueOfASmallParameter) {
  std::vector<int64_t> ten;
  for (int64_t v = 0; v < 10; ++v) ten.push_back(v);
  const Space space({{"KIND", {0, 1}}, {"A", ten}, {"B", ten}}, exprs({"KIND == 0 || (A == 0 && B == 0)"}));
  int uniform_first_four = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    auto s = make_strategy("surrogate");
    s->initialize(space, seed);
    int first_rare = -1;
    for (int i = 0; i < 4; ++i) {
      std::optional<Config> c = s->next();
      ASSERT_TRUE(c);
      if (c->at("KIND") == 1 && first_rare < 0) first_rare = i;
    }
    EXPECT_GE(first_rare, 0) << "seed " << seed << ": KIND = 1 not among the first four proposals";
    auto r = make_strategy("random");
    r->initialize(space, seed);
    for (int i = 0; i < 4; ++i) uniform_first_four += r->next()->at("KIND") == 1;
  }
  EXPECT_LE(uniform_first_four, 3) << "uniform draws reach the rare value as rarely as its share says";
  // A value no valid configuration has (S = 1) is given up on, and the start goes on with the rest.
  const Space no_s1({{"S", {0, 1}}, {"A", ten}}, exprs({"S == 0"}));
  auto s = make_strategy("surrogate");
  s->initialize(no_s1, 3);
  for (int i = 0; i < 10; ++i) {
    std::optional<Config> c = s->next();
    ASSERT_TRUE(c) << "proposal " << i;
    EXPECT_EQ(c->at("S"), 0);
  }
  EXPECT_FALSE(s->next()) << "the ten valid configurations are all proposed";
}

// The forest learns a value that is slow wherever it appears (a
// non-power-of-two tile) from every configuration that has it: after its
// start it rarely proposes it, where uniform sampling gives it an eighth.
TEST(StrategyTest, TheForestLearnsAValueThatIsSlowEverywhere) {
  std::vector<int64_t> eight;
  for (int64_t v = 0; v < 8; ++v) eight.push_back(v);
  Objective obj{"slow-value", Space({{"A", eight}, {"B", eight}, {"C", eight}}, {}),
                [](const std::vector<int>& i) -> std::optional<double> {
                  const double bowl = 0.02 * ((i[0] - 5) * (i[0] - 5) + (i[2] - 2) * (i[2] - 2)) + 0.01 * i[1];
                  return std::exp(bowl) * (i[1] == 3 ? 4.0 : 1.0) * (1 + 0.02 * rugged(i));
                }};
  int slow = 0, after_start = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const Trace t = drive("forest", obj, seed, 80);
    for (size_t i = 20; i < t.proposed.size(); ++i, ++after_start) slow += t.proposed[i].at("B") == 3;
  }
  EXPECT_EQ(after_start, 240);
  EXPECT_LE(slow, 12) << "of 240 proposals after the first 20 (uniform: about 30)";
}

// The local member follows the slope: on a tilted plane of four parameters
// of 16 values each (65536 configurations), starting from random ones, it
// reaches the best corner within a few dozen evaluations (a walk of one step
// at a time needs at least the distance, about 30 steps; random sampling
// about 65536 / 2).
TEST(StrategyTest, TheLocalSearchFollowsTheSlope) {
  std::vector<int64_t> sixteen;
  for (int64_t v = 0; v < 16; ++v) sixteen.push_back(v);
  Objective obj{"plane", Space({{"A", sixteen}, {"B", sixteen}, {"C", sixteen}, {"D", sixteen}}, {}),
                [](const std::vector<int>& i) -> std::optional<double> {
                  return std::exp(0.05 * (15 - i[0]) + 0.03 * i[1] + 0.04 * (15 - i[2]) + 0.02 * i[3]);
                }};
  const double best = obj.optimum();
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const Trace t = drive("local", obj, seed, 400, 1, best);
    ASSERT_FALSE(t.scores.empty());
    EXPECT_EQ(*t.scores.back(), best) << "seed " << seed;
    EXPECT_LE(t.proposed.size(), 120u) << "seed " << seed;
  }
}

TEST(StrategyTest, PipeliningFourProposalsBeforeTheirResults) {
  const Objective obj = bowl_objective();
  for (const std::string& name : strategy_names()) {
    auto s = make_strategy(name);
    s->initialize(obj.space, 5);
    std::set<std::string> keys;
    for (int round = 0; round < 30; ++round) {
      std::vector<Config> batch;
      for (int i = 0; i < 4; ++i) {
        std::optional<Config> c = s->next();
        ASSERT_TRUE(c) << name;
        EXPECT_TRUE(obj.space.valid(*c)) << name;
        EXPECT_TRUE(keys.insert(config_key(*c)).second) << name << " repeated " << config_key(*c);
        batch.push_back(*c);
      }
      // Results arrive in reverse order.
      for (auto it = batch.rbegin(); it != batch.rend(); ++it) s->observe({*it, true, *obj.score(*it)});
    }
  }
}

TEST(StrategyTest, ResumedResultsAreNeverProposed) {
  const Objective obj = bowl_objective();
  // Ten known results, among them the bowl's centre (near the optimum), as a resumed
  // run would feed them before asking for anything.
  const std::vector<Config> all = obj.space.enumerate_valid();
  std::vector<Config> known;
  for (size_t i = 0; i < 9; ++i) known.push_back(all[i * 397]);
  known.push_back({{"BM", 128}, {"BN", 64}, {"BK", 16}, {"WARPS", 4}, {"STAGES", 4}});  // the bowl's centre
  ASSERT_EQ(known.size(), 10u);
  std::set<std::string> known_keys;
  for (const Config& c : known) known_keys.insert(config_key(c));
  ASSERT_EQ(known_keys.size(), 10u);

  for (const std::string& name : strategy_names()) {
    auto s = make_strategy(name);
    s->initialize(obj.space, 3);
    for (size_t i = 0; i < known.size(); ++i) s->observe({known[i], i != 3, obj.score(known[i]).value_or(0)});
    size_t proposed = 0;
    while (std::optional<Config> c = s->next()) {
      EXPECT_EQ(known_keys.count(config_key(*c)), 0u) << name << " re-proposed " << config_key(*c);
      s->observe({*c, true, *obj.score(*c)});
      if (++proposed == (name == "exhaustive" ? 5000u : 300u)) break;
    }
    if (name == "exhaustive") EXPECT_EQ(proposed, all.size() - 10) << name;
  }
}

TEST(StrategyTest, EmptyAndHugeSpaces) {
  const Space empty({{"A", {1, 2}}}, exprs({"A > 5"}));
  for (const std::string& name : strategy_names()) {
    auto s = make_strategy(name);
    expect_error<SpecError>([&] { s->initialize(empty, 1); }, "kopt.space.701", {"'A > 5'"});
  }
  // 10^12 configurations: sampled, never enumerated.
  std::vector<TuningParam> ps;
  for (int d = 0; d < 12; ++d) ps.push_back({"P" + std::to_string(d), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}});
  const Space huge(ps, exprs({"P0 + P1 + P2 <= 20"}));
  const Objective obj{"huge", huge, [](const std::vector<int>& i) -> std::optional<double> {
                        double s = 1;
                        for (size_t d = 0; d < i.size(); ++d) s += (i[d] - 3) * (i[d] - 3) * (1.0 + d);
                        return s;
                      }};
  auto exhaustive = make_strategy("exhaustive");
  expect_error<SpecError>([&] { exhaustive->initialize(huge, 1); }, "kopt.space.702");
  for (const std::string& name : kSamplers) {
    const Trace t = drive(name, obj, 9, 60, 2);
    EXPECT_EQ(t.proposed.size(), 60u) << name;
    expect_distinct_and_valid(t, huge, name);
  }
}

/// Evaluations until the first score <= `target` (budget + 1 when never
/// reached within `budget`).
size_t evaluations_to(const std::string& name, const Objective& obj, uint64_t seed, double target,
                      size_t budget) {
  const Trace t = drive(name, obj, seed, budget, 1, target);
  for (size_t i = 0; i < t.scores.size(); ++i)
    if (t.scores[i] && *t.scores[i] <= target) return i + 1;
  return budget + 1;
}

/// The budget each sampling strategy must meet on the synthetic objectives,
/// as fractions of the valid configurations: averaged over kQualitySeeds
/// seeds, the evaluations until the first score within 5% of the optimum must
/// stay below `mean_fraction`, and no seed may need more than `max_fraction`.
/// Measured (8 seeds; printed by the test): random ~3% mean, anneal and
/// genetic ~1%, surrogate ~0.4%, forest ~0.5%, local ~0.6%, walk ~0.6-1.1%; the bounds leave
/// a margin of 2-5x.
struct QualityBound {
  std::string name;
  double mean_fraction;
  double max_fraction;
};
constexpr int kQualitySeeds = 8;

TEST(StrategyTest, QualityWithinBudgetOnSyntheticObjectives) {
  const std::vector<QualityBound> bounds = {
      {"random", 0.10, 0.30}, {"anneal", 0.03, 0.06}, {"genetic", 0.03, 0.06}, {"surrogate", 0.02, 0.04},
      {"portfolio", 0.03, 0.06}, {"forest", 0.03, 0.06},  {"local", 0.03, 0.06},    {"walk", 0.03, 0.06}};
  for (const Objective& obj : {bowl_objective(), constrained_objective()}) {
    const size_t valid = obj.space.enumerate_valid().size();
    const double best = obj.optimum();
    const double target = best * 1.05;
    size_t within = 0;
    for (const Config& c : obj.space.enumerate_valid())
      if (auto s = obj.score(c); s && *s <= target) ++within;
    std::printf("[ objective ] %s: %zu valid of %llu, %zu within 5%% of the optimum %.4f\n", obj.name.c_str(),
                valid, static_cast<unsigned long long>(obj.space.cartesian_size()), within, best);
    std::map<std::string, double> means;
    for (const QualityBound& b : bounds) {
      const size_t cap = static_cast<size_t>(b.max_fraction * valid);
      double sum = 0;
      size_t worst = 0;
      for (int seed = 1; seed <= kQualitySeeds; ++seed) {
        const size_t n = evaluations_to(b.name, obj, seed, target, cap);
        sum += n;
        worst = std::max(worst, n);
      }
      const double mean = means[b.name] = sum / kQualitySeeds;
      std::printf("[ quality   ] %-10s %-12s mean %6.1f evaluations (%4.2f%% of the space), worst %zu\n",
                  b.name.c_str(), obj.name.c_str(), mean, 100.0 * mean / valid, worst);
      EXPECT_LE(mean, b.mean_fraction * valid) << b.name << " on " << obj.name;
      EXPECT_LE(worst, cap) << b.name << " on " << obj.name;
    }
    // The default, a portfolio, pays for its robustness on these smooth
    // single-basin objectives, where the surrogate alone is quickest (measured:
    // portfolio 23.1 and 18.2 evaluations, surrogate 12.0 and 16.4): it must
    // stay within 2.5x of the quickest and need a quarter of random
    // sampling's evaluations at most. The landscapes where it is the better
    // choice are the replayed ones (test_search_replay.cpp, docs/search.md).
    const std::string def = default_strategy(valid);
    ASSERT_TRUE(means.count(def)) << def << " has no bound above";
    double quickest = means[def];
    for (const auto& [name, mean] : means) quickest = std::min(quickest, mean);
    EXPECT_LE(means[def], 2.5 * quickest) << def << " on " << obj.name;
    EXPECT_LE(means[def], 0.25 * means["random"]) << def << " on " << obj.name;
  }
}

/// Not run by default (--gtest_also_run_disabled_tests): the comparison
/// behind default_strategy(). For each objective (the two above plus a steep
/// variant of the bowl with very few near-optimal configurations) and each
/// strategy, the mean evaluations over 32 seeds to come within 5% and 1% of
/// the optimum and to find the optimum itself, with next() called 1 and 4 at
/// a time (budget: the whole space).
TEST(StrategyTest, DISABLED_Benchmark) {
  Objective steep = bowl_objective();
  steep.name = "steep-bowl";
  steep.score_of_indices = [](const std::vector<int>& i) -> std::optional<double> {
    const std::vector<double> w{0.08, 0.10, 0.12, 0.09, 0.05};
    const double main_basin = quadratic(i, {3, 2, 1, 2, 3}, w);
    const double decoy = 0.15 + quadratic(i, {0, 5, 3, 4, 0}, w);
    return 0.5 * std::exp(std::min(main_basin, decoy) + 0.08 * rugged(i));
  };
  constexpr int kSeeds = 32;
  for (const Objective& obj : {bowl_objective(), constrained_objective(), steep}) {
    const size_t valid = obj.space.enumerate_valid().size();
    const double best = obj.optimum();
    for (size_t batch : {1, 4}) {
      for (const std::string& name : kSamplers) {
        std::printf("%-12s batch %zu %-10s", obj.name.c_str(), batch, name.c_str());
        for (double ratio : {1.05, 1.01, 1.0}) {
          double sum = 0;
          for (int seed = 1; seed <= kSeeds; ++seed) {
            const Trace t = drive(name, obj, seed, valid, batch, best * ratio);
            size_t n = t.scores.size();
            for (size_t k = 0; k < t.scores.size(); ++k)
              if (t.scores[k] && *t.scores[k] <= best * ratio) {
                n = k + 1;
                break;
              }
            sum += n;
          }
          std::printf("  %s: %7.1f", ratio == 1.0 ? "optimum" : ratio > 1.02 ? "5%" : "1%", sum / kSeeds);
        }
        std::printf("   (of %zu)\n", valid);
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Stop conditions

Observation ok(double score) { return {{}, true, score}; }
Observation failed() { return {{}, false, 0}; }

TEST(StopTest, MaxEvaluations) {
  auto s = max_evaluations(3);
  EXPECT_FALSE(s->fulfilled());
  EXPECT_EQ(s->status(), "0/3 evaluations");
  s->update(ok(1));
  s->update(failed());  // failures count as evaluations
  EXPECT_FALSE(s->fulfilled());
  s->update(ok(2));
  EXPECT_TRUE(s->fulfilled());
  EXPECT_EQ(s->status(), "3/3 evaluations");
}

TEST(StopTest, TimeBudgetUsesTheInjectedClock) {
  using namespace std::chrono;
  auto now = steady_clock::time_point{} + hours(5);
  ClockFn clock = [&] { return now; };
  auto s = time_budget(minutes(10), clock);
  EXPECT_FALSE(s->fulfilled());
  EXPECT_EQ(s->status(), "0.0/10.0 min");
  now += seconds(186);
  EXPECT_EQ(s->status(), "3.1/10.0 min");
  EXPECT_FALSE(s->fulfilled());
  now += seconds(414);
  EXPECT_TRUE(s->fulfilled());
  EXPECT_EQ(s->status(), "10.0/10.0 min");

  auto short_budget = time_budget(seconds(30), clock);
  now += milliseconds(12500);
  EXPECT_EQ(short_budget->status(), "12.5/30.0 s");
  EXPECT_FALSE(short_budget->fulfilled());
  // The default clock is real time: a fresh one-hour budget is not spent.
  EXPECT_FALSE(time_budget(hours(1))->fulfilled());
  EXPECT_TRUE(time_budget(seconds(0))->fulfilled());
}

TEST(StopTest, NoImprovementCountsConsecutiveNonImprovingResults) {
  auto s = no_improvement(2);
  s->update(failed());  // nothing yet: not an improvement
  EXPECT_EQ(s->status(), "1/2 without improvement");
  s->update(ok(5));  // first success improves
  EXPECT_EQ(s->status(), "0/2 without improvement");
  s->update(ok(6));
  EXPECT_FALSE(s->fulfilled());
  s->update(ok(4));  // better: reset
  s->update(ok(4));  // equal is not better
  EXPECT_FALSE(s->fulfilled());
  s->update(failed());
  EXPECT_TRUE(s->fulfilled());
  EXPECT_EQ(s->status(), "2/2 without improvement");
}

TEST(StopTest, AnyOfStopsWhenOneMemberDoes) {
  using namespace std::chrono;
  auto now = steady_clock::time_point{};
  std::vector<std::unique_ptr<StopCondition>> members;
  members.push_back(max_evaluations(50));
  members.push_back(time_budget(minutes(10), [&] { return now; }));
  members.push_back(no_improvement(3));
  auto s = any_of(std::move(members));
  s->update(ok(1));
  s->update(ok(2));
  EXPECT_FALSE(s->fulfilled());
  EXPECT_EQ(s->status(), "2/50 evaluations, 0.0/10.0 min, 1/3 without improvement");
  now += minutes(11);  // the clock alone stops it
  EXPECT_TRUE(s->fulfilled());

  std::vector<std::unique_ptr<StopCondition>> stale;
  stale.push_back(max_evaluations(50));
  stale.push_back(no_improvement(2));
  auto t = any_of(std::move(stale));
  t->update(ok(1));
  t->update(ok(1));
  EXPECT_FALSE(t->fulfilled());
  t->update(failed());
  EXPECT_TRUE(t->fulfilled());  // no_improvement alone stops it

  EXPECT_FALSE(any_of({})->fulfilled());
  std::vector<std::unique_ptr<StopCondition>> with_null;
  with_null.push_back(nullptr);
  expect_error<UsageError>([&] { any_of(std::move(with_null)); }, "kopt.search.802");
}

}  // namespace
}  // namespace kopt::search
