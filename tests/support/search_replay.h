// Replaying a recorded sweep: the search strategies run against a table of
// measured results instead of a GPU, to measure (and guard in CI) how many
// evaluations each strategy needs to come near the best configuration.
// Test support, not part of the tool: built into kopt_test_support (over
// kopt::core), used by tests/unit/test_search_replay.cpp.
//
// A sweep record (tests/data/search/*.json, written by scripts/record_sweep.py
// from a run folder) is one JSON document:
//
//   {"format_version": 1,
//    "source": "how it was recorded",
//    "device": {"name": "NVIDIA H200", "cc": "9.0"},
//    "constants": {"MAX_SHARED_PER_BLOCK": 232448, ...},   (optional)
//    "spec": "templates/sgemm/sgemm.json",               (relative to the source tree)
//    "params": ["ASYNC_A", "BK", ...],
//    "entries": [{"params": {...}, "verdict": "ok", "geomean_ms": 1.23,
//                 "cases_ms": {"4096x2048x1024": 0.51, ...}}, ...]}
//
// "geomean_ms" and "cases_ms" are present for verdict "ok" only. "constants"
// are the device limits that the spec's constraints may name (as `kopt
// optimize` binds them from device.json); without them, the values of an
// H200 are assumed (h200_constants()).
//
// The replayed space is the spec's space (its parameters and constraints
// with the record's constants) restricted to the recorded configurations:
// a sweep cut short by its GPU budget lacks some valid configurations, and a
// strategy must not be charged (or rewarded) for results nobody measured, so
// those configurations do not exist for the replay (Space::restricted_to).
// The counts of what was dropped are reported (ReplayReport::unrecorded,
// ::outside_space).
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/space.h"
#include "spec/spec.h"
#include "spec/expr.h"

namespace kopt::search::replay {

struct Entry {
  Config params;
  std::string verdict;                      // "ok" or a failure verdict name
  std::optional<double> geomean_ms;         // ok only
  std::map<std::string, double> cases_ms;   // ok only: performance case -> median ms
  bool ok() const { return verdict == "ok" && geomean_ms && *geomean_ms > 0; }
};

struct Record {
  int format_version = 1;
  std::string source;
  std::string device_name, device_cc;
  spec::Bindings constants;  // empty: h200_constants()
  std::string spec;          // spec file, relative to the source tree
  std::vector<std::string> params;
  std::vector<Entry> entries;
};

/// The device limits `kopt optimize` assumes without a GPU (an H100/H200).
spec::Bindings h200_constants();

/// Parses a record. Throws SpecError(kopt.replay.101) naming the JSON path of
/// what is wrong (missing key, wrong type, unsupported format_version, an
/// entry whose parameters differ from "params", an ok entry without a
/// geomean, a configuration listed twice).
Record parse_record(const nlohmann::json& doc, const std::string& origin);
/// Reads and parses a record file (kopt.replay.100 when it cannot be read or
/// is not JSON).
Record load_record(const std::filesystem::path& file);
/// The record as JSON text: one entry per line (diff-friendly), keys sorted.
std::string dump_record(const Record& r);

/// The space the replay searches: `full` restricted to the record's
/// configurations.
Space replay_space(const Space& full, const Record& r);

struct StrategyResult {
  std::string strategy;
  /// Per seed (1..N): evaluations (failed ones included) until the first
  /// result within the tolerance of the best recorded geomean.
  std::vector<size_t> evaluations;
  double mean = 0;
  size_t median = 0, worst = 0;
};

struct ReplayReport {
  std::string record;                   // a label (file name)
  size_t space_valid = 0;               // valid in the spec's space (full)
  size_t recorded = 0;                  // entries in the record
  size_t outside_space = 0;             // recorded but not valid in the spec's space (dropped)
  size_t unrecorded = 0;                // valid but not recorded (not part of the replay)
  size_t size = 0;                      // the replayed space: valid and recorded
  size_t failed = 0;                    // of those, not ok
  double best_ms = 0;                   // the best recorded geomean
  std::string best_config;              // its config_key
  double tolerance = 0.05;
  size_t within = 0;                    // ok configurations within the tolerance of the best
  std::string default_strategy;         // default_strategy(size)
  int seeds = 0;
  std::vector<StrategyResult> results;  // in the order asked

  const StrategyResult* find(const std::string& strategy) const;
  nlohmann::json to_json() const;
  /// A Markdown table (what the README quotes), with a header line.
  std::string table() const;
};

/// Runs each strategy with seeds 1..`seeds` against the record (next() and
/// observe() alternate, one configuration at a time) until a result within
/// `tolerance` (0.05: 5%) of the best recorded geomean arrives. Every strategy
/// reaches it eventually, as none proposes a configuration twice.
/// Throws SpecError(kopt.replay.102) when the record has no ok entry in the
/// space.
ReplayReport run_replay(const Space& full, const Record& r, const std::vector<std::string>& strategies,
                        int seeds, double tolerance = 0.05, const std::string& label = "");

/// The SGEMM template's space as `kopt optimize` builds it (tune/,
/// search/device_constants.cpp): the spec's parameters and constraints, with
/// the record's device constants (h200_constants() without them); but only
/// its part for the tiled kernel without split-K (KIND=0, SPLITK=1 where the
/// spec has those parameters), each parameter's values narrowed to those
/// that part uses. That is what the synthetic model describes and what the
/// recorded sweep measured (the template gained KIND and SPLITK after it),
/// and it keeps the replayed spaces small enough for the strategies' exact
/// sampling.
Space sgemm_part_space(const spec::Spec& s, const Record& r);
/// The spec's performance cases as name -> {M, N, K}.
std::vector<std::pair<std::string, std::array<int64_t, 3>>> performance_cases(const spec::Spec& s);

/// A synthetic record of `space` (every valid configuration), from a seeded
/// performance model of the tiled SGEMM template of templates/sgemm on an
/// H200 (per-case latency from arithmetic intensity, occupancy, wave
/// quantisation, pipelining and bank conflicts, with deterministic noise),
/// with a few percent of failed verdicts (register overflow at launch,
/// a systematic wrong-result corner, random timeouts). `cases` are the
/// performance cases: name -> {M, N, K}. For developing and testing the
/// replay until a real GPU record exists; it is no substitute for one.
Record synthetic_sgemm_record(const Space& space,
                              const std::vector<std::pair<std::string, std::array<int64_t, 3>>>& cases,
                              uint64_t seed);

}  // namespace kopt::search::replay
