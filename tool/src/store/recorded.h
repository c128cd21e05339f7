// A recorded space: the configurations of a tuning space that were measured,
// each with what it gave (its objective, or how it failed) and what measuring
// it cost. `kopt replay` (replay/replay.h) searches one instead of a GPU.
//
// Three sources, told apart by what the path is:
//   - a kopt run folder (results/run-NNN): its candidates (history.json), the
//     objective their geometric mean over the performance cases, the cost
//     compile + check + timing (model::Result compile_ms, check_ms, timing_ms);
//     the value lists of its spec.json where they hold every recorded value;
//   - T4 results (`kopt export --format t4`, Kernel Tuner's
//     store_output_file): the measurement "time" (store/interop.h has the
//     reader), the cost times.compilation + validation + benchmark;
//   - a Kernel Tuner cache file (its `cachefile=`): "time", the cost
//     compile_time + verification_time + benchmark_time, what Kernel Tuner's
//     simulation mode charges.
// A configuration recorded twice counts once (the first; the rest are noted).
// The space is what was recorded: a sweep cut short is a smaller space.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "spec/spec.h"

namespace kopt::store {

/// What one configuration gave when it was recorded.
struct RecordedOutcome {
  /// "ok", or how it failed as the record says: a kopt verdict name
  /// ("compile_error"), a T4 invalidity ("compile"), a Kernel Tuner error
  /// name ("CompilationFailedConfig").
  std::string verdict;
  double ms = 0;       // ok: the objective, lower is better (ms)
  double seconds = 0;  // what evaluating it cost (s); 0: not recorded
  bool ok() const { return verdict == "ok"; }
};

struct RecordedSpace {
  std::string label;   // a short name: the file's stem, the run folder's name
  std::string source;  // what it was read from: "T4 results sgemm.t4.json"
  std::string format;  // "kopt run folder", "T4 results" or "Kernel Tuner cache"
  std::string device, kernel;  // where the record says (else empty)
  /// The parameters, each with its integer values. A parameter whose
  /// recorded values are not all integers is replayed on their positions
  /// 0, 1, ... (the order of the cache's tune_params, else first seen).
  std::vector<spec::TuningParam> params;
  /// Per parameter replayed on positions: the recorded values (JSON text) by position.
  std::map<std::string, std::vector<std::string>> positions;
  /// One entry per recorded configuration (the passing ones of a file first, as store::read_warm_start orders them).
  std::vector<std::pair<std::map<std::string, int64_t>, RecordedOutcome>> entries;
  /// What the reader left out or changed, one line each ("2 configurations
  /// recorded twice: the first of each counts").
  std::vector<std::string> notes;

  /// Every entry has a cost (the simulated clock and the score over time need them).
  bool timed() const;
  size_t failed() const;
};

/// Reads a recorded space from a run folder, T4 results or a Kernel Tuner
/// cache file (see the top of this file). Errors name the file and the JSON
/// path: what store::read_warm_start and RunStore::open throw for a file or
/// folder that cannot be read (kopt.io.*, kopt.json.*, kopt.interop.*,
/// kopt.run.901), and SpecError
///   kopt.replay.101  nothing was recorded (no candidate, no entry),
///   kopt.replay.102  no recorded configuration passed,
///   kopt.replay.103  an entry that passed records no time,
///   kopt.replay.104  entries with different parameters ($.results[3]: its
///                    parameters differ from $.results[0]'s),
///   kopt.replay.105  a run folder whose candidates were timed on different
///                    performance cases (searched in shape classes): their
///                    objectives are not comparable.
RecordedSpace read_recorded_space(const std::filesystem::path& path);

/// The space as a Kernel Tuner cache file (closed), which Kernel Tuner's
/// simulation mode replays: keys in Kernel Tuner's order, "cache" last; per
/// entry every parameter (the recorded value; positions as recorded), "time"
/// in ms or the failure as Kernel Tuner names it (CompilationFailedConfig,
/// RuntimeFailedConfig, InvalidConfig), the cost as compile_time (all of it;
/// verification_time and benchmark_time 0). Kernel Tuner takes a file that
/// does not end with the cache's and the document's closing braces for one
/// left open: dump it with dump(0) or more indentation, never on one line.
nlohmann::ordered_json kernel_tuner_cache(const RecordedSpace& s);

}  // namespace kopt::store
