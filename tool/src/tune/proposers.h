// The proposer registry: `--strategy NAME` to a proposer. Adding a proposer is
// one folder (implementing propose::Proposer) and one entry in proposers.cpp.
#pragma once

#include <string>
#include <vector>

#include "propose/proposer.h"
#include "tune/driver.h"

namespace kopt::tune {

/// The proposer for options.strategy (empty: the parameter search with the
/// default strategy for the space's size). Checks what the proposer needs of
/// the spec and the options before any work: throws UsageError/SpecError
/// (kopt.opt.002-008, kopt.search.801, the agent's option errors). The
/// budget is checked here against the proposer, once: the search needs a
/// limit and takes no turns or tokens (kopt.opt.005, kopt.opt.008); the
/// agent needs a limit on its model turns (kopt.agent.103). With --resume,
/// a grouping of shape classes other than the run's is kopt.opt.007.
/// `spec` is null for a run from a description alone (the agent drafts it).
propose::ProposerPtr make_proposer(const OptimizeOptions& options, const spec::Spec* spec);

/// True when the options ask for the agent (or hybrid) proposer.
bool is_agent(const OptimizeOptions& options);

/// Every name --strategy takes (the search strategies and the agent proposers).
std::vector<std::string> proposer_names();

}  // namespace kopt::tune
