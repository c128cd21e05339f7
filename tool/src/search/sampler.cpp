// Drawing valid configurations without enumeration (see sampler.h for the
// three phases and their bias).
#include "search/sampler.h"

#include <cmath>
#include <limits>

namespace kopt::search {

size_t uniform_index(std::mt19937_64& rng, size_t n) {
  // Rejection removes the modulo bias.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t r;
  do r = rng();
  while (r >= limit);
  return static_cast<size_t>(r % n);
}

double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

Sampler::Sampler(const Space& space)
    : space_(space), part_(space, space.sampling_plan()), order_(space.params().size()) {}

bool Sampler::acceptable(const Skip& skip) const {
  return space_.kept(part_.point()) && !(skip && skip(part_.point()));
}

std::optional<Point> Sampler::draw(Rng& rng, const Skip& skip, uint64_t search_effort) {
  exhausted_ = false;
  if (!space_.constant_constraints_hold()) {
    exhausted_ = true;
    return std::nullopt;
  }
  // Phase 1, unless it has been seen to fail: under 1 hit in kUniformAttempts.
  const bool uniform_fails = stats_.uniform_attempts >= 4 * uint64_t{kUniformAttempts} &&
                             stats_.uniform_hits * kUniformAttempts < stats_.uniform_attempts;
  if (!uniform_fails)
    if (std::optional<Point> p = uniform(rng, skip)) return p;
  // Phase 2 likewise: under 1 hit in kWalkAttempts.
  const bool walks_fail = stats_.walks >= 4 * uint64_t{kWalkAttempts} &&
                          stats_.walk_hits * kWalkAttempts < stats_.walks;
  if (!walks_fail)
    if (std::optional<Point> p = walks(rng, skip)) return p;
  return search(rng, skip, search_effort);
}

std::optional<Point> Sampler::uniform(Rng& rng, const Skip& skip) {
  const size_t levels = part_.levels();
  for (int a = 0; a < kUniformAttempts; ++a) {
    ++stats_.uniform_attempts;
    size_t l = 0;
    while (l < levels && part_.assign(l, static_cast<int32_t>(uniform_index(rng, part_.extent(l))))) ++l;
    if (l < levels || !acceptable(skip)) continue;
    ++stats_.uniform_hits;
    return part_.point();
  }
  return std::nullopt;
}

std::optional<double> Sampler::walk(Rng& rng) {
  ++stats_.walks;
  const auto& checks = space_.sampling_plan().checks;
  double log_w = 0;
  for (size_t l = 0; l < part_.levels(); ++l) {
    const int32_t n = part_.extent(l);
    if (checks[l].empty()) {  // nothing decided here: every value is a choice
      part_.assign(l, static_cast<int32_t>(uniform_index(rng, n)));
      log_w += std::log(static_cast<double>(n));
      continue;
    }
    choices_.clear();
    for (int32_t v = 0; v < n; ++v)
      if (part_.assign(l, v)) choices_.push_back(v);
    if (choices_.empty()) return std::nullopt;  // dead end
    part_.assign(l, choices_[uniform_index(rng, choices_.size())]);
    log_w += std::log(static_cast<double>(choices_.size()));
  }
  if (!space_.kept(part_.point())) return std::nullopt;
  return log_w;
}

std::optional<Point> Sampler::walks(Rng& rng, const Skip& skip) {
  if (!warmed_up_) {  // estimate W before accepting anything
    warmed_up_ = true;
    log_w_max_ = -std::numeric_limits<double>::infinity();
    for (int i = 0; i < kWarmupWalks; ++i)
      if (std::optional<double> lw = walk(rng)) log_w_max_ = std::max(log_w_max_, *lw);
  }
  for (int a = 0; a < kWalkAttempts; ++a) {
    std::optional<double> lw = walk(rng);
    if (!lw) continue;
    if (*lw > log_w_max_) log_w_max_ = *lw;  // accepted with probability 1
    else if (uniform01(rng) >= std::exp(*lw - log_w_max_)) continue;
    if (skip && skip(part_.point())) continue;
    ++stats_.walk_hits;
    return part_.point();
  }
  return std::nullopt;
}

std::optional<Point> Sampler::search(Rng& rng, const Skip& skip, uint64_t effort) {
  ++stats_.searches;
  bool over = false;
  const uint64_t until = part_.work() + effort;
  if (search_from(0, rng, skip, until, over)) {
    ++stats_.search_hits;
    return part_.point();
  }
  exhausted_ = !over;
  return std::nullopt;
}

bool Sampler::search_from(size_t level, Rng& rng, const Skip& skip, uint64_t until, bool& over) {
  if (level == part_.levels()) return acceptable(skip);
  std::vector<int32_t>& order = order_[level];
  const int32_t n = part_.extent(level);
  order.resize(n);
  for (int32_t v = 0; v < n; ++v) order[v] = v;
  for (int32_t i = n - 1; i > 0; --i)  // Fisher-Yates
    std::swap(order[i], order[uniform_index(rng, static_cast<size_t>(i) + 1)]);
  for (int32_t i = 0; i < n; ++i) {
    if (part_.work() > until) {
      over = true;
      return false;
    }
    // order[] of this level is reused by the recursion only at deeper levels.
    if (part_.assign(level, order[i]) && search_from(level + 1, rng, skip, until, over)) return true;
    if (over) return false;
  }
  return false;
}

}  // namespace kopt::search
