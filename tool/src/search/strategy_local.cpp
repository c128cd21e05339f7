// "local" (a portfolio member): descent from the best configuration found so
// far, by whichever member, in the manner of a pattern search with a local
// linear model (the steps of Hooke and Jeeves' pattern search and of
// Powell's COBYLA, on value indices).
//
// Each proposal is the first unseen valid one of:
//  1. the pattern move: the best plus the step that made it the best (the
//     difference between the last two bests, in value indices);
//  2. the model step: a linear model of log(score) fitted by least squares to
//     the kLocalFit successful results nearest the best (normalised value
//     indices) gives a descent direction; the best moved one value against
//     the slope along every parameter whose slope is at least half the
//     largest, then along the steepest parameter alone;
//  3. a random unseen neighbour (one parameter, one step) of the best, or of
//     the next best of the kLocalIncumbents best when it has none;
//  4. a random unseen configuration.
#include <algorithm>
#include <cmath>

#include "search/strategy_base.h"

namespace kopt::search::detail {
namespace {

constexpr size_t kLocalIncumbents = 8;
constexpr size_t kLocalFit = 24;

class Local final : public StrategyBase {
 public:
  std::string name() const override { return "local"; }

 protected:
  void reset() override {
    best_.clear();
    ok_.clear();
    step_.clear();
  }

  std::optional<Point> propose() override {
    if (!best_.empty()) {
      const Point& b = best_.front().second;
      if (!step_.empty())
        if (std::optional<Point> q = moved(b, step_)) return q;
      for (const Point& q : model_steps(b))
        if (unseen_valid(q)) return q;
    }
    for (const auto& [v, p] : best_) {
      std::vector<Point> n = unseen_neighbours(p);
      if (!n.empty()) return pick(n);
    }
    return random_unseen();
  }

  void learn(const Point& p, bool ok, double v) override {
    if (!ok) return;
    ok_.push_back({v, p});
    if (!best_.empty() && v < best_.front().first) {
      step_.assign(p.size(), 0);
      for (size_t d = 0; d < p.size(); ++d) step_[d] = p[d] - best_.front().second[d];
    }
    auto pos = std::lower_bound(best_.begin(), best_.end(), v,
                                [](const std::pair<double, Point>& m, double x) { return m.first < x; });
    best_.insert(pos, {v, p});
    if (best_.size() > kLocalIncumbents) best_.pop_back();
  }

 private:
  std::optional<Point> moved(const Point& b, const std::vector<int32_t>& step) const {
    Point q = b;
    for (size_t d = 0; d < q.size(); ++d) q[d] += step[d];
    if (q == b || !unseen_valid(q)) return std::nullopt;
    return q;
  }

  double coord(const Point& p, size_t d) const { return extent(d) > 1 ? double(p[d]) / (extent(d) - 1) : 0.0; }

  /// The model steps from `b` (empty when too few results to fit).
  std::vector<Point> model_steps(const Point& b) const {
    const size_t n = dims();
    if (ok_.size() < n + 2) return {};
    // The kLocalFit successful results nearest b.
    std::vector<std::pair<double, size_t>> near;
    for (size_t i = 0; i < ok_.size(); ++i) {
      double d2 = 0;
      for (size_t d = 0; d < n; ++d) d2 += (coord(ok_[i].second, d) - coord(b, d)) * (coord(ok_[i].second, d) - coord(b, d));
      near.push_back({d2, i});
    }
    const size_t m = std::min(near.size(), std::max(kLocalFit, 2 * n + 2));
    std::partial_sort(near.begin(), near.begin() + long(m), near.end());
    // Normal equations of y = c + g . (x - b), with a small ridge.
    const size_t k = n + 1;
    std::vector<double> a(k * k, 0.0), r(k, 0.0);
    for (size_t j = 0; j < m; ++j) {
      const auto& [v, p] = ok_[near[j].second];
      std::vector<double> x(k, 1.0);
      for (size_t d = 0; d < n; ++d) x[d + 1] = coord(p, d) - coord(b, d);
      for (size_t u = 0; u < k; ++u) {
        r[u] += x[u] * v;
        for (size_t w = 0; w < k; ++w) a[u * k + w] += x[u] * x[w];
      }
    }
    for (size_t u = 1; u < k; ++u) a[u * k + u] += 1e-3;
    std::vector<double> g = solve(a, r, k);
    if (g.empty()) return {};
    double top = 0;
    for (size_t d = 0; d < n; ++d)
      if (extent(d) > 1) top = std::max(top, std::abs(g[d + 1]));
    if (top <= 0) return {};
    std::vector<Point> out;
    Point all = b;
    size_t steepest = 0;
    for (size_t d = 0; d < n; ++d) {
      if (extent(d) < 2) continue;
      if (std::abs(g[d + 1]) >= 0.5 * top) all[d] += g[d + 1] > 0 ? -1 : 1;
      if (std::abs(g[d + 1]) == top) steepest = d;
    }
    out.push_back(all);
    Point one = b;
    one[steepest] += g[steepest + 1] > 0 ? -1 : 1;
    out.push_back(one);
    return out;
  }

  /// Gaussian elimination with partial pivoting; empty when singular.
  static std::vector<double> solve(std::vector<double> a, std::vector<double> r, size_t k) {
    for (size_t c = 0; c < k; ++c) {
      size_t piv = c;
      for (size_t i = c + 1; i < k; ++i)
        if (std::abs(a[i * k + c]) > std::abs(a[piv * k + c])) piv = i;
      if (std::abs(a[piv * k + c]) < 1e-12) return {};
      for (size_t w = 0; w < k; ++w) std::swap(a[c * k + w], a[piv * k + w]);
      std::swap(r[c], r[piv]);
      for (size_t i = c + 1; i < k; ++i) {
        const double f = a[i * k + c] / a[c * k + c];
        for (size_t w = c; w < k; ++w) a[i * k + w] -= f * a[c * k + w];
        r[i] -= f * r[c];
      }
    }
    std::vector<double> x(k);
    for (size_t c = k; c-- > 0;) {
      double s = r[c];
      for (size_t w = c + 1; w < k; ++w) s -= a[c * k + w] * x[w];
      x[c] = s / a[c * k + c];
    }
    return x;
  }

  std::vector<std::pair<double, Point>> best_;  // the kLocalIncumbents best, ascending
  std::vector<std::pair<double, Point>> ok_;    // every success
  std::vector<int32_t> step_;                   // the last improving step of the best
};

}  // namespace

std::unique_ptr<Strategy> make_local() { return std::make_unique<Local>(); }

}  // namespace kopt::search::detail
