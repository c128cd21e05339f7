#include "model/dispatch.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "model/result.h"
#include "util/json_read.h"

namespace kopt::model {
namespace {

// The regret of a variant that failed (or was not timed) on a shape: as if it
// were 10^6 times slower, large enough that no leaf keeps it for that shape.
constexpr double kFailedRegret = 13.815510557964274;  // log(1e6)

// The smallest dispatch margin: off the tuned shapes a variant other than 0
// runs only where it is predicted at least 5% faster, the no-regression
// bar's 5%, so that a predicted gain within the model's error is not taken.
// On the recorded H200 runs (tests/data/dispatch) a margin of 0 passed the
// leave-one-out check and still ran 1024x3000x2048 5.3% slower than variant 0.
constexpr double kMinMargin = 0.05;

struct Grower {
  const std::vector<DispatchSample>& samples;
  int variants;
  double log_noise;  // log(1 + noise)
  int max_depth;
  std::vector<double> best;  // per sample: its fastest latency
  DispatchTree* tree;

  double regret(size_t s, int v) const {
    const double ms = samples[s].ms[static_cast<size_t>(v)];
    if (!(std::isfinite(ms) && ms > 0)) return kFailedRegret;
    return std::log(ms / best[s]);
  }
  double regret(const std::vector<size_t>& set, int v) const {
    double r = 0;
    for (size_t s : set) r += regret(s, v);
    return r;
  }
  /// The variant with the least total regret on these shapes.
  int best_variant(const std::vector<size_t>& set) const {
    int arg = 0;
    double low = regret(set, 0);
    for (int v = 1; v < variants; ++v) {
      const double r = regret(set, v);
      if (r < low) {
        low = r;
        arg = v;
      }
    }
    return arg;
  }
  /// The leaf's variant: among the variants that are within the noise of
  /// variant 0 on every one of these shapes (variant 0 always is), the least
  /// total regret; variant 0 unless that one is faster by more than the noise
  /// on them taken together. So a leaf never picks a variant that was measured
  /// slower than the best single configuration on one of its shapes.
  int leaf_variant(const std::vector<size_t>& set) const {
    int arg = 0;
    const double r0 = regret(set, 0);
    double low = r0;
    for (int v = 1; v < variants; ++v) {
      bool safe = true;
      for (size_t s : set) {
        const double ms = samples[s].ms[static_cast<size_t>(v)], ms0 = samples[s].ms[0];
        const bool ok0 = std::isfinite(ms0) && ms0 > 0;
        safe = safe && std::isfinite(ms) && ms > 0 && (!ok0 || std::log(ms / ms0) <= log_noise);
      }
      const double r = safe ? regret(set, v) : INFINITY;
      if (r < low) {
        low = r;
        arg = v;
      }
    }
    if (r0 <= low + log_noise * static_cast<double>(set.size())) return 0;
    return arg;
  }
  bool satisfied(const std::vector<size_t>& set, int v) const {
    for (size_t s : set)
      if (regret(s, v) > log_noise) return false;
    return true;
  }

  /// Grows the subtree for `set`; returns its node index.
  int grow(const std::vector<size_t>& set, int depth) {
    const int id = static_cast<int>(tree->nodes.size());
    tree->nodes.emplace_back();
    const int leaf = leaf_variant(set);
    tree->nodes[static_cast<size_t>(id)].variant = leaf;
    if (set.size() < 2 || depth >= max_depth || satisfied(set, leaf)) return id;
    // The question that most lowers the regret of the leaves it makes; ties go
    // to the one whose children could do best (their unconstrained best
    // variants), which looks one step ahead where the leaves' safety rule
    // hides a gain until a further split.
    const double here = regret(set, leaf), here_best = regret(set, best_variant(set));
    double cost = INFINITY, cost_best = INFINITY;
    int best_dim = -1;
    int64_t best_t = 0;
    for (size_t d = 0; d < tree->sizes.size(); ++d) {
      std::set<int64_t> values;
      for (size_t s : set) values.insert(samples[s].sizes[d]);
      for (auto it = values.begin(); std::next(it) != values.end(); ++it) {
        const int64_t a = *it, b = *std::next(it);
        // Between a and b at their geometric mean, rounded down (a <= t < b).
        int64_t t = static_cast<int64_t>(std::floor(std::sqrt(static_cast<double>(a) * static_cast<double>(b))));
        t = std::clamp(t, a, b - 1);
        std::vector<size_t> l, r;
        for (size_t s : set) (samples[s].sizes[d] <= t ? l : r).push_back(s);
        const double c = regret(l, leaf_variant(l)) + regret(r, leaf_variant(r));
        const double cb = regret(l, best_variant(l)) + regret(r, best_variant(r));
        if (c < cost - 1e-12 || (c <= cost + 1e-12 && cb < cost_best - 1e-12)) {
          cost = c;
          cost_best = cb;
          best_dim = static_cast<int>(d);
          best_t = t;
        }
      }
    }
    // A question is asked only when it lowers one of the two regrets.
    if (best_dim < 0 || !(cost < here - 1e-12 || cost_best < here_best - 1e-12)) return id;
    std::vector<size_t> l, r;
    for (size_t s : set) (samples[s].sizes[static_cast<size_t>(best_dim)] <= best_t ? l : r).push_back(s);
    const int left = grow(l, depth + 1);
    const int right = grow(r, depth + 1);
    DispatchNode& n = tree->nodes[static_cast<size_t>(id)];
    n.dim = best_dim;
    n.threshold = best_t;
    n.left = left;
    n.right = right;
    return id;
  }
};

/// Collapses an inner node whose two subtrees are leaves with one variant.
void simplify(DispatchTree& t, int id) {
  DispatchNode& n = t.nodes[static_cast<size_t>(id)];
  if (n.dim < 0) return;
  simplify(t, n.left);
  simplify(t, n.right);
  const DispatchNode& l = t.nodes[static_cast<size_t>(n.left)];
  const DispatchNode& r = t.nodes[static_cast<size_t>(n.right)];
  if (l.dim < 0 && r.dim < 0 && l.variant == r.variant) {
    n.variant = l.variant;
    n.dim = -1;
  }
}

/// A copy without unreachable nodes, in pre-order (children after parents).
void compact(const DispatchTree& in, int id, DispatchTree& out) {
  const DispatchNode& n = in.nodes[static_cast<size_t>(id)];
  const size_t me = out.nodes.size();
  out.nodes.push_back(n);
  if (n.dim < 0) {
    out.nodes[me].left = out.nodes[me].right = -1;
    return;
  }
  out.nodes[me].left = static_cast<int>(out.nodes.size());
  compact(in, n.left, out);
  out.nodes[me].right = static_cast<int>(out.nodes.size());
  compact(in, n.right, out);
}

/// The rule's waves (model/dispatch_rule.h) of a sample's launch.
double waves(int64_t blocks, int blocks_per_sm, int sm_count) {
  return dispatch_rule::waves(static_cast<double>(blocks), blocks_per_sm, sm_count);
}
double spread_waves(int64_t blocks, int blocks_per_sm, int sm_count) {
  return dispatch_rule::spread_waves(static_cast<double>(blocks), blocks_per_sm, sm_count);
}

bool has_launches(const DispatchSample& s) {
  return !s.blocks.empty() && s.blocks.size() == s.ms.size() && s.block_work.size() == s.ms.size() &&
         (s.traffic.empty() || s.traffic.size() == s.ms.size()) &&
         (s.data_bytes.empty() || s.data_bytes.size() == s.ms.size());
}

double traffic_of(const DispatchSample& s, size_t v) { return s.traffic.empty() ? 0.0 : s.traffic[v]; }
double data_of(const DispatchSample& s, size_t v) { return s.data_bytes.empty() ? 0.0 : s.data_bytes[v]; }

/// The five coefficients of variant v (ms per unit of waves * block_work,
/// ms per byte of traffic, ms per launch, ms per unit of spread waves *
/// block_work, ms per byte of the case's data), fitted on `samples` except
/// `skip` (SIZE_MAX: none): non-negative weighted least squares of the
/// relative error, sum over the shapes where v was timed of
/// w^2 (1 - (c . x) / ms)^2 with w^2 = sqrt(fastest ms on the shape / v's
/// ms). The weight fits a variant mostly where it is near the fastest,
/// which is where the choice between variants is made: a row kernel 20x
/// slower than a tiled one on a large square shape says little about its time
/// at N = 1. The square root keeps those shapes in the fit: on the two
/// recorded H200 runs (tests/data/dispatch), w^2 = fastest / ms let a half of
/// the suite grown on itself run a variant 5.3% slower than variant 0 on the
/// other half, and larger powers lost shapes on both runs. The optimum is the
/// unconstrained least-squares solution on its own support
/// (the Kuhn-Tucker conditions; Lawson and Hanson, "Solving Least Squares
/// Problems", 1974, ch. 23), so with five unknowns trying every non-empty
/// subset of them (31) and keeping the best non-negative solution is exact.
/// A term whose quantity is 0 on every shape (no traffic_bytes, no data
/// bytes) is never in a solution. {INFINITY, 0, ...} where v was never timed
/// (never predicted fast).
struct Fit {
  double per_work = INFINITY, per_byte = 0, fixed = 0, per_work_spread = 0, per_data_byte = 0;
};
Fit fit_variant(const std::vector<DispatchSample>& samples, const std::vector<int>& blocks_per_sm, int sm_count,
                size_t v, size_t skip) {
  constexpr int kTerms = 5;
  // Normal equations of the rows x = (waves * work, traffic, 1, spread waves * work, data) / ms
  // against 1, each row's square weighted by w^2 = sqrt(fastest / ms).
  double g[kTerms][kTerms] = {}, r[kTerms] = {}, weights = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    if (i == skip) continue;
    const DispatchSample& s = samples[i];
    const double ms = s.ms[v];
    const double work = waves(s.blocks[v], blocks_per_sm[v], sm_count) * s.block_work[v];
    if (!(std::isfinite(ms) && ms > 0 && work > 0)) continue;
    const double x[kTerms] = {work / ms, std::max(traffic_of(s, v), 0.0) / ms, 1.0 / ms,
                              spread_waves(s.blocks[v], blocks_per_sm[v], sm_count) * s.block_work[v] / ms,
                              std::max(data_of(s, v), 0.0) / ms};
    bool finite = true;
    for (double e : x) finite = finite && std::isfinite(e * e);
    if (!finite) continue;  // an absurd latency (1e-300 ms) says nothing
    double fastest = ms;
    for (double o : s.ms)
      if (std::isfinite(o) && o > 0) fastest = std::min(fastest, o);
    const double w2 = std::sqrt(fastest / ms);  // in (0, 1]
    for (int j = 0; j < kTerms; ++j) {
      r[j] += w2 * x[j];
      for (int k = 0; k < kTerms; ++k) g[j][k] += w2 * x[j] * x[k];
    }
    weights += w2;
  }
  if (!(weights > 0)) return {};
  for (const auto& row : g)
    for (double e : row)
      if (!std::isfinite(e)) return {};
  // residual(c) = sum w^2 - 2 c.r + c' G c
  auto residual = [&](const double (&c)[kTerms]) {
    double q = weights;
    for (int j = 0; j < kTerms; ++j) {
      q -= 2 * c[j] * r[j];
      for (int k = 0; k < kTerms; ++k) q += c[j] * g[j][k] * c[k];
    }
    return q;
  };
  // The subset {waves * work} in closed form (g[0][0] > 0: every row has work > 0), then the others.
  double best[kTerms] = {r[0] / g[0][0], 0, 0, 0, 0};
  double best_r = residual(best);
  for (int mask = 2; mask < (1 << kTerms); ++mask) {
    int idx[kTerms], n = 0;
    for (int j = 0; j < kTerms; ++j)
      if (mask & (1 << j)) idx[n++] = j;
    // Gaussian elimination with partial pivoting on the n x n subsystem, scaled to a unit
    // diagonal (the unknowns' units differ by many orders of magnitude).
    double a[kTerms][kTerms + 1], scale[kTerms];
    bool singular = false;
    for (int j = 0; j < n; ++j) {
      singular = singular || !(g[idx[j]][idx[j]] > 0);
      scale[j] = singular ? 1.0 : std::sqrt(g[idx[j]][idx[j]]);
    }
    if (singular) continue;
    for (int j = 0; j < n; ++j) {
      for (int k = 0; k < n; ++k) a[j][k] = g[idx[j]][idx[k]] / (scale[j] * scale[k]);
      a[j][n] = r[idx[j]] / scale[j];
    }
    for (int col = 0; col < n && !singular; ++col) {
      int piv = col;
      for (int j = col + 1; j < n; ++j)
        if (std::fabs(a[j][col]) > std::fabs(a[piv][col])) piv = j;
      if (!(std::fabs(a[piv][col]) > 1e-12)) {
        singular = true;
        break;
      }
      for (int k = 0; k <= n; ++k) std::swap(a[col][k], a[piv][k]);
      for (int j = 0; j < n; ++j) {
        if (j == col) continue;
        const double f = a[j][col] / a[col][col];
        for (int k = col; k <= n; ++k) a[j][k] -= f * a[col][k];
      }
    }
    if (singular) continue;
    double c[kTerms] = {};
    bool feasible = true;
    for (int j = 0; j < n; ++j) {
      c[idx[j]] = a[j][n] / a[j][j] / scale[j];
      feasible = feasible && std::isfinite(c[idx[j]]) && c[idx[j]] >= 0;
    }
    if (!feasible) continue;
    const double q = residual(c);
    if (q < best_r) {
      best_r = q;
      for (int j = 0; j < kTerms; ++j) best[j] = c[j];
    }
  }
  return {best[0], best[1], best[2], best[3], best[4]};
}

void fit(DispatchModel& m, const std::vector<DispatchSample>& samples, size_t skip) {
  m.ms_per_work.assign(m.blocks_per_sm.size(), INFINITY);
  m.ms_per_byte.assign(m.blocks_per_sm.size(), 0.0);
  m.ms_fixed.assign(m.blocks_per_sm.size(), 0.0);
  m.ms_per_work_spread.assign(m.blocks_per_sm.size(), 0.0);
  m.ms_per_data_byte.assign(m.blocks_per_sm.size(), 0.0);
  for (size_t v = 0; v < m.blocks_per_sm.size(); ++v) {
    const Fit f = fit_variant(samples, m.blocks_per_sm, m.sm_count, v, skip);
    m.ms_per_work[v] = f.per_work, m.ms_per_byte[v] = f.per_byte, m.ms_fixed[v] = f.fixed;
    m.ms_per_work_spread[v] = f.per_work_spread, m.ms_per_data_byte[v] = f.per_data_byte;
  }
}

/// A model as the shipped rule reads it (model/dispatch_rule.h): the
/// per-variant arrays where they are (an array shorter than the variants
/// reads as none: 0), the tuned shapes and the support flattened, `sizes`
/// values a shape.
class RuleView {
 public:
  RuleView(const DispatchModel& m, size_t sizes) {
    const size_t n = std::min(m.ms_per_work.size(), m.blocks_per_sm.size());
    auto array = [n](const std::vector<double>& xs) { return xs.size() >= n ? xs.data() : nullptr; };
    for (const auto& t : m.tuned)
      if (t.size() == sizes) tuned_.insert(tuned_.end(), t.begin(), t.end());
    if (!m.support.empty()) {
      for (size_t v = 0; v < n; ++v)
        for (size_t d = 0; d < sizes; ++d) {
          const bool has = v < m.support.size() && m.support[v].size() == sizes;
          support_.push_back(has ? m.support[v][d][0] : 0);
          support_.push_back(has ? m.support[v][d][1] : -1);
        }
    }
    rule_ = {static_cast<int>(n),
             static_cast<int>(sizes),
             m.sm_count,
             m.blocks_per_sm.data(),
             m.ms_per_work.data(),
             array(m.ms_fixed),
             array(m.ms_per_work_spread),
             array(m.ms_per_byte),
             array(m.ms_per_data_byte),
             m.margin.has_value(),
             m.margin.value_or(0.0),
             tuned_.data(),
             static_cast<int>(sizes == 0 ? 0 : tuned_.size() / sizes),
             m.support.empty() ? nullptr : support_.data()};
  }
  RuleView(const RuleView&) = delete;
  RuleView& operator=(const RuleView&) = delete;
  const dispatch_rule::Model& operator*() const { return rule_; }

 private:
  std::vector<long long> tuned_, support_;
  dispatch_rule::Model rule_{};
};

/// The launches of a sample's variants as the rule reads them (none past
/// the vectors' length: never predicted).
struct Launches {
  const std::vector<int64_t>& blocks;
  const std::vector<double>& block_work;
  const std::vector<double>& traffic;
  const std::vector<double>& data_bytes;
  dispatch_rule::Launch operator()(int v) const {
    const auto i = static_cast<size_t>(v);
    dispatch_rule::Launch l;
    if (i >= blocks.size() || i >= block_work.size()) return l;
    l.blocks = static_cast<double>(blocks[i]);
    l.block_work = block_work[i];
    l.traffic = i < traffic.size() ? traffic[i] : 0.0;
    l.data = i < data_bytes.size() ? data_bytes[i] : 0.0;
    return l;
  }
};

/// The variant the model predicts fastest (the lowest index among equals), or
/// -1 when it predicts none; with `sizes`, among the variants supported there.
int fastest_predicted(const DispatchModel& m, const std::vector<int64_t>& blocks, const std::vector<double>& block_work,
                      const std::vector<double>& traffic, const std::vector<double>& data_bytes,
                      const std::vector<int64_t>* sizes = nullptr) {
  const RuleView rule(m, sizes ? sizes->size() : 0);
  const std::vector<long long> x = sizes ? std::vector<long long>(sizes->begin(), sizes->end()) : std::vector<long long>();
  return dispatch_rule::fastest_predicted(*rule, sizes ? x.data() : nullptr,
                                          Launches{blocks, block_work, traffic, data_bytes});
}

}  // namespace

double DispatchModel::predicted_ms(int v, int64_t blocks, double block_work, double traffic, double data) const {
  const RuleView rule(*this, 0);
  return dispatch_rule::predicted_ms(*rule, v, {static_cast<double>(blocks), block_work, traffic, data});
}

int DispatchModel::choose(const std::vector<int64_t>& sizes, const std::vector<int64_t>& blocks,
                          const std::vector<double>& block_work, const std::vector<double>& traffic,
                          const std::vector<double>& data_bytes) const {
  const RuleView rule(*this, sizes.size());
  const std::vector<long long> x(sizes.begin(), sizes.end());
  if (dispatch_rule::is_tuned(*rule, x.data())) return -1;
  if (blocks.empty() || block_work.empty()) return 0;
  return dispatch_rule::choose_off_tuned(*rule, x.data(), Launches{blocks, block_work, traffic, data_bytes});
}

nlohmann::json DispatchModel::to_json() const {
  auto numbers = [](const std::vector<double>& xs) {
    nlohmann::json a = nlohmann::json::array();
    for (double x : xs) a.push_back(std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr));
    return a;
  };
  // A term missing from a hand-built model is written as 0, as from_json reads a model from before it.
  auto or_zero = [&](const std::vector<double>& xs) {
    return numbers(xs.empty() ? std::vector<double>(ms_per_work.size(), 0.0) : xs);
  };
  nlohmann::json j = {{"rule", "fastest_predicted"},
                      {"sm_count", sm_count},
                      {"blocks_per_sm", blocks_per_sm},
                      {"ms_per_work", numbers(ms_per_work)},
                      {"ms_per_byte", or_zero(ms_per_byte)},
                      {"ms_fixed", or_zero(ms_fixed)},
                      {"ms_per_work_spread", or_zero(ms_per_work_spread)},
                      {"ms_per_data_byte", or_zero(ms_per_data_byte)},
                      {"margin", margin ? nlohmann::json(*margin) : nlohmann::json(nullptr)},
                      {"tuned", tuned},
                      {"block_work", block_work},
                      {"traffic_bytes", traffic},
                      {"data_bytes", data_bytes}};
  if (!support.empty()) j["support"] = support;  // absent: no limit (a model from before it)
  return j;
}

std::optional<DispatchModel> DispatchModel::from_json(const JsonAt& at, int variant_count, size_t size_count) {
  at.expect_object();
  // A model from before the fastest-predicted rule (no "rule": a guard that
  // only vetoed the tree's pick): its margin means something else.
  if (!at.find("rule")) return std::nullopt;
  if (at.at("rule").string() != "fastest_predicted") at.at("rule").fail("expected \"fastest_predicted\"");
  DispatchModel m;
  m.sm_count = static_cast<int>(at.at("sm_count").integer(1, 1 << 20));
  const JsonAt bps = at.at("blocks_per_sm"), ms = at.at("ms_per_work"), mb = at.at("ms_per_byte");
  for (const JsonAt* a : {&bps, &ms, &mb})
    if (a->size() != static_cast<size_t>(variant_count))
      a->fail("expected one entry per variant (" + std::to_string(variant_count) + ")");
  for (size_t v = 0; v < bps.size(); ++v) m.blocks_per_sm.push_back(static_cast<int>(bps.at(v).integer(1, 1 << 20)));
  for (size_t v = 0; v < ms.size(); ++v) {
    const JsonAt x = ms.at(v);
    m.ms_per_work.push_back(x.value().is_null() ? INFINITY : x.number(0));
    m.ms_per_byte.push_back(mb.at(v).number(0));
  }
  // ms_fixed: absent in models from before the launch term (read as 0: what they were fitted with).
  if (auto mf = at.find("ms_fixed")) {
    if (mf->size() != static_cast<size_t>(variant_count))
      mf->fail("expected one entry per variant (" + std::to_string(variant_count) + ")");
    for (size_t v = 0; v < mf->size(); ++v) m.ms_fixed.push_back(mf->at(v).number(0));
  } else {
    m.ms_fixed.assign(static_cast<size_t>(variant_count), 0.0);
  }
  // ms_per_work_spread, ms_per_data_byte: absent in models from before them (read as 0).
  auto optional_terms = [&](const char* key, std::vector<double>& out) -> std::optional<JsonAt> {
    out.assign(static_cast<size_t>(variant_count), 0.0);
    auto a = at.find(key);
    if (!a) return std::nullopt;
    if (a->size() != static_cast<size_t>(variant_count))
      a->fail("expected one entry per variant (" + std::to_string(variant_count) + ")");
    for (size_t v = 0; v < a->size(); ++v) out[v] = a->at(v).number(0);
    return a;
  };
  optional_terms("ms_per_work_spread", m.ms_per_work_spread);
  const std::optional<JsonAt> md = optional_terms("ms_per_data_byte", m.ms_per_data_byte);
  if (auto mg = at.find("margin"); mg && !mg->value().is_null()) m.margin = mg->number(0, 1e6);
  if (size_count == 0) at.fail("a model needs the tree's sizes: the tree has none");
  const JsonAt tuned = at.at("tuned");
  if (tuned.size() == 0) tuned.fail("expected the tuned shapes the model was fitted on");
  for (size_t i = 0; i < tuned.size(); ++i) {
    const JsonAt row = tuned.at(i);
    if (row.size() != size_count) row.fail("expected " + std::to_string(size_count) + " sizes");
    std::vector<int64_t> sz;
    for (size_t d = 0; d < row.size(); ++d) sz.push_back(row.at(d).integer(0, int64_t{1} << 62));
    m.tuned.push_back(std::move(sz));
  }
  m.block_work = at.at("block_work").string();
  if (m.block_work.empty()) at.at("block_work").fail("expected the block_work expression the model was fitted with");
  if (auto t = at.find("traffic_bytes")) m.traffic = t->string();
  for (size_t v = 0; v < m.ms_per_byte.size(); ++v)
    if (m.ms_per_byte[v] > 0 && m.traffic.empty())
      mb.at(v).fail("a positive ms_per_byte needs the traffic_bytes expression it was fitted with");
  if (auto d = at.find("data_bytes")) m.data_bytes = d->string();
  // support: absent in models from before it (no limit).
  if (auto sp = at.find("support")) {
    if (sp->size() != static_cast<size_t>(variant_count))
      sp->fail("expected one entry per variant (" + std::to_string(variant_count) + ")");
    for (size_t v = 0; v < sp->size(); ++v) {
      const JsonAt box = sp->at(v);
      if (box.size() != 0 && box.size() != size_count)
        box.fail("expected no range (no supporting shape) or one per size (" + std::to_string(size_count) + ")");
      std::vector<std::array<int64_t, 2>> b;
      for (size_t d = 0; d < box.size(); ++d) {
        const JsonAt r = box.at(d);
        if (r.size() != 2) r.fail("expected [least, greatest]");
        const int64_t lo = r.at(0).integer(0, int64_t{1} << 62), hi = r.at(1).integer(lo, int64_t{1} << 62);
        b.push_back({lo, hi});
      }
      m.support.push_back(std::move(b));
    }
  }
  for (size_t v = 0; v < m.ms_per_data_byte.size(); ++v)
    if (m.ms_per_data_byte[v] > 0 && m.data_bytes.empty())
      md->at(v).fail("a positive ms_per_data_byte needs the data_bytes expression it was fitted with");
  return m;
}

int DispatchTree::select_guarded(const DispatchSample& s) const {
  if (!model || !has_launches(s)) return select(s.sizes);
  const int v = model->choose(s.sizes, s.blocks, s.block_work, s.traffic, s.data_bytes);
  return v < 0 ? select(s.sizes) : v;
}

int DispatchTree::select(const std::vector<int64_t>& values) const {
  if (nodes.empty()) return 0;
  size_t i = 0;
  while (nodes[i].dim >= 0) {
    const int64_t v = static_cast<size_t>(nodes[i].dim) < values.size() ? values[static_cast<size_t>(nodes[i].dim)] : 0;
    i = static_cast<size_t>(v <= nodes[i].threshold ? nodes[i].left : nodes[i].right);
  }
  return nodes[i].variant;
}

std::string DispatchTree::to_cpp(int indent) const {
  std::ostringstream o;
  if (nodes.empty()) {
    o << std::string(static_cast<size_t>(indent), ' ') << "return 0;\n";
    return o.str();
  }
  std::function<void(int, int)> emit = [&](int id, int ind) {
    const DispatchNode& n = nodes[static_cast<size_t>(id)];
    const std::string pad(static_cast<size_t>(ind), ' ');
    if (n.dim < 0) {
      o << pad << "return " << n.variant << ";\n";
      return;
    }
    const DispatchNode& l = nodes[static_cast<size_t>(n.left)];
    o << pad << "if (" << sizes[static_cast<size_t>(n.dim)] << " <= " << n.threshold << ")";
    if (l.dim < 0) {
      o << " return " << l.variant << ";\n";
    } else {
      o << " {\n";
      emit(n.left, ind + 2);
      o << pad << "}\n";
    }
    emit(n.right, ind);
  };
  emit(0, indent);
  return o.str();
}

nlohmann::json DispatchTree::to_json() const {
  nlohmann::json ns = nlohmann::json::array();
  for (const auto& n : nodes) {
    if (n.dim < 0)
      ns.push_back({{"variant", n.variant}});
    else
      ns.push_back({{"dim", n.dim}, {"threshold", n.threshold}, {"left", n.left}, {"right", n.right}});
  }
  nlohmann::json j = {{"sizes", sizes}, {"noise", noise}, {"nodes", ns}};
  if (model) j["model"] = model->to_json();
  return j;
}

DispatchTree DispatchTree::from_json(const nlohmann::json& j, const std::string& where, int variant_count) {
  const JsonAt at(j, where);
  return from_json(at, variant_count);
}

DispatchTree DispatchTree::from_json(const JsonAt& at, int variant_count) {
  at.expect_object();
  DispatchTree t;
  const JsonAt sizes = at.at("sizes");
  for (size_t i = 0; i < sizes.size(); ++i) t.sizes.push_back(sizes.at(i).string());
  if (auto n = at.find("noise")) t.noise = n->number(0, 1);
  const JsonAt nodes = at.at("nodes");
  if (nodes.size() == 0) nodes.fail("expected at least one node");
  const auto count = static_cast<int64_t>(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const JsonAt n = nodes.at(i);
    n.expect_object();
    DispatchNode d;
    if (auto v = n.find("variant")) {
      d.variant = static_cast<int>(v->integer(0, variant_count - 1));
    } else {
      d.dim = static_cast<int>(n.at("dim").integer(0, static_cast<int64_t>(t.sizes.size()) - 1));
      d.threshold = n.at("threshold").integer();
      // Children come after their parent, so following them always ends.
      d.left = static_cast<int>(n.at("left").integer(static_cast<int64_t>(i) + 1, count - 1));
      d.right = static_cast<int>(n.at("right").integer(static_cast<int64_t>(i) + 1, count - 1));
    }
    t.nodes.push_back(d);
  }
  if (auto m = at.find("model")) t.model = DispatchModel::from_json(*m, variant_count, t.sizes.size());
  return t;
}

DispatchTree derive_dispatch(const std::vector<std::string>& sizes, const std::vector<DispatchSample>& samples,
                             int variant_count, double noise, int max_depth) {
  DispatchTree tree;
  tree.sizes = sizes;
  tree.noise = noise;
  std::vector<size_t> set;
  std::vector<double> best(samples.size(), INFINITY);
  for (size_t s = 0; s < samples.size(); ++s) {
    if (samples[s].sizes.size() != sizes.size() || samples[s].ms.size() != static_cast<size_t>(variant_count))
      throw std::invalid_argument("derive_dispatch: sample '" + samples[s].name + "' has " +
                                  std::to_string(samples[s].sizes.size()) + " sizes and " +
                                  std::to_string(samples[s].ms.size()) + " latencies, expected " +
                                  std::to_string(sizes.size()) + " and " + std::to_string(variant_count));
    for (double ms : samples[s].ms)
      if (std::isfinite(ms) && ms > 0) best[s] = std::min(best[s], ms);
    if (std::isfinite(best[s])) set.push_back(s);
  }
  if (variant_count <= 1 || set.empty()) {
    tree.nodes.push_back({});
    return tree;
  }
  Grower g{samples, variant_count, std::log1p(std::max(noise, 0.0)), max_depth, best, &tree};
  g.grow(set, 0);
  simplify(tree, 0);
  DispatchTree out;
  out.sizes = tree.sizes;
  out.noise = tree.noise;
  compact(tree, 0, out);
  return out;
}

std::optional<DispatchModel> derive_dispatch_model(const DispatchTree& tree, const std::vector<DispatchSample>& samples,
                                                   const std::vector<int>& blocks_per_sm, int sm_count,
                                                   const std::string& block_work, const std::string& traffic,
                                                   const std::string& data_bytes) {
  const size_t variants = blocks_per_sm.size();
  if (samples.size() < 3 || variants < 2 || sm_count <= 0) return std::nullopt;
  for (int b : blocks_per_sm)
    if (b <= 0) return std::nullopt;
  for (const auto& s : samples)
    if (s.ms.size() != variants || !has_launches(s) || s.traffic.empty() != traffic.empty() ||
        s.data_bytes.empty() != data_bytes.empty())
      return std::nullopt;
  DispatchModel m;
  m.sm_count = sm_count;
  m.blocks_per_sm = blocks_per_sm;
  m.block_work = block_work;
  m.traffic = traffic;
  m.data_bytes = data_bytes;
  fit(m, samples, SIZE_MAX);
  for (const auto& s : samples) m.tuned.push_back(s.sizes);
  m.support.assign(variants, {});
  for (const auto& s : samples) {
    double fastest = INFINITY;
    for (double x : s.ms)
      if (std::isfinite(x) && x > 0) fastest = std::min(fastest, x);
    for (size_t v = 0; v < variants; ++v) {
      if (!(std::isfinite(s.ms[v]) && s.ms[v] > 0 && s.ms[v] <= kSupportCut * fastest)) continue;
      auto& box = m.support[v];
      if (box.empty()) {
        for (int64_t x : s.sizes) box.push_back({x, x});
      } else {
        for (size_t d = 0; d < s.sizes.size(); ++d)
          box[d] = {std::min(box[d][0], s.sizes[d]), std::max(box[d][1], s.sizes[d])};
      }
    }
  }
  // Leave-one-out: per left-out shape, the model fitted without it, the
  // variant it predicts fastest and the two predictions.
  struct Held {
    double pred_pick, pred_0, ms_pick, ms_0;
  };
  std::vector<Held> held;
  for (size_t k = 0; k < samples.size(); ++k) {
    const DispatchSample& s = samples[k];
    if (!(std::isfinite(s.ms[0]) && s.ms[0] > 0)) continue;  // no variant 0 to compare with
    DispatchModel mk = m;
    fit(mk, samples, k);
    const int pick = fastest_predicted(mk, s.blocks, s.block_work, s.traffic, s.data_bytes);
    if (pick <= 0) continue;  // variant 0 runs whatever the margin
    const auto p = static_cast<size_t>(pick);
    held.push_back({mk.predicted_ms(pick, s.blocks[p], s.block_work[p], traffic_of(s, p), data_of(s, p)),
                    mk.predicted_ms(0, s.blocks[0], s.block_work[0], traffic_of(s, 0), data_of(s, 0)), s.ms[p], s.ms[0]});
  }
  for (int step = 0; step <= 30; ++step) {
    const double margin = std::max(kMinMargin, 0.1 * step);
    bool ok = true;
    for (const Held& h : held) {
      const bool runs = dispatch_rule::beats_margin(h.pred_pick, h.pred_0, margin);
      const bool slower = !(std::isfinite(h.ms_pick) && h.ms_pick <= h.ms_0 * (1.0 + tree.noise));
      if (runs && slower) ok = false;
    }
    if (ok) {
      m.margin = margin;
      break;
    }
  }
  return m;
}

std::vector<DispatchCheck> check_dispatch(const DispatchTree& tree, const std::vector<DispatchSample>& samples) {
  std::vector<DispatchCheck> out;
  for (const auto& s : samples) {
    DispatchCheck c;
    c.name = s.name;
    c.chosen = tree.select_guarded(s);
    double best = INFINITY;
    for (size_t v = 0; v < s.ms.size(); ++v)
      if (std::isfinite(s.ms[v]) && s.ms[v] > 0 && s.ms[v] < best) {
        best = s.ms[v];
        c.fastest = static_cast<int>(v);
      }
    const double mine = static_cast<size_t>(c.chosen) < s.ms.size() ? s.ms[static_cast<size_t>(c.chosen)] : NAN;
    c.slowdown = std::isfinite(best) && std::isfinite(mine) && mine > 0 ? mine / best : INFINITY;
    out.push_back(c);
  }
  return out;
}

}  // namespace kopt::model
