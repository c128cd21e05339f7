// Search strategies and stop conditions.
//
// A strategy proposes configurations and learns from their results:
//   initialize(space, seed) -> next() ... observe(result) ... next() ...
// Lower score is better (scores are geometric-mean latencies in ms); a failed
// configuration is observed with ok = false and never proposed again.
// Strategies never propose a configuration twice, nor an invalid one.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/budget.h"
#include "search/space.h"

namespace kopt::search {

struct Observation {
  Config config;
  bool ok = false;     // passed every check
  double score = 0;    // geometric-mean latency in ms (ok only); lower is better
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  /// Resets the strategy for `space`. The space must outlive the strategy.
  /// Every strategy enumerates small spaces (cartesian size up to 2^18) here;
  /// the sampling ones check larger spaces with Space::check_not_empty() and
  /// then draw with search/sampler.h, never listing them. Throws
  /// SpecError(kopt.space.701) if no configuration is valid; "exhaustive"
  /// always enumerates, so it throws kopt.space.702 for spaces over
  /// kEnumerationLimit configurations.
  virtual void initialize(const Space& space, uint64_t seed) = 0;
  /// The next configuration to evaluate, or nullopt when the strategy has
  /// nothing left to propose. May be called several times before observe()
  /// (for pipelining compilation); each returned config is distinct.
  virtual std::optional<Config> next() = 0;
  /// The result of a configuration previously returned by next() (or an
  /// already-known result when resuming a run: then it was never proposed).
  virtual void observe(const Observation& o) = 0;
};

/// Known names: "exhaustive", "random", "anneal" (simulated annealing over
/// neighbours), "genetic" (tournament selection, uniform crossover, mutation),
/// "surrogate" (a nearest-neighbour model over value indices picks the most
/// promising of many random candidates, with epsilon exploration),
/// "portfolio" (local, forest, genetic, anneal and random as members, a
/// multi-armed bandit choosing which one proposes next, every member
/// learning from every result; strategy_portfolio.cpp), "forest" (a random
/// forest of the latencies and one of the failures pick the most promising
/// candidate; strategy_forest.cpp), "local" (descent from the best result by
/// pattern moves and a local linear model; strategy_local.cpp), "walk"
/// (simulated annealing with Kernel Tuner's compound moves; strategy_walk.cpp).
/// Throws UsageError(kopt.search.801) for an unknown name, listing the known ones.
std::unique_ptr<Strategy> make_strategy(const std::string& name);
std::vector<std::string> strategy_names();
/// The default strategy for a space of this (valid) size: "exhaustive" up to
/// 64 valid configurations, else "portfolio". No single strategy is best on
/// every landscape: replayed on public exhaustive sweeps, "surrogate" (an
/// earlier default) was the quickest on GEMM spaces and slower than random
/// sampling on convolution and point-in-polygon spaces. Replayed through the
/// run driver on 16 synthetic design spaces (tests/support/synthetic_spaces.h,
/// 50 seeds; docs/search.md, "The default portfolio") the portfolio had a
/// higher mean methodology score than the earlier portfolio of genetic,
/// anneal, surrogate and random (0.63 against 0.58) and needed fewer
/// evaluations to within 1% over the hard targets (a geometric mean of 115
/// against 140); so did it on the 12 held-out spaces of 1000 configurations
/// or more (0.62 against 0.60; 121 against 152 evaluations).
std::string default_strategy(uint64_t valid_size);
/// The same for a space whose valid configurations may not have been counted
/// (nullopt: too many to count): "exhaustive" only when at most 64 are valid
/// and the cartesian size allows enumeration (kEnumerationLimit), else
/// "portfolio".
std::string default_strategy(std::optional<uint64_t> valid_size, uint64_t cartesian_size);

/// Stop conditions compose: AnyOf stops when any member is fulfilled.
class StopCondition {
 public:
  virtual ~StopCondition() = default;
  virtual void update(const Observation& o) = 0;
  virtual bool fulfilled() const = 0;
  /// e.g. "12/50 evaluations", "3.1/10.0 min", "7/20 without improvement".
  virtual std::string status() const = 0;
  /// Narrows `left` to what is left of the limit this condition counts
  /// (evaluations, minutes, patience); conditions of other kinds leave it.
  virtual void left(model::BudgetLeft& left) const { (void)left; }
};

using ClockFn = std::function<std::chrono::steady_clock::time_point()>;

/// Counts every observation, failed ones included; fulfilled at `n`.
std::unique_ptr<StopCondition> max_evaluations(int64_t n);
/// `clock` is injectable for tests (default: steady_clock::now). Time counts
/// from the call; status() shows minutes for budgets of a minute or more
/// ("3.1/10.0 min"), seconds below ("12.5/30.0 s").
std::unique_ptr<StopCondition> time_budget(std::chrono::duration<double> budget, ClockFn clock = {});
/// The same, with time counted from `since` (on `clock`'s time line): a
/// run's budget counts from the run's start, not from when its conditions
/// were made.
std::unique_ptr<StopCondition> time_budget(std::chrono::duration<double> budget, ClockFn clock,
                                           std::chrono::steady_clock::time_point since);
/// Fulfilled after `n` consecutive observations that did not improve the best ok score
/// (a failed observation never improves).
std::unique_ptr<StopCondition> no_improvement(int64_t n);
/// status() joins the members' statuses with ", ". An empty list is never
/// fulfilled; a null member throws UsageError(kopt.search.802).
std::unique_ptr<StopCondition> any_of(std::vector<std::unique_ptr<StopCondition>> conditions);

}  // namespace kopt::search
