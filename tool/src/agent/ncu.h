// Nsight Compute for profile_candidate: finding ncu, running it on one launch
// of a candidate and reading its CSV (internal to the agent; parse_ncu_csv is
// also declared in agent.h).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kopt::agent {

/// Parses the CSV that `ncu --csv --page details` prints into
/// {"kernel": name, "metrics": {"<section>: <metric> [unit]": value},
///  "rules": [{"section", "rule", "type", "description", "estimated_speedup",
///  "estimated_speedup_type"}]} (numbers with thousands separators become
/// numbers; "rules" only when ncu gave rule results, as Nsight Compute 2025
/// does); the first kernel only. Returns null when no metric row is found.
nlohmann::json parse_ncu_csv(const std::string& text);

/// The ncu executable (PATH, /usr/local/cuda/bin, /opt/nvidia/nsight-compute);
/// empty when not installed.
std::string find_ncu();

/// How long one profile may take.
constexpr double kNcuTimeoutS = 300;

/// Profiles the first launch of the kernel `entry` in the program `target`
/// (argv) with ncu (SpeedOfLight, Occupancy and LaunchStats sections, the
/// clocks left as they are), keeps ncu's output in `output_file`, and returns
/// the parsed metrics with "available": true, or {"available": false,
/// "reason": "profiling unavailable: ..."}.
nlohmann::json run_ncu(const std::string& ncu, const std::string& entry, const std::vector<std::string>& target,
                       const std::filesystem::path& output_file);

}  // namespace kopt::agent
