// Where a run's evaluations happen: the run driver (driver/driver_impl.h)
// sends every evaluation through one Runner, whatever the proposer, as
// Kernel Tuner splits its runners (a GPU, or the simulation of a recorded
// cache) from its strategies. Today's runner is the GPU worker pool
// (make_worker_runner, eval/evaluator_pool.h); a replay of a recorded space
// (a run folder, T4 results, a Kernel Tuner cache) is a second
// implementation of the same interface, under the same search loop, budget
// and finalists (docs/architecture.md, "The runner").
//
// A runner has slots (one per worker: per device of the worker plan); the
// pipeline starts a compiled candidate on an idle slot and collects results
// as they finish; the initial kernel, the baseline, the finalists' re-timing
// and profiles run one at a time on the primary slot (the first live one).
#pragma once

#include <chrono>
#include <cstddef>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda/nvrtc.h"
#include "eval/evaluator.h"
#include "model/device_info.h"
#include "model/result.h"
#include "model/worker_plan.h"
#include "spec/candidate.h"
#include "spec/spec.h"

namespace kopt::driver {

/// One slot of a runner, as the driver reports it (summary.json "tuner" "devices").
struct RunnerSlot {
  int device = 0;       // the CUDA ordinal (recorded as Result::device)
  std::string name;     // "device 1", for messages
  std::string gpu;      // the device's name ("NVIDIA H200"); empty when it never answered
  std::string uuid;     // empty when unknown
  std::string dropped;  // why the slot was dropped; empty while it serves
};

/// A candidate started on a slot has finished (or could not run there).
struct RunnerDone {
  size_t slot = 0;
  spec::Candidate candidate;
  model::Result result;
  /// Non-empty when the slot's device seems lost (its worker cannot be
  /// restarted, or does not answer after a crash or a timeout): the candidate
  /// was not the cause. `result` still holds the verdict.
  std::string lost;
  /// An exception that is not the slot's (a spec error, an interrupted wait):
  /// the driver ends the run with it.
  std::exception_ptr error;
  std::chrono::steady_clock::time_point sent, finished;
};

class Runner {
 public:
  virtual ~Runner() = default;

  // --- set-up
  /// Starts the slots and returns the primary slot's device. Throws
  /// NoDeviceError when there is none (the driver then compiles only, where
  /// --arch was given), EnvironmentError when the slots cannot be started.
  virtual model::DeviceInfo open() = 0;
  /// The architecture candidates are compiled for.
  virtual std::string arch() = 0;
  /// Compiles one candidate (NVRTC, through the cache). Thread-safe once
  /// arch() has been called: the pipeline compiles on a thread pool.
  virtual cuda::CompileResult compile(const spec::Candidate& c) = 0;
  /// While `stopped`, compiles that are running or about to start end at
  /// once without a result (cuda::Compiler::stop): the search has ended and
  /// nobody waits for them. Default: nothing to stop.
  virtual void stop_compiles(bool stopped) { (void)stopped; }
  /// compile(c) in parts that may run on several threads at once
  /// (eval::Evaluator::compile_parts: one per distinct set of case defines):
  /// how many, part i, and the parts' results joined into compile(c)'s.
  /// Thread-safe like compile(). Default: one part, compile(c) itself.
  virtual size_t compile_parts(const spec::Candidate& c) {
    (void)c;
    return 1;
  }
  virtual cuda::CompileResult compile_part(const spec::Candidate& c, size_t i) {
    (void)i;
    return compile(c);
  }
  virtual cuda::CompileResult join_parts(const spec::Candidate& c, std::vector<cuda::CompileResult> parts) {
    (void)c;
    return std::move(parts.at(0));
  }
  /// True: the pipeline may start a candidate whose compile is done before
  /// an earlier proposed one whose compile is not (real compiles take from
  /// a fraction of a second to a minute by configuration, and a slow one
  /// would hold up the GPU and every later candidate). False (the default):
  /// candidates start in the order proposed, as a replay must, so that it
  /// is reproducible.
  virtual bool start_when_compiled() const { return false; }

  // --- the search's candidates, spread over the slots
  virtual size_t size() const = 0;
  virtual RunnerSlot slot(size_t i) const = 0;
  /// Live, and nothing started on it.
  virtual bool idle(size_t i) const = 0;
  virtual size_t live_count() const = 0;
  /// The first live slot; size() when none is left.
  virtual size_t primary() const = 0;
  /// Slot i is never used again (says so, with `why`).
  virtual void drop(size_t i, const std::string& why) = 0;
  /// Starts the compiled `c` on the idle slot i; returns at once.
  virtual void start(size_t i, spec::Candidate c, cuda::CompileResult compiled) = 0;
  /// The next result of any started slot, in the order they finish.
  virtual RunnerDone wait_any() = 0;

  // --- one at a time, on the primary slot
  /// Compiles, checks and (as the spec says) times `c`; the reference timed
  /// beside it when `time_reference`.
  virtual model::Result evaluate(const spec::Candidate& c, bool time_reference) = 0;
  /// The cuBLAS baseline (FP32, no TF32) as a candidate (eval::Evaluator::evaluate_cublas_baseline).
  virtual model::Result evaluate_baseline() = 0;
  /// propose::EvaluationService::profile: `c` run once on `case_name` under
  /// Nsight Compute (eval/ncu.h), its output in `files`; the counters, or
  /// {"available": false, "reason"}.
  virtual nlohmann::json profile(const spec::Candidate& c, const std::string& case_name,
                                 const std::filesystem::path& files) = 0;

  /// The clock the run's minutes (its budget, minutes_elapsed) are read on:
  /// the wall clock here; a replay's is the time of what it replayed.
  virtual std::chrono::steady_clock::time_point now() const { return std::chrono::steady_clock::now(); }
};

/// The GPU runner: one worker per device of `plan` (eval::plan_workers),
/// each an eval::Evaluator set up from `base` (eval::on_worker).
std::unique_ptr<Runner> make_worker_runner(const spec::Spec& spec, const eval::EvaluatorOptions& base,
                                           const model::WorkerPlan& plan);

}  // namespace kopt::driver
