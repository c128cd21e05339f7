// How well a search did on a recorded space: evaluations (and seconds) until
// a result within a tolerance of the space's optimum, and the performance
// score of the auto-tuning methodology of Willemsen et al.
//
// A recorded space is the objective of every configuration (lower is better:
// a latency in ms), measured exhaustively; a search on it is a Trace, its
// evaluations in the order made. Several seeds of one strategy give several
// traces, and the methodology score summarises them.
//
// The methodology: F.-J. Willemsen, R. Schoonhoven, J. Filipovic, J. O. Tørring,
// R. van Nieuwpoort, B. van Werkhoven, "A methodology for comparing optimization
// algorithms for auto-tuning", Future Generation Computer Systems 159 (2024)
// 489-504, doi 10.1016/j.future.2024.05.021. Every formula below follows its
// reference implementation, the Python package autotuning_methodology 1.1.0
// (modules searchspace_statistics, baseline, curves, report_experiments), as
// noted at each function; docs/search.md ("Scoring a search") has the summary.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace kopt::search::score {

/// One evaluation of a search.
struct Step {
  std::optional<double> value;  // the objective (lower is better); nullopt: the configuration failed
  double seconds = 0;           // what the evaluation cost (compile, check, time), seconds; 0: unknown
};
/// A search's evaluations, in order; each configuration at most once.
using Trace = std::vector<Step>;

/// Evaluations (1-based, failed ones included) until the first value <= `target`;
/// nullopt when the trace never gets there.
std::optional<size_t> evaluations_to(const Trace& t, double target);
/// Seconds (the sum of Step::seconds up to and including that evaluation)
/// until the first value <= `target`; nullopt when the trace never gets there.
std::optional<double> seconds_to(const Trace& t, double target);

/// The median of `v` (the mean of the two middle values for an even count),
/// as numpy.median; nullopt for an empty `v`. Values are copied.
std::optional<double> median(std::vector<double> v);

/// The settings of the methodology (its "statistics_settings"), with the
/// package's defaults.
struct MethodologyOptions {
  double cutoff_percentile = 0.95;        // the budget ends where random search is 95% of the way...
  double cutoff_percentile_start = 0.01;  // ...and starts where it is 1% of the way (median -> optimum)
  int time_resolution = 1000;             // points of the time axis ("resolution")
  double time_budget_margin = 0.1;        // a run's time budget: 110% of the cutoff time ("cutoff_margin")
};

/// The methodology's view of one recorded space: its distribution of
/// objective values, the calculated random-search baseline, the cutoff
/// points, and the scores.
///
/// Score over evaluations: for each evaluation count f from the start to the
/// end cutoff, the strategy's curve is the median over the runs of the
/// position (in the sorted valid values) of each run's best value after f
/// evaluations, rounded; the baseline is the calculated random search; the
/// standardised curve is (strategy - random) / (optimum - random): 0 is
/// random search, 1 the optimum, negative worse than random. The score is the
/// mean of the standardised curve over the range (curves.py,
/// StochasticOptimizationAlgorithm.get_curve_over_fevals; baseline.py,
/// Baseline.get_standardised_curves).
///
/// Score over time (the package's reported score, report_experiments.py,
/// get_strategy_scores, cutoff_type "time"): the same on a time axis of
/// `time_resolution` points between the start and end cutoffs, each at
/// (cutoff evaluations) x (median seconds of a configuration). The strategy's
/// curve is an isotonic (non-increasing) regression of the best value's
/// position against elapsed seconds, over every run's evaluations pooled;
/// the baseline is the random search at (seconds / mean seconds per
/// evaluation) evaluations, interpolated monotonically (PCHIP). The package
/// replaces the pooled fit by the mean of a bootstrap ensemble of such fits
/// (sklearn BaggingRegressor, unseeded), which it only needs for its error
/// bars; this fit is the deterministic one the ensemble estimates.
class Methodology {
 public:
  /// `ok_values`: the objective of every configuration that passed (at least
  /// two distinct values); `failed`: how many did not. `ok_seconds` and
  /// `failed_seconds`, when given (both, one per configuration, in any
  /// order), are the configurations' evaluation costs and enable the time
  /// axis. Throws UsageError(kopt.search.803) when the values cannot be
  /// scored (fewer than two distinct values, a non-finite one, the median
  /// equal to the optimum, or sizes that do not match).
  explicit Methodology(std::vector<double> ok_values, size_t failed = 0, std::vector<double> ok_seconds = {},
                       std::vector<double> failed_seconds = {}, MethodologyOptions o = {});

  double optimum() const { return sorted_.front(); }
  double median_value() const { return median_; }
  /// The number of valid (ok) configurations, N.
  size_t valid() const { return sorted_.size(); }
  /// The evaluation range [first, last] of the score
  /// (SearchspaceStatistics.cutoff_point_fevals_time_start_end).
  size_t first_evaluation() const { return first_; }
  size_t last_evaluation() const { return last_; }
  /// The objective value at the end cutoff: optimum + (median - optimum) x (1 - cutoff_percentile).
  double cutoff_value() const;

  /// The calculated random search without replacement after `evaluations`
  /// draws among the N valid configurations: the value at position
  /// round(M (N + 1) / (M + 1)) (ties to even, at most N - 1) of the values
  /// sorted worst first (baseline.py, RandomSearchCalculatedBaseline, after
  /// the expected rank of the best of M draws).
  double random_value(size_t evaluations) const;

  /// The score over evaluations of these runs (one per seed). A run shorter
  /// than last_evaluation() keeps its last best. Throws
  /// UsageError(kopt.search.804) for no runs, a value of a run that is
  /// not among the space's values, or no defined point (standardised_curve()).
  double score(const std::vector<Trace>& runs) const;
  /// The standardised curve behind score(), one value per evaluation count
  /// from first_evaluation() to last_evaluation(). Where the baseline itself
  /// is at the optimum (in small spaces, as its position is rounded ties to
  /// even: N = 9, M = 3 gives 7.5 -> 8, the optimum's position), the value is
  /// undefined (NaN) and left out of score(); the package refuses such a
  /// space (a division by zero).
  std::vector<double> standardised_curve(const std::vector<Trace>& runs) const;

  /// Whether the space has evaluation costs (the time axis).
  bool timed() const { return timed_; }
  /// The time range [start, end] of the time score, seconds.
  double first_second() const;
  double last_second() const;
  /// A run's time budget, seconds: last_second() x (1 + time_budget_margin).
  /// Runs for score_over_time() should go at least that far (a real run
  /// under this budget stops at the first evaluation that reaches it).
  double time_budget() const;
  /// The score over time of these runs (their Step::seconds); nullopt when
  /// the space has no evaluation costs. Evaluations after a run's time
  /// budget is reached are ignored. Throws kopt.search.804 as score() does,
  /// and when the runs have no valid value within the time range.
  std::optional<double> score_over_time(const std::vector<Trace>& runs) const;

 private:
  /// The position of `v` in sorted_ (the first one not below it).
  double position(double v) const;
  std::pair<double, size_t> cutoff(double percentile) const;
  std::vector<double> random_curve_over_time(const std::vector<double>& times) const;

  MethodologyOptions o_;
  std::vector<double> sorted_;  // ascending: best first
  double median_ = 0;
  size_t first_ = 0, last_ = 0;
  bool timed_ = false;
  double median_seconds_ = 0;    // of every configuration
  double seconds_per_eval_ = 0;  // mean of the valid ones + failed share x mean of the failed ones
};

}  // namespace kopt::search::score
