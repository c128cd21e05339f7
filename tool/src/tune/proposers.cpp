#include "tune/proposers.h"

#include "propose/search_proposer.h"
#include "search/strategy.h"
#include "util/error.h"

namespace kopt::tune {
namespace {

/// The parameter search over the spec's template.
propose::ProposerPtr make_search(const OptimizeOptions& o, const spec::Spec& s) {
  if (!s.template_kernel)
    throw UsageError("kopt.opt.003", s.path.string() +
                                         ": no template to search: add \"template\" to the spec or pass --template FILE");
  if (s.tuning.params.empty())
    throw SpecError("kopt.opt.004", s.path.string() + ": $.tuning.params: the template has no parameter space");
  if (o.max_evaluations < 0 || o.max_minutes < 0 || (o.max_evaluations == 0 && o.max_minutes == 0 && o.patience == 0))
    throw UsageError("kopt.opt.005",
                     "the budget is zero: give --budget evals=N and/or minutes=M (or --max-iterations N)");
  propose::SearchProposerOptions so;
  so.base = template_candidate(s);
  so.params = s.tuning.params;
  so.constraints = s.tuning.constraints;
  so.strategy = o.strategy;
  so.seed = o.seed;
  return std::make_unique<propose::SearchProposer>(std::move(so));
}

}  // namespace

propose::ProposerPtr make_proposer(const OptimizeOptions& o, const spec::Spec& s) {
  return make_search(o, s);
}

std::vector<std::string> proposer_names() {
  std::vector<std::string> names = search::strategy_names();
  names.push_back("agent");
  names.push_back("hybrid");
  return names;
}

}  // namespace kopt::tune
