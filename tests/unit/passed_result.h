// A result that passed every case of a spec, each performance case at `ms`
// (10 samples): what a runner that answers without a GPU returns.
#pragma once

#include "model/result.h"
#include "spec/spec.h"

namespace kopt::test {

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
