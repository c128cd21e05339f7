// summary.json of a run folder as a typed record: its one reader and its one
// writer. The run store fills the keys it derives from the history
// (RunStore::summary), the run driver adds the final re-timing, the shape
// variants, the tuner's figures and the rest, and the proposer its own keys
// (merge()); the report, `kopt generate` and `kopt optimize --resume` read
// it back through read_summary(). docs/run-folder.md describes every key and
// docs/schemas/summary.schema.json is its schema.
//
// Units: every *_ms is milliseconds, every *_minutes minutes, every
// *_fraction a fraction of the search's wall time (0..1).
//
// The file's form is what kopt has always written: the keys are top-level
// members (the proposer's too), a value the record does not know is kept in
// `others` and written back unchanged, and to_json() gives the bytes of the
// file (dump_json(..., 2) + "\n").
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/attempt.h"
#include "model/dispatch.h"

namespace kopt {
class JsonAt;
}

namespace kopt::store {

/// How a reader treats a value of the wrong type or out of range.
enum class ReadMode {
  /// Throws SpecError(kopt.json.005) naming the file, the JSON path and what
  /// was expected (`kopt generate`, the tuning cache).
  strict,
  /// Leaves the damaged member out (a whole top-level key; within
  /// "specialization", a damaged "dispatch" or its "model" alone) and reads
  /// the rest: the report and `--resume` show or take what they can of a
  /// damaged file. A document that is not an object reads as empty.
  tolerant,
};

/// One performance case of summary.json "best": the attempt's latency
/// statistics there (ms; no raw samples) and the reference's median beside
/// it. Members are optional in the file; kopt writes them all but the last two.
struct SummaryCase {
  std::string name;
  std::optional<double> median_ms, mean_ms, min_ms, max_ms, stddev_ms;
  std::optional<int64_t> samples;
  std::optional<double> reference_median_ms;
  std::optional<double> speedup;  // reference_median_ms / median_ms
};

/// summary.json "best": the search's fastest attempt by its own timing
/// (model::best_attempt). kopt writes every member; a reader takes what is there.
struct SummaryBest {
  std::optional<int> index;
  std::optional<model::AttemptKind> kind;
  std::string label;
  std::map<std::string, int64_t> params;
  std::optional<double> geomean_ms;
  std::vector<SummaryCase> cases;
  /// Null when not comparable (timed on other cases) or unknown.
  std::optional<double> speedup_vs_reference, speedup_vs_initial;
  std::string note;  // why the speedups are null (shape classes); empty: none
};

/// summary.json "final_best" (and a tuning cache entry's "best"): the winner
/// after the final re-timing. Every member is optional in the file (a cache
/// entry of a run without a winner has {}); kopt writes index, label, params
/// and geomean_ms together.
struct FinalBest {
  std::optional<int> index;
  std::optional<std::string> label;
  std::optional<std::map<std::string, int64_t>> params;
  std::optional<double> geomean_ms;         // over every performance case
  std::optional<double> search_geomean_ms;  // shape classes: the search's, over its class's cases
  std::optional<double> speedup_vs_reference, speedup_vs_initial, ratio_to_cublas;

  nlohmann::json to_json() const;
  static FinalBest from_json(const JsonAt& at);
};

/// A variant of summary.json "specialization" (variant 0: the single best).
struct SpecializationVariant {
  int variant = 0;  // its number (absent in the file: its position)
  std::optional<int> index;  // the attempt in history.json
  std::string label;
  std::map<std::string, int64_t> params;
  std::string file;  // relative to the run folder: variants/v<N>.cu (never outside it; empty: absent)
};

/// A performance case of "specialization": the variant the dispatch picks.
struct SpecializationCase {
  int variant = 0;
  std::optional<double> median_ms;         // that variant's re-timed median (null: not timed)
  std::optional<double> single_median_ms;  // variant 0's
  std::optional<std::map<std::string, int64_t>> sizes;  // kopt writes them ({} for a case it does not know)
  std::optional<std::string> shape_class;  // "class": a class recorded for the case (the report's charts)
};

/// summary.json "specialization" (also kept in a tuning cache entry).
struct Specialization {
  std::optional<double> threshold;  // fraction a variant must beat the single best by
  std::vector<SpecializationVariant> variants;
  std::map<std::string, SpecializationCase> cases;
  /// Per performance case, every variant's re-timed median (null: failed or not timed).
  std::map<std::string, std::vector<std::optional<double>>> latency_ms;
  /// The measured dispatch: the document model::DispatchTree::to_json writes,
  /// checked by DispatchTree::from_json against the variant count when read
  /// (its owner); kept as written, so that a cost model of an older kopt is
  /// written back as it was. Null: none (one variant, or an older run).
  nlohmann::json dispatch;
  std::optional<double> single_geomean_ms, geomean_ms;  // weighted geomeans over the performance cases
  std::optional<double> ratio_to_cublas, single_ratio_to_cublas;

  /// The dispatch tree (DispatchTree::from_json of `dispatch`), nullopt when there is none.
  std::optional<model::DispatchTree> dispatch_tree(const std::string& where) const;

  nlohmann::json to_json() const;
  static Specialization from_json(const JsonAt& at, ReadMode mode = ReadMode::strict);
};

/// One finalist of the final interleaved re-timing (summary.json "retime").
struct RetimeEntry {
  std::optional<int> index;  // the attempt in history.json
  std::string label;
  std::vector<double> geomeans_ms;  // one per round
  std::optional<double> median_ms;  // over the rounds; null when every round failed
  std::map<std::string, std::optional<double>> cases_median_ms;
  bool failed_recheck = false;
  std::optional<int> device;  // the CUDA ordinal it was re-timed on
};

/// summary.json "budget_used": the search's (evaluations, search_minutes) or
/// the agent's (model_turns, evaluations, minutes, tokens).
struct BudgetUsed {
  std::optional<int64_t> evaluations;
  std::optional<double> search_minutes;
  std::optional<int64_t> model_turns;
  std::optional<double> minutes;
  std::optional<int64_t> tokens;
};

/// summary.json "tuner": how the pipeline spent the search's wall time
/// (docs/run-folder.md has each figure).
struct TunerStats {
  double candidates_per_minute = 0, gpu_measured_fraction = 0, compile_ms_median = 0, compile_cache_hit_rate = 0;
  int64_t compile_threads = 0, compiles_ready_when_needed = 0, withdrawn_before_evaluation = 0;
  double compile_wait_ms = 0, worker_check_ms = 0, worker_timing_ms = 0, host_gap_ms = 0, worker_other_ms = 0;
  /// "compile_ahead": the candidates kept proposed ahead of the GPU, median
  /// and maximum over the search's proposals, and whether the depth was
  /// chosen by the run ("auto") or fixed by --compile-ahead; absent in older runs.
  struct Ahead {
    double median = 0, max = 0;
    bool automatic = true;
  };
  std::optional<Ahead> compile_ahead;
  struct Device {
    int device = 0;
    std::string name;
    int64_t evaluated = 0;
    double measured_fraction = 0, busy_fraction = 0;
    std::string uuid, dropped;  // empty: unknown / not dropped (left out of the file)
  };
  std::vector<Device> devices;
  /// "filtered_before_compile": configurations of the template's space left
  /// out before anything was compiled, over the device's limits, apart from
  /// the evaluations (search/device_constants.h); absent without a
  /// device-limit constraint.
  struct Filtered {
    int64_t configurations = 0;       // left out
    int64_t space = 0;                // the configurations that remain
    std::vector<std::string> limits;  // the constraints that left them out, as text
  };
  std::optional<Filtered> filtered_before_compile;
};

/// summary.json "time_split": where the run's wall time went, in minutes.
struct TimeSplit {
  double setup_minutes = 0, search_minutes = 0, retime_minutes = 0, total_minutes = 0;
};

/// One shape class of a class search (summary.json "shape_classes"; the
/// proposer's key, read by `--resume` and the report).
struct ShapeClassSummary {
  int64_t class_number = 0;  // "class": 1, 2, ...
  std::string name;
  std::vector<std::string> cases;
  int64_t evaluations = 0;
  int64_t evaluations_share = 0;  // the class's share of the evaluations (0: no limit)
  double minutes = 0;
  int64_t screened_cases = 0;  // cases screened out after their probe
  int64_t withdrawn = 0;
  std::optional<std::string> best_label;
  std::optional<double> best_geomean_ms;
};

/// One case of summary.json "accuracy": a kernel's error against the FP64
/// oracle beside the cuBLAS FP32 baseline's on the same inputs
/// (model::CaseResult::rel_error_max / rel_error_rms: relative to the scale
/// of the products, docs/evaluation.md "Accuracy"; dimensionless). Unset:
/// not measured (another tolerance, the case not checked to the end, or no
/// baseline).
struct AccuracyCase {
  std::string name;
  std::string role;  // "correctness" | "performance"; empty when unknown
  std::optional<double> rel_error_max, rel_error_rms;
  std::optional<double> cublas_rel_error_max, cublas_rel_error_rms;
};

/// A kernel of summary.json "accuracy": one that `kopt generate` ships.
struct AccuracyKernel {
  int variant = 0;           // its variant number (0: the winner, the single best)
  std::optional<int> index;  // the attempt in history.json
  std::string label;
  std::vector<AccuracyCase> cases;  // in the attempt's order of cases
};

/// summary.json "accuracy": the errors of the kernels the run ships beside
/// cuBLAS FP32's, per case. Derived from the history (accuracy_of) by the
/// run store, like the other store keys.
struct Accuracy {
  std::optional<int> cublas_index;  // the cuBLAS baseline's attempt (absent: none passed)
  std::vector<AccuracyKernel> kernels;
};

/// summary.json, every key kopt writes. Members written only when set are
/// std::optional (or, for documents owned elsewhere, null JSON).
struct Summary {
  // RunStore::summary: from run.json, device.json and the history.
  int format_version = 1;
  std::string tool_version, run, workload;
  nlohmann::json gpu = nlohmann::json::object();  // device.json (model::DeviceInfo, or {"arch"} without a GPU)
  std::string spec_hash, strategy;
  uint64_t seed = 0;
  std::string created;
  std::optional<SummaryBest> best;  // null: no attempt passed
  std::optional<double> reference_geomean_ms, initial_geomean_ms;  // null when unknown
  std::map<std::string, int64_t> counts;  // verdict name -> attempts
  std::optional<int64_t> attempts;        // history size (absent only in a damaged file)
  std::optional<Accuracy> accuracy;       // accuracy_of(*this, history); absent when nothing was measured

  // The run driver (driver/finish.cpp).
  nlohmann::json budget;  // the budget as the proposer records it (Proposer::budget_json); null: absent
  std::optional<BudgetUsed> budget_used;
  std::optional<std::string> stop;  // why the search stopped
  std::optional<TunerStats> tuner;
  std::optional<std::vector<RetimeEntry>> retime;
  std::optional<TimeSplit> time_split;
  std::optional<double> cublas_geomean_ms;
  struct CompileOnly {
    std::string arch, reason;  // compiled for this architecture only: no GPU, and why
  };
  std::optional<CompileOnly> compile_only;
  struct Interrupted {
    std::string signal, resume;  // "SIGTERM", and the command that continues the run
  };
  std::optional<Interrupted> interrupted;
  std::optional<FinalBest> final_best;
  std::optional<Specialization> specialization;

  // The proposer's keys that others read (propose/class_search.cpp).
  std::optional<std::vector<ShapeClassSummary>> shape_classes;
  std::optional<double> screen_factor;
  /// Every other top-level key, as written: the proposer's own ("agent",
  /// "warm_start", "valid_configurations", "baseline_screen_factor"...).
  nlohmann::json others = nlohmann::json::object();

  /// The keys RunStore::summary fills (the rest came from the driver and the proposer).
  static const std::vector<std::string>& store_keys();

  /// Takes the store's keys (store_keys()) from `fresh`, keeping the rest:
  /// a summary rebuilt for a history that grew since it was written.
  void assign_store_keys(const Summary& fresh);

  /// Sets the members named in `keys` (an object: e.g. the proposer's
  /// summary()) as if they were read from the file; its keys win over what
  /// is set. `where` names the document in messages.
  void merge(const nlohmann::json& keys, const std::string& where, ReadMode mode = ReadMode::strict);

  /// The file's document.
  nlohmann::json to_json() const;
  /// Reads a summary.json document. `where` names it in messages. Throws
  /// SpecError(kopt.json.005) in strict mode: "<where>: $.specialization.
  /// variants[1].file: expected a string, got an integer (5)".
  static Summary from_json(const nlohmann::json& j, const std::string& where, ReadMode mode = ReadMode::strict);
};

/// summary.json "accuracy" of `s` over `history`: the kernels it ships (the
/// specialisation's variants when there are some, else the winner:
/// final_best, else best), each with every case of its attempt where an
/// error was measured, beside the cuBLAS baseline's on that case (the first
/// baseline attempt that passed). nullopt when no kernel has a measured case
/// (no GEMM tolerance, no attempt passed, or a run older than the
/// measurement). A kernel whose attempt is not in `history` is left out.
std::optional<Accuracy> accuracy_of(const Summary& s, const std::vector<model::Attempt>& history);

/// Reads `file` (summary.json): kopt.io.* when it cannot be read, kopt.json.*
/// when it is not JSON or (strict) a value is of the wrong type or range.
Summary read_summary(const std::filesystem::path& file, ReadMode mode = ReadMode::strict);
/// Writes `file` atomically.
void write_summary(const std::filesystem::path& file, const Summary& s);

}  // namespace kopt::store
