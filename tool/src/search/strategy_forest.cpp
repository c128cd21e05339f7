// "forest": a random-forest model of log(score) over value indices chooses
// the most promising of many candidates (the model of SMAC: F. Hutter, H. H.
// Hoos, K. Leyton-Brown, "Sequential model-based optimization for general
// algorithm configuration", LION 5, 2011).
//
// Why a forest: a tuning landscape is mostly main effects and a few
// interactions on discrete parameters, with cliffs (a resource limit, a
// value that is several times slower than its neighbours). A regression tree
// splits a parameter's values where the objective changes, so one slow value
// (a non-power-of-two tile) or a failing region (too much shared memory) is
// isolated by two splits and learnt from every configuration that has it;
// a nearest-neighbour model ("surrogate") predicts from the few
// configurations nearest in value-index space and cannot tell such a value
// apart from its neighbours.
//
// The model: kTrees regression trees, each fitted to a bootstrap sample of
// the successful results' log scores; a node splits on the best threshold
// (the largest decrease of the squared error) of a random subset of the
// parameters (each with probability kFeatureFraction), a parameter's value
// index being its coordinate; leaves hold at least kMinLeaf results, depth
// at most kMaxDepth. The prediction is the trees' mean, its spread their
// standard deviation. Failures are not counted as slow (a failure beside the
// optimum would make the model avoid the optimum's region): a second forest
// of the same kind, fitted to every result with 1 for a failure and 0 for a
// success, predicts the chance that a configuration fails (no forest, and
// chance 0, while nothing has failed). Both are refitted when the results
// have grown by a kRefit fraction since the last fit (at least one).
//
// Proposals: until kSpaceFillingStart (strategy_base.h) results are in,
// covering_unseen(). Then, with probability kForestEpsilon, a random unseen
// configuration; otherwise, among kForestCandidates random unseen
// configurations, the unseen neighbours (one parameter one step, and two
// parameters one step each: StrategyBase::unseen_diagonal_neighbours()) of
// the kForestIncumbents best results and kMutants random changes of two
// parameters of those, the candidate with the lowest mean - kKappa x spread,
// leaving after every other those whose chance of failing is over
// kMaxFailure (a learnt filter before compiling).
//
// The constants are common random-forest settings, not tuned; the forest's
// place in the portfolio was measured on synthetic design spaces only
// (docs/search.md, "The default portfolio").
#include <algorithm>
#include <cmath>
#include <limits>

#include "search/strategy_base.h"

namespace kopt::search::detail {
namespace {

constexpr size_t kTrees = 12;
constexpr size_t kMinLeaf = 2;
constexpr size_t kMaxDepth = 14;
constexpr double kFeatureFraction = 0.7;  // the chance that a node considers a parameter
constexpr double kRefit = 0.1;
constexpr double kForestEpsilon = 0.1;
constexpr double kKappa = 0.5;
constexpr size_t kForestCandidates = 200;
constexpr size_t kForestIncumbents = 3;
constexpr size_t kMutants = 30;
constexpr double kMaxFailure = 0.5;

/// One regression tree over value indices.
class Tree {
 public:
  /// Fits to the rows `idx` of (x, y).
  void fit(const std::vector<Point>& x, const std::vector<double>& y, std::vector<size_t> idx,
           const std::vector<int32_t>& extents, Rng& rng) {
    nodes_.clear();
    build(x, y, idx, 0, idx.size(), 0, extents, rng);
  }

  double predict(const Point& p) const {
    size_t n = 0;
    while (nodes_[n].dim >= 0) n = p[size_t(nodes_[n].dim)] <= nodes_[n].threshold ? nodes_[n].left : nodes_[n].right;
    return nodes_[n].value;
  }

 private:
  struct Node {
    int dim = -1;  // -1: a leaf
    int32_t threshold = 0;
    size_t left = 0, right = 0;
    double value = 0;
  };

  size_t build(const std::vector<Point>& x, const std::vector<double>& y, std::vector<size_t>& idx, size_t lo,
               size_t hi, size_t depth, const std::vector<int32_t>& extents, Rng& rng) {
    const size_t me = nodes_.size();
    nodes_.push_back(Node{});
    double sum = 0;
    for (size_t i = lo; i < hi; ++i) sum += y[idx[i]];
    const size_t n = hi - lo;
    nodes_[me].value = sum / double(n);
    if (n < 2 * kMinLeaf || depth >= kMaxDepth) return me;
    // The best split over a random subset of the dimensions.
    int best_dim = -1;
    int32_t best_t = 0;
    double best_gain = 1e-12;
    const double base = sum * sum / double(n);
    std::vector<double> s;
    std::vector<size_t> c;
    for (size_t d = 0; d < extents.size(); ++d) {
      if (extents[d] < 2 || uniform01(rng) > kFeatureFraction) continue;
      s.assign(size_t(extents[d]), 0.0);
      c.assign(size_t(extents[d]), 0);
      for (size_t i = lo; i < hi; ++i) {
        s[size_t(x[idx[i]][d])] += y[idx[i]];
        ++c[size_t(x[idx[i]][d])];
      }
      double sl = 0;
      size_t cl = 0;
      for (int32_t t = 0; t + 1 < extents[d]; ++t) {
        sl += s[size_t(t)];
        cl += c[size_t(t)];
        if (c[size_t(t)] == 0) continue;  // the same split as the threshold below
        if (cl < kMinLeaf || n - cl < kMinLeaf) continue;
        const double sr = sum - sl;
        const double gain = sl * sl / double(cl) + sr * sr / double(n - cl) - base;
        if (gain > best_gain) {
          best_gain = gain;
          best_dim = int(d);
          best_t = t;
        }
      }
    }
    if (best_dim < 0) return me;
    const auto mid = std::partition(idx.begin() + long(lo), idx.begin() + long(hi),
                                    [&](size_t i) { return x[i][size_t(best_dim)] <= best_t; });
    const size_t m = size_t(mid - idx.begin());
    nodes_[me].dim = best_dim;
    nodes_[me].threshold = best_t;
    const size_t l = build(x, y, idx, lo, m, depth + 1, extents, rng);
    const size_t r = build(x, y, idx, m, hi, depth + 1, extents, rng);
    nodes_[me].left = l;
    nodes_[me].right = r;
    return me;
  }

  std::vector<Node> nodes_;
};

constexpr double kInfinity = std::numeric_limits<double>::infinity();

class Forest final : public StrategyBase {
 public:
  std::string name() const override { return "forest"; }

 protected:
  void reset() override {
    x_.clear();
    ok_.clear();
    v_.clear();
    trees_.clear();
    feasibility_.clear();
    fitted_at_ = 0;
  }

  std::optional<Point> propose() override {
    if (x_.size() < kSpaceFillingStart) return covering_unseen();
    if (uniform01(rng()) < kForestEpsilon) return random_unseen();
    if (fitted_at_ == 0 || double(x_.size() - fitted_at_) >= std::max(1.0, kRefit * double(fitted_at_))) fit();
    std::vector<Point> candidates = draw_candidates();
    if (candidates.empty()) return std::nullopt;
    size_t best = 0;
    double best_a = kInfinity;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const double a = acquisition(candidates[i]);
      if (a < best_a) {
        best_a = a;
        best = i;
      }
    }
    return candidates[best];
  }

  void learn(const Point& p, bool ok, double v) override {
    x_.push_back(p);
    ok_.push_back(ok);
    v_.push_back(ok ? v : 0.0);
  }

 private:
  void fit() {
    std::vector<int32_t> extents(dims());
    for (size_t d = 0; d < dims(); ++d) extents[d] = extent(d);
    std::vector<size_t> rows;
    std::vector<double> y(x_.size()), failed(x_.size());
    for (size_t i = 0; i < x_.size(); ++i) {
      if (ok_[i]) rows.push_back(i);
      y[i] = v_[i];
      failed[i] = ok_[i] ? 0.0 : 1.0;
    }
    trees_.clear();
    feasibility_.clear();
    if (!rows.empty()) trees_ = fit_forest(y, rows, extents);
    if (rows.size() < x_.size()) {
      std::vector<size_t> all(x_.size());
      for (size_t i = 0; i < all.size(); ++i) all[i] = i;
      feasibility_ = fit_forest(failed, all, extents);
    }
    fitted_at_ = x_.size();
  }

  /// kTrees trees, each on a bootstrap sample of `rows` of (x_, y).
  std::vector<Tree> fit_forest(const std::vector<double>& y, const std::vector<size_t>& rows,
                               const std::vector<int32_t>& extents) {
    std::vector<Tree> out(kTrees);
    for (Tree& t : out) {
      std::vector<size_t> idx(rows.size());
      for (size_t& i : idx) i = rows[uniform_index(rng(), rows.size())];  // bootstrap
      t.fit(x_, y, std::move(idx), extents, rng());
    }
    return out;
  }

  /// The chance that `p` fails: the feasibility forest's mean (0 when
  /// nothing has failed).
  double failure(const Point& p) const {
    if (feasibility_.empty()) return 0.0;
    double s = 0;
    for (const Tree& t : feasibility_) s += t.predict(p);
    return s / double(feasibility_.size());
  }

  /// mean - kKappa x spread of the value forest; candidates more likely to
  /// fail than not come after every other (ordered by that chance).
  double acquisition(const Point& p) const {
    const double f = failure(p);
    if (f > kMaxFailure || trees_.empty()) return 1e300 * f;
    double s = 0, s2 = 0;
    for (const Tree& t : trees_) {
      const double v = t.predict(p);
      s += v;
      s2 += v * v;
    }
    const double n = double(trees_.size());
    const double mean = s / n;
    return mean - kKappa * std::sqrt(std::max(0.0, s2 / n - mean * mean));
  }

  /// The kForestIncumbents best successful results, best first.
  std::vector<Point> incumbents() const {
    std::vector<size_t> ok;
    for (size_t i = 0; i < x_.size(); ++i)
      if (ok_[i]) ok.push_back(i);
    const size_t n = std::min(kForestIncumbents, ok.size());
    std::partial_sort(ok.begin(), ok.begin() + long(n), ok.end(), [&](size_t a, size_t b) { return v_[a] < v_[b]; });
    std::vector<Point> out;
    for (size_t i = 0; i < n; ++i) out.push_back(x_[ok[i]]);
    return out;
  }

  std::vector<Point> draw_candidates() {
    std::vector<Point> out;
    PointSet taken;
    auto add = [&](const Point& p) {
      if (taken.insert(p).second) out.push_back(p);
    };
    const std::vector<Point> inc = incumbents();
    for (const Point& q : inc) {
      for (const Point& n : unseen_neighbours(q)) add(n);
      for (const Point& n : unseen_diagonal_neighbours(q)) add(n);
    }
    for (size_t i = 0; i < kMutants && !inc.empty(); ++i) {
      Point q = inc[uniform_index(rng(), inc.size())];
      for (int k = 0; k < 2; ++k) {
        const size_t d = uniform_index(rng(), dims());
        q[d] = int32_t(uniform_index(rng(), size_t(extent(d))));
      }
      if (unseen_valid(q)) add(q);
    }
    for (size_t i = 0; i < kForestCandidates; ++i) {
      std::optional<Point> p = random_unseen();
      if (!p) break;
      add(*p);
    }
    return out;
  }

  std::vector<Point> x_;
  std::vector<bool> ok_;
  std::vector<double> v_;
  std::vector<Tree> trees_;        // the value forest, fitted to the successes
  std::vector<Tree> feasibility_;  // 1 = failed, fitted to every result (none while nothing failed)
  size_t fitted_at_ = 0;
};

}  // namespace

std::unique_ptr<Strategy> make_forest() { return std::make_unique<Forest>(); }

}  // namespace kopt::search::detail
