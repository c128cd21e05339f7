// One evaluated kernel as the run folder records it (history.json, candidates/NNNN/):
// plain data that the run store, the report, the proposers and the driver share.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/result.h"

namespace kopt::model {

/// One evaluated kernel.
struct Attempt {
  int index = 0;                          // 1-based, in evaluation order
  std::string kind = "candidate";         // "reference" | "initial" | "candidate"
  std::string label;                      // e.g. "BM=128,BN=64" or "naive.cu"
  std::map<std::string, int64_t> params;  // tuning parameters (may be empty)
  std::string source;                     // the kernel source as compiled (without -D params)
  std::vector<std::string> compile_options;
  Result result;                          // verdict, per-case latencies, compile log...
  double seconds_since_start = 0;         // when it finished, relative to the run's start

  /// The history.json entry: no source, no compile log, no raw per-launch
  /// samples (result.json in the candidate folder has those; open() restores
  /// them from there).
  nlohmann::json to_json() const;
  static Attempt from_json(const nlohmann::json& j);
};

/// The median latency (ms) of case `case_name` in `a`, when it was timed and
/// is finite and positive.
std::optional<double> case_median_ms(const Attempt& a, const std::string& case_name);

/// The performance cases `a` was timed on (screened ones too: their probe),
/// sorted by name. With shape classes a candidate is timed on its class's
/// cases alone (propose/class_search.h); the initial kernel on all.
std::vector<std::string> timed_performance_cases(const Attempt& a);

/// Result::to_json, optionally without the compile log and the raw samples:
/// history.json (rewritten at every attempt) takes the short form, each
/// candidate's result.json the full one.
nlohmann::json result_json(const Result& r, bool full);
/// Latency statistics without the raw samples, as history.json and summary.json hold them.
nlohmann::json latency_json(const LatencyStats& s);
/// Tuning parameters as a JSON object.
nlohmann::json params_json(const std::map<std::string, int64_t>& params);

}  // namespace kopt::model
