// One agent run (see agent.h): the conversation loop, the budgets, the run
// folder's agent/ files, and the state the tools (agent/tools/) work on.
// Internal to the agent: callers use agent::optimize.
#pragma once

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
#include "cuda/nvrtc.h"
#include "eval/evaluator.h"
#include "model/attempt.h"
#include "model/device_info.h"
#include "run/store.h"
#include "spec/spec.h"

namespace kopt::agent {

class Session {
 public:
  Session(const opt::OptimizeOptions& o, LlmClient& client, bool hybrid);
  ~Session();

  /// The whole run: drafting (description only), the initial kernel, the
  /// conversation, the summary. Returns optimize()'s exit code.
  int run(std::filesystem::path* run_dir);

  // --- what the tools read ------------------------------------------------
  const opt::OptimizeOptions& options() const { return o_; }
  const AgentOptions& agent_options() const { return ao_; }
  /// The workload (set once drafted or loaded).
  const spec::Spec& spec() const { return *spec_; }
  const std::optional<model::DeviceInfo>& device() const { return device_; }
  const std::string& arch() const { return arch_; }
  bool compile_only() const { return compile_only_; }
  /// The run folder's store; null while drafting.
  const run::RunStore* store() const { return store_ ? &*store_ : nullptr; }
  /// <run>/agent (while drafting: the staging folder's agent/).
  const std::filesystem::path& agent_dir() const { return agent_dir_; }
  /// Description-only mode: where the drafted workload is written.
  const std::filesystem::path& staging_dir() const { return staging_; }
  std::optional<double> reference_geomean() const { return reference_geomean_; }
  std::optional<double> initial_geomean() const { return initial_geomean_; }
  /// -D constants of the device for template constraints (MAX_SHARED_PER_BLOCK...).
  spec::Bindings device_constants() const;

  // --- budgets and stopping ----------------------------------------------
  /// Ends the loop after the current turn (the first reason given is kept).
  void stop(const std::string& code, const std::string& detail);
  bool stopped() const { return !stop_code_.empty(); }
  const std::string& stop_detail() const { return stop_detail_; }
  bool time_up() const { return max_minutes_ > 0 && seconds_since(t0_) / 60.0 >= max_minutes_; }
  double max_minutes() const { return max_minutes_; }
  /// The iteration budget (model turns and evaluate_candidate evaluations; 0: none).
  int64_t max_turns() const { return max_turns_; }
  bool evaluations_spent() const { return max_turns_ > 0 && evaluations_ >= max_turns_; }
  /// What is left of every budget, as the tools report it.
  nlohmann::json budget_left() const;
  /// Counts a failed (or, resetting the count, a good) candidate; stops the
  /// run past --max-repairs; adds "stopping" and "budget_left" to `result`.
  void count_failure(bool failed, nlohmann::json& result);

  // --- what the tools do --------------------------------------------------
  /// The number of evaluate_candidate candidates so far (labels "agent-N").
  int agent_count() const { return agent_count_; }
  /// One more evaluate_candidate candidate, counted against the budget.
  void count_agent_evaluation() {
    ++agent_count_;
    ++evaluations_;
  }
  /// The next profile's number (folders agent/profile-NNNN).
  int next_profile() { return ++profile_count_; }
  /// Compiles (and, with a GPU, checks and times) a candidate and records it.
  const model::Attempt& evaluate_and_record(const spec::Candidate& c, const std::string& kind);
  /// propose_template's search: tunes the template (tool arguments `a`) over
  /// `params` under `constraints`, at most `budget` configurations.
  nlohmann::json tune_template(const nlohmann::json& a, const std::vector<spec::TuningParam>& params,
                               const std::vector<spec::Expr>& constraints, int budget);
  /// submit_workload accepted the drafted workload: drafting ends.
  void accept_workload(spec::Spec s) {
    spec_ = std::move(s);
    drafted_ = true;
  }

 private:
  // --- setup and phases (session.cpp)
  bool draft();
  void open_evaluator();
  void open_store(std::filesystem::path* run_dir);
  void evaluate_initial();
  void converse(const std::string& phase);
  int finish();

  // --- one model turn
  void turn();
  nlohmann::json execute(const ToolCall& tc);
  std::string choice_for(const std::vector<ToolDef>& tools) const;
  void save_call(const ChatRequest& rq, const ChatResponse* resp, const LlmError* err, double elapsed);
  void append_event(const nlohmann::json& e);

  model::Result compile_only_result(const cuda::CompileResult& cr) const;
  std::string optimize_prompt() const;
  std::pair<std::string, spec::Launch> entry_and_launch(const model::Attempt& a) const;

  const opt::OptimizeOptions& o_;
  const AgentOptions& ao_;
  LlmClient& client_;
  bool hybrid_;
  Clock::time_point t0_;
  std::string api_key_;
  int64_t max_turns_ = 0;
  double max_minutes_ = 0;

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

  std::optional<spec::Spec> spec_;
  std::unique_ptr<eval::Evaluator> ev_;
  std::optional<model::DeviceInfo> device_;
  std::string arch_, no_device_;
  bool compile_only_ = false;
  std::optional<run::RunStore> store_;
  std::optional<double> reference_geomean_, initial_geomean_;
  std::vector<model::CaseResult> reference_cases_;
  std::map<int, std::pair<std::string, spec::Launch>> launches_;
  int agent_count_ = 0, template_count_ = 0, profile_count_ = 0;

  // description-only mode
  std::filesystem::path staging_;
  bool drafted_ = false;
  std::filesystem::path generated_spec_;
};

}  // namespace kopt::agent
