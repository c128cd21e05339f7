// "anneal": simulated annealing over neighbours (one parameter, one step).
//
// A walk moves from the current configuration to an unseen neighbour. When
// the neighbour's result arrives it is accepted if better, or with
// probability exp(-(log s_new - log s_cur) / T) if worse; failed
// configurations are never accepted. T starts at kT0 (a neighbour 3% slower
// is then accepted with probability ~0.37) and decays geometrically per
// observation to kTMin. After kPatience(dims) observations without a new best,
// or when the walk has no unseen neighbour left, it restarts from the best
// configuration with T reheated to kT0; when the best has no unseen neighbour
// either, it jumps to a random unseen configuration.
//
// Pipelining: next() may be called again before the previous result arrives;
// it proposes another unseen neighbour of the current configuration.
#include <cmath>
#include <limits>

#include "search/strategy_base.h"

namespace kopt::search::detail {
namespace {

constexpr double kT0 = 0.03;
constexpr double kTMin = 0.005;
constexpr double kCooling = 0.95;
/// Observations without a new best before restarting from the best.
size_t patience(size_t dims) { return 4 * dims + 8; }

constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

class Anneal final : public StrategyBase {
 public:
  std::string name() const override { return "anneal"; }

 protected:
  void reset() override {
    current_.reset();
    current_value_ = kUnknown;
    best_.reset();
    best_value_ = kInf;
    temperature_ = kT0;
    since_best_ = 0;
  }

  std::optional<Point> propose() override {
    if (!current_) return jump();  // first call: a random valid start
    if (since_best_ >= patience(dims())) restart_from_best();
    std::vector<Point> n = unseen_neighbours(*current_);
    if (n.empty() && best_ && *best_ != *current_) {
      restart_from_best();
      n = unseen_neighbours(*current_);
    }
    if (n.empty()) return jump();
    return pick(n);
  }

  void learn(const Point& p, bool ok, double v) override {
    track_best(p, ok, v);
    if (!current_) {  // a resumed result before any proposal: start there
      if (ok) set_current(p, v);
      return;
    }
    if (p == *current_) {  // the result of the start or of a jump
      current_value_ = ok ? v : kInf;
      return;
    }
    if (ok && accept(v)) set_current(p, v);
    temperature_ = std::max(kTMin, temperature_ * kCooling);
  }

  /// Another strategy's result (in a portfolio): a better one becomes the
  /// best to restart from (and the start, before any proposal); the walk and
  /// its patience go on as they were.
  void learn_foreign(const Point& p, bool ok, double v) override {
    if (!ok || v >= best_value_) return;
    best_ = p;
    best_value_ = v;
    if (!current_) set_current(p, v);
  }

 private:
  /// Metropolis criterion against the current configuration.
  bool accept(double v) {
    if (std::isnan(current_value_) || v <= current_value_) return true;
    return uniform01(rng()) < std::exp(-(v - current_value_) / temperature_);
  }

  void track_best(const Point& p, bool ok, double v) {
    if (ok && v < best_value_) {
      best_ = p;
      best_value_ = v;
      since_best_ = 0;
    } else {
      ++since_best_;
    }
  }

  void set_current(const Point& p, double v) {
    current_ = p;
    current_value_ = v;
  }

  void restart_from_best() {
    if (best_) set_current(*best_, best_value_);
    temperature_ = kT0;
    since_best_ = 0;
  }

  /// Continues from a random unseen configuration (its value comes later).
  std::optional<Point> jump() {
    std::optional<Point> p = random_unseen();
    if (p) set_current(*p, kUnknown);
    return p;
  }

  std::optional<Point> current_;
  double current_value_ = kUnknown;  // NaN while its result is pending
  std::optional<Point> best_;
  double best_value_ = kInf;
  double temperature_ = kT0;
  size_t since_best_ = 0;
};

}  // namespace

std::unique_ptr<Strategy> make_anneal() { return std::make_unique<Anneal>(); }

}  // namespace kopt::search::detail
