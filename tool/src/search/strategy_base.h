// Internal to tool/src/search: what every strategy shares. Configurations are
// handled as "points" (one value index per parameter, in Space::params()
// order); the base class converts at the Strategy interface, remembers every
// point proposed or observed so that none is proposed twice, and samples
// uniformly among the valid points not seen yet: from a list of every valid
// point on small spaces, with search/sampler.h (no list) on larger ones.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <unordered_set>
#include <vector>

#include "search/sampler.h"
#include "search/space.h"
#include "search/strategy.h"

namespace kopt::search::detail {

/// Value indices, one per parameter of the space.
using search::Point;

struct PointHash {
  size_t operator()(const Point& p) const noexcept;
};
using PointSet = std::unordered_set<Point, PointHash>;

/// Every strategy's random source. uniform_index() and uniform01()
/// (search/sampler.h) avoid the standard distributions, whose output differs
/// between standard libraries, so that a seed gives the same search
/// everywhere.
using Rng = std::mt19937_64;
using search::uniform01;
using search::uniform_index;

/// Spaces up to this cartesian size are enumerated once at initialize() so
/// that sampling is exact; larger ones are sampled by search/sampler.h.
inline constexpr uint64_t kPoolCartesianLimit = uint64_t{1} << 18;
/// The largest cartesian size enumerated when the sampler finds nothing
/// unseen within its effort (nearly everything seen or invalid); beyond it
/// random_unseen() gives up.
inline constexpr uint64_t kPoolEnumerationLimit = 2'000'000;

/// The length of the start of the model-guided strategies: the surrogate
/// proposes from StrategyBase::covering_unseen() until it has this many
/// results, the portfolio from StrategyBase::spread_unseen() for its first
/// this many proposals; then their model or bandit chooses.
inline constexpr size_t kSpaceFillingStart = 8;

/// Implements the Strategy interface on points. Subclasses implement
/// propose() (an unseen valid point) and learn() (a result), and may override
/// reset() to clear their state.
class StrategyBase : public Strategy {
 public:
  void initialize(const Space& space, uint64_t seed) final;
  std::optional<Config> next() final;
  void observe(const Observation& o) final;

  // For a strategy made of others (the portfolio), which drives its members
  // on points: next() without the conversion; a point another member
  // proposed (never to be proposed here); a result, `own` when this strategy
  // proposed the point (else it reaches learn_foreign()).
  std::optional<Point> next_point();
  void claim(const Point& p) { seen_.insert(p); }
  void observe_point(const Point& p, bool ok, double log_score, bool own);

 protected:
  /// Called by initialize() after the base state is reset.
  virtual void reset() {}
  /// The next point: valid and not seen(). nullopt when none is left.
  virtual std::optional<Point> propose() = 0;
  /// A result. `log_score` is log(score) when ok (scores <= 0 are clamped to a
  /// tiny positive value), 0 otherwise. An ok result with a non-finite score
  /// arrives as a failure.
  virtual void learn(const Point& p, bool ok, double log_score) = 0;
  /// A result of a point that another strategy proposed (observe_point()
  /// with own = false): learn() unless overridden.
  virtual void learn_foreign(const Point& p, bool ok, double log_score) { learn(p, ok, log_score); }
  /// Whether initialize() should enumerate small spaces for sampling
  /// (exhaustive enumerates by itself).
  virtual bool samples() const { return true; }

  const Space& space() const { return *space_; }
  Rng& rng() { return rng_; }
  size_t dims() const { return space_->params().size(); }
  int32_t extent(size_t dim) const { return static_cast<int32_t>(space_->params()[dim].values.size()); }

  bool seen(const Point& p) const { return seen_.count(p) != 0; }
  /// Number of distinct points proposed or observed so far.
  size_t seen_count() const { return seen_.size(); }
  bool valid(const Point& p) const { return space_->valid_point(p); }
  /// Whether `p` may be proposed: every index within its parameter's values,
  /// not seen yet, and valid.
  bool unseen_valid(const Point& p) const;
  Config to_config(const Point& p) const { return space_->to_config(p); }
  /// nullopt when `c` is not a point of the space (unknown name or value).
  std::optional<Point> to_point(const Config& c) const;

  /// A uniformly random valid point not seen yet; nullopt when none is left
  /// (small spaces; larger ones: the sampler's complete search found none),
  /// or when the sampler found none within its effort on a space larger than
  /// kPoolEnumerationLimit (on smaller ones every valid point is listed
  /// then). Uniform except where the sampler says otherwise (sampler.h).
  std::optional<Point> random_unseen();
  /// An initial-design point (a "space-filling" start, as Latin hypercube
  /// sampling gives Bayesian optimisation): a random valid unseen point that
  /// takes a value no seen point has yet, for the switch (a parameter of at
  /// most 3 values) with the fewest values that still has one (ties: the
  /// parameters' order). So the first proposals cover every value of the
  /// switches: a kernel-variant parameter whose rarer value holds 1% of the
  /// valid space (the SGEMM template's KIND = 1) appears within the first
  /// few proposals instead of after about 90 uniform draws. At most 2000
  /// random draws a call; a value they do not reach (rarer than about 1 in
  /// 700 of the valid space, or infeasible) is skipped from then on.
  /// random_unseen() when every value is covered.
  std::optional<Point> covering_unseen();
  /// A spread start point (the portfolio's start): of `candidates` draws of
  /// random_unseen(), the one farthest from every point seen so far (its
  /// smallest Hamming distance to them, the number of parameters whose
  /// values differ; ties: the earlier draw). Each proposal stays a random
  /// valid configuration, but the first few rarely repeat each other's
  /// values, as a Latin hypercube's do (M. D. McKay, R. J. Beckman and W. J.
  /// Conover, Technometrics 21(2), 1979: stratified inputs lower the
  /// variance of what a few samples find); counting differing values rather
  /// than index distances favours no extreme value. nullopt when
  /// random_unseen() finds nothing.
  std::optional<Point> spread_unseen(size_t candidates);
  /// Valid unseen points one step away from `p` along one parameter.
  std::vector<Point> unseen_neighbours(const Point& p) const;
  /// Valid unseen points one step away from `p` along each of two parameters
  /// (the diagonal moves: one parameter up and another down trades one
  /// resource for another at a resource limit, where every single step fails
  /// or is slower).
  std::vector<Point> unseen_diagonal_neighbours(const Point& p) const;
  /// A fair coin flip.
  bool coin() { return (rng_() >> 63) != 0; }
  /// A random element of `v` (non-empty).
  const Point& pick(const std::vector<Point>& v) { return v[uniform_index(rng_, v.size())]; }

 private:
  /// Fills pool_ with every valid point. Throws SpecError(kopt.space.701)
  /// when there is none, so initialize() reports an empty space at once.
  void build_pool();
  std::optional<Point> from_pool();

  /// (dimension, value index) pairs covering_unseen() could not reach.
  std::set<std::pair<size_t, int32_t>> unreachable_;
  const Space* space_ = nullptr;
  Rng rng_;
  PointSet seen_;
  std::unique_ptr<Sampler> sampler_;  // spaces not pooled at initialize()
  bool pooled_ = false;        // pool_ holds every valid point (minus some seen ones)
  std::vector<Point> pool_;    // seen points are dropped lazily
};

/// Factories (one per strategy file).
std::unique_ptr<Strategy> make_exhaustive();
std::unique_ptr<Strategy> make_random();
std::unique_ptr<Strategy> make_anneal();
std::unique_ptr<Strategy> make_walk();
std::unique_ptr<Strategy> make_genetic();
std::unique_ptr<Strategy> make_surrogate();
std::unique_ptr<Strategy> make_portfolio();
std::unique_ptr<Strategy> make_local();
std::unique_ptr<Strategy> make_forest();

}  // namespace kopt::search::detail
