// Shared strategy machinery: point conversion, "seen" bookkeeping, sampling.
#include "search/strategy_base.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace kopt::search::detail {

size_t PointHash::operator()(const Point& p) const noexcept {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over the indices
  for (int32_t v : p) {
    h ^= static_cast<uint32_t>(v);
    h *= 0x100000001b3ull;
  }
  return static_cast<size_t>(h);
}

void StrategyBase::initialize(const Space& space, uint64_t seed) {
  space_ = &space;
  rng_.seed(seed);
  seen_.clear();
  pool_.clear();
  pooled_ = false;
  sampler_.reset();
  unreachable_.clear();
  if (samples()) {
    if (space.cartesian_size() <= kPoolCartesianLimit) {
      build_pool();
    } else {
      space.check_not_empty();  // kopt.space.701, within a bounded effort
      sampler_ = std::make_unique<Sampler>(space);
    }
  }
  reset();
}

std::optional<Config> StrategyBase::next() {
  std::optional<Point> p = next_point();
  if (!p) return std::nullopt;
  return to_config(*p);
}

std::optional<Point> StrategyBase::next_point() {
  std::optional<Point> p = propose();
  if (!p) return std::nullopt;
  assert(!seen(*p) && valid(*p));
  seen_.insert(*p);
  return p;
}

void StrategyBase::observe_point(const Point& p, bool ok, double log_score, bool own) {
  seen_.insert(p);
  if (own) learn(p, ok, log_score);
  else learn_foreign(p, ok, log_score);
}

void StrategyBase::observe(const Observation& o) {
  std::optional<Point> p = to_point(o.config);
  if (!p) return;  // not a point of this space (e.g. a stale resumed result)
  seen_.insert(*p);
  const bool ok = o.ok && std::isfinite(o.score);  // a NaN score is no success
  learn(*p, ok, ok ? std::log(std::max(o.score, 1e-300)) : 0.0);
}

std::optional<Point> StrategyBase::to_point(const Config& c) const {
  const auto& params = space_->params();
  if (c.size() != params.size()) return std::nullopt;
  Point p(params.size());
  for (size_t d = 0; d < params.size(); ++d) {
    auto it = c.find(params[d].name);
    if (it == c.end()) return std::nullopt;
    const int i = space_->index_of(d, it->second);
    if (i < 0) return std::nullopt;
    p[d] = i;
  }
  return p;
}

void StrategyBase::build_pool() {
  space_->for_each_valid(
      [&](const std::vector<size_t>& idx) { pool_.emplace_back(idx.begin(), idx.end()); },
      kPoolEnumerationLimit);
  pooled_ = true;
}

std::optional<Point> StrategyBase::from_pool() {
  while (!pool_.empty()) {
    const size_t i = uniform_index(rng_, pool_.size());
    if (!seen(pool_[i])) return pool_[i];
    std::swap(pool_[i], pool_.back());  // drop a seen point for good
    pool_.pop_back();
  }
  return std::nullopt;
}

std::optional<Point> StrategyBase::random_unseen() {
  if (pooled_) return from_pool();
  if (!sampler_) sampler_ = std::make_unique<Sampler>(*space_);  // "exhaustive" samples nothing
  if (std::optional<Point> p = sampler_->draw(rng_, [this](const Point& q) { return seen(q); })) return p;
  if (sampler_->exhausted()) return std::nullopt;  // the search was complete: nothing unseen is left
  // Nothing unseen found within the effort: mostly seen or mostly invalid.
  // Enumerate if affordable.
  if (space_->cartesian_size() > kPoolEnumerationLimit) return std::nullopt;
  build_pool();
  return from_pool();
}

std::optional<Point> StrategyBase::covering_unseen() {
  constexpr int32_t kCoverMaxValues = 3;  // the switches: parameters of at most this many values
  constexpr int kCoverDraws = 2000;       // random draws per call, over all the values it tries
  // Dimensions by their number of values, fewest first (stable: ties keep the space's order).
  std::vector<size_t> order;
  for (size_t d = 0; d < dims(); ++d)
    if (extent(d) <= kCoverMaxValues) order.push_back(d);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return extent(a) < extent(b); });
  int draws = 0;
  for (size_t d : order) {
    std::vector<bool> covered(static_cast<size_t>(extent(d)), false);
    for (const Point& q : seen_) covered[static_cast<size_t>(q[d])] = true;
    for (int32_t v = 0; v < extent(d); ++v) {
      if (covered[static_cast<size_t>(v)] || unreachable_.count({d, v})) continue;
      for (; draws < kCoverDraws; ++draws) {
        std::optional<Point> p = random_unseen();
        if (!p) return std::nullopt;  // nothing unseen is left at all
        if ((*p)[d] == v) return p;
      }
      unreachable_.insert({d, v});  // the draws ran out on it: rare or infeasible
      return random_unseen();
    }
  }
  return random_unseen();
}

std::optional<Point> StrategyBase::spread_unseen(size_t candidates) {
  std::optional<Point> best;
  size_t best_distance = 0;
  for (size_t i = 0; i < candidates; ++i) {
    std::optional<Point> p = random_unseen();
    if (!p) return best;
    size_t distance = p->size() + 1;  // farther than any point: nothing seen yet
    for (const Point& q : seen_) {
      size_t differ = 0;
      for (size_t d = 0; d < q.size(); ++d) differ += q[d] != (*p)[d];
      distance = std::min(distance, differ);
    }
    if (!best || distance > best_distance) {
      best = std::move(p);
      best_distance = distance;
    }
  }
  return best;
}

bool StrategyBase::unseen_valid(const Point& p) const {
  for (size_t d = 0; d < p.size(); ++d)
    if (p[d] < 0 || p[d] >= extent(d)) return false;
  return !seen(p) && valid(p);
}

std::vector<Point> StrategyBase::unseen_neighbours(const Point& p) const {
  std::vector<Point> out;
  for (size_t d = 0; d < dims(); ++d) {
    for (int32_t step : {-1, 1}) {
      Point q = p;
      q[d] += step;
      if (unseen_valid(q)) out.push_back(std::move(q));
    }
  }
  return out;
}

std::vector<Point> StrategyBase::unseen_diagonal_neighbours(const Point& p) const {
  std::vector<Point> out;
  for (size_t a = 0; a < dims(); ++a)
    for (size_t b = a + 1; b < dims(); ++b)
      for (int32_t sa : {-1, 1})
        for (int32_t sb : {-1, 1}) {
          Point q = p;
          q[a] += sa;
          q[b] += sb;
          if (unseen_valid(q)) out.push_back(std::move(q));
        }
  return out;
}

}  // namespace kopt::search::detail
