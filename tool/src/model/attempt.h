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

/// What an attempt was: history.json's "kind". Stable strings (attempt_kind_name); never renumber.
enum class AttemptKind {
  initial,    // the spec's initial kernel (or --initial-kernel), evaluated first
  baseline,   // a library baseline timed beside the candidates (cuBLAS for GEMM-shaped work)
  candidate,  // a kernel a proposer proposed
  reference,  // the reference timed as an attempt of its own (runs of older kopt versions)
};

/// Every kind, in declaration order (a test checks that none is missing).
inline constexpr AttemptKind kAllAttemptKinds[] = {AttemptKind::initial, AttemptKind::baseline,
                                                   AttemptKind::candidate, AttemptKind::reference};

// JSON of an AttemptKind is its name (json(a.kind) == "candidate"), never its number.
NLOHMANN_JSON_SERIALIZE_ENUM(AttemptKind, {{AttemptKind::initial, "initial"},
                                           {AttemptKind::baseline, "baseline"},
                                           {AttemptKind::candidate, "candidate"},
                                           {AttemptKind::reference, "reference"}})

/// "initial", "baseline", "candidate", "reference".
const char* attempt_kind_name(AttemptKind k);
/// The kind named `s`, or nullopt for a name that is none.
std::optional<AttemptKind> parse_attempt_kind(const std::string& s);

/// One evaluated kernel.
struct Attempt {
  int index = 0;                               // 1-based, in evaluation order
  AttemptKind kind = AttemptKind::candidate;
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

/// The one rule for "the best attempt", which the run store (summary.json
/// "best", best.cu), the driver's finalists and the report share: an attempt
/// competes when it is the initial kernel or a candidate, its verdict is ok
/// and its geomean is finite and positive; the best is the competing attempt
/// with the lowest geomean, the earliest on a tie.
bool competes_for_best(const Attempt& a);
/// Whether competing attempt `a` beats competing attempt `b` (lower geomean).
bool better_attempt(const Attempt& a, const Attempt& b);
/// The best attempt of `history` by that rule, or nullptr when none competes.
const Attempt* best_attempt(const std::vector<Attempt>& history);

/// The first attempt of `kind` whose verdict is ok, or nullptr.
const Attempt* first_ok(const std::vector<Attempt>& history, AttemptKind kind);

/// The median latency (ms) of case `case_name` in `a`, when it was timed and
/// is finite and positive.
std::optional<double> case_median_ms(const Attempt& a, const std::string& case_name);

/// The performance cases `a` was timed on (screened ones too: their probe),
/// sorted by name. With shape classes a candidate is timed on its class's
/// cases alone (propose/class_search.h); the initial kernel on all.
std::vector<std::string> timed_performance_cases(const Attempt& a);

/// Whether screening stopped the timing of one of `a`'s cases (its latency
/// there is its probe launch or its first launches; docs/search.md, "Screening").
bool has_screened_case(const Attempt& a);

/// Screening's record of the fastest medians: lowers fastest[case] to each of
/// `a`'s unscreened performance-case medians (finite and positive) and returns
/// how many of its cases were screened. The caller decides which attempts
/// count (ok candidates).
int64_t fold_fastest_medians(const Attempt& a, std::map<std::string, double>& fastest);

/// Result::to_json, optionally without the compile log and the raw samples:
/// history.json (rewritten at every attempt) takes the short form, each
/// candidate's result.json the full one.
nlohmann::json result_json(const Result& r, bool full);
/// Latency statistics without the raw samples, as history.json and summary.json hold them.
nlohmann::json latency_json(const LatencyStats& s);
/// Tuning parameters as a JSON object.
nlohmann::json params_json(const std::map<std::string, int64_t>& params);

}  // namespace kopt::model
