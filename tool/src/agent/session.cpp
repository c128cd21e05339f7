// One agent run (see session.h): the phases, the conversation loop, the
// budgets, the run folder's agent/ files.
#include "agent/session.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <set>
#include <sstream>

#include "agent/bridge.h"
#include "agent/candidate.h"
#include "agent/prompts.h"
#include "agent/tools/registry.h"
#include "propose/search_proposer.h"
#include "search/device_constants.h"
#include "spec/annotations.h"
#include "spec/kernel_file.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"

namespace kopt::agent {

namespace stdfs = std::filesystem;
using nlohmann::json;

namespace {


json message_summary(const std::vector<Message>& messages, const std::vector<ToolDef>& tools,
                     const std::string& tool_choice) {
  json msgs = json::array();
  for (const auto& m : messages) {
    json j = {{"role", role_name(m.role)}, {"content", m.content}};
    if (!m.tool_calls.empty()) {
      j["tool_calls"] = json::array();
      for (const auto& tc : m.tool_calls)
        j["tool_calls"].push_back({{"id", tc.id}, {"name", tc.name}, {"arguments", tc.arguments}});
    }
    if (!m.tool_call_id.empty()) j["tool_call_id"] = m.tool_call_id;
    msgs.push_back(std::move(j));
  }
  json names = json::array();
  for (const auto& t : tools) names.push_back(t.name);
  return {{"messages", msgs}, {"tools", names}, {"tool_choice", tool_choice}};
}

}  // namespace

// ---------------------------------------------------------------------------
// Set-up and phases

Session::Session(const RunOptions& o, const AgentOptions& ao, LlmClient& client)
    : o_(o), ao_(ao), client_(client), hybrid_(o.hybrid), t0_(Clock::now()) {}

Session::~Session() = default;

std::optional<stdfs::path> Session::draft(const propose::DraftContext& context) {
  draft_ = context;
  agent_dir_ = draft_.staging / "agent";
  stdfs::create_directories(agent_dir_);
  if (!o_.quiet)
    std::cerr << "kopt: drafting the workload from the description (staging " << draft_.staging.string() << ")\n";
  Message sys = msg(Role::system, draft_prompt(device_text(device(), arch())));
  Message user = msg(Role::user, draft_task(o_.description));
  messages_ = {sys, user};
  converse("draft");
  if (!drafted_) {
    std::cerr << "kopt: the model did not produce a valid workload (" << stop_detail_ << "); its calls are in "
              << agent_dir_.string() << "\n";
    return std::nullopt;
  }
  // The conversation goes on in the run folder, with the optimization brief.
  stop_code_.clear();
  stop_detail_.clear();
  stopped_ = false;
  return draft_.staging / "spec.generated.json";
}

void Session::attach(propose::EvaluationService& service, Bridge& bridge) {
  svc_ = &service;
  bridge_ = &bridge;
  if (drafted_) generated_spec_ = service.run_dir() / "spec.generated.json";
  agent_dir_ = service.run_dir() / "agent";
  stdfs::create_directories(agent_dir_);
  // Keep the events of an earlier session (resume, or drafting) and number calls after them.
  if (stdfs::exists(agent_dir_ / "events.jsonl")) events_ = fs::read_file(agent_dir_ / "events.jsonl", "agent event log", fs::kLogMaxBytes);
  if (calls_ == 0)
    while (stdfs::exists(agent_dir_ / numbered("call-", calls_ + 1, ".json"))) ++calls_;
}

void Session::converse_optimize() {
  // The prompt shows the initial kernel, and a profile never shares the GPU
  // with the driver's own evaluations: the conversation starts once the
  // driver asks for its first candidate.
  bridge_->wait_for_driver();
  converse(hybrid_ ? "hybrid" : "agent");
  // The driver stopped asking (a budget item it enforces ran out while a
  // template was tuned): the reason is the item.
  if (stop_code_.empty()) stop_for_driver();
}

void Session::stop_for_driver() {
  if (!budget_spent(false)) stop("stopped", "the run stopped");
}

bool Session::stopped() const { return stopped_ || (bridge_ && bridge_->stopped()); }

std::string Session::optimize_prompt() const {
  const model::Attempt* best = svc_->best();
  const model::Attempt* cur = best;
  if (!cur)
    for (const auto& a : svc_->history())
      if (a.kind == model::AttemptKind::initial) cur = &a;
  ShownKernel shown;
  if (cur) {
    shown.attempt = cur;
    shown.is_best = best != nullptr;
    std::tie(shown.entry, shown.launch) = entry_and_launch(*cur);
  }
  return agent::optimize_prompt(
      spec(), cur ? &shown : nullptr, reference_geomean(), device_text(device(), arch()),
      rules_text(arch(), compile_only(), hybrid_, budget(), ao_.max_repairs, ao_.template_evaluations));
}

// ---------------------------------------------------------------------------
// The conversation

void Session::stop(const std::string& code, const std::string& detail) {
  if (stop_code_.empty()) {
    stop_code_ = code;
    // Shown on stderr and kept in summary.json and the report: an API error
    // quotes the endpoint, whose credentials must not be.
    stop_detail_ = redact(detail, client_.config());
    stopped_ = true;
    if (!o_.quiet) std::cerr << "kopt: agent stops: " << stop_detail_ << "\n";
  }
}

void Session::converse(const std::string& phase) {
  phase_ = phase;
  tools_ = tool_defs(phase, ao_.allow_doc_fetch);
  if (phase != "draft") {
    const std::string sys = optimize_prompt();
    if (messages_.empty()) {
      messages_.push_back(msg(Role::system, sys));
      messages_.push_back(msg(Role::user, kOptimizeTask));
    } else {
      // After drafting: the same conversation, with the optimization brief.
      messages_[0].content = sys;
      messages_.push_back(msg(Role::user, kOptimizeAfterDraftTask));
    }
  }
  while (!stopped()) {
    if (phase == "draft" && drafted_) return;
    turn();
  }
}

std::string Session::choice_for(const std::vector<ToolDef>& tools) const {
  const std::string& c = ao_.tool_choice;
  if (c.empty()) return "auto";
  if (c == "auto" || c == "required" || c == "none") return c;
  for (const auto& t : tools)
    if (t.name == c) return c;
  return "required";  // the forced tool is not offered in this phase
}

void Session::turn() {
  if (budget_spent(true)) return;

  ChatRequest rq;
  rq.tools = tools_;
  rq.tool_choice = choice_for(tools_);
  rq.max_output_tokens = ao_.max_output_tokens;
  ++turns_;
  ChatResponse resp;
  for (int trims = 0;; ++trims) {
    rq.messages = messages_;
    const auto t = Clock::now();
    try {
      resp = client_.complete(rq);
      save_call(rq, &resp, nullptr, seconds_since(t));
      break;
    } catch (const LlmError& e) {
      save_call(rq, nullptr, &e, seconds_since(t));
      if (e.kind() == LlmError::Kind::context_length) {
        if (trims < 12 && trim_for_context(messages_)) {
          if (!o_.quiet) std::cerr << "kopt: the prompt is too long for the model: trimmed older history, retrying\n";
          continue;
        }
        return stop("context_length", std::string("the prompt is too long for the model even after trimming: ") +
                                           e.what());
      }
      return stop("llm_error", e.what());
    }
  }
  usage_ += resp.usage;
  per_call_.push_back({{"call", calls_}, {"usage", resp.usage.to_json()}});

  if (resp.refusal) {
    Message m = resp.message;
    m.tool_calls.clear();
    if (m.content.empty()) m.content = *resp.refusal;
    messages_.push_back(m);
    if (!o_.quiet) std::cerr << "kopt: the model refused: " << *resp.refusal << "\n";
    return stop("refusal", "the model refused: " + clip(*resp.refusal, 500));
  }
  if (resp.truncated) {
    const size_t dropped = resp.message.tool_calls.size();
    Message m = resp.message;
    m.tool_calls.clear();
    if (m.content.empty()) m.content = "(reply cut off)";
    messages_.push_back(m);
    messages_.push_back(msg(Role::user, "Your previous reply was cut off at the output limit (finish_reason " +
                                         resp.finish_reason + ")" +
                                         (dropped ? "; its " + std::to_string(dropped) + " tool call(s) were NOT executed"
                                                  : std::string("; no tool call was executed")) +
                                         ". Reply again, more briefly: one tool call, a compact kernel."));
    if (++truncated_in_row_ >= ao_.max_truncated)
      stop("truncated", std::to_string(truncated_in_row_) + " truncated replies in a row");
    return;
  }
  truncated_in_row_ = 0;
  messages_.push_back(resp.message);
  if (resp.message.tool_calls.empty()) {
    if (phase_ == "draft") {
      if (++nudges_ > 2) return stop("no_workload", "the model answered without calling submit_workload");
      messages_.push_back(msg(Role::user, "Call submit_workload with the spec, reference_source and initial_source."));
      return;
    }
    return stop("model_finished", "the model ended the run: " + clip(resp.message.content, 300));
  }
  for (const ToolCall& tc : resp.message.tool_calls) {
    Message tm = msg(Role::tool, "");
    tm.tool_call_id = tc.id;
    tm.tool_name = tc.name;
    const std::string key = tc.name + "\n" + (tc.arguments_valid ? tc.parsed.dump() : tc.arguments);
    if (!stopped()) {
      identical_in_row_ = key == last_call_key_ ? identical_in_row_ + 1 : 1;
      last_call_key_ = key;
      if (ao_.identical_call_limit > 0 && identical_in_row_ >= ao_.identical_call_limit)
        stop("repeated_call", "the model called " + tc.name + " with identical arguments " +
                                  std::to_string(identical_in_row_) + " times in a row");
      else {
        tm.content = dump_json(execute(tc));
        messages_.push_back(std::move(tm));
        continue;
      }
    }
    // Not executed (the run is stopping): answered so that the transcript stays well-formed.
    tm.content = dump_json(json{{"error", "not executed: the run is stopping (" + stop_detail_ + ")"}});
    append_event({{"call", calls_}, {"id", tc.id}, {"tool", tc.name}, {"error", "not executed: " + stop_code_}});
    messages_.push_back(std::move(tm));
  }
}

json Session::execute(const ToolCall& tc) {
  ++tool_calls_;
  json ev = {{"call", calls_}, {"id", tc.id}, {"tool", tc.name}};
  const auto t = Clock::now();
  json result;
  try {
    bool offered = false;
    for (const auto& d : tools_) offered |= d.name == tc.name;
    if (!offered) {
      std::string names;
      for (const auto& d : tools_) names += (names.empty() ? "" : ", ") + d.name;
      throw ToolFailure("unknown tool '" + clip(tc.name, 80) + "'; the tools are: " + names);
    }
    const tools::Tool* tool = tools::find(tc.name);
    if (!tool) throw ToolFailure("unknown tool '" + tc.name + "'");
    json args;
    if (tc.arguments_valid) {
      args = tc.parsed;
    } else {
      const bool blank = tc.arguments.find_first_not_of(" \t\r\n") == std::string::npos;
      if (!(blank && tool->takes_no_arguments))
        throw ToolFailure(blank ? "the arguments are empty: " + tc.name + " needs a JSON object of arguments"
                                : "the arguments are not a JSON object: " + clip(tc.arguments, 200));
      args = json::object();
    }
    result = tool->run(*this, args);
    if (result.contains("verdict")) ev["verdict"] = result["verdict"];
    if (result.contains("attempt")) ev["attempt"] = result["attempt"];
    if (result.contains("error")) ev["error"] = result["error"];
  } catch (const ToolFailure& e) {
    result = {{"error", e.what()}};
    ev["error"] = e.what();
  } catch (const SpecError& e) {
    result = {{"error", e.what()}};
    ev["error"] = e.what();
  } catch (const UsageError& e) {
    result = {{"error", e.what()}};
    ev["error"] = e.what();
  } catch (const nlohmann::json::exception& e) {
    result = {{"error", std::string("bad arguments: ") + e.what()}};
    ev["error"] = result["error"];
  }
  ev["elapsed_s"] = seconds_since(t);
  append_event(ev);
  return result;
}

void Session::save_call(const ChatRequest& rq, const ChatResponse* resp, const LlmError* err, double elapsed) {
  ++calls_;
  json j = {{"call", calls_}, {"turn", turns_}, {"phase", phase_}};
  j["request"] = resp && !resp->request.is_null() ? resp->request : message_summary(rq.messages, rq.tools, rq.tool_choice);
  if (resp) {
    j["response"] = resp->response;
    j["usage"] = resp->usage.to_json();
    j["attempts"] = resp->attempts;
    j["finish_reason"] = resp->finish_reason;
    j["truncated"] = resp->truncated;
    if (resp->refusal) j["refusal"] = *resp->refusal;
    if (resp->response.is_null()) j["reply"] = message_summary({resp->message}, {}, "")["messages"][0];
  } else {
    j["response"] = nullptr;
    j["usage"] = Usage{}.to_json();
    j["attempts"] = nullptr;
    j["error"] = {{"kind", llm_error_kind_name(err->kind())}, {"http_status", err->http_status()}, {"message", err->what()}};
  }
  j["elapsed_s"] = elapsed;
  fs::write_file_atomic(agent_dir_ / numbered("call-", calls_, ".json"), redact(dump_json(j, 2), client_.config()) + "\n");
}

void Session::append_event(const json& e) {
  events_ += redact(dump_json(e), client_.config()) + "\n";
  fs::write_file_atomic(agent_dir_ / "events.jsonl", events_);
}

// ---------------------------------------------------------------------------
// Candidates and budgets

const model::Attempt& Session::evaluate_and_record(const spec::Candidate& c) {
  last_ = bridge_->evaluate(c);
  launches_[last_.index] = {c.entry, c.launch ? *c.launch : spec().launch};
  return last_;
}

const model::Budget& Session::budget() const {
  static const model::Budget none;
  if (svc_) return svc_->budget();
  return draft_.budget ? *draft_.budget : none;
}

model::BudgetLeft Session::driver_left() const {
  if (svc_) return svc_->budget_left();
  return draft_.budget_left ? draft_.budget_left() : model::BudgetLeft{};
}

int64_t Session::tokens_used() const {
  return usage_.total_tokens > 0 ? usage_.total_tokens : usage_.input_tokens + usage_.output_tokens;
}

bool Session::budget_spent(bool before_turn) {
  const model::Budget& b = budget();
  if (before_turn && b.turn_limit() > 0 && turns_ >= b.turn_limit()) {
    stop("max_iterations", "reached the limit of " + std::to_string(b.turn_limit()) + " model turns");
    return true;
  }
  if (before_turn && b.tokens > 0 && tokens_used() >= b.tokens) {
    stop("token_budget", "used " + std::to_string(tokens_used()) + " of the token budget of " +
                             std::to_string(b.tokens));
    return true;
  }
  const model::BudgetLeft left = driver_left();
  const std::string spent = left.spent();
  if (spent == "evaluations")
    stop("max_evaluations", "reached the limit of " + std::to_string(b.evaluations) + " evaluations");
  else if (spent == "minutes")
    stop("time_budget", "the time budget of " + fmt(b.minutes) + " min is spent");
  else if (spent == "patience")
    stop("patience", std::to_string(b.patience) + " evaluations in a row without a faster kernel (patience " +
                         std::to_string(b.patience) + ")");
  return !spent.empty();
}

json Session::budget_left() const {
  json b = json::object();
  const model::Budget& limits = budget();
  const model::BudgetLeft left = driver_left();
  if (limits.turn_limit() > 0) b["model_turns"] = std::max<int64_t>(0, limits.turn_limit() - turns_);
  if (left.evaluations) b["evaluations"] = std::max<int64_t>(0, *left.evaluations);
  if (left.minutes) b["minutes"] = std::max(0.0, *left.minutes);
  if (left.patience) b["evaluations_without_improvement_left"] = std::max<int64_t>(0, *left.patience);
  if (limits.tokens > 0) b["tokens"] = std::max<int64_t>(0, limits.tokens - usage_.total_tokens);
  b["failed_in_a_row"] = consecutive_failures_;
  b["repairs_left"] = std::max(0, ao_.max_repairs - std::max(0, consecutive_failures_ - 1));
  return b;
}
void Session::count_failure(bool failed, json& result) {
  consecutive_failures_ = failed ? consecutive_failures_ + 1 : 0;
  if (failed && consecutive_failures_ > ao_.max_repairs) {
    stop("max_repairs", std::to_string(consecutive_failures_) + " failed candidates in a row (--max-repairs " +
                            std::to_string(ao_.max_repairs) + ")");
    result["stopping"] = stop_detail_;
  }
  result["budget_left"] = budget_left();
}

spec::Bindings Session::device_constants() const {
  return search::constraint_constants(spec(), device() ? &*device() : nullptr, arch());
}

json Session::tune_template(const json& a, const std::vector<spec::TuningParam>& params,
                            const std::vector<spec::Expr>& constraints, int budget) {
  std::vector<search::Config> valid;
  try {
    valid = search::Space(params, constraints, device_constants()).enumerate_valid();
  } catch (const Error& e) {
    throw ToolFailure(e.what());
  }
  const int t = ++template_count_;
  propose::SearchProposerOptions so;
  // The template itself: launch checked per configuration.
  so.base = candidate_from_args(spec(), a, "hybrid-" + std::to_string(t), false, valid.front());
  const std::pair<std::string, spec::Launch> base_launch = {so.base.entry, *so.base.launch};
  so.params = params;
  so.constraints = constraints;
  so.strategy = valid.size() <= static_cast<size_t>(budget) ? "exhaustive" : "surrogate";
  so.seed = o_.seed + static_cast<uint64_t>(t);
  so.max_proposals = budget;
  so.label_prefix = "hybrid-" + std::to_string(t) + ":";
  so.precheck = [this](const spec::Candidate& c) -> std::optional<std::string> {
    try {
      validate_launch(spec(), *c.launch, c.params);
    } catch (const ToolFailure& e) {
      return std::string(e.what());
    }
    return std::nullopt;
  };
  propose::SearchProposer search(std::move(so));
  search.prepare(device_constants());
  if (!budget_spent(false)) bridge_->tune(search);  // the driver evaluates and records each configuration

  const auto& history = svc_->history();
  json results = json::array();
  int n = 0, passed = 0;
  std::optional<std::pair<double, json>> best;
  for (const auto& out : search.outcomes()) {
    json row = {{"params", out.config}};
    ++n;
    if (!out.rejected.empty()) {
      row["verdict"] = "invalid_launch";
      row["detail"] = out.rejected;
      results.push_back(row);
      continue;
    }
    if (out.attempt < 1 || static_cast<size_t>(out.attempt) > history.size()) continue;  // never evaluated
    const model::Attempt& at = history[static_cast<size_t>(out.attempt) - 1];
    ++template_evaluations_;
    const bool good = at.result.verdict == model::Verdict::ok || at.result.verdict == model::Verdict::compiled;
    passed += good;
    row["attempt"] = at.index;
    row["verdict"] = model::verdict_name(at.result.verdict);
    if (!good) {
      row["detail"] = clip(at.result.detail, 300);
      if (at.result.verdict == model::Verdict::compile_error) row["compile_log"] = clip(at.result.compile_log, 1500);
    }
    if (at.result.geomean_ms) {
      row["geomean_ms"] = *at.result.geomean_ms;
      if (!best || *at.result.geomean_ms < best->first) best = {{*at.result.geomean_ms, row}};
    }
    launches_[at.index] = base_launch;
    results.push_back(row);
  }
  std::stable_sort(results.begin(), results.end(), [](const json& x, const json& y) {
    const double gx = x.contains("geomean_ms") ? x["geomean_ms"].get<double>() : INFINITY;
    const double gy = y.contains("geomean_ms") ? y["geomean_ms"].get<double>() : INFINITY;
    return gx < gy;
  });
  if (results.size() > 12) results.erase(results.begin() + 12, results.end());
  json r = {{"template", t},
            {"strategy", search.name()},
            {"valid_configurations", valid.size()},
            {"evaluated", n},
            {"passed", passed},
            {"results", results}};
  r["verdict"] = passed ? (compile_only() ? "compiled" : "ok") : "failed";
  if (best) r["best"] = best->second;
  if (const model::Attempt* b = svc_->best())
    r["best_so_far"] = {{"attempt", b->index}, {"label", b->label}, {"geomean_ms", *b->result.geomean_ms}};
  if (compile_only()) r["note"] = "no GPU on this machine: configurations were compiled only, not checked or timed";
  count_failure(passed == 0, r);
  return r;
}

std::pair<std::string, spec::Launch> Session::entry_and_launch(const model::Attempt& a) const {
  if (auto it = launches_.find(a.index); it != launches_.end()) return it->second;
  const spec::Spec& sp = spec();
  std::string entry = sp.initial ? sp.initial->entry : "";
  spec::Launch l = sp.initial && sp.initial->launch ? *sp.initial->launch : sp.launch;
  try {
    const auto ann = spec::parse_annotations(a.source, a.label);
    if (ann.entry) entry = *ann.entry;
    if (ann.grid || ann.block) l = *spec::annotated_launch(ann);
  } catch (const Error&) {
  }
  return {entry, l};
}

json Session::summary() const {
  json agent = {{"calls", calls_},
                {"model_turns", turns_},
                {"tool_calls", tool_calls_},
                {"usage", usage_.to_json()},
                {"per_call", per_call_},
                {"stop_reason", stop_code_},
                {"stop_detail", stop_detail_},
                {"model", client_.config().model},
                {"api", client_.config().resolved_api()},
                {"compile_only", compile_only()},
                {"evaluations", evaluations_},
                {"template_evaluations", template_evaluations_}};
  if (!generated_spec_.empty()) {
    agent["generated_spec"] = generated_spec_.string();
    agent["warning"] = kGeneratedWarning;
  }
  return {{"strategy", hybrid_ ? "hybrid" : "agent"},
          {"budget_used", {{"model_turns", turns_}, {"evaluations", evaluations_ + template_evaluations_},
                           {"minutes", seconds_since(t0_) / 60.0}, {"tokens", usage_.total_tokens}}},
          {"stop", stop_detail_},
          {"agent", agent}};
}

void Session::report_end() const {
  if (!o_.quiet)
    std::cerr << "kopt: agent: " << calls_ << " model call(s), " << usage_.total_tokens << " tokens, "
              << evaluations_ + template_evaluations_ << " candidate(s); stopped: " << stop_detail_ << "\n";
  if (!generated_spec_.empty())
    std::cerr << "kopt: the workload was drafted by the model: review " << generated_spec_.string()
              << " and re-use it with --spec\nkopt: NOTE: " << kGeneratedWarning << "\n";
}

}  // namespace kopt::agent
