#include "propose/class_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <iomanip>
#include <sstream>

#include "util/error.h"

namespace kopt::propose {

ClassSearchProposer::ClassSearchProposer(ClassSearchOptions options) : o_(std::move(options)) {
  if (o_.classes.empty()) throw std::logic_error("ClassSearchProposer: no shape class");
  for (const auto& sc : o_.classes) {
    ClassState c;
    for (size_t m : sc.members) c.cases.push_back(o_.points.at(m).name);
    classes_.push_back(std::move(c));
  }
}

std::string ClassSearchProposer::name() const { return strategy_name_; }

void ClassSearchProposer::prepare(const spec::Bindings& device_constants) {
  constants_ = device_constants;
  SearchProposerOptions first = o_.search;
  first.note = nullptr;  // the space is checked here; the seeds are reported when the class starts
  SearchProposer probe(std::move(first));
  probe.prepare(device_constants);  // kopt.space.701, kopt.search.801 before anything is written
  strategy_name_ = probe.name();    // every class's: they search one space
}

const model::Budget& ClassSearchProposer::budget() const {
  static const model::Budget none;
  return service_ ? service_->budget() : none;
}

double ClassSearchProposer::minutes() const {
  if (service_) return service_->minutes_elapsed();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - created_).count() / 60.0;
}

void ClassSearchProposer::start(EvaluationService& service) {
  service_ = &service;
  if (strategy_name_.empty()) prepare(service.device_constants());
}

std::optional<size_t> ClassSearchProposer::class_of(const model::Attempt& a) const {
  // By its label's prefix ("c2:"): also a candidate that failed part-way
  // through timing, with latencies for some of its cases only.
  for (size_t k = 0; k < classes_.size(); ++k)
    if (a.label.rfind("c" + std::to_string(k + 1) + ":", 0) == 0) return k;
  // Else by the cases it was timed on (screened ones count: their probe).
  const std::vector<std::string> names = model::timed_performance_cases(a);
  for (size_t k = 0; k < classes_.size(); ++k) {
    std::vector<std::string> mine = classes_[k].cases;
    std::sort(mine.begin(), mine.end());
    if (names == mine) return k;
  }
  return std::nullopt;
}

void ClassSearchProposer::learn(ClassState& c, const model::Attempt& a) {
  c.attempts.push_back(a);
  if (a.result.verdict != model::Verdict::ok || !a.result.geomean_ms) {
    ++c.since_improvement;
    return;
  }
  c.screened += model::fold_fastest_medians(a, best_case_ms_);
  if (!c.best_ms || *a.result.geomean_ms < *c.best_ms) {
    c.best_ms = *a.result.geomean_ms;
    c.best_label = a.label;
    c.since_improvement = 0;
  } else {
    ++c.since_improvement;
  }
}

void ClassSearchProposer::observe_recorded(const model::Attempt& a) {
  if (std::optional<size_t> k = class_of(a)) learn(classes_[*k], a);
}

bool ClassSearchProposer::out_of_time(const ClassState& c) const {
  if (c.minutes_share > 0 && minutes() >= c.minutes_start + c.minutes_share) return true;
  return budget().patience > 0 && c.since_improvement >= budget().patience;
}

bool ClassSearchProposer::class_over(ClassState& c) {
  if (c.finished || c.exhausted || c.stopped) return true;
  // Over by time or patience for good: what is still queued is withdrawn
  // (before_start), so a later improvement among it cannot reopen the class.
  if (out_of_time(c)) c.stopped = true;
  if (c.stopped) return true;
  // Proposals still on their way count: the driver compiles ahead.
  return c.share > 0 && static_cast<int64_t>(c.attempts.size()) + pending_ >= c.share;
}

void ClassSearchProposer::begin_class(size_t k) {
  ClassState& c = classes_[k];
  const size_t left = classes_.size() - k;
  // What is left of the run's evaluations (the driver counts them), this
  // class's own recorded ones (a resumed run's) added back.
  if (const std::optional<int64_t> evals_left = service_ ? service_->budget_left().evaluations : std::nullopt) {
    const int64_t before = static_cast<int64_t>(c.attempts.size());
    const int64_t remaining = std::max<int64_t>(*evals_left + before, 0);
    c.share = std::max<int64_t>(remaining / static_cast<int64_t>(left), 1);
  }
  c.minutes_start = minutes();
  if (budget().minutes > 0)
    c.minutes_share = std::max((budget().minutes * o_.search_fraction - c.minutes_start) / static_cast<double>(left),
                               1e-3);
  // Warm start: the user's seeds, then the best of the nearest tuned classes.
  SearchProposerOptions so = o_.search;
  so.seed = o_.search.seed + k;
  so.label_prefix = "c" + std::to_string(k + 1) + ":";
  std::vector<std::pair<double, size_t>> near;
  for (size_t j = 0; j < k; ++j) near.push_back({model::class_distance(o_.points, o_.classes[k], o_.classes[j]), j});
  std::sort(near.begin(), near.end());
  std::set<std::string> names;
  for (const auto& p : o_.search.params) names.insert(p.name);
  int used = 0;
  for (const auto& [d, j] : near) {
    if (used++ >= o_.neighbours) break;
    std::vector<const model::Attempt*> ok;
    for (const auto& a : classes_[j].attempts)
      if (a.result.verdict == model::Verdict::ok && a.result.geomean_ms) ok.push_back(&a);
    std::sort(ok.begin(), ok.end(), [](const model::Attempt* x, const model::Attempt* y) {
      return *x->result.geomean_ms < *y->result.geomean_ms;
    });
    for (size_t i = 0; i < ok.size() && static_cast<int>(i) < o_.seeds_per_neighbour; ++i) {
      Seed s;
      for (const auto& [name, v] : ok[i]->params)
        if (names.count(name)) s.config[name] = v;
      s.origin = "class " + std::to_string(j + 1) + " (" + ok[i]->label + ")";
      so.seeds.push_back(std::move(s));
    }
  }
  if (so.seeds.size() > o_.search.seeds.size()) {
    // "warm start of class 2 (--warm-start w.json, $.tuning.seeds, the best
    // of the nearest tuned classes)"; the file's description was given with class 1.
    so.seeds_from = "warm start of class " + std::to_string(k + 1) + " (" +
                    (o_.search.seeds_from.empty() ? std::string() : o_.search.seeds_from + ", ") +
                    "the best of the nearest tuned classes)";
    so.seeds_about.clear();
  }
  // Seeds may take half of a class's evaluations share, so that a short
  // budget over many classes still searches in each.
  if (c.share > 0) {
    so.max_seeds = std::max<int64_t>(c.share / 2, 1);
    so.max_seeds_why = "half of class " + std::to_string(k + 1) + "'s " + std::to_string(c.share) + " evaluations";
  }
  c.search = std::make_unique<SearchProposer>(std::move(so));
  c.search->prepare(constants_);
  if (service_) c.search->start(*service_);
  for (const auto& a : c.attempts) c.search->observe_recorded(a);
  current_ = k;
}

Proposal ClassSearchProposer::propose() {
  for (;;) {
    if (!current_ || class_over(classes_[*current_])) {
      if (pending_ > 0) return Proposal::wait();  // its results still belong to it
      if (current_) {
        ClassState& done = classes_[*current_];
        done.finished = true;
        done.minutes_end = minutes();
      }
      size_t next = current_ ? *current_ + 1 : 0;
      // A resumed run: a class with a later class's attempts recorded was
      // over in an earlier session (its minutes share would start afresh).
      while (next + 1 < classes_.size()) {
        bool later = false;
        for (size_t j = next + 1; j < classes_.size(); ++j) later = later || !classes_[j].attempts.empty();
        if (!later) break;
        classes_[next++].finished = true;
      }
      if (next >= classes_.size()) return Proposal::done();
      begin_class(next);
      continue;
    }
    ClassState& c = classes_[*current_];
    Proposal p = c.search->propose();
    if (p.kind == Proposal::Kind::done) {  // its space is exhausted: what is queued still runs
      c.exhausted = true;
      continue;
    }
    if (p.kind == Proposal::Kind::wait) return p;
    p.candidate.performance_cases = c.cases;
    ++pending_;
    return p;
  }
}

void ClassSearchProposer::observe(const spec::Candidate& cand, const model::Attempt& a) {
  --pending_;
  ClassState* proposed_by = class_proposing(cand);
  ClassState& c = proposed_by ? *proposed_by : classes_[current_.value_or(0)];
  if (c.search) c.search->observe(cand, a);
  learn(c, a);
}

std::string ClassSearchProposer::progress() const {
  if (!current_) return {};
  const ClassState& c = classes_[*current_];
  std::ostringstream line;
  line << std::setprecision(4) << "class " << *current_ + 1 << "/" << classes_.size();
  if (c.best_ms) line << " best " << *c.best_ms << " ms";
  line << " (" << c.attempts.size() << (c.share > 0 ? "/" + std::to_string(c.share) : "") << ")";
  return line.str();
}

void ClassSearchProposer::finish() {
  if (current_ && classes_[*current_].minutes_end == 0) classes_[*current_].minutes_end = minutes();
}

ClassSearchProposer::ClassState* ClassSearchProposer::class_proposing(const spec::Candidate& cand) {
  for (auto& c : classes_)
    if (c.cases == cand.performance_cases) return &c;
  return nullptr;
}

bool ClassSearchProposer::before_start(spec::Candidate& cand) {
  if (ClassState* c = class_proposing(cand); c && (c->stopped || out_of_time(*c))) {
    // Its class's time (or patience) ran out while it waited in the queue.
    c->stopped = true;
    --pending_;
    ++c->withdrawn;
    return false;
  }
  if (o_.screen_factor > 0) {
    read_baseline();
    for (const auto& name : cand.performance_cases) {
      std::optional<double> known;
      if (auto it = best_case_ms_.find(name); it != best_case_ms_.end()) {
        known = it->second;
        // The second stage: against candidates' medians only (not the baseline's bound).
        cand.screen_median_ms[name] = it->second * kScreenMedianFactor;
      }
      if (auto it = baseline_bound_ms_.find(name); it != baseline_bound_ms_.end())
        known = known ? std::min(*known, it->second) : it->second;
      if (known) cand.screen_ms[name] = *known * o_.screen_factor;
    }
  }
  return true;
}

void ClassSearchProposer::read_baseline() {
  if (baseline_read_ || !service_ || o_.baseline_screen_factor <= 0) return;
  // The driver records the baseline before the first candidate starts (or never: not a GEMM, or
  // its timing failed), so one look at the history is enough.
  baseline_read_ = true;
  for (const auto& a : service_->history()) {
    if (a.kind != model::AttemptKind::baseline || a.result.verdict != model::Verdict::ok) continue;
    for (const auto& cr : a.result.cases)
      if (cr.role == "performance" && cr.latency && !cr.screened && cr.latency->median_ms > 0)
        baseline_bound_ms_[cr.name] = cr.latency->median_ms * o_.baseline_screen_factor;
  }
}

std::optional<spec::Candidate> ClassSearchProposer::candidate_for(const model::Attempt& a) const {
  if (a.kind != model::AttemptKind::candidate) return std::nullopt;
  spec::Candidate c = o_.search.base;
  for (const auto& [k, v] : a.params) c.params[k] = v;
  c.label = a.label;
  return c;
}

nlohmann::json ClassSearchProposer::summary() const {
  nlohmann::json j = classes_.front().search ? classes_.front().search->summary() : nlohmann::json::object();
  nlohmann::json list = nlohmann::json::array();
  for (size_t k = 0; k < classes_.size(); ++k) {
    const ClassState& c = classes_[k];
    const double end = c.minutes_end > 0 ? c.minutes_end : (c.search ? minutes() : 0);
    nlohmann::json e{{"class", k + 1},
                     {"name", o_.classes[k].name},
                     {"cases", c.cases},
                     {"evaluations", c.attempts.size()},
                     {"evaluations_share", c.share},
                     {"minutes", c.search ? std::max(end - c.minutes_start, 0.0) : 0.0},
                     {"screened_cases", c.screened},
                     {"withdrawn", c.withdrawn}};
    if (c.best_ms) e["best"] = {{"label", c.best_label}, {"geomean_ms", *c.best_ms}};
    list.push_back(std::move(e));
  }
  j["shape_classes"] = std::move(list);
  j["screen_factor"] = o_.screen_factor;
  j["baseline_screen_factor"] = o_.baseline_screen_factor;
  return j;
}

}  // namespace kopt::propose
