// The dispatch rule off the tuned shapes (docs/dispatch.md; the model and its
// fit: model/dispatch.h), one source for kopt and for the launch headers it
// generates. kopt's model/dispatch.cpp calls these functions; `kopt generate`
// copies the text between the kopt:embed markers, unchanged, into every
// launch header that carries a cost model (as kopt_<name>::dispatch_rule),
// whose generated part then holds only data: the fitted coefficients, the
// tuned shapes and the support ranges (a Model below) and each variant's
// launch expressions. The launch headers' tests (tests/unit/test_generate.cpp)
// compile such headers and check that they choose what kopt chooses.
//
// Dependency-free: C++17 and <cmath>. Every name the embedded text uses is
// its own or std::-qualified (HUGE_VAL aside), so that a workload's size or
// tuning parameter names in the enclosing namespace cannot change it.
#pragma once

#include <cmath>

namespace kopt::model::dispatch_rule {

// kopt:embed-begin dispatch_rule
/// Off the tuned shapes a variant other than 0 runs only where every size x is
/// within this factor of its support [least, greatest] (the sizes of the tuned
/// shapes where it ran within 2x of the fastest variant):
/// x * kSupportFactor >= least and x <= greatest * kSupportFactor. On the
/// recorded H200 runs a row kernel fitted on N <= 4 alone predicted
/// 35x1500x2560 at less than half of its measured time (model/dispatch.h).
constexpr double kSupportFactor = 2.0;

/// One variant's launch at a shape, as the cost model reads it: its blocks
/// (grid x * y * z), one block's work (the template's block_work, in its own
/// unit), the bytes the launch moves (traffic_bytes) and the bytes of the
/// case's buffers (data_bytes); 0 where the template has no such expression.
struct Launch {
  double blocks = 0;
  double block_work = 0;
  double traffic = 0;
  double data = 0;
};

/// A fitted cost model (model::DispatchModel) as arrays indexed by variant.
/// A launch header initialises it in this member order (gen/dispatch_code.cpp).
struct Model {
  int variants;                      // the length of every per-variant array
  int sizes;                         // values in a shape (the measured tree's order of the size names)
  int sm_count;                      // SMs of the GPU the variants were timed on
  const int* blocks_per_sm;          // measured occupancy of each variant's launch (>= 1)
  const double* ms_per_work;         // ms per unit of waves * block_work (HUGE_VAL: never timed)
  const double* ms_fixed;            // ms per launch (null: 0)
  const double* ms_per_work_spread;  // ms per unit of spread waves * block_work (null: 0)
  const double* ms_per_byte;         // ms per byte of traffic (null: no traffic term)
  const double* ms_per_data_byte;    // ms per byte of the case's data (null: no data term)
  bool has_margin;                   // false: no margin passed the leave-one-out check
  double margin;                     // the predicted gain (a fraction) another variant needs over variant 0
  const long long* tuned;            // the tuned shapes: tuned_count rows of `sizes` values
  int tuned_count;
  const long long* support;  // [variant][size] = {least, greatest}, {0, -1}: none; null: no limit
};

/// The waves of `blocks` blocks (at least one) at `blocks_per_sm` blocks on
/// each of `sm_count` SMs, not rounded up: the work spread evenly over the SMs.
inline double spread_waves(double blocks, int blocks_per_sm, int sm_count) {
  return (blocks > 1 ? blocks : 1.0) /
         (static_cast<double>(blocks_per_sm > 1 ? blocks_per_sm : 1) * (sm_count > 1 ? sm_count : 1));
}

/// Whole waves: spread_waves() rounded up.
inline double waves(double blocks, int blocks_per_sm, int sm_count) {
  return std::ceil(spread_waves(blocks, blocks_per_sm, sm_count));
}

/// Predicted latency (ms) of variant v for launch `l`:
///   ms_fixed + ms_per_work * waves * block_work + ms_per_work_spread * spread_waves * block_work
///     + ms_per_byte * traffic + ms_per_data_byte * data
/// (negative byte counts as 0); HUGE_VAL where block_work is not positive or
/// v was never timed.
inline double predicted_ms(const Model& m, int v, const Launch& l) {
  if (!(l.block_work > 0) || !std::isfinite(m.ms_per_work[v])) return HUGE_VAL;
  const double spread = spread_waves(l.blocks, m.blocks_per_sm[v], m.sm_count);
  return (m.ms_fixed ? m.ms_fixed[v] : 0.0) + m.ms_per_work[v] * std::ceil(spread) * l.block_work +
         (m.ms_per_work_spread ? m.ms_per_work_spread[v] : 0.0) * spread * l.block_work +
         (m.ms_per_byte ? m.ms_per_byte[v] * (l.traffic > 0 ? l.traffic : 0.0) : 0.0) +
         (m.ms_per_data_byte ? m.ms_per_data_byte[v] * (l.data > 0 ? l.data : 0.0) : 0.0);
}

/// Whether the sizes `x` (m.sizes values, the tree's order) are a tuned shape:
/// there the measured tree alone decides.
inline bool is_tuned(const Model& m, const long long* x) {
  for (int t = 0; t < m.tuned_count; ++t) {
    bool same = true;
    for (int d = 0; d < m.sizes; ++d) same = same && m.tuned[t * m.sizes + d] == x[d];
    if (same) return true;
  }
  return false;
}

/// Whether variant v may run off the tuned shapes at sizes `x`: always for
/// variant 0 and without a support; else every size within kSupportFactor of
/// the variant's range.
inline bool supported(const Model& m, int v, const long long* x) {
  if (v == 0 || !m.support) return true;
  for (int d = 0; d < m.sizes; ++d) {
    const long long* r = m.support + (v * m.sizes + d) * 2;
    if (r[1] < r[0]) return false;
    if (static_cast<double>(x[d]) * kSupportFactor < static_cast<double>(r[0]) ||
        static_cast<double>(x[d]) > static_cast<double>(r[1]) * kSupportFactor)
      return false;
  }
  return true;
}

/// Whether a variant predicted at `ms` beats variant 0's `ms0` by `margin`.
inline bool beats_margin(double ms, double ms0, double margin) { return ms * (1 + margin) <= ms0; }

/// The variant predicted fastest (the lowest index among equals) among those
/// supported at `x` (null: every variant); -1 when none is predicted.
/// `launch_of(v)` gives variant v's Launch at the shape.
template <class LaunchOf>
int fastest_predicted(const Model& m, const long long* x, LaunchOf launch_of) {
  int best = -1;
  double best_ms = HUGE_VAL;
  for (int v = 0; v < m.variants; ++v) {
    if (x && !supported(m, v, x)) continue;
    const double ms = predicted_ms(m, v, launch_of(v));
    if (ms < best_ms) best = v, best_ms = ms;
  }
  return best;
}

/// The variant off the tuned shapes at sizes `x`: the one predicted fastest
/// among those supported there where it beats variant 0 by the margin, else
/// variant 0 (so too without a margin).
template <class LaunchOf>
int choose_off_tuned(const Model& m, const long long* x, LaunchOf launch_of) {
  if (!m.has_margin) return 0;
  const int v = fastest_predicted(m, x, launch_of);
  if (v <= 0) return 0;
  return beats_margin(predicted_ms(m, v, launch_of(v)), predicted_ms(m, 0, launch_of(0)), m.margin) ? v : 0;
}
// kopt:embed-end dispatch_rule

// kopt:embed-begin nearest_tuned
/// For a launch header without a measured dispatch (variants from a kopt
/// before it): the variant tuned on the nearest of `count` tuned shapes
/// (`shapes`: count rows of `sizes` values; `variants`: each one's variant),
/// distance the sum of squared log ratios of the sizes (each taken as 1 at
/// least); 0 without shapes.
inline int nearest_tuned(const double* shapes, const int* variants, int count, int sizes, const double* want) {
  int best = 0;
  double best_d = 1e300;
  for (int s = 0; s < count; ++s) {
    double d = 0;
    for (int i = 0; i < sizes; ++i) {
      const double a = want[i], b = shapes[s * sizes + i];
      const double r = std::log((a > 1 ? a : 1.0) / (b > 1 ? b : 1.0));
      d += r * r;
    }
    if (d < best_d) best_d = d, best = variants[s];
  }
  return best;
}
// kopt:embed-end nearest_tuned

}  // namespace kopt::model::dispatch_rule
