// The agent proposer (agent/agent.h): the loop's rules with a scripted test
// double of agent::LlmClient (AgentLoop*), its helpers (AgentTools, AgentTrim,
// AgentNcu, AgentNotes), and end to end through the real HTTP client against
// an in-process fake OpenAI-compatible server (AgentE2E*). No GPU and no
// network: candidates are compiled with NVRTC for sm_90 (or "run" by the fake
// worker), every run folder is checked.
#include <gtest/gtest.h>

#include <httplib.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/agent.h"
#include "agent/doc_fetch.h"
#include "agent/http.h"
#include "agent/llm.h"
#include "eval/ncu.h"
#include "support/files.h"
#include "driver/driver.h"
#include "store/store.h"
#include "spec/spec.h"
#include "support/fake_llm_server.h"
#include "support/loopback_server.h"
#include "temp_dir.h"
#include "util/error.h"
#include "util/fs.h"

namespace {

namespace stdfs = std::filesystem;
using kopt::test::LoopbackServer;
using kopt::test::read_json;
using kopt::test::TempDir;
using FakeServer = kopt::test::FakeLlmServer;
using kopt::agent::ChatRequest;
using kopt::agent::ChatResponse;
using kopt::agent::LlmConfig;
using kopt::agent::LlmError;
using kopt::agent::Message;
using kopt::agent::Role;
using kopt::agent::ToolCall;
using nlohmann::json;

const std::string kSentinel = "sk-AGENT-SENTINEL-5b9e0c7d13";
const std::string kData = std::string(KOPT_TEST_DATA_DIR) + "/agent/";


// ---------------------------------------------------------------------------
// Scripted replies

Message msg(Role role, const std::string& content) {
  Message m;
  m.role = role;
  m.content = content;
  return m;
}

ToolCall call(const std::string& name, const json& args, const std::string& id = "") {
  static int n = 0;
  ToolCall tc;
  tc.id = id.empty() ? "call_" + std::to_string(++n) : id;
  tc.name = name;
  tc.arguments = args.dump();
  tc.parsed = args;
  tc.arguments_valid = args.is_object();
  return tc;
}

ChatResponse reply(std::vector<ToolCall> calls, const std::string& text = "") {
  ChatResponse r;
  r.message.role = Role::assistant;
  r.message.content = text;
  r.message.tool_calls = std::move(calls);
  r.finish_reason = r.message.tool_calls.empty() ? "stop" : "tool_calls";
  r.usage.input_tokens = 100;
  r.usage.output_tokens = 50;
  r.usage.total_tokens = 150;
  return r;
}

ChatResponse text(const std::string& t) { return reply({}, t); }

json launch256() { return {{"grid", {"ceil_div(N, 256)", 1, 1}}, {"block", {256, 1, 1}}, {"shared_bytes", 0}}; }

json eval_args(const std::string& file, const std::string& entry, json launch = launch256()) {
  return {{"source", kopt::fs::read_file(kData + file)}, {"entry", entry}, {"launch", launch}};
}

/// What the test double does on each request: returns a reply or throws.
using Step = std::function<ChatResponse(const ChatRequest&)>;

struct Script {
  std::deque<Step> steps;
  std::vector<ChatRequest> requests;
  std::mutex mu;
  void add(ChatResponse r) {
    steps.push_back([r](const ChatRequest&) { return r; });
  }
  void add(Step s) { steps.push_back(std::move(s)); }
};

/// A script of `n` turns (at most 4), each reading the notes on another topic.
std::shared_ptr<Script> note_reads(int n) {
  auto s = std::make_shared<Script>();
  const char* topics[] = {"coalescing", "occupancy", "cp-async", "tail-handling"};
  for (int i = 0; i < n; ++i) s->add(reply({call("read_optimization_notes", {{"topic", topics[i]}})}));
  return s;
}

/// A script of `n` turns, each evaluating another variant of the repaired kernel.
std::shared_ptr<Script> evaluations(int n) {
  auto s = std::make_shared<Script>();
  for (int i = 0; i < n; ++i) {
    json a = eval_args("repaired.cu", "vadd_repaired");
    a["source"] = a["source"].get<std::string>() + "// variant " + std::to_string(i) + "\n";
    s->add(reply({call("evaluate_candidate", a)}));
  }
  return s;
}

class ScriptedClient : public kopt::agent::LlmClient {
 public:
  ScriptedClient(std::shared_ptr<Script> s, LlmConfig c) : s_(std::move(s)), c_(std::move(c)) {}
  ChatResponse complete(const ChatRequest& rq) override {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->requests.push_back(rq);
    if (s_->steps.empty()) throw LlmError(LlmError::Kind::bad_request, 400, "script exhausted");
    Step st = std::move(s_->steps.front());
    s_->steps.pop_front();
    return st(rq);
  }
  const LlmConfig& config() const override { return c_; }

 private:
  std::shared_ptr<Script> s_;
  LlmConfig c_;
};

struct RunOut {
  int code = -1;
  stdfs::path dir;
  json summary, history;
  std::string events;
};

kopt::driver::OptimizeOptions base_options(const TempDir& t, bool gpu = false) {
  kopt::driver::OptimizeOptions o;
  o.spec = kData + "vadd.json";
  o.strategy = "agent";
  o.arch = "sm_90";
  o.results_dir = t.path() / "results";
  o.cache_dir = t.path() / "cache";
  o.workers.command = {KOPT_FAKE_WORKER};
  if (!gpu) o.workers.command.push_back("--no-device");
  o.quiet = true;
  o.budget.evaluations = 10;
  o.agent.api_key = kSentinel;
  o.agent.dotenv = t.path() / "no.env";
  o.agent.llm_base_url = "http://127.0.0.1:9/v1";  // never contacted by the test double
  return o;
}

RunOut run_with(kopt::driver::OptimizeOptions o, std::shared_ptr<Script> script) {
  o.agent.client_factory = [script](const LlmConfig& c) { return std::make_unique<ScriptedClient>(script, c); };
  RunOut r;
  testing::internal::CaptureStdout();
  try {
    r.code = kopt::driver::optimize(o, &r.dir);
  } catch (...) {
    testing::internal::GetCapturedStdout();
    throw;
  }
  testing::internal::GetCapturedStdout();
  if (!r.dir.empty()) {
    r.summary = read_json(r.dir / "summary.json");
    r.history = read_json(r.dir / "history.json");
    const stdfs::path events = r.dir / "agent" / "events.jsonl";
    if (stdfs::exists(events)) r.events = kopt::fs::read_file(events);
  }
  return r;
}

/// run_with() on base_options(t, gpu) changed by `adjust`, in a folder of its
/// own that is removed afterwards: the test reads the run from the RunOut
/// (summary, history, events), not from its dir.
RunOut run_adjusted(std::shared_ptr<Script> script, const std::function<void(kopt::driver::OptimizeOptions&)>& adjust,
                    bool gpu = false) {
  TempDir t;
  kopt::driver::OptimizeOptions o = base_options(t, gpu);
  adjust(o);
  return run_with(std::move(o), std::move(script));
}

std::vector<std::string> verdicts(const RunOut& r) {
  std::vector<std::string> v;
  for (const auto& a : r.history["attempts"]) v.push_back(a["verdict"].get<std::string>());
  return v;
}

std::vector<json> event_lines(const RunOut& r) {
  std::vector<json> out;
  std::istringstream in(r.events);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(json::parse(l));
  return out;
}

/// The tool messages of a request, in order.
std::vector<std::string> tool_results(const ChatRequest& rq) {
  std::vector<std::string> out;
  for (const auto& m : rq.messages)
    if (m.role == Role::tool) out.push_back(m.content);
  return out;
}

int count_calls(const stdfs::path& run) {
  int n = 0;
  for (const auto& e : stdfs::directory_iterator(run / "agent"))
    n += e.path().filename().string().rfind("call-", 0) == 0;
  return n;
}

// ---------------------------------------------------------------------------
// Helpers

TEST(AgentTools, DefinitionsDependOnThePhase) {
  auto names = [](const std::vector<kopt::agent::ToolDef>& d) {
    std::vector<std::string> n;
    for (const auto& x : d) {
      EXPECT_EQ(x.parameters["type"], "object") << x.name;
      EXPECT_FALSE(x.description.empty()) << x.name;
      n.push_back(x.name);
    }
    return n;
  };
  auto has = [](const std::vector<std::string>& v, const char* n) { return std::find(v.begin(), v.end(), n) != v.end(); };
  const auto agent = names(kopt::agent::tool_defs("agent", false));
  for (const char* t : {"evaluate_candidate", "get_device_properties", "profile_candidate", "read_optimization_notes",
                        "get_history"})
    EXPECT_TRUE(has(agent, t)) << t;
  EXPECT_FALSE(has(agent, "propose_template"));
  EXPECT_FALSE(has(agent, "fetch_url"));
  EXPECT_FALSE(has(agent, "submit_workload"));
  EXPECT_TRUE(has(names(kopt::agent::tool_defs("hybrid", false)), "propose_template"));
  EXPECT_TRUE(has(names(kopt::agent::tool_defs("agent", true)), "fetch_url"));
  const auto draft = names(kopt::agent::tool_defs("draft", false));
  EXPECT_TRUE(has(draft, "submit_workload"));
  EXPECT_FALSE(has(draft, "evaluate_candidate"));
  for (const auto& d : kopt::agent::tool_defs("hybrid", true))
    EXPECT_NE(std::find(kopt::agent::tool_names().begin(), kopt::agent::tool_names().end(), d.name),
              kopt::agent::tool_names().end());
}

TEST(AgentNotes, CoverTheTopics) {
  std::vector<std::string> topics;
  for (const auto& [t, text] : kopt::agent::optimization_notes()) {
    topics.push_back(t);
    EXPECT_GT(text.size(), 400u) << t;
  }
  for (const char* t : {"coalescing", "bank-conflicts", "register-tiling", "occupancy", "cp-async", "vectorized-loads",
                        "warp-shuffles", "tail-handling"})
    EXPECT_NE(std::find(topics.begin(), topics.end(), t), topics.end()) << t;
}

TEST(AgentTrim, StubsOldToolResultsThenArgumentsThenDropsTurns) {
  std::vector<Message> m = {msg(Role::system, "system"), msg(Role::user, "task")};
  for (int i = 0; i < 3; ++i) {
    Message a = msg(Role::assistant, "");
    a.tool_calls.push_back(call("evaluate_candidate", {{"source", std::string(500, 'x')}}));
    m.push_back(a);
    Message t = msg(Role::tool, "result " + std::to_string(i) + std::string(1000, 'r'));
    t.tool_call_id = a.tool_calls[0].id;
    m.push_back(t);
  }
  // 1. Tool results before the last assistant turn: half, oldest first.
  ASSERT_TRUE(kopt::agent::trim_for_context(m));
  EXPECT_EQ(m[3].content, "[trimmed to save context]");
  EXPECT_NE(m[5].content, "[trimmed to save context]");
  ASSERT_TRUE(kopt::agent::trim_for_context(m));
  EXPECT_EQ(m[5].content, "[trimmed to save context]");
  EXPECT_NE(m[7].content, "[trimmed to save context]") << "the last turn is kept";
  // 2. Then old tool-call arguments.
  ASSERT_TRUE(kopt::agent::trim_for_context(m));
  EXPECT_LT(m[2].tool_calls[0].arguments.size(), 100u);
  EXPECT_GT(m[6].tool_calls[0].arguments.size(), 100u) << "the last turn's arguments are kept";
  while (kopt::agent::trim_for_context(m)) {
  }
  // 3. Old turns are dropped; the head and the last turn stay, well-formed.
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].content, "system");
  EXPECT_EQ(m[1].content, "task");
  EXPECT_EQ(m[2].role, Role::assistant);
  EXPECT_EQ(m[3].role, Role::tool);
  EXPECT_EQ(m[3].tool_call_id, m[2].tool_calls[0].id);
  EXPECT_GT(m[2].tool_calls[0].arguments.size(), 100u);
}

TEST(AgentNcu, ParsesTheDetailsCsv) {
  const std::string csv =
      "==PROF== Connected to process 1234\n"
      "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\","
      "\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
      "\"0\",\"1234\",\"kopt\",\"127.0.0.1\",\"vadd_vec4\",\"1\",\"7\",\"(256, 1, 1)\",\"(4096, 1, 1)\",\"0\",\"9.0\","
      "\"GPU Speed Of Light Throughput\",\"Memory Throughput\",\"%\",\"91.52\"\n"
      "\"0\",\"1234\",\"kopt\",\"127.0.0.1\",\"vadd_vec4\",\"1\",\"7\",\"(256, 1, 1)\",\"(4096, 1, 1)\",\"0\",\"9.0\","
      "\"GPU Speed Of Light Throughput\",\"Duration\",\"usecond\",\"1,234.5\"\n"
      "\"0\",\"1234\",\"kopt\",\"127.0.0.1\",\"vadd_vec4\",\"1\",\"7\",\"(256, 1, 1)\",\"(4096, 1, 1)\",\"0\",\"9.0\","
      "\"Launch Statistics\",\"Function Cache Configuration\",\"\",\"CachePreferNone\"\n"
      "\"1\",\"1234\",\"kopt\",\"127.0.0.1\",\"other\",\"1\",\"7\",\"(256, 1, 1)\",\"(4096, 1, 1)\",\"0\",\"9.0\","
      "\"GPU Speed Of Light Throughput\",\"Duration\",\"usecond\",\"9\"\n";
  const json j = kopt::eval::parse_ncu_csv(csv);
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(j["kernel"], "vadd_vec4");
  EXPECT_DOUBLE_EQ(j["metrics"]["GPU Speed Of Light Throughput: Memory Throughput [%]"].get<double>(), 91.52);
  EXPECT_DOUBLE_EQ(j["metrics"]["GPU Speed Of Light Throughput: Duration [usecond]"].get<double>(), 1234.5);
  EXPECT_EQ(j["metrics"]["Launch Statistics: Function Cache Configuration"], "CachePreferNone");
  EXPECT_EQ(j["metrics"].size(), 3u) << "the first kernel only";
  EXPECT_TRUE(kopt::eval::parse_ncu_csv("==ERROR== ERR_NVGPUCTRPERM\n").is_null());
}

TEST(AgentNcu, ParsesRealNsightCompute2025Output) {
  // What `kopt optimize --strategy agent` got from profile_candidate on an
  // H200 (ncu with rule columns: metric rows end with a trailing comma, rule
  // rows have no metric): the kopt evaluate JSON first, then the CSV.
  const json j = kopt::eval::parse_ncu_csv(
      kopt::fs::read_file(std::string(KOPT_TEST_DATA_DIR) + "/ncu/h200_vadd_vec4_details.txt"));
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(j["kernel"], "vadd_vec4");
  const json& m = j["metrics"];
  EXPECT_DOUBLE_EQ(m["GPU Speed Of Light Throughput: DRAM Throughput [%]"].get<double>(), 59.94);
  EXPECT_DOUBLE_EQ(m["GPU Speed Of Light Throughput: Duration [ns]"].get<double>(), 12768);
  EXPECT_DOUBLE_EQ(m["Launch Statistics: Registers Per Thread [register/thread]"].get<double>(), 32);
  EXPECT_DOUBLE_EQ(m["Occupancy: Achieved Occupancy [%]"].get<double>(), 77.06);
  EXPECT_EQ(m["Launch Statistics: Function Cache Configuration"], "CachePreferNone");
  for (const auto& [key, value] : m.items()) EXPECT_FALSE(key.empty() || key.back() == ' ') << key;
  ASSERT_TRUE(j.contains("rules"));
  bool occupancy_rule = false;
  for (const auto& r : j["rules"])
    if (r["rule"] == "AchievedOccupancy") {
      occupancy_rule = true;
      EXPECT_EQ(r["section"], "Occupancy");
      EXPECT_NE(r["description"].get<std::string>().find("achieved occupancy"), std::string::npos);
    }
  EXPECT_TRUE(occupancy_rule);
}

// ---------------------------------------------------------------------------
// The loop, with the test double

TEST(AgentLoop, UnknownToolAndMalformedArgumentsAreAnsweredAndTheLoopGoesOn) {
  TempDir t;
  auto s = std::make_shared<Script>();
  s->add(reply({call("launch_rockets", {{"count", 3}})}));
  ToolCall bad = call("evaluate_candidate", json::object());
  bad.arguments = "{\"source\": \"__global__ void f(){}\", ";  // cut JSON
  bad.parsed = nullptr;
  bad.arguments_valid = false;
  ToolCall empty = call("read_optimization_notes", json::object());
  empty.arguments = "";
  empty.parsed = nullptr;
  empty.arguments_valid = false;
  s->add(reply({bad, empty}));
  s->add(reply({call("evaluate_candidate", {{"entry", "x"}})}));  // no source
  s->add(text("done"));
  const RunOut r = run_with(base_options(t), s);
  EXPECT_EQ(r.code, 77);
  ASSERT_EQ(s->requests.size(), 4u);
  auto res = tool_results(s->requests[1]);
  ASSERT_EQ(res.size(), 1u);
  EXPECT_NE(res[0].find("unknown tool 'launch_rockets'"), std::string::npos) << res[0];
  EXPECT_NE(res[0].find("evaluate_candidate"), std::string::npos) << "lists the tools";
  res = tool_results(s->requests[2]);
  ASSERT_EQ(res.size(), 3u);
  EXPECT_NE(res[1].find("not a JSON object"), std::string::npos) << res[1];
  EXPECT_NE(res[2].find("arguments are empty"), std::string::npos) << res[2];
  res = tool_results(s->requests[3]);
  EXPECT_NE(res.back().find("'source' is required"), std::string::npos) << res.back();
  EXPECT_EQ(r.summary["agent"]["stop_reason"], "model_finished");
  EXPECT_EQ(r.history["attempts"].size(), 1u) << "only the initial kernel";
  const auto ev = event_lines(r);
  ASSERT_EQ(ev.size(), 4u);
  for (const auto& e : ev) {
    EXPECT_TRUE(e.contains("error")) << e.dump();
    EXPECT_TRUE(e.contains("id") && e.contains("tool") && e.contains("call")) << e.dump();
  }
}

TEST(AgentLoop, RepeatedIdenticalCallsStopTheRun) {
  TempDir t;
  auto s = std::make_shared<Script>();
  for (int i = 0; i < 5; ++i) s->add(reply({call("get_history", json::object())}));
  const RunOut r = run_with(base_options(t), s);
  EXPECT_EQ(s->requests.size(), 3u);
  EXPECT_EQ(r.summary["agent"]["stop_reason"], "repeated_call");
  EXPECT_NE(r.summary["agent"]["stop_detail"].get<std::string>().find("get_history"), std::string::npos);
  const auto ev = event_lines(r);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_FALSE(ev[0].contains("error"));
  EXPECT_FALSE(ev[1].contains("error"));
  EXPECT_TRUE(ev[2].contains("error")) << "the third identical call is not executed";
}

TEST(AgentLoop, ATruncatedReplyIsNeverExecuted) {
  TempDir t;
  auto s = std::make_shared<Script>();
  ChatResponse cut = reply({call("evaluate_candidate", eval_args("repaired.cu", "vadd_repaired"))});
  cut.truncated = true;
  cut.finish_reason = "length";
  s->add(cut);
  s->add(text("stopping"));
  const RunOut r = run_with(base_options(t), s);
  ASSERT_EQ(s->requests.size(), 2u);
  EXPECT_EQ(r.history["attempts"].size(), 1u) << "the truncated call was not evaluated";
  EXPECT_TRUE(r.events.empty());
  bool told = false;
  for (const auto& m : s->requests[1].messages) {
    EXPECT_TRUE(m.tool_calls.empty()) << "no tool call of the cut reply stays in the transcript";
    told |= m.role == Role::user && m.content.find("cut off") != std::string::npos;
  }
  EXPECT_TRUE(told);
}

TEST(AgentLoop, TruncatedRepliesInARowStop) {
  TempDir t;
  auto s = std::make_shared<Script>();
  for (int i = 0; i < 5; ++i) {
    ChatResponse cut = text("partial...");
    cut.truncated = true;
    cut.finish_reason = "length";
    s->add(cut);
  }
  const RunOut r = run_with(base_options(t), s);
  EXPECT_EQ(s->requests.size(), 3u);
  EXPECT_EQ(r.summary["agent"]["stop_reason"], "truncated");
}

TEST(AgentLoop, ARefusalEndsTheRunCleanly) {
  TempDir t;
  auto s = std::make_shared<Script>();
  ChatResponse no = text("");
  no.refusal = "I can't help with that.";
  s->add(no);
  s->add(text("never asked"));
  const RunOut r = run_with(base_options(t), s);
  EXPECT_EQ(r.code, 77);
  EXPECT_EQ(s->requests.size(), 1u);
  EXPECT_EQ(r.summary["agent"]["stop_reason"], "refusal");
  EXPECT_NE(r.summary["agent"]["stop_detail"].get<std::string>().find("I can't help"), std::string::npos);
  EXPECT_TRUE(stdfs::exists(r.dir / "report.html"));
  EXPECT_EQ(read_json(r.dir / "agent" / "call-0001.json")["refusal"], "I can't help with that.");
}

TEST(AgentLoop, ContextLengthErrorTrimsHistoryAndRetries) {
  TempDir t;
  auto s = std::make_shared<Script>();
  s->add(reply({call("get_history", json::object())}));
  s->add(reply({call("read_optimization_notes", {{"topic", "coalescing"}})}));
  s->add(Step([](const ChatRequest&) -> ChatResponse {
    throw LlmError(LlmError::Kind::context_length, 400, "maximum context length exceeded");
  }));
  s->add(text("done"));
  const RunOut r = run_with(base_options(t), s);
  ASSERT_EQ(s->requests.size(), 4u);
  EXPECT_EQ(r.summary["agent"]["stop_reason"], "model_finished");
  const auto before = tool_results(s->requests[2]);
  const auto after = tool_results(s->requests[3]);
  ASSERT_EQ(before.size(), 2u);
  ASSERT_EQ(after.size(), 2u);
  EXPECT_NE(before[0], "[trimmed to save context]");
  EXPECT_EQ(after[0], "[trimmed to save context]");
  EXPECT_EQ(after[1], before[1]) << "the latest result is kept";
  EXPECT_EQ(count_calls(r.dir), 4) << "the failed call is saved too";
  const json failed = read_json(r.dir / "agent" / "call-0003.json");
  EXPECT_EQ(failed["error"]["kind"], "context_length");
  EXPECT_EQ(r.summary["agent"]["model_turns"], 3) << "a retry after trimming is not a turn";
}

TEST(AgentLoop, ContextLengthThatCannotBeTrimmedStops) {
  TempDir t;
  auto s = std::make_shared<Script>();
  for (int i = 0; i < 3; ++i)
    s->add(Step([](const ChatRequest&) -> ChatResponse {
      throw LlmError(LlmError::Kind::context_length, 400, "too long");
    }));
  const RunOut r = run_with(base_options(t), s);
  EXPECT_EQ(s->requests.size(), 1u);
  EXPECT_EQ(r.summary["agent"]["stop_reason"], "context_length");
}

TEST(AgentLoop, OtherApiErrorsEndTheRunWithExitCode3) {
  TempDir t;
  auto s = std::make_shared<Script>();
  s->add(Step([](const ChatRequest&) -> ChatResponse { throw LlmError(LlmError::Kind::auth, 401, "invalid key"); }));
  const RunOut r = run_with(base_options(t), s);
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.summary["agent"]["stop_reason"], "llm_error");
  EXPECT_TRUE(stdfs::exists(r.dir / "history.json"));
}

TEST(AgentLoop, IterationBudgetCountsModelTurns) {
  auto s = note_reads(4);
  const RunOut r = run_adjusted(s, [](auto& o) { o.budget.evaluations = 2; });
  EXPECT_EQ(s->requests.size(), 2u);
  EXPECT_EQ(r.summary["agent"]["stop_reason"], "max_iterations");
  EXPECT_EQ(r.summary["budget_used"]["model_turns"], 2);
}

TEST(AgentLoop, RepairBudgetStopsAfterConsecutiveFailures) {
  TempDir t;
  auto s = std::make_shared<Script>();
  s->add(reply({call("evaluate_candidate", eval_args("broken.cu", "vadd_broken"))}));
  json a2 = eval_args("broken.cu", "vadd_broken");
  a2["source"] = a2["source"].get<std::string>() + "\n// second try\n";
  s->add(reply({call("evaluate_candidate", a2)}));
  s->add(reply({call("evaluate_candidate", eval_args("repaired.cu", "vadd_repaired"))}));
  auto o = base_options(t);
  o.agent.max_repairs = 1;
  const RunOut r = run_with(o, s);
  EXPECT_EQ(s->requests.size(), 2u);
  EXPECT_EQ(r.summary["agent"]["stop_reason"], "max_repairs");
  EXPECT_EQ(verdicts(r), (std::vector<std::string>{"compiled", "compile_error", "compile_error"}));
}

TEST(AgentLoop, TokenBudgetStopsBeforeTheNextTurn) {
  auto s = note_reads(3);
  const RunOut r = run_adjusted(s, [](auto& o) { o.budget.tokens = 200; });  // each reply reports 150 tokens
  EXPECT_EQ(s->requests.size(), 2u);
  EXPECT_EQ(r.summary["agent"]["stop_reason"], "token_budget");
  EXPECT_EQ(r.summary["agent"]["usage"]["total_tokens"], 300);
}

TEST(AgentLoop, ForcedToolChoiceStillEndsWithinBudget) {
  auto s = evaluations(4);
  const RunOut r = run_adjusted(s, [](auto& o) {
    o.budget.evaluations = 2;
    o.agent.tool_choice = "evaluate_candidate";
  });
  ASSERT_EQ(s->requests.size(), 2u);
  for (const auto& rq : s->requests) EXPECT_EQ(rq.tool_choice, "evaluate_candidate");
  EXPECT_EQ(r.summary["agent"]["stop_reason"], "max_iterations");
  EXPECT_EQ(verdicts(r), (std::vector<std::string>{"compiled", "compiled", "compiled"}));
}

// The agent honours patience: the driver's stop condition counts the
// evaluations without a faster kernel, and the conversation reads what is
// left of it before each turn.
TEST(AgentLoop, PatienceEndsTheLoopAfterEvaluationsWithoutImprovement) {
  auto s = evaluations(6);
  // With a GPU every candidate is ok at 1 ms: only the first one improves.
  const RunOut r = run_adjusted(s, [](auto& o) { o.budget.patience = 2; }, /*gpu=*/true);
  EXPECT_EQ(s->requests.size(), 3u);
  EXPECT_EQ(r.summary["agent"]["stop_reason"], "patience") << r.summary["agent"].dump();
  EXPECT_EQ(verdicts(r), (std::vector<std::string>{"ok", "ok", "ok", "ok"}));
  EXPECT_EQ(r.summary["budget"]["patience"], 2);
  // The model was told.
  EXPECT_NE(s->requests[0].messages[0].content.find("the run stops after 2 evaluations in a row without a faster "
                                                    "kernel"),
            std::string::npos);
  const json fb = json::parse(tool_results(s->requests[2]).back());
  EXPECT_EQ(fb["budget_left"]["evaluations_without_improvement_left"], 1) << fb.dump();
}

// Model turns are an item of their own (turns=T); without it the agent may
// take as many turns as evaluations.
TEST(AgentLoop, ModelTurnsAndEvaluationsAreSeparateItems) {
  {
    auto s = note_reads(3);
    const RunOut r = run_adjusted(s, [](auto& o) { o.budget.model_turns = 2; });
    EXPECT_EQ(s->requests.size(), 2u);
    EXPECT_EQ(r.summary["agent"]["stop_reason"], "max_iterations");
    EXPECT_NE(s->requests[0].messages[0].content.find("at most 2 model turns and 10 evaluations"), std::string::npos)
        << s->requests[0].messages[0].content;
    EXPECT_EQ(r.summary["budget"]["model_turns"], 2);
  }
  {
    auto s = evaluations(3);
    const RunOut r = run_adjusted(s, [](auto& o) {
      o.budget.evaluations = 1;
      o.budget.model_turns = 5;
    });
    EXPECT_EQ(s->requests.size(), 1u) << "no turn once the evaluations are spent";
    EXPECT_EQ(r.summary["agent"]["stop_reason"], "max_evaluations");
    EXPECT_EQ(verdicts(r), (std::vector<std::string>{"compiled", "compiled"}));
  }
}

TEST(AgentLoop, PatienceAloneDoesNotBoundTheConversation) {
  TempDir t;
  auto s = std::make_shared<Script>();
  auto o = base_options(t);
  o.budget = {};
  o.budget.patience = 3;
  try {
    run_with(o, s);
    FAIL() << "expected kopt.agent.103";
  } catch (const kopt::UsageError& e) {
    EXPECT_EQ(e.id(), "kopt.agent.103") << e.what();
  }
  EXPECT_TRUE(s->requests.empty());
}

TEST(AgentLoop, BadOptionsAreUsageErrorsBeforeAnyCall) {
  TempDir t;
  auto s = std::make_shared<Script>();
  auto o = base_options(t);
  o.agent.tool_choice = "launch_rockets";
  EXPECT_THROW(run_with(o, s), kopt::UsageError);
  o = base_options(t);
  o.agent.tool_choice = "propose_template";  // hybrid only
  EXPECT_THROW(run_with(o, s), kopt::UsageError);
  o = base_options(t);
  o.budget.evaluations = 0;
  EXPECT_THROW(run_with(o, s), kopt::UsageError);
  o = base_options(t);
  o.spec.clear();
  EXPECT_THROW(run_with(o, s), kopt::UsageError);
  EXPECT_TRUE(s->requests.empty());
}

TEST(AgentLoop, WithAGpuCandidatesAreCheckedAndTheBestIsWritten) {
  TempDir t;  // the fake worker stands in for the GPU: every candidate "ok", 1 ms
  auto s = std::make_shared<Script>();
  s->add(reply({call("get_device_properties", json::object())}));
  json a = eval_args("faster.cu", "vadd_vec4", {{"grid", {"max(1, ceil_div(N / 4, 256))"}}, {"block", {256}}});
  a["case_launch"] = {{"n1", {{"grid", {1}}, {"block", {32}}}}};
  s->add(reply({call("evaluate_candidate", a)}));
  s->add(reply({call("profile_candidate", a)}));
  s->add(text("done"));
  const RunOut r = run_with(base_options(t, /*gpu=*/true), s);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(verdicts(r), (std::vector<std::string>{"ok", "ok"}));
  EXPECT_NE(tool_results(s->requests[1])[0].find("\"sm_count\""), std::string::npos);
  const json fb = json::parse(tool_results(s->requests[2]).back());
  EXPECT_EQ(fb["verdict"], "ok");
  EXPECT_TRUE(fb.contains("geomean_ms"));
  EXPECT_TRUE(fb.contains("cases"));
  const json prof = json::parse(tool_results(s->requests[3]).back());
  EXPECT_EQ(prof["available"], false) << prof.dump();
  EXPECT_NE(prof["reason"].get<std::string>().find("profiling unavailable"), std::string::npos);
  ASSERT_TRUE(stdfs::exists(r.dir / "best.cu"));
  const std::string best = kopt::fs::read_file(r.dir / "best.cu");
  EXPECT_NE(best.find("// kopt:entry"), std::string::npos);
  // The recorded kernel carries its launch, with the per-case override folded in.
  const std::string k = kopt::fs::read_file(r.dir / "candidates" / "0002" / "kernel.cu");
  EXPECT_NE(k.find("// kopt:entry vadd_vec4"), std::string::npos);
  EXPECT_NE(k.find("N == 1"), std::string::npos) << k;
  EXPECT_TRUE(r.summary.contains("final_best"));
}

TEST(AgentLoop, ProfileRunsNcuOnTheCandidateAndParsesItsCsv) {
  // A stand-in ncu first in PATH: keeps its arguments, writes a real Nsight
  // Compute 2025 CSV to its --log-file, and runs the worker command it wraps.
  TempDir t;
  const stdfs::path bin = t.path() / "bin";
  stdfs::create_directories(bin);
  kopt::fs::write_file_atomic(
      bin / "ncu", "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"" + (t.path() / "ncu.args").string() +
                       "\"\nlog=\nwhile [ $# -gt 0 ]; do\n  case \"$1\" in\n    --log-file) log=$2; shift 2 ;;\n    \"" +
                       std::string(KOPT_FAKE_WORKER) + "\") break ;;\n    *) shift ;;\n  esac\ndone\ncat \"" +
                       std::string(KOPT_TEST_DATA_DIR) + "/ncu/h200_vadd_vec4_details.txt\" > \"$log\"\nexec \"$@\"\n");
  stdfs::permissions(bin / "ncu", stdfs::perms::owner_all);
  const std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", (bin.string() + ":" + old_path).c_str(), 1);
  auto s = std::make_shared<Script>();
  json a = eval_args("faster.cu", "vadd_vec4", {{"grid", {"max(1, ceil_div(N / 4, 256))"}}, {"block", {256}}});
  s->add(reply({call("profile_candidate", a)}));
  s->add(text("done"));
  const RunOut r = run_with(base_options(t, /*gpu=*/true), s);
  ::setenv("PATH", old_path.c_str(), 1);
  EXPECT_EQ(r.code, 0);
  const json prof = json::parse(tool_results(s->requests[1]).back());
  EXPECT_EQ(prof["available"], true) << prof.dump();
  EXPECT_TRUE(prof.contains("metrics")) << prof.dump();
  EXPECT_TRUE(prof.contains("case")) << prof.dump();
  EXPECT_TRUE(stdfs::exists(r.dir / "agent" / "profile-0001" / "kernel.cu"));
  EXPECT_TRUE(stdfs::exists(r.dir / "agent" / "profile-0001" / "ncu.txt"));
  const std::string args = kopt::fs::read_file(t.path() / "ncu.args");
  EXPECT_NE(args.find("--clock-control\nnone\n"), std::string::npos) << args;
  EXPECT_NE(args.find("-k\nvadd_vec4\n"), std::string::npos) << args;
  // ncu wraps the run's worker (the plan's command line), its report going to a file.
  EXPECT_NE(args.find("--log-file\n" + (r.dir / "agent" / "profile-0001" / "ncu.txt").string() + "\n" +
                      KOPT_FAKE_WORKER + "\n"),
            std::string::npos)
      << args;
}

/// propose_template's arguments: the vadd template over BS and ITEMS (5 valid configurations).
json vadd_template_args() {
  return {{"source", kopt::fs::read_file(kData + "template.cu")},
          {"entry", "vadd_tmpl"},
          {"launch", {{"grid", {"ceil_div(N, BS * ITEMS)"}}, {"block", {"BS"}}}},
          {"params", {{"BS", {128, 256}}, {"ITEMS", {1, 2, 4}}}},
          {"constraints", {"BS * ITEMS <= 512"}}};
}

/// A hybrid run's script: the model proposes the vadd template, then says it is done.
std::shared_ptr<Script> vadd_template_script() {
  auto s = std::make_shared<Script>();
  s->add(reply({call("propose_template", vadd_template_args())}));
  s->add(text("done"));
  return s;
}

/// Options of a hybrid run whose search evaluates up to 4 of a template's configurations.
kopt::driver::OptimizeOptions hybrid_options(const TempDir& t) {
  auto o = base_options(t);
  o.strategy = "hybrid";
  o.agent.template_evaluations = 4;
  return o;
}

TEST(AgentLoop, HybridTemplatesAreTunedByTheSearch) {
  TempDir t;
  auto s = vadd_template_script();
  auto o = hybrid_options(t);
  const RunOut r = run_with(o, s);
  const auto& at = r.history["attempts"];
  ASSERT_EQ(at.size(), 5u) << r.history.dump();  // the initial kernel + 4 of the 5 valid configurations
  for (size_t i = 1; i < at.size(); ++i) {
    EXPECT_EQ(at[i]["verdict"], "compiled");
    EXPECT_EQ(at[i]["label"].get<std::string>().rfind("hybrid-1:", 0), 0u);
    EXPECT_LE(at[i]["params"]["BS"].get<int>() * at[i]["params"]["ITEMS"].get<int>(), 512);
  }
  const json res = json::parse(tool_results(s->requests[1]).back());
  EXPECT_EQ(res["valid_configurations"], 5);
  EXPECT_EQ(res["evaluated"], 4);
  EXPECT_EQ(r.summary["strategy"], "hybrid");
}

// evals=N counts every evaluation of the run, a template's configurations
// too: the driver's stop condition ends the template's search at the limit,
// and the conversation stops with the item as its reason.
TEST(AgentLoop, HybridTemplateConfigurationsCountAgainstTheEvaluations) {
  TempDir t;
  auto s = vadd_template_script();
  auto o = hybrid_options(t);
  o.budget.evaluations = 2;
  o.budget.model_turns = 10;
  const RunOut r = run_with(o, s);
  EXPECT_EQ(r.history["attempts"].size(), 3u) << r.history.dump();  // the initial kernel + 2 configurations
  EXPECT_EQ(s->requests.size(), 1u);
  EXPECT_EQ(r.summary["agent"]["stop_reason"], "max_evaluations") << r.summary["agent"].dump();
}

// ---------------------------------------------------------------------------
// fetch_url: the agent's libcurl client against a local page server

TEST(AgentTools, FetchUrlGetsPagesAsTextWithinTheCaps) {
  LoopbackServer srv([](httplib::Server& svr) {
    svr.Get("/guide", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("<html><head><style>p { color: red; }</style><script>var x = 1 < 2;</script></head>"
                      "<body><h1>Coalescing</h1>\n\n<p>Adjacent threads &amp; adjacent &lt;addresses&gt;.</p>"
                      "</body></html>",
                      "text/html");
    });
    svr.Get("/moved", [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/guide"); });
    svr.Get("/huge", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(5000000, 'x'), "text/plain");
    });
  });
  const int port = srv.port();
  const std::string base = srv.url();

  TempDir t;
  auto s = std::make_shared<Script>();
  s->add(reply({call("fetch_url", {{"url", base + "/guide"}}), call("fetch_url", {{"url", base + "/moved"}}),
                call("fetch_url", {{"url", base + "/huge"}}), call("fetch_url", {{"url", "file:///etc/passwd"}})}));
  s->add(text("done"));
  auto o = base_options(t);
  o.agent.allow_doc_fetch = true;
  // The page server is on loopback: allowed, and exempt from the address check (testing only).
  o.agent.doc_fetch_allow = {"http://127.0.0.1:" + std::to_string(port)};
  o.agent.doc_fetch_unchecked_endpoints = {"127.0.0.1:" + std::to_string(port)};
  const RunOut r = run_with(o, s);
  srv.stop();
  EXPECT_EQ(r.code, 77);
  ASSERT_EQ(s->requests.size(), 2u);
  const auto res = tool_results(s->requests[1]);
  ASSERT_EQ(res.size(), 4u);
  for (int i = 0; i < 2; ++i) {
    const json page = json::parse(res[i]);
    ASSERT_TRUE(page.contains("text")) << page.dump();
    const std::string text = page["text"];
    EXPECT_NE(text.find("Coalescing"), std::string::npos) << text;
    EXPECT_NE(text.find("Adjacent threads & adjacent <addresses>."), std::string::npos) << text;
    EXPECT_EQ(text.find("color"), std::string::npos) << "styles are dropped: " << text;
    EXPECT_EQ(text.find("var x"), std::string::npos) << "scripts are dropped: " << text;
  }
  EXPECT_NE(json::parse(res[2]).value("error", "").find("fetch failed"), std::string::npos) << res[2];
  EXPECT_NE(json::parse(res[3]).value("error", "").find("only http(s) URLs"), std::string::npos) << res[3];
}

/// A page server on 127.0.0.1 for fetch_url: /guide (a page), /to?u=URL (a
/// redirect to URL); counts the requests for /guide.
class PageServer {
 public:
  int port() const { return server_.port(); }
  std::string endpoint() const { return server_.endpoint(); }
  std::string url(const std::string& path) const { return server_.url(path); }
  int guide_hits() const { return guide_hits_; }

 private:
  std::atomic<int> guide_hits_{0};
  LoopbackServer server_{[this](httplib::Server& svr) {
    svr.Get("/guide", [this](const httplib::Request&, httplib::Response& res) {
      ++guide_hits_;
      res.set_content("<p>Coalescing</p>", "text/html");
    });
    svr.Get("/to", [](const httplib::Request& req, httplib::Response& res) {
      res.set_redirect(req.get_param_value("u"));
    });
  }};
};

/// The fetch_url results the model got for `urls` (one turn), with `o` set up by `setup`.
std::vector<json> fetch_results(const std::vector<std::string>& urls,
                                const std::function<void(kopt::driver::OptimizeOptions&)>& setup) {
  TempDir t;
  auto s = std::make_shared<Script>();
  std::vector<ToolCall> calls;
  for (const auto& u : urls) calls.push_back(call("fetch_url", {{"url", u}}));
  s->add(reply(calls));
  s->add(text("done"));
  auto o = base_options(t);
  o.agent.allow_doc_fetch = true;
  setup(o);
  const RunOut r = run_with(o, s);
  std::vector<json> out;
  if (s->requests.size() < 2) return out;
  for (const auto& res : tool_results(s->requests[1])) out.push_back(json::parse(res));
  return out;
}

std::string error_of(const json& result) { return result.value("error", std::string("(no error: ") + result.dump() + ")"); }

TEST(AgentTools, FetchUrlRefusesHostsOffTheAllowlistWithAMessageTheModelSees) {
  const auto res = fetch_results({"https://evil.example.com/x", "http://docs.nvidia.com/cuda/", "https://u:p@docs.nvidia.com/",
                                  "https://docs.nvidia.com:8443/"},
                                 [](kopt::driver::OptimizeOptions&) {});
  ASSERT_EQ(res.size(), 4u);
  EXPECT_NE(error_of(res[0]).find("fetch refused: 'evil.example.com' is not on the documentation allowlist (docs.nvidia.com"),
            std::string::npos) << error_of(res[0]);
  EXPECT_NE(error_of(res[0]).find("--doc-fetch-allow"), std::string::npos);
  EXPECT_NE(error_of(res[1]).find("plain http:// is not allowed for 'docs.nvidia.com'"), std::string::npos) << error_of(res[1]);
  EXPECT_NE(error_of(res[2]).find("must not carry credentials"), std::string::npos) << error_of(res[2]);
  EXPECT_NE(error_of(res[3]).find("port 8443 is not allowed"), std::string::npos) << error_of(res[3]);
}

TEST(AgentTools, FetchUrlRefusesLoopbackEvenWhenTheHostIsAllowed) {
  PageServer srv;
  const auto res = fetch_results({srv.url("/guide"), "http://localhost:" + std::to_string(srv.port()) + "/guide"},
                                 [&](kopt::driver::OptimizeOptions& o) {
                                   o.agent.doc_fetch_allow = {"http://" + srv.endpoint(),
                                                              "http://localhost:" + std::to_string(srv.port())};
                                 });
  ASSERT_EQ(res.size(), 2u);
  EXPECT_NE(error_of(res[0]).find("fetch refused: 127.0.0.1 is a loopback address"), std::string::npos) << error_of(res[0]);
  EXPECT_NE(error_of(res[1]).find("'localhost' resolves to "), std::string::npos) << error_of(res[1]);
  EXPECT_EQ(srv.guide_hits(), 0) << "nothing was fetched";
}

TEST(AgentTools, FetchUrlChecksEveryRedirect) {
  PageServer srv;
  const std::string lo = "http://localhost:" + std::to_string(srv.port()) + "/guide";
  const auto res = fetch_results(
      {srv.url("/to?u=" + lo), srv.url("/to?u=http://169.254.169.254/latest/meta-data/"),
       srv.url("/to?u=https://evil.example.com/"), srv.url("/to?u=/guide"), srv.url("/to?u=/to%3Fu%3D/to%253Fu%253D/guide")},
      [&](kopt::driver::OptimizeOptions& o) {
        o.agent.doc_fetch_allow = {"http://" + srv.endpoint(), "http://localhost:" + std::to_string(srv.port()),
                                   "http://169.254.169.254"};
        o.agent.doc_fetch_unchecked_endpoints = {srv.endpoint()};  // the first hop only
      });
  ASSERT_EQ(res.size(), 5u);
  EXPECT_NE(error_of(res[0]).find("fetch refused: redirect 1 to " + lo + ": 'localhost' resolves to "), std::string::npos)
      << error_of(res[0]);
  EXPECT_NE(error_of(res[1]).find("169.254.169.254 is a link-local address"), std::string::npos) << error_of(res[1]);
  EXPECT_NE(error_of(res[2]).find("'evil.example.com' is not on the documentation allowlist"), std::string::npos)
      << error_of(res[2]);
  // A redirect that stays on the allowed server is followed (relative Location, and two in a row).
  EXPECT_EQ(res[3].value("text", ""), " Coalescing ") << res[3].dump();
  EXPECT_EQ(res[3].value("url", ""), srv.url("/guide"));
  EXPECT_EQ(res[4].value("text", ""), " Coalescing ") << res[4].dump();
  EXPECT_EQ(srv.guide_hits(), 2) << "only the allowed hops were fetched";
}

// The connection is pinned to the checked addresses and each socket's address
// is checked again: DNS asked twice cannot hand out another address.
TEST(AgentHttp, GetIsPinnedAndGuarded) {
  PageServer srv;
  namespace http = kopt::agent::http;
  http::GetOptions pinned;
  pinned.resolve = {"pinned.invalid:" + std::to_string(srv.port()) + ":127.0.0.1"};  // .invalid never resolves
  pinned.use_proxy = false;
  const http::Result ok = http::get("http://pinned.invalid:" + std::to_string(srv.port()) + "/guide", pinned);
  EXPECT_TRUE(ok.ok()) << ok.error;
  EXPECT_EQ(ok.body, "<p>Coalescing</p>");
  http::GetOptions guarded = pinned;
  guarded.allow_connect = [](const struct sockaddr* a) {
    return kopt::agent::docfetch::classify(a) == kopt::agent::docfetch::AddressClass::public_address;
  };
  const http::Result refused = http::get("http://pinned.invalid:" + std::to_string(srv.port()) + "/guide", guarded);
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(refused.refused_address, "127.0.0.1");
  EXPECT_EQ(srv.guide_hits(), 1);
  http::GetOptions manual;
  manual.follow_redirects = false;
  manual.use_proxy = false;
  const http::Result moved = http::get(srv.url("/to?u=/guide"), manual);
  EXPECT_TRUE(moved.ok()) << moved.error;
  EXPECT_EQ(moved.status, 302);
  EXPECT_EQ(moved.redirect_url, srv.url("/guide")) << "absolute, for the caller to check";
  EXPECT_EQ(srv.guide_hits(), 1);
}

// ---------------------------------------------------------------------------
// End to end: the real client against a fake OpenAI-compatible server

json chat_tool_reply(const std::string& name, const json& args, int n) {
  return {{"id", "chatcmpl-" + std::to_string(n)},
          {"object", "chat.completion"},
          {"created", 0},
          {"model", "fake-model"},
          {"choices",
           {{{"index", 0},
             {"message",
              {{"role", "assistant"},
               {"content", nullptr},
               {"tool_calls",
                {{{"id", "call_" + std::to_string(n)},
                  {"type", "function"},
                  {"function", {{"name", name}, {"arguments", args.dump()}}}}}}}},
             {"finish_reason", "tool_calls"}}}},
          {"usage", {{"prompt_tokens", 1000 + n}, {"completion_tokens", 200}, {"total_tokens", 1200 + n}}}};
}

json chat_text_reply(const std::string& text, int n) {
  return {{"id", "chatcmpl-" + std::to_string(n)},
          {"object", "chat.completion"},
          {"created", 0},
          {"model", "fake-model"},
          {"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", text}}}, {"finish_reason", "stop"}}}},
          {"usage", {{"prompt_tokens", 1000 + n}, {"completion_tokens", 20}, {"total_tokens", 1020 + n}}}};
}

kopt::driver::OptimizeOptions real_client_options(const TempDir& t, const FakeServer& srv) {
  auto o = base_options(t);
  o.agent.llm_base_url = srv.base_url();
  o.agent.llm_api = "chat";
  o.agent.llm_model = "fake-model";
  o.agent.llm_timeout_s = 30;
  return o;
}

void expect_no_key_anywhere(const stdfs::path& dir) {
  for (const auto& e : stdfs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) {
      EXPECT_EQ(kopt::fs::read_file(e.path()).find(kSentinel), std::string::npos) << e.path();
    }
}

TEST(AgentE2E, FailThenRepairThenFasterAgainstAFakeServer) {
  TempDir t;
  FakeServer srv({chat_tool_reply("evaluate_candidate", eval_args("broken.cu", "vadd_broken"), 1),
                  chat_tool_reply("evaluate_candidate", eval_args("repaired.cu", "vadd_repaired"), 2),
                  chat_tool_reply("evaluate_candidate",
                                  eval_args("faster.cu", "vadd_vec4", {{"grid", {"max(1, ceil_div(N / 4, 256))", 1, 1}},
                                                                       {"block", {256, 1, 1}}, {"shared_bytes", 0}}),
                                  3),
                  chat_text_reply("The vectorized kernel is the best I have.", 4)});
  auto o = real_client_options(t, srv);
  stdfs::path dir;
  testing::internal::CaptureStdout();
  const int code = kopt::driver::optimize(o, &dir);
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(code, 77) << "no GPU: compiled only";
  ASSERT_FALSE(dir.empty());
  EXPECT_EQ(json::parse(out)["agent"]["calls"], 4) << "stdout is summary.json";

  // The run folder: every attempt, the search's format.
  for (const char* f : {"spec.json", "device.json", "run.json", "history.json", "summary.json", "heatmap.svg",
                        "report.html", "agent/events.jsonl"})
    EXPECT_TRUE(stdfs::exists(dir / f)) << f;
  const json h = read_json(dir / "history.json");
  ASSERT_EQ(h["attempts"].size(), 4u);
  EXPECT_EQ(h["attempts"][0]["kind"], "initial");
  const std::vector<std::pair<std::string, std::string>> want = {
      {"agent-1", "compile_error"}, {"agent-2", "compiled"}, {"agent-3", "compiled"}};
  for (size_t i = 0; i < want.size(); ++i) {
    const json& a = h["attempts"][i + 1];
    EXPECT_EQ(a["kind"], "candidate");
    EXPECT_EQ(a["label"], want[i].first);
    EXPECT_EQ(a["verdict"], want[i].second);
    char buf[16];
    std::snprintf(buf, sizeof buf, "%04d", a["index"].get<int>());
    EXPECT_TRUE(stdfs::exists(dir / "candidates" / buf / "kernel.cu"));
    EXPECT_TRUE(stdfs::exists(dir / "candidates" / buf / "result.json"));
  }
  EXPECT_NE(kopt::fs::read_file(dir / "candidates" / "0002" / "compile.log").find("undeclared_value"), std::string::npos);

  // The model saw the compile error and repaired it.
  const auto bodies = srv.bodies();
  ASSERT_EQ(bodies.size(), 4u);
  EXPECT_NE(bodies[1].find("compile_error"), std::string::npos);
  EXPECT_NE(bodies[1].find("undeclared_value"), std::string::npos) << "the compile log goes back to the model";
  const json first = json::parse(bodies[0]);
  EXPECT_EQ(first["model"], "fake-model");
  EXPECT_NE(first.dump().find("vadd_reference"), std::string::npos) << "the prompt has the reference's source";
  EXPECT_NE(first.dump().find("evaluate_candidate"), std::string::npos);

  // Calls saved, the key sent to the server and written nowhere.
  for (const auto& rq : srv.received()) EXPECT_EQ(rq.authorization, "Bearer " + kSentinel);
  EXPECT_EQ(count_calls(dir), 4);
  for (int i = 1; i <= 4; ++i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "call-%04d.json", i);
    const json c = read_json(dir / "agent" / buf);
    for (const char* k : {"request", "response", "usage", "attempts", "elapsed_s"}) EXPECT_TRUE(c.contains(k)) << buf << " " << k;
  }
  expect_no_key_anywhere(dir);

  // Token usage per call and in total.
  const json s = read_json(dir / "summary.json");
  EXPECT_EQ(s["agent"]["calls"], 4);
  EXPECT_EQ(s["agent"]["usage"]["total_tokens"], 1201 + 1202 + 1203 + 1024);
  EXPECT_EQ(s["agent"]["per_call"].size(), 4u);
  EXPECT_EQ(s["agent"]["stop_reason"], "model_finished");
  EXPECT_EQ(s["counts"]["compiled"], 3);
  EXPECT_EQ(s["counts"]["compile_error"], 1);
  const json rj = read_json(dir / "run.json");
  EXPECT_EQ(rj["strategy"], "agent");
  // events.jsonl: one line per executed tool call.
  std::istringstream ev(kopt::fs::read_file(dir / "agent" / "events.jsonl"));
  std::vector<json> lines;
  for (std::string l; std::getline(ev, l);) lines.push_back(json::parse(l));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["tool"], "evaluate_candidate");
  EXPECT_EQ(lines[0]["verdict"], "compile_error");
  EXPECT_EQ(lines[2]["verdict"], "compiled");
  EXPECT_EQ(lines[1]["id"], "call_2");
}

TEST(AgentE2E, FromADescriptionTheModelDraftsAValidatedWorkload) {
  TempDir t;
  json spec = read_json(kData + "vadd.json");
  spec.erase("reference");
  spec.erase("initial");
  spec["reference"] = {{"kind", "kernel"}, {"entry", "vadd_reference"}};
  spec["initial"] = {{"entry", "vadd_initial"}};
  json bad = spec;
  bad["signature"][0]["type"] = "float7";
  const json sub_bad = {{"spec", bad},
                        {"reference_source", kopt::fs::read_file(kData + "reference.cu")},
                        {"initial_source", kopt::fs::read_file(kData + "initial.cu")}};
  const json sub_ok = {{"spec", spec},
                       {"reference_source", kopt::fs::read_file(kData + "reference.cu")},
                       {"initial_source", kopt::fs::read_file(kData + "initial.cu")}};
  FakeServer srv({chat_tool_reply("submit_workload", sub_bad, 1), chat_tool_reply("submit_workload", sub_ok, 2),
                  chat_tool_reply("evaluate_candidate", eval_args("faster.cu", "vadd_vec4", {{"grid", {"max(1, ceil_div(N / 4, 256))"}}, {"block", {256}}}), 3),
                  chat_text_reply("done", 4)});
  auto o = real_client_options(t, srv);
  o.spec.clear();
  o.strategy.clear();  // --description alone means the agent
  o.description = "Add two float vectors elementwise: C = A + B, N elements.";
  stdfs::path dir;
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  o.quiet = false;
  const int code = kopt::driver::optimize(o, &dir);
  testing::internal::GetCapturedStdout();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 77);
  ASSERT_FALSE(dir.empty());
  EXPECT_NE(err.find("it is not an independent oracle"), std::string::npos) << err;

  // The invalid draft's error went back to the model.
  const auto bodies = srv.bodies();
  ASSERT_EQ(bodies.size(), 4u);
  EXPECT_NE(bodies[1].find("kopt.spec.108"), std::string::npos) << bodies[1].substr(0, 3000);
  EXPECT_NE(json::parse(bodies[0]).dump().find("submit_workload"), std::string::npos);
  EXPECT_EQ(json::parse(bodies[0]).dump().find("\"evaluate_candidate\""), std::string::npos)
      << "drafting offers submit_workload, not the optimization tools";

  // spec.generated.json validates, with its kernels beside it, and is the run's workload.
  ASSERT_TRUE(stdfs::exists(dir / "spec.generated.json"));
  EXPECT_TRUE(stdfs::exists(dir / "reference.cu"));
  EXPECT_TRUE(stdfs::exists(dir / "initial.cu"));
  const kopt::spec::Spec s = kopt::spec::load_spec(dir / "spec.generated.json");
  EXPECT_EQ(s.reference.kernel.source, dir / "reference.cu");
  EXPECT_EQ(kopt::spec::load_spec(dir / "spec.json").reference.kernel.source, dir / "reference.cu");
  EXPECT_EQ(count_calls(dir), 4) << "the drafting calls moved into the run folder";
  for (const auto& e : stdfs::directory_iterator(t.path() / "results"))
    EXPECT_EQ(e.path().filename().string().rfind("agent-draft-", 0), std::string::npos) << "no staging folder left";
  const json h = read_json(dir / "history.json");
  ASSERT_EQ(h["attempts"].size(), 2u);
  EXPECT_EQ(h["attempts"][1]["label"], "agent-1");
  EXPECT_EQ(h["attempts"][1]["verdict"], "compiled");
  const json sum = read_json(dir / "summary.json");
  EXPECT_NE(sum["agent"]["warning"].get<std::string>().find("not an independent oracle"), std::string::npos);
  expect_no_key_anywhere(dir);
  // The run resumes with its generated spec (run.json's hash matches the rewritten spec.json).
  EXPECT_NO_THROW(kopt::store::RunStore::open(dir, ""));
}

// ---------------------------------------------------------------------------
// Credentials in the base URL: used for the requests, written nowhere

const std::string kUrlPassword = "PW-URL-SENTINEL-4e8a1c";
const std::string kUrlQueryKey = "QK-URL-SENTINEL-90d3f2";

/// http://kopt-user:<password>@127.0.0.1:<port>/v1?api_key=<key>
std::string secret_base_url(const FakeServer& srv) {
  return "http://kopt-user:" + kUrlPassword + "@127.0.0.1:" + std::to_string(srv.port()) + "/v1?api_key=" + kUrlQueryKey;
}

/// Neither URL sentinel in any file under `dir` nor in `texts`.
void expect_no_url_secret(const stdfs::path& dir, const std::vector<std::string>& texts) {
  int files = 0;
  for (const auto& e : stdfs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) {
      ++files;
      const std::string text = kopt::fs::read_file(e.path());
      EXPECT_EQ(text.find(kUrlPassword), std::string::npos) << e.path();
      EXPECT_EQ(text.find(kUrlQueryKey), std::string::npos) << e.path();
    }
  EXPECT_GT(files, 5) << dir;
  for (const auto& t : texts) {
    EXPECT_EQ(t.find(kUrlPassword), std::string::npos) << t;
    EXPECT_EQ(t.find(kUrlQueryKey), std::string::npos) << t;
  }
}

TEST(AgentE2E, CredentialsInTheBaseUrlAreWrittenNowhere) {
  TempDir t;
  // A run that works: the requests carry the real URL.
  {
    FakeServer srv({chat_tool_reply("evaluate_candidate", eval_args("repaired.cu", "vadd_repaired"), 1),
                    chat_text_reply("done", 2)});
    auto o = real_client_options(t, srv);
    o.agent.llm_base_url = secret_base_url(srv);
    o.quiet = false;
    stdfs::path dir;
    testing::internal::CaptureStdout();
    testing::internal::CaptureStderr();
    const int code = kopt::driver::optimize(o, &dir);
    const std::string out = testing::internal::GetCapturedStdout();
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(code, 77);
    ASSERT_FALSE(dir.empty());
    std::vector<std::string> api_key_params;  // the api_key query parameter of each request
    for (const auto& rq : srv.received()) api_key_params.push_back(rq.param("api_key"));
    EXPECT_EQ(api_key_params, (std::vector<std::string>{kUrlQueryKey, kUrlQueryKey})) << "the real URL is used";
    expect_no_url_secret(dir, {out, err});
    expect_no_key_anywhere(dir);
  }
  // A run whose API calls fail: the error quotes the endpoint, without its credentials.
  {
    FakeServer srv(std::vector<json>{});  // every call: HTTP 400
    auto o = real_client_options(t, srv);
    o.agent.llm_base_url = secret_base_url(srv);
    o.quiet = false;
    stdfs::path dir;
    testing::internal::CaptureStdout();
    testing::internal::CaptureStderr();
    const int code = kopt::driver::optimize(o, &dir);
    const std::string out = testing::internal::GetCapturedStdout();
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(code, 3) << err;
    ASSERT_FALSE(dir.empty());
    const json sum = read_json(dir / "summary.json");
    const std::string shown = "POST http://127.0.0.1:" + std::to_string(srv.port()) + "/v1/chat/completions?api_key=[REDACTED]";
    EXPECT_NE(sum["agent"]["stop_detail"].get<std::string>().find(shown), std::string::npos) << sum.dump(1);
    EXPECT_NE(err.find("agent stops: [kopt.agent.013] " + shown), std::string::npos) << err;
    EXPECT_NE(kopt::fs::read_file(dir / "agent" / "call-0001.json").find(shown), std::string::npos);
    EXPECT_NE(kopt::fs::read_file(dir / "report.html").find("api_key=[REDACTED]"), std::string::npos);
    expect_no_url_secret(dir, {out, err});
  }
}

// The same through the command line, with OPENAI_BASE_URL.
TEST(AgentE2E, CredentialsInOpenAiBaseUrlAreNotPrintedByTheCli) {
  TempDir t;
  FakeServer srv(std::vector<json>{});  // every call fails: the URL is quoted in the error
  const std::string cmd = "cd " + t.path().string() + " && OPENAI_API_KEY=" + kSentinel + " OPENAI_BASE_URL='" +
                          secret_base_url(srv) + "' OPENAI_MODEL=fake-model KOPT_LLM_API=chat " + KOPT_CLI +
                          " optimize --spec " + kData + "vadd.json --strategy agent --arch sm_90 --max-iterations 2 " +
                          "--results-dir " + (t.path() / "results").string() + " --cache-dir " +
                          (t.path() / "cache").string() + " --worker-command '" + KOPT_FAKE_WORKER + " --no-device'" +
                          " >" + (t.path() / "out.txt").string() + " 2>" + (t.path() / "err.txt").string();
  const int st = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 3);
  const std::string out = kopt::fs::read_file(t.path() / "out.txt");
  const std::string err = kopt::fs::read_file(t.path() / "err.txt");
  EXPECT_NE(err.find("v1/chat/completions?api_key=[REDACTED]"), std::string::npos) << err;
  EXPECT_NE(out.find("\"stop_detail\""), std::string::npos) << "stdout is summary.json: " << out;
  expect_no_url_secret(t.path(), {});  // the run folder, stdout and stderr (out.txt, err.txt) alike
  expect_no_key_anywhere(t.path());
}

TEST(AgentCli, UsageErrorsExitWith2) {
  auto run = [](const std::string& args) {
    const int st = std::system((std::string(KOPT_CLI) + " " + args + " >/dev/null 2>&1").c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  };
  EXPECT_EQ(run("optimize --strategy agent --arch sm_90"), 2) << "neither --spec nor --description";
  EXPECT_EQ(run("optimize --spec " + kData + "vadd.json --strategy agent --llm-tool-choice launch_rockets"), 2);
  EXPECT_EQ(run("optimize --spec " + kData + "vadd.json --strategy agent --llm-api grpc"), 2);
  EXPECT_EQ(run("optimize --description x --strategy random"), 2);
  EXPECT_EQ(run("optimize --spec " + kData + "vadd.json --strategy agent --doc-fetch-allow docs.example.com"), 2)
      << "--doc-fetch-allow needs --allow-doc-fetch";
  EXPECT_EQ(run("optimize --spec " + kData + "vadd.json --strategy agent --allow-doc-fetch --doc-fetch-allow a/b"), 2);
  EXPECT_EQ(run("optimize --spec " + kData + "vadd.json --strategy agent --allow-doc-fetch "
                "--doc-fetch-allow ok.example --doc-fetch-allow 'bad host'"), 2);
}

}  // namespace
