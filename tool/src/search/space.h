// The parameter space of a tunable template: named integer parameters, each
// with its list of values, and constraints (integer expressions that must be
// non-zero). Constraint-invalid configurations are never compiled.
//
// Constraints are evaluated on partial assignments: the space orders its
// parameters and attaches each constraint to the first position at which
// every parameter it names is assigned, so that a depth-first search (the
// enumeration, the counting, search/sampler.h's draws) abandons a prefix as
// soon as one of its constraints fails, without visiting its completions.
// docs/search.md describes the search space and its errors.
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

/// One point of the space as value indices, one per parameter, in
/// Space::params() order: what the strategies and the sampler work on.
using Point = std::vector<int32_t>;

/// "BM=128,BN=64" (names in sorted order): a stable key for logs and lookups.
std::string config_key(const Config& c);

/// The largest cartesian size that enumerate_valid() and for_each_valid()
/// accept by default (and so the strategy "exhaustive"): larger spaces are
/// searched by sampling.
inline constexpr uint64_t kEnumerationLimit = 5'000'000;

namespace detail {
/// The order in which a depth-first search assigns the parameters, and the
/// constraints each assignment decides (those whose last named parameter is
/// assigned at that level). Built by Space; read by Partial.
struct Plan {
  std::vector<size_t> order;                // level -> parameter index
  std::vector<std::vector<size_t>> checks;  // level -> constraint indices, ascending
};
}  // namespace detail

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

  /// valid() for a point (value indices; an index out of range is invalid).
  bool valid_point(const Point& p) const;

  /// Why `c` is not a configuration of this space, or nullopt when it is
  /// one: the first unknown parameter ("unknown parameter 'THREADZ' (the
  /// parameters: BM, BN)"), missing parameter ("parameter 'BK' missing"),
  /// value not in its list ("VEC=3 is not one of its values 1, 2, 4") or
  /// violated constraint ("violates the constraint 'TILE % VEC == 0'", with
  /// the evaluation error when it cannot be evaluated). One line, naming no
  /// option or file: the caller says where `c` came from (e.g. --params).
  /// With `require_all` false, missing parameters are allowed and the
  /// constraints that name one are not checked.
  std::optional<std::string> check_config(const Config& c, bool require_all = true) const;

  /// Every valid configuration, in lexicographic order of value indices.
  /// Throws SpecError(kopt.space.701) when none is valid, naming the
  /// constraint that removed the most configurations ("every configuration
  /// violates 'BM*BK*8 <= MAX_SHARED_PER_BLOCK'"), and kopt.space.702 when the
  /// cartesian size exceeds `limit` (use sampling strategies instead).
  std::vector<Config> enumerate_valid(uint64_t limit = kEnumerationLimit) const;

  /// Like enumerate_valid() (same order, same errors), but hands each valid
  /// configuration to `visit` as its value indices (one per parameter, in
  /// params() order) instead of building a Config: cheaper for callers that
  /// work on indices. A depth-first search with pruning: its cost is the
  /// number of valid prefixes, not the cartesian size.
  void for_each_valid(const std::function<void(const std::vector<size_t>&)>& visit,
                      uint64_t limit = kEnumerationLimit) const;

  /// The number of valid configurations, counted by the same depth-first
  /// search, whatever the cartesian size; nullopt when that takes more than
  /// `max_work` steps (assignments plus constraint evaluations; 0: no
  /// limit). Never throws.
  std::optional<uint64_t> count_valid(uint64_t max_work = 0) const;

  /// Throws SpecError(kopt.space.701) unless some configuration is valid,
  /// within a bounded effort whatever the size: spaces up to 2^18
  /// configurations are enumerated (the message then gives exact counts,
  /// as enumerate_valid()'s does); larger ones are searched by
  /// search/sampler.h (kFindEffort steps at most: assignments plus
  /// constraint evaluations), and the
  /// message names the constraint that a sample of random configurations
  /// violated most, saying whether the search was complete.
  void check_not_empty() const;

  /// The steps check_not_empty() may spend searching a large space.
  static constexpr uint64_t kFindEffort = 1'000'000;

  /// A uniformly random valid configuration (plain rejection sampling, up
  /// to `attempts` draws); nullopt if none found. The strategies draw with
  /// search/sampler.h instead, which also works where valid configurations
  /// are rare.
  template <typename Rng>
  std::optional<Config> sample(Rng& rng, int attempts = 10000) const;

  /// Configurations that differ from `c` in one parameter by one step in its
  /// value list (valid ones only). A parameter missing from `c`, or whose
  /// value is not in its list, contributes no neighbours.
  std::vector<Config> neighbours(const Config& c) const;

  /// Index of value `v` in parameter `p`'s list, or -1.
  int index_of(size_t p, int64_t v) const;

  /// The configuration of a point (indices in range).
  Config to_config(const Point& p) const;

  // ---- for the depth-first searches of search/ (detail::Partial, Sampler) ----
  /// params() order: lexicographic enumeration.
  const detail::Plan& enumeration_plan() const { return lex_plan_; }
  /// The sampler's order: at each step the parameter that decides the most
  /// constraints not yet decided (then: named by the most constraints, then
  /// the fewest values, then the first), as constraint solvers order their
  /// variables, so that pruning starts early.
  const detail::Plan& sampling_plan() const { return solve_plan_; }
  /// False when a constraint that names no parameter (only constants) fails:
  /// then no configuration is valid.
  bool constant_constraints_hold() const { return constant_ok_; }
  /// restricted_to()'s predicate on a complete point that meets every
  /// constraint (true when the space is not restricted).
  bool kept(const Point& p) const;
  /// The parameters constraint `k` names (indices, ascending).
  const std::vector<size_t>& named(size_t k) const { return named_[k]; }

 private:
  detail::Plan make_plan(std::vector<size_t> order) const;
  std::vector<size_t> solver_order() const;
  [[noreturn]] void throw_empty(uint64_t unkept) const;

  std::vector<spec::TuningParam> params_;
  std::vector<spec::Expr> constraints_;
  spec::Bindings constants_;
  std::function<bool(const Config&)> keep_;  // restricted_to(); empty: no restriction
  std::string keep_what_;
  std::vector<std::vector<size_t>> named_;  // constraint -> the parameters it names (indices, ascending)
  detail::Plan lex_plan_, solve_plan_;
  bool constant_ok_ = true;
};

namespace detail {

/// A partial assignment along a plan: assign() binds a parameter's value and
/// evaluates the constraints decided at that level (a constraint that cannot
/// be evaluated does not hold). Levels are assigned in order 0, 1, ...;
/// assigning level l again (backtracking) forgets levels after it. A
/// constraint whose parameters have at most kTableCells value combinations
/// is evaluated once per combination and its result remembered, so that the
/// searches' repeated checks cost a table lookup.
class Partial {
 public:
  Partial(const Space& space, const Plan& plan);
  Partial(const Partial&) = delete;
  Partial& operator=(const Partial&) = delete;

  size_t levels() const { return plan_.order.size(); }
  /// Number of values of the parameter assigned at `level`.
  int32_t extent(size_t level) const { return extents_[level]; }
  /// Assigns value index `v` at `level`; true when every constraint decided
  /// there holds.
  bool assign(size_t level, int32_t v);
  /// The assignment so far as a point (unassigned entries hold stale values).
  const Point& point() const { return point_; }
  /// The effort so far: one per assignment plus one per constraint evaluated.
  uint64_t work() const { return work_; }

  static constexpr size_t kTableCells = size_t{1} << 16;

 private:
  bool holds(size_t k);

  /// Remembered results of one constraint: cell = sum of value index *
  /// stride over the parameters it names; -1 unknown, else 0 or 1.
  struct Table {
    std::vector<size_t> stride;  // per named parameter (Space::named order)
    std::vector<int8_t> cells;   // empty: too many combinations, always evaluated
  };

  const Space& space_;
  const Plan& plan_;
  spec::Bindings vars_;             // constants + every parameter
  std::vector<int64_t*> slots_;     // parameter index -> its entry in vars_
  std::vector<int32_t> extents_;    // level -> number of values
  std::vector<Table> tables_;       // per constraint
  Point point_;
  uint64_t work_ = 0;
};

}  // namespace detail

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
