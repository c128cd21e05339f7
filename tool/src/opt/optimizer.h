// `kopt optimize`: searches a tunable template's parameter space, evaluates
// every candidate through the harness, records every attempt in a run folder,
// and names the fastest candidate that passed every case.
//
// Pipeline: the strategy proposes configurations; a pool of NVRTC compiles
// works ahead of the GPU (compilation overlaps evaluation); each compiled
// candidate is checked and timed in the worker; the result is recorded
// (atomically) and observed by the strategy. At the end the top candidates
// are re-timed interleaved, to cancel drift, before the best is named.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/agent.h"
#include "cuda/device.h"
#include "eval/evaluator.h"
#include "spec/spec.h"

namespace kopt::opt {

struct OptimizeOptions {
  std::filesystem::path spec;            // --spec (required)
  std::filesystem::path template_source; // --template (default: the spec's "template")
  std::filesystem::path initial_kernel;  // --initial-kernel (e.g. a previous run's best.cu)
  std::filesystem::path reference;       // --reference: a reference kernel .cu (annotations give entry/launch)
  std::filesystem::path input_cases;     // --input-cases: JSON array of cases replacing the spec's
  std::string description;               // --description (recorded; the agent proposer uses it)
  std::string strategy;                  // --strategy (default: by space size)
  int64_t max_evaluations = 0;           // --budget evals=N / --max-iterations N (0: no limit)
  double max_minutes = 0;                // --budget minutes=M (0: no limit)
  int64_t patience = 0;                  // stop after N evaluations without improvement (0: off)
  std::filesystem::path results_dir = "results";
  std::filesystem::path resume;          // --resume RUN_DIR
  uint64_t seed = 1;
  int device = 0;
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
  int compile_threads = 0;               // 0: hardware threads - 1 (at least 1)
  std::filesystem::path cache_dir;       // NVRTC cache
  std::vector<std::string> worker_argv;  // how to start `kopt worker`
  bool quiet = false;
  agent::AgentOptions agent;             // --strategy agent|hybrid: the LLM agent's options (agent/agent.h)
};

/// Runs an optimization. Returns the CLI exit code: 0 a best kernel was found,
/// 1 no candidate passed, 77 no GPU (after compiling the candidates when --arch
/// was given). Throws SpecError/UsageError for bad input (exit 2), before any
/// GPU work where possible (an empty or contradictory parameter space, a zero
/// budget, a --resume folder from another spec).
/// Data (the summary) goes to stdout; progress to stderr.
/// `run_dir`, when given, receives the run folder's path.
int optimize(const OptimizeOptions& options, std::filesystem::path* run_dir = nullptr);

/// How optimize() (and the agent) set up the evaluator: the worker command,
/// the NVRTC cache, --arch; candidates timed, the reference not (it is timed
/// once, beside the initial kernel).
eval::EvaluatorOptions evaluator_options(const OptimizeOptions& o);

/// The device limits that tuning constraints may name (MAX_SHARED_PER_BLOCK,
/// MAX_THREADS_PER_BLOCK, REGS_PER_SM, SM_COUNT, WARP_SIZE). Without a device
/// (`d` null: compile-only) the values of an H100/H200 (sm_90) are assumed.
spec::Bindings device_constants(const model::DeviceInfo* d);

/// The spec as optimize() sees it: the file plus the --reference,
/// --initial-kernel, --template and --input-cases overrides.
spec::Spec load_spec_with_overrides(const OptimizeOptions& options);

}  // namespace kopt::opt
