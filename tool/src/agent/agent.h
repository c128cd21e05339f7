// The agent proposer: `kopt optimize --strategy agent|hybrid`.
//
// An LLM (any OpenAI-compatible API, see agent/llm.h) is given the workload
// (signature, cases, tolerances, the reference and the current best kernel,
// the GPU's properties) and a set of function tools:
//
//   evaluate_candidate       compile, check and time a kernel source with a launch
//   get_device_properties    the GPU (or, without one, the target architecture)
//   profile_candidate        Nsight Compute counters of one launch (when ncu works)
//   read_optimization_notes  short bundled notes by topic (coalescing, tiling...)
//   get_history              every attempt so far with its verdict and geomean
//   propose_template         (hybrid) a kernel with -D parameters; the search tunes it
//   submit_workload          (description only) the drafted workload spec
//   fetch_url                (--allow-doc-fetch) a documentation page as text
//
// Every attempt is recorded in the run folder like the search's (kind
// "candidate", label "agent-N" or "hybrid-N:<params>"), every LLM call in
// <run>/agent/call-NNNN.json (the API key redacted), every executed tool call
// in <run>/agent/events.jsonl, and token usage and the stop reason in
// summary.json under "agent".
//
// Budgets (model/budget.h; any that is set ends the loop when reached):
//   model turns (--budget turns=T; without it as many as evals=N, so
//               --max-iterations N allows N turns): LLM requests, not
//               counting a retry after trimming the context;
//   evaluations (--budget evals=N, --max-iterations N): every candidate the
//               driver evaluates, propose_template's configurations included;
//   minutes     (--budget minutes=M): wall clock, from the run's start;
//   patience    (--budget patience=P): P evaluations in a row without a
//               faster kernel;
//   tokens      (--budget tokens=T, --token-budget T): total tokens reported
//               by the server;
//   repairs     (--max-repairs R): the loop stops when R + 1 candidates in a
//               row fail (anything but ok, or compiled without a GPU).
// The driver's stop conditions enforce evaluations, minutes and patience;
// the conversation reads what is left of them through the evaluation service
// before each turn and each evaluation, and stops itself at its own limits
// (turns, tokens, repairs). The loop also stops when the model answers
// without a tool call, refuses, calls one tool with identical arguments
// `identical_call_limit` times in a row, or sends `max_truncated` truncated
// replies in a row.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/llm.h"

#include "propose/proposer.h"

namespace kopt::agent {

struct AgentOptions {
  int max_repairs = 5;               // --max-repairs
  std::string llm_model;             // --llm-model (empty: OPENAI_MODEL, else gpt-5-mini)
  std::string llm_base_url;          // --llm-base-url (empty: OPENAI_BASE_URL, else OpenAI)
  std::string llm_api;               // --llm-api auto|chat|responses (empty: KOPT_LLM_API, else auto)
  std::string tool_choice = "auto";  // --llm-tool-choice auto|required|<tool name>
  double llm_timeout_s = 0;          // --llm-timeout seconds per HTTP attempt (0: the client's default)
  bool allow_doc_fetch = false;      // --allow-doc-fetch: offer the fetch_url tool
  /// --doc-fetch-allow ENTRY (repeatable): hosts fetch_url may fetch besides
  /// the documentation hosts (agent/doc_fetch.h; also KOPT_DOC_FETCH_ALLOW).
  std::vector<std::string> doc_fetch_allow;
  int identical_call_limit = 3;      // stop at the Nth identical call in a row
  int max_truncated = 3;             // stop after this many truncated replies in a row
  int template_evaluations = 8;      // configurations the search tunes per propose_template
  std::optional<int> max_output_tokens;  // per model turn (unset: the server's default)
  std::filesystem::path dotenv = ".env";

  // Testing hooks (not on the command line).
  std::optional<std::string> api_key;  // instead of OPENAI_API_KEY
  /// Makes the client (default: make_client(config)).
  std::function<std::unique_ptr<LlmClient>(const LlmConfig&)> client_factory;
  /// "host:port" endpoints fetch_url connects to without checking their
  /// addresses (a test's page server on 127.0.0.1).
  std::vector<std::string> doc_fetch_unchecked_endpoints;
};

/// What the agent reads of the run's options (the driver's OptimizeOptions).
/// The budget is not among them: the agent reads it, and what is left of
/// it, through the evaluation service (or the drafting context).
struct RunOptions {
  bool hybrid = false;                   // --strategy hybrid: propose_template is offered
  bool draft = false;                    // no spec: the model drafts the workload first
  std::string description;               // --description
  std::filesystem::path results_dir = "results";  // drafting stages its files beside the run folders
  std::string arch;                      // --arch
  uint64_t seed = 1;                     // seeds the hybrid's template searches
  bool quiet = false;
};

/// The agent proposer for `kopt optimize --strategy agent|hybrid` (or
/// --description without --spec): the conversation runs on its own thread and
/// hands each candidate to the run driver (propose/proposer.h). Checks the
/// options and resolves the LLM configuration before any model call: throws
/// UsageError (kopt.agent.102-104) for bad ones (the budget is checked by the
/// proposer registry, driver/proposers.h). The driver's exit code is kept,
/// except 3 when the LLM API failed for good (the run folder is complete).
propose::ProposerPtr make_proposer(const RunOptions& run, const AgentOptions& agent);

/// Names of every tool the agent knows (for --llm-tool-choice validation).
const std::vector<std::string>& tool_names();

/// The tool definitions offered in a phase: "draft" (description only),
/// "agent" or "hybrid"; fetch_url only when `allow_doc_fetch`.
std::vector<ToolDef> tool_defs(const std::string& phase, bool allow_doc_fetch);

/// Makes room after a context-length error: first replaces old tool results
/// by a stub (half of them, oldest first), then old tool-call arguments, then
/// drops the oldest assistant turn with its tool results. The first
/// `keep_head` messages (system prompt, task) and the last assistant turn are
/// never touched. Returns false when nothing is left to trim.
bool trim_for_context(std::vector<Message>& messages, size_t keep_head = 2);

/// The bundled optimization notes: (topic, text), in a stable order.
const std::vector<std::pair<std::string, std::string>>& optimization_notes();

}  // namespace kopt::agent
