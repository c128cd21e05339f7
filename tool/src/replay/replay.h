// `kopt replay`: search strategies run over a recorded space (store/recorded.h)
// instead of a GPU, and scored (search/score.h): per strategy, over N seeds,
// the evaluations and simulated seconds to within 5% and 1% of the recorded
// optimum, and the methodology score of Willemsen et al. (FGCS 2024).
//
// A replayed run is a `kopt optimize` run (driver/driver.h): the same driver,
// proposer, search loop, compile-ahead queue and stop conditions, with the
// budget counted as on a GPU (evaluations, failed ones included; minutes on
// the clock of the runner), over the runner of replay/table_runner.h. The
// run's spec is made from the record (its parameters, no constraint, one
// performance case: the recorded objective) and its space is restricted to
// the recorded configurations (OptimizeOptions::space_filter); the run is
// kept in memory (OptimizeOptions::in_memory). docs/search.md, "Replaying a
// recorded space", is the user's description.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/budget.h"
#include "store/recorded.h"
#include "search/score.h"

namespace kopt::replay {

class Table;

/// What a strategy achieved over its seeds.
struct StrategyMeasures {
  std::string strategy;  // as asked ("default (portfolio)" for the default)
  int seeds = 0;
  /// Per seed: evaluations (failed ones included) to within 5% and 1% of the
  /// optimum; nullopt: not within the run.
  std::vector<std::optional<size_t>> to5, to1;
  /// Per seed: simulated seconds to within 5% and 1% (timed spaces).
  std::vector<std::optional<double>> seconds5, seconds1;
  /// The methodology scores, over evaluations and (timed spaces) over time.
  double score = 0;
  std::optional<double> score_time;
  std::string score_time_note;  // why a timed space has no score over time
  /// The runs, seed 1 first.
  std::vector<search::score::Trace> runs;
  /// Medians over the seeds; a seed that never got there counts as worse
  /// than any that did (nullopt: more than half never got there).
  std::optional<double> median_to5() const;
  std::optional<double> median_to1() const;
  std::optional<double> median_seconds5() const;
  std::optional<double> median_seconds1() const;
};

struct ReplayOptions {
  int seeds = 10;  // seeds 1..N
  /// The budget of each run, as `kopt optimize --budget` takes it (minutes
  /// on the simulated clock). Unset: Replay::default_budget().
  std::optional<model::Budget> budget;
  /// The compile threads of each run (`kopt optimize --compile-threads`):
  /// the compile-ahead queue holds twice as many candidates, proposed before
  /// the results of the ones ahead of them are known, as on a GPU.
  int compile_threads = 1;
  search::score::MethodologyOptions methodology;
};

/// A recorded space ready for replay. Holds a temporary folder (the run's
/// spec and template) until destroyed.
class Replay {
 public:
  /// Throws what search::score::Methodology throws for a space it cannot
  /// score (kopt.search.803: fewer than two distinct values), and
  /// SpecError(kopt.replay.106) when a parameter's name cannot be one of
  /// kopt's (not an identifier, the name of a device constant).
  explicit Replay(store::RecordedSpace s, const search::score::MethodologyOptions& o = {});
  ~Replay();
  Replay(const Replay&) = delete;
  Replay& operator=(const Replay&) = delete;

  const store::RecordedSpace& recorded() const { return s_; }
  const search::score::Methodology& methodology() const { return methodology_; }
  size_t size() const { return s_.entries.size(); }
  size_t failed() const { return s_.failed(); }
  double optimum() const { return methodology_.optimum(); }
  /// Configurations within `tolerance` (0.05: 5%) of the optimum.
  size_t within(double tolerance) const;
  /// The strategy `kopt optimize` chooses for this space without --strategy.
  std::string default_strategy() const;
  /// The number of points of the parameters' product (the record's
  /// configurations are some or all of them); at most 2^64 - 1.
  uint64_t cartesian_size() const;
  /// Enough for every measure: evals = the most of 1000, the score's last
  /// evaluation and (timed spaces) 1.2x the evaluations that fill the score's
  /// time budget at the space's mean cost; at most the space's size.
  model::Budget default_budget() const;

  /// One run of `strategy` ("default" or empty: default_strategy()) with
  /// `seed`: its search's evaluations in order. Throws what `kopt optimize`
  /// throws for the options (kopt.search.801 for an unknown strategy,
  /// kopt.opt.005 for a zero budget), util::Interrupted after SIGINT/SIGTERM,
  /// and EnvironmentError(kopt.replay.108) for a run that ends otherwise.
  search::score::Trace run(const std::string& strategy, uint64_t seed, const model::Budget& budget,
                           int compile_threads = 1) const;
  /// Runs seeds 1..o.seeds and measures them.
  StrategyMeasures measure(const std::string& strategy, const ReplayOptions& o) const;
  /// Measures runs made elsewhere (another tool's strategy on this space).
  /// Throws what score::Methodology throws for a value not in the space.
  StrategyMeasures measure_runs(const std::string& name, std::vector<search::score::Trace> runs) const;
  /// The space (label, source, size, failed, optimum, median, within 5% and
  /// 1%, the score's ranges, the default strategy, the budget) and each
  /// strategy's measures (with each seed's), as JSON.
  nlohmann::json to_json(const std::vector<StrategyMeasures>& results, const model::Budget& budget) const;

 private:
  store::RecordedSpace s_;
  search::score::Methodology methodology_;
  std::unique_ptr<Table> table_;
  std::filesystem::path dir_;  // the temporary folder: replay.json, replay.cu
};

/// The methodology over a recorded space's values and costs. Throws
/// kopt.search.803 as Methodology does.
search::score::Methodology methodology_of(const store::RecordedSpace& s,
                                          const search::score::MethodologyOptions& o = {});

/// A Markdown table of the measures with a header line about the space: one
/// row per strategy with the median evaluations to 5% and 1%, the median
/// seconds (timed spaces) and the scores.
std::string measures_table(const Replay& r, const std::vector<StrategyMeasures>& results);

}  // namespace kopt::replay
