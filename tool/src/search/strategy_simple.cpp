// "exhaustive" (every valid configuration in enumerate_valid order) and
// "random" (uniform over the valid configurations, without repeats).
#include "search/strategy_base.h"
#include "util/error.h"

namespace kopt::search::detail {
namespace {

class Exhaustive final : public StrategyBase {
 public:
  std::string name() const override { return "exhaustive"; }

 protected:
  bool samples() const override { return false; }

  /// Throws kopt.space.701 (nothing valid) or 702 (too large to enumerate).
  void reset() override {
    order_.clear();
    cursor_ = 0;
    const uint64_t size = space().cartesian_size();
    if (size > kEnumerationLimit)
      throw SpecError("kopt.space.702",
                      "the strategy 'exhaustive' cannot search this space: it has " +
                          (size == UINT64_MAX ? "more than " + std::to_string(size) : std::to_string(size)) +
                          " configurations, more than the " + std::to_string(kEnumerationLimit) +
                          " it can enumerate; use a sampling strategy (random, anneal, genetic, surrogate, portfolio), or "
                          "give no --strategy (the default then samples)");
    space().for_each_valid(
        [&](const std::vector<size_t>& idx) { order_.emplace_back(idx.begin(), idx.end()); });
  }

  std::optional<Point> propose() override {
    while (cursor_ < order_.size()) {
      const Point& p = order_[cursor_++];
      if (!seen(p)) return p;  // skips results known from a resumed run
    }
    return std::nullopt;
  }

  void learn(const Point&, bool, double) override {}

 private:
  std::vector<Point> order_;
  size_t cursor_ = 0;
};

class Random final : public StrategyBase {
 public:
  std::string name() const override { return "random"; }

 protected:
  std::optional<Point> propose() override { return random_unseen(); }
  void learn(const Point&, bool, double) override {}
};

}  // namespace

std::unique_ptr<Strategy> make_exhaustive() { return std::make_unique<Exhaustive>(); }
std::unique_ptr<Strategy> make_random() { return std::make_unique<Random>(); }

}  // namespace kopt::search::detail
