// "genetic": a steady-state genetic algorithm over value indices.
//
// The population is the kPopulation best successful configurations observed
// so far (failed ones never enter it). The first kPopulation proposals are
// random. Afterwards each child takes every parameter from one of two parents
// (uniform crossover), each parent the best of kTournament random members
// (tournament selection); with probability kMutation (always, when the child
// equals a parent) one random parameter then moves one step in its value
// list. A child that is invalid or already seen is repaired by moving to a
// random unseen valid neighbour of it; if it has none the child is rejected
// and a new one bred (kBreedAttempts times) before falling back to a random
// unseen configuration.
#include <algorithm>

#include "search/strategy_base.h"

namespace kopt::search::detail {
namespace {

constexpr size_t kPopulation = 16;
constexpr size_t kTournament = 3;
constexpr double kMutation = 0.5;
constexpr int kBreedAttempts = 32;

struct Member {
  double value;  // log score
  Point point;
};

class Genetic final : public StrategyBase {
 public:
  std::string name() const override { return "genetic"; }

 protected:
  void reset() override { population_.clear(); }

  std::optional<Point> propose() override {
    if (seen_count() < kPopulation || population_.size() < 2) return random_unseen();
    for (int a = 0; a < kBreedAttempts; ++a) {
      if (std::optional<Point> child = breed()) return child;
    }
    return random_unseen();
  }

  void learn(const Point& p, bool ok, double v) override {
    if (!ok) return;
    auto pos = std::lower_bound(population_.begin(), population_.end(), v,
                                [](const Member& m, double x) { return m.value < x; });
    population_.insert(pos, Member{v, p});
    if (population_.size() > kPopulation) population_.pop_back();
  }

 private:
  /// One child: valid and unseen, or nullopt when it could not be repaired.
  std::optional<Point> breed() {
    const Point& a = tournament();
    const Point& b = tournament();
    Point child = crossover(a, b);
    if (child == a || child == b || uniform01(rng()) < kMutation) mutate(child);
    if (!seen(child) && valid(child)) return child;
    std::vector<Point> repairs = unseen_neighbours(child);  // valid by construction
    if (repairs.empty()) return std::nullopt;
    return pick(repairs);
  }

  /// The best of kTournament random members (with replacement).
  const Point& tournament() {
    size_t best = uniform_index(rng(), population_.size());
    for (size_t i = 1; i < kTournament; ++i) {
      best = std::min(best, uniform_index(rng(), population_.size()));  // sorted: lower is better
    }
    return population_[best].point;
  }

  Point crossover(const Point& a, const Point& b) {
    Point child(a.size());
    for (size_t d = 0; d < a.size(); ++d) child[d] = coin() ? a[d] : b[d];
    return child;
  }

  /// Moves one random parameter (with more than one value) by one step.
  void mutate(Point& p) {
    std::vector<size_t> movable;
    for (size_t d = 0; d < dims(); ++d)
      if (extent(d) > 1) movable.push_back(d);
    if (movable.empty()) return;
    const size_t d = movable[uniform_index(rng(), movable.size())];
    int32_t step = coin() ? 1 : -1;
    if (p[d] + step < 0 || p[d] + step >= extent(d)) step = -step;
    p[d] += step;
  }

  std::vector<Member> population_;  // sorted by value, best first
};

}  // namespace

std::unique_ptr<Strategy> make_genetic() { return std::make_unique<Genetic>(); }

}  // namespace kopt::search::detail
