// Support for tests that run the driver over a runner of their own (no GPU,
// no worker): the options of such a run and the result such a runner returns.
#pragma once

#include <filesystem>
#include <string>

#include "driver/driver.h"
#include "model/budget.h"
#include "model/result.h"
#include "spec/spec.h"

namespace kopt::test {

/// kopt optimize's options for an exhaustive search of `spec` under `budget`
/// (the budget grammar of --budget), results under `dir`/results, one
/// re-timing round, quiet, and no worker command: the caller sets o.runner.
inline driver::OptimizeOptions runner_options(const std::string& spec, const std::string& budget,
                                              const std::filesystem::path& dir) {
  driver::OptimizeOptions o;
  o.spec = spec;
  o.strategy = "exhaustive";
  o.budget = model::parse_budget(budget);
  o.results_dir = dir / "results";
  o.retime_rounds = 1;
  o.quiet = true;
  o.workers.command.clear();  // nothing may start a worker
  return o;
}

/// A result that passed every case of a spec, each performance case at `ms`
/// (10 samples): what a runner that answers without a GPU returns.
inline model::Result passed_result(const spec::Spec& spec, double ms) {
  model::Result r;
  r.verdict = model::Verdict::ok;
  for (const auto& sc : spec.cases) {
    model::CaseResult cr;
    cr.name = sc.name;
    cr.role = sc.role == spec::CaseRole::performance ? "performance" : "correctness";
    cr.passed = true;
    if (sc.role == spec::CaseRole::performance) {
      model::LatencyStats l;
      l.median_ms = l.mean_ms = l.min_ms = l.max_ms = ms;
      l.samples = 10;
      cr.latency = l;
    }
    r.cases.push_back(cr);
  }
  r.geomean_ms = ms;
  return r;
}

}  // namespace kopt::test
