// Phase 3 of a run: what a resumed run already has, the initial kernel with
// the reference timed beside it, and the cuBLAS baseline.
#include <iostream>

#include "driver/driver_impl.h"
#include "util/interrupt.h"

namespace kopt::driver {

void Driver::replay_history() {
  for (const auto& a : store_->history()) {
    if (a.kind == model::AttemptKind::candidate) {
      proposer_.observe_recorded(a);
      count_evaluation({a.params, a.result.verdict == model::Verdict::ok, a.result.geomean_ms.value_or(0)});
    } else if (a.kind == model::AttemptKind::initial) {
      have_initial_ = true;
      if (a.result.reference_geomean_ms) reference_geomean_ = a.result.reference_geomean_ms;
      if (a.result.verdict == model::Verdict::ok) initial_geomean_ = a.result.geomean_ms;
      reference_cases_ = a.result.cases;
    } else if (a.kind == model::AttemptKind::baseline) {
      have_baseline_ = true;
    }
  }
  if (!store_->history().empty() && !o_.quiet)
    std::cerr << "kopt: resuming after " << store_->history().size() << " recorded attempt(s)\n";
}

void Driver::evaluate_initial() {
  if (!initial_ || have_initial_ || util::interrupted()) return;
  model::Result r;
  if (compile_only()) {
    if (!o_.quiet) std::cerr << "kopt: compiling the initial kernel\n";
    r = compile_only_result(runner_->compile(*initial_));
  } else {
    if (!o_.quiet) std::cerr << "kopt: evaluating the initial kernel and timing the reference\n";
    r = runner_->evaluate(*initial_, /*time_reference=*/true);
    reference_geomean_ = r.reference_geomean_ms;
    if (r.verdict == model::Verdict::ok) initial_geomean_ = r.geomean_ms;
    reference_cases_ = r.cases;
  }
  const model::Attempt& a = record(model::AttemptKind::initial, *initial_, r);
  if (!o_.quiet)
    std::cerr << "kopt: initial: " << model::verdict_name(a.result.verdict)
              << (a.result.geomean_ms ? ", geomean " + fmt(*a.result.geomean_ms) + " ms" : " - " + a.result.detail)
              << (reference_geomean_ ? "; reference geomean " + fmt(*reference_geomean_) + " ms" : "")
              << (device_ && device_->simulated && (a.result.geomean_ms || reference_geomean_) ? std::string(" (") + model::kSimulatedNote + ")" : "")
              << "\n";
}

void Driver::evaluate_baseline() {
  const bool gemm = spec_.cublas_baseline || spec_.reference.kind == spec::Reference::Kind::cublas;
  if (gemm && !have_baseline_ && !compile_only() && !util::interrupted()) {
    if (!o_.quiet) std::cerr << "kopt: timing the cuBLAS baseline (FP32, no TF32)\n";
    model::Result r = runner_->evaluate_baseline();
    with_reference(r);
    spec::Candidate c;
    c.label = "cuBLAS sgemm (FP32, no TF32)";
    record(model::AttemptKind::baseline, c, r);
  }
  for (const auto& a : store_->history())
    if (a.kind == model::AttemptKind::baseline && a.result.verdict == model::Verdict::ok) cublas_geomean_ = a.result.geomean_ms;
}

}  // namespace kopt::driver
