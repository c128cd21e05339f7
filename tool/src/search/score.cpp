// Scoring a search on a recorded space (see score.h). The comments name the
// function of the reference implementation (autotuning_methodology 1.1.0)
// that each step follows.
#include "search/score.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "util/error.h"

namespace kopt::search::score {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

[[noreturn]] void bad_space(const std::string& what) {
  throw UsageError("kopt.search.803", "the recorded space cannot be scored: " + what);
}

[[noreturn]] void bad_runs(const std::string& what) {
  throw UsageError("kopt.search.804", "the runs cannot be scored: " + what);
}

/// Python's round() and numpy.round(): to the nearest integer, ties to even.
double round_even(double x) { return x - std::remainder(x, 1.0); }

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? kNaN : s / static_cast<double>(v.size());
}

/// scipy.interpolate.PchipInterpolator(x, y)(at): the monotone piecewise cubic
/// Hermite interpolant of Fritsch and Carlson, with scipy's derivatives
/// (interior: weighted harmonic mean of the neighbouring slopes, 0 at a change of
/// sign; ends: the three-point formula, limited to keep the shape). `x` strictly
/// increasing, at least two points; `at` within [x.front(), x.back()].
std::vector<double> pchip(const std::vector<double>& x, const std::vector<double>& y, const std::vector<double>& at) {
  const size_t n = x.size();
  std::vector<double> h(n - 1), m(n - 1), d(n, 0.0);
  for (size_t k = 0; k + 1 < n; ++k) {
    h[k] = x[k + 1] - x[k];
    m[k] = (y[k + 1] - y[k]) / h[k];
  }
  auto sign = [](double v) { return (v > 0) - (v < 0); };
  if (n == 2) {
    d[0] = d[1] = m[0];
  } else {
    for (size_t k = 1; k + 1 < n; ++k) {
      if (sign(m[k - 1]) != sign(m[k]) || m[k - 1] == 0 || m[k] == 0) continue;
      const double w1 = 2 * h[k] + h[k - 1], w2 = h[k] + 2 * h[k - 1];
      d[k] = (w1 + w2) / (w1 / m[k - 1] + w2 / m[k]);
    }
    auto edge = [&](double h0, double h1, double m0, double m1) {
      double e = ((2 * h0 + h1) * m0 - h0 * m1) / (h0 + h1);
      if (sign(e) != sign(m0)) e = 0;
      else if (sign(m0) != sign(m1) && std::abs(e) > 3 * std::abs(m0)) e = 3 * m0;
      return e;
    };
    d[0] = edge(h[0], h[1], m[0], m[1]);
    d[n - 1] = edge(h[n - 2], h[n - 3], m[n - 2], m[n - 3]);
  }
  std::vector<double> out;
  out.reserve(at.size());
  for (double t : at) {
    size_t k = static_cast<size_t>(std::upper_bound(x.begin(), x.end(), t) - x.begin());
    k = std::min(std::max<size_t>(k, 1), n - 1) - 1;  // the interval [x[k], x[k+1]]
    const double s = (t - x[k]) / h[k];
    const double h00 = (1 + 2 * s) * (1 - s) * (1 - s), h10 = s * (1 - s) * (1 - s);
    const double h01 = s * s * (3 - 2 * s), h11 = s * s * (s - 1);
    out.push_back(h00 * y[k] + h10 * h[k] * d[k] + h01 * y[k + 1] + h11 * h[k] * d[k + 1]);
  }
  return out;
}

/// sklearn.isotonic.IsotonicRegression(increasing=False, out_of_bounds="clip")
/// fitted to (x, y) and evaluated at `at`: equal x are merged (their mean y,
/// weighted by count), the pool-adjacent-violators algorithm makes y
/// non-increasing, and the fit is interpolated linearly, constant beyond the
/// data.
std::vector<double> isotonic_decreasing(std::vector<std::pair<double, double>> xy, const std::vector<double>& at) {
  std::sort(xy.begin(), xy.end());
  // Unique x with weights (the count of points at each).
  std::vector<double> fx, sum, weight;
  for (const auto& [x, y] : xy) {
    if (!fx.empty() && fx.back() == x) {
      sum.back() += y;
      weight.back() += 1;
    } else {
      fx.push_back(x);
      sum.push_back(y);
      weight.push_back(1);
    }
  }
  // Pool adjacent violators, non-increasing: a block's mean may not exceed the
  // previous block's.
  struct Block {
    size_t first;  // its first unique x
    double sum, weight;
  };
  std::vector<Block> blocks;
  for (size_t i = 0; i < fx.size(); ++i) {
    blocks.push_back({i, sum[i], weight[i]});
    while (blocks.size() > 1) {
      const Block& b = blocks.back();
      Block& a = blocks[blocks.size() - 2];
      if (b.sum / b.weight <= a.sum / a.weight) break;
      a.sum += b.sum;
      a.weight += b.weight;
      blocks.pop_back();
    }
  }
  std::vector<double> fy(fx.size());
  for (size_t k = 0; k < blocks.size(); ++k) {
    const size_t end = k + 1 < blocks.size() ? blocks[k + 1].first : fx.size();
    for (size_t i = blocks[k].first; i < end; ++i) fy[i] = blocks[k].sum / blocks[k].weight;
  }
  std::vector<double> out;
  out.reserve(at.size());
  for (double t : at) {
    t = std::min(std::max(t, fx.front()), fx.back());
    const size_t k = static_cast<size_t>(std::upper_bound(fx.begin(), fx.end(), t) - fx.begin());
    if (k == 0) out.push_back(fy.front());
    else if (k >= fx.size()) out.push_back(fy.back());
    else {
      const double s = (t - fx[k - 1]) / (fx[k] - fx[k - 1]);
      out.push_back(fy[k - 1] + s * (fy[k] - fy[k - 1]));
    }
  }
  return out;
}

}  // namespace

std::optional<size_t> evaluations_to(const Trace& t, double target) {
  for (size_t i = 0; i < t.size(); ++i)
    if (t[i].value && *t[i].value <= target) return i + 1;
  return std::nullopt;
}

std::optional<double> seconds_to(const Trace& t, double target) {
  double s = 0;
  for (const Step& step : t) {
    s += step.seconds;
    if (step.value && *step.value <= target) return s;
  }
  return std::nullopt;
}

std::optional<double> median(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

Methodology::Methodology(std::vector<double> ok_values, size_t failed, std::vector<double> ok_seconds,
                         std::vector<double> failed_seconds, MethodologyOptions o)
    : o_(o), sorted_(std::move(ok_values)) {
  for (double v : sorted_)
    if (!std::isfinite(v)) bad_space("a value is not finite");
  std::sort(sorted_.begin(), sorted_.end());
  if (sorted_.size() < 2 || sorted_.front() == sorted_.back())
    bad_space("it needs at least two different valid values (has " + std::to_string(sorted_.size()) + " valid)");
  median_ = *median(sorted_);
  if (median_ == optimum()) bad_space("half of its valid configurations or more share the optimum");

  // SearchspaceStatistics.cutoff_point_fevals_time_start_end. Where the two
  // cutoffs are fewer than 2 evaluations apart, the package widens the range
  // to at most the evaluations of cutoff_point(1.0) (it takes that call's
  // value, [0], where its evaluations are meant; evaluations are taken here).
  // A start of 0 evaluations (possible only when half the space shares its
  // worst value) is taken as 1: no run has a result before its first evaluation.
  size_t start = cutoff(o_.cutoff_percentile_start).second, end = cutoff(o_.cutoff_percentile).second;
  if (end < start + 2) {
    const size_t limit = cutoff(1.0).second;
    if (start == 0) {
      end = std::min(limit, end + 2);
    } else {
      end = std::min(limit, end + 1);
      start -= 1;
    }
  }
  if (end <= start) bad_space("the cutoff points coincide (" + std::to_string(start) + " evaluations)");
  first_ = std::max<size_t>(start, 1);
  last_ = std::max(end, first_ + 1);

  // The time axis (SearchspaceStatistics.total_time_median and
  // total_time_mean_per_feval).
  if (ok_seconds.empty() && failed_seconds.empty()) return;
  if (ok_seconds.size() != sorted_.size() || failed_seconds.size() != failed)
    bad_space("evaluation costs are given for " + std::to_string(ok_seconds.size()) + " valid and " +
              std::to_string(failed_seconds.size()) + " failed configurations, but it has " +
              std::to_string(sorted_.size()) + " and " + std::to_string(failed));
  std::vector<double> all = ok_seconds;
  all.insert(all.end(), failed_seconds.begin(), failed_seconds.end());
  for (double s : all)
    if (!(std::isfinite(s) && s >= 0)) bad_space("an evaluation cost is negative or not finite");
  median_seconds_ = *median(all);
  // The package's formula: the valid mean plus the failed share times the failed mean.
  seconds_per_eval_ = mean(ok_seconds);
  if (failed) seconds_per_eval_ += double(failed) / double(all.size()) * mean(failed_seconds);
  if (!(median_seconds_ > 0 && seconds_per_eval_ > 0)) bad_space("the evaluation costs are all zero");
  timed_ = true;
}

double Methodology::cutoff_value() const { return optimum() + (median_ - optimum()) * (1 - o_.cutoff_percentile); }

std::pair<double, size_t> Methodology::cutoff(double percentile) const {
  // SearchspaceStatistics.cutoff_point: the first position i, counting from
  // the worst value, whose value is within the target; random search needs
  // ceil(i / (N + 1 - i)) evaluations to get there. One position less when
  // that value is the optimum itself (short of a cutoff of 100%).
  const size_t n = sorted_.size();
  const double target = optimum() + (median_ - optimum()) * (1 - percentile);
  size_t i = 0;
  while (sorted_[n - 1 - i] > target) ++i;
  if (percentile != 1.0 && sorted_[n - 1 - i] == optimum()) {
    if (i == 0) bad_space("the optimum is reached at once");
    --i;
  }
  return {target, static_cast<size_t>(std::ceil(double(i) / double(n + 1 - i)))};
}

double Methodology::random_value(size_t evaluations) const {
  // RandomSearchCalculatedBaseline._redwhite_index over the values sorted worst first.
  const size_t n = sorted_.size();
  const double m = static_cast<double>(evaluations);
  const double index = std::min(double(n - 1), round_even(m * double(n + 1) / (m + 1)));
  return sorted_[n - 1 - static_cast<size_t>(index)];
}

double Methodology::position(double v) const {
  const auto it = std::lower_bound(sorted_.begin(), sorted_.end(), v);
  if (it == sorted_.end() || *it != v)
    bad_runs("a run's value " + std::to_string(v) + " is not one of the space's valid values");
  return static_cast<double>(it - sorted_.begin());
}

std::vector<double> Methodology::standardised_curve(const std::vector<Trace>& runs) const {
  if (runs.empty()) bad_runs("no runs");
  // Each run's best position after each evaluation (NaN before its first valid result).
  std::vector<std::vector<double>> best(runs.size());
  for (size_t r = 0; r < runs.size(); ++r) {
    double b = kNaN;
    for (size_t f = 0; f < last_; ++f) {
      if (f < runs[r].size() && runs[r][f].value) {
        const double p = position(*runs[r][f].value);
        if (std::isnan(b) || p < b) b = p;
      }
      best[r].push_back(b);
    }
  }
  std::vector<double> out;
  const double n = static_cast<double>(sorted_.size());
  for (size_t f = first_; f <= last_; ++f) {
    // StochasticOptimizationAlgorithm.get_curve_over_fevals: the median position
    // (numpy.nanmedian, rounded ties-to-even); no valid result in any run yet:
    // the worst position.
    std::vector<double> at;
    for (const auto& b : best)
      if (!std::isnan(b[f - 1])) at.push_back(b[f - 1]);
    const double pos = at.empty() ? n - 1 : std::min(n - 1, round_even(*median(at)));
    const double curve = sorted_[static_cast<size_t>(pos)];
    const double random = random_value(f);
    out.push_back(random == optimum() ? kNaN : (curve - random) / (optimum() - random));
  }
  return out;
}

double Methodology::score(const std::vector<Trace>& runs) const {
  std::vector<double> defined;
  for (double v : standardised_curve(runs))
    if (!std::isnan(v)) defined.push_back(v);
  if (defined.empty()) bad_runs("the random-search baseline is at the optimum throughout the range");
  return mean(defined);
}

double Methodology::first_second() const {
  return o_.cutoff_percentile_start > 0 ? static_cast<double>(first_) * median_seconds_ : 0.0;
}
double Methodology::last_second() const { return static_cast<double>(last_) * median_seconds_; }
double Methodology::time_budget() const { return last_second() * (1 + o_.time_budget_margin); }

std::vector<double> Methodology::random_curve_over_time(const std::vector<double>& times) const {
  // RandomSearchCalculatedBaseline.get_curve_over_time: evaluations =
  // max(round(t / seconds per evaluation), 1); the draws at the first
  // occurrence of each count, interpolated (PCHIP) at evenly spaced counts
  // from the first to the last.
  std::vector<double> evals;
  for (double t : times) evals.push_back(std::max(round_even(t / seconds_per_eval_), 1.0));
  std::vector<double> x, y;
  for (size_t i = 0; i < evals.size(); ++i)
    if (i == 0 || evals[i] > evals[i - 1]) {
      x.push_back(evals[i]);
      y.push_back(random_value(static_cast<size_t>(evals[i])));
    }
  if (evals.size() <= 2 || x.size() < 2) {
    std::vector<double> draws;
    for (double e : evals) draws.push_back(random_value(static_cast<size_t>(e)));
    return draws;
  }
  std::vector<double> at(evals.size());
  const double step = (evals.back() - evals.front()) / double(evals.size() - 1);
  for (size_t i = 0; i < at.size(); ++i) at[i] = evals.front() + step * double(i);
  at.back() = evals.back();
  return pchip(x, y, at);
}

std::optional<double> Methodology::score_over_time(const std::vector<Trace>& runs) const {
  if (!timed_) return std::nullopt;
  if (runs.empty()) bad_runs("no runs");
  const size_t resolution = static_cast<size_t>(std::max(o_.time_resolution, 2));
  std::vector<double> times(resolution);
  const double t0 = first_second(), t1 = last_second();
  for (size_t i = 0; i < resolution; ++i) times[i] = t0 + (t1 - t0) * double(i) / double(resolution - 1);

  // Each run, up to its time budget: (elapsed, best position) after each evaluation
  // that has a valid best (runner.py, write_results).
  std::vector<std::vector<std::pair<double, double>>> points(runs.size());
  std::vector<bool> row_used;  // evaluation index -> some run has a valid best there
  for (size_t r = 0; r < runs.size(); ++r) {
    double elapsed = 0, b = kNaN;
    for (size_t f = 0; f < runs[r].size(); ++f) {
      if (elapsed >= time_budget()) break;
      elapsed += runs[r][f].seconds;
      if (runs[r][f].value) {
        const double p = position(*runs[r][f].value);
        if (std::isnan(b) || p < b) b = p;
      }
      if (!std::isnan(b)) {
        points[r].push_back({elapsed, b});
        if (row_used.size() <= f) row_used.resize(f + 1, false);
        row_used[f] = true;
      }
    }
  }
  // StochasticOptimizationAlgorithm._get_curve_over_time_values_in_range: the
  // stopping point (the first run end past the median run end), and the data
  // within the range widened by a margin.
  std::vector<double> ends;
  for (const auto& p : points)
    if (!p.empty()) ends.push_back(p.back().first);
  if (ends.empty()) bad_runs("no run has a valid result");
  std::sort(ends.begin(), ends.end());
  const double mid_end = *median(ends);
  double stop = times.back();
  for (double e : ends)
    if (e > mid_end) {
      stop = e;
      break;
    }
  // The margin grows with the share of the runs in the data (num_repeats / times.size).
  const size_t rows = static_cast<size_t>(std::count(row_used.begin(), row_used.end(), true));
  const double margin = 0.1 + 0.25 / double(rows);
  const double lo = times.front() * (1 - margin), hi = times.back() * (1 + margin);
  std::vector<std::pair<double, double>> pooled;
  for (const auto& p : points) {
    size_t in = 0;
    for (const auto& [t, b] : p)
      if (t >= lo && t <= hi) {
        pooled.push_back({t, b});
        ++in;
      }
    if (in < 2) bad_runs("a run has fewer than two results within the time range (the package's \"not enough overlap\")");
  }
  // The isotonic fit of the positions (curves.py, get_curve_over_time).
  const std::vector<double> fit = isotonic_decreasing(pooled, times);
  const std::vector<double> random = random_curve_over_time(times);
  const double n = static_cast<double>(sorted_.size());
  std::vector<double> curve(resolution);
  for (size_t i = 0; i < resolution; ++i)
    curve[i] = sorted_[static_cast<size_t>(std::min(std::max(round_even(fit[i]), 0.0), n - 1))];
  if (stop < times.back()) {
    if (stop <= times.front()) bad_runs("the runs stop before the time range starts");
    size_t k = 0;
    while (times[k] <= stop) ++k;
    for (size_t i = k + 1; i < resolution; ++i) curve[i] = curve[k];
  }
  double sum = 0;
  size_t defined = 0;
  for (size_t i = 0; i < resolution; ++i) {
    if (optimum() == random[i]) continue;  // as standardised_curve()
    sum += (curve[i] - random[i]) / (optimum() - random[i]);
    ++defined;
  }
  if (!defined) bad_runs("the random-search baseline is at the optimum throughout the time range");
  return sum / double(defined);
}

}  // namespace kopt::search::score
