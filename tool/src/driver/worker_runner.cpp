// The GPU runner (driver/runner.h): the worker pool of a worker plan
// (eval/evaluator_pool.h), one worker per device; profiles on a worker of the
// same plan started under Nsight Compute (eval/ncu.h).
#include <iostream>

#include "eval/evaluator_pool.h"
#include "eval/ncu.h"
#include "driver/runner.h"
#include "util/error.h"
#include "util/fs.h"

namespace kopt::driver {
namespace {

nlohmann::json unavailable(const std::string& why) {
  return {{"available", false}, {"reason", "profiling unavailable: " + why}};
}

std::chrono::milliseconds seconds(double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1000)); }

class WorkerRunner final : public Runner {
 public:
  WorkerRunner(const spec::Spec& spec, const eval::EvaluatorOptions& base, const model::WorkerPlan& plan)
      : spec_(spec), base_(base), plan_(plan) {
    eval::EvaluatorPool::Options po;
    po.probe_after_failure = plan.several();  // a pool of one keeps the plain run's behaviour
    po.local_devices = plan.launcher.empty();
    pool_ = std::make_unique<eval::EvaluatorPool>(spec, base, eval::plan_workers(plan), po);
    compiler_ = &pool_->evaluator(0);
  }

  model::DeviceInfo open() override {
    compiler_ = &pool_->evaluator(pool_->open());
    return compiler_->device();
  }
  std::string arch() override { return compiler_->arch(); }
  cuda::CompileResult compile(const spec::Candidate& c) override { return compiler_->compile(c); }
  void stop_compiles(bool stopped) override { compiler_->compiler().stop(stopped); }
  size_t compile_parts(const spec::Candidate& c) override { return compiler_->compile_parts(c); }
  cuda::CompileResult compile_part(const spec::Candidate& c, size_t i) override { return compiler_->compile_part(c, i); }
  cuda::CompileResult join_parts(const spec::Candidate& c, std::vector<cuda::CompileResult> parts) override {
    return compiler_->join_parts(c, std::move(parts));
  }
  bool start_when_compiled() const override { return true; }

  size_t size() const override { return pool_->size(); }
  RunnerSlot slot(size_t i) const override {
    RunnerSlot s;
    s.device = pool_->slot(i).device;
    s.name = pool_->slot(i).name;
    if (pool_->live(i)) {
      s.gpu = pool_->evaluator(i).device().name;
      s.uuid = pool_->evaluator(i).device_uuid();
    }
    s.dropped = pool_->dropped_reason(i);
    return s;
  }
  bool idle(size_t i) const override { return pool_->idle(i); }
  size_t live_count() const override { return pool_->live_count(); }
  size_t primary() const override { return pool_->primary(); }
  void drop(size_t i, const std::string& why) override { pool_->drop(i, why); }
  void start(size_t i, spec::Candidate c, cuda::CompileResult compiled) override {
    pool_->start(i, std::move(c), std::move(compiled), false);
  }
  RunnerDone wait_any() override {
    eval::EvaluatorPool::Done d = pool_->wait_any();
    RunnerDone r;
    r.slot = d.slot;
    r.candidate = std::move(d.candidate);
    r.result = std::move(d.result);
    r.lost = std::move(d.lost);
    r.error = d.error;
    r.sent = d.sent;
    r.finished = d.finished;
    return r;
  }

  model::Result evaluate(const spec::Candidate& c, bool time_reference) override {
    return current().evaluate(c, time_reference);
  }
  model::Result evaluate_baseline() override { return current().evaluate_cublas_baseline(); }

  nlohmann::json profile(const spec::Candidate& c, const std::string& case_name,
                         const std::filesystem::path& files) override {
    const std::string ncu = eval::find_ncu();
    if (ncu.empty()) return unavailable("Nsight Compute (ncu) is not installed (not in PATH nor /usr/local/cuda/bin)");
    const size_t p = pool_->primary();
    if (p >= pool_->size()) return unavailable("no device is left");
    // The primary's worker, as the plan starts it, with ncu in front of the
    // worker command (behind a launcher: on the launcher's host).
    std::filesystem::create_directories(files);
    const std::filesystem::path log = files / "ncu.txt";
    model::WorkerPlan profiled = plan_;
    const std::vector<std::string> prefix = eval::ncu_prefix(ncu, c.entry, log);
    profiled.command.insert(profiled.command.begin(), prefix.begin(), prefix.end());
    eval::EvaluatorOptions eo = eval::on_worker(base_, eval::plan_workers(profiled).at(p));
    eo.arch = arch();
    eo.time = false;
    eo.time_reference = false;
    eo.only_cases = {case_name};
    eo.total_timeout = seconds(eval::kNcuTimeoutS);
    eo.shutdown_grace = seconds(eval::kNcuReportGraceS);
    const cuda::CompileResult compiled = compile(c);
    if (!compiled.ok) return unavailable("the candidate does not compile (" + compiled.error_name + ")");
    std::string outcome;
    {
      eval::Evaluator ev(spec_, eo);
      try {
        const model::Result r = ev.run(c, compiled, false);
        outcome = std::string("the profiled evaluation: ") + model::verdict_name(r.verdict) +
                  (r.detail.empty() ? "" : " - " + r.detail);
      } catch (const Error& e) {
        outcome = e.what();
      }
    }  // the worker shuts down here; ncu writes its report as it exits
    std::error_code ec;
    if (!std::filesystem::exists(log, ec)) fs::write_file_atomic(log, outcome + "\n");
    return eval::read_ncu_log(log, outcome);
  }

 private:
  /// The primary slot's evaluator (the first live one; the last known when none is left).
  eval::Evaluator& current() {
    const size_t p = pool_->primary();
    return p < pool_->size() ? pool_->evaluator(p) : *compiler_;
  }

  const spec::Spec spec_;
  eval::EvaluatorOptions base_;
  model::WorkerPlan plan_;
  std::unique_ptr<eval::EvaluatorPool> pool_;
  /// Compiles (NVRTC, thread-safe): the evaluator of the primary slot as open() found it.
  eval::Evaluator* compiler_ = nullptr;
};

}  // namespace

std::unique_ptr<Runner> make_worker_runner(const spec::Spec& spec, const eval::EvaluatorOptions& base,
                                           const model::WorkerPlan& plan) {
  return std::make_unique<WorkerRunner>(spec, base, plan);
}

}  // namespace kopt::driver
