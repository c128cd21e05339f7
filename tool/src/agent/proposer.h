// The agent as a proposer of the run driver: the conversation (agent/session.h)
// runs on its own thread and hands each candidate over through a Bridge
// (agent/bridge.h); the driver evaluates, records and reports it.
#pragma once

#include <atomic>
#include <memory>
#include <thread>

#include "agent/agent.h"
#include "agent/bridge.h"
#include "propose/proposer.h"

namespace kopt::agent {

class Session;

class AgentProposer final : public propose::Proposer {
 public:
  AgentProposer(const RunOptions& run, const AgentOptions& agent, std::unique_ptr<LlmClient> client);
  ~AgentProposer() override;

  std::string name() const override { return run_.hybrid ? "hybrid" : "agent"; }
  /// The conversation has ended: one of the agent's own limits (model
  /// turns, tokens, repairs, repeated calls, truncated replies), the model,
  /// or an API error. The driver adds the budget's evaluations, minutes and
  /// patience.
  std::vector<std::unique_ptr<search::StopCondition>> stop_conditions() override;
  /// Budget::to_json plus "max_repairs".
  nlohmann::json budget_json(const model::Budget& budget) const override;
  /// No re-timing (the agent's candidates are ranked as measured); without a
  /// GPU every candidate is recorded as compiled, for the model to read.
  propose::FinishPolicy finish_policy() const override { return {false, true}; }
  std::optional<std::filesystem::path> draft_workload(const propose::DraftContext& context) override;
  void start(propose::EvaluationService& service) override;
  void observe_recorded(const model::Attempt&) override {}  // the conversation reads the history
  propose::Proposal propose() override { return bridge_.propose(); }
  void observe(const spec::Candidate& c, const model::Attempt& a) override { bridge_.observe(c, a); }
  void finish() override;
  std::optional<spec::Candidate> candidate_for(const model::Attempt&) const override { return std::nullopt; }
  /// strategy, budget, budget_used, stop and the "agent" block.
  nlohmann::json summary() const override;
  std::optional<int> exit_code() const override;

 private:
  RunOptions run_;
  AgentOptions agent_;
  std::unique_ptr<LlmClient> client_;
  std::unique_ptr<Session> session_;
  Bridge bridge_;
  std::thread conversation_;
  bool finished_ = false;
};

}  // namespace kopt::agent
