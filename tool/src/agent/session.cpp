// One agent run (see session.h): the phases, the conversation loop, the
// budgets, the run folder's agent/ files.
#include "agent/session.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <set>
#include <sstream>

#include "agent/candidate.h"
#include "agent/prompts.h"
#include "agent/tools/registry.h"
#include "eval/supervisor.h"
#include "opt/optimizer.h"
#include "report/report.h"
#include "run/fingerprint.h"
#include "search/space.h"
#include "search/strategy.h"
#include "spec/annotations.h"
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

Session::Session(const opt::OptimizeOptions& o, LlmClient& client, bool hybrid)
    : o_(o), ao_(o.agent), client_(client), hybrid_(hybrid), t0_(Clock::now()) {
  api_key_ = client.config().api_key;
  max_turns_ = o.max_evaluations;
  max_minutes_ = o.max_minutes;
}

Session::~Session() = default;

int Session::run(stdfs::path* run_dir) {
  if (o_.spec.empty()) {
    if (!draft()) {
      std::cerr << "kopt: the model did not produce a valid workload (" << stop_detail_ << "); its calls are in "
                << agent_dir_.string() << "\n";
      return stop_code_ == "llm_error" ? 3 : 1;
    }
    open_store(run_dir);
    open_evaluator();
  } else {
    spec_ = opt::load_spec_with_overrides(o_);
    open_evaluator();
    open_store(run_dir);
  }
  evaluate_initial();
  converse(hybrid_ ? "hybrid" : "agent");
  return finish();
}

bool Session::draft() {
  const stdfs::path results = o_.results_dir.empty() ? stdfs::path("results") : o_.results_dir;
  staging_ = stdfs::absolute(results) /
             ("agent-draft-" + std::to_string(::getpid()) + "-" +
              std::to_string(std::chrono::system_clock::now().time_since_epoch().count()));
  agent_dir_ = staging_ / "agent";
  stdfs::create_directories(agent_dir_);
  // The device, for the prompt and to know whether the reference can be run.
  eval::SupervisorOptions so;
  so.worker_argv = o_.worker_argv;
  {
    eval::Supervisor sup(so);
    try {
      device_ = model::DeviceInfo::from_json(sup.hello().at("device"));
    } catch (const NoDeviceError& e) {
      if (o_.arch.empty()) throw;
      compile_only_ = true;
      no_device_ = e.what();
    }
  }
  arch_ = !o_.arch.empty() ? o_.arch : device_->arch();
  if (!o_.quiet) std::cerr << "kopt: drafting the workload from the description (staging " << staging_.string() << ")\n";
  Message sys = msg(Role::system, draft_prompt(device_text(device_, arch_)));
  Message user = msg(Role::user, draft_task(o_.description));
  messages_ = {sys, user};
  converse("draft");
  return drafted_;
}

void Session::open_evaluator() {
  ev_ = std::make_unique<eval::Evaluator>(*spec_, opt::evaluator_options(o_));
  if (!compile_only_) {
    try {
      device_ = ev_->device();
    } catch (const NoDeviceError& e) {
      if (o_.arch.empty()) throw;
      compile_only_ = true;
      no_device_ = e.what();
    }
  }
  arch_ = ev_->arch();
  if (compile_only_ && !o_.quiet)
    std::cerr << "kopt: " << no_device_ << "\nkopt: no GPU: the agent's candidates are compiled for " << arch_
              << " only (verdict 'compiled'); checking and timing need a GPU\n";
}

void Session::open_store(stdfs::path* run_dir) {
  const json spec_json = spec::to_json(*spec_);
  const std::string spec_hash = run::spec_fingerprint(*spec_);
  if (!o_.resume.empty()) {
    store_ = run::RunStore::open(o_.resume, spec_hash);
  } else {
    run::RunInfo info;
    info.spec_hash = spec_hash;
    info.strategy = hybrid_ ? "hybrid" : "agent";
    info.seed = o_.seed;
    info.budget = {{"evaluations", o_.max_evaluations}, {"minutes", o_.max_minutes},
                   {"max_repairs", ao_.max_repairs}, {"token_budget", ao_.token_budget}};
    info.tool_version = KOPT_VERSION;
    const json device_json = device_ ? device_->to_json() : json{{"arch", arch_}};
    store_ = run::RunStore::create(o_.results_dir, spec_json, device_json, info);
  }
  if (run_dir) *run_dir = store_->dir();
  if (!o_.quiet) std::cerr << "kopt: run folder " << store_->dir().string() << "\n";
  if (!o_.description.empty()) fs::write_file_atomic(store_->dir() / "description.txt", o_.description + "\n");
  const stdfs::path agent = store_->dir() / "agent";
  if (!staging_.empty()) {
    // Description-only: the drafted workload and the drafting calls move in.
    std::vector<stdfs::path> entries;
    for (const auto& e : stdfs::directory_iterator(staging_)) entries.push_back(e.path());
    for (const auto& from : entries) {
      const stdfs::path to = store_->dir() / from.filename();
      if (stdfs::exists(to)) stdfs::remove_all(to);
      stdfs::rename(from, to);
    }
    stdfs::remove_all(staging_);
    generated_spec_ = store_->dir() / "spec.generated.json";
    // The spec now names the kernel files beside it, in the run folder:
    // spec.json (and its hash in run.json) are rewritten before any attempt.
    spec_ = spec::load_spec(generated_spec_);
    const json moved = spec::to_json(*spec_);
    const stdfs::path dir = store_->dir();
    json run_json = json::parse(fs::read_file(dir / "run.json"));
    run_json["spec_file_hash"] = run::RunStore::hash_spec(moved);
    fs::write_file_atomic(dir / "spec.json", dump_json(moved, 2) + "\n");
    fs::write_file_atomic(dir / "run.json", dump_json(run_json, 2) + "\n");
    store_ = run::RunStore::open(dir, run::spec_fingerprint(*spec_));
  }
  agent_dir_ = agent;
  stdfs::create_directories(agent_dir_);
  // Keep the events of an earlier session (resume, or drafting) and number calls after them.
  if (stdfs::exists(agent_dir_ / "events.jsonl")) events_ = fs::read_file(agent_dir_ / "events.jsonl");
  if (calls_ == 0)
    while (stdfs::exists(agent_dir_ / numbered("call-", calls_ + 1, ".json"))) ++calls_;
}

void Session::evaluate_initial() {
  for (const auto& a : store_->history()) {
    if (a.kind == "initial") {
      if (a.result.reference_geomean_ms) reference_geomean_ = a.result.reference_geomean_ms;
      if (a.result.verdict == model::Verdict::ok) initial_geomean_ = a.result.geomean_ms;
      reference_cases_ = a.result.cases;
      return;
    }
  }
  if (!spec_->initial) return;
  spec::Candidate c = eval::candidate_from_file(spec_->initial->source);
  c.label = "initial: " + spec_->initial->source.filename().string();
  if (c.entry.empty()) c.entry = spec_->initial->entry;
  if (!c.launch) c.launch = spec_->initial->launch ? *spec_->initial->launch : spec_->launch;
  for (const auto& [k, v] : spec_->initial->defines) c.params[k] = v;
  c.options.insert(c.options.end(), spec_->initial->compile_options.begin(), spec_->initial->compile_options.end());
  if (!o_.quiet)
    std::cerr << "kopt: " << (compile_only_ ? "compiling" : "evaluating") << " the initial kernel"
              << (compile_only_ ? "" : " and timing the reference") << "\n";
  const model::Attempt& a = evaluate_and_record(c, "initial");
  if (a.result.reference_geomean_ms) reference_geomean_ = a.result.reference_geomean_ms;
  if (a.result.verdict == model::Verdict::ok) initial_geomean_ = a.result.geomean_ms;
  reference_cases_ = a.result.cases;
}

std::string Session::optimize_prompt() const {
  const model::Attempt* best = store_->best();
  const model::Attempt* cur = best;
  if (!cur)
    for (const auto& a : store_->history())
      if (a.kind == "initial") cur = &a;
  ShownKernel shown;
  if (cur) {
    shown.attempt = cur;
    shown.is_best = best != nullptr;
    std::tie(shown.entry, shown.launch) = entry_and_launch(*cur);
  }
  return agent::optimize_prompt(
      *spec_, cur ? &shown : nullptr, reference_geomean_, device_text(device_, arch_),
      rules_text(arch_, compile_only_, hybrid_, max_turns_, ao_.max_repairs, ao_.template_evaluations));
}

// ---------------------------------------------------------------------------
// The conversation

void Session::stop(const std::string& code, const std::string& detail) {
  if (stop_code_.empty()) {
    stop_code_ = code;
    stop_detail_ = detail;
    if (!o_.quiet) std::cerr << "kopt: agent stops: " << detail << "\n";
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
  if (max_turns_ > 0 && turns_ >= max_turns_)
    return stop("max_iterations", "reached the limit of " + std::to_string(max_turns_) + " model turns");
  if (ao_.token_budget > 0) {
    const int64_t used = usage_.total_tokens > 0 ? usage_.total_tokens : usage_.input_tokens + usage_.output_tokens;
    if (used >= ao_.token_budget)
      return stop("token_budget", "used " + std::to_string(used) + " of the token budget of " +
                                      std::to_string(ao_.token_budget));
  }
  if (time_up()) return stop("time_budget", "the time budget of " + fmt(max_minutes_) + " min is spent");

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
                                           redact(e.what(), api_key_));
      }
      return stop("llm_error", redact(e.what(), api_key_));
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
  fs::write_file_atomic(agent_dir_ / numbered("call-", calls_, ".json"), redact(dump_json(j, 2), api_key_) + "\n");
}

void Session::append_event(const json& e) {
  events_ += redact(dump_json(e), api_key_) + "\n";
  fs::write_file_atomic(agent_dir_ / "events.jsonl", events_);
}

// ---------------------------------------------------------------------------
// Candidates and budgets

model::Result Session::compile_only_result(const cuda::CompileResult& cr) const {
  model::Result r;
  r.verdict = cr.ok ? model::Verdict::compiled : model::Verdict::compile_error;
  r.detail = cr.ok ? "compiled for " + arch_ + "; not checked or timed (no GPU)"
                   : "compilation failed (" + cr.error_name + ")";
  r.error_name = cr.ok ? "" : cr.error_name;
  r.compile_log = cr.log;
  r.compile_ms = cr.compile_ms;
  r.compile_cache_hit = cr.cache_hit;
  return r;
}

const model::Attempt& Session::evaluate_and_record(const spec::Candidate& c, const std::string& kind) {
  cuda::CompileResult cr = ev_->compile(c);
  model::Result r;
  if (compile_only_) {
    r = compile_only_result(cr);
  } else {
    r = ev_->run(c, cr, kind == "initial");
    if (kind != "initial") {
      for (auto& cs : r.cases)
        for (const auto& rc : reference_cases_)
          if (rc.name == cs.name && rc.reference_latency && !cs.reference_latency) cs.reference_latency = rc.reference_latency;
      if (reference_geomean_ && r.geomean_ms && *r.geomean_ms > 0) {
        r.reference_geomean_ms = reference_geomean_;
        r.speedup = *reference_geomean_ / *r.geomean_ms;
      }
    }
  }
  model::Attempt a;
  a.kind = kind;
  a.label = c.label;
  a.params = c.params;
  a.source = c.source;
  a.compile_options = c.options;
  a.result = std::move(r);
  a.seconds_since_start = seconds_since(t0_);
  store_->record(a);
  const model::Attempt& rec = store_->history().back();
  launches_[rec.index] = {c.entry, c.launch ? *c.launch : spec_->launch};
  if (!o_.quiet) {
    std::cerr << "kopt: [" << rec.index << "] " << rec.label << ": " << model::verdict_name(rec.result.verdict);
    if (rec.result.geomean_ms) std::cerr << ", geomean " << fmt(*rec.result.geomean_ms) << " ms";
    else if (!rec.result.detail.empty()) std::cerr << " - " << clip(rec.result.detail, 160);
    std::cerr << "\n";
  }
  return rec;
}

json Session::budget_left() const {
  json b = json::object();
  if (max_turns_ > 0) {
    b["model_turns"] = std::max<int64_t>(0, max_turns_ - turns_);
    b["evaluations"] = std::max<int64_t>(0, max_turns_ - evaluations_);
  }
  if (max_minutes_ > 0) b["minutes"] = std::max(0.0, max_minutes_ - seconds_since(t0_) / 60.0);
  if (ao_.token_budget > 0) b["tokens"] = std::max<int64_t>(0, ao_.token_budget - usage_.total_tokens);
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
  return opt::device_constants(device_ ? &*device_ : nullptr);
}

json Session::tune_template(const json& a, const std::vector<spec::TuningParam>& params,
                            const std::vector<spec::Expr>& constraints, int budget) {
  std::vector<search::Config> valid;
  std::unique_ptr<search::Space> space;
  try {
    space = std::make_unique<search::Space>(params, constraints, device_constants());
    valid = space->enumerate_valid();
  } catch (const Error& e) {
    throw ToolFailure(e.what());
  }
  const int t = ++template_count_;
  const std::string strategy_name = valid.size() <= static_cast<size_t>(budget) ? "exhaustive" : "surrogate";
  auto strategy = search::make_strategy(strategy_name);
  strategy->initialize(*space, o_.seed + static_cast<uint64_t>(t));
  // The template itself: launch checked per configuration.
  spec::Candidate base = candidate_from_args(*spec_, a, "hybrid-" + std::to_string(t), false, valid.front());
  json results = json::array();
  int n = 0, passed = 0;
  std::optional<std::pair<double, json>> best;
  while (n < budget && !time_up()) {
    auto cfg = strategy->next();
    if (!cfg) break;
    ++n;
    spec::Candidate c = base;
    for (const auto& [k, v] : *cfg) c.params[k] = v;
    c.label = "hybrid-" + std::to_string(t) + ":" + search::config_key(*cfg);
    json row = {{"params", *cfg}};
    try {
      validate_launch(*spec_, *c.launch, c.params);
    } catch (const ToolFailure& e) {
      strategy->observe({*cfg, false, 0});
      row["verdict"] = "invalid_launch";
      row["detail"] = e.what();
      results.push_back(row);
      continue;
    }
    const model::Attempt& at = evaluate_and_record(c, "candidate");
    ++template_evaluations_;
    const bool good = at.result.verdict == model::Verdict::ok || at.result.verdict == model::Verdict::compiled;
    passed += good;
    strategy->observe({*cfg, good, at.result.geomean_ms.value_or(1.0)});
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
    results.push_back(row);
  }
  std::stable_sort(results.begin(), results.end(), [](const json& x, const json& y) {
    const double gx = x.contains("geomean_ms") ? x["geomean_ms"].get<double>() : INFINITY;
    const double gy = y.contains("geomean_ms") ? y["geomean_ms"].get<double>() : INFINITY;
    return gx < gy;
  });
  if (results.size() > 12) results.erase(results.begin() + 12, results.end());
  json r = {{"template", t},
            {"strategy", strategy_name},
            {"valid_configurations", valid.size()},
            {"evaluated", n},
            {"passed", passed},
            {"results", results}};
  r["verdict"] = passed ? (compile_only_ ? "compiled" : "ok") : "failed";
  if (best) r["best"] = best->second;
  if (const model::Attempt* b = store_->best())
    r["best_so_far"] = {{"attempt", b->index}, {"label", b->label}, {"geomean_ms", *b->result.geomean_ms}};
  if (compile_only_) r["note"] = "no GPU on this machine: configurations were compiled only, not checked or timed";
  count_failure(passed == 0, r);
  return r;
}

std::pair<std::string, spec::Launch> Session::entry_and_launch(const model::Attempt& a) const {
  if (auto it = launches_.find(a.index); it != launches_.end()) return it->second;
  std::string entry = spec_->initial ? spec_->initial->entry : "";
  spec::Launch l = spec_->initial && spec_->initial->launch ? *spec_->initial->launch : spec_->launch;
  try {
    const auto ann = spec::parse_annotations(a.source, a.label);
    if (ann.entry) entry = *ann.entry;
    if (ann.grid || ann.block) {
      for (int i = 0; i < 3; ++i) {
        l.grid[i] = ann.grid && static_cast<size_t>(i) < ann.grid->size() ? (*ann.grid)[i] : spec::Expr::constant(1);
        l.block[i] = ann.block && static_cast<size_t>(i) < ann.block->size() ? (*ann.block)[i] : spec::Expr::constant(1);
      }
      l.shared_bytes = ann.shared_bytes ? *ann.shared_bytes : spec::Expr::constant(0);
    }
  } catch (const Error&) {
  }
  return {entry, l};
}

int Session::finish() {
  const model::Attempt* best = store_->best();
  json agent = {{"calls", calls_},
                {"model_turns", turns_},
                {"tool_calls", tool_calls_},
                {"usage", usage_.to_json()},
                {"per_call", per_call_},
                {"stop_reason", stop_code_},
                {"stop_detail", stop_detail_},
                {"model", client_.config().model},
                {"api", client_.config().resolved_api()},
                {"compile_only", compile_only_},
                {"evaluations", evaluations_},
                {"template_evaluations", template_evaluations_}};
  if (!generated_spec_.empty()) {
    agent["generated_spec"] = generated_spec_.string();
    agent["warning"] = kGeneratedWarning;
  }
  json extra = {{"strategy", hybrid_ ? "hybrid" : "agent"},
                {"budget", {{"evaluations", o_.max_evaluations}, {"minutes", o_.max_minutes},
                            {"max_repairs", ao_.max_repairs}, {"token_budget", ao_.token_budget}}},
                {"budget_used", {{"model_turns", turns_}, {"evaluations", evaluations_ + template_evaluations_},
                                 {"minutes", seconds_since(t0_) / 60.0}, {"tokens", usage_.total_tokens}}},
                {"stop", stop_detail_},
                {"agent", agent}};
  if (compile_only_) extra["compile_only"] = {{"arch", arch_}, {"reason", no_device_}};
  if (reference_geomean_) extra["reference_geomean_ms"] = *reference_geomean_;
  if (initial_geomean_) extra["initial_geomean_ms"] = *initial_geomean_;
  if (best && best->result.geomean_ms) {
    json fb = {{"index", best->index}, {"label", best->label}, {"params", best->params},
               {"geomean_ms", *best->result.geomean_ms}};
    if (reference_geomean_) fb["speedup_vs_reference"] = *reference_geomean_ / *best->result.geomean_ms;
    if (initial_geomean_) fb["speedup_vs_initial"] = *initial_geomean_ / *best->result.geomean_ms;
    extra["final_best"] = fb;
  }
  store_->write_summary(extra);
  if (best) {
    const auto [entry, launch] = entry_and_launch(*best);
    store_->write_best(*best, entry, launch_lines(launch));
  }
  std::vector<std::string> perf;
  for (const auto* c : spec_->performance_cases()) perf.push_back(c->name);
  report::write_reports(*store_, perf);

  std::cout << fs::read_file(store_->dir() / "summary.json") << std::flush;
  if (!o_.quiet) {
    std::cerr << "kopt: agent: " << calls_ << " model call(s), " << usage_.total_tokens << " tokens, "
              << evaluations_ + template_evaluations_ << " candidate(s); stopped: " << stop_detail_ << "\n";
    if (best && best->result.geomean_ms)
      std::cerr << "kopt: best " << best->label << ": geomean " << fmt(*best->result.geomean_ms) << " ms"
                << (initial_geomean_ ? ", " + fmt(*initial_geomean_ / *best->result.geomean_ms, 3) + "x the initial kernel" : "")
                << "\n";
    std::cerr << "kopt: run folder " << store_->dir().string() << "\n";
  }
  if (!generated_spec_.empty())
    std::cerr << "kopt: the workload was drafted by the model: review " << generated_spec_.string()
              << " and re-use it with --spec\nkopt: NOTE: " << kGeneratedWarning << "\n";
  if (stop_code_ == "llm_error") return 3;
  if (compile_only_) return 77;
  return best ? 0 : 1;
}


}  // namespace kopt::agent
