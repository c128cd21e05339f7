// Kernel Tuner interop: a run folder written as T4 results, and T4 results or
// a Kernel Tuner cache file read back as configurations to try first
// (`kopt optimize --warm-start FILE`). docs/interop.md says what maps to what;
// docs/schemas/t4-results.schema.json is the schema `kopt export` is checked
// against.
//
// T4 is the results format of the "Open Autotuning" schemas that Kernel
// Tuner writes (`store_output_file`) and its tools read:
//
//   {"schema_version": "1.0.0",
//    "results": [{"timestamp", "configuration": {NAME: value},
//                 "objectives": ["time"],
//                 "times": {"compilation_time", "runtimes": [...], ...},
//                 "invalidity": "correct" | "compile" | "runtime" | "correctness"
//                               | "constraints" | "timeout",
//                 "correctness": 1,
//                 "measurements": [{"name", "value", "unit"}]}, ...]}
//
// A Kernel Tuner cache file (its `cachefile=` option) is
//
//   {"schema_version"?, "device_name", "kernel_name", "problem_size",
//    "tune_params_keys": [NAME...], "tune_params": {NAME: [values]},
//    "objective": "time",
//    "cache": {"v1,v2,...": {NAME: value..., "time": ms | "InvalidConfig" |
//              "CompilationFailedConfig" | "RuntimeFailedConfig", ...}}}
//
// and may be "open": Kernel Tuner appends an entry a configuration and closes
// the two braces only when tuning ends, so a session that stopped early leaves
// a file without its last "}\n}" (and with a trailing comma). It is read as if
// closed, as Kernel Tuner itself reads it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/result.h"

namespace kopt::store {

/// The T4 schema version kopt writes and reads (major 1).
inline constexpr const char* kT4SchemaVersion = "1.0.0";

/// What export_t4() wrote and left out.
struct T4Export {
  nlohmann::json doc;          // {"schema_version", "results"}
  int exported = 0;            // attempts written (kind "candidate")
  int not_configurations = 0;  // reference, initial kernel, cuBLAS baseline: no point of the space
  int compiled_only = 0;       // verdict "compiled": never run (compile-only run without a GPU)
  int screened = 0;            // exported with a screened case: its time there is one probe launch
};

/// The candidates of the run folder `run_dir` as T4 results, in evaluation
/// order. Reads the folder without a lock and changes nothing. Throws what
/// RunStore::open throws (kopt.run.901 when it is not a run folder).
T4Export export_t4(const std::filesystem::path& run_dir);

/// The T4 "invalidity" of a verdict (ok -> "correct", compile_error ->
/// "compile", ...); docs/interop.md has the table. Every verdict has its
/// own case: a new verdict is a compile error there until it is mapped.
std::string t4_invalidity(model::Verdict verdict);

/// One configuration of a warm-start file.
struct WarmStartEntry {
  std::string path;                        // where in the file: $.results[3], $.cache["16,1"]
  std::map<std::string, int64_t> config;   // parameter -> value (those that are integers)
  std::optional<double> time_ms;           // the recorded time, when valid and known
  std::string failed;                      // recorded as not valid: how ("compile", "CompilationFailedConfig")
  std::string unusable;                    // cannot be one of ours: why ("block_size_x=0.5 is not an integer")
  /// Every parameter's value as the file records it (integers or not): a
  /// replay (store/recorded.h) takes the values that are no integers by position.
  std::map<std::string, nlohmann::json> values;
  /// What evaluating it cost, ms, where the file says: T4 times.compilation
  /// (Kernel Tuner's name) or times.compilation_time (kopt's) + validation +
  /// benchmark; cache compile_time + verification_time + benchmark_time, what
  /// Kernel Tuner's simulation mode charges (runners/simulation.py). Missing
  /// terms count 0; nullopt when all three are missing.
  std::optional<double> cost_ms;
};

/// A warm-start file, read.
struct WarmStart {
  std::filesystem::path file;
  std::string format;     // "T4 results" or "Kernel Tuner cache"
  std::string device;     // Kernel Tuner cache: device_name (empty when absent)
  std::string kernel;     // Kernel Tuner cache: kernel_name
  std::string objective;  // T4: objectives[0] of the first result; cache: "objective" (empty: time)
  std::string note;       // e.g. "not closed (a tuning session that stopped early); read as if closed"
  /// Valid entries with a recorded time first, fastest first; then the other
  /// valid ones, then the failed and unusable ones, each group in file order.
  std::vector<WarmStartEntry> entries;
  /// Kernel Tuner cache: $.tune_params_keys, each with the values its
  /// $.tune_params lists (none where the file has no such list). Empty for T4.
  std::vector<std::pair<std::string, std::vector<nlohmann::json>>> tune_params;
};

/// Reads T4 results or a Kernel Tuner cache file (told apart by their keys).
/// Errors are SpecError naming the file and the JSON path: kopt.io.* (the
/// file cannot be read), kopt.json.001-004 (not JSON), kopt.json.005 (a value
/// of the wrong type, a member missing), kopt.interop.001 (neither format),
/// kopt.interop.002 (a value outside the format: an unknown invalidity, a
/// cache key that does not match tune_params_keys), kopt.interop.003 (a
/// schema_version of another major version).
WarmStart read_warm_start(const std::filesystem::path& file);

}  // namespace kopt::store
