// A recorded space replayed: any strategy searches a table of measured
// outcomes instead of a GPU, and is scored with search/score.h (evaluations
// and seconds to within 5% and 1% of the optimum, the methodology score).
// Test and development support, not part of the tool: the unit tests, the
// development tool kopt_search_replay (tests/support/replay_main.cpp) and
// scripts/compare_kernel_tuner.py use it.
//
// Inputs: a Kernel Tuner cache file (read_kernel_tuner_cache), a kopt sweep
// record with its spec (from_record, search_replay.h), or a synthetic space
// (synthetic_spaces.h). A replayed space holds the recorded configurations
// only: every configuration is valid (constraints were applied when it was
// recorded), and one that failed costs an evaluation as in a real run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/score.h"
#include "search/space.h"
#include "spec/spec.h"

#include "support/search_replay.h"

namespace kopt::search::replay {

/// What one configuration gave when it was recorded.
struct Outcome {
  std::string verdict;  // "ok", or how it failed (a kopt verdict or a Kernel Tuner error name)
  double ms = 0;        // the objective, lower is better (ok only)
  double seconds = 0;   // what evaluating it cost: compile + check + time (0: unknown)
  bool ok() const { return verdict == "ok"; }
};

/// A recorded space: its parameters (integer values, in the record's order)
/// and every recorded configuration with its outcome.
struct RecordedSpace {
  std::string label;   // a short name (a file stem)
  std::string source;  // where it came from
  std::string device, kernel;
  std::vector<spec::TuningParam> params;
  std::vector<std::pair<Config, Outcome>> entries;
  /// Whether every entry has an evaluation cost (seconds > 0).
  bool timed() const;
};

/// Reads a Kernel Tuner cache file (the `cachefile=` option of tune_kernel;
/// tool/src/run/interop.h gives the format), closed or left open by a session
/// that stopped early. A parameter whose values are not all integers is
/// replayed on its value positions 0, 1, ... (the order of tune_params). An
/// entry's objective is its "time" (ms); a string there is a failure (its
/// name is the verdict); its cost is compile_time + verification_time +
/// benchmark_time (ms), what Kernel Tuner's simulation mode charges.
/// Throws SpecError(kopt.replay.110) naming the file and the JSON path.
RecordedSpace read_kernel_tuner_cache(const std::filesystem::path& file);
/// The space as a Kernel Tuner cache file (closed), which Kernel Tuner's
/// simulation mode replays: "time" in ms or the failure's name
/// (CompilationFailedConfig, RuntimeFailedConfig or InvalidConfig), the cost
/// as compile_time (all of it; verification_time and benchmark_time 0).
/// Keys in Kernel Tuner's order, "cache" last: Kernel Tuner takes a file
/// that does not end with the cache's and the document's closing braces for
/// one left open.
nlohmann::ordered_json kernel_tuner_cache(const RecordedSpace& s);

/// A kopt sweep record (search_replay.h) as a recorded space: the record's
/// configurations that are valid in `full` (the spec's space), with the
/// value lists of `full`. Untimed (a record has no costs).
RecordedSpace from_record(const Space& full, const Record& r, const std::string& label);

/// What a strategy achieved over its seeds.
struct StrategyMeasures {
  std::string strategy;
  int seeds = 0;
  /// Per seed: evaluations (failed ones included) to within 5% and 1% of the
  /// optimum; nullopt: not within the run's evaluations.
  std::vector<std::optional<size_t>> to5, to1;
  /// Per seed: seconds to within 5% and 1% (timed spaces).
  std::vector<std::optional<double>> seconds5, seconds1;
  /// The methodology scores over evaluations and over time (timed spaces).
  double score = 0;
  std::optional<double> score_time;
  std::string score_time_note;  // why there is no score over time on a timed space
  /// The runs themselves, seed 1 first.
  std::vector<score::Trace> runs;
  /// The median over the seeds (nullopt: more than half never got there).
  std::optional<double> median_to5() const;
  std::optional<double> median_to1() const;
  std::optional<double> median_seconds5() const;
  std::optional<double> median_seconds1() const;
};

struct ReplayOptions {
  int seeds = 20;
  /// The most evaluations a run may make (0: the whole space). A run stops
  /// earlier once it is within 1% of the optimum and past the score's
  /// evaluation range (and time budget).
  size_t max_evaluations = 0;
  score::MethodologyOptions methodology;
};

/// A recorded space ready for replay.
class Replay {
 public:
  /// Throws SpecError(kopt.replay.102) when no configuration passed, and
  /// what score::Methodology throws for a space it cannot score.
  Replay(RecordedSpace s, const score::MethodologyOptions& o = {});
  Replay(const Replay&) = delete;  // space() refers to this object's table
  Replay& operator=(const Replay&) = delete;
  const RecordedSpace& recorded() const { return s_; }
  const Space& space() const { return space_; }
  const score::Methodology& methodology() const { return methodology_; }
  size_t size() const { return s_.entries.size(); }
  size_t failed() const { return failed_; }
  double optimum() const { return methodology_.optimum(); }
  /// Configurations within 5% / 1% of the optimum.
  size_t within(double tolerance) const;

  /// One run of `strategy` with `seed`: next() and observe() alternate until
  /// the stop rule of ReplayOptions. Throws what make_strategy throws.
  score::Trace run(const std::string& strategy, uint64_t seed, size_t max_evaluations = 0) const;
  /// Runs seeds 1..o.seeds and measures them.
  StrategyMeasures measure(const std::string& strategy, const ReplayOptions& o) const;
  /// Measures runs made elsewhere (another tool's strategy on this space).
  /// Throws what score::Methodology throws for a value not in the space.
  StrategyMeasures measure_runs(const std::string& name, std::vector<score::Trace> runs) const;
  /// A summary of the space (size, failures, optimum, median, the score's
  /// range) and each strategy's measures, as JSON.
  nlohmann::json to_json(const std::vector<StrategyMeasures>& results) const;

 private:
  const Outcome& outcome(const Config& c) const;

  RecordedSpace s_;
  Space space_;
  score::Methodology methodology_;
  size_t failed_ = 0;
  std::unordered_map<std::string, size_t> index_;  // config_key -> entry
};

/// The methodology over a recorded space's values and costs.
score::Methodology methodology_of(const RecordedSpace& s, const score::MethodologyOptions& o = {});

/// A Markdown table of the measures: one row per strategy with the median
/// evaluations to 5% and 1%, the seconds (timed spaces) and the scores.
std::string measures_table(const Replay& r, const std::vector<StrategyMeasures>& results);

}  // namespace kopt::search::replay
