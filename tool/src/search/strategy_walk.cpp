// "walk": simulated annealing with compound moves, after Kernel Tuner 1.5's
// simulated_annealing (kernel_tuner/strategies/simulated_annealing.py).
//
// A move from the current configuration makes, once per parameter with
// probability kJumpProbability, a jump to a random "Hamming" neighbour (a
// valid configuration that differs in one parameter, any one, by any
// value), as Kernel Tuner's neighbor() does, then takes one step in the box
// around the result (every parameter by at most one value, within its
// values). Several parameters can change at once, so a lone optimum a few
// parameters away from the region of good configurations is reachable
// (docs/search.md has the measurements on recorded spaces). A move to a
// configuration already measured (by this walk or, in a portfolio, by
// another member) costs nothing: it is accepted or rejected on the known
// result and the walk goes on, until a move reaches an unmeasured
// configuration, which is proposed. Acceptance is Metropolis on log scores
// with temperature T = kT0 * (kTMin / kT0)^(c / kHorizon), c the results so
// far (Kernel Tuner's schedule from T 0.1 to 1e-4 over its evaluation
// budget); kStuckMoves moves without reaching an unmeasured configuration
// restart the walk from a random one.
#include <cmath>
#include <limits>
#include <unordered_map>

#include "search/strategy_base.h"

namespace kopt::search::detail {
namespace {

class Walk final : public StrategyBase {
  static constexpr double kJumpProbability = 0.2;
  static constexpr double kT0 = 0.1;
  static constexpr double kTMin = 1e-4;
  static constexpr double kHorizon = 1000;
  static constexpr size_t kStuckMoves = 200;
  static constexpr size_t kBoxDraws = 64;
  static constexpr double kInf = std::numeric_limits<double>::infinity();

 public:
  std::string name() const override { return "walk"; }

 protected:
  void reset() override {
    current_.reset();
    current_value_ = kInf;
    values_.clear();
    results_ = 0;
  }

  std::optional<Point> propose() override {
    if (!current_) return jump();
    for (size_t moves = 0; moves < kStuckMoves; ++moves) {
      std::optional<Point> q = move(*current_);
      if (!q) break;
      if (!seen(*q)) return q;
      auto it = values_.find(*q);
      if (it != values_.end()) consider(*q, it->second);  // measured: a free move
    }
    return jump();
  }

  void learn(const Point& p, bool ok, double v) override {
    record(p, ok, v);
    if (!current_) {
      if (ok) set_current(p, v);
      return;
    }
    consider(p, ok ? v : kInf);
  }

  void learn_foreign(const Point& p, bool ok, double v) override {
    record(p, ok, v);
    if (!current_ && ok) set_current(p, v);
  }

 private:
  void record(const Point& p, bool ok, double v) {
    values_[p] = ok ? v : kInf;
    ++results_;
  }

  double temperature() const {
    return kT0 * std::pow(kTMin / kT0, std::min(1.0, double(results_) / kHorizon));
  }

  /// Metropolis: a failure is never accepted, a better result always.
  void consider(const Point& p, double v) {
    if (!std::isfinite(v)) return;
    if (v <= current_value_ || uniform01(rng()) < std::exp(-(v - current_value_) / temperature()))
      set_current(p, v);
  }

  void set_current(const Point& p, double v) {
    current_ = p;
    current_value_ = v;
  }

  /// A compound move: Hamming jumps, then a box step; nullopt when the box
  /// step finds no valid configuration.
  std::optional<Point> move(Point p) {
    for (size_t d = 0; d < dims(); ++d) {
      if (uniform01(rng()) >= kJumpProbability) continue;
      std::vector<Point> h = hamming(p);
      if (!h.empty()) p = pick(h);
    }
    for (size_t k = 0; k < kBoxDraws; ++k) {
      Point q = p;
      bool moved = false;
      for (size_t d = 0; d < dims(); ++d) {
        // One of the steps -1, 0, +1 that stay within the parameter's values
        // (a parameter of one value keeps it).
        const int32_t lo = q[d] > 0 ? -1 : 0, hi = q[d] + 1 < extent(d) ? 1 : 0;
        const int32_t step = lo + static_cast<int32_t>(uniform_index(rng(), static_cast<uint64_t>(hi - lo + 1)));
        q[d] += step;
        moved |= step != 0;
      }
      if (moved && valid(q)) return q;
    }
    return std::nullopt;
  }

  /// Valid points (seen or not) that differ from `p` in one parameter.
  std::vector<Point> hamming(const Point& p) const {
    std::vector<Point> out;
    for (size_t d = 0; d < dims(); ++d)
      for (int32_t v = 0; v < extent(d); ++v) {
        if (v == p[d]) continue;
        Point q = p;
        q[d] = v;
        if (valid(q)) out.push_back(std::move(q));
      }
    return out;
  }

  std::optional<Point> jump() {
    std::optional<Point> p = random_unseen();
    if (p) {
      current_ = *p;
      current_value_ = kInf;  // accepted once its result arrives
    }
    return p;
  }

  std::optional<Point> current_;
  double current_value_ = kInf;
  std::unordered_map<Point, double, PointHash> values_;
  size_t results_ = 0;
};

}  // namespace

std::unique_ptr<Strategy> make_walk() { return std::make_unique<Walk>(); }

}  // namespace kopt::search::detail
