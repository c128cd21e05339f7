// The parameter search as a proposer: a search strategy (search/strategy.h)
// over the parameter space of a tunable template. The default proposer of
// `kopt optimize`, and the tuner behind the hybrid agent's templates.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "propose/proposer.h"
#include "search/space.h"
#include "search/strategy.h"

namespace kopt::propose {

/// A configuration to evaluate before the strategy's own (`kopt optimize
/// --warm-start FILE`): one entry of the file, in the order it should be
/// tried. An entry with a `skip` reason is never evaluated, only reported.
struct Seed {
  search::Config config;
  std::string origin;  // where it came from, for messages: "$.cache[\"16,1\"]"
  std::string skip;    // empty: evaluate it if it is a configuration of the space
  std::string skip_kind;  // the group `skip` is counted in ("recorded as failed"...)
};

struct SearchProposerOptions {
  /// The template as a candidate; each proposal is it with one configuration's
  /// parameters added (params of the same name replaced).
  spec::Candidate base;
  std::vector<spec::TuningParam> params;  // the space
  std::vector<spec::Expr> constraints;
  std::string strategy;       // empty: search::default_strategy(valid size)
  uint64_t seed = 1;
  int64_t max_proposals = 0;  // 0: until the strategy has nothing left
  /// Only the configurations this accepts are part of the space (a replay's
  /// recorded ones: Space::restricted_to); empty: every valid one.
  std::function<bool(const search::Config&)> only;
  std::string label_prefix;   // labels are prefix + config_key ("BM=64,BN=128")
  /// A configuration this returns a reason for is observed as failed without
  /// being evaluated (the hybrid agent's launch check).
  std::function<std::optional<std::string>(const spec::Candidate&)> precheck;
  /// Warm start: these are proposed first, in order, those that are
  /// configurations of the space (valid for the device's constants); the
  /// strategy then goes on, never proposing them again, and learns their
  /// results as its own. `seeds_from` names their source in messages
  /// ("--warm-start w.json"), `seeds_about` describes it once ("Kernel Tuner
  /// cache of kernel 'k' on 'A100', 12 entries").
  std::vector<Seed> seeds;
  std::string seeds_from, seeds_about;
  /// At most this many seeds are accepted (the first, in order); the rest
  /// are reported as not used. 0: no limit. A class search sets half of a
  /// class's evaluations share, so that its own strategy still runs.
  int64_t max_seeds = 0;
  /// Why max_seeds is what it is, for the report ("half of class 2's 5 evaluations").
  std::string max_seeds_why;
  /// Receives the report of the seeds (how many are tried first, how many
  /// not and why), a line each, at the first propose(): after prepare() has
  /// checked them and a resumed run's records were observed (those are not
  /// tried again, nor counted as tried first); null: silent.
  std::function<void(const std::string&)> note;
  /// Screening (`kopt optimize --screen-factor`, docs/search.md "Screening"):
  /// before a candidate starts, each performance case gets a limit of this
  /// times the fastest median recorded there so far (unscreened ok results);
  /// a probe launch over it ends the case's timing (spec::Candidate::screen_ms),
  /// and so does a median of the first eval::kScreenLaunches timed launches
  /// over kScreenMedianFactor times that median (screen_median_ms).
  /// 0: off. nullopt (the default): no screening and nothing said of it in
  /// the summary (a shape-class search screens in its own proposer); set,
  /// 0 included, it is recorded, so that a resumed run keeps it.
  std::optional<double> screen_factor;
};

class SearchProposer final : public Proposer {
 public:
  explicit SearchProposer(SearchProposerOptions options);

  /// Builds the space for a device and initialises the strategy, without
  /// listing the space when it is large (the valid configurations are
  /// counted within kCountEffort steps there, and sampled): throws
  /// SpecError(kopt.space.701) when no configuration is valid,
  /// kopt.space.702 for "exhaustive" on a space too large to enumerate, and
  /// UsageError(kopt.search.801) for an unknown strategy. start() calls it
  /// when nobody did before.
  void prepare(const spec::Bindings& device_constants) override;

  std::string name() const override { return strategy_name_; }
  void start(EvaluationService& service) override;
  void observe_recorded(const model::Attempt& attempt) override;
  Proposal propose() override;
  void observe(const spec::Candidate& candidate, const model::Attempt& attempt) override;
  std::optional<spec::Candidate> candidate_for(const model::Attempt& attempt) const override;
  /// Sets the candidate's screening limits from the fastest medians so far
  /// (with a SearchProposerOptions::screen_factor above 0); never withdraws one.
  bool before_start(spec::Candidate& candidate) override;
  /// {"strategy", "valid_configurations"} (null: too many to count), with a
  /// screen factor set "screen_factor" and "screened_cases" (cases whose
  /// timing screening ended, this session and recorded ones), and
  /// with seeds "warm_start": {"from", "about", "entries", "tried_first", "not_used":
  /// {group: {"count", "first": {"at", "reason"}}}}.
  nlohmann::json summary() const override;

  /// The seeds that prepare() found to be configurations of the space, in
  /// order, less those a resumed run has recorded.
  const std::vector<Seed>& accepted_seeds() const { return accepted_; }
  /// The report that the first propose() handed to `note` (empty without
  /// seeds, or before then).
  const std::vector<std::string>& seed_report() const { return seed_report_; }

  /// nullopt: the space is too large to count.
  std::optional<uint64_t> valid_configurations() const { return valid_size_; }

  /// The steps (assignments plus constraint evaluations) prepare() spends
  /// counting a space larger than search::kEnumerationLimit.
  static constexpr uint64_t kCountEffort = 2'000'000;

  /// One configuration's fate, in proposal order.
  struct Outcome {
    search::Config config;
    int attempt = 0;       // its attempt index once observed (0: not evaluated)
    std::string rejected;  // the precheck's reason, when it was not evaluated
  };
  const std::vector<Outcome>& outcomes() const { return outcomes_; }
  /// Every proposal has been observed (or rejected).
  bool settled() const { return pending_.empty(); }

 private:
  SearchProposerOptions o_;
  std::unique_ptr<search::Space> space_;
  std::unique_ptr<search::Strategy> strategy_;
  std::string strategy_name_;
  std::optional<uint64_t> valid_size_;
  int64_t proposed_ = 0;
  std::map<std::string, size_t> pending_;  // config_key -> outcomes_ index
  std::vector<Outcome> outcomes_;

  /// Sorts the seeds into accepted_ and the groups of not_used_.
  void check_seeds();
  /// Says what check_seeds() and observe_recorded() made of the seeds (seed_report_, `note`).
  void report_seeds();
  bool seeds_reported_ = false;
  bool compile_only_ = false;  // start(): no GPU, the seeds are compiled, not evaluated
  void not_used(const std::string& kind, const std::string& at, const std::string& reason);
  /// The proposal of `cfg` (nullopt: the precheck rejected it and it was observed as failed).
  std::optional<Proposal> offer(const search::Config& cfg);
  std::vector<Seed> accepted_;
  size_t next_seed_ = 0;
  std::map<std::string, std::string> seed_keys_;  // config_key of each accepted seed -> origin
  std::set<std::string> known_;                   // config_keys recorded or observed in this run
  struct Group {
    int64_t count = 0;
    std::string first_at, first_reason;
  };
  std::map<std::string, Group> not_used_;
  std::vector<std::string> seed_report_;
  /// Screening: per performance case, the fastest unscreened ok median; and
  /// the cases screened so far.
  void learn_latencies(const model::Attempt& attempt);
  std::map<std::string, double> best_case_ms_;
  int64_t screened_cases_ = 0;
};

}  // namespace kopt::propose
