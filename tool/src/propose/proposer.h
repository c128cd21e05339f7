// What every proposer shares: the Proposer interface that the run driver
// (driver/driver.h) pulls candidates from, and the EvaluationService through
// which a proposer that needs results before it can go on (the agent's tools)
// sees the run.
//
// The driver owns a run's lifecycle: it opens or resumes the run folder,
// evaluates the initial kernel and the baseline, compiles ahead of the GPU,
// checks and times every candidate, records it, applies the stop conditions,
// re-times the finalists and writes the summary, best.cu and the reports. A
// proposer only proposes and observes:
//
//   proposer.prepare(device_constants)     before anything is written
//   proposer.start(service)                once the run folder is open (a
//                                          compile-only listing has none)
//   proposer.observe_recorded(attempt)     for each attempt a resumed run already has
//   loop: proposer.propose() -> candidate | wait | done
//         ... the driver evaluates and records the candidate ...
//         proposer.observe(candidate, attempt)
//   proposer.finish()                      when the driver stops asking
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/attempt.h"
#include "model/budget.h"
#include "model/device_info.h"
#include "search/strategy.h"
#include "spec/candidate.h"
#include "spec/expr.h"
#include "spec/spec.h"

namespace kopt::propose {

/// Screening's second stage (spec::Candidate::screen_median_ms): a case whose
/// median over its first eval::kScreenLaunches timed launches is more than
/// this times the fastest candidate median known there is not timed further
/// (whatever the screen factor, which is at least 1: below this, the probe's
/// limit is the tighter). A candidate that much slower on a case cannot be the
/// fastest there, nor a shape-specialised variant (which must beat the best by
/// --specialize-threshold, 3% by default); the other 2% cover the drift of a
/// kernel's median between two timings in one run (at most 1.1% between the
/// gallery's re-timing rounds, docs/gallery.md). A median of ten launches is
/// steadier than the one probe launch of the first stage, so the margin can be
/// tight; the finalists' re-timing times every finalist in full again.
constexpr double kScreenMedianFactor = 1.05;

/// One answer of Proposer::propose().
struct Proposal {
  enum class Kind {
    candidate,  // evaluate `candidate`
    wait,       // nothing until a candidate already proposed has been observed
    done,       // nothing more, ever
  };
  Kind kind = Kind::done;
  spec::Candidate candidate;

  static Proposal of(spec::Candidate c) { return {Kind::candidate, std::move(c)}; }
  static Proposal wait() { return {Kind::wait, {}}; }
  static Proposal done() { return {Kind::done, {}}; }
};

/// The run as the driver keeps it, for proposers. Every accessor reads the
/// driver's state; call them only from the thread the driver calls the
/// proposer on, or while the driver waits in propose() (the agent's
/// conversation thread does exactly that).
class EvaluationService {
 public:
  virtual ~EvaluationService() = default;
  virtual const spec::Spec& spec() const = 0;
  /// The GPU, or nullopt in compile-only mode (no GPU; --arch given).
  virtual const std::optional<model::DeviceInfo>& device() const = 0;
  /// The architecture candidates are compiled for ("sm_90").
  virtual const std::string& arch() const = 0;
  /// Why there is no GPU (empty when there is one).
  virtual const std::string& no_device_reason() const = 0;
  bool compile_only() const { return !device().has_value(); }
  /// The limits tuning constraints may name (MAX_SHARED_PER_BLOCK...).
  virtual spec::Bindings device_constants() const = 0;
  /// Every recorded attempt, in order (resumed ones included).
  virtual const std::vector<model::Attempt>& history() const = 0;
  /// The fastest ok candidate or initial kernel, if any.
  virtual const model::Attempt* best() const = 0;
  virtual std::optional<double> reference_geomean_ms() const = 0;
  virtual std::optional<double> initial_geomean_ms() const = 0;
  /// The run folder (a proposer may keep its own files in a subfolder).
  virtual const std::filesystem::path& run_dir() const = 0;
  /// Wall-clock minutes since the run started (this session).
  virtual double minutes_elapsed() const = 0;
  /// The run's budget (model/budget.h), the one value the driver enforces:
  /// for what a proposer tells (a prompt, a share per shape class).
  virtual const model::Budget& budget() const = 0;
  /// What is left of it now, as the driver's stop conditions count it.
  virtual model::BudgetLeft budget_left() const = 0;
  /// Profiling, an observer on one evaluation: `candidate` is compiled and
  /// run once on the case `case_name` (checked, not timed, not recorded) by
  /// a worker of the run's worker plan started under Nsight Compute, on the
  /// device of the initial kernel; `files` (a folder) receives ncu's output
  /// (ncu.txt). Returns the counters ({"available": true, "kernel",
  /// "metrics", "rules"}, eval/ncu.h) or {"available": false, "reason":
  /// "profiling unavailable: ..."} (no GPU, no ncu, counters not permitted,
  /// the candidate failed). Called from the proposer's thread while the
  /// driver waits in propose(); throws only for a broken environment.
  virtual nlohmann::json profile(const spec::Candidate& candidate, const std::string& case_name,
                                 const std::filesystem::path& files) = 0;
};

/// A run from a description alone: what a proposer that drafts the workload
/// (the agent) gets before any spec or run folder exists.
struct DraftContext {
  std::string description;
  std::optional<model::DeviceInfo> device;  // nullopt: compile-only
  std::string arch;
  std::filesystem::path staging;  // a fresh folder; the driver moves its files into the run folder
  /// When the run began: the budget's minutes count from it (the drafting is part of the run).
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  /// Compiles the drafted workload's reference and initial kernels (with a
  /// GPU, runs the reference's self-check): {"checks": {...}} when they pass,
  /// {"error": "..."} when not.
  std::function<nlohmann::json(const spec::Spec&)> check_workload;
  /// The run's budget, and what is left of it while drafting (its minutes
  /// count from the drafting's start; the run that follows goes on counting).
  const model::Budget* budget = nullptr;
  std::function<model::BudgetLeft()> budget_left;
};

/// How the driver finishes a run of this proposer.
struct FinishPolicy {
  /// Re-time the top candidates interleaved and specialise per shape.
  bool retime = true;
  /// Without a GPU: record every candidate as compiled in a run folder (true),
  /// or only compile the proposals and list them, without a run folder (false).
  bool compile_only_run_folder = false;
};

class Proposer {
 public:
  virtual ~Proposer() = default;

  /// The name recorded as the run's strategy ("surrogate", "agent"...).
  virtual std::string name() const = 0;

  /// Stop conditions of the proposer's own (the agent: its conversation has
  /// ended). The driver composes them with those of the budget
  /// (evaluations, minutes, patience) and checks them before every proposal.
  virtual std::vector<std::unique_ptr<search::StopCondition>> stop_conditions() { return {}; }

  /// True when the proposer applies Budget::patience itself (the shape
  /// classes: within each class), reading it through the service; the
  /// driver then has no run-wide patience condition.
  virtual bool applies_patience() const { return false; }

  /// The budget as run.json and summary.json record it (Budget::to_json,
  /// plus what the proposer adds).
  virtual nlohmann::json budget_json(const model::Budget& b) const { return b.to_json(); }

  virtual FinishPolicy finish_policy() const { return {}; }

  /// The device is known (or compile-only mode chosen) and nothing is written
  /// yet: check what can be checked, so that bad input leaves no run folder
  /// behind (a parameter space without a valid configuration throws here).
  virtual void prepare(const spec::Bindings& device_constants) { (void)device_constants; }

  /// Drafts the workload into context.staging and returns the spec file
  /// written there (its kernel files beside it), or nullopt when none came out
  /// (exit_code() then says how the run ends). Only proposers that can draft
  /// override it.
  virtual std::optional<std::filesystem::path> draft_workload(const DraftContext& context) {
    (void)context;
    return std::nullopt;
  }

  /// The run folder is open. `service` outlives the proposer's use of it.
  virtual void start(EvaluationService& service) = 0;

  /// An attempt recorded by an earlier session of a resumed run (kind
  /// "candidate" only); it is never proposed again.
  virtual void observe_recorded(const model::Attempt& attempt) = 0;

  /// The next candidate, `wait` while results are outstanding, or `done`.
  /// May block (the agent waits for its model). `wait` is only allowed while
  /// a proposed candidate has not been observed yet.
  virtual Proposal propose() = 0;

  /// A candidate propose() returned is about to go to a worker (it may have
  /// waited in the compile-ahead queue while other results came in): the
  /// proposer may update what it derived from results, such as screening
  /// limits (spec::Candidate::screen_ms). Its parameters and source must
  /// not change: they were compiled. Returning false withdraws it: it is not
  /// evaluated, recorded or observed (a shape class whose time is up).
  virtual bool before_start(spec::Candidate& candidate) {
    (void)candidate;
    return true;
  }

  /// The recorded result of a candidate propose() returned, once it is
  /// recorded, in the order the results arrive, which need not be the proposal
  /// order even with one worker. Compiles run ahead, and a candidate whose
  /// compile is done starts before an earlier one still compiling
  /// (driver::Runner::start_when_compiled; a replay and a compile-only run
  /// keep the proposal order); with several workers (--devices) each result
  /// comes when its worker is done. Each candidate is observed at most once,
  /// with the result of its last run (one taken back from a lost device, or
  /// run once more after its worker died, runs again first). Never observed:
  /// one withdrawn by before_start, one still queued when the search ends (a
  /// stop condition, SIGINT), one whose device was the last to be lost.
  virtual void observe(const spec::Candidate& candidate, const model::Attempt& attempt) = 0;

  /// The driver asks for nothing more (a stop condition, or done); the
  /// proposer ends its own work. Called once, also when the run ends by an
  /// exception.
  virtual void finish() {}

  /// The candidate that reproduces an attempt of this proposer (for the
  /// re-timing and best.cu), or nullopt when the driver should rebuild it
  /// from the recorded source and its kopt: annotations.
  virtual std::optional<spec::Candidate> candidate_for(const model::Attempt& attempt) const = 0;

  /// What the progress line says of the search instead of the run's best
  /// (empty: the best geomean and its ratios), e.g. the current shape class.
  virtual std::string progress() const { return {}; }

  /// Keys this proposer adds to summary.json (they win over the driver's).
  virtual nlohmann::json summary() const { return nlohmann::json::object(); }

  /// An exit code that overrides the driver's (e.g. 3: the LLM API failed).
  virtual std::optional<int> exit_code() const { return std::nullopt; }
};

/// A proposer as the driver gets it from the registry (driver/proposers.h).
using ProposerPtr = std::unique_ptr<Proposer>;

}  // namespace kopt::propose
