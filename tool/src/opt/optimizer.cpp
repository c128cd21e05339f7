#include "opt/optimizer.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <exception>
#include <future>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "eval/evaluator.h"
#include "report/report.h"
#include "run/fingerprint.h"
#include "run/store.h"
#include "search/space.h"
#include "search/strategy.h"
#include "spec/annotations.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/thread_pool.h"

namespace kopt::opt {
namespace {

using Clock = std::chrono::steady_clock;

double minutes_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count() / 60.0;
}

std::string fmt(double v, int precision = 4) {
  std::ostringstream ss;
  ss << std::setprecision(precision) << v;
  return ss.str();
}

}  // namespace

eval::EvaluatorOptions evaluator_options(const OptimizeOptions& o) {
  eval::EvaluatorOptions eo;
  eo.worker_argv = o.worker_argv;
  eo.cache_dir = o.cache_dir;
  eo.arch = o.arch;
  eo.time = true;
  eo.time_reference = false;  // timed once, beside the initial kernel
  return eo;
}

spec::Bindings device_constants(const model::DeviceInfo* d) {
  if (!d)
    return {{"MAX_SHARED_PER_BLOCK", 232448}, {"MAX_THREADS_PER_BLOCK", 1024}, {"REGS_PER_SM", 65536},
            {"SM_COUNT", 132}, {"WARP_SIZE", 32}};
  return {{"MAX_SHARED_PER_BLOCK", d->shared_per_block_optin_bytes},
          {"MAX_THREADS_PER_BLOCK", d->max_threads_per_block},
          {"REGS_PER_SM", d->regs_per_sm},
          {"SM_COUNT", d->sm_count},
          {"WARP_SIZE", d->warp_size}};
}

namespace {

/// Applies --reference, --initial-kernel, --input-cases, --template to the spec.
spec::Spec load_and_override(const OptimizeOptions& o) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(fs::read_file(o.spec));
  } catch (const nlohmann::json::parse_error& e) {
    throw SpecError("kopt.spec.100", o.spec.string() + ": not valid JSON: " + e.what());
  }
  auto abs = [](const std::filesystem::path& p) { return std::filesystem::absolute(p).string(); };
  auto kernel_entry = [&](const std::filesystem::path& file, const char* flag) {
    const auto a = spec::parse_annotations(fs::read_file(file), file.string());
    nlohmann::json k = {{"source", abs(file)}};
    if (!a.entry)
      throw UsageError("kopt.opt.001", std::string(flag) + " " + file.string() +
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
  if (!o.template_source.empty()) {
    nlohmann::json t = kernel_entry(o.template_source, "--template");
    doc["template"] = t;
  }
  if (!o.input_cases.empty()) {
    nlohmann::json cases;
    try {
      cases = nlohmann::json::parse(fs::read_file(o.input_cases));
    } catch (const nlohmann::json::parse_error& e) {
      throw SpecError("kopt.spec.100", o.input_cases.string() + ": not valid JSON: " + e.what());
    }
    doc["cases"] = cases.is_object() && cases.contains("cases") ? cases["cases"] : cases;
  }
  // Relative paths inside the document stay relative to the spec's folder.
  return spec::parse_spec(doc, std::filesystem::absolute(o.spec));
}

/// The template as a candidate: its source, entry and launch; params are set per config.
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

/// The initial kernel as a candidate (spec "initial" or --initial-kernel).
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
  return c;
}

/// Sum over performance cases of the time spent in measured launches (ms).
double measured_ms(const model::Result& r) {
  double total = 0;
  for (const auto& c : r.cases)
    if (c.latency) total += c.latency->mean_ms * c.latency->samples;
  return total;
}

std::vector<std::string> launch_lines(const spec::Candidate& c, const spec::Spec& s) {
  std::vector<std::string> lines;
  const spec::Launch l = c.launch ? *c.launch : s.launch;
  auto join = [](const spec::Expr* e) {
    return e[0].text() + ", " + e[1].text() + ", " + e[2].text();
  };
  lines.push_back("// kopt:grid " + join(l.grid));
  lines.push_back("// kopt:block " + join(l.block));
  lines.push_back("// kopt:shared " + (l.shared_bytes.empty() ? std::string("0") : l.shared_bytes.text()));
  return lines;
}

class Progress {
 public:
  Progress(bool quiet, int64_t total) : quiet_(quiet), tty_(::isatty(2)), total_(total) {}
  void line(const std::string& text) {
    if (quiet_) return;
    if (tty_)
      std::cerr << "\r\033[K" << text << std::flush;
    else
      std::cerr << text << "\n";
  }
  void done() {
    if (!quiet_ && tty_) std::cerr << "\n";
  }
  int64_t total() const { return total_; }

 private:
  bool quiet_, tty_;
  int64_t total_;
};

int compile_only(const spec::Spec& s, eval::Evaluator& ev, const search::Space& space,
                 search::Strategy& strategy, int64_t budget, const OptimizeOptions& o,
                 const std::string& why) {
  const spec::Candidate tmpl = template_candidate(s);
  ThreadPool pool(o.compile_threads > 0 ? o.compile_threads : std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::pair<search::Config, std::future<cuda::CompileResult>>> jobs;
  for (int64_t i = 0; i < budget; ++i) {
    auto cfg = strategy.next();
    if (!cfg) break;
    spec::Candidate c = tmpl;
    c.params = *cfg;
    jobs.emplace_back(*cfg, pool.submit([&ev, c] { return ev.compile(c); }));
  }
  int ok = 0, failed = 0, hits = 0;
  nlohmann::json out = nlohmann::json::array();
  for (auto& [cfg, f] : jobs) {
    cuda::CompileResult r = f.get();
    (r.ok ? ok : failed)++;
    hits += r.cache_hit;
    out.push_back({{"params", cfg}, {"compiled", r.ok}, {"compile_ms", r.compile_ms}, {"cache_hit", r.cache_hit},
                   {"error_name", r.error_name}});
    if (!o.quiet)
      std::cerr << "  " << search::config_key(cfg) << ": " << (r.ok ? "compiled" : "compile_error " + r.error_name)
                << "\n";
  }
  std::cout << dump_json({{"compile_only", true}, {"arch", o.arch}, {"valid_configurations", space.enumerate_valid().size()},
                          {"compiled", ok}, {"failed", failed}, {"cache_hits", hits}, {"candidates", out}},
                         2)
            << std::endl;
  std::cerr << "kopt: " << why << "\n"
            << "kopt: compiled " << ok << " candidate(s) for " << o.arch << " (" << failed
            << " failed); checking and timing need a GPU\n";
  return 77;
}

}  // namespace

spec::Spec load_spec_with_overrides(const OptimizeOptions& o) { return load_and_override(o); }

int optimize(const OptimizeOptions& o, std::filesystem::path* run_dir) {
  // The LLM agent proposer (agent/agent.h); also a --description without --spec.
  if (o.strategy == "agent" || o.strategy == "hybrid" || (o.spec.empty() && !o.description.empty()))
    return agent::optimize(o, run_dir);
  const auto t_start = Clock::now();
  spec::Spec s = load_and_override(o);
  if (!s.template_kernel)
    throw UsageError("kopt.opt.003", s.path.string() +
                                         ": no template to search: add \"template\" to the spec or pass --template FILE");
  if (s.tuning.params.empty())
    throw SpecError("kopt.opt.004", s.path.string() + ": $.tuning.params: the template has no parameter space");
  if (o.max_evaluations < 0 || o.max_minutes < 0 || (o.max_evaluations == 0 && o.max_minutes == 0 && o.patience == 0))
    throw UsageError("kopt.opt.005",
                     "the budget is zero: give --budget evals=N and/or minutes=M (or --max-iterations N)");

  eval::Evaluator ev(s, evaluator_options(o));

  // The device (or, without one, compile-only mode when --arch was given).
  std::optional<model::DeviceInfo> device;
  std::string no_device;
  try {
    device = ev.device();
  } catch (const NoDeviceError& e) {
    if (o.arch.empty()) throw;
    no_device = e.what();
  }
  ev.arch();

  // The space, checked before any GPU work.
  search::Space space(s.tuning.params, s.tuning.constraints, device_constants(device ? &*device : nullptr));
  const uint64_t valid_size = space.enumerate_valid().size();  // throws kopt.space.701 when empty
  const std::string strategy_name = o.strategy.empty() ? search::default_strategy(valid_size) : o.strategy;
  auto strategy = search::make_strategy(strategy_name);
  strategy->initialize(space, o.seed);
  const int64_t eval_budget = o.max_evaluations > 0 ? o.max_evaluations : static_cast<int64_t>(valid_size);

  if (!device) return compile_only(s, ev, space, *strategy, eval_budget, o, no_device);

  // The run folder.
  const nlohmann::json spec_json = spec::to_json(s);
  const std::string spec_hash = run::spec_fingerprint(s);
  std::optional<run::RunStore> store;
  if (!o.resume.empty()) {
    store = run::RunStore::open(o.resume, spec_hash);
  } else {
    run::RunInfo info;
    info.spec_hash = spec_hash;
    info.strategy = strategy_name;
    info.seed = o.seed;
    info.budget = {{"evaluations", o.max_evaluations}, {"minutes", o.max_minutes}, {"patience", o.patience}};
    info.tool_version = KOPT_VERSION;
    store = run::RunStore::create(o.results_dir, spec_json, device->to_json(), info);
  }
  if (!o.quiet) std::cerr << "kopt: run folder " << store->dir().string() << "\n";
  if (run_dir) *run_dir = store->dir();
  if (!o.description.empty())
    fs::write_file_atomic(store->dir() / "description.txt", o.description + "\n");

  // Stop conditions.
  std::vector<std::unique_ptr<search::StopCondition>> stops;
  if (o.max_evaluations > 0) stops.push_back(search::max_evaluations(o.max_evaluations));
  if (o.max_minutes > 0) stops.push_back(search::time_budget(std::chrono::duration<double>(o.max_minutes * 60)));
  if (o.patience > 0) stops.push_back(search::no_improvement(o.patience));
  auto stop = search::any_of(std::move(stops));

  // Resume: what is recorded is observed, never re-evaluated.
  std::optional<double> reference_geomean, initial_geomean;
  std::vector<model::CaseResult> reference_cases;
  bool have_initial = false, have_baseline = false;
  for (const auto& a : store->history()) {
    if (a.kind == "candidate") {
      search::Observation ob{a.params, a.result.verdict == model::Verdict::ok, a.result.geomean_ms.value_or(0)};
      strategy->observe(ob);
      stop->update(ob);
    } else if (a.kind == "initial") {
      have_initial = true;
      if (a.result.reference_geomean_ms) reference_geomean = a.result.reference_geomean_ms;
      if (a.result.verdict == model::Verdict::ok) initial_geomean = a.result.geomean_ms;
      reference_cases = a.result.cases;
    } else if (a.kind == "baseline") {
      have_baseline = true;
    }
  }
  if (!store->history().empty() && !o.quiet)
    std::cerr << "kopt: resuming after " << store->history().size() << " recorded attempt(s)\n";

  auto with_reference = [&](model::Result& r) {
    // Per-case reference latencies (measured once, with the initial kernel)
    // and the speedup over the reference.
    for (auto& c : r.cases)
      for (const auto& rc : reference_cases)
        if (rc.name == c.name && rc.reference_latency && !c.reference_latency) c.reference_latency = rc.reference_latency;
    if (reference_geomean && r.geomean_ms && *r.geomean_ms > 0) {
      r.reference_geomean_ms = reference_geomean;
      r.speedup = *reference_geomean / *r.geomean_ms;
    }
  };
  auto record = [&](const std::string& kind, const std::string& label, const spec::Candidate& c, model::Result r) {
    model::Attempt a;
    a.kind = kind;
    a.label = label;
    a.params = c.params;
    a.source = c.source;
    a.compile_options = c.options;
    a.result = std::move(r);
    a.seconds_since_start = std::chrono::duration<double>(Clock::now() - t_start).count();
    store->record(a);
    return store->history().back();
  };

  // 1. The initial kernel, with the reference timed beside it.
  auto initial = initial_candidate(s);
  if (initial && !have_initial) {
    if (!o.quiet) std::cerr << "kopt: evaluating the initial kernel and timing the reference\n";
    model::Result r = ev.evaluate(*initial, /*time_reference=*/true);
    reference_geomean = r.reference_geomean_ms;
    if (r.verdict == model::Verdict::ok) initial_geomean = r.geomean_ms;
    reference_cases = r.cases;
    const auto& a = record("initial", initial->label, *initial, r);
    if (!o.quiet)
      std::cerr << "kopt: initial: " << model::verdict_name(a.result.verdict)
                << (a.result.geomean_ms ? ", geomean " + fmt(*a.result.geomean_ms) + " ms" : " - " + a.result.detail)
                << (reference_geomean ? "; reference geomean " + fmt(*reference_geomean) + " ms" : "") << "\n";
  }
  // 2. The cuBLAS baseline, where the workload is GEMM-shaped.
  std::optional<double> cublas_geomean;
  if ((s.cublas_baseline || s.reference.kind == spec::Reference::Kind::cublas) && !have_baseline) {
    if (!o.quiet) std::cerr << "kopt: timing the cuBLAS baseline (FP32, no TF32)\n";
    model::Result r = ev.evaluate_cublas_baseline();
    with_reference(r);
    spec::Candidate c;
    c.label = "cuBLAS";
    record("baseline", "cuBLAS sgemm (FP32, no TF32)", c, r);
  }
  for (const auto& a : store->history())
    if (a.kind == "baseline" && a.result.verdict == model::Verdict::ok) cublas_geomean = a.result.geomean_ms;

  // 3. The search: compiles run ahead of the GPU on a thread pool.
  const spec::Candidate tmpl = template_candidate(s);
  const unsigned hw = std::thread::hardware_concurrency();
  const unsigned threads = o.compile_threads > 0 ? static_cast<unsigned>(o.compile_threads) : (hw > 2 ? hw - 1 : 1);
  ThreadPool pool(threads);
  struct InFlight {
    spec::Candidate candidate;
    std::future<cuda::CompileResult> compiled;
  };
  std::deque<InFlight> inflight;
  const size_t prefetch = threads * 2;
  Progress progress(o.quiet, eval_budget);
  int64_t evaluated = 0;
  double gpu_measured_ms = 0;
  std::vector<double> compile_ms;
  int cache_hits = 0, compiles = 0, compiles_ready = 0;
  double compile_wait_ms = 0, check_ms = 0, timing_ms = 0;
  // GPU idle time caused by the loop, and the worker's time outside checking
  // and timing (see the summary's tuner block).
  double host_gap_ms = 0, worker_other_ms = 0;
  // When the last result from the worker arrived, while no request has been
  // sent since: the GPU has been idle from then on.
  std::optional<Clock::time_point> gpu_idle_since;
  const auto t_search = Clock::now();
  bool exhausted = false;

  // Proposes candidates and queues their compiles, up to `prefetch` ahead.
  auto refill = [&] {
    while (!exhausted && inflight.size() < prefetch) {
      auto cfg = strategy->next();
      if (!cfg) {
        exhausted = true;
        break;
      }
      spec::Candidate c = tmpl;
      c.params = *cfg;
      c.label = search::config_key(*cfg);
      auto fut = pool.submit([&ev, c] { return ev.compile(c); });
      inflight.push_back({std::move(c), std::move(fut)});
    }
  };
  // The candidate the worker is evaluating (or, for a compile error, the one
  // whose verdict is waiting in ev), from ev.start() to ev.finish().
  struct Running {
    spec::Candidate candidate;
    bool on_worker = false;  // compiled, hence sent to the worker
    Clock::time_point started;
  };
  // Takes the next queued candidate, waits for its compile and sends it to
  // the worker.
  auto start_next = [&]() -> Running {
    InFlight job = std::move(inflight.front());
    inflight.pop_front();
    // Overlap check: was this compile done before the GPU loop needed it?
    const auto t_wait = Clock::now();
    if (job.compiled.wait_for(std::chrono::seconds(0)) == std::future_status::ready) ++compiles_ready;
    cuda::CompileResult compiled = job.compiled.get();
    compile_wait_ms += std::chrono::duration<double, std::milli>(Clock::now() - t_wait).count();
    ++compiles;
    cache_hits += compiled.cache_hit;
    if (!compiled.cache_hit) compile_ms.push_back(compiled.compile_ms);
    Running running{std::move(job.candidate), compiled.ok, Clock::now()};
    // A compile error sends nothing: the GPU stays idle, and the gap goes on
    // until a request does go out.
    if (running.on_worker && gpu_idle_since) {
      host_gap_ms += std::chrono::duration<double, std::milli>(running.started - *gpu_idle_since).count();
      gpu_idle_since.reset();
    }
    ev.start(running.candidate, compiled, false);
    return running;
  };

  // Pipelined: as soon as candidate N's result has arrived, candidate N+1 is
  // sent to the worker, and only then is N recorded, observed and reported,
  // while the GPU evaluates N+1 (recording fsyncs several files and the
  // strategy may refit a model: tens of ms that would otherwise idle the
  // GPU). The strategy proposes up to `prefetch` candidates ahead anyway, so
  // proposing N+1 before observing N changes nothing that matters.
  // Durability: a kill -9 can now lose two candidates, the one being
  // evaluated and the one whose result is being recorded (before, only the
  // one being evaluated). Nothing recorded is lost, and --resume works as
  // before: the lost ones were never recorded, so it may propose them again.
  std::optional<Running> current;
  if (!stop->fulfilled()) {  // a resumed run may have met its budget already
    refill();
    if (!inflight.empty()) current = start_next();
  }
  while (current) {
    model::Result r = ev.finish();
    const auto t_result = Clock::now();
    if (current->on_worker) {
      gpu_idle_since = t_result;
      // Wall time of the request minus what the worker reports checking and
      // timing: module load, request and result transfer, a hang's timeout,
      // and any time the result waited for the previous candidate's
      // bookkeeping (when that takes longer than the GPU work).
      const double wall_ms = std::chrono::duration<double, std::milli>(t_result - current->started).count();
      worker_other_ms += std::max(0.0, wall_ms - r.check_ms - r.timing_ms);
    }
    with_reference(r);
    gpu_measured_ms += measured_ms(r);
    check_ms += r.check_ms;
    timing_ms += r.timing_ms;
    const bool ok = r.verdict == model::Verdict::ok;
    search::Observation ob{current->candidate.params, ok, r.geomean_ms.value_or(0)};
    stop->update(ob);
    ++evaluated;

    // Keep the GPU busy: the next candidate goes out before N's bookkeeping.
    // Should that throw (a spec error in its launch, a worker that cannot be
    // started), N is still recorded first, as it was before pipelining.
    std::optional<Running> next;
    std::exception_ptr start_failed;
    if (!stop->fulfilled()) {
      try {
        if (inflight.empty()) refill();
        if (!inflight.empty()) next = start_next();
      } catch (...) {
        start_failed = std::current_exception();
      }
    }

    const auto& a = record("candidate", current->candidate.label, current->candidate, r);
    strategy->observe(ob);

    const model::Attempt* best = store->best();
    const double mins = minutes_since(t_search);
    std::ostringstream line;
    line << "[" << evaluated << (o.max_evaluations > 0 ? "/" + std::to_string(o.max_evaluations) : "") << "] ";
    if (best && best->result.geomean_ms) {
      line << "best " << fmt(*best->result.geomean_ms) << " ms";
      if (reference_geomean) line << " (" << fmt(*reference_geomean / *best->result.geomean_ms, 3) << "x ref";
      if (cublas_geomean) line << ", " << fmt(*cublas_geomean / *best->result.geomean_ms, 3) << "x cuBLAS";
      if (reference_geomean) line << ")";
    }
    line << " | " << a.label << ": " << model::verdict_name(a.result.verdict);
    if (a.result.geomean_ms) line << " " << fmt(*a.result.geomean_ms) << " ms";
    line << " | " << fmt(evaluated / std::max(mins, 1e-9), 3) << "/min";
    if (o.max_evaluations > 0 && evaluated > 0) {
      const double eta = mins / evaluated * (o.max_evaluations - evaluated);
      line << " | ETA " << fmt(eta, 2) << " min";
    }
    line << " | " << stop->status();
    progress.line(line.str());
    if (start_failed) std::rethrow_exception(start_failed);

    if (next) refill();
    current = std::move(next);
  }
  progress.done();
  // Compiles still queued are abandoned (their results are cached for a later run).
  const double search_minutes = minutes_since(t_search);

  // 4. Re-time the top candidates interleaved, to cancel drift. With shape
  // specialisation, each performance case's own fastest candidate joins them,
  // so that the per-case choice is made on the same interleaved measurements.
  std::vector<std::string> perf_cases;
  for (const auto* c : s.performance_cases()) perf_cases.push_back(c->name);
  auto case_median = [](const model::Attempt& a, const std::string& name) -> double {
    for (const auto& c : a.result.cases)
      if (c.name == name && c.latency) return c.latency->median_ms;
    return INFINITY;
  };
  std::vector<const model::Attempt*> ranked;
  for (const auto& a : store->history())
    if ((a.kind == "candidate" || a.kind == "initial") && a.result.verdict == model::Verdict::ok && a.result.geomean_ms)
      ranked.push_back(&a);
  std::vector<const model::Attempt*> all_ok = ranked;
  std::sort(ranked.begin(), ranked.end(),
            [](const model::Attempt* x, const model::Attempt* y) { return *x->result.geomean_ms < *y->result.geomean_ms; });
  if (ranked.size() > static_cast<size_t>(std::max(o.top, 1))) ranked.resize(static_cast<size_t>(std::max(o.top, 1)));
  if (o.specialize && perf_cases.size() > 1)
    for (const auto& name : perf_cases) {
      const model::Attempt* fastest = nullptr;
      for (const auto* a : all_ok)
        if (!fastest || case_median(*a, name) < case_median(*fastest, name)) fastest = a;
      if (fastest && std::find(ranked.begin(), ranked.end(), fastest) == ranked.end()) ranked.push_back(fastest);
    }
  nlohmann::json retime = nlohmann::json::array();
  const model::Attempt* winner = ranked.empty() ? nullptr : ranked.front();
  // Per ranked candidate: per-case medians (over rounds) of the re-timing, or
  // of the search's own measurement when there is no re-timing.
  std::vector<std::map<std::string, double>> case_ms(ranked.size());
  for (size_t i = 0; i < ranked.size(); ++i)
    for (const auto& name : perf_cases) case_ms[i][name] = case_median(*ranked[i], name);
  std::vector<bool> failed(ranked.size(), false);
  if (ranked.size() > 1 && o.retime_rounds > 0) {
    if (!o.quiet) std::cerr << "kopt: re-timing the top " << ranked.size() << " interleaved, " << o.retime_rounds << " rounds\n";
    std::vector<std::vector<double>> g(ranked.size());
    std::vector<std::map<std::string, std::vector<double>>> per_case(ranked.size());
    for (int round = 0; round < o.retime_rounds; ++round)
      for (size_t i = 0; i < ranked.size(); ++i) {
        if (failed[i]) continue;
        spec::Candidate c = ranked[i]->kind == "initial" && initial ? *initial : tmpl;
        if (ranked[i]->kind != "initial") {
          c.params = ranked[i]->params;
          c.label = ranked[i]->label;
        }
        model::Result r = ev.evaluate(c, false);
        if (r.verdict != model::Verdict::ok || !r.geomean_ms) {
          failed[i] = true;  // a candidate that fails on re-check is out
          continue;
        }
        g[i].push_back(*r.geomean_ms);
        for (const auto& cr : r.cases)
          if (cr.latency) per_case[i][cr.name].push_back(cr.latency->median_ms);
      }
    auto median_of = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v.empty() ? NAN : v[v.size() / 2];
    };
    double best_median = INFINITY;
    winner = nullptr;  // only a candidate that passed its re-checks can win
    for (size_t i = 0; i < ranked.size(); ++i) {
      const double median = median_of(g[i]);
      nlohmann::json cases = nlohmann::json::object();
      for (const auto& [name, v] : per_case[i]) {
        case_ms[i][name] = median_of(v);
        cases[name] = case_ms[i][name];
      }
      retime.push_back({{"index", ranked[i]->index}, {"label", ranked[i]->label}, {"geomeans_ms", g[i]},
                        {"median_ms", g[i].empty() ? nlohmann::json(nullptr) : nlohmann::json(median)},
                        {"cases_median_ms", cases}, {"failed_recheck", static_cast<bool>(failed[i])}});
      if (!failed[i] && !g[i].empty() && median < best_median) {
        best_median = median;
        winner = ranked[i];
      }
    }
  }

  // Shape specialisation: each performance case takes the candidate that was
  // fastest on it, when that beats the single best by more than the
  // threshold; variant 0 is always the single best.
  nlohmann::json specialization;
  std::vector<const model::Attempt*> variants;
  if (winner && o.specialize && perf_cases.size() > 1) {
    const size_t w = static_cast<size_t>(std::find(ranked.begin(), ranked.end(), winner) - ranked.begin());
    variants.push_back(winner);
    nlohmann::json chosen = nlohmann::json::object();
    std::vector<double> single, special;
    for (const auto& name : perf_cases) {
      size_t pick = w;
      for (size_t i = 0; i < ranked.size(); ++i)
        if (!failed[i] && case_ms[i][name] < case_ms[pick][name]) pick = i;
      if (!(case_ms[pick][name] < case_ms[w][name] * (1.0 - o.specialize_threshold))) pick = w;
      auto it = std::find(variants.begin(), variants.end(), ranked[pick]);
      if (it == variants.end()) it = variants.insert(variants.end(), ranked[pick]);
      const int v = static_cast<int>(it - variants.begin());
      const spec::Case* sc = nullptr;
      for (const auto& c : s.cases)
        if (c.name == name) sc = &c;
      chosen[name] = {{"variant", v}, {"median_ms", case_ms[pick][name]}, {"single_median_ms", case_ms[w][name]},
                      {"sizes", sc ? nlohmann::json(sc->sizes) : nlohmann::json::object()}};
      single.push_back(case_ms[w][name]);
      special.push_back(case_ms[pick][name]);
    }
    nlohmann::json vs = nlohmann::json::array();
    for (size_t v = 0; v < variants.size(); ++v)
      vs.push_back({{"variant", v}, {"index", variants[v]->index}, {"label", variants[v]->label},
                    {"params", variants[v]->params}, {"file", "variants/v" + std::to_string(v) + ".cu"}});
    bool finite = true;
    for (double x : single) finite = finite && std::isfinite(x) && x > 0;
    for (double x : special) finite = finite && std::isfinite(x) && x > 0;
    specialization = {{"threshold", o.specialize_threshold}, {"variants", vs}, {"cases", chosen}};
    if (finite) {
      specialization["single_geomean_ms"] = model::geomean(single);
      specialization["geomean_ms"] = model::geomean(special);
    }
  }

  // 5. Summary, best.cu, reports.
  std::map<std::string, int> verdicts;
  for (const auto& a : store->history()) verdicts[model::verdict_name(a.result.verdict)]++;
  std::vector<double> sorted_compile = compile_ms;
  std::sort(sorted_compile.begin(), sorted_compile.end());
  nlohmann::json extra = {
      {"strategy", strategy_name},
      {"valid_configurations", valid_size},
      {"budget", {{"evaluations", o.max_evaluations}, {"minutes", o.max_minutes}, {"patience", o.patience}}},
      {"budget_used", {{"evaluations", evaluated}, {"search_minutes", search_minutes}}},
      {"stop", stop->status()},
      {"tuner",
       {{"candidates_per_minute", search_minutes > 0 ? evaluated / search_minutes : 0.0},
        {"gpu_measured_fraction", search_minutes > 0 ? gpu_measured_ms / (search_minutes * 60000.0) : 0.0},
        {"compile_ms_median", sorted_compile.empty() ? 0.0 : sorted_compile[sorted_compile.size() / 2]},
        {"compile_cache_hit_rate", compiles ? static_cast<double>(cache_hits) / compiles : 0.0},
        {"compile_threads", threads},
        // Compiles finished before the GPU loop asked for them, and the time
        // it waited for the others: the overlap of compilation with evaluation.
        {"compiles_ready_when_needed", compiles_ready},
        {"compile_wait_ms", compile_wait_ms},
        // Worker wall time checking and in the timed loops, summed.
        {"worker_check_ms", check_ms},
        {"worker_timing_ms", timing_ms},
        // GPU idle time caused by the loop: host time from a result arriving
        // to the start of the next request (waiting for its compile
        // included), summed. The pipelined loop keeps it to picking the next
        // candidate.
        {"host_gap_ms", host_gap_ms},
        // Per candidate sent to the worker, the wall time from the start of
        // its request to its result minus worker_check_ms and
        // worker_timing_ms, summed: preparing and sending the request, module
        // load, the result's transfer, worker restarts and timeouts, and any
        // bookkeeping of the previous candidate that outlasted the GPU work.
        {"worker_other_ms", worker_other_ms}}},
      {"retime", retime}};
  if (reference_geomean) extra["reference_geomean_ms"] = *reference_geomean;
  if (initial_geomean) extra["initial_geomean_ms"] = *initial_geomean;
  if (cublas_geomean) extra["cublas_geomean_ms"] = *cublas_geomean;
  if (winner && winner->result.geomean_ms) {
    nlohmann::json fb = {{"index", winner->index}, {"label", winner->label}, {"params", winner->params},
                         {"geomean_ms", *winner->result.geomean_ms}};
    if (reference_geomean) fb["speedup_vs_reference"] = *reference_geomean / *winner->result.geomean_ms;
    if (initial_geomean) fb["speedup_vs_initial"] = *initial_geomean / *winner->result.geomean_ms;
    if (cublas_geomean) fb["ratio_to_cublas"] = *cublas_geomean / *winner->result.geomean_ms;
    extra["final_best"] = fb;
  }
  if (!specialization.is_null()) {
    if (cublas_geomean && specialization.contains("geomean_ms")) {
      specialization["ratio_to_cublas"] = *cublas_geomean / specialization["geomean_ms"].get<double>();
      specialization["single_ratio_to_cublas"] = *cublas_geomean / specialization["single_geomean_ms"].get<double>();
    }
    extra["specialization"] = specialization;
  }
  store->write_summary(extra);
  if (winner) {
    const spec::Candidate& wc = winner->kind == "initial" && initial ? *initial : tmpl;
    store->write_best(*winner, wc.entry, launch_lines(wc, s));
  }
  for (size_t v = 0; v < variants.size(); ++v) {
    const spec::Candidate& vc = variants[v]->kind == "initial" && initial ? *initial : tmpl;
    store->write_best(*variants[v], vc.entry, launch_lines(vc, s),
                      std::filesystem::path("variants") / ("v" + std::to_string(v) + ".cu"));
  }
  report::write_reports(*store, perf_cases);

  const std::string summary_text = fs::read_file(store->dir() / "summary.json");
  std::cout << summary_text << std::flush;
  if (!o.quiet) {
    std::cerr << "kopt: " << evaluated << " candidate(s) evaluated in " << fmt(search_minutes, 3) << " min; run folder "
              << store->dir().string() << "\n";
    if (winner && winner->result.geomean_ms) {
      std::cerr << "kopt: best " << winner->label << ": geomean " << fmt(*winner->result.geomean_ms) << " ms";
      if (initial_geomean) std::cerr << ", " << fmt(*initial_geomean / *winner->result.geomean_ms, 3) << "x the initial kernel";
      if (cublas_geomean) std::cerr << ", " << fmt(*cublas_geomean / *winner->result.geomean_ms, 3) << "x cuBLAS";
      std::cerr << "\n";
    } else {
      std::cerr << "kopt: no candidate passed every case\n";
    }
  }
  return winner ? 0 : 1;
}

}  // namespace kopt::opt
