// The tuning cache (`kopt generate --cache-file`, optimize_kernel(CACHE_FILE)):
// a typed record with its one reader and its one writer. Users commit it;
// builds without a GPU take the tuned kernel from it. docs/run-folder.md
// ("Tuning cache") describes it and docs/schemas/tuning-cache.schema.json is
// its schema.
//
//   {"format_version": 1, "entries": [{
//      "workload", "spec_hash", "base_spec_hash"?, "gpu": {"name", "compute_capability"},
//      "kernel_source", "params", "geomean_ms", "best" (summary.json "final_best"),
//      "cublas_geomean_ms", "specialization" (summary.json's, or null),
//      "variants"?: [{"label", "kernel_source", "shapes": [{size: value}]}],
//      "tool_version", "created"}]}
//
// One entry per (spec hash, GPU name, compute capability). Latencies are
// milliseconds. A cache is hand-editable and committed, so it is read with
// the rigour of a spec: every error names the file, the JSON path and what
// was expected, and nothing that would change the generated code passes
// unseen (a latency that is a string, a variant list that does not match the
// specialisation, a parameter value the spec does not have).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/summary.h"

namespace kopt::spec {
struct Spec;
}

namespace kopt::store {

/// The GPU an entry was tuned on (device.json's name and compute capability).
struct CacheGpu {
  std::optional<std::string> name, compute_capability;  // absent only in a hand-made entry

  /// "NVIDIA H200 (compute capability 9.0)"; "?" for what is absent.
  std::string label() const;
};

/// A shape-specialised variant of an entry, in the order of the
/// specialisation's variants (0: the single best).
struct CacheVariant {
  std::string label;
  std::string kernel_source;  // best.cu's form
  std::vector<std::map<std::string, int64_t>> shapes;  // the sizes of the tuned cases it was chosen for
};

struct CacheEntry {
  std::string workload;
  std::string spec_hash;  // store::spec_fingerprint of the spec (and cases) it was tuned on
  /// Tuned on a shape capture: the fingerprint of the spec with its own cases.
  std::optional<std::string> base_spec_hash;
  CacheGpu gpu;
  std::string kernel_source;  // the winner (variant 0), best.cu's form
  std::map<std::string, int64_t> params;
  double geomean_ms = 0;  // the winner's, over every performance case (0: unknown)
  FinalBest best;         // summary.json "final_best" ({} when there was none)
  double cublas_geomean_ms = 0;  // 0: no cuBLAS baseline
  std::optional<Specialization> specialization;  // written as null when absent
  std::optional<std::vector<CacheVariant>> variants;  // with more than one variant only
  std::string tool_version, created;
  /// Keys this kopt does not know, kept as they were.
  nlohmann::json others = nlohmann::json::object();
};

struct TuningCache {
  std::vector<CacheEntry> entries;
  nlohmann::json others = nlohmann::json::object();  // top-level keys this kopt does not know

  nlohmann::json to_json() const;
  /// Reads a cache document; `where` names it in messages. Throws SpecError:
  /// kopt.cache.102 (no "entries" array), kopt.cache.103 (format_version is
  /// not 1), kopt.cache.104 (an entry without spec_hash, gpu or
  /// kernel_source), kopt.cache.105 (an entry whose parts disagree: a
  /// specialisation of N variants without N "variants"), kopt.json.005 (a
  /// value of the wrong type or range), each naming the JSON path.
  static TuningCache from_json(const nlohmann::json& j, const std::string& where);
};

/// Reads `file`; an empty cache when it does not exist. Errors as from_json,
/// plus kopt.io.* (cannot be read) and kopt.json.001-004 (not JSON), each
/// with the advice to fix or delete the file.
TuningCache read_tuning_cache(const std::filesystem::path& file);
/// Writes `file` atomically.
void write_tuning_cache(const std::filesystem::path& file, const TuningCache& cache);

/// Checks entry `index` of the cache `where` against the spec it is about to
/// serve: every tuning parameter value it records (its "params", "best"
/// "params" and each specialisation variant's) must be one of the values the
/// spec gives that parameter. Throws SpecError(kopt.cache.105) naming the
/// JSON path, the value and the spec's values.
void check_entry_against_spec(const CacheEntry& entry, size_t index, const spec::Spec& spec,
                              const std::string& where);

}  // namespace kopt::store
