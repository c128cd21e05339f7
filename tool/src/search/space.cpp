// The parameter space: construction checks, the search plans, validity,
// enumeration and counting by depth-first search with pruning, the
// empty-space error, neighbours.
#include "search/space.h"

#include <algorithm>
#include <limits>
#include <random>
#include <set>

#include "search/sampler.h"
#include "util/error.h"

namespace kopt::search {
namespace {

std::string quoted(const std::string& s) { return "'" + s + "'"; }

/// True when constraint `e` evaluates non-zero for `vars`. A constraint that
/// cannot be evaluated (kopt::Error, e.g. division by zero) does not hold;
/// then `eval_error` (if given) receives the error message.
bool constraint_holds(const spec::Expr& e, const spec::Bindings& vars, std::string* eval_error) {
  try {
    return e.eval(vars) != 0;
  } catch (const Error& err) {
    if (eval_error) *eval_error = err.what();
    return false;
  }
}

/// Spaces up to this cartesian size get exact counts in the kopt.space.701
/// message (every configuration evaluated against every constraint); larger
/// ones an estimate from kExplainSamples random configurations.
constexpr uint64_t kExactExplainLimit = uint64_t{1} << 18;
constexpr uint64_t kExplainSamples = 4096;

std::string join_names(const std::vector<spec::TuningParam>& params) {
  std::string out;
  for (const auto& p : params) out += (out.empty() ? "" : ", ") + p.name;
  return out.empty() ? "none" : out;
}

std::string join_values(const std::vector<int64_t>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i == 16) return out + ", ... (" + std::to_string(values.size()) + " values)";
    out += (i ? ", " : "") + std::to_string(values[i]);
  }
  return out;
}

/// Depth-first search over `part`'s plan from `level`: calls `leaf()` for
/// every complete assignment whose constraints hold, in the plan's value
/// order; stops (returning true) as soon as `leaf()` or `stop()` returns true.
template <typename Leaf, typename Stop>
bool dfs(detail::Partial& part, size_t level, Leaf& leaf, Stop& stop) {
  if (level == part.levels()) return leaf();
  for (int32_t v = 0; v < part.extent(level); ++v) {
    if (stop()) return true;
    if (part.assign(level, v) && dfs(part, level + 1, leaf, stop)) return true;
  }
  return false;
}

/// Advances `idx` like an odometer (last position fastest) within `sizes`.
/// Returns false after the last combination.
bool advance(std::vector<size_t>& idx, const std::vector<size_t>& sizes) {
  for (size_t p = idx.size(); p-- > 0;) {
    if (++idx[p] < sizes[p]) return true;
    idx[p] = 0;
  }
  return false;
}

/// The kopt.space.701 message: the constraint that removed the most
/// configurations, how many, and why it failed to evaluate if it did.
std::string explain_empty(const std::vector<spec::Expr>& constraints, const std::vector<uint64_t>& removed,
                          const std::vector<std::string>& first_error, uint64_t total) {
  const size_t worst = std::max_element(removed.begin(), removed.end()) - removed.begin();
  const std::string text = quoted(constraints[worst].text());
  std::string msg = removed[worst] == total
                        ? "every configuration violates " + text + " (all " + std::to_string(total) + ")"
                        : "no configuration satisfies every constraint; " + text + " removed the most: " +
                              std::to_string(removed[worst]) + " of " + std::to_string(total);
  if (!first_error[worst].empty()) msg += "; it cannot be evaluated: " + first_error[worst];
  return msg;
}

}  // namespace

std::string config_key(const Config& c) {
  std::string key;
  for (const auto& [name, value] : c) {
    if (!key.empty()) key += ',';
    key += name + '=' + std::to_string(value);
  }
  return key;
}

Space::Space(std::vector<spec::TuningParam> params, std::vector<spec::Expr> constraints,
             spec::Bindings constants)
    : params_(std::move(params)), constraints_(std::move(constraints)), constants_(std::move(constants)) {
  std::set<std::string> names;
  for (const auto& p : params_) {
    if (p.values.empty())
      throw SpecError("kopt.space.703", "tuning parameter " + quoted(p.name) + " has no values");
    if (!names.insert(p.name).second)
      throw SpecError("kopt.space.704", "two tuning parameters are named " + quoted(p.name));
    if (constants_.count(p.name))
      throw SpecError("kopt.space.706", "tuning parameter " + quoted(p.name) +
                                            " has the name of a constant constraints may use");
    std::set<int64_t> seen;
    for (int64_t v : p.values)
      if (!seen.insert(v).second)
        throw SpecError("kopt.space.705", "tuning parameter " + quoted(p.name) + " lists the value " +
                                              std::to_string(v) + " twice");
  }
  // Which parameters each constraint names; a constraint that names none is
  // decided by the constants alone, once.
  named_.resize(constraints_.size());
  for (size_t k = 0; k < constraints_.size(); ++k) {
    const std::set<std::string> names = constraints_[k].names();
    for (size_t p = 0; p < params_.size(); ++p)
      if (names.count(params_[p].name)) named_[k].push_back(p);
    if (named_[k].empty() && !constraint_holds(constraints_[k], constants_, nullptr)) constant_ok_ = false;
  }
  std::vector<size_t> identity(params_.size());
  for (size_t p = 0; p < identity.size(); ++p) identity[p] = p;
  lex_plan_ = make_plan(identity);
  solve_plan_ = make_plan(solver_order());
}

detail::Plan Space::make_plan(std::vector<size_t> order) const {
  detail::Plan plan;
  std::vector<size_t> level_of(params_.size());
  for (size_t l = 0; l < order.size(); ++l) level_of[order[l]] = l;
  plan.order = std::move(order);
  plan.checks.resize(params_.size());
  for (size_t k = 0; k < constraints_.size(); ++k) {
    if (named_[k].empty()) continue;
    size_t last = 0;
    for (size_t p : named_[k]) last = std::max(last, level_of[p]);
    plan.checks[last].push_back(k);
  }
  return plan;
}

/// Greedy: next the parameter that completes the most constraints, then the
/// one named by the most constraints, then the one with the fewest values,
/// then the first in params() order.
std::vector<size_t> Space::solver_order() const {
  const size_t n = params_.size();
  std::vector<size_t> unassigned(constraints_.size()), mentions(n, 0), order;
  for (size_t k = 0; k < constraints_.size(); ++k) {
    unassigned[k] = named_[k].size();
    for (size_t p : named_[k]) ++mentions[p];
  }
  std::vector<bool> placed(n, false);
  for (size_t step = 0; step < n; ++step) {
    size_t best = n, best_decides = 0;
    for (size_t p = 0; p < n; ++p) {
      if (placed[p]) continue;
      size_t decides = 0;
      for (size_t k = 0; k < constraints_.size(); ++k)
        if (unassigned[k] == 1 && std::binary_search(named_[k].begin(), named_[k].end(), p)) ++decides;
      const bool better =
          best == n || decides > best_decides ||
          (decides == best_decides &&
           (mentions[p] > mentions[best] ||
            (mentions[p] == mentions[best] && params_[p].values.size() < params_[best].values.size())));
      if (better) {
        best = p;
        best_decides = decides;
      }
    }
    placed[best] = true;
    order.push_back(best);
    for (size_t k = 0; k < constraints_.size(); ++k)
      if (std::binary_search(named_[k].begin(), named_[k].end(), best)) --unassigned[k];
  }
  return order;
}

uint64_t Space::cartesian_size() const {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  uint64_t n = 1;
  for (const auto& p : params_) {
    const uint64_t k = p.values.size();
    if (n > kMax / k) return kMax;  // saturate
    n *= k;
  }
  return n;
}

bool Space::valid(const Config& c, std::string* violated) const {
  auto fail = [&](const std::string& why) {
    if (violated) *violated = why;
    return false;
  };
  if (c.size() != params_.size()) {
    for (const auto& [name, value] : c) {
      bool known = std::any_of(params_.begin(), params_.end(), [&](const auto& p) { return p.name == name; });
      if (!known) return fail("unknown parameter " + quoted(name));
    }
  }
  spec::Bindings vars = constants_;
  for (size_t p = 0; p < params_.size(); ++p) {
    auto it = c.find(params_[p].name);
    if (it == c.end()) return fail("parameter " + quoted(params_[p].name) + " missing");
    if (index_of(p, it->second) < 0)
      return fail(params_[p].name + "=" + std::to_string(it->second) + " is not one of its values");
    vars[it->first] = it->second;
  }
  for (const auto& e : constraints_) {
    if (!constraint_holds(e, vars, nullptr)) return fail(e.text());
  }
  if (keep_ && !keep_(c)) return fail(keep_what_);
  return true;
}

bool Space::valid_point(const Point& p) const {
  if (p.size() != params_.size() || !constant_ok_) return false;
  spec::Bindings vars = constants_;
  for (size_t d = 0; d < params_.size(); ++d) {
    if (p[d] < 0 || static_cast<size_t>(p[d]) >= params_[d].values.size()) return false;
    vars[params_[d].name] = params_[d].values[p[d]];
  }
  for (const auto& e : constraints_)
    if (!constraint_holds(e, vars, nullptr)) return false;
  return kept(p);
}

std::optional<std::string> Space::check_config(const Config& c, bool require_all) const {
  for (const auto& [name, value] : c) {
    const bool known = std::any_of(params_.begin(), params_.end(), [&](const auto& p) { return p.name == name; });
    if (!known) return "unknown parameter " + quoted(name) + " (the parameters: " + join_names(params_) + ")";
  }
  spec::Bindings vars = constants_;
  std::vector<bool> given(params_.size(), false);
  for (size_t p = 0; p < params_.size(); ++p) {
    auto it = c.find(params_[p].name);
    if (it == c.end()) {
      if (require_all)
        return "parameter " + quoted(params_[p].name) + " missing (the parameters: " + join_names(params_) + ")";
      continue;
    }
    if (index_of(p, it->second) < 0)
      return params_[p].name + "=" + std::to_string(it->second) + " is not one of its values " +
             join_values(params_[p].values);
    vars[it->first] = it->second;
    given[p] = true;
  }
  for (size_t k = 0; k < constraints_.size(); ++k) {
    if (std::any_of(named_[k].begin(), named_[k].end(), [&](size_t p) { return !given[p]; })) continue;
    std::string err;
    if (!constraint_holds(constraints_[k], vars, &err))
      return "violates the constraint " + quoted(constraints_[k].text()) +
             (err.empty() ? std::string() : " (it cannot be evaluated: " + err + ")");
  }
  if (require_all && keep_ && !keep_(c)) return keep_what_;
  return std::nullopt;
}

Config Space::to_config(const Point& p) const {
  Config c;
  for (size_t d = 0; d < params_.size(); ++d) c[params_[d].name] = params_[d].values[p[d]];
  return c;
}

bool Space::kept(const Point& p) const { return !keep_ || keep_(to_config(p)); }

Space Space::restricted_to(std::function<bool(const Config&)> keep, std::string what) const {
  Space s = *this;
  if (keep_) {
    auto first = keep_;
    s.keep_ = [first, keep = std::move(keep)](const Config& c) { return first(c) && keep(c); };
    s.keep_what_ = keep_what_ + " or " + what;
  } else {
    s.keep_ = std::move(keep);
    s.keep_what_ = std::move(what);
  }
  return s;
}

std::vector<Config> Space::enumerate_valid(uint64_t limit) const {
  std::vector<Config> out;
  for_each_valid(
      [&](const std::vector<size_t>& idx) {
        Config c;
        for (size_t p = 0; p < params_.size(); ++p) c[params_[p].name] = params_[p].values[idx[p]];
        out.push_back(std::move(c));
      },
      limit);
  return out;
}

void Space::for_each_valid(const std::function<void(const std::vector<size_t>&)>& visit,
                           uint64_t limit) const {
  const uint64_t total = cartesian_size();
  if (total > limit)
    throw SpecError("kopt.space.702",
                    "the space has " + std::to_string(total) + " configurations, more than the " +
                        std::to_string(limit) +
                        " that can be enumerated; use a sampling strategy "
                        "(random, anneal, genetic, surrogate)");

  // Depth-first in params() order, value indices ascending: lexicographic.
  bool any = false;
  uint64_t unkept = 0;  // meet every constraint but not restricted_to()'s predicate
  if (constant_ok_) {
    detail::Partial part(*this, lex_plan_);
    std::vector<size_t> idx(params_.size());
    auto leaf = [&] {
      if (!kept(part.point())) {
        ++unkept;
        return false;
      }
      any = true;
      std::copy(part.point().begin(), part.point().end(), idx.begin());
      visit(idx);
      return false;
    };
    auto never = [] { return false; };
    dfs(part, 0, leaf, never);
  }
  if (any) return;
  throw_empty(unkept);
}

std::optional<uint64_t> Space::count_valid(uint64_t max_work) const {
  if (!constant_ok_) return 0;
  detail::Partial part(*this, solve_plan_);
  uint64_t count = 0;
  bool over = false;
  auto leaf = [&] {
    if (kept(part.point())) ++count;
    return false;
  };
  auto stop = [&] { return over = max_work > 0 && part.work() > max_work; };
  dfs(part, 0, leaf, stop);
  if (over) return std::nullopt;
  return count;
}

void Space::check_not_empty() const {
  if (cartesian_size() <= kExactExplainLimit) {
    if (count_valid().value_or(0) == 0) for_each_valid([](const std::vector<size_t>&) {});  // throws 701
    return;
  }
  Sampler sampler(*this);
  Sampler::Rng rng(0x5eed);
  if (sampler.draw(rng, {}, kFindEffort)) return;
  // Why: the constraint that a sample of random configurations violates most.
  const uint64_t total = cartesian_size();
  std::vector<uint64_t> removed(constraints_.size(), 0);
  std::vector<std::string> first_error(constraints_.size());
  spec::Bindings vars = constants_;
  for (uint64_t i = 0; i < kExplainSamples; ++i) {
    for (const auto& p : params_) vars[p.name] = p.values[uniform_index(rng, p.values.size())];
    for (size_t k = 0; k < constraints_.size(); ++k) {
      std::string err;
      if (!constraint_holds(constraints_[k], vars, &err)) {
        ++removed[k];
        if (first_error[k].empty()) first_error[k] = err;
      }
    }
  }
  std::string msg = sampler.exhausted()
                        ? "no configuration satisfies every constraint (a complete search with pruning of the " +
                              std::to_string(total) + " configurations found none)"
                        : "no valid configuration found among the " + std::to_string(total) +
                              " configurations within the search effort (" + std::to_string(kFindEffort) +
                              " steps): valid ones are too rare to find, if there are any";
  if (!constraints_.empty()) {
    const size_t worst = std::max_element(removed.begin(), removed.end()) - removed.begin();
    msg += "; " + quoted(constraints_[worst].text()) + " removed the most: " +
           (removed[worst] == kExplainSamples ? "all " : "") + std::to_string(removed[worst]) + " of " +
           std::to_string(kExplainSamples) + " random configurations";
    if (!first_error[worst].empty()) msg += "; it cannot be evaluated: " + first_error[worst];
  }
  if (keep_) msg += " (or they are not kept: " + keep_what_ + ")";
  throw SpecError("kopt.space.701", msg);
}

void Space::throw_empty(uint64_t unkept) const {
  if (unkept > 0)
    throw SpecError("kopt.space.701", "none of the " + std::to_string(unkept) +
                                          " configurations that satisfy every constraint is kept: " + keep_what_);
  const uint64_t total = cartesian_size();
  if (total > kExactExplainLimit) check_not_empty();  // throws, with an estimate instead of counts

  // Exact: how many configurations each constraint removes.
  std::vector<size_t> sizes, idx(params_.size(), 0);
  for (const auto& p : params_) sizes.push_back(p.values.size());
  spec::Bindings vars = constants_;
  std::vector<uint64_t> removed(constraints_.size(), 0);
  std::vector<std::string> first_error(constraints_.size());
  do {
    for (size_t p = 0; p < params_.size(); ++p) vars[params_[p].name] = params_[p].values[idx[p]];
    for (size_t k = 0; k < constraints_.size(); ++k) {
      std::string err;
      if (!constraint_holds(constraints_[k], vars, &err)) {
        ++removed[k];
        if (first_error[k].empty()) first_error[k] = err;
      }
    }
  } while (advance(idx, sizes));
  throw SpecError("kopt.space.701", explain_empty(constraints_, removed, first_error, total));
}

std::vector<Config> Space::neighbours(const Config& c) const {
  std::vector<Config> out;
  for (size_t p = 0; p < params_.size(); ++p) {
    auto it = c.find(params_[p].name);
    if (it == c.end()) continue;
    const int i = index_of(p, it->second);
    if (i < 0) continue;
    for (int j : {i - 1, i + 1}) {
      if (j < 0 || j >= static_cast<int>(params_[p].values.size())) continue;
      Config n = c;
      n[params_[p].name] = params_[p].values[j];
      if (valid(n)) out.push_back(std::move(n));
    }
  }
  return out;
}

int Space::index_of(size_t p, int64_t v) const {
  if (p >= params_.size()) return -1;
  const auto& vals = params_[p].values;
  auto it = std::find(vals.begin(), vals.end(), v);
  return it == vals.end() ? -1 : static_cast<int>(it - vals.begin());
}

namespace detail {

Partial::Partial(const Space& space, const Plan& plan)
    : space_(space), plan_(plan), vars_(space.constants()), point_(space.params().size(), 0) {
  const auto& params = space.params();
  slots_.resize(params.size());
  for (size_t p = 0; p < params.size(); ++p) slots_[p] = &(vars_[params[p].name] = params[p].values.front());
  for (size_t p : plan.order) extents_.push_back(static_cast<int32_t>(params[p].values.size()));
  tables_.resize(space.constraints().size());
  for (size_t k = 0; k < tables_.size(); ++k) {
    size_t cells = 1;
    for (size_t p : space.named(k)) {
      tables_[k].stride.push_back(cells);
      cells *= params[p].values.size();
      if (cells > kTableCells) break;
    }
    if (cells <= kTableCells && !space.named(k).empty()) tables_[k].cells.assign(cells, -1);
  }
}

bool Partial::holds(size_t k) {
  Table& t = tables_[k];
  if (t.cells.empty()) return constraint_holds(space_.constraints()[k], vars_, nullptr);
  const std::vector<size_t>& named = space_.named(k);
  size_t cell = 0;
  for (size_t i = 0; i < named.size(); ++i) cell += static_cast<size_t>(point_[named[i]]) * t.stride[i];
  int8_t& r = t.cells[cell];
  if (r < 0) r = constraint_holds(space_.constraints()[k], vars_, nullptr) ? 1 : 0;
  return r != 0;
}

bool Partial::assign(size_t level, int32_t v) {
  const size_t p = plan_.order[level];
  *slots_[p] = space_.params()[p].values[v];
  point_[p] = v;
  ++work_;
  for (size_t k : plan_.checks[level]) {
    ++work_;
    if (!holds(k)) return false;
  }
  return true;
}

}  // namespace detail

}  // namespace kopt::search
