// propose_template (hybrid): a kernel with -D parameters; the search tunes it
// (Session::tune_template) through the normal evaluation.
#include <algorithm>
#include <set>

#include "agent/candidate.h"
#include "agent/common.h"
#include "agent/session.h"
#include "agent/tools/registry.h"

namespace kopt::agent::tools::propose_template {

using nlohmann::json;

ToolDef define() {
  json props = schema::candidate_properties();
  props["params"] = {{"type", "object"},
                     {"description", "parameter name -> list of integer values, e.g. {\"BM\": [64, 128], \"TM\": [4, 8]}"},
                     {"additionalProperties", {{"type", "array"}, {"items", {{"type", "integer"}}}}}};
  props["constraints"] = {{"type", "array"}, {"items", {{"type", "string"}}},
                          {"description", "expressions that must be non-zero, e.g. \"BM % TM == 0\"; may use "
                                          "MAX_SHARED_PER_BLOCK, MAX_THREADS_PER_BLOCK, WARP_SIZE, SM_COUNT"}};
  props["max_evaluations"] = {{"type", "integer"}, {"description", "configurations to evaluate (capped)"}};
  return {"",
          "Propose a tunable kernel: its source uses compile-time parameters (macros passed as -D NAME=VALUE, also "
          "usable in the launch expressions). The search tunes the parameters over the given values (at most a few "
          "configurations, constraint-valid only) through the normal evaluation, and returns the results.",
          {{"type", "object"}, {"properties", props}, {"required", {"source", "launch", "params"}}}};
}

json run(Session& s, const json& a) {
  if (s.budget_spent(false)) throw ToolFailure("the budget is spent: " + s.stop_detail());
  auto pj = a.find("params");
  if (pj == a.end() || !pj->is_object() || pj->empty())
    throw ToolFailure("'params' is required: an object {\"NAME\": [values...]} of the template's parameters");
  std::set<std::string> size_names;
  for (const auto& c : s.spec().cases)
    for (const auto& [k, v] : c.sizes) size_names.insert(k);
  std::vector<spec::TuningParam> params;
  for (const auto& [name, vals] : pj->items()) {
    if (!is_identifier(name)) throw ToolFailure("params: '" + name + "' is not an identifier");
    if (size_names.count(name)) throw ToolFailure("params: '" + name + "' is the name of a case size; rename it");
    if (!vals.is_array() || vals.empty()) throw ToolFailure("params." + name + ": expected a non-empty array of integers");
    spec::TuningParam p;
    p.name = name;
    for (const auto& v : vals) {
      if (!v.is_number_integer()) throw ToolFailure("params." + name + ": values must be integers");
      p.values.push_back(v.get<int64_t>());
    }
    params.push_back(std::move(p));
  }
  std::vector<spec::Expr> constraints;
  if (auto cj = a.find("constraints"); cj != a.end() && !cj->is_null()) {
    if (!cj->is_array()) throw ToolFailure("'constraints' must be an array of expressions");
    for (size_t i = 0; i < cj->size(); ++i) constraints.push_back(parse_expr((*cj)[i], "constraints[" + std::to_string(i) + "]"));
  }
  const int cap = s.agent_options().template_evaluations;
  int budget = cap;
  if (auto mj = a.find("max_evaluations"); mj != a.end() && mj->is_number_integer())
    budget = static_cast<int>(std::clamp<int64_t>(mj->get<int64_t>(), 1, cap));
  return s.tune_template(a, params, constraints, budget);
}

}  // namespace kopt::agent::tools::propose_template
