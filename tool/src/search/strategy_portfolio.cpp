// "portfolio": five strategies as members (a local descent, a random-forest
// model, genetic, anneal and random sampling), each proposal made by the
// member that a multi-armed bandit picks, every member learning from every
// result.
//
// Why: no single strategy is best on every landscape. Replayed on public
// exhaustive sweeps, the nearest-neighbour surrogate was the quickest on GEMM
// spaces but slower than random sampling on convolution and point-in-polygon
// spaces, where simulated annealing needed a tenth of its evaluations
// (docs/search.md). A portfolio notices which member is making progress on
// the landscape at hand and gives it the evaluations.
//
// The members (docs/search.md, "The default portfolio", has the
// measurements): "local" (strategy_local.cpp) descends from the best result
// by pattern moves and the steps of a local linear model, the quickest
// member in the first few dozen evaluations on smooth landscapes, where the
// methodology score is mostly decided; "forest" (strategy_forest.cpp), a
// random-forest model with a separate model of which configurations fail,
// learns a value that is slow everywhere and the edge of a resource limit
// from every result, where the nearest-neighbour "surrogate" of the earlier
// portfolio counted failures as slow and steered away from the edge where
// the optimum often lies; "genetic" recombines the best results; "anneal"
// walks out of local minima; "random" keeps some exploration in every search.
// Replacing "surrogate" by "forest" and adding "local" raised the mean
// methodology score on the 16 design spaces of 1000 configurations or more
// (tests/support/synthetic_spaces.h, 50 seeds) from 0.58 to 0.63 and cut the
// geometric mean of the evaluations to within 1% over the hard targets by a
// fifth (140 to 115); a sixth member (the nearest-neighbour surrogate beside
// the forest) did not help.
//
// The bandit is the area-under-the-curve bandit of OpenTuner (J. Ansel et
// al., "OpenTuner: an extensible framework for program autotuning", PACT
// 2014, its AUCBanditMetaTechnique): over a sliding window of the last
// kWindow results of members' proposals, a member's credit weighs its
// credited results by their recency (the k-th of its n uses counts k, the sum
// divided by n (n + 1) / 2), plus an exploration term kExploration
// sqrt(2 log2(window length) / its uses in the window); the member with the
// highest sum proposes, one unused in the window first. OpenTuner credits a
// new best; here a result is credited when it is among the kTop best so far
// (whoever proposed the others): after the first few dozen evaluations new
// bests are too rare to tell the members apart, while landing among the best
// few still separates a member that searches the right region from one that
// does not. Measured with the earlier members (genetic, anneal, surrogate,
// random) on the development spaces: crediting new bests only, a continuous
// credit (the result's quantile among all results, cubed), a window of 100
// or 500, or a discounted UCB bandit came within noise of this choice.
//
// The first kSpaceFillingStart proposals are a spread start
// (spread_unseen(): random valid configurations, each the farthest of
// kSpreadCandidates draws from those seen); every member learns from them,
// none is credited. Where good configurations are plentiful, the score's
// window ends within a few dozen evaluations, where random sampling would be
// 95% of the way to the optimum, so these proposals weigh most there; the
// spread start replaced the covering start (covering_unseen(), which puts
// every value of the small parameters in the first proposals) on that
// ground, measured as docs/search.md says. A
// member's proposal is claimed by the others at once, so that none proposes
// it again (proposals may run ahead of results: pipelining), and counts as a
// use without credit until its result arrives, so that proposals made ahead
// spread over the members. The members' seeds derive from the portfolio's.
#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>

#include "search/strategy_base.h"

namespace kopt::search::detail {
namespace {

constexpr size_t kWindow = 50;
constexpr double kExploration = 0.05;
constexpr size_t kTop = 4;
constexpr size_t kSpreadCandidates = 16;  // the start's draws per proposal

/// The members, in the bandit's order (a tie goes to the first).
std::vector<std::unique_ptr<StrategyBase>> make_members() {
  std::vector<std::unique_ptr<StrategyBase>> out;
  for (auto make : {make_local, make_forest, make_genetic, make_anneal, make_random})
    out.emplace_back(dynamic_cast<StrategyBase*>(make().release()));
  return out;
}

constexpr size_t kNone = std::numeric_limits<size_t>::max();

class Portfolio final : public StrategyBase {
 public:
  std::string name() const override { return "portfolio"; }

 protected:
  void reset() override {
    members_ = make_members();
    for (size_t i = 0; i < members_.size(); ++i) members_[i]->initialize(space(), rng()() + i);
    history_.clear();
    pending_.clear();
    top_.clear();
  }

  std::optional<Point> propose() override {
    if (seen_count() < kSpaceFillingStart) {
      std::optional<Point> p = spread_unseen(kSpreadCandidates);
      if (p) claim_for_all(*p, kNone);
      return p;
    }
    // The chosen member, then the others in order if it has nothing left.
    const size_t first = choose();
    for (size_t k = 0; k < members_.size(); ++k) {
      const size_t m = (first + k) % members_.size();
      std::optional<Point> p = members_[m]->next_point();
      if (!p) continue;
      if (seen(*p)) continue;  // cannot happen: every proposal is claimed by all
      claim_for_all(*p, m);
      pending_[*p] = m;
      return p;
    }
    return std::nullopt;
  }

  void learn(const Point& p, bool ok, double v) override {
    size_t by = kNone;
    if (auto it = pending_.find(p); it != pending_.end()) {
      by = it->second;
      pending_.erase(it);
    }
    for (size_t m = 0; m < members_.size(); ++m) members_[m]->observe_point(p, ok, v, m == by);
    // Credit: among the kTop best results so far (better than the kTop-th).
    const bool credit = ok && (top_.size() < kTop || v < top_.back());
    if (ok) {
      top_.insert(std::upper_bound(top_.begin(), top_.end(), v), v);
      if (top_.size() > kTop) top_.pop_back();
    }
    if (by == kNone) return;  // the start, or a resumed result: no member's credit
    history_.push_back({by, credit});
    if (history_.size() > kWindow) history_.pop_front();
  }

 private:
  struct Use {
    size_t member;
    bool credited;
  };

  void claim_for_all(const Point& p, size_t except) {
    for (size_t m = 0; m < members_.size(); ++m)
      if (m != except) members_[m]->claim(p);
  }

  /// The member with the highest credit plus exploration term.
  size_t choose() const {
    std::vector<double> credit(members_.size(), 0.0), uses(members_.size(), 0.0);
    for (const Use& u : history_) {
      uses[u.member] += 1;
      if (u.credited) credit[u.member] += uses[u.member];  // the k-th use counts k
    }
    // Proposals still waiting for their results count as uses without
    // credit, so that proposals made ahead of results spread over the members.
    for (const auto& [p, m] : pending_) uses[m] += 1;
    size_t best = 0;
    double best_score = -1;
    for (size_t m = 0; m < members_.size(); ++m) {
      if (uses[m] == 0) return m;
      const double n = uses[m];
      const double exploit = credit[m] * 2.0 / (n * (n + 1));
      const double explore = std::sqrt(2.0 * std::log2(double(history_.size())) / n);
      const double score = exploit + kExploration * explore;
      if (score > best_score) {
        best_score = score;
        best = m;
      }
    }
    return best;
  }

  std::vector<std::unique_ptr<StrategyBase>> members_;
  std::deque<Use> history_;           // the last kWindow results of members' proposals
  std::map<Point, size_t> pending_;   // proposed, no result yet -> its member
  std::vector<double> top_;           // the kTop best log scores so far, ascending
};

}  // namespace

std::unique_ptr<Strategy> make_portfolio() { return std::make_unique<Portfolio>(); }

}  // namespace kopt::search::detail
