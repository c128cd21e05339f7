// Drawing valid configurations of a Space without enumerating it: what the
// sampling strategies use on spaces too large to list (a cartesian size of
// 10^12 and more), and what proves such a space non-empty.
//
// Every phase walks the space's sampling plan (Space::sampling_plan(): the
// parameters in an order that decides constraints early, each constraint
// evaluated as soon as every parameter it names has a value). One draw tries,
// each within a bound:
//
//  1. Uniform draws with pruning (kUniformAttempts). Each parameter takes a
//     uniformly random value; a prefix that violates a decided constraint is
//     abandoned and the draw starts over. This is rejection sampling that stops
//     at the first violated constraint instead of completing the configuration:
//     a complete draw is exactly uniform over the valid configurations. It
//     fails when valid configurations are rare (under about 1 in
//     kUniformAttempts); once its success rate is seen to be below that, later
//     draws skip it.
//  2. Forward-checking walks (kWalkAttempts). At each level the values whose
//     decided constraints hold are listed and one is chosen uniformly; a level
//     with none ends the walk (a dead end). Left alone this is biased: the walk
//     reaches configuration x with probability 1/w(x), where w(x) is the
//     product of the numbers of choices along its path, so configurations in
//     sparsely populated branches come up more often than in dense ones. The
//     bias is corrected by rejection: x is accepted with probability
//     w(x) / W, W the largest w seen so far (kWarmupWalks walks estimate it
//     first). Every configuration with w(x) <= W is then returned with the
//     same probability 1/W: uniform, except that configurations in branches
//     denser than any seen so far are under-represented until W has grown.
//     Like phase 1, it is skipped once its success rate is seen to be under
//     1 in kWalkAttempts (walks that mostly end in dead ends).
//  3. A randomized depth-first search with backtracking: a random value order
//     at every level, the first acceptable configuration returned. Complete
//     but biased towards sparse branches, it is only reached when the phases
//     above failed, i.e. when acceptable configurations are very rare. It
//     stops after `search_effort` steps (assignments plus constraint
//     evaluations); a search that finishes proves that none is left
//     (exhausted()).
//
// Configurations that `skip` rejects (those already proposed: deduplication
// by value indices) are never returned; phases 1 and 2 count them as failed
// draws, which keeps a draw uniform over the valid configurations not seen.
// The random source is the caller's (a strategy's seeded generator), so a
// seed gives the same draws everywhere.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <vector>

#include "search/space.h"

namespace kopt::search {

/// Uniform in [0, n); n > 0. Avoids the standard distributions, whose output
/// differs between standard libraries.
size_t uniform_index(std::mt19937_64& rng, size_t n);
/// Uniform in [0, 1).
double uniform01(std::mt19937_64& rng);

class Sampler {
 public:
  using Rng = std::mt19937_64;
  /// True for a point that must not be returned (e.g. already proposed).
  using Skip = std::function<bool(const Point&)>;

  static constexpr int kUniformAttempts = 64;
  static constexpr int kWalkAttempts = 512;
  static constexpr int kWarmupWalks = 32;
  /// Default bound of phase 3, in steps (assignments plus constraint evaluations).
  static constexpr uint64_t kSearchEffort = 1'000'000;

  /// `space` must outlive the sampler.
  explicit Sampler(const Space& space);

  /// A valid point that `skip` does not reject, or nullopt (see exhausted()).
  std::optional<Point> draw(Rng& rng, const Skip& skip = {}, uint64_t search_effort = kSearchEffort);

  /// After draw() returned nullopt: true when its search was complete, so that
  /// every valid point is skipped (or there is none); false when the effort
  /// ran out first.
  bool exhausted() const { return exhausted_; }

  /// What the draws did so far (for tests and diagnostics).
  struct Stats {
    uint64_t uniform_attempts = 0, uniform_hits = 0;
    uint64_t walks = 0, walk_hits = 0;
    uint64_t searches = 0, search_hits = 0;
  };
  const Stats& stats() const { return stats_; }
  /// Steps so far (assignments plus constraint evaluations), every phase.
  uint64_t work() const { return part_.work(); }

 private:
  bool acceptable(const Skip& skip) const;
  std::optional<Point> uniform(Rng& rng, const Skip& skip);
  /// One forward-checking walk: the log of its weight, or nullopt at a dead
  /// end or a configuration restricted_to() does not keep.
  std::optional<double> walk(Rng& rng);
  std::optional<Point> walks(Rng& rng, const Skip& skip);
  std::optional<Point> search(Rng& rng, const Skip& skip, uint64_t effort);
  bool search_from(size_t level, Rng& rng, const Skip& skip, uint64_t until, bool& over);

  const Space& space_;
  detail::Partial part_;
  Stats stats_;
  bool warmed_up_ = false;
  double log_w_max_ = 0;  // log W: the largest walk weight seen
  bool exhausted_ = false;
  std::vector<int32_t> choices_;             // a walk's candidate values at one level
  std::vector<std::vector<int32_t>> order_;  // phase 3: per level, the value order
};

}  // namespace kopt::search
