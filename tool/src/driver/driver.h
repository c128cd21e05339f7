// The run driver: `kopt optimize`, for every proposer alike.
//
// One run, one lifecycle (driver/driver_impl.h has the phases):
//   1. set-up     the spec with the command line's overrides, the evaluator,
//                 the device (or compile-only mode with --arch and no GPU),
//                 the proposer (driver/proposers.h) prepared before any file is
//                 written, so that a bad space or budget leaves nothing behind;
//   2. run folder created, or resumed: what is recorded is observed, never
//                 re-evaluated;
//   3. initial    the initial kernel with the reference timed beside it, and
//                 the cuBLAS baseline where the workload is GEMM-shaped;
//   4. pipeline   the proposer's candidates are compiled on a thread pool
//                 ahead of the GPU, checked and timed in the worker, recorded
//                 atomically and observed, until a stop condition holds or the
//                 proposer is done;
//   5. finalists  the top candidates (and each performance case's fastest)
//                 re-timed interleaved, to cancel drift; per-case variants
//                 where one beats the single best by more than a threshold;
//   6. finish     summary.json, best.cu, variants/v<N>.cu, heatmap.svg and
//                 report.html; the summary on stdout, progress on stderr.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "model/budget.h"
#include "model/worker_plan.h"
#include "spec/candidate.h"
#include "spec/spec.h"

namespace kopt::driver {

class Runner;

/// --compile-timeout's default, seconds: an NVRTC compile of a tuned kernel
/// takes a fraction of a second to a few seconds; one past a minute (deep
/// unrolling of a large tile) is stopped and recorded as a compile error.
inline constexpr double kDefaultCompileTimeoutS = 60;

struct OptimizeOptions {
  std::filesystem::path spec;            // --spec (required, except for the agent with --description)
  std::filesystem::path template_source; // --template (default: the spec's "template")
  std::filesystem::path initial_kernel;  // --initial-kernel (e.g. a previous run's best.cu)
  std::filesystem::path reference;       // --reference: a reference kernel .cu (annotations give entry/launch)
  std::filesystem::path input_cases;     // --input-cases: JSON array of cases replacing the spec's
  std::string description;               // --description (recorded; the agent proposer uses it)
  std::string strategy;                  // --strategy (default: by space size)
  /// --warm-start FILE: T4 results or a Kernel Tuner cache; its configurations
  /// that fit the space are evaluated first (docs/interop.md).
  std::filesystem::path warm_start;
  /// --budget, --max-iterations, --token-budget (model/budget.h): the one
  /// value the driver's stop conditions enforce; checked against the
  /// proposer by make_proposer (driver/proposers.h).
  model::Budget budget;
  std::filesystem::path results_dir = "results";
  std::filesystem::path resume;          // --resume RUN_DIR (alone: the spec is RUN_DIR/spec.json)
  std::string resume_note;               // what the CLI took from RUN_DIR (said once the folder is locked)
  uint64_t seed = 1;
  std::string arch;                      // --arch: compile for it; with no GPU, compile only
  int top = 3;                           // candidates re-timed at the end
  int retime_rounds = 3;                 // interleaved rounds of that re-timing
  /// Shape specialisation: each performance case may get its own fastest
  /// configuration (a variant) when it beats the single best configuration on
  /// that case by more than `specialize_threshold` (a fraction) in the final
  /// re-timing. summary.json "specialization" and variants/v<N>.cu record
  /// them; variant 0 is the single best (best.cu).
  bool specialize = true;
  double specialize_threshold = 0.03;
  /// --shape-classes N|auto|off: the performance cases grouped into N shape
  /// classes, each searched in turn with its share of the budget
  /// (propose/class_search.h); -1 auto (model::auto_shape_classes), 0 off.
  int shape_classes = -1;
  /// --screen-factor X: a case whose probe launch is slower than X times the
  /// best candidate median known there (with shape classes also 4x the
  /// cuBLAS baseline's when lower: ClassSearchOptions) is not timed further
  /// (0: off).
  double screen_factor = 2.0;
  int compile_threads = 0;               // 0: hardware threads - 1 (at least 1)
  /// --compile-ahead N: candidates proposed and queued for compiling ahead of
  /// the GPU; 0 (auto): as many as keep the GPU fed (driver/pipeline.cpp,
  /// compile_ahead_depth), at most twice the compile threads.
  int compile_ahead = 0;
  /// How to start a compiler process (`kopt compile-worker`; empty: NVRTC in
  /// this process, no time limit) and --compile-timeout SECONDS, the limit of
  /// one compile there (0: none): cuda::CompilerOptions.
  std::vector<std::string> compile_argv;
  double compile_timeout_s = kDefaultCompileTimeoutS;
  std::filesystem::path cache_dir;       // NVRTC cache
  /// --device / --devices, --worker-launcher, --worker-command
  /// (model/worker_plan.h): every worker of the run is started from it.
  model::WorkerPlan workers;
  /// Where every evaluation goes (driver/runner.h). Empty: the GPU workers of
  /// `workers`. A replay of a recorded space, or a test's table, makes its
  /// own runner here; the search loop, the budget and the finalists are the
  /// same.
  std::function<std::unique_ptr<Runner>(const spec::Spec&)> runner;
  /// The parameter search's space holds only the configurations this
  /// accepts, beside the spec's constraints (a replay's: the recorded ones;
  /// Space::restricted_to). Empty: every valid configuration.
  std::function<bool(const std::map<std::string, int64_t>&)> space_filter;
  /// The run is kept in memory (a replay's runs, replay/replay.h): no run
  /// folder, nothing on stdout; the search, the budget and the finalists are
  /// the same. Not with `resume`.
  bool in_memory = false;
  bool quiet = false;
  agent::AgentOptions agent;             // --strategy agent|hybrid: the LLM agent's options (agent/agent.h)
};

/// Runs an optimization. Returns the CLI exit code: 0 a best kernel was found,
/// 1 no candidate passed, 3 the LLM API failed for good (agent; the run folder
/// is still complete), 77 no GPU (after compiling the candidates when --arch
/// was given), 130 / 143 stopped by SIGINT / SIGTERM: the candidate on the GPU
/// finished and was recorded, the rest dropped, summary.json, best.cu and the
/// report written for what is recorded, and `kopt optimize --resume RUN`
/// printed (a second signal exits at once; util/interrupt.h).
/// With `resume` and no `spec`, the spec is the run folder's spec.json.
/// A run folder is written by one process at a time: --resume of a folder
/// another process holds throws UsageError(kopt.run.908) before any work. Throws SpecError/UsageError for bad input (exit 2), before any
/// GPU work where possible (an empty or contradictory parameter space, a zero
/// budget, a --resume folder from another spec or another grouping of shape
/// classes).
/// Data (the summary) goes to stdout; progress to stderr.
/// `run_dir`, when given, receives the run folder's path.
int optimize(const OptimizeOptions& options, std::filesystem::path* run_dir = nullptr);

/// The spec as optimize() sees it: the file plus the --reference,
/// --initial-kernel, --template and --input-cases overrides.
spec::Spec load_spec_with_overrides(const OptimizeOptions& options);

/// The template of `s` as a candidate: its source, entry, launch and compile
/// options; params are set per configuration. Throws SpecError(kopt.opt.002)
/// when it has no launch.
spec::Candidate template_candidate(const spec::Spec& s);

/// The initial kernel of `s` as a candidate (spec "initial" or
/// --initial-kernel), with the parameters a previous run's best.cu carries as
/// kopt:param lines; nullopt when the spec has none.
std::optional<spec::Candidate> initial_candidate(const spec::Spec& s);

}  // namespace kopt::driver
