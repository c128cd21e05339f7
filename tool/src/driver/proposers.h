// The proposer registry: `--strategy NAME` to a proposer. Adding a proposer is
// one folder (implementing propose::Proposer) and one entry in proposers.cpp.
#pragma once

#include <optional>
#include <string>
#include <vector>


#include "propose/proposer.h"
#include "store/summary.h"
#include "driver/driver.h"

namespace kopt::driver {

/// The proposer for options.strategy (empty: the parameter search with the
/// default strategy for the space's size). Checks what the proposer needs of
/// the spec and the options before any work: throws UsageError/SpecError
/// (kopt.opt.002-008, kopt.search.801, the agent's option errors). The
/// budget is checked here against the proposer, once: the search needs a
/// limit and takes no turns or tokens (kopt.opt.005, kopt.opt.008); the
/// agent needs a limit on its model turns (kopt.agent.103). With --resume,
/// a grouping of shape classes other than the run's is kopt.opt.007.
/// `spec` is null for a run from a description alone (the agent drafts it).
/// What the proposer will do (the shape classes in their search order) goes
/// to `plan` when given, for the caller to say once a GPU is open (a run
/// without one searches nothing), else to stderr; nothing with --quiet.
propose::ProposerPtr make_proposer(const OptimizeOptions& options, const spec::Spec* spec,
                                   std::string* plan = nullptr);

/// True when the options ask for the agent (or hybrid) proposer.
bool is_agent(const OptimizeOptions& options);

/// The device-limit constraints the template's launch (`base`, the template
/// candidate) implies (search::launch_limit_constraints): the parameter
/// search adds them to the spec's constraints.
std::vector<spec::Expr> template_limit_constraints(const spec::Spec& spec, const spec::Candidate& base);

/// How many configurations of the template's space the device limits leave
/// out before compiling (search::count_limit_filtered with `constants`, the
/// template's launch limits included), said on stderr unless `quiet`: a
/// headline ("kopt: 180 configurations left out before compiling, over the
/// device's limits; 234 remain. The limits:"), then each limit on a line of
/// its own, indented by two spaces. nullopt without a template, without any
/// device-limit constraint, or when the space is too large to count.
std::optional<store::TunerStats::Filtered> filtered_before_compile(const spec::Spec& spec,
                                                                   const spec::Bindings& constants, bool quiet);

/// Every name --strategy takes (the search strategies and the agent proposers).
std::vector<std::string> proposer_names();

}  // namespace kopt::driver
