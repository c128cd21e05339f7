// Phase 5 of a run: the top candidates re-timed interleaved, to cancel drift,
// and shape specialisation: the candidates that were fastest on some
// performance case by more than the threshold become variants (variant 0 is
// always the single best), and a decision tree over the sizes, grown on their
// re-timed latencies (model/dispatch.h), says which variant runs for which
// sizes.
#include <algorithm>
#include <climits>
#include <cmath>
#include <iostream>
#include <set>

#include "model/dispatch.h"
#include "search/space.h"
#include "driver/dispatch_launches.h"
#include "driver/driver_impl.h"
#include "util/interrupt.h"

namespace kopt::driver {
namespace {

using model::Attempt;

double median_ms(const Attempt& a, const std::string& name) {
  return model::case_median_ms(a, name).value_or(INFINITY);
}


/// Case names sorted and joined: a set of cases as a map key.
std::string cases_key(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  std::string key;
  for (const auto& n : names) key += n + "\n";
  return key;
}

/// The performance cases an attempt was timed on, as a key: the group it is
/// ranked in (one group in a plain run; one per shape class).
std::string timed_cases_key(const Attempt& a) { return cases_key(model::timed_performance_cases(a)); }

/// What makes two finalists the same kernel: a candidate's source, compile
/// options and configuration (the same configuration found by two shape
/// classes, a seed or a neighbour's best, is re-timed and offered as a
/// variant once), else the attempt itself.
std::string finalist_key(const Attempt& a) {
  if (a.kind != model::AttemptKind::candidate || a.params.empty() || a.source.empty())
    return std::string(model::attempt_kind_name(a.kind)) + "#" + std::to_string(a.index);
  std::string k = a.source + '\0';
  for (const auto& o : a.compile_options) k += o + '\0';
  return k + search::config_key(a.params);
}

/// The top `top` ok candidates and initial kernels by geomean, in each group
/// of attempts timed on the same performance cases (so per shape class), then
/// (with specialisation) each performance case's fastest, so that the
/// per-case choice is made on the same interleaved measurements. A
/// configuration already ranked from an earlier group is left out (the next
/// one of the group takes its place). The first is the best of the largest
/// group.
std::vector<const Attempt*> ranked_finalists(const std::vector<Attempt>& history, int top, bool specialize,
                                             const std::vector<std::string>& perf_cases) {
  std::vector<const Attempt*> all_ok;
  for (const auto& a : history)
    if (model::competes_for_best(a)) all_ok.push_back(&a);
  std::map<std::string, std::vector<const Attempt*>> groups;
  for (const auto* a : all_ok) groups[timed_cases_key(*a)].push_back(a);
  std::vector<std::vector<const Attempt*>> ordered;
  for (auto& [key, g] : groups) {
    std::stable_sort(g.begin(), g.end(),
                     [](const Attempt* x, const Attempt* y) { return *x->result.geomean_ms < *y->result.geomean_ms; });
    ordered.push_back(g);
  }
  // The group timed on the most cases first (a plain run's only group; with
  // classes, the initial kernel's, timed on all).
  std::stable_sort(ordered.begin(), ordered.end(), [&](const auto& x, const auto& y) {
    const std::string kx = timed_cases_key(*x.front()), ky = timed_cases_key(*y.front());
    return std::count(kx.begin(), kx.end(), '\n') > std::count(ky.begin(), ky.end(), '\n');
  });
  std::vector<const Attempt*> ranked;
  std::set<std::string> seen;
  for (const auto& g : ordered) {
    size_t taken = 0;
    for (const auto* a : g) {
      if (taken >= static_cast<size_t>(std::max(top, 1))) break;
      if (!seen.insert(finalist_key(*a)).second) continue;
      ranked.push_back(a);
      ++taken;
    }
  }
  if (specialize && perf_cases.size() > 1)
    for (const auto& name : perf_cases) {
      const Attempt* fastest = nullptr;
      for (const auto* a : all_ok)
        if (!fastest || median_ms(*a, name) < median_ms(*fastest, name)) fastest = a;
      if (fastest && seen.insert(finalist_key(*fastest)).second) ranked.push_back(fastest);
    }
  return ranked;
}

/// summary.json "specialization": the variants, the variant the tree picks
/// for each performance case with its re-timed median beside the winner's
/// (`winner_ms`), every variant's medians, the tree, and the geomeans
/// weighted by the cases' weights (spec::Case::weight) when every latency is
/// known.
store::Specialization specialization_record(const std::vector<std::string>& perf_cases, const model::DispatchTree& tree,
                                            const std::vector<model::DispatchSample>& samples,
                                            const std::map<std::string, const spec::Case*>& case_of,
                                            const std::map<std::string, double>& winner_ms,
                                            const std::vector<const Attempt*>& variants, double threshold) {
  store::Specialization sp;
  sp.threshold = threshold;
  std::vector<double> single, special, weights;
  auto finite_or_null = [](double x) { return std::isfinite(x) ? std::optional<double>(x) : std::nullopt; };
  for (size_t c = 0; c < perf_cases.size(); ++c) {
    const std::string& name = perf_cases[c];
    const int v = tree.select(samples[c].sizes);
    const double ms = samples[c].ms[static_cast<size_t>(v)];
    const auto found = case_of.find(name);
    const spec::Case* sc = found == case_of.end() ? nullptr : found->second;
    const double single_ms = winner_ms.count(name) ? winner_ms.at(name) : INFINITY;
    store::SpecializationCase& chosen = sp.cases[name];
    chosen.variant = v;
    chosen.median_ms = finite_or_null(ms);
    chosen.single_median_ms = finite_or_null(single_ms);
    chosen.sizes = sc ? sc->sizes : std::map<std::string, int64_t>{};
    std::vector<std::optional<double>>& row = sp.latency_ms[name];
    for (double x : samples[c].ms) row.push_back(finite_or_null(x));
    single.push_back(single_ms);
    special.push_back(ms);
    weights.push_back(sc ? sc->weight : 1.0);
  }
  for (size_t v = 0; v < variants.size(); ++v)
    sp.variants.push_back({static_cast<int>(v), variants[v]->index, variants[v]->label, variants[v]->params,
                           "variants/v" + std::to_string(v) + ".cu"});
  bool finite = true;
  for (double x : single) finite = finite && std::isfinite(x) && x > 0;
  for (double x : special) finite = finite && std::isfinite(x) && x > 0;
  sp.dispatch = tree.to_json();
  if (finite) {
    sp.single_geomean_ms = model::geomean(single, weights);
    sp.geomean_ms = model::geomean(special, weights);
  }
  return sp;
}

}  // namespace

void Driver::attach_dispatch_model(model::DispatchTree& tree, std::vector<model::DispatchSample>& samples,
                                   const std::vector<size_t>& pool, const std::vector<const Attempt*>& ranked,
                                   const std::vector<int>& occupancy,
                                   const std::map<std::string, const spec::Case*>& case_of) const {
  // The cost model (model/dispatch.h) needs each variant's launch on each
  // tuned shape: the template's launch with the variant's parameters, its
  // block_work and traffic_bytes expressions; and each variant's occupancy,
  // as measured.
  const spec::Launch* launch = nullptr;
  if (spec_.template_kernel && spec_.template_kernel->launch) launch = &*spec_.template_kernel->launch;
  if (!launch || launch->block_work.empty() || !device_ || device_->sm_count <= 0 || pool.size() < 2) return;
  std::vector<int> blocks_per_sm;
  for (size_t i : pool) {
    if (occupancy[i] == INT_MAX || occupancy[i] <= 0) {
      if (!o_.quiet)
        std::cerr << "kopt: dispatch: no cost model: the occupancy of " << ranked[i]->label
                  << " was not measured (a worker or a run from before it was reported); the tree alone decides\n";
      return;
    }
    blocks_per_sm.push_back(occupancy[i]);
  }
  std::vector<std::map<std::string, int64_t>> params;
  for (size_t i : pool) params.push_back(ranked[i]->params);
  const spec::Expr data_bytes = spec::data_bytes_expr(spec_);
  const std::string why = fill_dispatch_launches(samples, *launch, data_bytes, params, [&](const std::string& name) {
    const auto found = case_of.find(name);
    return found == case_of.end() ? nullptr : found->second;
  });
  if (!why.empty()) {
    if (!o_.quiet) std::cerr << "kopt: dispatch: no cost model: " << why << "; the tree alone decides\n";
    return;
  }
  tree.model = model::derive_dispatch_model(tree, samples, blocks_per_sm, device_->sm_count, launch->block_work.text(),
                                            launch->traffic_bytes.text(), data_bytes.text());
  if (tree.model && !o_.quiet) {
    std::cerr << "kopt: dispatch: off the tuned shapes the variant the cost model predicts fastest runs ";
    if (tree.model->margin)
      std::cerr << "where it is predicted faster than variant 0 by " << *tree.model->margin * 100
                << "% (leave-one-out over " << samples.size() << " tuned shapes)"
                << (device_->simulated ? std::string(" (") + model::kSimulatedNote + ")" : "") << "\n";
    else
      std::cerr << "nowhere: no margin up to 300% passed the leave-one-out check, and variant 0 runs there\n";
  }
}

Finalists Driver::choose_finalists() {
  Finalists f;
  FinalistTable t;
  t.perf_cases = performance_case_names();
  if (!proposer_.finish_policy().retime) {
    f.winner = store_->best();
    return f;
  }
  const bool specialize = o_.specialize && t.perf_cases.size() > 1;
  t.ranked = ranked_finalists(store_->history(), o_.top, specialize, t.perf_cases);
  f.winner = t.ranked.empty() ? nullptr : t.ranked.front();
  const size_t n = t.ranked.size();
  t.case_ms.resize(n);
  t.failed.assign(n, false);
  t.occupancy.assign(n, INT_MAX);
  for (size_t i = 0; i < n; ++i) {
    for (const auto& name : t.perf_cases) t.case_ms[i][name] = median_ms(*t.ranked[i], name);
    for (const auto& cr : t.ranked[i]->result.cases)
      if (cr.blocks_per_sm) t.occupancy[i] = std::min(t.occupancy[i], *cr.blocks_per_sm);
  }
  // Shape classes: the search timed each candidate on its class's cases; the
  // re-timing times every finalist on every performance case.
  const std::string all_cases = cases_key(t.perf_cases);  // the key of an attempt timed on every performance case
  for (const auto* a : t.ranked) t.classed = t.classed || timed_cases_key(*a) != all_cases;
  // Shape classes need the re-timing: without it no finalist is checked on
  // the other classes' cases. --retime-rounds 0 means one round there. So does
  // a search's best with a screened case (its latency there its probe or first 10 launches):
  // it is re-timed in full before it is reported.
  const bool probe_best = f.winner && model::has_screened_case(*f.winner);
  const bool must_retime = t.classed || probe_best;
  const int rounds = must_retime ? std::max(o_.retime_rounds, 1) : o_.retime_rounds;
  if (t.classed && o_.retime_rounds == 0 && !o_.quiet)
    std::cerr << "kopt: shape classes: the finalists are re-timed once on every performance case although "
                 "--retime-rounds is 0 (the search timed each on its class's cases alone)\n";
  else if (probe_best && o_.retime_rounds == 0 && !o_.quiet)
    std::cerr << "kopt: the search's best was screened on a case (timed by its probe launch or its first 10 launches "
                 "there): the finalists are re-timed once although --retime-rounds is 0\n";
  if ((n > 1 || must_retime) && rounds > 0 && !util::interrupted()) retime_finalists(t, rounds, f);
  if (!t.classed && f.winner && model::has_screened_case(*f.winner)) {
    // Not re-timed (an interrupted re-timing): a winner measured in full, if any.
    const bool retimed = std::any_of(f.retime.begin(), f.retime.end(), [&](const store::RetimeEntry& e) {
      return e.label == f.winner->label && !e.failed_recheck && e.median_ms;
    });
    if (!retimed) {
      auto full = std::find_if(t.ranked.begin(), t.ranked.end(),
                               [](const Attempt* a) { return !model::has_screened_case(*a); });
      if (full != t.ranked.end()) f.winner = *full;
    }
  }
  if (t.classed) {
    // A finalist timed on its class's cases alone, and not re-timed (no
    // re-timing, or an interrupted one), was never checked on the others:
    // it cannot be a variant.
    std::set<std::string> retimed;
    for (const store::RetimeEntry& e : f.retime)
      if (!e.failed_recheck && e.median_ms) retimed.insert(e.label);
    for (size_t i = 0; i < n; ++i)
      if (!retimed.count(t.ranked[i]->label) && timed_cases_key(*t.ranked[i]) != all_cases) t.failed[i] = true;
    if (f.winner && t.failed[static_cast<size_t>(std::find(t.ranked.begin(), t.ranked.end(), f.winner) -
                                                  t.ranked.begin())]) {
      f.winner = nullptr;
      for (size_t i = 0; i < n && !f.winner; ++i)
        if (!t.failed[i]) f.winner = t.ranked[i];
    }
  }
  if (f.winner && specialize) specialize_finalists(t, f);
  return f;
}

void Driver::retime_finalists(FinalistTable& t, int rounds, Finalists& f) {
  const size_t n = t.ranked.size();
  // With shape classes, a case where a finalist is far slower than the
  // fastest finalist there is screened (its timing stopped early).
  std::map<std::string, double> screen;
  if (t.classed && o_.screen_factor > 0)
    for (const auto& name : t.perf_cases) {
      double fastest = INFINITY;
      for (size_t i = 0; i < n; ++i) fastest = std::min(fastest, t.case_ms[i][name]);
      if (std::isfinite(fastest)) screen[name] = fastest * o_.screen_factor;
    }
  if (!o_.quiet)
    std::cerr << "kopt: re-timing the top " << n << " interleaved, " << rounds << " rounds"
              << (device_ && device_->simulated ? std::string(" (") + model::kSimulatedNote + ")" : std::string()) << "\n";
  std::vector<std::vector<double>> g(n);
  std::vector<std::map<std::string, std::vector<double>>> per_case(n);
  // The re-timing is part of the minutes budget: the first round always
  // runs (there is no winner without one); a later round only when the time
  // left holds another round as long as the last one.
  double last_round_min = 0;
  for (int round = 0; round < rounds && !util::interrupted(); ++round) {
    const std::optional<double> minutes_left = budget_left().minutes;
    if (round > 0 && minutes_left && last_round_min > *minutes_left) {
      if (!o_.quiet)
        std::cerr << "kopt: re-timing stopped after " << round << " of " << rounds
                  << " rounds: the minutes budget is spent\n";
      break;
    }
    const double round_start = minutes_elapsed();
    for (size_t i = 0; i < n && !util::interrupted(); ++i) {
      if (t.failed[i]) continue;
      spec::Candidate c = candidate_of(*t.ranked[i]);
      c.performance_cases.clear();
      c.screen_ms = screen;
      c.screen_median_ms.clear();  // the search's limits: the re-timing has no second stage
      model::Result r;
      try {
        r = runner_->evaluate(c, false);
      } catch (const util::Interrupted&) {
        break;  // interrupted() holds: the re-timing is dropped below
      }
      if (r.verdict != model::Verdict::ok || !r.geomean_ms) {
        t.failed[i] = true;  // a candidate that fails on re-check is out
        continue;
      }
      g[i].push_back(*r.geomean_ms);
      for (const auto& cr : r.cases) {
        if (cr.latency) per_case[i][cr.name].push_back(cr.latency->median_ms);
        if (cr.blocks_per_sm) t.occupancy[i] = std::min(t.occupancy[i], *cr.blocks_per_sm);
      }
    }
    last_round_min = minutes_elapsed() - round_start;
  }
  if (util::interrupted()) {
    // SIGINT/SIGTERM: an incomplete re-timing says nothing; the search's own measurements decide.
    std::fill(t.failed.begin(), t.failed.end(), false);
    std::cerr << (t.classed ? "kopt: interrupted: the final re-timing is dropped; of the candidates timed on every "
                              "performance case (the initial kernel), the search's own timings choose the best\n"
                            : "kopt: interrupted: the final re-timing is dropped; the search's own timings choose the "
                              "best\n");
    return;
  }
  double best_median = INFINITY;
  f.winner = nullptr;  // only a candidate that passed its re-checks can win
  for (size_t i = 0; i < n; ++i) {
    const double median = quantile(g[i], 0.5);
    store::RetimeEntry e;
    e.index = t.ranked[i]->index;
    e.label = t.ranked[i]->label;
    e.geomeans_ms = g[i];
    if (!g[i].empty() && std::isfinite(median)) e.median_ms = median;
    for (const auto& [name, v] : per_case[i]) {
      t.case_ms[i][name] = quantile(v, 0.5);
      if (std::isfinite(t.case_ms[i][name])) e.cases_median_ms[name] = t.case_ms[i][name];
      else e.cases_median_ms[name] = std::nullopt;
    }
    e.failed_recheck = t.failed[i];
    if (runner_->primary() < runner_->size()) e.device = runner_->slot(runner_->primary()).device;
    f.retime.push_back(std::move(e));
    if (!t.failed[i] && !g[i].empty() && median < best_median) {
      best_median = median;
      f.winner = t.ranked[i];
      if (t.classed) f.winner_all_cases_ms = median;
    }
  }
}

void Driver::specialize_finalists(const FinalistTable& t, Finalists& f) const {
  const auto& ranked = t.ranked;
  const auto& perf_cases = t.perf_cases;
  const size_t w = static_cast<size_t>(std::find(ranked.begin(), ranked.end(), f.winner) - ranked.begin());
  auto ms = [&](size_t i, const std::string& name) { return t.case_ms[i].at(name); };
  // The candidate variants: the winner, then each case's fastest finalist
  // when it beats the winner there by more than the threshold.
  std::vector<size_t> pool = {w};
  for (const auto& name : perf_cases) {
    size_t pick = w;
    for (size_t i = 0; i < ranked.size(); ++i)
      if (!t.failed[i] && ms(i, name) < ms(pick, name)) pick = i;
    if (!(ms(pick, name) < ms(w, name) * (1.0 - o_.specialize_threshold))) pick = w;
    if (std::find(pool.begin(), pool.end(), pick) == pool.end()) pool.push_back(pick);
  }
  std::map<std::string, const spec::Case*> case_of;
  for (const auto& c : spec_.cases) case_of[c.name] = &c;
  // Dispatch by measurement (model/dispatch.h): a tree over the sizes, grown
  // on every variant's re-timed median on every performance case. A variant
  // the tree never picks is dropped and the tree grown again without it.
  std::vector<std::string> size_names;
  if (const spec::Case* c0 = case_of[perf_cases.front()])
    for (const auto& [k, v] : c0->sizes) size_names.push_back(k);
  std::vector<model::DispatchSample> samples;
  model::DispatchTree tree;
  for (;;) {  // ends: each pass that goes on drops a variant
    samples.clear();
    for (const auto& name : perf_cases) {
      model::DispatchSample ds;
      ds.name = name;
      const spec::Case* sc = case_of[name];
      for (const auto& k : size_names) ds.sizes.push_back(sc && sc->sizes.count(k) ? sc->sizes.at(k) : 1);
      for (size_t i : pool) ds.ms.push_back(t.failed[i] ? NAN : ms(i, name));
      samples.push_back(std::move(ds));
    }
    tree = model::derive_dispatch(size_names, samples, static_cast<int>(pool.size()), o_.specialize_threshold);
    std::vector<bool> used(pool.size(), false);
    used[0] = true;
    for (const auto& node : tree.nodes)
      if (node.dim < 0) used[static_cast<size_t>(node.variant)] = true;
    if (std::find(used.begin(), used.end(), false) == used.end()) break;
    std::vector<size_t> kept;
    for (size_t v = 0; v < pool.size(); ++v)
      if (used[v]) kept.push_back(pool[v]);
    pool = kept;
  }
  attach_dispatch_model(tree, samples, pool, ranked, t.occupancy, case_of);
  for (size_t i : pool) f.variants.push_back(ranked[i]);
  f.specialization =
      specialization_record(perf_cases, tree, samples, case_of, t.case_ms[w], f.variants, o_.specialize_threshold);
}

}  // namespace kopt::driver
