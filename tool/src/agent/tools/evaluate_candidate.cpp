// evaluate_candidate: compile, check and time a kernel the model wrote.
#include "agent/candidate.h"
#include "agent/common.h"
#include "agent/session.h"
#include "agent/tools/registry.h"
#include "model/result.h"

namespace kopt::agent::tools::evaluate_candidate {

using nlohmann::json;

namespace {

/// What the model learns about one attempt.
json feedback(const Session& s, const model::Attempt& a) {
  const model::Result& r = a.result;
  json j = {{"attempt", a.index}, {"label", a.label}, {"verdict", model::verdict_name(r.verdict)}};
  if (!r.detail.empty()) j["detail"] = clip(r.detail, 2000);
  if (!r.failed_case.empty()) j["failed_case"] = r.failed_case;
  if (!r.error_name.empty()) j["error_name"] = r.error_name;
  if (!r.compile_log.empty()) j["compile_log"] = clip(r.compile_log, 6000);
  if (!r.cases.empty()) {
    json cases = json::array();
    for (const auto& c : r.cases) {
      json x = {{"name", c.name}, {"role", c.role}, {"passed", c.passed}};
      if (c.max_error_ratio != 0 || !c.passed) x["max_error_ratio"] = model::json_io::from_double(c.max_error_ratio);
      if (c.latency) x["median_ms"] = c.latency->median_ms;
      if (c.reference_latency) x["reference_median_ms"] = c.reference_latency->median_ms;
      cases.push_back(std::move(x));
    }
    j["cases"] = std::move(cases);
  }
  if (r.geomean_ms) j["geomean_ms"] = *r.geomean_ms;
  if (r.speedup) j["speedup_vs_reference"] = *r.speedup;
  if (s.initial_geomean() && r.geomean_ms) j["speedup_vs_initial"] = *s.initial_geomean() / *r.geomean_ms;
  if (const model::Attempt* b = s.service()->best()) {
    j["best_so_far"] = {{"attempt", b->index}, {"label", b->label}, {"geomean_ms", *b->result.geomean_ms}};
    j["is_new_best"] = b->index == a.index;
  }
  if (s.compile_only())
    j["note"] = "no GPU on this machine: the kernel was compiled for " + s.arch() + " only; it was not checked or timed";
  j["budget_left"] = s.budget_left();
  return j;
}

}  // namespace

ToolDef define() {
  return {"",
          "Compile a candidate kernel, check it against the reference on every case and time it (without a GPU: "
          "compile only). Returns the verdict, the compile log, per-case results and the geometric-mean latency.",
          {{"type", "object"}, {"properties", schema::candidate_properties()}, {"required", {"source", "launch"}}}};
}

json run(Session& s, const json& a) {
  if (s.budget_spent(false)) throw ToolFailure("the budget is spent: " + s.stop_detail());
  spec::Candidate c = candidate_from_args(s.spec(), a, "agent-" + std::to_string(s.agent_count() + 1), true);
  s.count_agent_evaluation();
  const model::Attempt& at = s.evaluate_and_record(c);
  json r = feedback(s, at);
  const bool failed = at.result.verdict != model::Verdict::ok && at.result.verdict != model::Verdict::compiled;
  s.count_failure(failed, r);
  return r;
}

}  // namespace kopt::agent::tools::evaluate_candidate
