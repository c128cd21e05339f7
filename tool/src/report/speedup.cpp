#include "report/speedup.h"

#include "report/text.h"

namespace kopt::report::speedup {

using model::Attempt;
using text::finite_positive;

std::string label_of(const Attempt& a) {
  std::string l = "#" + std::to_string(a.index);
  if (!a.label.empty()) l += " " + a.label;
  else if (a.kind != model::AttemptKind::candidate) l += std::string(" ") + model::attempt_kind_name(a.kind);
  return l;
}

// Base median / candidate median on case `name`. Reference mode: the
// reference timed with this attempt when it was, else the reference
// attempt's. Initial mode: the initial kernel's median.
std::optional<double> case_speedup(const Attempt& a, const std::string& name, const Base& base,
                                   double* ref_ms, double* own_ms) {
  for (const model::CaseResult& c : a.result.cases) {
    if (c.name != name || !c.latency || !finite_positive(c.latency->median_ms)) continue;
    std::optional<double> r;
    if (base.initial)
      r = model::case_median_ms(*base.initial, name);
    else if (c.reference_latency && finite_positive(c.reference_latency->median_ms))
      r = c.reference_latency->median_ms;
    else if (base.ref)
      r = model::case_median_ms(*base.ref, name);
    if (!r) return std::nullopt;
    if (ref_ms) *ref_ms = *r;
    if (own_ms) *own_ms = c.latency->median_ms;
    return *r / c.latency->median_ms;
  }
  return std::nullopt;
}

std::optional<double> geomean_speedup(const Attempt& a, const Base& base) {
  if (a.result.verdict != model::Verdict::ok || !a.result.geomean_ms ||
      !finite_positive(*a.result.geomean_ms))
    return std::nullopt;
  if (base.initial) {
    if (base.initial->result.geomean_ms && finite_positive(*base.initial->result.geomean_ms))
      return *base.initial->result.geomean_ms / *a.result.geomean_ms;
    return std::nullopt;
  }
  if (a.result.reference_geomean_ms && finite_positive(*a.result.reference_geomean_ms))
    return *a.result.reference_geomean_ms / *a.result.geomean_ms;
  if (base.ref && base.ref->result.geomean_ms && finite_positive(*base.ref->result.geomean_ms))
    return *base.ref->result.geomean_ms / *a.result.geomean_ms;
  return std::nullopt;
}

// Reference mode when any attempt has a speedup over the reference; else the
// first initial kernel that passed, when there is one.
Base base_for(const std::vector<Attempt>& history, const std::vector<std::string>& cases) {
  Base b;
  b.ref = model::first_ok(history, model::AttemptKind::reference);
  for (const Attempt& a : history) {
    if (a.result.verdict != model::Verdict::ok) continue;
    if (geomean_speedup(a, b)) return b;
    for (const std::string& c : cases)
      if (case_speedup(a, c, b)) return b;
  }
  for (const Attempt& a : history)
    if (a.kind == model::AttemptKind::initial && a.result.verdict == model::Verdict::ok && a.result.geomean_ms &&
        finite_positive(*a.result.geomean_ms)) {
      b.initial = &a;
      break;
    }
  return b;
}

}  // namespace kopt::report::speedup
