// A provider-neutral LLM client for OpenAI-compatible APIs.
//
// One transcript type (Message, ToolCall) is spoken to two wire protocols:
//   - Chat Completions (POST {base_url}/chat/completions), the default, which
//     every local server (vLLM, Ollama, llama.cpp's server, LM Studio, SGLang)
//     speaks;
//   - Responses (POST {base_url}/responses), chosen by `api = auto` for
//     OpenAI's own host (api.openai.com).
// Transport is libcurl; JSON is nlohmann/json. The API key is only ever put in
// the Authorization header: it never reaches a log, a saved request, an error
// message or the run folder (see redact()); nor do credentials in the base URL
// (user-info, key=/token= parameters), which requests still use.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace kopt::agent {

// ---------------------------------------------------------------------------
// Transcript
// ---------------------------------------------------------------------------

/// One function call requested by the model.
struct ToolCall {
  /// As sent by the server. Synthesised ("call_<n>", n the smallest number not
  /// yet used by the transcript) when the server sent none, or when it repeats
  /// an id of the same reply.
  std::string id;
  std::string name;
  std::string arguments;  // the arguments as JSON text (an object sent by the server is dumped)
  /// The parsed arguments: an object, or null when `arguments` is empty, not
  /// valid JSON or not an object (the agent answers such a call with an error
  /// result). Arguments double-encoded as a JSON string holding an object (a
  /// quirk of some local servers) are unwrapped.
  nlohmann::json parsed;
  bool arguments_valid = false;  // parsed is a JSON object
};

enum class Role { system, user, assistant, tool };
const char* role_name(Role r);

struct Message {
  Role role = Role::user;
  std::string content;               // text (may be empty for an assistant turn with tool calls)
  std::vector<ToolCall> tool_calls;  // assistant turns only
  std::string tool_call_id;          // tool turns: the call answered
  std::string tool_name;             // tool turns: the function's name
  std::string reasoning_text;        // reasoning shown by the server ("reasoning_content" or "reasoning")
  /// Opaque reasoning items of the Responses API, sent back verbatim on the
  /// next request (null when none).
  nlohmann::json reasoning_items;
  /// Responses API, assistant turns: the reply's output items as received
  /// (reasoning, message, function_call; null elsewhere). When set they are
  /// sent back in their order (a reasoning item must precede the item that
  /// followed it) in place of items rebuilt from content, reasoning_items and
  /// tool_calls; edits to the message still apply: a function_call item takes
  /// its name and arguments from the tool_calls entry with its call_id and is
  /// left out when there is none (e.g. a truncated reply), and a changed
  /// `content` replaces the message items' text.
  nlohmann::json output_items;
};

/// A function the model may call. `parameters` is a JSON Schema object.
struct ToolDef {
  std::string name;
  std::string description;
  nlohmann::json parameters;
};

struct ChatRequest {
  std::vector<Message> messages;
  std::vector<ToolDef> tools;
  /// "auto", "required", "none", or a tool's name to force that tool. Empty:
  /// not sent (the server's default, "auto" when tools are given). Neither
  /// tools nor tool_choice are sent when `tools` is empty.
  std::string tool_choice;
  std::optional<int> max_output_tokens;
  std::optional<double> temperature;
};

/// Token counts of one call (0 when the server does not report them).
struct Usage {
  int64_t input_tokens = 0, output_tokens = 0, reasoning_tokens = 0, total_tokens = 0;
  Usage& operator+=(const Usage& o);
  nlohmann::json to_json() const;
};

struct ChatResponse {
  Message message;            // role assistant; tool_calls only when complete
  std::string finish_reason;  // "stop", "tool_calls", "length", "content_filter", ... as sent
  /// finish_reason "length" (or Responses status "incomplete"): the reply was
  /// cut. Tool calls of a truncated reply are dropped, never executed.
  bool truncated = false;
  std::optional<std::string> refusal;  // the model refused (text of the refusal)
  Usage usage;
  int attempts = 1;           // HTTP attempts made (retries + 1)
  nlohmann::json request;     // the request body as sent (no key in it)
  nlohmann::json response;    // the final response body as received
};

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// An API call that failed for good (after the retries that apply). what()
/// never contains the API key. Ids: kopt.agent.010 + the kind's position
/// (transport .010, auth .011, not_found .012, bad_request .013, quota .014,
/// rate_limited .015, server .016, context_length .017, protocol .018).
/// 408 still failing is `transport`, 409 still failing is `server`.
/// Configuration errors are UsageError: kopt.agent.001 (malformed .env line),
/// .002 (bad value), .003 (unreadable .env).
class LlmError : public Error {
 public:
  enum class Kind {
    transport,       // connection refused, DNS, TLS, timeout (after retries)
    auth,            // 401 / 403
    not_found,       // 404 (bad base URL or model)
    bad_request,     // other 4xx
    quota,           // 429 with code insufficient_quota (never retried)
    rate_limited,    // 429 still failing after the retries
    server,          // 5xx still failing after the retries
    context_length,  // the prompt is too long for the model (the caller trims and retries)
    protocol,        // a 2xx reply that is not the expected JSON
  };
  LlmError(Kind kind, int http_status, const std::string& message);
  Kind kind() const noexcept { return kind_; }
  int http_status() const noexcept { return status_; }

 private:
  Kind kind_;
  int status_;
};
const char* llm_error_kind_name(LlmError::Kind k);

// ---------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------

struct LlmConfig {
  std::string api_key;           // empty: no Authorization header
  /// The API root; "/chat/completions" or "/responses" is appended (a URL
  /// that already ends with the endpoint is used as is).
  std::string base_url = "https://api.openai.com/v1";
  std::string model = "gpt-5-mini";
  /// "" to send none. Sent ("reasoning_effort" in Chat Completions,
  /// {"reasoning":{"effort":..}} in Responses) to OpenAI's hosts always, and
  /// to other hosts only when reasoning_effort_explicit is set: local servers
  /// and non-reasoning models may reject the field.
  std::string reasoning_effort = "medium";
  /// Set by resolve_config() when the command line, the environment or .env
  /// gave the effort (OPENAI_REASONING_EFFORT="" there means: send none).
  bool reasoning_effort_explicit = false;
  std::string api = "auto";      // "auto" | "chat" | "responses"
  double timeout_s = 300;        // per HTTP attempt
  int max_retries = 6;
  /// Backoff before retry n (1-based): uniform in [0, min(max, initial * 2^(n-1))]
  /// ("full jitter"); a retry-after-ms / retry-after header (seconds or an
  /// HTTP date) replaces it, capped at backoff_max_s.
  double backoff_initial_s = 1, backoff_max_s = 60;

  /// Chat Completions or Responses, resolving "auto" from base_url's host.
  std::string resolved_api() const;
  /// True for api.openai.com (and *.openai.azure.com): send "developer" role
  /// and max_completion_tokens; other hosts get "system" and max_tokens.
  bool is_openai_host() const;
};

/// Command-line values (unset: not given).
struct LlmOverrides {
  std::optional<std::string> api_key, base_url, model, reasoning_effort, api;
  std::optional<double> timeout_s;
  std::optional<int> max_retries;
};

/// Resolves the configuration, in this order of precedence: `cli`, the
/// environment (OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL,
/// OPENAI_REASONING_EFFORT, KOPT_LLM_API), the `.env` file `dotenv` (if it
/// exists; a variable already in the environment is never overridden by it),
/// then the defaults above. `getenv` is injectable for tests. Throws
/// UsageError naming the file and line for a malformed .env line.
LlmConfig resolve_config(const LlmOverrides& cli, const std::string& dotenv = ".env",
                         const std::function<const char*(const char*)>& getenv = nullptr);

/// Parses a .env file's text: KEY=VALUE lines, optional `export `, single or
/// double quotes, # comments. Throws UsageError("kopt.agent.001") naming
/// `origin` and the line number.
std::map<std::string, std::string> parse_dotenv(const std::string& text, const std::string& origin);

/// `text` with every occurrence of `secret` (when at least 4 characters long)
/// replaced by "[REDACTED]".
std::string redact(const std::string& text, const std::string& secret);

/// What may be printed, logged or stored of `text`: the API key removed, every
/// URL in it shown without credentials (util/url.h: user-info stripped,
/// key=/token=/sig=... values masked), and the base URL's secret pieces
/// removed wherever they occur.
std::string redact(const std::string& text, const LlmConfig& config);

// ---------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------

/// Hooks for tests: a clock and a sleep that need not really sleep, a random
/// source for jitter, and a callback for each HTTP attempt (already redacted).
struct ClientHooks {
  std::function<void(std::chrono::milliseconds)> sleep;  // default: this_thread::sleep_for
  std::function<double()> uniform01;                     // default: a seeded mt19937_64
  /// Called after every attempt: attempt number (1-based), HTTP status (0 for
  /// a transport error), and a one-line note (e.g. "retrying in 1.2 s: 429").
  std::function<void(int, int, const std::string&)> on_attempt;
};

class LlmClient {
 public:
  virtual ~LlmClient() = default;
  /// One model turn. Retries (exponential backoff with full jitter, honouring
  /// retry-after-ms / retry-after) connection errors, timeouts, 408, 409, 429
  /// (not insufficient_quota) and 5xx; never retries other 4xx. Throws LlmError.
  virtual ChatResponse complete(const ChatRequest& request) = 0;
  virtual const LlmConfig& config() const = 0;
};

/// A client for config.resolved_api(). Throws UsageError for a bad config.
std::unique_ptr<LlmClient> make_client(const LlmConfig& config, ClientHooks hooks = {});

}  // namespace kopt::agent
