#include "propose/search_proposer.h"

#include <chrono>

#include "util/error.h"

namespace kopt::propose {

SearchProposer::SearchProposer(SearchProposerOptions options) : o_(std::move(options)) {}

void SearchProposer::prepare(const spec::Bindings& device_constants) {
  space_ = std::make_unique<search::Space>(o_.params, o_.constraints, device_constants);
  // Counted by a depth-first search with pruning: exactly where the space can
  // be enumerated, within a bounded effort beyond (nullopt: too many to count).
  const uint64_t size = space_->cartesian_size();
  valid_size_ = space_->count_valid(size <= search::kEnumerationLimit ? 0 : kCountEffort);
  if (!valid_size_ || *valid_size_ == 0) space_->check_not_empty();  // kopt.space.701 when empty
  strategy_name_ = o_.strategy.empty() ? search::default_strategy(valid_size_, size) : o_.strategy;
  strategy_ = search::make_strategy(strategy_name_);
  strategy_->initialize(*space_, o_.seed);
}

std::vector<std::unique_ptr<search::StopCondition>> SearchProposer::stop_conditions(const Budget& b) {
  std::vector<std::unique_ptr<search::StopCondition>> stops;
  if (b.evaluations > 0) stops.push_back(search::max_evaluations(b.evaluations));
  if (b.minutes > 0) stops.push_back(search::time_budget(std::chrono::duration<double>(b.minutes * 60)));
  if (b.patience > 0) stops.push_back(search::no_improvement(b.patience));
  return stops;
}

void SearchProposer::start(EvaluationService& service) {
  if (!strategy_) prepare(service.device_constants());
}

void SearchProposer::observe_recorded(const model::Attempt& a) {
  strategy_->observe({a.params, a.result.verdict == model::Verdict::ok, a.result.geomean_ms.value_or(0)});
}

Proposal SearchProposer::propose() {
  while (o_.max_proposals <= 0 || proposed_ < o_.max_proposals) {
    std::optional<search::Config> cfg = strategy_->next();
    if (!cfg) break;
    ++proposed_;
    spec::Candidate c = o_.base;
    for (const auto& [k, v] : *cfg) c.params[k] = v;
    c.label = o_.label_prefix + search::config_key(*cfg);
    outcomes_.push_back({*cfg, 0, {}});
    if (o_.precheck)
      if (std::optional<std::string> why = o_.precheck(c)) {
        outcomes_.back().rejected = *why;
        strategy_->observe({*cfg, false, 0});
        continue;
      }
    pending_[search::config_key(*cfg)] = outcomes_.size() - 1;
    return Proposal::of(std::move(c));
  }
  return pending_.empty() ? Proposal::done() : Proposal::wait();
}

void SearchProposer::observe(const spec::Candidate& c, const model::Attempt& a) {
  search::Config cfg;  // the candidate's values of the space's parameters
  for (const auto& p : space_->params())
    if (auto it = c.params.find(p.name); it != c.params.end()) cfg[p.name] = it->second;
  if (auto it = pending_.find(search::config_key(cfg)); it != pending_.end()) {
    outcomes_[it->second].attempt = a.index;
    pending_.erase(it);
  }
  const bool ok = a.result.verdict == model::Verdict::ok || a.result.verdict == model::Verdict::compiled;
  // Scores rank ok results; a compile-only run has none, so all tie.
  strategy_->observe({cfg, ok, a.result.geomean_ms.value_or(1.0)});
}

std::optional<spec::Candidate> SearchProposer::candidate_for(const model::Attempt& a) const {
  if (a.kind != "candidate") return std::nullopt;
  spec::Candidate c = o_.base;
  for (const auto& [k, v] : a.params) c.params[k] = v;
  c.label = a.label;
  return c;
}

nlohmann::json SearchProposer::summary() const {
  return {{"strategy", strategy_name_},
          {"valid_configurations", valid_size_ ? nlohmann::json(*valid_size_) : nlohmann::json(nullptr)}};
}

}  // namespace kopt::propose
