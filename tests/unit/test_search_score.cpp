// Scoring a search on a recorded space (search/score.h): the measures worked
// out by hand on small spaces, and the methodology score checked against its
// reference implementation (the Python package autotuning_methodology 1.1.0)
// on a space and runs built here by integer arithmetic.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "search/score.h"
#include "util/error.h"

namespace kopt::search::score {
namespace {

Trace trace(const std::vector<std::optional<double>>& values, double seconds = 1.0) {
  Trace t;
  for (const auto& v : values) t.push_back({v, seconds});
  return t;
}

TEST(ScoreTest, EvaluationsAndSecondsToATarget) {
  Trace t = trace({std::nullopt, 5.0, 3.0, std::nullopt, 1.05, 1.0});
  for (size_t i = 0; i < t.size(); ++i) t[i].seconds = double(i + 1);  // 1, 2, 3, ... s
  EXPECT_EQ(evaluations_to(t, 3.0), 3u);  // failures count as evaluations
  EXPECT_EQ(evaluations_to(t, 1.0 * 1.05), 5u);
  EXPECT_EQ(evaluations_to(t, 1.0), 6u);
  EXPECT_EQ(evaluations_to(t, 0.5), std::nullopt);
  EXPECT_EQ(seconds_to(t, 3.0), 1.0 + 2 + 3);
  EXPECT_EQ(seconds_to(t, 1.0), 21.0);
  EXPECT_EQ(seconds_to(t, 0.5), std::nullopt);
  EXPECT_EQ(median({3, 1, 2}), 2.0);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median({}), std::nullopt);
}

// The values 1..10 (N = 10), no failures: median 5.5, optimum 1.
//   end cutoff: within 1 + 4.5 x 0.05 = 1.225 is only the optimum, at
//   position i = 9 from the worst; as it is the optimum, i = 8; random search
//   needs ceil(8 / (11 - 8)) = 3 evaluations.
//   start cutoff: within 1 + 4.5 x 0.99 = 5.455 first at 5 (i = 5): ceil(5/6) = 1.
//   random search after M draws: the value at position round(11 M / (M + 1))
//   from the worst: M = 1: 5.5 -> 6 (ties to even) -> 4; M = 2: 7.33 -> 7 -> 3;
//   M = 3: 8.25 -> 8 -> 2.
TEST(ScoreTest, MethodologyWorkedByHand) {
  const Methodology m({10, 9, 8, 7, 6, 5, 4, 3, 2, 1});
  EXPECT_EQ(m.optimum(), 1.0);
  EXPECT_EQ(m.median_value(), 5.5);
  EXPECT_EQ(m.first_evaluation(), 1u);
  EXPECT_EQ(m.last_evaluation(), 3u);
  EXPECT_DOUBLE_EQ(m.cutoff_value(), 1.225);
  EXPECT_EQ(m.random_value(0), 10.0);
  EXPECT_EQ(m.random_value(1), 4.0);
  EXPECT_EQ(m.random_value(2), 3.0);
  EXPECT_EQ(m.random_value(3), 2.0);
  EXPECT_EQ(m.random_value(1000), 1.0);
  EXPECT_FALSE(m.timed());
  EXPECT_EQ(m.score_over_time({trace({1.0})}), std::nullopt);

  // One run: best 7, 2, 1 after 1, 2, 3 evaluations; standardised
  // (7-4)/(1-4) = -1, (2-3)/(1-3) = 0.5, (1-2)/(1-2) = 1: mean 1/6.
  const std::vector<Trace> one = {trace({7.0, 2.0, 1.0})};
  EXPECT_EQ(m.standardised_curve(one), (std::vector<double>{-1.0, 0.5, 1.0}));
  EXPECT_NEAR(m.score(one), 1.0 / 6, 1e-15);
  // The optimum at once: 1 throughout. Nothing valid in any run: the worst value,
  // (10-4)/(1-4) = -2, (10-3)/(1-3) = -3.5, (10-2)/(1-2) = -8.
  EXPECT_DOUBLE_EQ(m.score({trace({1.0})}), 1.0);
  EXPECT_NEAR(m.score({trace({std::nullopt, std::nullopt, std::nullopt})}), (-2 - 3.5 - 8) / 3, 1e-12);
  // Two runs: the median of their best positions, ties to even: after one
  // evaluation positions 2 (value 3) and 3 (value 4): 2.5 -> 2, value 3;
  // after two, 1 (value 2) and 3: 2 -> value 3; after three, 0 and 3: 1.5 -> 2, value 3.
  const std::vector<Trace> two = {trace({3.0, 2.0, 1.0}), trace({4.0, 9.0, 8.0})};
  EXPECT_EQ(m.standardised_curve(two), (std::vector<double>{(3.0 - 4) / (1 - 4), 0.0, (3.0 - 2) / (1 - 2)}));
  // A run that ends early keeps its last best.
  EXPECT_EQ(m.score({trace({2.0})}), m.score({trace({2.0, 2.0, 2.0})}));
}

// Nine values 1, 2, 3, 3, 4, 5, 5, 6, 7 (median 4): the range is 1-3
// evaluations, and after 3 draws the baseline's position round(30 / 4) = 8
// (7.5, ties to even) is the optimum's: that point is undefined and left out.
// Random search: 1 draw: round(10 / 2) = 5 -> 3; 2 draws: round(20 / 3) = 7 -> 2.
// The run 4, 2, 1: (4-3)/(1-3) = -0.5, (2-2)/(1-2) = 0.
TEST(ScoreTest, PointsWhereTheBaselineIsAtTheOptimumAreLeftOut) {
  const Methodology m({1, 3, 5, 2, 4, 6, 3, 5, 7});
  EXPECT_EQ(m.first_evaluation(), 1u);
  EXPECT_EQ(m.last_evaluation(), 3u);
  EXPECT_EQ(m.random_value(3), m.optimum());
  const std::vector<double> curve = m.standardised_curve({trace({4.0, 2.0, 1.0})});
  ASSERT_EQ(curve.size(), 3u);
  EXPECT_EQ(curve[0], -0.5);
  EXPECT_EQ(curve[1], 0.0);
  EXPECT_TRUE(std::isnan(curve[2]));
  EXPECT_EQ(m.score({trace({4.0, 2.0, 1.0})}), -0.25);
}

TEST(ScoreTest, SpacesAndRunsThatCannotBeScored) {
  auto expect_id = [](const std::function<void()>& f, const std::string& id, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error, expected " << id;
    } catch (const UsageError& e) {
      EXPECT_EQ(e.id(), id);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_id([] { Methodology({2.0}); }, "kopt.search.803", "at least two different valid values");
  expect_id([] { Methodology({2.0, 2.0, 2.0}); }, "kopt.search.803", "at least two different");
  expect_id([] { Methodology({1.0, 1.0, 2.0}); }, "kopt.search.803", "share the optimum");
  expect_id([] { Methodology({1.0, NAN, 2.0}); }, "kopt.search.803", "not finite");
  expect_id([] { Methodology({1.0, 2.0, 3.0}, 1, {1, 1, 1}, {}); }, "kopt.search.803", "evaluation costs");
  const Methodology m({10, 9, 8, 7, 6, 5, 4, 3, 2, 1});
  expect_id([&] { m.score({}); }, "kopt.search.804", "no runs");
  expect_id([&] { m.score({trace({2.5})}); }, "kopt.search.804", "not one of the space's valid values");
}

/// A space of 60 configurations and five runs over it, made by integer
/// arithmetic: configuration i failed when i % 9 == 4, else its value is
/// 1 + 0.25 ((37 i) mod 60) (all different), and it costs 0.5 + 0.25 (i mod 7)
/// seconds; run r (a = 7, 11, 13, 17, 19) evaluates configuration
/// (a j + 5 r + 1) mod 60 at step j, every configuration once.
struct LcgSpace {
  std::vector<double> ok, ok_seconds, failed_seconds;
  std::vector<Trace> runs;
  LcgSpace() {
    auto failed = [](int i) { return i % 9 == 4; };
    auto value = [](int i) { return 1.0 + ((i * 37) % 60) * 0.25; };
    auto seconds = [](int i) { return 0.5 + (i % 7) * 0.25; };
    for (int i = 0; i < 60; ++i) {
      if (failed(i)) {
        failed_seconds.push_back(seconds(i));
      } else {
        ok.push_back(value(i));
        ok_seconds.push_back(seconds(i));
      }
    }
    const int as[] = {7, 11, 13, 17, 19};
    for (int r = 0; r < 5; ++r) {
      Trace t;
      for (int j = 0; j < 60; ++j) {
        const int i = (as[r] * j + 5 * r + 1) % 60;
        t.push_back({failed(i) ? std::nullopt : std::optional<double>(value(i)), seconds(i)});
      }
      runs.push_back(t);
    }
  }
};

// The reference: autotuning_methodology 1.1.0 with Python 3.11, numpy 2.4,
// scipy and scikit-learn of 2026-12. The space as a T4 file (time measurement
// per configuration, failed ones with an error string; one time key holding
// each configuration's cost); the runs as its results arrays (cumulative
// time, best value so far), truncated for the time axis where a run's time
// budget (110% of the end cutoff's time) is reached.
//   evaluations: SearchspaceStatistics.cutoff_point_fevals_time_start_end(0.01,
//     0.95) -> evaluations 1-17, seconds 1.25-21.25;
//     StochasticOptimizationAlgorithm.get_curve_over_fevals(range, dist,
//     confidence_level=0.95) standardised by RandomSearchCalculatedBaseline:
//     mean -0.8763741827369456.
//   time: get_curve_over_time(linspace(1.25, 21.25, 1000), ...) with the
//     pooled isotonic fit in place of the bootstrap ensemble's mean:
//     -1.1783977105287329 (with the ensemble, unseeded: -1.05 in one run).
TEST(ScoreTest, MethodologyMatchesTheReferenceImplementation) {
  const LcgSpace s;
  const Methodology m(s.ok, s.failed_seconds.size(), s.ok_seconds, s.failed_seconds);
  EXPECT_EQ(m.valid(), 53u);
  EXPECT_EQ(m.first_evaluation(), 1u);
  EXPECT_EQ(m.last_evaluation(), 17u);
  ASSERT_TRUE(m.timed());
  EXPECT_DOUBLE_EQ(m.first_second(), 1.25);
  EXPECT_DOUBLE_EQ(m.last_second(), 21.25);
  EXPECT_NEAR(m.score(s.runs), -0.8763741827369456, 1e-12);
  const std::optional<double> t = m.score_over_time(s.runs);
  ASSERT_TRUE(t);
  EXPECT_NEAR(*t, -1.1783977105287329, 1e-12);
}

}  // namespace
}  // namespace kopt::search::score
