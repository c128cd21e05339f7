// get_history: every attempt so far (the last 60) and the best one.
#include "agent/common.h"
#include "agent/session.h"
#include "agent/tools/registry.h"

namespace kopt::agent::tools::get_history {

using nlohmann::json;

ToolDef define() {
  return {"", "Every attempt so far: verdict, detail, geometric-mean latency, speedup; and the best one.",
          schema::no_arguments()};
}

json run(Session& s, const json&) {
  const propose::EvaluationService* run = s.service();
  json list = json::array();
  const auto& h = run ? run->history() : std::vector<model::Attempt>{};
  const size_t from = h.size() > 60 ? h.size() - 60 : 0;
  for (size_t i = from; i < h.size(); ++i) {
    const auto& a = h[i];
    json j = {{"attempt", a.index}, {"kind", model::attempt_kind_name(a.kind)}, {"label", a.label}, {"verdict", model::verdict_name(a.result.verdict)}};
    if (!a.result.detail.empty() && a.result.verdict != model::Verdict::ok) j["detail"] = clip(a.result.detail, 160);
    if (a.result.geomean_ms) j["geomean_ms"] = *a.result.geomean_ms;
    if (a.result.speedup) j["speedup_vs_reference"] = *a.result.speedup;
    if (!a.params.empty()) j["params"] = a.params;
    list.push_back(std::move(j));
  }
  json r = {{"attempts", list}, {"total", h.size()}};
  const model::Attempt* b = run ? run->best() : nullptr;
  r["best_attempt"] = b ? json(b->index) : json(nullptr);
  if (s.reference_geomean()) r["reference_geomean_ms"] = *s.reference_geomean();
  return r;
}

}  // namespace kopt::agent::tools::get_history
