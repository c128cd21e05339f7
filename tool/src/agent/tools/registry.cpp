// The tool table (see registry.h) and the public tool_names() / tool_defs().
#include "agent/tools/registry.h"

#include <algorithm>

#include "agent/agent.h"

namespace kopt::agent {
namespace tools {

using nlohmann::json;

Phase phase_of(const std::string& phase) {
  if (phase == "draft") return kDraft;
  if (phase == "hybrid") return kHybrid;
  return kAgent;
}

const std::vector<Tool>& table() {
  // name, phases, offer order, needs --allow-doc-fetch, takes no arguments, definition, run
  static const std::vector<Tool> rows = {
      {"evaluate_candidate", kOptimize, 1, false, false, evaluate_candidate::define, evaluate_candidate::run},
      {"get_device_properties", kAll, 5, false, true, get_device_properties::define, get_device_properties::run},
      {"profile_candidate", kOptimize, 2, false, false, profile_candidate::define, profile_candidate::run},
      {"read_optimization_notes", kAll, 6, false, false, read_optimization_notes::define, read_optimization_notes::run},
      {"get_history", kOptimize, 3, false, true, get_history::define, get_history::run},
      {"propose_template", kHybrid, 4, false, false, propose_template::define, propose_template::run},
      {"submit_workload", kDraft, 0, false, false, submit_workload::define, submit_workload::run},
      {"fetch_url", kAll, 7, true, false, fetch_url::define, fetch_url::run},
  };
  return rows;
}

const Tool* find(const std::string& name) {
  for (const Tool& t : table())
    if (name == t.name) return &t;
  return nullptr;
}

std::vector<ToolDef> offered(const std::string& phase, bool allow_doc_fetch) {
  const Phase p = phase_of(phase);
  std::vector<const Tool*> rows;
  for (const Tool& t : table())
    if ((t.phases & p) && (!t.needs_doc_fetch || allow_doc_fetch)) rows.push_back(&t);
  std::stable_sort(rows.begin(), rows.end(), [](const Tool* a, const Tool* b) { return a->offer_order < b->offer_order; });
  std::vector<ToolDef> defs;
  for (const Tool* t : rows) {
    ToolDef d = t->define();
    d.name = t->name;
    defs.push_back(std::move(d));
  }
  return defs;
}

namespace schema {

json expr() {
  return {{"type", {"string", "integer"}}, {"description", "integer expression of the case sizes (or template parameters)"}};
}

json launch() {
  const json dims = {{"type", "array"}, {"items", expr()}, {"minItems", 1}, {"maxItems", 3}};
  return {{"type", "object"},
          {"description", "grid and block: 1 to 3 expressions (missing ones are 1); shared_bytes: dynamic "
                          "shared memory in bytes (default 0)"},
          {"properties", {{"grid", dims}, {"block", dims}, {"shared_bytes", expr()}}},
          {"required", {"grid", "block"}}};
}

json candidate_properties() {
  const json source = {{"type", "string"},
                       {"description", "the complete CUDA C++ source (device code only, compiled with NVRTC)"}};
  const json entry = {{"type", "string"},
                      {"description", "the __global__ function to launch (default: a '// kopt:entry NAME' line in the "
                                      "source, else the initial kernel's name)"}};
  const json case_launch = {{"type", "object"},
                            {"description", "optional per-case launches: case name -> launch (cases are matched by their "
                                            "sizes); other cases use 'launch'"},
                            {"additionalProperties", launch()}};
  const json options = {{"type", "array"}, {"items", {{"type", "string"}}},
                        {"description", "extra NVRTC options, e.g. [\"-use_fast_math\"] (changes results!), "
                                        "[\"-maxrregcount=128\"]"}};
  return {{"source", source}, {"entry", entry}, {"launch", launch()}, {"case_launch", case_launch},
          {"compile_options", options}};
}

json no_arguments() { return {{"type", "object"}, {"properties", json::object()}}; }

}  // namespace schema
}  // namespace tools

// ---------------------------------------------------------------------------
// Public (agent.h)

const std::vector<std::string>& tool_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const tools::Tool& t : tools::table()) n.push_back(t.name);
    return n;
  }();
  return names;
}

std::vector<ToolDef> tool_defs(const std::string& phase, bool allow_doc_fetch) {
  return tools::offered(phase, allow_doc_fetch);
}

}  // namespace kopt::agent
