// The parameter space of a tunable template: named integer parameters, each
// with its list of values, and constraints (integer expressions that must be
// non-zero). Constraint-invalid configurations are never compiled.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "spec/expr.h"
#include "spec/spec.h"

namespace kopt::search {

/// One point of the space: parameter name -> value.
using Config = std::map<std::string, int64_t>;

/// "BM=128,BN=64" (names in sorted order): a stable key for logs and lookups.
std::string config_key(const Config& c);

class Space {
 public:
  /// `constants` are extra names constraints may use (device limits such as
  /// MAX_SHARED_PER_BLOCK, MAX_THREADS_PER_BLOCK, SM_COUNT, WARP_SIZE).
  /// Throws SpecError(kopt.space.7xx) when a parameter has no values or two
  /// parameters share a name: 703 a parameter without values, 704 two
  /// parameters with one name, 705 a value listed twice in one parameter,
  /// 706 a parameter named like one of the constants.
  Space(std::vector<spec::TuningParam> params, std::vector<spec::Expr> constraints,
        spec::Bindings constants = {});

  const std::vector<spec::TuningParam>& params() const { return params_; }
  const std::vector<spec::Expr>& constraints() const { return constraints_; }
  const spec::Bindings& constants() const { return constants_; }

  /// A copy of this space in which a configuration is valid only when it
  /// also satisfies `keep` (e.g. the replay of a recorded sweep keeps only
  /// the recorded configurations). `keep` is called only for configurations
  /// that meet every constraint; `what` describes it (valid()'s `violated`
  /// for a configuration it rejects, e.g. "not in the record"). Restricting
  /// a restricted space applies both predicates.
  Space restricted_to(std::function<bool(const Config&)> keep, std::string what) const;

  /// Product of the value-list sizes (the unconstrained size).
  uint64_t cartesian_size() const;

  /// True when every constraint holds. If not and `violated` is given, it
  /// receives the text of the first violated constraint. A constraint that
  /// fails to evaluate (e.g. division by zero) counts as violated. A config
  /// that is not a point of the space (a parameter missing or unknown, a
  /// value not in its list) is not valid either; `violated` then says so.
  bool valid(const Config& c, std::string* violated = nullptr) const;

  /// Every valid configuration, in lexicographic order of value indices.
  /// Throws SpecError(kopt.space.701) when none is valid, naming the
  /// constraint that removed the most configurations ("every configuration
  /// violates 'BM*BK*8 <= MAX_SHARED_PER_BLOCK'"), and kopt.space.702 when the
  /// cartesian size exceeds `limit` (use sampling strategies instead).
  std::vector<Config> enumerate_valid(uint64_t limit = 5'000'000) const;

  /// Like enumerate_valid() (same order, same errors), but hands each valid
  /// configuration to `visit` as its value indices (one per parameter, in
  /// params() order) instead of building a Config: cheaper for callers that
  /// work on indices.
  void for_each_valid(const std::function<void(const std::vector<size_t>&)>& visit,
                      uint64_t limit = 5'000'000) const;

  /// A uniformly random valid configuration (rejection sampling, up to
  /// `attempts` draws); nullopt if none found.
  template <typename Rng>
  std::optional<Config> sample(Rng& rng, int attempts = 10000) const;

  /// Configurations that differ from `c` in one parameter by one step in its
  /// value list (valid ones only). A parameter missing from `c`, or whose
  /// value is not in its list, contributes no neighbours.
  std::vector<Config> neighbours(const Config& c) const;

  /// Index of value `v` in parameter `p`'s list, or -1.
  int index_of(size_t p, int64_t v) const;

 private:
  std::vector<spec::TuningParam> params_;
  std::vector<spec::Expr> constraints_;
  spec::Bindings constants_;
  std::function<bool(const Config&)> keep_;  // restricted_to(); empty: no restriction
  std::string keep_what_;
};

template <typename Rng>
std::optional<Config> Space::sample(Rng& rng, int attempts) const {
  for (int a = 0; a < attempts; ++a) {
    Config c;
    for (const auto& p : params_) c[p.name] = p.values[rng() % p.values.size()];
    if (valid(c)) return c;
  }
  return std::nullopt;
}

}  // namespace kopt::search
