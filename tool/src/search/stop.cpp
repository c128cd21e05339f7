// Stop conditions: evaluation count, wall-clock budget, stagnation, any-of.
#include <algorithm>
#include <cstdio>
#include <limits>
#include <optional>

#include "search/strategy.h"
#include "util/error.h"

namespace kopt::search {
namespace {

class MaxEvaluations final : public StopCondition {
 public:
  explicit MaxEvaluations(int64_t n) : limit_(n) {}
  void update(const Observation&) override { ++count_; }
  bool fulfilled() const override { return count_ >= limit_; }
  std::string status() const override {
    return std::to_string(count_) + "/" + std::to_string(limit_) + " evaluations";
  }
  void left(model::BudgetLeft& l) const override {
    l.narrow({std::max<int64_t>(limit_ - count_, 0), std::nullopt, std::nullopt});
  }

 private:
  int64_t limit_;
  int64_t count_ = 0;
};

/// "3.1/10.0 min" for budgets of a minute or more, "12.5/30.0 s" below.
std::string format_elapsed(double elapsed_s, double budget_s) {
  const bool minutes = budget_s >= 60;
  const double scale = minutes ? 60.0 : 1.0;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f/%.1f %s", elapsed_s / scale, budget_s / scale, minutes ? "min" : "s");
  return buf;
}

/// Measures from its construction.
class TimeBudget final : public StopCondition {
 public:
  TimeBudget(std::chrono::duration<double> budget, ClockFn clock,
             std::optional<std::chrono::steady_clock::time_point> since)
      : budget_(budget), clock_(clock ? std::move(clock) : ClockFn(&std::chrono::steady_clock::now)),
        start_(since ? *since : clock_()) {}
  void update(const Observation&) override {}
  bool fulfilled() const override { return elapsed() >= budget_; }
  std::string status() const override { return format_elapsed(elapsed().count(), budget_.count()); }
  void left(model::BudgetLeft& l) const override {
    l.narrow({std::nullopt, (budget_ - elapsed()).count() / 60.0, std::nullopt});
  }

 private:
  std::chrono::duration<double> elapsed() const { return clock_() - start_; }

  std::chrono::duration<double> budget_;
  ClockFn clock_;
  std::chrono::steady_clock::time_point start_;
};

/// Counts consecutive observations without a better ok score; a failed
/// observation never improves.
class NoImprovement final : public StopCondition {
 public:
  explicit NoImprovement(int64_t n) : limit_(n) {}
  void update(const Observation& o) override {
    if (o.ok && o.score < best_) {
      best_ = o.score;
      stale_ = 0;
    } else {
      ++stale_;
    }
  }
  bool fulfilled() const override { return stale_ >= limit_; }
  std::string status() const override {
    return std::to_string(stale_) + "/" + std::to_string(limit_) + " without improvement";
  }
  void left(model::BudgetLeft& l) const override {
    l.narrow({std::nullopt, std::nullopt, std::max<int64_t>(limit_ - stale_, 0)});
  }

 private:
  int64_t limit_;
  int64_t stale_ = 0;
  double best_ = std::numeric_limits<double>::infinity();
};

/// Fulfilled when any member is; never fulfilled when empty.
class AnyOf final : public StopCondition {
 public:
  explicit AnyOf(std::vector<std::unique_ptr<StopCondition>> members) : members_(std::move(members)) {
    for (const auto& m : members_)
      if (!m) throw UsageError("kopt.search.802", "any_of() got an empty stop condition");
  }
  void update(const Observation& o) override {
    for (auto& m : members_) m->update(o);
  }
  bool fulfilled() const override {
    for (const auto& m : members_)
      if (m->fulfilled()) return true;
    return false;
  }
  void left(model::BudgetLeft& l) const override {
    for (const auto& m : members_) m->left(l);
  }
  /// The members' statuses joined by ", ".
  std::string status() const override {
    std::string s;
    for (const auto& m : members_) s += (s.empty() ? "" : ", ") + m->status();
    return s;
  }

 private:
  std::vector<std::unique_ptr<StopCondition>> members_;
};

}  // namespace

std::unique_ptr<StopCondition> max_evaluations(int64_t n) { return std::make_unique<MaxEvaluations>(n); }

std::unique_ptr<StopCondition> time_budget(std::chrono::duration<double> budget, ClockFn clock) {
  return std::make_unique<TimeBudget>(budget, std::move(clock), std::nullopt);
}

std::unique_ptr<StopCondition> time_budget(std::chrono::duration<double> budget, ClockFn clock,
                                           std::chrono::steady_clock::time_point since) {
  return std::make_unique<TimeBudget>(budget, std::move(clock), since);
}

std::unique_ptr<StopCondition> no_improvement(int64_t n) { return std::make_unique<NoImprovement>(n); }

std::unique_ptr<StopCondition> any_of(std::vector<std::unique_ptr<StopCondition>> conditions) {
  return std::make_unique<AnyOf>(std::move(conditions));
}

}  // namespace kopt::search
