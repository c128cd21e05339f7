#include "model/dispatch.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "util/json_read.h"

namespace kopt::model {
namespace {

// The regret of a variant that failed (or was not timed) on a shape: as if it
// were 10^6 times slower, large enough that no leaf keeps it for that shape.
constexpr double kFailedRegret = 13.815510557964274;  // log(1e6)

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

}  // namespace

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
  return {{"sizes", sizes}, {"noise", noise}, {"nodes", ns}};
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

std::vector<DispatchCheck> check_dispatch(const DispatchTree& tree, const std::vector<DispatchSample>& samples) {
  std::vector<DispatchCheck> out;
  for (const auto& s : samples) {
    DispatchCheck c;
    c.name = s.name;
    c.chosen = tree.select(s.sizes);
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
