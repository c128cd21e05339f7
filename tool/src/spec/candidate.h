// A candidate kernel as a proposer, the driver or the CLI has it: source,
// entry, launch, compile options and tuning parameters. Plain data.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "spec/spec.h"

namespace kopt::spec {

/// A candidate kernel as the optimizer or the CLI has it.
struct Candidate {
  std::string label = "candidate";
  std::string source;                     // CUDA C++ source
  std::string source_name = "kernel.cu";  // for compiler messages
  std::string entry;                      // empty: from annotations, else the spec's initial
  std::optional<Launch> launch;     // empty: annotations, else spec.initial, else spec.launch
  std::vector<std::string> options;       // extra NVRTC options
  std::map<std::string, int64_t> params;  // tuning parameters: -D defines and expression names
  /// Shape-class search (driver/classes.h): non-empty, only these performance
  /// cases are checked and timed; correctness cases always are.
  std::vector<std::string> performance_cases;
  /// Screening: performance case -> a limit (ms). The case's probe launch
  /// slower than it ends the case's timing there (model::CaseResult::screened).
  std::map<std::string, double> screen_ms;
  /// Screening's second stage: performance case -> a limit (ms) for the
  /// median of the first eval::kScreenLaunches timed launches; over it, the
  /// case's timing ends there.
  std::map<std::string, double> screen_median_ms;
};

}  // namespace kopt::spec
