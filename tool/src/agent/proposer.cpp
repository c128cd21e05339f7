#include "agent/proposer.h"

#include <iostream>

#include "agent/session.h"

namespace kopt::agent {
namespace {

/// Fulfilled once the conversation has stopped (one of the agent's limits,
/// the model finishing, an API error); its status is the reason.
class ConversationStopped final : public search::StopCondition {
 public:
  explicit ConversationStopped(const Session& s) : s_(s) {}
  void update(const search::Observation&) override {}
  bool fulfilled() const override { return s_.stopped(); }
  std::string status() const override { return s_.stopped() ? s_.stop_detail() : "agent running"; }

 private:
  const Session& s_;
};

}  // namespace

AgentProposer::AgentProposer(const RunOptions& run, const AgentOptions& agent, std::unique_ptr<LlmClient> client)
    : run_(run), agent_(agent), client_(std::move(client)),
      session_(std::make_unique<Session>(run_, agent_, *client_)) {}

AgentProposer::~AgentProposer() { finish(); }

std::vector<std::unique_ptr<search::StopCondition>> AgentProposer::stop_conditions() {
  std::vector<std::unique_ptr<search::StopCondition>> stops;
  stops.push_back(std::make_unique<ConversationStopped>(*session_));
  return stops;
}

nlohmann::json AgentProposer::budget_json(const model::Budget& b) const {
  nlohmann::json j = b.to_json();
  j["max_repairs"] = agent_.max_repairs;
  return j;
}

std::optional<std::filesystem::path> AgentProposer::draft_workload(const propose::DraftContext& context) {
  return session_->draft(context);
}

void AgentProposer::start(propose::EvaluationService& service) {
  session_->attach(service, bridge_);
  conversation_ = std::thread([this] {
    std::exception_ptr error;
    try {
      session_->converse_optimize();
    } catch (const Stopped&) {
      session_->stop_for_driver();
    } catch (...) {
      error = std::current_exception();
    }
    bridge_.ended(error);
  });
}

void AgentProposer::finish() {
  if (finished_) return;
  finished_ = true;
  bridge_.stop();
  if (conversation_.joinable()) {
    conversation_.join();
    session_->report_end();
  }
}

nlohmann::json AgentProposer::summary() const { return session_->summary(); }

std::optional<int> AgentProposer::exit_code() const {
  if (session_->stop_code() == "llm_error") return 3;
  return std::nullopt;
}

}  // namespace kopt::agent
