#include "driver/proposers.h"

#include <algorithm>
#include <iostream>
#include <set>
#include <sstream>

#include "agent/agent.h"
#include "model/shape_classes.h"
#include "propose/class_search.h"
#include "propose/search_proposer.h"
#include "store/interop.h"
#include "store/store.h"
#include "search/device_constants.h"
#include "search/strategy.h"
#include "util/error.h"
#include "util/fs.h"

namespace kopt::driver {
namespace {

/// The search's seed report, on stderr.
void note_on_stderr(const std::string& line) { std::cerr << "kopt: " << line << "\n"; }

/// --warm-start FILE as seeds of the search, best recorded first; what cannot
/// be tried (recorded as failed, a value that is no integer) comes along with
/// its reason, to be counted in the report.
void add_warm_start(const OptimizeOptions& o, propose::SearchProposerOptions& so) {
  const store::WarmStart w = store::read_warm_start(o.warm_start);
  std::string about = w.format;
  if (!w.kernel.empty()) about += " of kernel '" + w.kernel + "'";
  if (!w.device.empty()) about += " on '" + w.device + "'";
  about += ", " + std::to_string(w.entries.size()) + " entries";
  so.seeds_from = "--warm-start " + fs::display(o.warm_start);
  so.seeds_about = about;
  for (const store::WarmStartEntry& e : w.entries) {
    propose::Seed s;
    s.config = e.config;
    s.origin = e.path;
    if (!e.unusable.empty()) {
      s.skip = e.unusable;
      s.skip_kind = "not a configuration of integers";
    } else if (!e.failed.empty()) {
      s.skip = e.failed;
      s.skip_kind = "recorded as failed";
    }
    so.seeds.push_back(std::move(s));
  }
  if (!o.quiet) {
    if (!w.note.empty()) std::cerr << "kopt: --warm-start " << fs::display(o.warm_start) << ": " << w.note << "\n";
    so.note = note_on_stderr;
  }
}

/// $.tuning.seeds after any --warm-start entries (a configuration in both is
/// tried once, at its first place).
void add_spec_seeds(const spec::Spec& s, const OptimizeOptions& o, propose::SearchProposerOptions& so) {
  if (s.tuning.seeds.empty()) return;
  if (so.seeds_from.empty()) {
    so.seeds_from = "$.tuning.seeds";
  } else {  // the warm-start file's description stays beside its name
    so.seeds_from += (so.seeds_about.empty() ? "" : " (" + so.seeds_about + ")") + std::string(" and $.tuning.seeds");
    so.seeds_about.clear();
  }
  for (size_t i = 0; i < s.tuning.seeds.size(); ++i) {
    propose::Seed seed;
    seed.config = s.tuning.seeds[i];
    seed.origin = "$.tuning.seeds[" + std::to_string(i) + "]";
    so.seeds.push_back(std::move(seed));
  }
  if (!o.quiet) so.note = note_on_stderr;
}

/// The budget against the proposer: the one check of a budget beyond its
/// grammar (model::parse_budget checks each item). The search needs a limit
/// and makes no model calls; the agent needs a limit on its model turns
/// (evaluations, turns, minutes or tokens: patience alone does not end a
/// conversation that never evaluates).
void check_budget(const model::Budget& b, bool agent, const std::string& strategy) {
  if (b.evaluations < 0 || b.minutes < 0 || b.patience < 0 || b.model_turns < 0 || b.tokens < 0)
    throw UsageError(agent ? "kopt.agent.103" : "kopt.opt.005", "the budget " + b.text() + " has a negative item");
  if (agent) {
    if (b.turn_limit() == 0 && b.minutes == 0 && b.tokens == 0)
      throw UsageError("kopt.agent.103", "the budget is zero: give --max-iterations N, --budget "
                                         "evals=N,minutes=M,turns=T or --token-budget T");
    return;
  }
  if (b.evaluations == 0 && b.minutes == 0 && b.patience == 0)
    throw UsageError("kopt.opt.005",
                     "the budget is zero: give --budget evals=N and/or minutes=M (or --max-iterations N)");
  if (b.model_turns > 0 || b.tokens > 0)
    throw UsageError("kopt.opt.008", "--budget " + b.text() + ": turns and tokens count the LLM agent's model calls; " +
                                         "the search (--strategy " + (strategy.empty() ? "default" : strategy) +
                                         ") makes none: leave them out");
}

/// --resume: the performance cases must fall into the classes the run was
/// searched in, since an attempt is credited to a class by its label ("c2:")
/// and by the cases it was timed on; another grouping would credit results
/// timed on other cases. The run's grouping is run.json's --shape-classes on
/// the same cases (the spec is the run's: kopt.run.902).
void check_resumed_grouping(const OptimizeOptions& o, const std::vector<model::ShapePoint>& points,
                            const std::vector<std::string>& size_names, int classes) {
  const store::RunInfo info = store::RunStore::read_info(o.resume);
  if (!info.shape_classes) return;  // a run from before the option was recorded
  const int64_t recorded = *info.shape_classes;
  auto members = [&](int64_t n) {
    const int k = n < 0 ? model::auto_shape_classes(points.size()) : static_cast<int>(std::min<int64_t>(n, 64));
    std::vector<std::vector<size_t>> m;
    if (k > 1 && points.size() >= 2)
      for (const auto& c : model::group_shape_classes(points, size_names, k)) m.push_back(c.members);
    return m;
  };
  const auto before = members(recorded);
  if (before == members(classes)) return;
  auto option = [](int64_t n) { return n < 0 ? std::string("auto") : n == 0 ? std::string("off") : std::to_string(n); };
  throw UsageError("kopt.opt.007",
                   "--shape-classes " + option(o.shape_classes) + ": the run " + fs::display(o.resume) + " was searched " +
                       (before.empty() ? std::string("without shape classes")
                                       : "in " + std::to_string(before.size()) + " shape classes") +
                       " (its --shape-classes " + option(recorded) + "); a resumed run keeps its grouping, since its " +
                       "results were timed on its classes' cases: leave --shape-classes out, or start a new run");
}

/// The parameter search over the spec's template.
propose::ProposerPtr make_search(const OptimizeOptions& o, const spec::Spec& s, std::string* plan) {
  if (!s.template_kernel)
    throw UsageError("kopt.opt.003", s.path.string() +
                                         ": no template to search: add \"template\" to the spec or pass --template FILE");
  if (s.tuning.params.empty())
    throw SpecError("kopt.opt.004", s.path.string() + ": $.tuning.params: the template has no parameter space");
  check_budget(o.budget, false, o.strategy);
  propose::SearchProposerOptions so;
  so.base = template_candidate(s);
  so.params = s.tuning.params;
  so.constraints = s.tuning.constraints;
  // Configurations the device cannot run (or ptxas refuses) are left out of
  // the space before anything is compiled (search/device_constants.h).
  for (const spec::Expr& e : template_limit_constraints(s, so.base)) so.constraints.push_back(e);
  so.strategy = o.strategy;
  so.seed = o.seed;
  so.only = o.space_filter;
  if (!o.warm_start.empty()) add_warm_start(o, so);
  add_spec_seeds(s, o, so);
  // Shape classes: the performance cases grouped by size, one search each.
  std::vector<model::ShapePoint> points;
  std::vector<std::string> size_names;
  for (const spec::Case& c : s.cases) {
    if (c.role != spec::CaseRole::performance) continue;
    if (points.empty())
      for (const auto& [k, v] : c.sizes) size_names.push_back(k);
    model::ShapePoint p{c.name, {}};
    for (const auto& k : size_names) p.sizes.push_back(c.sizes.count(k) ? c.sizes.at(k) : 1);
    points.push_back(std::move(p));
  }
  const int classes = o.shape_classes < 0 ? model::auto_shape_classes(points.size()) : o.shape_classes;
  if (!o.resume.empty()) check_resumed_grouping(o, points, size_names, classes);
  if (classes <= 1 || points.size() < 2) {
    so.screen_factor = o.screen_factor;  // a class search screens in its own proposer
    return std::make_unique<propose::SearchProposer>(std::move(so));
  }
  propose::ClassSearchOptions co;
  co.search = std::move(so);
  co.classes = model::group_shape_classes(points, size_names, classes);
  co.points = std::move(points);
  co.screen_factor = o.screen_factor;
  if (!o.quiet) {
    std::ostringstream out;
    out << "kopt: " << co.classes.size() << " shape classes, searched in this order:\n";
    for (size_t k = 0; k < co.classes.size(); ++k)
      out << "kopt:   c" << k + 1 << " (" << co.classes[k].members.size() << " case"
          << (co.classes[k].members.size() == 1 ? "" : "s") << "): " << co.classes[k].name << "\n";
    if (plan) *plan = out.str();
    else std::cerr << out.str();
  }
  return std::make_unique<propose::ClassSearchProposer>(std::move(co));
}

/// The LLM agent (and the hybrid: the agent proposes templates, the search tunes them).
propose::ProposerPtr make_agent(const OptimizeOptions& o, const spec::Spec*) {
  if (!o.warm_start.empty())
    throw UsageError("kopt.opt.006", "--warm-start " + fs::display(o.warm_start) +
                                         ": a warm start seeds the parameter search; the agent proposers (--strategy "
                                         "agent|hybrid, --description) do not take one");
  if (o.spec.empty() && o.description.empty())
    throw UsageError("kopt.agent.101", "give --spec FILE, or --description TEXT for the agent to draft the workload");
  if (o.spec.empty() && !o.resume.empty())
    throw UsageError("kopt.agent.101", "--resume needs --spec (use the run's spec.generated.json)");
  check_budget(o.budget, true, o.strategy);
  agent::RunOptions r;
  r.hybrid = o.strategy == "hybrid";
  r.draft = o.spec.empty();
  r.description = o.description;
  r.results_dir = o.results_dir;
  r.arch = o.arch;
  r.seed = o.seed;
  r.quiet = o.quiet;
  return agent::make_proposer(r, o.agent);
}

}  // namespace

std::vector<spec::Expr> template_limit_constraints(const spec::Spec& s, const spec::Candidate& base) {
  if (!base.launch) return {};
  std::set<std::string> names;
  for (const spec::TuningParam& p : s.tuning.params) names.insert(p.name);
  for (const auto& [name, v] : s.constant_defines()) names.insert(name);
  return search::launch_limit_constraints(*base.launch, names);
}

std::optional<store::TunerStats::Filtered> filtered_before_compile(const spec::Spec& s, const spec::Bindings& constants,
                                                                   bool quiet) {
  if (!s.template_kernel || s.tuning.params.empty()) return std::nullopt;
  std::vector<spec::Expr> constraints = s.tuning.constraints;
  for (const spec::Expr& e : template_limit_constraints(s, template_candidate(s))) constraints.push_back(e);
  const std::optional<search::LimitFilter> f = search::count_limit_filtered(s.tuning.params, constraints, constants);
  if (!f || f->limits.empty()) return std::nullopt;
  if (!quiet && f->filtered > 0) {
    // A headline, then one limit a line: a template's limits run to
    // thousands of characters, unreadable as one line of a log.
    std::cerr << "kopt: " << f->filtered << " configuration" << (f->filtered == 1 ? "" : "s")
              << " left out before compiling, over the device's limits; " << f->space << " remain. The limits:\n";
    for (const std::string& limit : f->limits) std::cerr << "  " << limit << "\n";
  }
  return store::TunerStats::Filtered{static_cast<int64_t>(f->filtered), static_cast<int64_t>(f->space), f->limits};
}

bool is_agent(const OptimizeOptions& o) {
  return o.strategy == "agent" || o.strategy == "hybrid" || (o.spec.empty() && !o.description.empty());
}

propose::ProposerPtr make_proposer(const OptimizeOptions& o, const spec::Spec* s, std::string* plan) {
  if (is_agent(o)) return make_agent(o, s);
  return make_search(o, *s, plan);
}

std::vector<std::string> proposer_names() {
  std::vector<std::string> names = search::strategy_names();
  names.push_back("agent");
  names.push_back("hybrid");
  return names;
}

}  // namespace kopt::driver
