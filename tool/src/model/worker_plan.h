// Where and how a run's GPU workers are started: one value, made by the CLI
// from `--device`, `--devices`, `--worker-launcher` and `--worker-command`
// (cli/common.h, Environment::worker_plan), and turned into worker command
// lines by eval::plan_workers (eval/evaluator_pool.h) wherever a worker is
// started: the run driver's workers, the drafting probe, the profiler.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace kopt::model {

struct WorkerPlan {
  /// CUDA ordinals, one worker each, in this order (`--device N`: {N};
  /// `--devices 0,1`: {0, 1}). The first live one also runs the initial
  /// kernel, the baseline, the finalists' re-timing and the profiles. A
  /// number may repeat only with a launcher (one per host).
  std::vector<int> devices = {0};
  /// The worker command line; "{device}" in a word is replaced by the
  /// ordinal. `kopt worker --device {device}` (made by the CLI), or
  /// `--worker-command`'s words (tests: the fake worker).
  std::vector<std::string> command;
  /// `--worker-launcher`'s words (eval::split_launcher): each worker is
  /// started as them, then the command (eval::plan_workers says how
  /// "{device}", "{index}" and "{worker}" are replaced). Empty: started directly.
  std::vector<std::string> launcher;

  /// The most workers a plan may have (a --devices list longer than this is
  /// refused: every worker is a process and a thread).
  static constexpr size_t kMaxWorkers = 1024;

  /// More than one worker: candidates are spread over them (docs/multi-gpu.md).
  bool several() const { return devices.size() > 1; }
};

}  // namespace kopt::model
