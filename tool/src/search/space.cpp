// The parameter space: construction checks, validity, enumeration, neighbours.
#include "search/space.h"

#include <algorithm>
#include <limits>
#include <set>

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

  std::vector<size_t> sizes, idx(params_.size(), 0);
  for (const auto& p : params_) sizes.push_back(p.values.size());
  spec::Bindings vars = constants_;
  auto bind = [&] {
    for (size_t p = 0; p < params_.size(); ++p) vars[params_[p].name] = params_[p].values[idx[p]];
  };

  // Pass 1: visit the valid configurations (the first violated constraint stops).
  bool any = false;
  uint64_t unkept = 0;  // meet every constraint but not restricted_to()'s predicate
  do {
    bind();
    if (std::all_of(constraints_.begin(), constraints_.end(),
                    [&](const spec::Expr& e) { return constraint_holds(e, vars, nullptr); })) {
      if (keep_) {
        Config c;
        for (size_t p = 0; p < params_.size(); ++p) c[params_[p].name] = params_[p].values[idx[p]];
        if (!keep_(c)) {
          ++unkept;
          continue;  // (advance() runs: `continue` in do-while jumps to the condition)
        }
      }
      any = true;
      visit(idx);
    }
  } while (advance(idx, sizes));
  if (any) return;
  if (unkept > 0)
    throw SpecError("kopt.space.701", "none of the " + std::to_string(unkept) +
                                          " configurations that satisfy every constraint is kept: " + keep_what_);

  // Pass 2 (error path only): how many configurations each constraint removes.
  std::vector<uint64_t> removed(constraints_.size(), 0);
  std::vector<std::string> first_error(constraints_.size());
  std::fill(idx.begin(), idx.end(), 0);
  do {
    bind();
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

}  // namespace kopt::search
