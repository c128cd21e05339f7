// The agent proposer's entry point (see agent.h): checks the options, makes
// the LLM client and runs a Session (agent/session.h). The pieces:
//   session.{h,cpp}    the conversation loop, budgets, the run folder's agent/ files
//   tools/             one file per tool, and the tool table (tools/registry.h)
//   prompts.{h,cpp}    the system prompts and the texts they are built from
//   candidate.{h,cpp}  candidates and launches from the tools' arguments
//   http.{h,cpp}       libcurl (the LLM client's POST, fetch_url's GET)
//   llm_*.cpp          the OpenAI-compatible client (agent/llm.h)
#include "agent/agent.h"

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "agent/doc_fetch.h"
#include "agent/session.h"
#include "agent/tools/registry.h"
#include "agent/proposer.h"
#include "util/error.h"

namespace kopt::agent {

namespace stdfs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kTrimmed = "[trimmed to save context]";

/// --llm-tool-choice: auto, required, or a tool offered in one of this run's
/// phases (drafting too when there is no --spec).
void check_tool_choice(const RunOptions& o, const AgentOptions& ao) {
  const bool hybrid = o.hybrid;
  const std::string& c = ao.tool_choice;
  bool ok = c.empty() || c == "auto" || c == "required";
  if (const tools::Tool* t = tools::find(c)) {
    const unsigned phases = (hybrid ? tools::kHybrid : tools::kAgent) | (o.draft ? tools::kDraft : 0u);
    ok = (t->phases & phases) != 0 && (!t->needs_doc_fetch || ao.allow_doc_fetch);
  }
  if (!ok) {
    std::string names;
    for (const auto& n : tool_names()) names += ", " + n;
    throw UsageError("kopt.agent.102", "--llm-tool-choice '" + c + "': expected auto, required or a tool offered in this mode (" +
                                           names.substr(2) + ")");
  }
}

}  // namespace

// ---------------------------------------------------------------------------

bool trim_for_context(std::vector<Message>& m, size_t keep_head) {
  // The last assistant turn (and what follows it) is never touched.
  size_t last_assistant = m.size();
  for (size_t i = m.size(); i-- > keep_head;)
    if (m[i].role == Role::assistant) {
      last_assistant = i;
      break;
    }
  const size_t end = std::min(last_assistant, m.size());
  // 1. Old tool results -> a stub (half of them, oldest first).
  std::vector<size_t> idx;
  for (size_t i = keep_head; i < end; ++i)
    if (m[i].role == Role::tool && m[i].content != kTrimmed) idx.push_back(i);
  if (!idx.empty()) {
    const size_t n = std::max<size_t>(1, (idx.size() + 1) / 2);
    for (size_t k = 0; k < n; ++k) m[idx[k]].content = kTrimmed;
    return true;
  }
  // 2. Old tool-call arguments (kernel sources) -> a stub.
  bool changed = false;
  for (size_t i = keep_head; i < end && !changed; ++i)
    if (m[i].role == Role::assistant)
      for (auto& tc : m[i].tool_calls)
        if (tc.arguments.size() > 64) {
          tc.arguments = "{\"omitted\": \"trimmed to save context\"}";
          tc.parsed = json{{"omitted", "trimmed to save context"}};
          changed = true;
        }
  if (changed) return true;
  // 3. Drop the oldest assistant turn with its tool results (and user notes before it).
  for (size_t i = keep_head; i < end; ++i) {
    if (m[i].role != Role::assistant) continue;
    size_t j = i + 1;
    while (j < m.size() && m[j].role == Role::tool) ++j;
    if (j > last_assistant) return false;
    m.erase(m.begin() + static_cast<std::ptrdiff_t>(keep_head), m.begin() + static_cast<std::ptrdiff_t>(j));
    return true;
  }
  return false;
}


propose::ProposerPtr make_proposer(const RunOptions& o, const AgentOptions& ao) {
  if (ao.max_repairs < 0) throw UsageError("kopt.agent.103", "--max-repairs must be 0 or more");
  if (ao.llm_timeout_s < 0) throw UsageError("kopt.agent.103", "--llm-timeout must be positive");
  check_tool_choice(o, ao);
  if (!ao.doc_fetch_allow.empty() && !ao.allow_doc_fetch)
    throw UsageError("kopt.agent.104", "--doc-fetch-allow: it needs --allow-doc-fetch (fetch_url is off without it)");
  if (ao.allow_doc_fetch)  // a malformed entry is an error now, not at the model's first fetch
    docfetch::make_policy(ao.doc_fetch_allow, std::getenv("KOPT_DOC_FETCH_ALLOW"), ao.doc_fetch_unchecked_endpoints);
  if (!ao.llm_api.empty() && ao.llm_api != "auto" && ao.llm_api != "chat" && ao.llm_api != "responses")
    throw UsageError("kopt.agent.103", "--llm-api '" + ao.llm_api + "': expected auto, chat or responses");
  LlmOverrides ov;
  if (ao.api_key) ov.api_key = *ao.api_key;
  if (!ao.llm_base_url.empty()) ov.base_url = ao.llm_base_url;
  if (!ao.llm_model.empty()) ov.model = ao.llm_model;
  if (!ao.llm_api.empty()) ov.api = ao.llm_api;
  if (ao.llm_timeout_s > 0) ov.timeout_s = ao.llm_timeout_s;
  const LlmConfig config = resolve_config(ov, ao.dotenv.string());
  std::unique_ptr<LlmClient> client = ao.client_factory ? ao.client_factory(config) : make_client(config);
  return std::make_unique<AgentProposer>(o, ao, std::move(client));
}

}  // namespace kopt::agent
