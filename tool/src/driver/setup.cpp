// Phase 1 and 2 of a run: the spec with its overrides, the evaluator and the
// device, the run folder; and the bookkeeping every phase shares.
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include "store/fingerprint.h"
#include "search/device_constants.h"
#include "spec/annotations.h"
#include "spec/capture.h"
#include "spec/kernel_file.h"
#include "spec/local_include.h"
#include "driver/driver_impl.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/json_read.h"
#include "util/text.h"
#include "util/thread_pool.h"

namespace kopt::driver {

std::string fmt(double v, int precision) {
  std::ostringstream ss;
  ss << std::setprecision(precision) << v;
  return ss.str();
}

unsigned compile_threads(int requested) {
  if (requested > 0) return std::min(static_cast<unsigned>(requested), max_pool_threads());
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 2 ? hw - 1 : 1;
}

namespace {

/// The spec with its performance cases replaced by the shapes of a capture
/// (spec/capture.h): the spec's own cases are checked first, so that their
/// errors name the spec; a captured shape that the spec cannot run (a buffer
/// too large, a launch out of range) names the capture file.
spec::Spec spec_with_capture(nlohmann::json doc, const OptimizeOptions& o, const nlohmann::json& capture_doc,
                             const std::string& where) {
  const spec::Spec base = spec::parse_spec(doc, o.spec);
  const spec::Capture capture = spec::parse_capture(capture_doc, where);
  spec::CaptureUse use;
  doc["cases"] = spec::cases_with_capture(base, doc["cases"], capture, where, &use);
  if (!o.quiet) {
    // A capture file may be written by hand (templates/sgemm/application_shapes.json):
    // its shapes are the application's, not necessarily captured.
    std::cerr << "kopt: application shapes from " << where << ": " << use.taken << " shape" << (use.taken == 1 ? "" : "s")
              << " of kernel '" << clip(capture.kernel) << "' as performance case" << (use.taken == 1 ? "" : "s")
              << ", weighted by their "
              << use.launches_taken << " launches";
    if (use.replaced) std::cerr << ", in place of the spec's " << use.replaced << " performance case" << (use.replaced == 1 ? "" : "s");
    std::cerr << "; the spec's " << use.correctness << " correctness case" << (use.correctness == 1 ? "" : "s") << " kept\n";
    if (use.taken < use.shapes)
      std::cerr << "kopt: application shapes from " << where << ": " << use.shapes << " distinct shapes; only the "
                << use.taken << " most frequent are tuned on (" << fmt(100.0 * static_cast<double>(use.launches_taken) /
                                                                     static_cast<double>(use.launches), 3)
                << "% of the " << use.launches << " launches)\n";
  }
  try {
    return spec::parse_spec(doc, o.spec);
  } catch (const SpecError& e) {
    std::string msg = e.what();
    const std::string prefix = "[" + e.id() + "] ";
    if (msg.rfind(prefix, 0) == 0) msg = msg.substr(prefix.size());
    throw SpecError(e.id(), where + ": a captured shape does not fit the spec: " + msg);
  }
}

}  // namespace

spec::Spec load_spec_with_overrides(const OptimizeOptions& o) {
  nlohmann::json doc = parse_json_file(o.spec, "spec");
  // Not an object: parse_spec says so, naming the spec file.
  if (!doc.is_object()) return spec::parse_spec(doc, o.spec);
  auto abs = [](const std::filesystem::path& p) { return std::filesystem::absolute(p).string(); };
  auto kernel_entry = [&](const std::filesystem::path& file, const char* flag) {
    const auto a = spec::read_kernel_annotations(file);
    nlohmann::json k = {{"source", abs(file)}};
    if (!a.entry)
      throw UsageError("kopt.opt.001", std::string(flag) + " " + fs::display(file) +
                                           ": the file needs a '// kopt:entry NAME' line");
    k["entry"] = *a.entry;
    return k;
  };
  if (!o.reference.empty()) {
    nlohmann::json r = kernel_entry(o.reference, "--reference");
    r["kind"] = "kernel";
    doc["reference"] = r;
  }
  if (!o.initial_kernel.empty()) doc["initial"] = kernel_entry(o.initial_kernel, "--initial-kernel");
  if (!o.template_source.empty()) doc["template"] = kernel_entry(o.template_source, "--template");
  // Errors in the cases of an --input-cases file name that file, not the spec.
  std::map<std::string, spec::SectionOrigin> sections;
  if (!o.input_cases.empty()) {
    const std::string where = fs::display(o.input_cases);
    const nlohmann::json cases = parse_json_file(o.input_cases, "input cases file");
    if (spec::is_capture(cases)) return spec_with_capture(doc, o, cases, where);
    const bool wrapped = cases.is_object() && cases.contains("cases");
    if (cases.is_object()) {
      for (const auto& [key, value] : cases.items()) {
        if (key != "cases")
          throw SpecError("kopt.spec.105", where + ": " + json_path_child("$", key) + ": unknown key '" +
                                               json_shown(key) +
                                               "'; an --input-cases file holds {\"cases\": [...]} or the array itself");
      }
    }
    doc["cases"] = wrapped ? cases["cases"] : cases;
    sections["cases"] = spec::SectionOrigin{where, wrapped ? "$.cases" : "$"};
  }
  // Relative paths inside the document stay relative to the spec's folder.
  return spec::parse_spec(doc, o.spec, sections);
}

spec::Candidate template_candidate(const spec::Spec& s) {
  spec::Candidate c = eval::candidate_from_file(s.template_kernel->source);
  if (!s.template_kernel->entry.empty()) c.entry = s.template_kernel->entry;
  if (s.template_kernel->launch) c.launch = s.template_kernel->launch;
  if (!c.launch)
    throw SpecError("kopt.opt.002", "the template " + s.template_kernel->source.string() +
                                        " has no launch: give template.launch in the spec or kopt: annotations");
  c.options.insert(c.options.end(), s.template_kernel->compile_options.begin(),
                   s.template_kernel->compile_options.end());
  return c;
}

std::optional<spec::Candidate> initial_candidate(const spec::Spec& s) {
  if (!s.initial) return std::nullopt;
  spec::Candidate c = eval::candidate_from_file(s.initial->source);
  c.label = "initial: " + s.initial->source.filename().string();
  if (c.entry.empty()) c.entry = s.initial->entry;
  if (!c.launch && s.initial->launch) c.launch = s.initial->launch;
  // Parameters baked into a previous run's best.cu come back as kopt:param lines.
  const auto a = spec::parse_annotations(c.source, s.initial->source.string());
  for (const auto& [k, v] : a.params) c.params[k] = v;
  for (const auto& [k, v] : s.initial->defines) c.params[k] = v;
  c.options.insert(c.options.end(), s.initial->compile_options.begin(), s.initial->compile_options.end());
  return c;
}

eval::EvaluatorOptions evaluator_options(const OptimizeOptions& o) {
  eval::EvaluatorOptions eo;  // the worker: each of o.workers (eval::on_worker)
  eo.cache_dir = o.cache_dir;
  eo.arch = o.arch;
  eo.compile_argv = o.compile_argv;
  eo.compile_timeout_s = o.compile_timeout_s;
  eo.time = true;
  eo.time_reference = false;
  return eo;
}

Driver::Driver(const OptimizeOptions& o, spec::Spec spec, propose::Proposer& proposer)
    : o_(o), spec_(std::move(spec)), proposer_(proposer) {
  // Before any other work: a run folder that another process writes is refused now.
  if (!o_.resume.empty()) run_lock_ = store::RunLock::acquire(o_.resume);
  initial_ = initial_candidate(spec_);
}

void Driver::open_device() {
  // One worker per device of the plan (a plain run: --device alone).
  runner_ = o_.runner ? o_.runner(spec_) : make_worker_runner(spec_, evaluator_options(o_), o_.workers);
  try {
    device_ = runner_->open();
    if (!o_.quiet && runner_->size() > 1) {
      std::string names;
      for (size_t i = 0; i < runner_->size(); ++i)
        if (runner_->slot(i).dropped.empty()) names += (names.empty() ? "" : ", ") + runner_->slot(i).name;
      std::cerr << "kopt: " << runner_->live_count() << " worker(s): " << names << "; the initial kernel, the baseline "
                << "and the final re-timing on " << runner_->slot(runner_->primary()).name << "\n";
    }
  } catch (const NoDeviceError& e) {
    if (o_.arch.empty()) throw;
    no_device_ = e.what();
  }
  arch_ = runner_->arch();
}

spec::Bindings Driver::device_constants() const {
  return search::constraint_constants(spec_, device_ ? &*device_ : nullptr, arch_);
}

double Driver::minutes_elapsed() const { return std::chrono::duration<double>(now() - t_start_).count() / 60.0; }

const std::vector<model::Attempt>& Driver::history() const {
  static const std::vector<model::Attempt> none;
  return store_ ? store_->history() : none;
}

const std::filesystem::path& Driver::run_dir() const {
  static const std::filesystem::path none;  // a compile-only listing has no run folder
  return store_ ? store_->dir() : none;
}

std::unique_ptr<search::StopCondition> Driver::make_stop(bool listing) {
  const model::Budget& b = o_.budget;
  std::vector<std::unique_ptr<search::StopCondition>> stops;
  if (b.evaluations > 0) stops.push_back(search::max_evaluations(b.evaluations));
  if (b.minutes > 0)
    stops.push_back(search::time_budget(std::chrono::duration<double>(b.minutes * 60), [this] { return now(); },
                                        budget_since_));
  if (b.patience > 0 && !listing && !proposer_.applies_patience()) stops.push_back(search::no_improvement(b.patience));
  for (auto& own : proposer_.stop_conditions()) stops.push_back(std::move(own));
  return search::any_of(std::move(stops));
}

void Driver::count_evaluation(const search::Observation& o) {
  std::lock_guard<std::mutex> lock(stop_mu_);
  stop_->update(o);
}

bool Driver::stop_fulfilled() const {
  std::lock_guard<std::mutex> lock(stop_mu_);
  return stop_->fulfilled();
}

model::BudgetLeft Driver::budget_left() const {
  std::lock_guard<std::mutex> lock(stop_mu_);
  model::BudgetLeft left;
  if (stop_) stop_->left(left);
  return left;
}

nlohmann::json Driver::profile(const spec::Candidate& candidate, const std::string& case_name,
                               const std::filesystem::path& files) {
  if (!runner_ || compile_only())
    return {{"available", false}, {"reason", "profiling unavailable: no GPU on this machine"}};
  return runner_->profile(candidate, case_name, files);
}

void Driver::open_store(std::filesystem::path* run_dir) {
  if (!o_.resume.empty()) {
    if (!run_lock_.held()) run_lock_ = store::RunLock::acquire(o_.resume);
    try {
      store_ = store::RunStore::open(o_.resume, store::spec_fingerprint(spec_), std::move(run_lock_));
    } catch (const UsageError& e) {
      // Resumed with the run's own spec.json: what changed is a file it names.
      std::error_code ec;
      if (e.id() != "kopt.run.902" || !std::filesystem::equivalent(o_.spec, o_.resume / "spec.json", ec)) throw;
      throw UsageError("kopt.run.902", (o_.resume / "spec.json").string() +
                                           ": a file that it names (kernel, reference, template or input), or a "
                                           "header they include, changed since the run began, so this is another "
                                           "workload: restore the file, or start a new run with --spec");
    }
  } else if (o_.in_memory) {
    store::RunInfo info;
    info.strategy = proposer_.name();
    info.seed = o_.seed;
    info.budget = proposer_.budget_json(o_.budget);
    store_ = store::RunStore::in_memory(spec::to_json(spec_), info);
    return;
  } else {
    store::RunInfo info;
    info.spec_hash = store::spec_fingerprint(spec_);
    info.strategy = proposer_.name();
    info.seed = o_.seed;
    info.budget = proposer_.budget_json(o_.budget);
    info.shape_classes = o_.shape_classes;
    info.screen_factor = o_.screen_factor;
    info.tool_version = KOPT_VERSION;
    const nlohmann::json device_json = device_ ? device_->to_json() : nlohmann::json{{"arch", arch_}};
    store_ = store::RunStore::create(o_.results_dir, spec::to_json(spec_), device_json, info);
  }
  if (!o_.quiet) std::cerr << "kopt: run folder " << store_->dir().string() << "\n";
  if (!o_.quiet && !o_.resume_note.empty()) std::cerr << "kopt: " << o_.resume_note << "\n";
  if (run_dir) *run_dir = store_->dir();
  if (!o_.description.empty())
    fs::write_file_atomic(store_->dir() / "description.txt", o_.description + "\n");
}

model::Result Driver::compile_only_result(const cuda::CompileResult& cr) const {
  model::Result r;
  r.verdict = cr.ok ? model::Verdict::compiled : model::Verdict::compile_error;
  r.detail = cr.ok ? "compiled for " + arch_ + "; not checked or timed (no GPU)"
                   : !cr.detail.empty() ? cr.detail
                                        : "compilation failed (" + cr.error_name + "): " + cuda::first_error_line(cr.log);
  r.error_name = cr.ok ? "" : cr.error_name;
  r.compile_log = cr.log;
  r.compile_ms = cr.compile_ms;
  r.compile_cache_hit = cr.cache_hit;
  return r;
}

void Driver::with_reference(model::Result& r) const {
  for (auto& c : r.cases)
    for (const auto& rc : reference_cases_)
      if (rc.name == c.name && rc.reference_latency && !c.reference_latency) c.reference_latency = rc.reference_latency;
  if (reference_geomean_ && r.geomean_ms && *r.geomean_ms > 0) {
    r.reference_geomean_ms = reference_geomean_;
    r.speedup = *reference_geomean_ / *r.geomean_ms;
  }
}

const model::Attempt& Driver::record(model::AttemptKind kind, const spec::Candidate& c, model::Result r) {
  model::Attempt a;
  a.kind = kind;
  a.label = c.label;
  a.params = c.params;
  a.source = c.source;
  a.compile_options = c.options;
  a.result = std::move(r);
  a.seconds_since_start = std::chrono::duration<double>(now() - t_start_).count();
  store_->record(a);
  const model::Attempt& rec = store_->history().back();
  candidates_[rec.index] = c;
  return rec;
}

spec::Candidate Driver::candidate_of(const model::Attempt& a) const {
  if (a.kind == model::AttemptKind::initial && initial_) return *initial_;
  if (auto it = candidates_.find(a.index); it != candidates_.end()) return it->second;
  if (std::optional<spec::Candidate> c = proposer_.candidate_for(a)) return *c;
  // Rebuilt from the recorded source: its kopt: lines give entry and launch.
  spec::Candidate c;
  c.label = a.label;
  c.source = a.source;
  c.params = a.params;
  c.options = a.compile_options;
  c.entry = spec_.initial ? spec_.initial->entry : "";
  try {
    const auto ann = spec::parse_annotations(a.source, a.label);
    if (ann.entry) c.entry = *ann.entry;
    if (ann.grid || ann.block) c.launch = spec::annotated_launch(ann);
  } catch (const Error&) {
  }
  return c;
}

std::vector<std::string> Driver::performance_case_names() const {
  std::vector<std::string> names;
  for (const auto* c : spec_.performance_cases()) names.push_back(c->name);
  return names;
}

}  // namespace kopt::driver
