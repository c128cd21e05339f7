// Nsight Compute as an observer of one evaluation (Kernel Tuner's observers,
// KTT's profiling searcher): the worker that runs the evaluation is started
// under ncu (its words go in front of the worker command line of the worker
// plan, model/worker_plan.h), ncu writes its report to a log file, never to
// the worker's stdout (the protocol), and the log's CSV is read back here.
// The run driver does this for propose::EvaluationService::profile().
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kopt::eval {

/// Parses the CSV that `ncu --csv --page details` prints into
/// {"kernel": name, "metrics": {"<section>: <metric> [unit]": value},
///  "rules": [{"section", "rule", "type", "description", "estimated_speedup",
///  "estimated_speedup_type"}]} (numbers with thousands separators become
/// numbers; "rules" only when ncu gave rule results, as Nsight Compute 2025
/// does); the first kernel only. Lines that are not CSV (ncu's "==PROF=="
/// lines, the worker's own output) are skipped. Returns null when no metric
/// row is found.
nlohmann::json parse_ncu_csv(const std::string& text);

/// The ncu executable (PATH, /usr/local/cuda/bin, /opt/nvidia/nsight-compute);
/// empty when not installed.
std::string find_ncu();

/// How long one profiled evaluation may take (seconds), and how long ncu may
/// take to write its report once the worker exits.
constexpr double kNcuTimeoutS = 300;
constexpr double kNcuReportGraceS = 120;

/// The words that start a worker under ncu: `ncu` profiling the first launch
/// of the kernel `entry` (SpeedOfLight, Occupancy and LaunchStats sections,
/// the clocks left as they are: ncu's default would lock them to base, a
/// settings change on a GPU others may share), its whole output, the CSV of
/// the details page included, to `log_file`.
std::vector<std::string> ncu_prefix(const std::string& ncu, const std::string& entry,
                                    const std::filesystem::path& log_file);

/// What a profile gave: the parsed metrics of `log_file` with "available":
/// true, or {"available": false, "reason": "profiling unavailable: ..."}
/// (counters not permitted, no metrics; `outcome` says how the profiled
/// evaluation itself ended, for the reason, e.g. "the worker answered no
/// hello: ...").
nlohmann::json read_ncu_log(const std::filesystem::path& log_file, const std::string& outcome);

}  // namespace kopt::eval
