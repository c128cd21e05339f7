#include "propose/search_proposer.h"

#include <chrono>
#include <cstddef>

#include "util/error.h"

namespace kopt::propose {

SearchProposer::SearchProposer(SearchProposerOptions options) : o_(std::move(options)) {}

void SearchProposer::prepare(const spec::Bindings& device_constants) {
  space_ = std::make_unique<search::Space>(o_.params, o_.constraints, device_constants);
  if (o_.only) *space_ = space_->restricted_to(o_.only, "not a recorded configuration");
  // Counted by a depth-first search with pruning: exactly where the space can
  // be enumerated, within a bounded effort beyond (nullopt: too many to count).
  const uint64_t size = space_->cartesian_size();
  valid_size_ = space_->count_valid(size <= search::kEnumerationLimit ? 0 : kCountEffort);
  if (!valid_size_ || *valid_size_ == 0) space_->check_not_empty();  // kopt.space.701 when empty
  strategy_name_ = o_.strategy.empty() ? search::default_strategy(valid_size_, size) : o_.strategy;
  strategy_ = search::make_strategy(strategy_name_);
  strategy_->initialize(*space_, o_.seed);
  if (!o_.seeds.empty() && accepted_.empty() && not_used_.empty()) check_seeds();
}

void SearchProposer::not_used(const std::string& kind, const std::string& at, const std::string& reason) {
  Group& g = not_used_[kind];
  if (g.count++ == 0) {
    g.first_at = at;
    g.first_reason = reason;
  }
}

void SearchProposer::check_seeds() {
  for (const Seed& s : o_.seeds) {
    if (!s.skip.empty()) {
      not_used(s.skip_kind.empty() ? "not used" : s.skip_kind, s.origin, s.skip);
      continue;
    }
    if (std::optional<std::string> why = space_->check_config(s.config)) {
      not_used("not in the space", s.origin, *why);
      continue;
    }
    const std::string key = search::config_key(s.config);
    if (auto it = seed_keys_.find(key); it != seed_keys_.end()) {
      not_used("listed twice", s.origin, "the configuration of " + it->second);
      continue;
    }
    if (o_.max_seeds > 0 && static_cast<int64_t>(accepted_.size()) >= o_.max_seeds) {
      not_used("over the seeds' share", s.origin,
               "at most " + std::to_string(o_.max_seeds) + " seed(s)" +
                   (o_.max_seeds_why.empty() ? std::string() : ", " + o_.max_seeds_why));
      continue;
    }
    seed_keys_[key] = s.origin;
    accepted_.push_back(s);
  }
}

void SearchProposer::report_seeds() {
  seeds_reported_ = true;
  const std::string from = o_.seeds_from.empty() ? std::string("warm start") : o_.seeds_from;
  const std::string about = o_.seeds_about.empty() ? "" : " (" + o_.seeds_about + ")";
  seed_report_.push_back(from + about + ": " + std::to_string(accepted_.size()) + " of " + std::to_string(o_.seeds.size()) +
                         " configuration(s) are in the space and are " +
                         (compile_only_ ? "compiled first (no GPU: nothing is evaluated), then the "
                                        : "evaluated first, then the ") +
                         strategy_name_ + " search goes on");
  for (const auto& [kind, g] : not_used_)
    seed_report_.push_back(from + ": " + std::to_string(g.count) + " not used, " + kind + " (first: " + g.first_at +
                           ": " + g.first_reason + ")");
  if (o_.note)
    for (const std::string& line : seed_report_) o_.note(line);
}

void SearchProposer::start(EvaluationService& service) {
  compile_only_ = service.compile_only();
  if (!strategy_) prepare(service.device_constants());
}

void SearchProposer::observe_recorded(const model::Attempt& a) {
  search::Config cfg;  // the attempt's values of the space's parameters
  for (const auto& p : space_->params())
    if (auto it = a.params.find(p.name); it != a.params.end()) cfg[p.name] = it->second;
  const std::string key = search::config_key(cfg);
  known_.insert(key);
  // A seed that a previous session of the run evaluated is not tried again,
  // nor reported as tried first.
  if (seed_keys_.count(key)) {
    for (size_t i = next_seed_; i < accepted_.size(); ++i)
      if (search::config_key(accepted_[i].config) == key) {
        not_used("already recorded in this run", accepted_[i].origin, "a previous session of the run evaluated it");
        accepted_.erase(accepted_.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
  }
  learn_latencies(a);
  strategy_->observe({a.params, a.result.verdict == model::Verdict::ok, a.result.geomean_ms.value_or(0)});
}

void SearchProposer::learn_latencies(const model::Attempt& a) {
  if (o_.screen_factor.value_or(0) <= 0 || a.result.verdict != model::Verdict::ok) return;
  screened_cases_ += model::fold_fastest_medians(a, best_case_ms_);
}

bool SearchProposer::before_start(spec::Candidate& cand) {
  if (o_.screen_factor.value_or(0) <= 0) return true;
  for (const auto& [name, ms] : best_case_ms_) {
    cand.screen_ms[name] = ms * *o_.screen_factor;
    cand.screen_median_ms[name] = ms * kScreenMedianFactor;
  }
  return true;
}

std::optional<Proposal> SearchProposer::offer(const search::Config& cfg) {
  ++proposed_;
  spec::Candidate c = o_.base;
  for (const auto& [k, v] : cfg) c.params[k] = v;
  c.label = o_.label_prefix + search::config_key(cfg);
  outcomes_.push_back({cfg, 0, {}});
  if (o_.precheck)
    if (std::optional<std::string> why = o_.precheck(c)) {
      outcomes_.back().rejected = *why;
      strategy_->observe({cfg, false, 0});
      return std::nullopt;
    }
  pending_[search::config_key(cfg)] = outcomes_.size() - 1;
  return Proposal::of(std::move(c));
}

Proposal SearchProposer::propose() {
  if (!seeds_reported_ && !o_.seeds.empty()) report_seeds();
  // The warm start's configurations first, those a resumed run has not recorded yet.
  while (next_seed_ < accepted_.size() && (o_.max_proposals <= 0 || proposed_ < o_.max_proposals)) {
    const Seed& s = accepted_[next_seed_++];
    if (known_.count(search::config_key(s.config))) {
      not_used("already recorded in this run", s.origin, "a previous session of the run evaluated it");
      continue;
    }
    if (std::optional<Proposal> p = offer(s.config)) return std::move(*p);
  }
  while (o_.max_proposals <= 0 || proposed_ < o_.max_proposals) {
    std::optional<search::Config> cfg = strategy_->next();
    if (!cfg) break;
    // A seed: proposed already (or about to be observed); its result reaches the strategy as the seed's.
    if (seed_keys_.count(search::config_key(*cfg))) continue;
    if (std::optional<Proposal> p = offer(*cfg)) return std::move(*p);
  }
  return pending_.empty() ? Proposal::done() : Proposal::wait();
}

void SearchProposer::observe(const spec::Candidate& c, const model::Attempt& a) {
  search::Config cfg;  // the candidate's values of the space's parameters
  for (const auto& p : space_->params())
    if (auto it = c.params.find(p.name); it != c.params.end()) cfg[p.name] = it->second;
  known_.insert(search::config_key(cfg));
  if (auto it = pending_.find(search::config_key(cfg)); it != pending_.end()) {
    outcomes_[it->second].attempt = a.index;
    pending_.erase(it);
  }
  learn_latencies(a);
  const bool ok = a.result.verdict == model::Verdict::ok || a.result.verdict == model::Verdict::compiled;
  // Scores rank ok results; a compile-only run has none, so all tie.
  strategy_->observe({cfg, ok, a.result.geomean_ms.value_or(1.0)});
}

std::optional<spec::Candidate> SearchProposer::candidate_for(const model::Attempt& a) const {
  if (a.kind != model::AttemptKind::candidate) return std::nullopt;
  spec::Candidate c = o_.base;
  for (const auto& [k, v] : a.params) c.params[k] = v;
  c.label = a.label;
  return c;
}

nlohmann::json SearchProposer::summary() const {
  nlohmann::json j = {{"strategy", strategy_name_},
                      {"valid_configurations", valid_size_ ? nlohmann::json(*valid_size_) : nlohmann::json(nullptr)}};
  if (!o_.seeds.empty()) {
    nlohmann::json groups = nlohmann::json::object();
    for (const auto& [kind, g] : not_used_)
      groups[kind] = {{"count", g.count}, {"first", {{"at", g.first_at}, {"reason", g.first_reason}}}};
    j["warm_start"] = {{"from", o_.seeds_from},
                       {"about", o_.seeds_about},
                       {"entries", o_.seeds.size()},
                       {"tried_first", accepted_.size()},
                       {"not_used", std::move(groups)}};
  }
  if (o_.screen_factor) {
    j["screen_factor"] = *o_.screen_factor;
    j["screened_cases"] = screened_cases_;
  }
  return j;
}

}  // namespace kopt::propose
