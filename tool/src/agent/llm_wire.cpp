// Chat Completions and Responses codecs for llm.h's transcript (see llm_wire.h).
//
// Local servers (vLLM, Ollama, llama.cpp's server, LM Studio, SGLang) differ
// from OpenAI in small ways, all handled here: tool-call arguments as an object
// instead of a string, missing or repeated tool-call ids, reasoning text in
// "reasoning_content" or "reasoning", finish_reason "stop" next to tool calls,
// no "developer" role and no max_completion_tokens.
#include "agent/llm_wire.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace kopt::agent::wire {

using nlohmann::json;

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// j[key] as a string when it is one, else "".
std::string str(const json& j, const char* key) {
  if (!j.is_object()) return {};
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

/// An id or code that may come as a string or a number.
std::string scalar_text(const json& j, const char* key) {
  if (!j.is_object()) return {};
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number()) return it->dump();
  return {};
}

int64_t count(const json& j, const char* key) {
  if (!j.is_object()) return 0;
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<int64_t>() : 0;
}

[[noreturn]] void protocol_error(const std::string& what) {
  throw LlmError(LlmError::Kind::protocol, 200, "unexpected reply from the LLM server: " + what);
}

/// Ids of the transcript, and fresh "call_<n>" ids that avoid them.
class IdAllocator {
 public:
  explicit IdAllocator(const std::vector<Message>& transcript) {
    for (const Message& m : transcript) {
      for (const ToolCall& c : m.tool_calls) used_.insert(c.id);
      if (!m.tool_call_id.empty()) used_.insert(m.tool_call_id);
    }
  }
  /// `id` when it is new to the transcript and this reply, else a fresh one.
  std::string take(const std::string& id) {
    if (!id.empty() && used_.insert(id).second) return id;
    for (;;) {
      std::string fresh = "call_" + std::to_string(next_++);
      if (used_.insert(fresh).second) return fresh;
    }
  }

 private:
  std::set<std::string> used_;
  int next_ = 1;
};

std::string system_role(const LlmConfig& config) {
  return config.is_openai_host() ? "developer" : "system";
}

/// Text of a content that is a string, null, or an array of text parts.
std::string content_text(const json& content, std::string* refusal = nullptr) {
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  if (content.is_array()) {
    for (const json& part : content) {
      if (part.is_string()) {
        text += part.get<std::string>();
        continue;
      }
      const std::string type = str(part, "type");
      if (type == "refusal") {
        if (refusal) *refusal += str(part, "refusal");
      } else if (type.empty() || type == "text" || type == "output_text") {
        text += str(part, "text");
      }
    }
  }
  return text;
}

/// Arguments to send back: local servers may re-parse them (vLLM does for some
/// chat templates) and reject the whole request when they are not JSON, so
/// non-JSON arguments go to them as "{}"; OpenAI gets them verbatim.
std::string outgoing_arguments(const ToolCall& c, const LlmConfig& config) {
  if (config.is_openai_host() || c.arguments_valid) return c.arguments;
  if (!c.arguments.empty() && json::accept(c.arguments)) return c.arguments;
  return "{}";
}

/// Reasoning text of a message: "reasoning_content" (vLLM, llama.cpp,
/// DeepSeek, SGLang) or "reasoning" (Ollama, newer vLLM, OpenRouter).
std::string reasoning_of(const json& message) {
  std::string r = str(message, "reasoning_content");
  if (r.empty()) r = str(message, "reasoning");
  return r;
}

}  // namespace

bool send_reasoning_effort(const LlmConfig& config) {
  return !config.reasoning_effort.empty() &&
         (config.is_openai_host() || config.reasoning_effort_explicit);
}

std::string endpoint_url(const LlmConfig& config) {
  std::string base = config.base_url;
  // A query (Azure's ?api-version=...) stays at the end.
  std::string query;
  if (const size_t q = base.find_first_of("?#"); q != std::string::npos) {
    query = base.substr(q);
    base.erase(q);
  }
  const std::string endpoint = config.resolved_api() == "responses" ? "/responses" : "/chat/completions";
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (ends_with(base, endpoint)) return base + query;
  return base + endpoint + query;
}

ToolCall make_tool_call(std::string id, std::string name, const json& arguments) {
  ToolCall c;
  c.id = std::move(id);
  c.name = std::move(name);
  if (arguments.is_string()) c.arguments = arguments.get<std::string>();
  else if (!arguments.is_null()) c.arguments = arguments.dump();
  c.parsed = json::parse(c.arguments, nullptr, /*allow_exceptions=*/false);
  if (c.parsed.is_discarded()) c.parsed = nullptr;
  // Double-encoded: a JSON string whose text is an object.
  if (c.parsed.is_string()) {
    json inner = json::parse(c.parsed.get<std::string>(), nullptr, false);
    c.parsed = inner.is_object() ? std::move(inner) : json(nullptr);
  }
  if (!c.parsed.is_object()) c.parsed = nullptr;
  c.arguments_valid = c.parsed.is_object();
  return c;
}

// ---------------------------------------------------------------------------
// Chat Completions
// ---------------------------------------------------------------------------

json chat_request(const ChatRequest& request, const LlmConfig& config) {
  const bool openai = config.is_openai_host();
  json messages = json::array();
  for (const Message& m : request.messages) {
    switch (m.role) {
      case Role::system:
        messages.push_back({{"role", system_role(config)}, {"content", m.content}});
        break;
      case Role::user:
        messages.push_back({{"role", "user"}, {"content", m.content}});
        break;
      case Role::assistant: {
        json msg{{"role", "assistant"}};
        if (!m.tool_calls.empty()) {
          // OpenAI wants null content next to tool calls; some local chat
          // templates choke on null, so they get "".
          msg["content"] = m.content.empty() && openai ? json(nullptr) : json(m.content);
          json calls = json::array();
          for (const ToolCall& c : m.tool_calls)
            calls.push_back({{"id", c.id},
                             {"type", "function"},
                             {"function", {{"name", c.name}, {"arguments", outgoing_arguments(c, config)}}}});
          msg["tool_calls"] = std::move(calls);
        } else {
          msg["content"] = m.content;
        }
        messages.push_back(std::move(msg));
        break;
      }
      case Role::tool: {
        json msg{{"role", "tool"}, {"tool_call_id", m.tool_call_id}, {"content", m.content}};
        // Ollama and some templates match results by name; OpenAI wants only the id.
        if (!openai && !m.tool_name.empty()) msg["name"] = m.tool_name;
        messages.push_back(std::move(msg));
        break;
      }
    }
  }

  json body{{"model", config.model}, {"messages", std::move(messages)}};
  if (!request.tools.empty()) {
    json tools = json::array();
    for (const ToolDef& t : request.tools) {
      json fn{{"name", t.name}, {"description", t.description}};
      fn["parameters"] = t.parameters.is_null() ? json{{"type", "object"}, {"properties", json::object()}}
                                                : t.parameters;
      tools.push_back({{"type", "function"}, {"function", std::move(fn)}});
    }
    body["tools"] = std::move(tools);
    const std::string& tc = request.tool_choice;
    if (tc == "auto" || tc == "required" || tc == "none") body["tool_choice"] = tc;
    else if (!tc.empty()) body["tool_choice"] = {{"type", "function"}, {"function", {{"name", tc}}}};
  }
  if (request.max_output_tokens)
    body[openai ? "max_completion_tokens" : "max_tokens"] = *request.max_output_tokens;
  if (request.temperature) body["temperature"] = *request.temperature;
  if (send_reasoning_effort(config)) body["reasoning_effort"] = config.reasoning_effort;
  return body;
}

ChatResponse parse_chat_reply(const json& body, const std::vector<Message>& transcript) {
  if (!body.is_object()) protocol_error("the body is not a JSON object");
  const auto choices = body.find("choices");
  if (choices == body.end() || !choices->is_array() || choices->empty()) {
    if (body.contains("error")) {
      const ApiError e = parse_api_error(body.dump());
      if (is_context_length_error(e))
        throw LlmError(LlmError::Kind::context_length, 200, "the prompt is too long: " + e.message);
      protocol_error("an error in a 2xx reply: " + e.message);
    }
    protocol_error("no choices in the reply");
  }
  const json& choice = choices->front();
  const auto msg_it = choice.find("message");
  if (!choice.is_object() || msg_it == choice.end() || !msg_it->is_object())
    protocol_error("no message in the first choice");
  const json& msg = *msg_it;

  ChatResponse r;
  r.message.role = Role::assistant;
  std::string refusal = str(msg, "refusal");
  r.message.content = content_text(msg.value("content", json()), &refusal);
  if (!refusal.empty()) r.refusal = refusal;
  r.message.reasoning_text = reasoning_of(msg);
  r.finish_reason = str(choice, "finish_reason");
  r.truncated = r.finish_reason == "length";

  // Tool calls are decided by their presence: several local servers say
  // finish_reason "stop" next to them.
  IdAllocator ids(transcript);
  std::vector<ToolCall> calls;
  if (const auto tc = msg.find("tool_calls"); tc != msg.end() && tc->is_array()) {
    for (const json& call : *tc) {
      if (!call.is_object()) continue;
      const json fn = call.value("function", json::object());
      const std::string name = str(fn, "name");
      if (name.empty()) continue;
      calls.push_back(make_tool_call(ids.take(scalar_text(call, "id")), name,
                                     fn.is_object() ? fn.value("arguments", json()) : json()));
    }
  } else if (const auto fc = msg.find("function_call"); fc != msg.end() && fc->is_object()) {
    // The legacy single function call.
    if (const std::string name = str(*fc, "name"); !name.empty())
      calls.push_back(make_tool_call(ids.take(""), name, fc->value("arguments", json())));
  }
  if (!r.truncated) r.message.tool_calls = std::move(calls);  // a cut call is never executed

  if (const auto u = body.find("usage"); u != body.end() && u->is_object()) {
    r.usage.input_tokens = count(*u, "prompt_tokens");
    r.usage.output_tokens = count(*u, "completion_tokens");
    r.usage.total_tokens = count(*u, "total_tokens");
    if (r.usage.total_tokens == 0) r.usage.total_tokens = r.usage.input_tokens + r.usage.output_tokens;
    if (const auto d = u->find("completion_tokens_details"); d != u->end())
      r.usage.reasoning_tokens = count(*d, "reasoning_tokens");
  }
  return r;
}

// ---------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------

namespace {

json function_call_item(const ToolCall& c, const LlmConfig& config) {
  return {{"type", "function_call"},
          {"call_id", c.id},
          {"name", c.name},
          {"arguments", outgoing_arguments(c, config)}};
}

/// The input items of an assistant turn.
void append_assistant_items(const Message& m, const LlmConfig& config, json& input) {
  if (m.output_items.is_array()) {
    // The reply's items in their order (a reasoning item must stay before the
    // item that followed it), with what the agent may have changed since
    // (trimmed arguments or text, dropped calls) taken from the message.
    std::map<std::string, const ToolCall*> live;
    for (const ToolCall& c : m.tool_calls) live.emplace(c.id, &c);
    std::string original_text;
    for (const json& item : m.output_items)
      if (str(item, "type") == "message") original_text += content_text(item.value("content", json()));
    const bool text_changed = original_text != m.content;
    bool text_sent = false;
    std::set<std::string> sent;
    for (json item : m.output_items) {
      const std::string type = str(item, "type");
      if (type == "function_call") {
        const std::string id = str(item, "call_id");
        const auto it = live.find(id);
        if (it == live.end() || !sent.insert(id).second) continue;
        item["name"] = it->second->name;
        item["arguments"] = outgoing_arguments(*it->second, config);
      } else if (type == "message") {
        if (text_changed) {
          if (text_sent || m.content.empty()) continue;
          item["content"] = json::array({{{"type", "output_text"}, {"text", m.content}, {"annotations", json::array()}}});
          text_sent = true;
        }
      } else if (type != "reasoning") {
        continue;
      }
      input.push_back(std::move(item));
    }
    if (text_changed && !text_sent && !m.content.empty())
      input.push_back({{"role", "assistant"}, {"content", m.content}});
    // Calls the agent added by hand (none in practice) still go out.
    for (const ToolCall& c : m.tool_calls)
      if (!sent.count(c.id)) input.push_back(function_call_item(c, config));
    return;
  }

  if (m.reasoning_items.is_array())
    for (const json& item : m.reasoning_items) input.push_back(item);
  if (!m.content.empty()) input.push_back({{"role", "assistant"}, {"content", m.content}});
  for (const ToolCall& c : m.tool_calls) input.push_back(function_call_item(c, config));
}

}  // namespace

json responses_request(const ChatRequest& request, const LlmConfig& config) {
  json input = json::array();
  for (const Message& m : request.messages) {
    switch (m.role) {
      case Role::system:
        input.push_back({{"role", system_role(config)}, {"content", m.content}});
        break;
      case Role::user:
        input.push_back({{"role", "user"}, {"content", m.content}});
        break;
      case Role::assistant:
        append_assistant_items(m, config, input);
        break;
      case Role::tool:
        input.push_back({{"type", "function_call_output"}, {"call_id", m.tool_call_id}, {"output", m.content}});
        break;
    }
  }

  json body{{"model", config.model}, {"input", std::move(input)}};
  if (!request.tools.empty()) {
    json tools = json::array();
    for (const ToolDef& t : request.tools) {
      // strict defaults to true in Responses, which rejects ordinary schemas.
      tools.push_back({{"type", "function"},
                       {"name", t.name},
                       {"description", t.description},
                       {"parameters", t.parameters.is_null()
                                          ? json{{"type", "object"}, {"properties", json::object()}}
                                          : t.parameters},
                       {"strict", false}});
    }
    body["tools"] = std::move(tools);
    const std::string& tc = request.tool_choice;
    if (tc == "auto" || tc == "required" || tc == "none") body["tool_choice"] = tc;
    else if (!tc.empty()) body["tool_choice"] = {{"type", "function"}, {"name", tc}};
  }
  if (request.max_output_tokens) body["max_output_tokens"] = *request.max_output_tokens;
  if (request.temperature) body["temperature"] = *request.temperature;
  if (send_reasoning_effort(config)) body["reasoning"] = {{"effort", config.reasoning_effort}};
  return body;
}

ChatResponse parse_responses_reply(const json& body, const std::vector<Message>& transcript) {
  if (!body.is_object()) protocol_error("the body is not a JSON object");
  const std::string status = str(body, "status");
  if (status == "failed" || (body.contains("error") && body["error"].is_object() && !body.contains("output"))) {
    const ApiError e = parse_api_error(json{{"error", body.value("error", json())}}.dump());
    if (is_context_length_error(e))
      throw LlmError(LlmError::Kind::context_length, 200, "the prompt is too long: " + e.message);
    throw LlmError(LlmError::Kind::server, 200,
                   "the response failed: " + (e.message.empty() ? std::string("no reason given") : e.message));
  }
  const auto output = body.find("output");
  if (output == body.end() || !output->is_array()) protocol_error("no output array in the reply");

  ChatResponse r;
  r.message.role = Role::assistant;
  IdAllocator ids(transcript);
  std::string refusal;
  json items = json::array(), reasoning = json::array();
  std::vector<ToolCall> calls;
  for (json item : *output) {
    const std::string type = str(item, "type");
    if (type == "message") {
      r.message.content += content_text(item.value("content", json()), &refusal);
    } else if (type == "reasoning") {
      std::string text;
      for (const char* key : {"summary", "content"}) {
        const auto parts = item.find(key);
        if (parts == item.end() || !parts->is_array()) continue;
        for (const json& p : *parts) {
          const std::string t = str(p, "text");
          if (t.empty()) continue;
          if (!text.empty()) text += "\n";
          text += t;
        }
      }
      if (!text.empty()) {
        if (!r.message.reasoning_text.empty()) r.message.reasoning_text += "\n";
        r.message.reasoning_text += text;
      }
      reasoning.push_back(item);
    } else if (type == "function_call") {
      std::string id = scalar_text(item, "call_id");
      if (id.empty()) id = scalar_text(item, "id");
      const std::string name = str(item, "name");
      if (name.empty()) continue;
      const std::string taken = ids.take(id);
      item["call_id"] = taken;
      calls.push_back(make_tool_call(taken, name, item.value("arguments", json())));
    } else {
      continue;
    }
    items.push_back(std::move(item));
  }
  if (!refusal.empty()) r.refusal = refusal;
  r.message.output_items = std::move(items);
  if (!reasoning.empty()) r.message.reasoning_items = std::move(reasoning);

  if (status == "incomplete") {
    r.truncated = true;
    std::string reason;
    if (const auto d = body.find("incomplete_details"); d != body.end()) reason = str(*d, "reason");
    r.finish_reason = reason.empty() || reason == "max_output_tokens" ? "length" : reason;
  } else {
    r.finish_reason = calls.empty() ? "stop" : "tool_calls";
  }
  if (!r.truncated) r.message.tool_calls = std::move(calls);

  if (const auto u = body.find("usage"); u != body.end() && u->is_object()) {
    r.usage.input_tokens = count(*u, "input_tokens");
    r.usage.output_tokens = count(*u, "output_tokens");
    r.usage.total_tokens = count(*u, "total_tokens");
    if (r.usage.total_tokens == 0) r.usage.total_tokens = r.usage.input_tokens + r.usage.output_tokens;
    if (const auto d = u->find("output_tokens_details"); d != u->end())
      r.usage.reasoning_tokens = count(*d, "reasoning_tokens");
  }
  return r;
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

ApiError parse_api_error(const std::string& body) {
  ApiError e;
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    e.message = body;
  } else {
    const json* err = &j;
    if (const auto it = j.find("error"); it != j.end()) {
      if (it->is_object()) err = &*it;
      else if (it->is_string()) e.message = it->get<std::string>();
    }
    if (e.message.empty()) e.message = str(*err, "message");
    e.type = str(*err, "type");
    e.code = scalar_text(*err, "code");
    e.param = str(*err, "param");
    if (e.message.empty()) {
      if (const auto d = j.find("detail"); d != j.end()) e.message = d->is_string() ? d->get<std::string>() : d->dump();
    }
    if (e.message.empty()) e.message = j.dump();
  }
  constexpr std::size_t max_len = 600;
  if (e.message.size() > max_len) e.message = e.message.substr(0, max_len) + "...";
  return e;
}

bool is_context_length_error(const ApiError& e) {
  if (e.code == "context_length_exceeded" || e.type == "exceed_context_size_error" ||
      e.code == "string_above_max_length")
    return true;
  const std::string m = lower(e.message);
  for (const char* needle : {"context length", "context_length", "maximum context", "context window",
                             "too many tokens", "exceeds the available context", "prompt is too long",
                             "input is too long", "maximum input length"})
    if (m.find(needle) != std::string::npos) return true;
  return false;
}

bool is_quota_error(const ApiError& e) {
  return e.code == "insufficient_quota" || e.type == "insufficient_quota";
}

}  // namespace kopt::agent::wire
