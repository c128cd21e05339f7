// Speedups as the report's heatmap and history table show them (internal to
// report/): over the reference, or over the initial kernel when the
// reference was never timed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/attempt.h"

namespace kopt::report::speedup {

/// "#<index> <label>" (the kind when there is no label).
std::string label_of(const model::Attempt& a);

/// What the speedups are over: the reference, or (when the reference was
/// never timed) the initial kernel.
struct Base {
  const model::Attempt* ref = nullptr;      // the reference attempt, if any (reference mode)
  const model::Attempt* initial = nullptr;  // set: initial-kernel mode
};

/// Base median / candidate median on case `name` (both ms; the ratio is
/// dimensionless). Reference mode: the reference timed with this attempt
/// when it was, else the reference attempt's. Initial mode: the initial
/// kernel's median. `ref_ms` and `own_ms`, when given, get the two medians.
std::optional<double> case_speedup(const model::Attempt& a, const std::string& name, const Base& base,
                                   double* ref_ms = nullptr, double* own_ms = nullptr);

/// Base geomean / the attempt's geomean, for an attempt that passed.
std::optional<double> geomean_speedup(const model::Attempt& a, const Base& base);

/// Reference mode when any attempt has a speedup over the reference; else
/// the first initial kernel that passed, when there is one.
Base base_for(const std::vector<model::Attempt>& history, const std::vector<std::string>& cases);

}  // namespace kopt::report::speedup
