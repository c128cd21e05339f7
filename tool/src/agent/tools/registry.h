// The agent's tools: one table row per tool (name, the phases it is offered
// in, its definition for the model, the function that runs it), one file per
// tool (agent/tools/<name>.cpp). Adding a tool: its file, its two
// declarations below, its row in registry.cpp. Internal to the agent.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/llm.h"

namespace kopt::agent {

class Session;

namespace tools {

/// The phases of a run, as bits: drafting the workload (description only),
/// optimizing with the agent, optimizing with the hybrid (agent + search).
enum Phase : unsigned { kDraft = 1u, kAgent = 2u, kHybrid = 4u, kOptimize = kAgent | kHybrid, kAll = 7u };

/// "draft" -> kDraft, "hybrid" -> kHybrid, anything else -> kAgent.
Phase phase_of(const std::string& phase);

/// A tool's description and JSON schema (ToolDef::name is set from the row).
using Define = ToolDef (*)();
/// Runs one call with its arguments (a JSON object) and returns the result
/// for the model. Throws ToolFailure (or SpecError/UsageError, a JSON
/// exception) for a call that cannot be carried out: the message goes back.
using Run = nlohmann::json (*)(Session& session, const nlohmann::json& args);

struct Tool {
  const char* name;
  unsigned phases;          // Phase bits: where it is offered
  int offer_order;          // its place in the list of tools sent to the model
  bool needs_doc_fetch;     // offered only with --allow-doc-fetch
  bool takes_no_arguments;  // blank arguments are taken for {}
  Define define;
  Run run;
};

/// Every tool, in the order tool_names() gives.
const std::vector<Tool>& table();

/// The row of `name`, null when there is none.
const Tool* find(const std::string& name);

/// The tools offered in `phase`, in offer order, with their definitions.
std::vector<ToolDef> offered(const std::string& phase, bool allow_doc_fetch);

// --- the tools (agent/tools/<name>.cpp) --------------------------------------
namespace evaluate_candidate { ToolDef define(); nlohmann::json run(Session&, const nlohmann::json&); }
namespace get_device_properties { ToolDef define(); nlohmann::json run(Session&, const nlohmann::json&); }
namespace profile_candidate { ToolDef define(); nlohmann::json run(Session&, const nlohmann::json&); }
namespace read_optimization_notes { ToolDef define(); nlohmann::json run(Session&, const nlohmann::json&); }
namespace get_history { ToolDef define(); nlohmann::json run(Session&, const nlohmann::json&); }
namespace propose_template { ToolDef define(); nlohmann::json run(Session&, const nlohmann::json&); }
namespace submit_workload { ToolDef define(); nlohmann::json run(Session&, const nlohmann::json&); }
namespace fetch_url { ToolDef define(); nlohmann::json run(Session&, const nlohmann::json&); }

// --- JSON schema pieces the definitions share (registry.cpp) -----------------
namespace schema {
/// An integer expression of the case sizes (or template parameters).
nlohmann::json expr();
/// {"grid": [1-3 exprs], "block": [...], "shared_bytes": expr}.
nlohmann::json launch();
/// The properties of a candidate: source, entry, launch, case_launch, compile_options.
nlohmann::json candidate_properties();
/// An object without properties.
nlohmann::json no_arguments();
}  // namespace schema

}  // namespace tools
}  // namespace kopt::agent
