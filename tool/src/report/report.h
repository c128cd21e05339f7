// The human-readable outputs of a run: heatmap.svg and report.html.
// Both are self-contained files that open from disk with no network.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "run/store.h"

namespace kopt::report {

/// SVG heatmap: one row per attempt (in order), one column per performance
/// case; colour = speedup over the reference on that case (log scale,
/// diverging around 1x; legend included); rejected attempts are drawn as a
/// grey row labelled with their verdict. Rows are labelled with the attempt's
/// index and label. When no attempt has a speedup over the reference (it was
/// not timed), the speedups are over the initial kernel instead (the <svg>
/// element's data-baseline says which: "reference" or "initial"). Returns
/// the SVG text.
std::string heatmap_svg(const std::vector<model::Attempt>& history,
                        const std::vector<std::string>& performance_cases);

/// HTML report: summary table (best candidate, geomean, speedups, counts by
/// verdict, GPU; the summary's other documents as raw JSON in collapsed
/// <details>; `summary` read with run::ReadMode::tolerant shows what reads of
/// a damaged file), charts of the tuned kernel against cuBLAS per shape class and
/// per shape and of the best geomean so far (report/charts.h), the launch
/// header's dispatch table, the heatmap (inlined SVG), the best kernel's
/// source, and the full history as a table sortable by clicking a column
/// header (inline JavaScript, no external resources). `spec` is the run's
/// spec.json (the performance cases' sizes); null does without.
std::string report_html(const run::Summary& summary, const std::vector<model::Attempt>& history,
                        const std::string& heatmap, const std::string& best_source,
                        const nlohmann::json& spec = nullptr);

/// Writes heatmap.svg and report.html into the run folder (atomically).
void write_reports(const run::RunStore& store, const std::vector<std::string>& performance_cases);

}  // namespace kopt::report
