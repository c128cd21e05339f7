// The wire formats of llm.h's transcript: pure JSON <-> transcript codecs for
// Chat Completions and Responses, and the reading of API error bodies. No
// HTTP here (llm_client.cpp does that), so every dialect is unit-testable.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/llm.h"

namespace kopt::agent::wire {

/// Should `config.reasoning_effort` be sent? (OpenAI hosts, or explicitly set.)
bool send_reasoning_effort(const LlmConfig& config);

/// The full endpoint URL: base_url + "/chat/completions" or "/responses"
/// (unchanged when base_url already ends with the endpoint); a query string
/// of base_url (?api-version=...) is kept at the end.
std::string endpoint_url(const LlmConfig& config);

/// Chat Completions request body (POST /chat/completions).
nlohmann::json chat_request(const ChatRequest& request, const LlmConfig& config);

/// Reads a 2xx Chat Completions body into a response (message, finish_reason,
/// truncated, refusal, usage; not attempts/request/response). Tool-call ids
/// missing from the reply are synthesised unique against `transcript`.
/// Throws LlmError protocol (or context_length) for a body of the wrong shape.
ChatResponse parse_chat_reply(const nlohmann::json& body, const std::vector<Message>& transcript);

/// Responses request body (POST /responses).
nlohmann::json responses_request(const ChatRequest& request, const LlmConfig& config);

/// Reads a 2xx Responses body, as parse_chat_reply() does.
ChatResponse parse_responses_reply(const nlohmann::json& body,
                                   const std::vector<Message>& transcript);

/// A tool call from the wire: `arguments` may be a string (the standard), an
/// object (Ollama and others), null or missing.
ToolCall make_tool_call(std::string id, std::string name, const nlohmann::json& arguments);

/// The error details of an API error body, whatever its dialect: OpenAI's
/// {"error":{"message","type","code","param"}}, vLLM's top-level
/// {"object":"error","message","type","code"}, {"error":"text"}, FastAPI's
/// {"detail":..}, or plain text (kept as the message).
struct ApiError {
  std::string message, type, code, param;
};
ApiError parse_api_error(const std::string& body);

/// Does the error say the prompt is too long for the model's context?
bool is_context_length_error(const ApiError& e);

/// Does the error say the account has no quota left (429 never retried)?
bool is_quota_error(const ApiError& e);

}  // namespace kopt::agent::wire
