// Strategy registry: names, factory, and the default choice.
#include "search/strategy.h"

#include "search/strategy_base.h"
#include "util/error.h"

namespace kopt::search {
namespace {

struct Entry {
  const char* name;
  std::unique_ptr<Strategy> (*make)();
};

constexpr Entry kStrategies[] = {
    {"exhaustive", detail::make_exhaustive}, {"random", detail::make_random},
    {"anneal", detail::make_anneal},         {"genetic", detail::make_genetic},
    {"surrogate", detail::make_surrogate},   {"portfolio", detail::make_portfolio},
    {"forest", detail::make_forest},         {"local", detail::make_local},
    {"walk", detail::make_walk},
};

/// Spaces up to this many valid configurations are searched exhaustively.
constexpr uint64_t kExhaustiveUpTo = 64;

}  // namespace

std::unique_ptr<Strategy> make_strategy(const std::string& name) {
  for (const Entry& e : kStrategies)
    if (name == e.name) return e.make();
  std::string known;
  for (const std::string& n : strategy_names()) known += (known.empty() ? "" : ", ") + n;
  throw UsageError("kopt.search.801", "unknown search strategy '" + name + "' (known: " + known + ")");
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const Entry& e : kStrategies) names.emplace_back(e.name);
  return names;
}

/// Small spaces: every configuration (64 evaluations cost little and leave
/// no doubt). Larger ones: "portfolio", the most robust over the landscapes
/// tried (strategy.h has the numbers' summary, docs/search.md the tables).
std::string default_strategy(uint64_t valid_size) {
  return valid_size <= kExhaustiveUpTo ? "exhaustive" : "portfolio";
}

std::string default_strategy(std::optional<uint64_t> valid_size, uint64_t cartesian_size) {
  if (!valid_size || cartesian_size > kEnumerationLimit) return "portfolio";
  return default_strategy(*valid_size);
}

}  // namespace kopt::search
