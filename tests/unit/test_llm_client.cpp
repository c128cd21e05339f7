// The LLM client (agent/llm.h): the wire codecs of Chat Completions and
// Responses with the local servers' dialects (LlmWire*), configuration and
// .env (LlmConfig*), and the HTTP client against an in-process fake server
// (LlmClient*): retries, backoff, error kinds, and the API key kept out of
// everything. No network and no real sleeping.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "agent/llm.h"
#include "agent/llm_wire.h"
#include "support/fake_llm_server.h"
#include "temp_dir.h"
#include "util/error.h"
#include "util/fs.h"

namespace stdfs = std::filesystem;
using kopt::agent::ChatRequest;
using kopt::agent::ChatResponse;
using kopt::agent::ClientHooks;
using kopt::agent::LlmConfig;
using kopt::agent::LlmError;
using kopt::agent::LlmOverrides;
using kopt::agent::Message;
using kopt::agent::Role;
using kopt::agent::ToolCall;
using kopt::agent::ToolDef;
using nlohmann::json;
namespace wire = kopt::agent::wire;
using FakeServer = kopt::test::FakeLlmServer;
using Reply = kopt::test::FakeLlmServer::Reply;

namespace {

const std::string kSentinel = "sk-SENTINEL-7f3a9c21d4e8b6";

std::string fixture(const std::string& name) {
  return kopt::fs::read_file(std::string(KOPT_TEST_DATA_DIR) + "/llm/" + name);
}

/// Records what the client's hooks saw; never sleeps.
struct HookLog {
  std::vector<std::chrono::milliseconds> sleeps;
  std::vector<std::string> notes;
  std::vector<int> statuses;
  double uniform = 0.5;

  ClientHooks hooks() {
    ClientHooks h;
    h.sleep = [this](std::chrono::milliseconds d) { sleeps.push_back(d); };
    h.uniform01 = [this] { return uniform; };
    h.on_attempt = [this](int, int status, const std::string& note) {
      statuses.push_back(status);
      notes.push_back(note);
    };
    return h;
  }
};

LlmConfig local_config(const FakeServer& server) {
  LlmConfig c;
  c.base_url = server.base_url();
  c.model = "test-model";
  c.api = "chat";
  c.timeout_s = 10;
  c.max_retries = 2;
  c.backoff_initial_s = 1;
  c.backoff_max_s = 8;
  return c;
}

ToolDef tool(const std::string& name) {
  return ToolDef{name, "does " + name,
                 json{{"type", "object"},
                      {"properties", {{"params", {{"type", "object"}}}}},
                      {"additionalProperties", false}}};
}

Message text_message(Role role, const std::string& content) {
  Message m;
  m.role = role;
  m.content = content;
  return m;
}

ChatRequest simple_request() {
  ChatRequest r;
  r.messages.push_back(text_message(Role::system, "You tune CUDA kernels."));
  r.messages.push_back(text_message(Role::user, "Make the SGEMM faster."));
  r.tools = {tool("evaluate_kernel"), tool("read_file")};
  return r;
}

Message tool_result(const std::string& id, const std::string& name, const std::string& content) {
  Message m;
  m.role = Role::tool;
  m.tool_call_id = id;
  m.tool_name = name;
  m.content = content;
  return m;
}

/// Runs `fn`, expecting an LlmError; returns it.
template <class Fn>
LlmError expect_llm_error(Fn&& fn) {
  try {
    fn();
  } catch (const LlmError& e) {
    return e;
  }
  ADD_FAILURE() << "no LlmError thrown";
  return LlmError(LlmError::Kind::protocol, 0, "none thrown");
}

/// A port with nothing listening on it: bound (so nobody else takes it) but
/// never listen()ed, so a connection is refused.
class DeadPort {
 public:
  DeadPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      throw std::runtime_error("bind failed");
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~DeadPort() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace

// ===========================================================================
// LlmWire: codecs without HTTP
// ===========================================================================

TEST(LlmWire, ChatRequestForLocalHostUsesSystemAndMaxTokens) {
  LlmConfig c;
  c.base_url = "http://localhost:11434/v1";
  c.model = "qwen3:8b";
  ChatRequest r = simple_request();
  r.max_output_tokens = 2048;
  r.temperature = 0.2;
  Message a;
  a.role = Role::assistant;
  a.tool_calls = {wire::make_tool_call("call_1", "evaluate_kernel", json("{\"params\":{}}")),
                  wire::make_tool_call("call_2", "read_file", json("{not json"))};
  r.messages.push_back(a);
  r.messages.push_back(tool_result("call_1", "evaluate_kernel", "ok"));

  const json b = wire::chat_request(r, c);
  EXPECT_EQ(b["model"], "qwen3:8b");
  EXPECT_EQ(b["messages"][0]["role"], "system");
  EXPECT_EQ(b["max_tokens"], 2048);
  EXPECT_FALSE(b.contains("max_completion_tokens"));
  EXPECT_FALSE(b.contains("reasoning_effort")) << "the default effort is not sent to a local host";
  EXPECT_DOUBLE_EQ(b["temperature"].get<double>(), 0.2);
  EXPECT_FALSE(b.contains("tool_choice")) << "empty tool_choice: the server's default";
  ASSERT_EQ(b["tools"].size(), 2u);
  EXPECT_EQ(b["tools"][0]["type"], "function");
  EXPECT_EQ(b["tools"][0]["function"]["name"], "evaluate_kernel");
  EXPECT_EQ(b["tools"][0]["function"]["parameters"]["type"], "object");
  const json& asst = b["messages"][2];
  EXPECT_EQ(asst["content"], "") << "local templates choke on null content";
  EXPECT_EQ(asst["tool_calls"][0]["function"]["arguments"], "{\"params\":{}}");
  EXPECT_EQ(asst["tool_calls"][1]["function"]["arguments"], "{}") << "non-JSON arguments are not sent to a local server";
  EXPECT_EQ(b["messages"][3]["role"], "tool");
  EXPECT_EQ(b["messages"][3]["tool_call_id"], "call_1");
  EXPECT_EQ(b["messages"][3]["name"], "evaluate_kernel");
}

TEST(LlmWire, ChatRequestForOpenAIHostUsesDeveloperAndMaxCompletionTokens) {
  LlmConfig c;  // api.openai.com
  c.api = "chat";
  ChatRequest r = simple_request();
  r.max_output_tokens = 4000;
  Message a;
  a.role = Role::assistant;
  a.tool_calls = {wire::make_tool_call("call_1", "evaluate_kernel", json("{oops"))};
  r.messages.push_back(a);
  r.messages.push_back(tool_result("call_1", "evaluate_kernel", "bad arguments"));

  const json b = wire::chat_request(r, c);
  EXPECT_EQ(b["messages"][0]["role"], "developer");
  EXPECT_EQ(b["max_completion_tokens"], 4000);
  EXPECT_FALSE(b.contains("max_tokens"));
  EXPECT_EQ(b["reasoning_effort"], "medium");
  EXPECT_TRUE(b["messages"][2]["content"].is_null());
  EXPECT_EQ(b["messages"][2]["tool_calls"][0]["function"]["arguments"], "{oops") << "verbatim to OpenAI";
  EXPECT_FALSE(b["messages"][3].contains("name"));
}

TEST(LlmWire, ReasoningEffortOnlyToOpenAIUnlessExplicit) {
  LlmConfig c;
  c.base_url = "http://gpu-box:8000/v1";
  c.reasoning_effort = "high";
  EXPECT_FALSE(wire::send_reasoning_effort(c));
  c.reasoning_effort_explicit = true;
  EXPECT_TRUE(wire::send_reasoning_effort(c));
  EXPECT_EQ(wire::chat_request(simple_request(), c)["reasoning_effort"], "high");
  c.api = "responses";
  EXPECT_EQ(wire::responses_request(simple_request(), c)["reasoning"]["effort"], "high");
  c.reasoning_effort = "";
  EXPECT_FALSE(wire::send_reasoning_effort(c));

  LlmConfig openai;
  openai.reasoning_effort = "low";
  EXPECT_EQ(wire::responses_request(simple_request(), openai)["reasoning"], json({{"effort", "low"}}));
}

TEST(LlmWire, ToolChoiceForms) {
  LlmConfig chat;
  chat.base_url = "http://localhost:8080/v1";
  LlmConfig resp = chat;
  resp.api = "responses";
  ChatRequest r = simple_request();
  for (const char* s : {"auto", "required", "none"}) {
    r.tool_choice = s;
    EXPECT_EQ(wire::chat_request(r, chat)["tool_choice"], s);
    EXPECT_EQ(wire::responses_request(r, resp)["tool_choice"], s);
  }
  r.tool_choice = "read_file";
  EXPECT_EQ(wire::chat_request(r, chat)["tool_choice"],
            json({{"type", "function"}, {"function", {{"name", "read_file"}}}}));
  EXPECT_EQ(wire::responses_request(r, resp)["tool_choice"], json({{"type", "function"}, {"name", "read_file"}}));
  const json rt = wire::responses_request(r, resp)["tools"][1];
  EXPECT_EQ(rt["type"], "function");
  EXPECT_EQ(rt["name"], "read_file");
  EXPECT_EQ(rt["strict"], false);

  r.tools.clear();
  EXPECT_FALSE(wire::chat_request(r, chat).contains("tool_choice"));
  EXPECT_FALSE(wire::chat_request(r, chat).contains("tools"));
  EXPECT_FALSE(wire::responses_request(r, resp).contains("tool_choice"));
}

TEST(LlmWire, ArgumentShapes) {
  const ToolCall s = wire::make_tool_call("a", "f", json("{\"x\":1}"));
  EXPECT_TRUE(s.arguments_valid);
  EXPECT_EQ(s.parsed["x"], 1);

  const ToolCall o = wire::make_tool_call("b", "f", json{{"x", 2}});
  EXPECT_TRUE(o.arguments_valid);
  EXPECT_EQ(o.arguments, "{\"x\":2}");
  EXPECT_EQ(o.parsed["x"], 2);

  for (const json& bad : {json(""), json(nullptr), json("{\"x\": "), json("[1,2]"), json("42")}) {
    const ToolCall c = wire::make_tool_call("c", "f", bad);
    EXPECT_FALSE(c.arguments_valid) << bad.dump();
    EXPECT_TRUE(c.parsed.is_null()) << bad.dump();
  }
  EXPECT_EQ(wire::make_tool_call("c", "f", json("{\"x\": ")).arguments, "{\"x\": ") << "kept for the error result";

  const ToolCall twice = wire::make_tool_call("d", "f", json("\"{\\\"x\\\":3}\""));
  EXPECT_TRUE(twice.arguments_valid) << "double-encoded arguments are unwrapped";
  EXPECT_EQ(twice.parsed["x"], 3);
}

TEST(LlmWire, SynthesisedIdsAreUniqueInTheTranscript) {
  std::vector<Message> transcript(2);
  transcript[0].role = Role::assistant;
  transcript[0].tool_calls = {wire::make_tool_call("call_1", "f", json("{}"))};
  transcript[1] = tool_result("call_1", "f", "done");
  const json body = json::parse(fixture("llamacpp_tools.json"));
  const ChatResponse r = wire::parse_chat_reply(body, transcript);
  ASSERT_EQ(r.message.tool_calls.size(), 2u);
  EXPECT_EQ(r.message.tool_calls[0].id, "call_2");
  EXPECT_EQ(r.message.tool_calls[1].id, "call_3");

  // A server repeating an id within one reply gets the repeat renamed.
  json dup = json::parse(fixture("chat_parallel_tools.json"));
  dup["choices"][0]["message"]["tool_calls"][1]["id"] = "call_Ab12";
  const ChatResponse d = wire::parse_chat_reply(dup, {});
  EXPECT_EQ(d.message.tool_calls[0].id, "call_Ab12");
  EXPECT_EQ(d.message.tool_calls[1].id, "call_1");
}

TEST(LlmWire, ChatContentAsParts) {
  json body = json::parse(fixture("chat_text.json"));
  body["choices"][0]["message"]["content"] =
      json::array({{{"type", "text"}, {"text", "Hello, "}}, {{"type", "text"}, {"text", "world"}}});
  EXPECT_EQ(wire::parse_chat_reply(body, {}).message.content, "Hello, world");
}

TEST(LlmWire, MalformedRepliesAreProtocolErrors) {
  for (const char* text : {R"([1,2])", R"({"choices":[]})", R"({"choices":[{"finish_reason":"stop"}]})"}) {
    const LlmError e = expect_llm_error([&] { wire::parse_chat_reply(json::parse(text), {}); });
    EXPECT_EQ(e.kind(), LlmError::Kind::protocol) << text;
  }
  const LlmError e = expect_llm_error([] { wire::parse_responses_reply(json{{"status", "completed"}}, {}); });
  EXPECT_EQ(e.kind(), LlmError::Kind::protocol);
}

TEST(LlmWire, ApiErrorDialects) {
  const auto openai = wire::parse_api_error(fixture("error_context_length.json"));
  EXPECT_EQ(openai.code, "context_length_exceeded");
  EXPECT_EQ(openai.type, "invalid_request_error");
  EXPECT_EQ(openai.param, "messages");
  EXPECT_TRUE(wire::is_context_length_error(openai));

  // vLLM: a top-level error object, numeric code.
  const auto vllm = wire::parse_api_error(
      R"({"object":"error","message":"This model's maximum context length is 32768 tokens. However, you requested 40000 tokens.","type":"BadRequestError","param":null,"code":400})");
  EXPECT_EQ(vllm.code, "400");
  EXPECT_TRUE(wire::is_context_length_error(vllm));

  // llama.cpp's server.
  const auto llama = wire::parse_api_error(
      R"({"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}})");
  EXPECT_TRUE(wire::is_context_length_error(llama));

  const auto text = wire::parse_api_error("Bad Gateway");
  EXPECT_EQ(text.message, "Bad Gateway");
  EXPECT_FALSE(wire::is_context_length_error(text));
  EXPECT_EQ(wire::parse_api_error(R"({"error":"model 'x' not found"})").message, "model 'x' not found");
  EXPECT_EQ(wire::parse_api_error(R"({"detail":"Not Found"})").message, "Not Found");

  EXPECT_TRUE(wire::is_quota_error(wire::parse_api_error(fixture("error_insufficient_quota.json"))));
  EXPECT_FALSE(wire::is_quota_error(wire::parse_api_error(fixture("error_rate_limit.json"))));
}

TEST(LlmWire, ApiSelectionAndEndpoint) {
  LlmConfig c;
  EXPECT_EQ(c.resolved_api(), "responses");
  EXPECT_TRUE(c.is_openai_host());
  EXPECT_EQ(wire::endpoint_url(c), "https://api.openai.com/v1/responses");
  c.api = "chat";
  EXPECT_EQ(wire::endpoint_url(c), "https://api.openai.com/v1/chat/completions");
  c.api = "auto";
  c.base_url = "http://127.0.0.1:8000/v1/";
  EXPECT_EQ(c.resolved_api(), "chat");
  EXPECT_FALSE(c.is_openai_host());
  EXPECT_EQ(wire::endpoint_url(c), "http://127.0.0.1:8000/v1/chat/completions");
  c.base_url = "http://127.0.0.1:8000/v1/chat/completions";
  EXPECT_EQ(wire::endpoint_url(c), "http://127.0.0.1:8000/v1/chat/completions");
  c.base_url = "http://127.0.0.1:8000/openai/v1/?api-version=2024-10-21";  // the query stays at the end
  EXPECT_EQ(wire::endpoint_url(c), "http://127.0.0.1:8000/openai/v1/chat/completions?api-version=2024-10-21");
  c.base_url = "https://my-res.openai.azure.com/openai/v1";
  EXPECT_TRUE(c.is_openai_host());
  EXPECT_EQ(c.resolved_api(), "chat");
  c.base_url = "https://API.OpenAI.com:443/v1";
  EXPECT_EQ(c.resolved_api(), "responses");
  c.base_url = "https://api.openai.com.evil.example/v1";
  EXPECT_FALSE(c.is_openai_host());
}

TEST(LlmWire, UsageAddsUp) {
  kopt::agent::Usage a, b;
  a.input_tokens = 10;
  a.output_tokens = 5;
  b.input_tokens = 1;
  b.reasoning_tokens = 3;
  b.total_tokens = 4;
  a += b;
  EXPECT_EQ(a.to_json(), json({{"input_tokens", 11}, {"output_tokens", 5}, {"reasoning_tokens", 3}, {"total_tokens", 4}}));
  EXPECT_STREQ(kopt::agent::role_name(Role::tool), "tool");
  EXPECT_STREQ(kopt::agent::llm_error_kind_name(LlmError::Kind::context_length), "context_length");
  EXPECT_EQ(LlmError(LlmError::Kind::transport, 0, "x").id(), "kopt.agent.010");
  EXPECT_EQ(LlmError(LlmError::Kind::protocol, 0, "x").id(), "kopt.agent.018");
}

// ===========================================================================
// LlmConfig: precedence, .env, redact()
// ===========================================================================

namespace {

/// A .env file holding `text`, in a folder of its own removed at the end.
class TempDotenv {
 public:
  explicit TempDotenv(const std::string& text) { std::ofstream(path()) << text; }
  std::string path() const { return (dir_ / ".env").string(); }

 private:
  kopt::test::TempDir dir_{"kopt-dotenv"};
};

using Env = std::map<std::string, std::string>;
std::function<const char*(const char*)> fake_env(const Env& env) {
  return [&env](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
}

}  // namespace

TEST(LlmConfig, DefaultsWithNothingSet) {
  const Env env;
  const LlmConfig c = kopt::agent::resolve_config({}, "/nonexistent/kopt/.env", fake_env(env));
  EXPECT_EQ(c.api_key, "");
  EXPECT_EQ(c.base_url, "https://api.openai.com/v1");
  EXPECT_EQ(c.model, "gpt-5-mini");
  EXPECT_EQ(c.reasoning_effort, "medium");
  EXPECT_FALSE(c.reasoning_effort_explicit);
  EXPECT_EQ(c.api, "auto");
}

TEST(LlmConfig, PrecedenceCliEnvDotenvDefaults) {
  TempDotenv file(
      "# kopt settings\n"
      "export OPENAI_API_KEY=\"sk-from-file\"\n"
      "OPENAI_BASE_URL='http://file-host:8000/v1'\n"
      "OPENAI_MODEL=file-model   # trailing comment\n"
      "OPENAI_REASONING_EFFORT=low\n"
      "KOPT_LLM_API=responses\n");
  Env env{{"OPENAI_MODEL", "env-model"}, {"OPENAI_API_KEY", "sk-from-env"}};

  // .env fills what the environment leaves unset; the environment wins.
  LlmConfig c = kopt::agent::resolve_config({}, file.path(), fake_env(env));
  EXPECT_EQ(c.api_key, "sk-from-env");
  EXPECT_EQ(c.model, "env-model");
  EXPECT_EQ(c.base_url, "http://file-host:8000/v1");
  EXPECT_EQ(c.reasoning_effort, "low");
  EXPECT_TRUE(c.reasoning_effort_explicit);
  EXPECT_EQ(c.api, "responses");

  // The command line wins over both.
  LlmOverrides cli;
  cli.model = "cli-model";
  cli.base_url = "http://cli-host/v1";
  cli.api = "chat";
  cli.timeout_s = 12.5;
  cli.max_retries = 0;
  c = kopt::agent::resolve_config(cli, file.path(), fake_env(env));
  EXPECT_EQ(c.model, "cli-model");
  EXPECT_EQ(c.base_url, "http://cli-host/v1");
  EXPECT_EQ(c.api, "chat");
  EXPECT_EQ(c.api_key, "sk-from-env");
  EXPECT_DOUBLE_EQ(c.timeout_s, 12.5);
  EXPECT_EQ(c.max_retries, 0);
}

TEST(LlmConfig, DotenvNeverOverridesASetVariableEvenEmpty) {
  TempDotenv file("OPENAI_API_KEY=sk-from-file\nOPENAI_REASONING_EFFORT=high\n");
  Env env{{"OPENAI_API_KEY", ""}, {"OPENAI_REASONING_EFFORT", ""}};
  const LlmConfig c = kopt::agent::resolve_config({}, file.path(), fake_env(env));
  EXPECT_EQ(c.api_key, "") << "set (to empty) in the environment: .env must not override it";
  EXPECT_EQ(c.reasoning_effort, "") << "an empty effort means: send none";
  EXPECT_TRUE(c.reasoning_effort_explicit);
}

TEST(LlmConfig, ParseDotenvSyntax) {
  const auto vars = kopt::agent::parse_dotenv(
      "\xEF\xBB\xBF# comment\r\n"
      "\n"
      "   \n"
      "PLAIN=value\r\n"
      "SPACED = spaced value  \n"
      "export EXPORTED=yes\n"
      "DQ=\"a # not a comment \\\"q\\\" \\n end\"  # comment\n"
      "SQ='literal \\n $HOME # kept'\n"
      "HASH=abc#def\n"
      "EMPTY=\n"
      "EMPTYQ=\"\"\n"
      "DUP=1\n"
      "DUP=2\n",
      "test.env");
  EXPECT_EQ(vars.at("PLAIN"), "value");
  EXPECT_EQ(vars.at("SPACED"), "spaced value");
  EXPECT_EQ(vars.at("EXPORTED"), "yes");
  EXPECT_EQ(vars.at("DQ"), "a # not a comment \"q\" \n end");
  EXPECT_EQ(vars.at("SQ"), "literal \\n $HOME # kept");
  EXPECT_EQ(vars.at("HASH"), "abc#def");
  EXPECT_EQ(vars.at("EMPTY"), "");
  EXPECT_EQ(vars.at("EMPTYQ"), "");
  EXPECT_EQ(vars.at("DUP"), "2");
  EXPECT_EQ(vars.size(), 9u);
}

TEST(LlmConfig, MalformedDotenvLineNamesFileAndLine) {
  const std::vector<std::pair<std::string, int>> cases = {
      {"A=1\nthis line has no equals sk-SECRETVALUE\n", 2},
      {"A=1\nB=2\n=novar\n", 3},
      {"A=\"unterminated sk-SECRETVALUE\n", 1},
      {"A='x' trailing\n", 1},
      {"1BAD=x\n", 1},
  };
  for (const auto& [text, line] : cases) {
    try {
      kopt::agent::parse_dotenv(text, "/proj/.env");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const kopt::UsageError& e) {
      EXPECT_EQ(e.id(), "kopt.agent.001");
      EXPECT_NE(std::string(e.what()).find("/proj/.env:" + std::to_string(line)), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find("SECRETVALUE"), std::string::npos) << "the line is never quoted";
    }
  }
  TempDotenv file("OPENAI_MODEL=x\nbroken\n");
  const Env env;
  try {
    kopt::agent::resolve_config({}, file.path(), fake_env(env));
    ADD_FAILURE() << "malformed .env accepted";
  } catch (const kopt::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(file.path() + ":2"), std::string::npos) << e.what();
  }
}

TEST(LlmConfig, BadValuesAreUsageErrors) {
  Env env{{"KOPT_LLM_API", "graphql"}};
  try {
    kopt::agent::resolve_config({}, "", fake_env(env));
    ADD_FAILURE() << "bad KOPT_LLM_API accepted";
  } catch (const kopt::UsageError& e) {
    EXPECT_EQ(e.id(), "kopt.agent.002");
    EXPECT_NE(std::string(e.what()).find("KOPT_LLM_API"), std::string::npos);
  }
  LlmConfig c;
  c.base_url = "ftp://example.com";
  EXPECT_THROW(kopt::agent::make_client(c), kopt::UsageError);
  c = LlmConfig{};
  c.timeout_s = 0;
  EXPECT_THROW(kopt::agent::make_client(c), kopt::UsageError);
}

TEST(LlmConfig, Redact) {
  using kopt::agent::redact;
  EXPECT_EQ(redact("key sk-abc123 and sk-abc123!", "sk-abc123"), "key [REDACTED] and [REDACTED]!");
  EXPECT_EQ(redact("nothing here", "sk-abc123"), "nothing here");
  EXPECT_EQ(redact("a short abc", "abc"), "a short abc") << "secrets under 4 characters are not redacted";
  EXPECT_EQ(redact("anything", ""), "anything");
  EXPECT_EQ(redact("sk-abc123", "sk-abc123"), "[REDACTED]");
  EXPECT_EQ(redact("sk-abc123sk-abc123", "sk-abc123"), "[REDACTED][REDACTED]");
}

// ===========================================================================
// LlmClient: HTTP against a fake server
// ===========================================================================

TEST(LlmClient, TextReply) {
  FakeServer server;
  server.push_json(fixture("chat_text.json"));
  HookLog log;
  auto client = kopt::agent::make_client(local_config(server), log.hooks());
  const ChatResponse r = client->complete(simple_request());
  EXPECT_EQ(r.message.role, Role::assistant);
  EXPECT_EQ(r.message.content, "Use a 64x64 tile.");
  EXPECT_TRUE(r.message.tool_calls.empty());
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_FALSE(r.truncated);
  EXPECT_FALSE(r.refusal);
  EXPECT_EQ(r.usage.input_tokens, 120);
  EXPECT_EQ(r.usage.output_tokens, 40);
  EXPECT_EQ(r.usage.reasoning_tokens, 24);
  EXPECT_EQ(r.usage.total_tokens, 160);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(r.request["model"], "test-model");
  EXPECT_EQ(r.response["id"], "chatcmpl-abc123");

  const auto got = server.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].path, "/v1/chat/completions");
  EXPECT_EQ(got[0].json_body(), r.request);
  EXPECT_EQ(got[0].json_body()["messages"][0]["role"], "system");
  EXPECT_TRUE(log.sleeps.empty());
  EXPECT_EQ(log.statuses, std::vector<int>{200});
}

TEST(LlmClient, ParallelToolCallRoundTrip) {
  FakeServer server;
  server.push_json(fixture("chat_parallel_tools.json"));
  server.push_json(fixture("chat_text.json"));
  HookLog log;
  auto client = kopt::agent::make_client(local_config(server), log.hooks());

  ChatRequest req = simple_request();
  req.tool_choice = "required";
  const ChatResponse first = client->complete(req);
  ASSERT_EQ(first.message.tool_calls.size(), 2u);
  const ToolCall& a = first.message.tool_calls[0];
  const ToolCall& b = first.message.tool_calls[1];
  EXPECT_EQ(a.id, "call_Ab12");
  EXPECT_EQ(a.name, "evaluate_kernel");
  EXPECT_EQ(a.arguments, "{\"params\":{\"TILE\":64}}");
  EXPECT_TRUE(a.arguments_valid);
  EXPECT_EQ(a.parsed["params"]["TILE"], 64);
  EXPECT_EQ(b.id, "call_Cd34");
  EXPECT_EQ(b.parsed["path"], "kernel.cu");
  EXPECT_EQ(first.finish_reason, "tool_calls");

  // The agent answers both calls (in the other order) and asks again.
  req.messages.push_back(first.message);
  req.messages.push_back(tool_result(b.id, b.name, "__global__ void k() {}"));
  req.messages.push_back(tool_result(a.id, a.name, "{\"verdict\":\"ok\",\"ms\":1.25}"));
  req.tool_choice = "auto";
  const ChatResponse second = client->complete(req);
  EXPECT_EQ(second.message.content, "Use a 64x64 tile.");

  const auto got = server.received();
  ASSERT_EQ(got.size(), 2u);
  const json first_body = got[0].json_body();
  EXPECT_EQ(first_body["tool_choice"], "required");
  const json body = got[1].json_body();
  EXPECT_EQ(body["tool_choice"], "auto");
  const json& msgs = body["messages"];
  ASSERT_EQ(msgs.size(), 5u);
  EXPECT_EQ(msgs[2]["role"], "assistant");
  ASSERT_EQ(msgs[2]["tool_calls"].size(), 2u);
  EXPECT_EQ(msgs[2]["tool_calls"][0]["id"], "call_Ab12");
  EXPECT_EQ(msgs[2]["tool_calls"][0]["type"], "function");
  EXPECT_EQ(msgs[2]["tool_calls"][0]["function"]["name"], "evaluate_kernel");
  EXPECT_EQ(msgs[2]["tool_calls"][0]["function"]["arguments"], "{\"params\":{\"TILE\":64}}");
  EXPECT_EQ(msgs[2]["tool_calls"][1]["id"], "call_Cd34");
  EXPECT_EQ(msgs[3]["role"], "tool");
  EXPECT_EQ(msgs[3]["tool_call_id"], "call_Cd34");
  EXPECT_EQ(msgs[3]["content"], "__global__ void k() {}");
  EXPECT_EQ(msgs[4]["tool_call_id"], "call_Ab12");
  EXPECT_EQ(msgs[4]["content"], "{\"verdict\":\"ok\",\"ms\":1.25}");
}

TEST(LlmClient, ObjectEmptyAndMalformedArgumentsAndUnknownTool) {
  FakeServer server;
  server.push_json(R"({"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,
    "tool_calls":[
      {"id":"c1","type":"function","function":{"name":"evaluate_kernel","arguments":{"params":{"TILE":8}}}},
      {"id":"c2","type":"function","function":{"name":"evaluate_kernel","arguments":""}},
      {"id":"c3","type":"function","function":{"name":"evaluate_kernel","arguments":"{\"params\": {\"TILE\": "}},
      {"id":"c4","type":"function","function":{"name":"launch_missiles","arguments":"{\"n\":1}"}},
      {"id":"c5","type":"function","function":{"name":"read_file"}}
    ]}}]})");
  HookLog log;
  auto client = kopt::agent::make_client(local_config(server), log.hooks());
  const ChatResponse r = client->complete(simple_request());
  ASSERT_EQ(r.message.tool_calls.size(), 5u);
  const auto& c = r.message.tool_calls;
  EXPECT_TRUE(c[0].arguments_valid);
  EXPECT_EQ(c[0].arguments, "{\"params\":{\"TILE\":8}}");
  EXPECT_EQ(c[0].parsed["params"]["TILE"], 8);
  EXPECT_FALSE(c[1].arguments_valid);
  EXPECT_EQ(c[1].arguments, "");
  EXPECT_TRUE(c[1].parsed.is_null());
  EXPECT_FALSE(c[2].arguments_valid);
  EXPECT_EQ(c[2].arguments, "{\"params\": {\"TILE\": ");
  EXPECT_TRUE(c[2].parsed.is_null());
  EXPECT_EQ(c[3].name, "launch_missiles") << "unknown tools pass through; the agent answers them";
  EXPECT_TRUE(c[3].arguments_valid);
  EXPECT_FALSE(c[4].arguments_valid) << "missing arguments";
}

TEST(LlmClient, MissingIdsAreSynthesised) {
  FakeServer server;
  server.push_json(fixture("llamacpp_tools.json"));
  server.push_json(fixture("ollama_tools.json"));
  server.push_json(fixture("chat_text.json"));
  HookLog log;
  auto client = kopt::agent::make_client(local_config(server), log.hooks());

  ChatRequest req = simple_request();
  const ChatResponse r1 = client->complete(req);
  ASSERT_EQ(r1.message.tool_calls.size(), 2u);
  EXPECT_EQ(r1.message.tool_calls[0].id, "call_1");
  EXPECT_EQ(r1.message.tool_calls[1].id, "call_2");
  req.messages.push_back(r1.message);
  for (const auto& c : r1.message.tool_calls) req.messages.push_back(tool_result(c.id, c.name, "ok"));

  const ChatResponse r2 = client->complete(req);
  ASSERT_EQ(r2.message.tool_calls.size(), 1u);
  EXPECT_EQ(r2.message.tool_calls[0].id, "call_3") << "unique within the transcript";
  req.messages.push_back(r2.message);
  req.messages.push_back(tool_result("call_3", "evaluate_kernel", "ok"));
  client->complete(req);

  const json body = server.received().at(2).json_body();
  EXPECT_EQ(body["messages"][2]["tool_calls"][0]["id"], "call_1");
  EXPECT_EQ(body["messages"][3]["tool_call_id"], "call_1");
  EXPECT_EQ(body["messages"][4]["tool_call_id"], "call_2");
  EXPECT_EQ(body["messages"][5]["tool_calls"][0]["id"], "call_3");
  EXPECT_EQ(body["messages"][6]["tool_call_id"], "call_3");
}

TEST(LlmClient, OllamaDialect) {
  FakeServer server;
  server.push_json(fixture("ollama_tools.json"));
  HookLog log;
  LlmConfig c = local_config(server);
  c.api = "auto";  // not OpenAI's host: Chat Completions
  auto client = kopt::agent::make_client(c, log.hooks());
  const ChatResponse r = client->complete(simple_request());
  EXPECT_EQ(server.received().at(0).path, "/v1/chat/completions");
  EXPECT_EQ(r.finish_reason, "stop");
  ASSERT_EQ(r.message.tool_calls.size(), 1u) << "tool calls decided by presence, not finish_reason";
  EXPECT_EQ(r.message.tool_calls[0].id, "call_1");
  EXPECT_EQ(r.message.tool_calls[0].parsed["params"]["TILE"], 128);
  EXPECT_EQ(r.message.tool_calls[0].arguments, "{\"params\":{\"TILE\":128}}");
  EXPECT_EQ(r.message.reasoning_text, "The user wants a faster kernel; try a bigger tile.");
}

TEST(LlmClient, LlamaCppDialect) {
  FakeServer server;
  server.push_json(fixture("llamacpp_tools.json"));
  HookLog log;
  auto client = kopt::agent::make_client(local_config(server), log.hooks());
  const ChatResponse r = client->complete(simple_request());
  EXPECT_EQ(r.message.reasoning_text, "Two candidates to compare.");
  EXPECT_EQ(r.message.content, "");
  ASSERT_EQ(r.message.tool_calls.size(), 2u);
  EXPECT_EQ(r.message.tool_calls[1].parsed["params"]["TILE"], 16);
  EXPECT_EQ(r.usage.total_tokens, 240);
}

TEST(LlmClient, VllmDialect) {
  FakeServer server;
  server.push_json(fixture("vllm_tools.json"));
  HookLog log;
  auto client = kopt::agent::make_client(local_config(server), log.hooks());
  const ChatResponse r = client->complete(simple_request());
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_FALSE(r.truncated);
  EXPECT_EQ(r.message.content, "Let me check.");
  EXPECT_EQ(r.message.reasoning_text, "I should profile first.");
  ASSERT_EQ(r.message.tool_calls.size(), 1u);
  EXPECT_EQ(r.message.tool_calls[0].id, "chatcmpl-tool-5d1c");
  EXPECT_EQ(r.message.tool_calls[0].name, "profile_kernel") << "unknown tool name passes through";
  EXPECT_TRUE(r.message.tool_calls[0].arguments_valid);
  EXPECT_TRUE(r.message.tool_calls[0].parsed.empty());
}

TEST(LlmClient, RateLimitedHonoursRetryAfter) {
  FakeServer server;
  server.push(Reply{429, fixture("error_rate_limit.json"), {{"retry-after", "3"}}, 0});
  server.push_json(fixture("chat_text.json"));
  HookLog log;
  auto client = kopt::agent::make_client(local_config(server), log.hooks());
  const ChatResponse r = client->complete(simple_request());
  EXPECT_EQ(r.message.content, "Use a 64x64 tile.");
  EXPECT_EQ(r.attempts, 2);
  ASSERT_EQ(log.sleeps.size(), 1u);
  EXPECT_EQ(log.sleeps[0], std::chrono::milliseconds(3000));
  EXPECT_EQ(log.statuses, (std::vector<int>{429, 200}));
  EXPECT_NE(log.notes[0].find("retrying in 3.00 s"), std::string::npos) << log.notes[0];
  EXPECT_EQ(server.received().size(), 2u);
}

TEST(LlmClient, RetryAfterMsWinsAndIsCapped) {
  FakeServer server;
  server.push(Reply{429, fixture("error_rate_limit.json"), {{"retry-after-ms", "1250"}, {"retry-after", "2"}}, 0});
  server.push(Reply{503, "Service Unavailable", {{"Retry-After", "3600"}}, 0});
  server.push_json(fixture("chat_text.json"));
  HookLog log;
  auto client = kopt::agent::make_client(local_config(server), log.hooks());
  EXPECT_EQ(client->complete(simple_request()).attempts, 3);
  ASSERT_EQ(log.sleeps.size(), 2u);
  EXPECT_EQ(log.sleeps[0], std::chrono::milliseconds(1250));
  EXPECT_EQ(log.sleeps[1], std::chrono::milliseconds(8000)) << "capped at backoff_max_s";
}

TEST(LlmClient, ServerErrorThenSuccessWithJitteredBackoff) {
  FakeServer server;
  server.push_json(fixture("error_server.json"), 500);
  server.push_json("<html>bad gateway</html>", 502);
  server.push_json(fixture("chat_text.json"));
  HookLog log;
  log.uniform = 0.25;
  auto client = kopt::agent::make_client(local_config(server), log.hooks());
  const ChatResponse r = client->complete(simple_request());
  EXPECT_EQ(r.attempts, 3);
  // Full jitter: u * min(max, initial * 2^(n-1)) = 0.25 * 1 s, then 0.25 * 2 s.
  EXPECT_EQ(log.sleeps, (std::vector<std::chrono::milliseconds>{std::chrono::milliseconds(250),
                                                                std::chrono::milliseconds(500)}));
}

TEST(LlmClient, PersistentServerErrorGivesUpAfterMaxRetries) {
  FakeServer server;
  server.push_json(fixture("error_server.json"), 500);
  HookLog log;
  log.uniform = 1.0;
  LlmConfig c = local_config(server);
  c.max_retries = 3;
  auto client = kopt::agent::make_client(c, log.hooks());
  const LlmError e = expect_llm_error([&] { client->complete(simple_request()); });
  EXPECT_EQ(e.kind(), LlmError::Kind::server);
  EXPECT_EQ(e.http_status(), 500);
  EXPECT_EQ(e.id(), "kopt.agent.016");
  EXPECT_EQ(server.received().size(), 4u) << "max_retries + 1 attempts";
  EXPECT_EQ(log.sleeps, (std::vector<std::chrono::milliseconds>{
                            std::chrono::milliseconds(1000), std::chrono::milliseconds(2000),
                            std::chrono::milliseconds(4000)}));
  EXPECT_NE(std::string(e.what()).find("The server had an error"), std::string::npos) << e.what();
}

TEST(LlmClient, TimeoutIsTransport) {
  FakeServer server;
  server.push(Reply{200, fixture("chat_text.json"), {}, 1000});
  HookLog log;
  LlmConfig c = local_config(server);
  c.timeout_s = 0.2;
  c.max_retries = 0;
  auto client = kopt::agent::make_client(c, log.hooks());
  const auto start = std::chrono::steady_clock::now();
  const LlmError e = expect_llm_error([&] { client->complete(simple_request()); });
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(e.kind(), LlmError::Kind::transport);
  EXPECT_EQ(e.http_status(), 0);
  EXPECT_LT(took, std::chrono::milliseconds(900));
  EXPECT_EQ(log.statuses, std::vector<int>{0});
  EXPECT_TRUE(log.sleeps.empty());
}

TEST(LlmClient, ConnectionRefusedIsTransportAfterRetries) {
  DeadPort dead;
  HookLog log;
  LlmConfig c;
  c.base_url = "http://127.0.0.1:" + std::to_string(dead.port()) + "/v1";
  c.max_retries = 2;
  auto client = kopt::agent::make_client(c, log.hooks());
  const LlmError e = expect_llm_error([&] { client->complete(simple_request()); });
  EXPECT_EQ(e.kind(), LlmError::Kind::transport);
  EXPECT_EQ(log.statuses, (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(log.sleeps.size(), 2u);
  EXPECT_NE(std::string(e.what()).find("3 attempt"), std::string::npos) << e.what();
}

TEST(LlmClient, AuthErrorNeverLeaksTheKey) {
  FakeServer server;
  // A server that echoes the key back, in a header and in the body.
  server.push(Reply{401,
                    R"({"error":{"message":"Incorrect API key provided: )" + kSentinel +
                        R"(. You can find your API key at https://platform.openai.com.","type":"invalid_request_error","code":"invalid_api_key"}})",
                    {{"x-echo", kSentinel}},
                    0});
  HookLog log;
  LlmConfig c = local_config(server);
  c.api_key = kSentinel;
  auto client = kopt::agent::make_client(c, log.hooks());
  const LlmError e = expect_llm_error([&] { client->complete(simple_request()); });
  EXPECT_EQ(e.kind(), LlmError::Kind::auth);
  EXPECT_EQ(e.http_status(), 401);
  EXPECT_EQ(server.received().size(), 1u) << "401 is not retried";
  const std::string what = e.what();
  EXPECT_EQ(what.find(kSentinel), std::string::npos) << what;
  EXPECT_NE(what.find("[REDACTED]"), std::string::npos) << what;
  for (const auto& note : log.notes) EXPECT_EQ(note.find(kSentinel), std::string::npos) << note;

  // The same key in a successful reply: not in the response, the message or the request.
  FakeServer ok;
  ok.push_json(R"({"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"your key is )" +
               kSentinel + R"("}}]})");
  c.base_url = ok.base_url();
  auto client2 = kopt::agent::make_client(c, log.hooks());
  ChatRequest req = simple_request();
  req.messages.push_back(tool_result("call_x", "env", "OPENAI_API_KEY=" + kSentinel));
  const ChatResponse r = client2->complete(req);
  EXPECT_EQ(r.request.dump().find(kSentinel), std::string::npos);
  EXPECT_EQ(r.response.dump().find(kSentinel), std::string::npos);
  EXPECT_EQ(r.message.content, "your key is [REDACTED]");
  for (const auto& note : log.notes) EXPECT_EQ(note.find(kSentinel), std::string::npos) << note;
}

// Credentials in the base URL (user-info, a key= parameter) are used for the
// request and appear in no error message, note or saved exchange.
TEST(LlmClient, CredentialsInTheBaseUrlNeverLeak) {
  const std::string pass = "PW-SENTINEL-31c9e7a0", qkey = "QK-SENTINEL-8d24b6f1";
  const std::string creds = "kopt-user:" + pass + "@";
  HookLog log;
  // Refused connections (a transport error, which libcurl describes).
  DeadPort dead;
  LlmConfig c;
  c.base_url = "http://" + creds + "127.0.0.1:" + std::to_string(dead.port()) + "/v1?api_key=" + qkey;
  c.max_retries = 1;
  const LlmError t = expect_llm_error([&] { kopt::agent::make_client(c, log.hooks())->complete(simple_request()); });
  EXPECT_EQ(t.kind(), LlmError::Kind::transport);
  const std::string tw = t.what();
  EXPECT_NE(tw.find("POST http://127.0.0.1:" + std::to_string(dead.port()) + "/v1/chat/completions?api_key=[REDACTED]"),
            std::string::npos) << tw;
  // A 404 whose body echoes the URL, and a reply that does.
  FakeServer server;
  server.push(Reply{404, R"({"error":{"message":"no route http://)" + creds + R"(x/v1?api_key=)" + qkey + R"("}})", {}, 0});
  server.push_json(R"({"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"see )" +
                   qkey + R"("}}]})");
  LlmConfig c2 = local_config(server);
  c2.base_url = "http://" + creds + c2.base_url.substr(7) + "?api_key=" + qkey;
  auto client = kopt::agent::make_client(c2, log.hooks());
  const LlmError nf = expect_llm_error([&] { client->complete(simple_request()); });
  EXPECT_EQ(nf.kind(), LlmError::Kind::not_found);
  const ChatResponse r = client->complete(simple_request());
  EXPECT_EQ(r.message.content, "see [REDACTED]");
  // The requests went to the real URL.
  ASSERT_EQ(server.received().size(), 2u);
  EXPECT_EQ(server.received()[0].path, "/v1/chat/completions");
  for (const std::string& text : {tw, std::string(nf.what()), r.request.dump(), r.response.dump()}) {
    EXPECT_EQ(text.find(pass), std::string::npos) << text;
    EXPECT_EQ(text.find(qkey), std::string::npos) << text;
  }
  for (const auto& note : log.notes) {
    EXPECT_EQ(note.find(pass), std::string::npos) << note;
    EXPECT_EQ(note.find(qkey), std::string::npos) << note;
  }
  // A malformed base URL is quoted without them.
  LlmConfig bad;
  bad.base_url = creds + "example.com/v1?token=" + qkey;
  try {
    kopt::agent::make_client(bad);
    ADD_FAILURE() << "accepted " << bad.base_url;
  } catch (const kopt::UsageError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("(got 'example.com/v1?token=[REDACTED]')"), std::string::npos) << w;
    EXPECT_EQ(w.find(pass), std::string::npos) << w;
  }
}

TEST(LlmClient, AuthorizationHeaderOnlyWithAKey) {
  FakeServer server;
  server.push_json(fixture("chat_text.json"));
  HookLog log;
  LlmConfig c = local_config(server);
  c.api_key = kSentinel;
  kopt::agent::make_client(c, log.hooks())->complete(simple_request());
  c.api_key = "";
  kopt::agent::make_client(c, log.hooks())->complete(simple_request());
  const auto got = server.received();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0].has_authorization);
  EXPECT_EQ(got[0].authorization, "Bearer " + kSentinel);
  EXPECT_EQ(got[0].body.find(kSentinel), std::string::npos) << "the key only travels in the header";
  EXPECT_FALSE(got[1].has_authorization);
  EXPECT_EQ(got[1].all_headers.find("Bearer"), std::string::npos) << got[1].all_headers;
}

TEST(LlmClient, ContextLengthError) {
  FakeServer server;
  server.push_json(fixture("error_context_length.json"), 400);
  HookLog log;
  auto client = kopt::agent::make_client(local_config(server), log.hooks());
  const LlmError e = expect_llm_error([&] { client->complete(simple_request()); });
  EXPECT_EQ(e.kind(), LlmError::Kind::context_length);
  EXPECT_EQ(e.http_status(), 400);
  EXPECT_EQ(server.received().size(), 1u);

  // A vLLM-style 400 without a code, by its message.
  FakeServer vllm;
  vllm.push_json(R"({"object":"error","message":"This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (8000 in the messages, 1000 in the completion).","type":"BadRequestError","param":null,"code":400})",
                 400);
  auto client2 = kopt::agent::make_client(local_config(vllm), log.hooks());
  EXPECT_EQ(expect_llm_error([&] { client2->complete(simple_request()); }).kind(), LlmError::Kind::context_length);
}

TEST(LlmClient, OtherClientErrorsAreNotRetried) {
  FakeServer server;
  server.push_json(R"({"error":{"message":"The model `nope` does not exist","type":"invalid_request_error","code":"model_not_found"}})",
                   404);
  HookLog log;
  auto client = kopt::agent::make_client(local_config(server), log.hooks());
  EXPECT_EQ(expect_llm_error([&] { client->complete(simple_request()); }).kind(), LlmError::Kind::not_found);

  FakeServer bad;
  bad.push_json(R"({"error":{"message":"Invalid value for 'tool_choice'","type":"invalid_request_error","param":"tool_choice"}})",
                400);
  auto client2 = kopt::agent::make_client(local_config(bad), log.hooks());
  const LlmError e = expect_llm_error([&] { client2->complete(simple_request()); });
  EXPECT_EQ(e.kind(), LlmError::Kind::bad_request);
  EXPECT_EQ(server.received().size() + bad.received().size(), 2u);
  EXPECT_TRUE(log.sleeps.empty());
}

TEST(LlmClient, NonJsonSuccessIsProtocolError) {
  FakeServer server;
  server.push(Reply{200, "<html>captive portal</html>", {}, 0});
  HookLog log;
  auto client = kopt::agent::make_client(local_config(server), log.hooks());
  const LlmError e = expect_llm_error([&] { client->complete(simple_request()); });
  EXPECT_EQ(e.kind(), LlmError::Kind::protocol);
  EXPECT_NE(std::string(e.what()).find("captive portal"), std::string::npos);
}

TEST(LlmClient, TruncatedReplyDropsToolCalls) {
  FakeServer server;
  server.push_json(fixture("chat_truncated_tool.json"));
  HookLog log;
  auto client = kopt::agent::make_client(local_config(server), log.hooks());
  const ChatResponse r = client->complete(simple_request());
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.finish_reason, "length");
  EXPECT_TRUE(r.message.tool_calls.empty()) << "a cut tool call is never executed";
}

TEST(LlmClient, Refusal) {
  FakeServer server;
  server.push_json(fixture("chat_refusal.json"));
  HookLog log;
  auto client = kopt::agent::make_client(local_config(server), log.hooks());
  const ChatResponse r = client->complete(simple_request());
  ASSERT_TRUE(r.refusal);
  EXPECT_EQ(*r.refusal, "I can't help with that.");
  EXPECT_TRUE(r.message.tool_calls.empty());
}

TEST(LlmClient, InsufficientQuotaIsNotRetried) {
  FakeServer server;
  server.push(Reply{429, fixture("error_insufficient_quota.json"), {{"retry-after", "1"}}, 0});
  HookLog log;
  auto client = kopt::agent::make_client(local_config(server), log.hooks());
  const LlmError e = expect_llm_error([&] { client->complete(simple_request()); });
  EXPECT_EQ(e.kind(), LlmError::Kind::quota);
  EXPECT_EQ(e.http_status(), 429);
  EXPECT_EQ(server.received().size(), 1u);
  EXPECT_TRUE(log.sleeps.empty());
}

TEST(LlmClient, RateLimitedAfterRetries) {
  FakeServer server;
  server.push_json(fixture("error_rate_limit.json"), 429);
  HookLog log;
  LlmConfig c = local_config(server);
  c.max_retries = 1;
  auto client = kopt::agent::make_client(c, log.hooks());
  EXPECT_EQ(expect_llm_error([&] { client->complete(simple_request()); }).kind(), LlmError::Kind::rate_limited);
  EXPECT_EQ(server.received().size(), 2u);
}

TEST(LlmClient, ResponsesFunctionCallRoundTrip) {
  FakeServer server;
  server.push_json(fixture("responses_function_call.json"));
  server.push_json(fixture("responses_text.json"));
  HookLog log;
  LlmConfig c = local_config(server);
  c.api = "responses";
  auto client = kopt::agent::make_client(c, log.hooks());

  ChatRequest req = simple_request();
  req.tool_choice = "evaluate_kernel";
  req.max_output_tokens = 1000;
  const ChatResponse first = client->complete(req);
  EXPECT_EQ(first.finish_reason, "tool_calls");
  ASSERT_EQ(first.message.tool_calls.size(), 1u);
  const ToolCall& call = first.message.tool_calls[0];
  EXPECT_EQ(call.id, "call_R1");
  EXPECT_EQ(call.name, "evaluate_kernel");
  EXPECT_EQ(call.parsed["params"]["TILE"], 64);
  EXPECT_EQ(first.message.reasoning_text, "Try the tiled variant.");
  ASSERT_TRUE(first.message.reasoning_items.is_array());
  EXPECT_EQ(first.message.reasoning_items[0]["id"], "rs_01");
  EXPECT_EQ(first.usage.reasoning_tokens, 64);
  EXPECT_EQ(first.usage.total_tokens, 580);

  req.messages.push_back(first.message);
  req.messages.push_back(tool_result(call.id, call.name, "{\"ms\":0.9}"));
  req.tool_choice = "auto";
  const ChatResponse second = client->complete(req);
  EXPECT_EQ(second.message.content, "TILE=64 is the fastest.");
  EXPECT_EQ(second.finish_reason, "stop");
  EXPECT_TRUE(second.message.tool_calls.empty());

  const auto got = server.received();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].path, "/v1/responses");
  const json b0 = got[0].json_body();
  EXPECT_EQ(b0["tool_choice"], json({{"type", "function"}, {"name", "evaluate_kernel"}}));
  EXPECT_EQ(b0["max_output_tokens"], 1000);
  EXPECT_EQ(b0["input"][0]["role"], "system");
  EXPECT_EQ(b0["tools"][0]["name"], "evaluate_kernel");

  const json input = got[1].json_body()["input"];
  ASSERT_EQ(input.size(), 5u) << input.dump(1);
  EXPECT_EQ(input[2]["type"], "reasoning");
  EXPECT_EQ(input[2]["id"], "rs_01");
  EXPECT_EQ(input[2]["summary"][0]["text"], "Try the tiled variant.");
  EXPECT_EQ(input[3]["type"], "function_call");
  EXPECT_EQ(input[3]["call_id"], "call_R1");
  EXPECT_EQ(input[3]["name"], "evaluate_kernel");
  EXPECT_EQ(input[3]["arguments"], "{\"params\":{\"TILE\":64}}");
  EXPECT_EQ(input[4], json({{"type", "function_call_output"}, {"call_id", "call_R1"}, {"output", "{\"ms\":0.9}"}}));
}

TEST(LlmWire, ResponsesRebuiltWithoutOutputItemsAndIncomplete) {
  LlmConfig c;  // OpenAI: developer role
  Message a;
  a.role = Role::assistant;
  a.content = "Trying two.";
  a.reasoning_items = json::array({{{"type", "reasoning"}, {"id", "rs_9"}, {"summary", json::array()}}});
  a.tool_calls = {wire::make_tool_call("call_9", "f", json("{}"))};
  ChatRequest r = simple_request();
  r.messages.push_back(a);
  r.messages.push_back(tool_result("call_9", "f", "done"));
  const json input = wire::responses_request(r, c)["input"];
  ASSERT_EQ(input.size(), 6u);
  EXPECT_EQ(input[0]["role"], "developer");
  EXPECT_EQ(input[2]["id"], "rs_9");
  EXPECT_EQ(input[3], json({{"role", "assistant"}, {"content", "Trying two."}}));
  EXPECT_EQ(input[4]["call_id"], "call_9");
  EXPECT_EQ(input[5]["type"], "function_call_output");

  // Incomplete: truncated, calls dropped, and not echoed back either.
  json body = json::parse(fixture("responses_function_call.json"));
  body["status"] = "incomplete";
  body["incomplete_details"] = {{"reason", "max_output_tokens"}};
  const ChatResponse cut = wire::parse_responses_reply(body, {});
  EXPECT_TRUE(cut.truncated);
  EXPECT_EQ(cut.finish_reason, "length");
  EXPECT_TRUE(cut.message.tool_calls.empty());
  ChatRequest next = simple_request();
  next.messages.push_back(cut.message);
  const json in2 = wire::responses_request(next, c)["input"];
  for (const json& item : in2) EXPECT_NE(item.value("type", ""), "function_call") << in2.dump();

  // A refusal part.
  const json refused = json::parse(R"({"status":"completed","output":[{"type":"message","role":"assistant",
      "content":[{"type":"refusal","refusal":"No."}]}]})");
  const ChatResponse rr = wire::parse_responses_reply(refused, {});
  ASSERT_TRUE(rr.refusal);
  EXPECT_EQ(*rr.refusal, "No.");

  // A failed response with a context error.
  const json failed = json::parse(
      R"({"status":"failed","error":{"code":"context_length_exceeded","message":"Your input exceeds the context window of this model."},"output":[]})");
  EXPECT_EQ(expect_llm_error([&] { wire::parse_responses_reply(failed, {}); }).kind(), LlmError::Kind::context_length);
}

TEST(LlmWire, ResponsesEchoFollowsTheAgentsEdits) {
  LlmConfig c;
  json body = json::parse(fixture("responses_function_call.json"));
  body["output"].push_back({{"type", "message"}, {"id", "msg_7"}, {"role", "assistant"},
                            {"content", json::array({{{"type", "output_text"}, {"text", "long text"}}})}});
  ChatResponse r = wire::parse_responses_reply(body, {});
  ASSERT_EQ(r.message.output_items.size(), 3u);
  EXPECT_EQ(r.message.content, "long text");

  // Unchanged: the items go back verbatim.
  ChatRequest req = simple_request();
  req.messages.push_back(r.message);
  json input = wire::responses_request(req, c)["input"];
  ASSERT_EQ(input.size(), 5u);
  EXPECT_EQ(input[3]["id"], "fc_01");
  EXPECT_EQ(input[4]["content"][0]["text"], "long text");

  // The agent trims the arguments and the text (context trimming).
  r.message.tool_calls[0].arguments = "{\"omitted\":true}";
  r.message.content = "[trimmed]";
  req.messages.back() = r.message;
  input = wire::responses_request(req, c)["input"];
  ASSERT_EQ(input.size(), 5u);
  EXPECT_EQ(input[2]["type"], "reasoning");
  EXPECT_EQ(input[3]["arguments"], "{\"omitted\":true}");
  EXPECT_EQ(input[3]["call_id"], "call_R1");
  EXPECT_EQ(input[4]["id"], "msg_7");
  EXPECT_EQ(input[4]["content"][0]["text"], "[trimmed]");

  // Text dropped entirely: no message item.
  r.message.content.clear();
  req.messages.back() = r.message;
  input = wire::responses_request(req, c)["input"];
  ASSERT_EQ(input.size(), 4u);
  EXPECT_EQ(input[3]["type"], "function_call");
}
