// The human-readable outputs of a run: heatmap.svg and report.html.
// Both are self-contained files that open from disk with no network.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/store.h"

namespace kopt::report {

/// SVG heatmap: one row per attempt (in order), one column per performance
/// case; colour = speedup over the reference on that case (log scale,
/// diverging around 1x; legend included); rejected attempts are drawn as a
/// grey row labelled with their verdict. Rows are labelled with the attempt's
/// index and, when attempts have tuning parameters, the values of those that
/// differ between them (a column each, headed by the name; those all share
/// are said once above), else with its label. When no attempt has a speedup over the reference (it was
/// not timed), the speedups are over the initial kernel instead (the <svg>
/// element's data-baseline says which: "reference" or "initial").
/// `simulated`: the timings came from a simulated GPU (model::is_simulated
/// of the summary's "gpu"): the <title> and a caption under the heading say
/// model::kSimulatedNote, every cell's tooltip says so (text::kSimulatedTip),
/// and the <svg> element has data-simulated="true". Returns the SVG text.
std::string heatmap_svg(const std::vector<model::Attempt>& history,
                        const std::vector<std::string>& performance_cases, bool simulated = false);

/// HTML report: a warning first when the GPU was simulated (model::
/// is_simulated of summary "gpu": the timings are made up; the charts'
/// titles and tooltips say so too); summary table
/// (best candidate, geomean, speedups, counts by verdict, GPU; the summary's
/// other documents as raw JSON in collapsed <details>; `summary` read with
/// store::ReadMode::tolerant shows what reads of a damaged file); the shipped
/// kernels' errors against the FP64 oracle beside cuBLAS FP32's per case
/// (store::accuracy_of), when measured; charts of the tuned kernel against
/// cuBLAS per shape class and per shape on one axis and of the best geomean
/// so far (report/charts.h), the launch header's dispatch table, the heatmap
/// (inlined SVG), the best kernel's source, and the full history as a table
/// sortable by clicking a column header (inline JavaScript, no external
/// resources). Tables fit the page from 800 px wide; charts scale down to it.
/// `spec` is the run's spec.json (the performance cases' sizes); null does
/// without.
std::string report_html(const store::Summary& summary, const std::vector<model::Attempt>& history,
                        const std::string& heatmap, const std::string& best_source,
                        const nlohmann::json& spec = nullptr);

/// The performance cases of a run folder, in order: spec.json's (role
/// "performance"; none when it is missing or damaged), then any other case
/// the history timed.
std::vector<std::string> performance_cases(const store::RunStore& store);

/// What write_reports wrote, and what it could not show as the run folder has it.
struct WrittenReports {
  std::filesystem::path html, heatmap;
  /// One line each, naming the file and the JSON path where one is damaged:
  /// summary.json missing (rebuilt from history.json), damaged (shown as far
  /// as it reads), stale (its history keys rebuilt); spec.json unreadable.
  std::vector<std::string> notes;
};

/// Writes report.html (into `html_file`, else into the run folder) and
/// heatmap.svg beside it, atomically, from the run folder's records:
/// history.json, summary.json (as written when up to date with the history;
/// see WrittenReports::notes for the rest) and spec.json. Reads nothing but
/// the store's folder, so it also serves a run folder copied from another
/// machine (`kopt report`). Throws kopt::Error (kopt.io.*) when a file cannot
/// be written.
WrittenReports write_reports(const store::RunStore& store, const std::vector<std::string>& performance_cases,
                             const std::filesystem::path& html_file = {});

}  // namespace kopt::report
