// The parameter search over shape classes: the performance cases grouped by
// their sizes (model/shape_classes.h), and one search per class, in turn,
// each timing only its class's performance cases (every candidate is still
// checked on every correctness case). The evaluations and minutes budgets are
// split over the classes as they come (what one class leaves goes to the
// next), each class after the first starts from the best configurations of
// its nearest tuned classes, and a candidate far slower on a case than the
// best known there is screened after one probe launch
// (spec::Candidate::screen_ms). The run driver then re-times every class's
// best on every performance case and derives a variant per class and the
// dispatch between them (driver/finalists.cpp, model/dispatch.h).
// docs/search.md, "Shape classes", describes it for users.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/shape_classes.h"
#include "propose/search_proposer.h"

namespace kopt::propose {

struct ClassSearchOptions {
  /// The search of each class: a copy of this with its own seed
  /// (search.seed + class index), label prefix ("c2:") and warm start
  /// (search.seeds, then the neighbours' best).
  SearchProposerOptions search;
  std::vector<model::ShapePoint> points;   // the performance cases and their sizes
  std::vector<model::ShapeClass> classes;  // tuning order (model::group_shape_classes)
  /// A case's probe slower than this factor times the best median known on
  /// that case is screened (>= 1; 0: no screening); so is one whose first
  /// eval::kScreenLaunches timed launches have a median over
  /// kScreenMedianFactor times a candidate's best median there.
  double screen_factor = 2.0;
  /// The baseline's (cuBLAS's) median on a case times this factor stands in
  /// for the best median known there while it is lower, also before any
  /// candidate was timed there: a class's first candidates and the seeds
  /// from its neighbours (a row kernel on 8192x1024x4096, a tiled kernel at
  /// K = 600000, 10-200x slower) are then screened after one probe launch
  /// instead of 110 full launches on every case. With the defaults, a probe
  /// more than 2 x 4 = 8 times the baseline is screened. 0: the baseline is
  /// not used.
  double baseline_screen_factor = 4.0;
  /// Warm start between classes: the best `seeds_per_neighbour` ok
  /// configurations of each of the `neighbours` nearest tuned classes.
  int neighbours = 2, seeds_per_neighbour = 3;
  /// The share of the minutes budget the classes' searches may use, the
  /// rest left for the finalists' re-timing (0 < f <= 1).
  double search_fraction = 0.8;
};

class ClassSearchProposer final : public Proposer {
 public:
  explicit ClassSearchProposer(ClassSearchOptions options);

  /// Prepares the first class's search (the space's errors surface here).
  void prepare(const spec::Bindings& device_constants) override;
  std::string name() const override;
  /// Patience counts within each class (the driver applies the evaluations
  /// and minutes budgets to the run; each class gets its share of what is
  /// left of them, read through the service).
  bool applies_patience() const override { return true; }
  void start(EvaluationService& service) override;
  void observe_recorded(const model::Attempt& attempt) override;
  Proposal propose() override;
  void observe(const spec::Candidate& candidate, const model::Attempt& attempt) override;
  /// Sets the screening limits from the fastest medians known now (or the
  /// baseline's bound, when lower); withdraws a candidate whose class's time
  /// or patience ran out.
  bool before_start(spec::Candidate& candidate) override;
  std::optional<spec::Candidate> candidate_for(const model::Attempt& attempt) const override;
  /// "class 3/8 best 0.123 ms" (over the class's cases) for the progress line.
  std::string progress() const override;
  /// Ends the current class's clock (its minutes in the summary).
  void finish() override;
  /// The first class's search summary plus "shape_classes": per class its
  /// name, cases, evaluations, minutes (wall time while it was searched),
  /// screened cases and its best (label, geomean over its cases);
  /// "screen_factor", "baseline_screen_factor".
  nlohmann::json summary() const override;

  /// The class of an attempt: the one whose performance cases it was timed
  /// on (nullopt: another set, e.g. the initial kernel's).
  std::optional<size_t> class_of(const model::Attempt& attempt) const;

 private:
  struct ClassState {
    std::vector<std::string> cases;
    std::unique_ptr<SearchProposer> search;  // from the class's start on
    std::vector<model::Attempt> attempts;    // recorded and observed, in order
    int64_t share = 0;                       // evaluations (0: no limit)
    double minutes_start = 0, minutes_end = 0, minutes_share = 0;
    int64_t since_improvement = 0, screened = 0, withdrawn = 0;
    std::optional<double> best_ms;
    std::string best_label;
    bool exhausted = false;  // its search has nothing more to propose
    bool stopped = false;    // its minutes or patience ran out: what it has queued is withdrawn
    bool finished = false;   // the next class has started (or the run ended)
  };
  /// Over for good: its minutes share or its patience ran out (marks it finished).
  bool class_over(ClassState& c);
  bool out_of_time(const ClassState& c) const;
  /// The class that proposed `candidate` (by the cases it is timed on).
  ClassState* class_proposing(const spec::Candidate& candidate);
  /// The run's minutes (the service's; without one, since construction).
  double minutes() const;
  /// The run's budget (the service's; without one, none).
  const model::Budget& budget() const;
  void begin_class(size_t k);
  void learn(ClassState& c, const model::Attempt& a);

  ClassSearchOptions o_;
  std::string strategy_name_;  // set by prepare()
  spec::Bindings constants_;
  EvaluationService* service_ = nullptr;  // set by start()
  std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();
  std::vector<ClassState> classes_;
  std::optional<size_t> current_;
  int64_t pending_ = 0;
  std::map<std::string, double> best_case_ms_;  // per performance case, unscreened ok medians
  /// Per performance case, the baseline's median times baseline_screen_factor,
  /// read once from the run's history when the baseline is there.
  std::map<std::string, double> baseline_bound_ms_;
  bool baseline_read_ = false;
  void read_baseline();
};

}  // namespace kopt::propose
