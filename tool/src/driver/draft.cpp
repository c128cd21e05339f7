// A run from a description alone: the device probed before any spec exists,
// the proposer (the agent) drafts the workload in a staging folder, and the
// run folder adopts what it wrote.
#include <unistd.h>

#include <chrono>
#include <iostream>

#include "eval/evaluator_pool.h"
#include "eval/supervisor.h"
#include "store/fingerprint.h"
#include "spec/local_include.h"
#include "driver/driver_impl.h"
#include "driver/proposers.h"
#include "util/error.h"

namespace kopt::driver {
namespace {

namespace stdfs = std::filesystem;

/// The candidate of a kernel the drafted spec names.
spec::Candidate kernel_candidate(const spec::KernelSource& k, const spec::Launch& dflt, const char* label) {
  spec::Candidate c;
  c.label = label;
  c.source = spec::read_kernel_text(k.source);
  c.source_name = k.source.filename().string();
  c.entry = k.entry;
  c.launch = k.launch ? *k.launch : dflt;
  c.options = k.compile_options;
  c.params = k.defines;
  return c;
}

/// The drafted reference and initial kernels must compile; with a GPU the
/// reference must pass its own check.
nlohmann::json check_workload(const OptimizeOptions& o, const std::string& arch, bool compile_only,
                              const spec::Spec& s) {
  // The first worker of the plan (its device, its launcher), as the run's.
  eval::EvaluatorOptions eo = eval::on_worker(evaluator_options(o), eval::plan_workers(o.workers).front());
  eo.arch = arch;
  eo.time = false;
  eval::Evaluator ev(s, eo);
  ev.arch();
  auto error = [](const std::string& what, const std::string& log) {
    return nlohmann::json{{"error", what + (log.size() > 6000 ? log.substr(0, 6000) + "..." : log)}};
  };
  nlohmann::json checks = nlohmann::json::object();
  if (s.reference.kind == spec::Reference::Kind::kernel) {
    spec::Candidate rc = kernel_candidate(s.reference.kernel, s.launch, "reference");
    cuda::CompileResult cr = ev.compile(rc);
    if (!cr.ok) return error("the reference kernel does not compile (" + cr.error_name + "):\n", cr.log);
    checks["reference"] = "compiled";
    if (!compile_only) {
      model::Result r = ev.run(rc, cr, false);
      if (r.verdict != model::Verdict::ok)
        return error("the reference kernel failed when checked against itself: " +
                         std::string(model::verdict_name(r.verdict)) + " - ",
                     r.detail.size() > 2000 ? r.detail.substr(0, 2000) + "..." : r.detail);
      checks["reference"] = "ran and passed its self-check";
    }
  }
  if (s.initial) {
    spec::Candidate ic = kernel_candidate(*s.initial, s.launch, "initial");
    cuda::CompileResult cr = ev.compile(ic);
    if (!cr.ok) return error("the initial kernel does not compile (" + cr.error_name + "):\n", cr.log);
    checks["initial"] = "compiled";
  }
  return {{"checks", checks}};
}

/// The device before there is a spec: the hello of the plan's first worker.
void probe_device(const OptimizeOptions& o, propose::DraftContext& ctx) {
  const eval::WorkerSlot first = eval::plan_workers(o.workers).front();
  eval::SupervisorOptions so;
  so.worker_argv = first.argv;
  so.worker_env = first.env;
  eval::Supervisor sup(so);
  try {
    ctx.device = model::DeviceInfo::from_json(sup.hello().at("device"));
  } catch (const NoDeviceError&) {
    if (o.arch.empty()) throw;
  }
  ctx.arch = !o.arch.empty() ? o.arch : ctx.device->arch();
}

}  // namespace

void Driver::preset_device(const propose::DraftContext& ctx) {
  device_ = ctx.device;
  arch_ = ctx.arch;
  budget_since_ = ctx.started;
}

void Driver::adopt_draft(const stdfs::path& drafted) {
  // The drafted workload and the drafting calls move into the run folder.
  const stdfs::path dir = store_->dir();
  std::vector<stdfs::path> entries;
  for (const auto& e : stdfs::directory_iterator(drafted)) entries.push_back(e.path());
  for (const auto& from : entries) {
    const stdfs::path to = dir / from.filename();
    if (stdfs::exists(to)) stdfs::remove_all(to);
    stdfs::rename(from, to);
  }
  stdfs::remove_all(drafted);
  // The spec now names the kernel files beside it, in the run folder:
  // spec.json (and its hash in run.json) are rewritten before any attempt.
  spec_ = spec::load_spec(dir / "spec.generated.json");
  initial_ = initial_candidate(spec_);
  store_->replace_spec(spec::to_json(spec_));
  store_ = store::RunStore::open(dir, store::spec_fingerprint(spec_), store_->release_lock());
}

int optimize_from_description(const OptimizeOptions& o, std::filesystem::path* run_dir) {
  propose::ProposerPtr proposer = make_proposer(o, nullptr);
  propose::DraftContext ctx;
  ctx.description = o.description;
  // The budget's minutes count from here: the drafting is part of the run.
  ctx.started = std::chrono::steady_clock::now();
  ctx.budget = &o.budget;
  std::unique_ptr<search::StopCondition> drafting_time;
  if (o.budget.minutes > 0)
    drafting_time = search::time_budget(std::chrono::duration<double>(o.budget.minutes * 60), {}, ctx.started);
  ctx.budget_left = [&drafting_time] {
    model::BudgetLeft left;
    if (drafting_time) drafting_time->left(left);
    return left;
  };
  probe_device(o, ctx);
  const stdfs::path results = o.results_dir.empty() ? stdfs::path("results") : o.results_dir;
  ctx.staging = stdfs::absolute(results) /
                ("agent-draft-" + std::to_string(::getpid()) + "-" +
                 std::to_string(std::chrono::system_clock::now().time_since_epoch().count()));
  stdfs::create_directories(ctx.staging);
  ctx.check_workload = [&o, &ctx](const spec::Spec& s) { return check_workload(o, ctx.arch, !ctx.device, s); };
  const std::optional<stdfs::path> spec_file = proposer->draft_workload(ctx);
  if (!spec_file) return proposer->exit_code().value_or(1);
  Driver driver(o, spec::load_spec(*spec_file), *proposer);
  driver.preset_device(ctx);
  return driver.run(run_dir, ctx.staging);
}

}  // namespace kopt::driver
