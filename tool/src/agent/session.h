// One agent run (see agent.h): the conversation loop, the budgets, the run
// folder's agent/ files, and the state the tools (agent/tools/) work on.
// Internal to the agent: the driver sees it through agent/proposer.h.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/agent.h"
#include "agent/common.h"
#include "agent/llm.h"
#include "model/attempt.h"
#include "model/budget.h"
#include "model/device_info.h"
#include "propose/proposer.h"
#include "spec/candidate.h"
#include "spec/spec.h"

namespace kopt::agent {

class Bridge;

class Session {
 public:
  Session(const RunOptions& o, const AgentOptions& ao, LlmClient& client);
  ~Session();

  /// Description only: drafts the workload in context.staging (the
  /// conversation goes on after it); returns the spec file, or nullopt.
  std::optional<std::filesystem::path> draft(const propose::DraftContext& context);
  /// The run folder is open: the tools read the run through `service` and
  /// evaluate through `bridge`.
  void attach(propose::EvaluationService& service, Bridge& bridge);
  /// The optimization conversation, until a limit, the model or the driver ends it
  /// (on the conversation thread).
  void converse_optimize();
  /// The driver asked for nothing more (Bridge threw Stopped): the stop reason.
  void stop_for_driver();
  /// summary.json's agent keys (after the conversation ended).
  nlohmann::json summary() const;
  /// The closing lines on stderr.
  void report_end() const;

  // --- what the tools read ------------------------------------------------
  const RunOptions& options() const { return o_; }
  const AgentOptions& agent_options() const { return ao_; }
  /// The workload (drafted, or the run's).
  const spec::Spec& spec() const { return svc_ ? svc_->spec() : *spec_; }
  const std::optional<model::DeviceInfo>& device() const { return svc_ ? svc_->device() : draft_.device; }
  const std::string& arch() const { return svc_ ? svc_->arch() : draft_.arch; }
  bool compile_only() const { return !device().has_value(); }
  /// The run (null while drafting).
  const propose::EvaluationService* service() const { return svc_; }
  propose::EvaluationService* service() { return svc_; }
  /// <run>/agent (while drafting: the staging folder's agent/).
  const std::filesystem::path& agent_dir() const { return agent_dir_; }
  /// Description-only mode: where the drafted workload is written.
  const std::filesystem::path& staging_dir() const { return draft_.staging; }
  /// Drafting: compiles (and with a GPU self-checks) the drafted kernels.
  nlohmann::json check_workload(const spec::Spec& s) const { return draft_.check_workload(s); }
  std::optional<double> reference_geomean() const { return svc_ ? svc_->reference_geomean_ms() : std::nullopt; }
  std::optional<double> initial_geomean() const { return svc_ ? svc_->initial_geomean_ms() : std::nullopt; }
  /// -D constants of the device for template constraints (MAX_SHARED_PER_BLOCK...).
  spec::Bindings device_constants() const;

  // --- budgets and stopping ----------------------------------------------
  /// Ends the loop after the current turn (the first reason given is kept).
  void stop(const std::string& code, const std::string& detail);
  /// Stopped by a limit, the model, or the driver.
  bool stopped() const;
  const std::string& stop_detail() const { return stop_detail_; }
  const std::string& stop_code() const { return stop_code_; }
  /// The run's budget (model/budget.h): the driver's, or while drafting the
  /// drafting context's.
  const model::Budget& budget() const;
  /// Stops the loop (with the item as its reason) when an item of the budget
  /// is spent: the driver's (evaluations, minutes, patience, read through
  /// the service) and, before a model turn (`before_turn`), the agent's own
  /// model turns and tokens. Returns true when the budget is spent.
  bool budget_spent(bool before_turn);
  /// What is left of every budget, as the tools report it.
  nlohmann::json budget_left() const;
  /// Counts a failed (or, resetting the count, a good) candidate; stops the
  /// run past --max-repairs; adds "stopping" and "budget_left" to `result`.
  void count_failure(bool failed, nlohmann::json& result);

  // --- what the tools do --------------------------------------------------
  /// The number of evaluate_candidate candidates so far (labels "agent-N").
  int agent_count() const { return agent_count_; }
  /// One more evaluate_candidate candidate (the driver counts it against the budget).
  void count_agent_evaluation() {
    ++agent_count_;
    ++evaluations_;
  }
  /// The next profile's number (folders agent/profile-NNNN).
  int next_profile() { return ++profile_count_; }
  /// Has the driver compile (and, with a GPU, check and time) a candidate and
  /// record it; the recorded attempt. Throws Stopped when the run is ending.
  const model::Attempt& evaluate_and_record(const spec::Candidate& c);
  /// propose_template's search: tunes the template (tool arguments `a`) over
  /// `params` under `constraints`, at most `budget` configurations, through
  /// the driver.
  nlohmann::json tune_template(const nlohmann::json& a, const std::vector<spec::TuningParam>& params,
                               const std::vector<spec::Expr>& constraints, int budget);
  /// submit_workload accepted the drafted workload: drafting ends.
  void accept_workload(spec::Spec s) {
    spec_ = std::move(s);
    drafted_ = true;
  }

 private:
  void converse(const std::string& phase);

  // --- one model turn
  void turn();
  nlohmann::json execute(const ToolCall& tc);
  std::string choice_for(const std::vector<ToolDef>& tools) const;
  void save_call(const ChatRequest& rq, const ChatResponse* resp, const LlmError* err, double elapsed);
  void append_event(const nlohmann::json& e);

  std::string optimize_prompt() const;
  std::pair<std::string, spec::Launch> entry_and_launch(const model::Attempt& a) const;

  const RunOptions& o_;
  const AgentOptions& ao_;
  LlmClient& client_;
  bool hybrid_;
  Clock::time_point t0_;  // for budget_used's minutes
  /// What is left of the driver's items (the service's, or while drafting the context's).
  model::BudgetLeft driver_left() const;
  int64_t tokens_used() const;

  std::vector<Message> messages_;
  std::vector<ToolDef> tools_;
  std::string phase_;
  int turns_ = 0, calls_ = 0, evaluations_ = 0, template_evaluations_ = 0, tool_calls_ = 0;
  int consecutive_failures_ = 0, truncated_in_row_ = 0, identical_in_row_ = 0, nudges_ = 0;
  std::string last_call_key_;
  Usage usage_;
  nlohmann::json per_call_ = nlohmann::json::array();
  std::string events_;
  std::filesystem::path agent_dir_;
  std::string stop_code_, stop_detail_;
  std::atomic<bool> stopped_{false};  // stop_code_ set: read by the driver's thread

  propose::EvaluationService* svc_ = nullptr;
  Bridge* bridge_ = nullptr;
  model::Attempt last_;  // the attempt evaluate_and_record returned last
  std::map<int, std::pair<std::string, spec::Launch>> launches_;
  int agent_count_ = 0, template_count_ = 0, profile_count_ = 0;

  // description-only mode
  propose::DraftContext draft_;
  std::optional<spec::Spec> spec_;  // the drafted workload
  bool drafted_ = false;
  std::filesystem::path generated_spec_;
};

}  // namespace kopt::agent
