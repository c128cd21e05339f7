#include "eval/evaluator.h"

#include "eval/kernel_params.h"

#include <algorithm>
#include <stdexcept>

#include "util/error.h"
#include "util/fs.h"
#include "util/text.h"

namespace kopt::eval {
namespace {

/// The first line of a compile log that says "error" (else its first line),
/// clipped: an exception's message is one line.
std::string first_error_line(const std::string& log) {
  std::string first;
  size_t start = 0;
  while (start < log.size()) {
    const size_t end = std::min(log.find('\n', start), log.size());
    const std::string line = log.substr(start, end - start);
    if (first.empty() && line.find_first_not_of(" \t\r") != std::string::npos) first = line;
    if (line.find("error") != std::string::npos) return clip(line, 300);
    start = end + 1;
  }
  return first.empty() ? "no log" : clip(first, 300);
}

}  // namespace

Evaluator::Evaluator(const spec::Spec& spec, EvaluatorOptions options)
    : spec_(spec), opt_(std::move(options)) {
  compiler_ = std::make_unique<cuda::Compiler>(opt_.cache_dir);
  SupervisorOptions so;
  so.worker_argv = opt_.worker_argv;
  so.worker_env = opt_.worker_env;
  // The worker's own watchdog ends a hung launch after launch_timeout_ms (10
  // per timing batch); the supervisor's is the backstop for a worker that
  // stops answering altogether.
  so.silence_timeout = std::chrono::milliseconds(static_cast<int64_t>(spec_.timing.launch_timeout_ms * 12) + 60000);
  so.worker_log = opt_.worker_log;
  so.on_progress = opt_.on_progress;
  so.total_timeout = opt_.total_timeout;
  so.shutdown_grace = opt_.shutdown_grace;
  supervisor_ = std::make_unique<Supervisor>(so);
}

const model::DeviceInfo& Evaluator::device() {
  if (!device_) {
    nlohmann::json hello = supervisor_->hello();
    model::DeviceInfo d = model::DeviceInfo::from_json(hello.at("device"));
    if (const auto n = hello.find("device_count"); n != hello.end() && n->is_number_integer() && n->get<int>() > 0)
      device_count_ = n->get<int>();
    util::device_lock_dir();  // a lock folder that cannot be used fails now, before any work
    device_key_ = util::device_lock_key(d.uuid, d.ordinal);  // by UUID where the worker reports one
    device_uuid_ = d.uuid;
    device_ = std::move(d);
  }
  return *device_;
}

void Evaluator::lock_device() {
  if (device_lock_.held()) return;
  const model::DeviceInfo& d = device();
  util::DeviceLock::Options lo;
  lo.say = opt_.on_lock_wait;
  device_lock_ = util::DeviceLock::acquire(device_key_, "the GPU " + device_key_ + " (" + d.name + ")", lo);
}

std::string Evaluator::arch() {
  if (arch_.empty()) arch_ = opt_.arch.empty() ? device().arch() : opt_.arch;
  return arch_;
}

spec::Launch Evaluator::launch_for(const Candidate& c) const {
  if (c.launch) return *c.launch;
  if (spec_.initial && spec_.initial->launch) return *spec_.initial->launch;
  return spec_.launch;
}

cuda::CompileResult Evaluator::compile(const Candidate& c) {
  cuda::CompileRequest r;
  r.source = c.source;
  r.source_name = c.source_name;
  r.entry = !c.entry.empty() ? c.entry : (spec_.initial ? spec_.initial->entry : "");
  if (r.entry.empty())
    throw SpecError("kopt.eval.601", "no entry point for " + c.label +
                                         ": give --entry, a '// kopt:entry NAME' line, or the spec's initial.entry");
  r.arch = arch_.empty() ? arch() : arch_;
  r.options = spec_.tuning.compile_options;
  r.options.insert(r.options.end(), c.options.begin(), c.options.end());
  r.defines = c.params;
  cuda::CompileResult out = compiler_->compile(r);
  // The parameters against the signature, from the PTX (no GPU needed).
  if (out.ok && out.param_sizes)
    if (std::optional<std::string> why = param_mismatch(expected_params(spec_.signature), *out.param_sizes)) {
      out.ok = false;
      out.error_name = kParamMismatch;
      out.detail = *why;
      out.log = *why + (out.log.empty() ? "" : "\n" + out.log);
    }
  return out;
}

Candidate Evaluator::reference_candidate() const {
  const spec::KernelSource& k = spec_.reference.kernel;
  Candidate c;
  c.label = "reference";
  c.source = fs::read_file(k.source, "kernel source", fs::kSourceMaxBytes);
  c.source_name = k.source.filename().string();
  c.entry = k.entry;
  c.launch = k.launch ? *k.launch : spec_.launch;
  c.options = k.compile_options;
  c.params = k.defines;
  return c;
}

EvalRequest Evaluator::build_request(const Candidate& cand, const cuda::CompileResult& compiled,
                                     const std::string& candidate_cubin) {
  EvalRequest rq;
  rq.id = next_id_++;
  rq.candidate.kind = KernelRef::Kind::cubin;
  rq.candidate.cubin_path = candidate_cubin;
  rq.candidate.entry = compiled.lowered_entry.empty() ? cand.entry : compiled.lowered_entry;
  rq.candidate.label = cand.label;
  rq.timing = spec_.timing;
  rq.checks = spec_.checks;
  rq.seed = spec_.seed;
  rq.time = opt_.time;
  rq.time_reference = opt_.time_reference;
  rq.gemm = spec_.reference.gemm;

  std::optional<spec::Launch> ref_launch;
  switch (spec_.reference.kind) {
    case spec::Reference::Kind::npy:
      rq.reference_is_golden = true;
      rq.time_reference = false;
      break;
    case spec::Reference::Kind::cublas:
      rq.reference.kind = KernelRef::Kind::cublas_sgemm;
      rq.reference.label = "cuBLAS sgemm";
      break;
    case spec::Reference::Kind::kernel: {
      if (!reference_cubin_) {
        Candidate rc = reference_candidate();
        cuda::CompileResult r = compile(rc);
        if (!r.ok)
          throw SpecError("kopt.eval.602", spec_.reference.kernel.source.string() + ": the reference kernel does not compile (" +
                                               r.error_name + "): " + first_error_line(r.log) +
                                               " (the whole log: kopt evaluate --kernel " +
                                               spec_.reference.kernel.source.filename().string() + " --entry " + rc.entry +
                                               ")");
        reference_cubin_ = {cuda::store_cubin(opt_.cache_dir, r).string(),
                            r.lowered_entry.empty() ? rc.entry : r.lowered_entry};
      }
      rq.reference.kind = KernelRef::Kind::cubin;
      rq.reference.cubin_path = reference_cubin_->first;
      rq.reference.entry = reference_cubin_->second;
      rq.reference.label = "reference";
      ref_launch = spec_.reference.kernel.launch ? *spec_.reference.kernel.launch : spec_.launch;
      break;
    }
  }

  const spec::Launch launch = launch_for(cand);
  for (const spec::Case& c : spec_.cases) {
    if (!opt_.only_cases.empty() &&
        std::find(opt_.only_cases.begin(), opt_.only_cases.end(), c.name) == opt_.only_cases.end())
      continue;
    if (c.role == spec::CaseRole::performance && !cand.performance_cases.empty() &&
        std::find(cand.performance_cases.begin(), cand.performance_cases.end(), c.name) ==
            cand.performance_cases.end())
      continue;
    CaseSpec cs;
    cs.name = c.name;
    cs.role = c.role;
    if (auto it = cand.screen_ms.find(c.name); it != cand.screen_ms.end() && c.role == spec::CaseRole::performance)
      cs.screen_ms = it->second;
    cs.sizes = c.sizes;
    cs.weight = c.weight;
    const spec::Bindings b = spec::bindings_for(c, cand.params);
    for (const spec::Param& p : spec_.signature) {
      ArgSpec a;
      a.name = p.name;
      a.is_buffer = p.is_buffer;
      a.dtype = p.dtype;
      a.role = p.role;
      if (p.is_buffer) {
        a.count = p.count.eval(b);
        auto ov = c.input_overrides.find(p.name);
        a.generator = ov != c.input_overrides.end() ? ov->second : p.generator;
      } else if (p.float_value) {
        a.float_value = *p.float_value;
      } else {
        a.int_value = p.value.eval(b);
        a.float_value = static_cast<double>(a.int_value);
      }
      cs.args.push_back(a);
    }
    cs.launch = resolve_launch(launch, c, cand.params);
    if (ref_launch) cs.reference_launch = resolve_launch(*ref_launch, c, spec_.reference.kernel.defines);
    cs.tolerance = spec_.tolerance;
    if (rq.reference_is_golden) {
      for (const auto& [out, path] : spec_.reference.npy) {
        std::string s = path.string();
        const auto pos = s.find("{case}");
        if (pos != std::string::npos) s.replace(pos, 6, c.name);
        cs.golden_npy[out] = s;
      }
    }
    rq.cases.push_back(std::move(cs));
  }
  if (rq.cases.empty()) throw SpecError("kopt.eval.603", "no case left to evaluate (check --cases)");
  return rq;
}

Result Evaluator::evaluate(const Candidate& cand, std::optional<bool> time_reference) {
  return run(cand, compile(cand), time_reference);
}

Result Evaluator::run(const Candidate& cand, const cuda::CompileResult& compiled,
                      std::optional<bool> time_reference) {
  start(cand, compiled, time_reference);
  return finish();
}

void Evaluator::start(const Candidate& cand, const cuda::CompileResult& compiled,
                      std::optional<bool> time_reference) {
  if (started_)
    throw std::logic_error("Evaluator::start: a candidate is started already; call finish() first");
  Started st;
  st.compile_log = compiled.log;
  st.compile_ms = compiled.compile_ms;
  st.compile_cache_hit = compiled.cache_hit;
  if (!compiled.ok) {
    Result res;
    res.verdict = Verdict::compile_error;
    res.error_name = compiled.error_name;
    res.detail = compiled.detail.empty() ? "compilation failed (" + compiled.error_name + ")" : compiled.detail;
    st.done = std::move(res);
    started_ = std::move(st);
    return;
  }
  const std::string cubin = cuda::store_cubin(opt_.cache_dir, compiled).string();
  EvalRequest rq = build_request(cand, compiled, cubin);
  if (time_reference) rq.time_reference = *time_reference && !rq.reference_is_golden;
  device();  // start the worker (throws NoDeviceError)
  lock_device();  // may wait for another process's measurements (throws util::Interrupted)
  supervisor_->begin_evaluate(rq);  // throws only when no worker starts: nothing started then
  started_ = std::move(st);
}

Result Evaluator::finish() {
  if (!started_)
    throw std::logic_error("Evaluator::finish: no candidate is started (call start() first)");
  Started st = std::move(*started_);
  started_.reset();
  Result res = st.done ? std::move(*st.done) : supervisor_->finish_evaluate();
  if (!st.done) mark_device(res);
  res.compile_log = std::move(st.compile_log);
  res.compile_ms = st.compile_ms;
  res.compile_cache_hit = st.compile_cache_hit;
  return res;
}

}  // namespace kopt::eval

namespace kopt::eval {

Result Evaluator::evaluate_cublas_baseline() {
  std::optional<spec::Reference::Gemm> gemm = spec_.cublas_baseline;
  if (!gemm && spec_.reference.kind == spec::Reference::Kind::cublas) gemm = spec_.reference.gemm;
  if (!gemm)
    throw SpecError("kopt.eval.604", "the spec has no cuBLAS baseline (add \"baseline\": {\"kind\": \"cublas\", ...})");
  Candidate c;
  c.label = "cuBLAS sgemm (FP32, no TF32)";
  cuda::CompileResult fake;
  fake.ok = true;
  EvalRequest rq = build_request(c, fake, "");
  rq.candidate.kind = KernelRef::Kind::cublas_sgemm;
  rq.candidate.label = c.label;
  rq.gemm = *gemm;
  rq.time_reference = false;
  device();
  lock_device();
  Result res = supervisor_->evaluate(rq);
  mark_device(res);
  return res;
}

void Evaluator::mark_device(Result& r) const {
  if (opt_.device >= 0) r.device = opt_.device;
  r.device_uuid = device_uuid_;
}

}  // namespace kopt::eval
