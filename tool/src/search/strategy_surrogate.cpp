// "surrogate": a k-nearest-neighbour model of log(score) over normalised
// value indices chooses the most promising of many random candidates.
//
// Until kSpaceFillingStart (strategy_base.h) results are in, proposals are
// random, each taking a value of a switch that no earlier one has (covering_unseen(): the first
// proposals cover both kernel bodies of a KIND switch). Afterwards, with
// probability kEpsilon a proposal is a random unseen configuration
// (exploration). Otherwise the candidates are kCandidates random unseen valid
// configurations plus the unseen neighbours of the kIncumbents best observed
// ones (random candidates alone rarely land next to the best), and the
// candidate with the lowest prediction wins. With probability kPolish the
// candidates are only the unseen neighbours of the best configuration
// (local polish): without it, a neighbour of the best that also neighbours a
// failed configuration is predicted badly and may wait for hundreds of
// proposals, although it is often the optimum (measured: mean evaluations to
// the exact optimum of the constrained test objective 900 -> 70).
//
// The prediction is the inverse-distance-weighted mean of the log scores of
// the kNeighbours nearest observed configurations, where a parameter's
// coordinate is its value index divided by (number of values - 1). A failed
// configuration counts as kFailurePenalty (in log units) worse than the
// worst success.
#include <algorithm>
#include <cmath>
#include <limits>

#include "search/strategy_base.h"

namespace kopt::search::detail {
namespace {

constexpr double kEpsilon = 0.2;
constexpr size_t kCandidates = 200;
constexpr double kPolish = 0.2;
constexpr size_t kIncumbents = 3;
constexpr size_t kNeighbours = 3;
constexpr double kFailurePenalty = 0.693;  // log(2): "twice as slow as the worst"

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Sample {
  Point point;
  std::vector<double> x;  // normalised coordinates
  bool ok;
  double value;  // log score (ok only)
};

class Surrogate final : public StrategyBase {
 public:
  std::string name() const override { return "surrogate"; }

 protected:
  void reset() override {
    samples_.clear();
    worst_ok_ = -kInf;
  }

  std::optional<Point> propose() override {
    if (samples_.size() < kSpaceFillingStart) return covering_unseen();
    if (uniform01(rng()) < kEpsilon) return random_unseen();
    std::vector<Point> candidates;
    if (uniform01(rng()) < kPolish) candidates = polish_candidates();
    if (candidates.empty()) candidates = draw_candidates();
    if (candidates.empty()) return std::nullopt;
    return most_promising(candidates);
  }

  void learn(const Point& p, bool ok, double v) override {
    samples_.push_back(Sample{p, normalise(p), ok, v});
    if (ok) worst_ok_ = std::max(worst_ok_, v);
  }

 private:
  /// The candidate with the lowest prediction (the first one on ties).
  const Point& most_promising(const std::vector<Point>& candidates) const {
    size_t best = 0;
    double best_prediction = kInf;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const double p = predict(normalise(candidates[i]));
      if (p < best_prediction) {
        best_prediction = p;
        best = i;
      }
    }
    return candidates[best];
  }

  /// The unseen valid neighbours of the best configuration observed.
  std::vector<Point> polish_candidates() const {
    const std::vector<Point> inc = incumbents();
    return inc.empty() ? std::vector<Point>{} : unseen_neighbours(inc.front());
  }

  /// Random unseen valid candidates plus the unseen neighbours of the
  /// incumbents, without duplicates, in a deterministic order.
  std::vector<Point> draw_candidates() {
    std::vector<Point> out;
    PointSet taken;
    auto add = [&](const Point& p) {
      if (taken.insert(p).second) out.push_back(p);
    };
    for (const Point& inc : incumbents())
      for (const Point& n : unseen_neighbours(inc)) add(n);
    for (size_t i = 0; i < kCandidates; ++i) {
      std::optional<Point> p = random_unseen();
      if (!p) break;
      add(*p);
    }
    return out;
  }

  /// The kIncumbents best successful configurations observed, as points.
  std::vector<Point> incumbents() const {
    std::vector<const Sample*> ok;
    for (const Sample& s : samples_)
      if (s.ok) ok.push_back(&s);
    const size_t n = std::min(kIncumbents, ok.size());
    std::partial_sort(ok.begin(), ok.begin() + n, ok.end(),
                      [](const Sample* a, const Sample* b) { return a->value < b->value; });
    std::vector<Point> out;
    for (size_t i = 0; i < n; ++i) out.push_back(ok[i]->point);
    return out;
  }

  /// Inverse-distance-weighted mean of the kNeighbours nearest samples.
  double predict(const std::vector<double>& x) const {
    struct Near {
      double d2 = kInf;  // squared distance
      double value = 0;
    };
    Near near[kNeighbours];  // sorted by distance, nearest first
    for (const Sample& s : samples_) {
      const double d2 = squared_distance(x, s.x);
      if (d2 >= near[kNeighbours - 1].d2) continue;
      size_t k = kNeighbours - 1;
      for (; k > 0 && near[k - 1].d2 > d2; --k) near[k] = near[k - 1];
      near[k] = Near{d2, value_of(s)};
    }
    double sum = 0, weights = 0;
    for (const Near& n : near) {
      if (n.d2 == kInf) break;
      const double w = 1.0 / (std::sqrt(n.d2) + 1e-9);
      sum += w * n.value;
      weights += w;
    }
    return weights > 0 ? sum / weights : 0.0;
  }

  double value_of(const Sample& s) const {
    if (s.ok) return s.value;
    return (worst_ok_ == -kInf ? 0.0 : worst_ok_) + kFailurePenalty;
  }

  static double squared_distance(const std::vector<double>& a, const std::vector<double>& b) {
    double d = 0;
    for (size_t i = 0; i < a.size(); ++i) d += (a[i] - b[i]) * (a[i] - b[i]);
    return d;
  }

  std::vector<double> normalise(const Point& p) const {
    std::vector<double> x(p.size());
    for (size_t d = 0; d < p.size(); ++d) x[d] = extent(d) > 1 ? double(p[d]) / (extent(d) - 1) : 0.0;
    return x;
  }

  std::vector<Sample> samples_;
  double worst_ok_ = -kInf;
};

}  // namespace

std::unique_ptr<Strategy> make_surrogate() { return std::make_unique<Surrogate>(); }

}  // namespace kopt::search::detail
