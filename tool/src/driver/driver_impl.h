// The run driver's phases (internal to driver/; driver/driver.h is the interface).
// One Driver runs one optimization: set-up (setup.cpp), the initial kernel and
// the baseline (initial.cpp), the compile-ahead pipeline (pipeline.cpp), the
// finalists' re-timing and the shape variants (finalists.cpp), and the
// summary, best.cu and reports (finish.cpp). It is the EvaluationService its
// proposer sees. Every evaluation goes through its Runner (driver/runner.h);
// the budget is enforced by its stop conditions alone (make_stop()).
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/evaluator.h"
#include "model/dispatch.h"
#include "propose/proposer.h"
#include "store/store.h"
#include "search/strategy.h"
#include "driver/driver.h"
#include "driver/runner.h"
#include "util/thread_pool.h"

namespace kopt::driver {

using Clock = std::chrono::steady_clock;

/// "1.234" (significant digits) for console lines.
std::string fmt(double v, int precision = 4);

/// The NVRTC compile threads for --compile-threads N (0: hardware threads - 1, at least 1).
unsigned compile_threads(int requested);

/// The `q` quantile (0..1) of `v` by nearest rank: the value at index
/// floor(q n) of the sorted values (q = 0.5: the upper median); NaN when `v`
/// is empty.
double quantile(std::vector<double> v, double q);

/// The compile-ahead depth: how many candidates to keep proposed and queued
/// for compiling ahead of the GPU, so that a candidate's compile is done when
/// a worker is free for it, and no more. A candidate queued now starts after
/// the `depth - 1` before it: with `workers` GPUs each taking `eval_ms` (the
/// median wall time of an evaluation, request to result) that is about
/// (depth - 1) * eval_ms / workers from now, which must cover its compile
/// (`compile_ms`: the 75th percentile of recent cache misses, a candidate's
/// parts summed), twice over for the spread: depth = ceil(2 * compile_ms *
/// workers / eval_ms) + 1, kept within [workers + 1, most]. The last 32
/// samples of each count; with fewer than 4 of either the answer is `most`
/// (a search's first proposals do not depend on results).
/// Why not always `most`: a proposal made ahead is made without the results
/// of those before it (replays needed about 1.4x the evaluations with 30
/// ahead as with 2: docs/search.md), and what a shape class has queued when
/// its time is up is compiled for nothing.
size_t compile_ahead_depth(const std::vector<double>& compile_ms, const std::vector<double>& eval_ms, size_t workers,
                           size_t most);

/// Queues the compile of `c` on `pool` as its parts (Runner::compile_parts),
/// one job each, so that the parts run side by side when threads are free;
/// the last part to finish joins them (Runner::join_parts), sets the future
/// and then calls `on_done` (when set). No job waits for another: a pool
/// thread that waited for jobs queued behind it could wait forever. An
/// exception of a part or of the join arrives through the future. Jobs the
/// pool drops (ThreadPool::discard_queued) leave the future broken.
std::future<cuda::CompileResult> submit_compile(ThreadPool& pool, Runner& runner, const spec::Candidate& c,
                                                std::function<void()> on_done = {});

/// The evaluator as the driver uses it: the worker command, the NVRTC cache,
/// --arch; candidates timed, the reference not (it is timed once, beside the
/// initial kernel).
eval::EvaluatorOptions evaluator_options(const OptimizeOptions& o);

/// How the pipeline spent the search's wall time (summary.json "tuner").
struct PipelineStats {
  int64_t evaluated = 0;
  double search_minutes = 0;
  double gpu_measured_ms = 0;        // time in measured launches (performance cases)
  std::vector<double> compile_ms;    // compiles that missed the cache
  int cache_hits = 0, compiles = 0, compiles_ready = 0;
  int withdrawn = 0;  // compiled, then withdrawn by the proposer before the GPU (Proposer::before_start)
  /// Configurations left out before compiling, over the device's limits
  /// (filtered_before_compile in proposers.h); nullopt when none could be.
  std::optional<store::TunerStats::Filtered> filtered;
  double compile_wait_ms = 0;
  double check_ms = 0, timing_ms = 0;  // worker wall time checking / in the timed loops
  double host_gap_ms = 0, worker_other_ms = 0;
  unsigned threads = 0;
  /// The compile-ahead depth at each refill of the queue (candidates proposed
  /// ahead of the GPU): summary.json "tuner" "compile_ahead" gives its median and maximum.
  std::vector<double> ahead;
  bool fixed_ahead = false;  // --compile-ahead N
  /// Per worker of the pool (summary.json "tuner" "devices").
  struct Device {
    int device = 0;
    std::string name, uuid, dropped;  // dropped: why, empty while it served
    int64_t evaluated = 0;
    double measured_ms = 0, busy_ms = 0;  // busy: request sent to result, summed
  };
  std::vector<Device> devices;

  /// summary.json "tuner".
  store::TunerStats record() const;
  /// One line of where the search's time went and which compiles gave no
  /// timing: compile time summed over the compile threads (cache misses),
  /// the GPU loop's wait for compiles, the worker's checking, timed loops and
  /// the rest, in minutes; compile errors and infeasible configurations
  /// (`counts`: summary.json "counts"), candidates withdrawn after
  /// compiling, and configurations filtered before compiling.
  std::string time_line(const std::map<std::string, int64_t>& counts) const;
};

/// The ranked finalists and what is known of each, in rank order: the
/// per-case medians (over re-timing rounds, else the search's own), whether
/// it failed a re-check, and the least blocks per SM of its timed launches
/// (INT_MAX when none was reported).
struct FinalistTable {
  std::vector<std::string> perf_cases;
  std::vector<const model::Attempt*> ranked;
  std::vector<std::map<std::string, double>> case_ms;
  std::vector<bool> failed;
  std::vector<int> occupancy;
  /// Shape classes: some finalist was timed on its class's cases alone.
  bool classed = false;
};

/// The finalists' outcome: the winner, the re-timing and the shape variants.
struct Finalists {
  const model::Attempt* winner = nullptr;
  std::vector<const model::Attempt*> variants;  // variant 0 = winner (only with specialisation)
  std::vector<store::RetimeEntry> retime;
  std::optional<store::Specialization> specialization;  // unset without variants
  /// Shape classes: the winner's re-timed geomean over every performance
  /// case (its search geomean covers its class's cases alone).
  std::optional<double> winner_all_cases_ms;
  double minutes = 0;  // wall time of the re-timing and the variants
};

class Driver final : public propose::EvaluationService {
 public:
  Driver(const OptimizeOptions& options, spec::Spec spec, propose::Proposer& proposer);

  /// Phases 2-6 (the evaluator and device come from open_device()). With
  /// `drafted` (a folder with spec.generated.json and its kernels), the run
  /// folder adopts its files and the spec is reloaded from there first.
  int run(std::filesystem::path* run_dir, const std::filesystem::path& drafted = {});

  /// The device a drafting run probed (draft.cpp), for run.json's
  /// device.json, and the drafting's start (the budget's minutes count from it).
  void preset_device(const propose::DraftContext& context);

  /// Phase 1's device part: starts the runner's workers (the worker plan)
  /// and reads the GPU; without one, compile-only mode when --arch was
  /// given, else rethrows NoDeviceError.
  void open_device();

  // EvaluationService
  const spec::Spec& spec() const override { return spec_; }
  const std::optional<model::DeviceInfo>& device() const override { return device_; }
  const std::string& arch() const override { return arch_; }
  const std::string& no_device_reason() const override { return no_device_; }
  spec::Bindings device_constants() const override;
  /// (A compile-only listing has no run folder: no history, no best, no run_dir.)
  const std::vector<model::Attempt>& history() const override;
  const model::Attempt* best() const override { return store_ ? store_->best() : nullptr; }
  std::optional<double> reference_geomean_ms() const override { return reference_geomean_; }
  std::optional<double> initial_geomean_ms() const override { return initial_geomean_; }
  const std::filesystem::path& run_dir() const override;
  double minutes_elapsed() const override;
  const model::Budget& budget() const override { return o_.budget; }
  model::BudgetLeft budget_left() const override;
  nlohmann::json profile(const spec::Candidate& candidate, const std::string& case_name,
                         const std::filesystem::path& files) override;

 private:
  // setup.cpp
  void open_store(std::filesystem::path* run_dir);
  // draft.cpp
  void adopt_draft(const std::filesystem::path& drafted);
  // initial.cpp
  void replay_history();
  void evaluate_initial();
  void evaluate_baseline();
  // pipeline.cpp
  void run_pipeline();
  /// The console line after attempt `a` (best so far, rate, ETA, the stop conditions' status).
  std::string progress_line(const model::Attempt& a, double search_minutes, bool several) const;
  // finalists.cpp
  Finalists choose_finalists();
  /// Re-times the table's finalists interleaved (`rounds` rounds, within the
  /// minutes budget), updating its per-case medians, occupancy and failures;
  /// fills f.retime and picks f.winner by the re-timed median geomean.
  void retime_finalists(FinalistTable& t, int rounds, Finalists& f);
  /// Shape specialisation: the variants (the winner, then each case's
  /// fastest finalist beyond the threshold) and the dispatch tree over them.
  void specialize_finalists(const FinalistTable& t, Finalists& f) const;
  /// Derives the dispatch tree's cost model (model/dispatch.h) where the
  /// template's launch has block_work and every variant's occupancy was
  /// measured; fills the samples' launches. Leaves the tree alone otherwise.
  void attach_dispatch_model(model::DispatchTree& tree, std::vector<model::DispatchSample>& samples,
                             const std::vector<size_t>& pool, const std::vector<const model::Attempt*>& ranked,
                             const std::vector<int>& occupancy,
                             const std::map<std::string, const spec::Case*>& case_of) const;
  // finish.cpp
  int finish(const Finalists& f);
  int compile_only_listing();
  /// SIGINT/SIGTERM before the run folder exists: says so, returns the exit code.
  int interrupted_before_start() const;

  /// Compile-only: the verdict `compiled` (or compile_error) for a compile.
  model::Result compile_only_result(const cuda::CompileResult& cr) const;
  /// Adds the reference's per-case latencies (timed once, with the initial
  /// kernel) and the speedup over it.
  void with_reference(model::Result& r) const;
  /// Records an attempt and keeps its candidate; returns the recorded copy.
  const model::Attempt& record(model::AttemptKind kind, const spec::Candidate& c, model::Result r);
  /// The candidate that reproduces an attempt: this session's, the
  /// proposer's, or one rebuilt from its recorded source.
  spec::Candidate candidate_of(const model::Attempt& a) const;
  std::vector<std::string> performance_case_names() const;

  // --- the budget (its one enforcer)
  /// The run's stop conditions: the budget's evaluations, its minutes (from
  /// the run's start, on the runner's clock) and its patience (unless the
  /// proposer applies patience itself, or `listing`: a compile-only listing
  /// times nothing, so nothing improves), composed with the proposer's own.
  std::unique_ptr<search::StopCondition> make_stop(bool listing);
  /// Counts one evaluation (a proposal, in a compile-only listing).
  void count_evaluation(const search::Observation& o);
  bool stop_fulfilled() const;
  /// The run's clock (the runner's; before it exists, the wall clock).
  Clock::time_point now() const { return runner_ ? runner_->now() : Clock::now(); }

  const OptimizeOptions& o_;
  spec::Spec spec_;
  propose::Proposer& proposer_;
  const Clock::time_point t_start_ = Clock::now();
  Clock::time_point budget_since_ = t_start_;  // a drafting run: the drafting's start

  /// Every evaluation's way to a GPU (driver/runner.h): the workers of the
  /// worker plan; the initial kernel, the baseline, the finalists'
  /// re-timing and profiles on its primary slot.
  std::unique_ptr<Runner> runner_;
  std::optional<model::DeviceInfo> device_;
  std::string arch_, no_device_;
  store::RunLock run_lock_;  // --resume: taken first, handed to store_ by open_store()
  std::optional<store::RunStore> store_;
  /// Guards stop_ between the driver's thread (updates) and a proposer's
  /// (budget_left(), the agent's conversation).
  mutable std::mutex stop_mu_;
  std::unique_ptr<search::StopCondition> stop_;
  std::optional<spec::Candidate> initial_;

  std::optional<double> reference_geomean_, initial_geomean_, cublas_geomean_;
  std::vector<model::CaseResult> reference_cases_;
  bool have_initial_ = false, have_baseline_ = false;
  std::map<int, spec::Candidate> candidates_;  // this session's, by attempt index
  PipelineStats stats_;
};

}  // namespace kopt::driver
