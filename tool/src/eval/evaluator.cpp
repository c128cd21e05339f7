#include "eval/evaluator.h"

#include "eval/kernel_params.h"
#include "spec/local_include.h"

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "util/error.h"
#include "util/text.h"

namespace kopt::eval {
namespace {

using cuda::first_error_line;

}  // namespace

Evaluator::Evaluator(const spec::Spec& spec, EvaluatorOptions options)
    : spec_(spec), opt_(std::move(options)) {
  cuda::CompilerOptions co;
  co.helper_argv = opt_.compile_argv;
  co.timeout_s = opt_.compile_timeout_s;
  compiler_ = std::make_unique<cuda::Compiler>(opt_.cache_dir, co);
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
  if (spec_.initial) return spec::kernel_launch(spec_, *spec_.initial);
  return spec_.launch;
}

std::vector<const spec::Case*> Evaluator::cases_for(const Candidate& cand) const {
  std::vector<const spec::Case*> out;
  for (const spec::Case& c : spec_.cases) {
    if (!opt_.only_cases.empty() &&
        std::find(opt_.only_cases.begin(), opt_.only_cases.end(), c.name) == opt_.only_cases.end())
      continue;
    if (c.role == spec::CaseRole::performance && !cand.performance_cases.empty() &&
        std::find(cand.performance_cases.begin(), cand.performance_cases.end(), c.name) ==
            cand.performance_cases.end())
      continue;
    out.push_back(&c);
  }
  return out;
}

cuda::CompileRequest Evaluator::request_for(const Candidate& c, const std::map<std::string, int64_t>& case_defines) {
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
  r.defines = case_defines;  // the spec's defines; a candidate's own parameters come after them
  for (const auto& [name, v] : c.params) r.defines[name] = v;
  for (const spec::Param& p : spec_.signature)
    if (p.is_buffer && p.role == spec::Role::constant) r.symbols.push_back(p.name);
  return r;
}

namespace {

/// "case 'x' (W=4096, H=17)": which compile of a candidate a message is about.
std::string case_note(const spec::Case& c) {
  std::string values;
  for (const auto& [k, v] : c.defines) values += (values.empty() ? "" : ", ") + k + "=" + std::to_string(v);
  return "case '" + c.name + "'" + (values.empty() ? "" : " (" + values + ")");
}

/// Refuses a compile result (ok=false) with a reason the tool found.
void refuse(cuda::CompileResult& out, const char* error_name, const std::string& why) {
  out.ok = false;
  out.error_name = error_name;
  out.detail = why;
  out.log = why + (out.log.empty() ? "" : "\n" + out.log);
}

/// A sum tolerance's terms and partials for one case and candidate (the
/// loader checked them with the tuning parameters at their first values;
/// another configuration can make the output's count no multiple of partials).
void resolve_sum(spec::Tolerance& tol, const std::string& out, const CaseSpec& cs, const spec::Bindings& b,
                 const std::string& label) {
  if (tol.kind != spec::Tolerance::Kind::sum) return;
  int64_t count = 0;
  for (const ArgSpec& a : cs.args)
    if (a.name == out) count = a.count;
  tol.terms_value = tol.terms.eval(b);
  tol.partials_value = spec::sum_partials(tol, count, b);
  if (tol.terms_value < 1 || tol.partials_value < 1) {
    const std::string layout = !tol.partials.empty() ? "partials '" + tol.partials.text() + "'"
                               : !tol.totals.empty() ? "totals '" + tol.totals.text() + "'"
                                                     : "one total";
    throw SpecError("kopt.eval.606", "$.tolerance." + out + " for " + label + ", case " + cs.name + ": terms '" +
                                         tol.terms.text() + "' is " + std::to_string(tol.terms_value) +
                                         " (at least 1 is needed) and " + layout + " must divide the " +
                                         std::to_string(count) + " elements of '" + out + "' into whole totals");
  }
}

/// The checks of a compiled kernel against the spec: its parameters against
/// the signature (from the PTX, no GPU needed), each constant against its
/// __constant__ symbol in every case. Refuses `out` on a mismatch.
void check_compiled(cuda::CompileResult& out, const spec::Spec& spec, const Candidate& c,
                    const std::vector<const spec::Case*>& cases) {
  if (!out.ok) return;
  if (out.param_sizes)
    if (std::optional<std::string> why = param_mismatch(expected_params(spec.signature), *out.param_sizes)) {
      refuse(out, kParamMismatch, *why);
      return;
    }
  for (const spec::Param& p : spec.signature) {
    if (!p.is_buffer || p.role != spec::Role::constant) continue;
    const auto sym = out.symbols.find(p.name);
    if (sym == out.symbols.end() || !sym->second.bytes) continue;  // the worker checks it on the GPU
    for (const spec::Case* k : cases) {
      const int64_t need = p.count.eval(spec::bindings_for(*k, c.params)) * static_cast<int64_t>(spec::dtype_size(p.dtype));
      if (need > static_cast<int64_t>(*sym->second.bytes)) {
        refuse(out, "KOPT_CONSTANT_MISMATCH",
               "the constant '" + p.name + "' needs " + std::to_string(need) + " bytes for case '" + k->name +
                   "', but the kernel's __constant__ " + p.name + " holds " + std::to_string(*sym->second.bytes));
        return;
      }
    }
  }
}

/// The constants a failed compile found undeclared, when those are its only
/// errors: NVRTC reports a name expression it cannot resolve at its line of
/// `__nv_name_map`, followed by that line (`#pragma nv_mangled_name
/// &d_slopes`), as `identifier "d_slopes" is undefined`, or, for a qualified
/// name whose namespace is missing, `name followed by "::" must be a class or
/// namespace name`. Empty when any other error is in the log.
std::set<std::string> undeclared_constants(const std::string& log, const spec::Spec& spec) {
  std::set<std::string> names, constants;
  for (const spec::Param& p : spec.signature)
    if (p.is_buffer && p.role == spec::Role::constant) constants.insert(p.name);
  static const std::regex summary(R"re(^\d+ errors? detected in the compilation)re");
  static const std::regex pragma(R"re(#pragma nv_mangled_name\s*&\s*(\S+))re");
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("error") == std::string::npos || std::regex_search(line, summary)) continue;
    if (line.rfind("__nv_name_map(", 0) != 0) return {};  // an error of the kernel's own
    std::smatch m;
    std::string next;
    while (std::getline(in, next) && next.find_first_not_of(" \t") == std::string::npos) {
    }
    if (!std::regex_search(next, m, pragma) || !constants.count(m[1].str())) return {};
    names.insert(m[1].str());
  }
  return names;
}

}  // namespace

cuda::CompileResult Evaluator::compile_for(const Candidate& c, const std::vector<const spec::Case*>& cases) {
  const std::map<std::string, int64_t> defines =
      cases.empty() ? spec_.constant_defines() : cases.front()->defines;
  cuda::CompileResult out = compiler_->compile(request_for(c, defines));
  check_compiled(out, spec_, c, cases);
  return out;
}

std::vector<Evaluator::CaseGroup> Evaluator::case_groups(const Candidate& c) const {
  const std::vector<const spec::Case*> cases = cases_for(c);
  if (!spec_.has_case_defines() || cases.size() <= 1)
    return {{cases.empty() ? spec_.constant_defines() : cases.front()->defines, cases}};
  std::vector<CaseGroup> groups;
  for (const spec::Case* k : cases) {
    auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == k->defines; });
    if (g == groups.end()) groups.push_back({k->defines, {k}});
    else g->second.push_back(k);
  }
  return groups;
}

size_t Evaluator::compile_parts(const Candidate& c) const { return case_groups(c).size(); }

cuda::CompileResult Evaluator::compile_part(const Candidate& c, size_t i) {
  const std::vector<CaseGroup> groups = case_groups(c);
  if (i >= groups.size())
    throw std::logic_error("Evaluator::compile_part: part " + std::to_string(i) + " of " +
                           std::to_string(groups.size()));
  cuda::CompileResult r = compile_for(c, groups[i].second);
  if (!r.ok && groups.size() > 1) {
    const std::string head = "compiled for " + case_note(*groups[i].second.front());
    r.log = "[" + head + "]\n" + r.log;
    if (!r.detail.empty()) r.detail = head + ": " + r.detail;
  }
  return r;
}

cuda::CompileResult Evaluator::join_parts(const Candidate& c, std::vector<cuda::CompileResult> parts) const {
  (void)c;
  if (parts.empty()) throw std::logic_error("Evaluator::join_parts: no part");
  // The first part that failed, else the first; compile time summed over the
  // parts (CPU time spent, as when they run one after another).
  double ms = 0;
  bool all_hits = true;
  for (const cuda::CompileResult& r : parts) {
    ms += r.compile_ms;
    all_hits = all_hits && r.cache_hit;
  }
  auto failed = std::find_if(parts.begin(), parts.end(), [](const cuda::CompileResult& r) { return !r.ok; });
  cuda::CompileResult out = std::move(failed != parts.end() ? *failed : parts.front());
  out.compile_ms = ms;
  out.cache_hit = all_hits;
  return out;
}

cuda::CompileResult Evaluator::compile(const Candidate& c) {
  const size_t n = compile_parts(c);
  std::vector<cuda::CompileResult> parts;
  for (size_t i = 0; i < n; ++i) {
    parts.push_back(compile_part(c, i));
    if (!parts.back().ok) break;  // one after another: the first failure is the answer
  }
  return join_parts(c, std::move(parts));
}

KernelRef Evaluator::kernel_ref(const cuda::CompileResult& r, const std::string& cubin, const std::string& entry,
                                const std::string& label) const {
  KernelRef k;
  k.kind = KernelRef::Kind::cubin;
  k.cubin_path = cubin;
  k.entry = r.lowered_entry.empty() ? entry : r.lowered_entry;
  k.label = label;
  for (const auto& [name, sym] : r.symbols) k.symbols[name] = sym.lowered;
  return k;
}

Candidate Evaluator::reference_candidate() const {
  const spec::KernelSource& k = spec_.reference.kernel;
  Candidate c;
  c.label = "reference";
  c.source = spec::read_kernel_text(k.source);
  c.source_name = k.source.filename().string();
  c.entry = k.entry;
  c.launch = spec::kernel_launch(spec_, k);
  c.options = k.compile_options;
  c.params = k.defines;
  return c;
}

const KernelRef& Evaluator::reference_for(const spec::Case& kase) {
  if (auto it = reference_kernels_.find(kase.defines); it != reference_kernels_.end()) return it->second;
  Candidate rc = reference_candidate();
  cuda::CompileResult r = compile_for(rc, {&kase});
  if (const std::set<std::string> absent = r.ok ? std::set<std::string>{} : undeclared_constants(r.log, spec_);
      !absent.empty()) {
    // A reference that computes the answer its own way need not read the
    // constant memory: compiled without the symbols it does not declare,
    // which the worker then does not fill.
    cuda::CompileRequest req = request_for(rc, kase.defines);
    req.symbols.erase(std::remove_if(req.symbols.begin(), req.symbols.end(),
                                     [&](const std::string& n) { return absent.count(n) > 0; }),
                      req.symbols.end());
    r = compiler_->compile(req);
    check_compiled(r, spec_, rc, {&kase});
  }
  if (!r.ok)
    throw SpecError("kopt.eval.602", spec_.reference.kernel.source.string() + ": the reference kernel does not compile" +
                                         (spec_.has_case_defines() ? " for " + case_note(kase) : std::string()) +
                                         " (" + r.error_name + "): " + first_error_line(r.log) +
                                         " (the whole log: kopt evaluate --kernel " +
                                         spec_.reference.kernel.source.filename().string() + " --entry " + rc.entry +
                                         ")");
  KernelRef ref = kernel_ref(r, cuda::store_cubin(opt_.cache_dir, r).string(), rc.entry, "reference");
  return reference_kernels_.emplace(kase.defines, std::move(ref)).first->second;
}

EvalRequest Evaluator::build_request(const Candidate& cand, const cuda::CompileResult& compiled,
                                     const std::string& candidate_cubin) {
  EvalRequest rq;
  rq.id = next_id_++;
  rq.candidate = kernel_ref(compiled, candidate_cubin, cand.entry, cand.label);
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
      rq.reference.kind = KernelRef::Kind::cubin;
      rq.reference.label = "reference";
      ref_launch = spec::kernel_launch(spec_, spec_.reference.kernel);
      break;
    }
  }

  const spec::Launch launch = launch_for(cand);
  const bool per_case = spec_.has_case_defines();
  for (const spec::Case* kase : cases_for(cand)) {
    const spec::Case& c = *kase;
    CaseSpec cs;
    cs.name = c.name;
    cs.role = c.role;
    if (auto it = cand.screen_ms.find(c.name); it != cand.screen_ms.end() && c.role == spec::CaseRole::performance)
      cs.screen_ms = it->second;
    if (auto it = cand.screen_median_ms.find(c.name);
        it != cand.screen_median_ms.end() && c.role == spec::CaseRole::performance)
      cs.screen_median_ms = it->second;
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
      (p.is_buffer && p.role == spec::Role::constant ? cs.constants : cs.args).push_back(a);
    }
    cs.launch = resolve_launch(launch, c, cand.params);
    if (ref_launch) cs.reference_launch = resolve_launch(*ref_launch, c, spec_.reference.kernel.defines);
    if (spec_.reference.kind == spec::Reference::Kind::kernel) {
      const KernelRef& ref = reference_for(c);
      if (rq.reference.cubin_path.empty()) rq.reference = ref;
      else if (ref.cubin_path != rq.reference.cubin_path) cs.reference_kernel = ref;
    }
    if (per_case && cand.source.size() && !candidate_cubin.empty()) {
      // This case's own compile of the candidate (a cache hit: compile() made it).
      cuda::CompileResult own = compile_for(cand, {&c});
      if (!own.ok)
        throw SpecError("kopt.eval.605", cand.label + " does not compile for " + case_note(c) + " (" +
                                             own.error_name + "): " + first_error_line(own.log));
      if (own.key != compiled.key)
        cs.kernel = kernel_ref(own, cuda::store_cubin(opt_.cache_dir, own).string(), cand.entry, cand.label);
    }
    cs.tolerance = spec_.tolerance;
    for (auto& [out, tol] : cs.tolerance) resolve_sum(tol, out, cs, b, cand.label);
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
    res.detail = compiled.detail.empty()
                     ? "compilation failed (" + compiled.error_name + "): " + first_error_line(compiled.log)
                     : compiled.detail;
    st.done = std::move(res);
    started_ = std::move(st);
    return;
  }
  const std::string cubin = cuda::store_cubin(opt_.cache_dir, compiled).string();
  EvalRequest rq;
  try {
    rq = build_request(cand, compiled, cubin);
  } catch (const SpecError& e) {
    if (e.id() != "kopt.eval.606") throw;
    // This configuration's output is no whole number of the sum tolerance's
    // totals: it cannot be checked, so it is not run (like a launch over the
    // device's limits).
    Result res;
    res.verdict = Verdict::infeasible;
    res.detail = e.what();
    st.done = std::move(res);
    started_ = std::move(st);
    return;
  }
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
