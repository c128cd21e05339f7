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

size_t uniform_index(Rng& rng, size_t n) {
  // Rejection removes the modulo bias.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t r;
  do r = rng();
  while (r >= limit);
  return static_cast<size_t>(r % n);
}

double uniform01(Rng& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

void StrategyBase::initialize(const Space& space, uint64_t seed) {
  space_ = &space;
  rng_.seed(seed);
  seen_.clear();
  pool_.clear();
  pooled_ = false;
  if (samples() && space.cartesian_size() <= kPoolCartesianLimit) build_pool();
  reset();
}

std::optional<Config> StrategyBase::next() {
  std::optional<Point> p = propose();
  if (!p) return std::nullopt;
  assert(!seen(*p) && valid(*p));
  seen_.insert(*p);
  return to_config(*p);
}

void StrategyBase::observe(const Observation& o) {
  std::optional<Point> p = to_point(o.config);
  if (!p) return;  // not a point of this space (e.g. a stale resumed result)
  seen_.insert(*p);
  const bool ok = o.ok && std::isfinite(o.score);  // a NaN score is no success
  learn(*p, ok, ok ? std::log(std::max(o.score, 1e-300)) : 0.0);
}

Config StrategyBase::to_config(const Point& p) const {
  Config c;
  const auto& params = space_->params();
  for (size_t d = 0; d < params.size(); ++d) c[params[d].name] = params[d].values[p[d]];
  return c;
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

std::optional<Point> StrategyBase::by_rejection() {
  Point p(dims());
  for (int a = 0; a < kRejectionAttempts; ++a) {
    for (size_t d = 0; d < dims(); ++d) p[d] = static_cast<int32_t>(uniform_index(rng_, extent(d)));
    if (!seen(p) && valid(p)) return p;
  }
  return std::nullopt;
}

std::optional<Point> StrategyBase::random_unseen() {
  if (pooled_) return from_pool();
  if (std::optional<Point> p = by_rejection()) return p;
  // Rejection failed: mostly seen or mostly invalid. Enumerate if affordable.
  if (space_->cartesian_size() > kPoolEnumerationLimit) return std::nullopt;
  build_pool();
  return from_pool();
}

std::vector<Point> StrategyBase::unseen_neighbours(const Point& p) const {
  std::vector<Point> out;
  for (size_t d = 0; d < dims(); ++d) {
    for (int32_t step : {-1, 1}) {
      Point q = p;
      q[d] += step;
      if (q[d] < 0 || q[d] >= extent(d) || seen(q) || !valid(q)) continue;
      out.push_back(std::move(q));
    }
  }
  return out;
}

}  // namespace kopt::search::detail
