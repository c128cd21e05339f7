// The report's charts and the dispatch table: what they show is computed by
// the functions below from the run folder's documents (summary.json,
// history.json, spec.json), then drawn as plain inline SVG or HTML. Kept
// apart so that the data can be tested without parsing the drawing.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/attempt.h"
#include "store/summary.h"

namespace kopt::report {

// ---------------------------------------------------------------------------
// Tuned against the baseline, per shape and per shape class

/// One performance case: the tuned kernel's median latency (the variant the
/// launch header dispatches to on that shape) beside the baseline's.
struct ShapeTiming {
  std::string name;                      // the performance case
  std::map<std::string, int64_t> sizes;  // from spec.json (empty when unknown)
  std::string shape_class;
  int variant = 0;                       // the variant the launch header picks for it
  std::optional<double> tuned_ms;
  std::optional<double> baseline_ms;
};

/// A shape class: geomeans over its shapes that have both timings.
struct ClassTiming {
  std::string name;
  int shapes = 0;  // performance cases in the class
  int timed = 0;   // of which have both timings
  std::optional<double> tuned_geomean_ms, baseline_geomean_ms;
};

struct ShapeComparison {
  /// What the tuned kernel is compared with: "cuBLAS" (the baseline attempt)
  /// when it was timed, else "reference", else "initial kernel"; empty when
  /// none was timed.
  std::string baseline;
  std::string tuned;                  // e.g. "tuned (2 shape-specialised variants)"
  std::vector<ShapeTiming> shapes;    // in the spec's order of performance cases
  std::vector<ClassTiming> classes;   // built-in classes in their fixed order, others as met
  ClassTiming overall;                // every shape ("all shapes")
  /// The timings came from a simulated GPU (model::is_simulated of the
  /// summary's "gpu"): comparison_svg's title and tooltips say so.
  bool simulated = false;
};

/// The comparison of a run. Tuned latencies: the specialisation's per-case
/// median (the dispatched variant, re-timed) when there is one, else the
/// final re-timing's median of the winner, else the winner's measurement in
/// the search. Shape classes: the class summary.json records for the case
/// (`specialization.cases.<name>.class`) when there is one, else
/// shape_class().
ShapeComparison compare_shapes(const store::Summary& summary, const std::vector<model::Attempt>& history,
                               const nlohmann::json& spec);

/// The built-in shape class of a GEMM shape (sizes M, N and K, as the SGEMM
/// template names them), after the regimes of issue 13: "deep K", "skinny",
/// "narrow", "medium", "large" (each name says its rule). Empty for other
/// size names.
std::string shape_class(const std::map<std::string, int64_t>& sizes);

/// An axis of latencies (ms), fitted to the values it shows.
struct LatencyAxis {
  bool log = false;            // else linear from 0
  double lo = 0, hi = 0;       // the axis runs from lo to hi (ms); hi = 0: no values
  std::vector<double> ticks;   // labelled grid lines, ascending, lo and hi among them
  std::vector<double> minor;   // unlabelled grid lines between them (log axes)
  /// Where `v` falls along the axis: 0 at lo, 1 at hi (clamped).
  double fraction(double v) const;
};

/// Largest spread (max / min) drawn on a linear axis from 0: within it every
/// bar is at least 1/20 of the longest, long enough to see.
constexpr double kLinearRange = 20;

/// The axis for `values_ms` (values not finite and positive are ignored):
/// linear from 0 to the first step of 1, 2, 2.5 or 5 times a power of ten
/// that holds the largest, in 4 to 6 steps, when max / min <= kLinearRange;
/// else logarithmic from the largest 1-2-5 value (1, 2 or 5 times a power of
/// ten) at or below 0.9 times the smallest to the smallest one at or above
/// the largest, labelled at each 1-2-5 value over up to two decades, else at
/// the decades and both ends. No values: hi = 0 and no ticks.
LatencyAxis latency_axis(const std::vector<double>& values_ms);

/// The axis of both comparison charts: over every shape's and every class's
/// latencies, so that the per-class and the per-shape chart share one scale.
LatencyAxis comparison_axis(const ShapeComparison& c);

/// Horizontal bar chart in ms on comparison_axis(c) (the <svg> element's
/// data-axis, data-axis-min and data-axis-max say which): per class (`by_class`, with an
/// "all shapes" row first) or per shape, the tuned and the baseline latency
/// side by side and their ratio (baseline time / tuned time).
std::string comparison_svg(const ShapeComparison& c, bool by_class);

// ---------------------------------------------------------------------------
// Best so far over evaluations

struct ProgressPoint {
  int evaluation = 0;  // 1, 2, ... over the initial kernel and the candidates
  int index = 0;       // the attempt's index in history.json
  std::string label;
  bool ok = false;
  std::optional<double> geomean_ms;   // when ok
  std::optional<double> best_ms;      // best geomean up to here (none before the first ok)
  bool improved = false;              // this attempt set a new best
};

/// The initial kernel and the candidates in evaluation order (the reference
/// and the baseline are not evaluations of the search).
std::vector<ProgressPoint> best_so_far(const std::vector<model::Attempt>& history);

/// Horizontal lines drawn across the progress chart (cuBLAS, reference...).
struct LevelLine {
  std::string label;
  double ms = 0;
};

/// The summary's levels worth drawing: cuBLAS, the reference and the
/// specialised variants' geomeans, when known.
std::vector<LevelLine> progress_levels(const store::Summary& summary);

/// Step line of the best geomean so far (log scale in ms) over evaluation
/// number, each attempt's geomean as a dot, rejected attempts as grey marks
/// along the bottom, and the level lines dashed. `simulated`: the timings
/// came from a simulated GPU; the title and the points' tooltips say so.
std::string progress_svg(const std::vector<ProgressPoint>& points, const std::vector<LevelLine>& levels,
                         bool simulated = false);

// ---------------------------------------------------------------------------
// Dispatch table

struct DispatchVariant {
  int variant = 0;
  std::optional<int> index;  // attempt in history.json
  std::string label;
  nlohmann::json params;     // object
  std::string file;          // relative to the run folder
};

struct DispatchShape {
  std::string name;
  std::map<std::string, int64_t> sizes;
  int variant = 0;
  std::optional<double> median_ms;    // of the variant it gets
  std::optional<double> variant0_ms;  // of variant 0 (the best single configuration)
};

struct DispatchTable {
  std::string source;                   // where the table comes from
  std::string rule;                     // how the launch header chooses, in words
  std::vector<std::string> size_names;  // launch_config()'s arguments, in order
  std::vector<DispatchVariant> variants;
  std::vector<DispatchShape> shapes;    // the tuned shapes the header's rule is built from
  std::string code;                     // select_variant()'s body when the dispatch is measured, else empty
};

/// The dispatch table of the launch header that `kopt generate` writes from
/// this run: summary.json "specialization" (variants, the variant of each
/// tuned shape, and the measured decision tree "dispatch" written out as the
/// header's C++; a run without a tree picks the variant of the nearest tuned
/// shape), else the one winning configuration for every shape. The only
/// reader of that data in the report.
DispatchTable dispatch_table(const store::Summary& summary, const nlohmann::json& spec);

/// The table as HTML: the rule, one row per variant with its shapes, and one
/// row per tuned shape with its variant and timings.
std::string dispatch_html(const DispatchTable& t);

}  // namespace kopt::report
