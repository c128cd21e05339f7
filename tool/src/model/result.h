// The outcome of evaluating one candidate: a value, never an exception.
// Plain data shared by every part that reads results (eval writes them; run,
// report, the proposers and the driver read them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kopt::model {

/// What happened to a candidate. Stable strings (see verdict_name) appear in
/// result JSON, history.json and exit codes; never renumber.
enum class Verdict {
  ok,               // passed every check on every case (and was timed)
  compile_error,    // NVRTC rejected the source, or the entry point does not exist
  infeasible,       // the launch cannot run on this device: threads per block over the
                    // function's limit, grid over the device's, shared memory over the opt-in;
                    // or its output is no whole number of a sum tolerance's totals
  launch_error,     // cuLaunchKernel refused the launch (e.g. too many resources)
  runtime_error,    // the kernel faulted: trap, misaligned address, illegal instruction...
  timeout,          // a launch exceeded the watchdog; the worker was killed
  wrong_result,     // outputs differ from the reference beyond tolerance, NaN/Inf,
                    // unwritten outputs, or inputs modified
  out_of_bounds,    // wrote past a buffer (canary bytes changed) or touched unmapped memory
  nondeterministic, // repeated runs on the same inputs gave different bits
  worker_crash,     // the worker process died for a reason not attributable above
  compiled,         // compiled only, not run: there is no GPU (the agent's compile-only mode)
};

/// Every verdict, in declaration order. Code that counts or maps verdicts
/// switches over them without a default (a new verdict is then a compile
/// error there) or iterates this list; a test checks that it is complete.
inline constexpr Verdict kAllVerdicts[] = {
    Verdict::ok,           Verdict::compile_error, Verdict::infeasible, Verdict::launch_error,
    Verdict::runtime_error, Verdict::timeout,      Verdict::wrong_result, Verdict::out_of_bounds,
    Verdict::nondeterministic, Verdict::worker_crash, Verdict::compiled,
};

/// The verdict's stable name ("ok", "compile_error", ...); "unknown" for a
/// value that is no enumerator.
const char* verdict_name(Verdict v);
/// Parses a verdict_name string; throws std::invalid_argument if unknown.
Verdict parse_verdict(const std::string& s);

/// Latency statistics of one case, in milliseconds, over `samples` measured
/// launches (each launch timed by its own pair of CUDA events).
struct LatencyStats {
  double median_ms = 0, mean_ms = 0, min_ms = 0, max_ms = 0, stddev_ms = 0;
  int samples = 0;
  std::vector<double> raw_ms;  // every measured launch in launch order (may be empty)
};

/// Computes the statistics of `samples_ms` (population standard deviation).
/// Empty input yields all zeros.
LatencyStats latency_stats(std::vector<double> samples_ms);

/// Geometric mean of positive values; 0 for an empty list.
/// Throws std::invalid_argument if any value is <= 0 or not finite.
double geomean(const std::vector<double>& values);
/// Weighted geometric mean exp(sum w log v / sum w) of positive values with
/// positive finite weights (one per value); 0 for an empty list. Equal
/// weights give geomean(values). Throws std::invalid_argument if a value or
/// weight is not positive and finite, or the sizes differ.
double geomean(const std::vector<double>& values, const std::vector<double>& weights);

struct CaseResult {
  std::string name;
  std::string role;  // "correctness" | "performance"
  bool passed = false;
  // Worst element: error and its ratio to the allowed error (<= 1 passes).
  double max_abs_error = 0, max_error_ratio = 0;
  std::string worst_output;      // buffer holding the worst element
  std::optional<LatencyStats> latency;  // performance cases that were timed
  std::optional<LatencyStats> reference_latency;  // when the request asked to time the reference
  /// Screened out: the case's probe launch was slower than the limit the
  /// request set (CaseSpec::screen_ms), or the median of its first
  /// eval::kScreenLaunches timed launches slower than the second limit
  /// (CaseSpec::screen_median_ms), so it was not timed further; `latency`
  /// then holds those launches alone (samples = 1 or kScreenLaunches)
  /// (docs/search.md, "Screening").
  bool screened = false;
  /// The screening limits the case was timed under (ms), when set.
  std::optional<double> screen_ms, screen_median_ms;
  /// Occupancy of the timed launch: thread blocks of this kernel that fit on one SM at once with
  /// the case's block size and dynamic shared memory
  /// (cuOccupancyMaxActiveBlocksPerMultiprocessor). Timed cases only; the dispatch model's
  /// waves are counted with it (model/dispatch.h, DispatchModel).
  std::optional<int> blocks_per_sm;
  /// Accuracy against the FP64 oracle, for an output compared with a GEMM tolerance (spec
  /// "tolerance": {"kind": "gemm"}): per element e = |out - ref| / sqrt(sum_k (a_ik * b_kj)^2), the
  /// error relative to the scale of the products (it never divides by a sum that cancels; for K = 1
  /// it is |out - ref| / |ref|), over the elements where that scale is positive and both values are
  /// finite; ref is the reference's output (an FP64 sum rounded once to the output type). The max
  /// and the root mean square of e, from the first checked launch of trial 1: the seeded inputs,
  /// the same for every candidate and for the cuBLAS baseline (docs/evaluation.md, "Accuracy").
  /// Unset for other tolerances, and where the case was not checked to the end.
  std::optional<double> rel_error_max, rel_error_rms;
};

struct Result {
  Verdict verdict = Verdict::ok;
  std::string detail;      // human-readable reason, one line
  std::string error_name;  // CUDA_ERROR_* / NVRTC_ERROR_* where one applies
  std::string failed_case; // the case that decided the verdict, if any
  std::vector<CaseResult> cases;
  std::optional<double> geomean_ms;  // over performance cases, only when ok
  std::optional<double> reference_geomean_ms;
  std::optional<double> speedup;     // reference_geomean / geomean
  double compile_ms = 0;             // never part of the score
  double check_ms = 0;               // worker wall time spent checking (all cases, all trials)
  double timing_ms = 0;              // worker wall time spent in the timed loops (incl. flushes)
  bool compile_cache_hit = false;
  std::string compile_log;
  /// Where it was checked and timed: the CUDA ordinal the worker was started
  /// with (`kopt optimize --device` / `--devices`), and the UUID the worker
  /// reported for it (empty when unknown). Set by the parent, never by the
  /// worker; unset for a result that no worker produced (a compile error).
  std::optional<int> device;
  std::string device_uuid;

  /// Unset optionals are omitted. Non-finite doubles (a NaN error, an infinite
  /// ratio) are written as the strings "NaN", "Infinity", "-Infinity" because
  /// JSON has no such numbers (nlohmann would silently write null).
  nlohmann::json to_json() const;
  /// Inverse of to_json (exact round trip). Throws kopt::Error
  /// ("kopt.protocol.001") naming the missing or malformed field.
  static Result from_json(const nlohmann::json& j);
};

/// Helpers shared by the JSON codecs (model/, eval/protocol.cpp, store/).
/// Every reader throws kopt::Error("kopt.protocol.001", "<path>: <problem>"),
/// where path is a JSON path such as "$.cases[2].latency.median_ms".
namespace json_io {
/// A double as JSON that survives dump()/parse(): finite values as numbers,
/// others as "NaN" / "Infinity" / "-Infinity".
nlohmann::json from_double(double v);
/// The member `key` of object `obj` (at `path`); throws if absent.
const nlohmann::json& member(const nlohmann::json& obj, const char* key, const std::string& path);
void require_object(const nlohmann::json& j, const std::string& path);
double get_double(const nlohmann::json& j, const std::string& path);
int64_t get_int(const nlohmann::json& j, const std::string& path);
uint64_t get_uint(const nlohmann::json& j, const std::string& path);
int get_int32(const nlohmann::json& j, const std::string& path);
bool get_bool(const nlohmann::json& j, const std::string& path);
std::string get_string(const nlohmann::json& j, const std::string& path);
/// Throws kopt::Error("kopt.protocol.001", path + ": " + what).
[[noreturn]] void fail(const std::string& path, const std::string& what);
}  // namespace json_io

}  // namespace kopt::model
