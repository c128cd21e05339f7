// Phase 6 of a run: summary.json, best.cu, the variants, the reports and the
// console summary; and the compile-only listing of a run without a GPU.
#include <algorithm>
#include <deque>
#include <future>
#include <iostream>
#include <sstream>

#include "report/report.h"
#include "spec/kernel_file.h"
#include "cuda/nvrtc.h"
#include "driver/driver_impl.h"
#include "driver/proposers.h"
#include "util/fs.h"
#include "util/interrupt.h"
#include "util/json.h"
#include "util/thread_pool.h"

namespace kopt::driver {
namespace {

std::vector<std::string> launch_lines(const spec::Candidate& c, const spec::Spec& s) {
  const spec::Launch l = c.launch ? *c.launch : (s.initial && s.initial->launch ? *s.initial->launch : s.launch);
  return spec::launch_annotation_lines(l);
}

}  // namespace

store::TunerStats PipelineStats::record() const {
  store::TunerStats t;
  t.candidates_per_minute = search_minutes > 0 ? evaluated / search_minutes : 0.0;
  t.gpu_measured_fraction = search_minutes > 0 ? gpu_measured_ms / (search_minutes * 60000.0) : 0.0;
  t.compile_ms_median = compile_ms.empty() ? 0.0 : quantile(compile_ms, 0.5);
  t.compile_cache_hit_rate = compiles ? static_cast<double>(cache_hits) / compiles : 0.0;
  t.compile_threads = threads;
  // Compiles finished before the GPU loop asked for them, and the time it
  // waited for the others: the overlap of compilation with evaluation.
  t.compiles_ready_when_needed = compiles_ready;
  t.withdrawn_before_evaluation = withdrawn;
  if (!ahead.empty())
    t.compile_ahead = store::TunerStats::Ahead{quantile(ahead, 0.5), quantile(ahead, 1.0), !fixed_ahead};
  t.compile_wait_ms = compile_wait_ms;
  // Worker wall time checking and in the timed loops, summed.
  t.worker_check_ms = check_ms;
  t.worker_timing_ms = timing_ms;
  // GPU idle time caused by the loop: host time from a result arriving to
  // the start of the next request (waiting for its compile included), summed.
  t.host_gap_ms = host_gap_ms;
  // Per candidate sent to the worker, the wall time from the start of its
  // request to its result minus worker_check_ms and worker_timing_ms, summed:
  // preparing and sending the request, module load, the result's transfer,
  // worker restarts and timeouts, and any bookkeeping of the previous
  // candidate that outlasted the GPU work.
  t.worker_other_ms = worker_other_ms;
  // Per worker: its share of the candidates and of the wall time
  // (measured_fraction: time in measured launches over the search's wall
  // time), and why it was dropped, if it was.
  for (const Device& d : devices) {
    store::TunerStats::Device td;
    td.device = d.device;
    td.name = d.name;
    td.evaluated = d.evaluated;
    td.measured_fraction = search_minutes > 0 ? d.measured_ms / (search_minutes * 60000.0) : 0.0;
    td.busy_fraction = search_minutes > 0 ? d.busy_ms / (search_minutes * 60000.0) : 0.0;
    td.uuid = d.uuid;
    td.dropped = d.dropped;
    t.devices.push_back(std::move(td));
  }
  // Apart from the evaluations: configurations never compiled, over the device's limits.
  t.filtered_before_compile = filtered;
  return t;
}

std::string PipelineStats::time_line(const std::map<std::string, int64_t>& counts) const {
  auto minutes = [](double ms) { return fmt(ms / 60000.0, 3); };
  double compile_total = 0;
  for (double ms : compile_ms) compile_total += ms;
  auto count = [&](const char* verdict) {
    const auto it = counts.find(verdict);
    return it == counts.end() ? int64_t{0} : it->second;
  };
  std::ostringstream line;
  line << "search time (min): compiling " << minutes(compile_total) << " over " << threads
       << " thread(s), the GPU loop waiting for compiles " << minutes(compile_wait_ms) << "; worker checking "
       << minutes(check_ms) << ", timed loops " << minutes(timing_ms) << ", other " << minutes(worker_other_ms)
       << "; compiles that gave no timing: " << count("compile_error") << " compile error(s), "
       << count("infeasible") << " infeasible, " << withdrawn << " withdrawn";
  if (filtered) line << "; " << filtered->configurations << " configuration(s) filtered before compiling";
  return line.str();
}

int Driver::finish(const Finalists& f) {
  const model::Attempt* winner = f.winner;
  store::Summary summary = store_->summary();
  summary.budget = proposer_.budget_json(o_.budget);
  summary.budget_used = store::BudgetUsed{stats_.evaluated, stats_.search_minutes, {}, {}, {}};
  summary.stop = stop_->status();
  summary.tuner = stats_.record();
  summary.retime = f.retime;
  // Where the run's wall time went, in minutes: set-up, the initial kernel,
  // the reference and the baseline ("setup"), the search, and the finalists'
  // re-timing with the variants.
  summary.time_split = store::TimeSplit{std::max(minutes_elapsed() - stats_.search_minutes - f.minutes, 0.0),
                                      stats_.search_minutes, f.minutes, minutes_elapsed()};
  if (reference_geomean_) summary.reference_geomean_ms = *reference_geomean_;
  if (initial_geomean_) summary.initial_geomean_ms = *initial_geomean_;
  if (cublas_geomean_) summary.cublas_geomean_ms = *cublas_geomean_;
  if (compile_only()) summary.compile_only = store::Summary::CompileOnly{arch_, no_device_};
  const int sig = util::interrupt_signal();
  const std::string resume_command = "kopt optimize --resume " + store_->dir().string();
  if (sig) summary.interrupted = store::Summary::Interrupted{util::signal_name(sig), resume_command};
  if (winner && winner->result.geomean_ms) {
    // Shape classes: the search timed the winner on its class alone; its
    // geomean over every performance case comes from the re-timing.
    const double g = f.winner_all_cases_ms.value_or(*winner->result.geomean_ms);
    store::FinalBest fb;
    fb.index = winner->index;
    fb.label = winner->label;
    fb.params = winner->params;
    fb.geomean_ms = g;
    if (f.winner_all_cases_ms) fb.search_geomean_ms = *winner->result.geomean_ms;
    if (reference_geomean_) fb.speedup_vs_reference = *reference_geomean_ / g;
    if (initial_geomean_) fb.speedup_vs_initial = *initial_geomean_ / g;
    if (cublas_geomean_) fb.ratio_to_cublas = *cublas_geomean_ / g;
    summary.final_best = fb;
  }
  if (f.specialization) {
    store::Specialization sp = *f.specialization;
    if (cublas_geomean_ && sp.geomean_ms) {
      sp.ratio_to_cublas = *cublas_geomean_ / *sp.geomean_ms;
      sp.single_ratio_to_cublas = *cublas_geomean_ / *sp.single_geomean_ms;
    }
    summary.specialization = std::move(sp);
  }
  // The proposer's own keys win over the driver's (the agent's budget_used and stop).
  summary.merge(proposer_.summary(), "the proposer's summary");
  if (o_.in_memory) {  // a replay's run: nothing to write (its runner saw every evaluation)
    if (sig) return util::interrupt_exit_code(sig);
    return winner ? 0 : 1;
  }
  store_->write_summary(summary);
  if (winner) {
    const spec::Candidate wc = candidate_of(*winner);
    store_->write_best(*winner, wc.entry, launch_lines(wc, spec_));
  }
  for (size_t v = 0; v < f.variants.size(); ++v) {
    const spec::Candidate vc = candidate_of(*f.variants[v]);
    store_->write_best(*f.variants[v], vc.entry, launch_lines(vc, spec_),
                       std::filesystem::path("variants") / ("v" + std::to_string(v) + ".cu"));
  }
  report::write_reports(*store_, performance_case_names());

  std::cout << fs::read_file(store_->dir() / "summary.json", "run summary") << std::flush;
  if (!o_.quiet) {
    // Under the fake worker every line with a number says so.
    const std::string simulated =
        device_ && device_->simulated ? std::string(" (") + model::kSimulatedNote + ")" : std::string();
    std::cerr << "kopt: " << stats_.evaluated << " candidate(s) evaluated in " << fmt(stats_.search_minutes, 3)
              << " min; run folder " << store_->dir().string() << simulated << "\n";
    std::cerr << "kopt: wall time " << fmt(minutes_elapsed(), 3) << " min: set-up, initial kernel and baseline "
              << fmt(std::max(minutes_elapsed() - stats_.search_minutes - f.minutes, 0.0), 3) << ", search "
              << fmt(stats_.search_minutes, 3) << ", re-timing " << fmt(f.minutes, 3) << simulated << "\n";
    if (stats_.evaluated > 0 && !compile_only()) std::cerr << "kopt: " << stats_.time_line(summary.counts) << simulated << "\n";
    if (winner && winner->result.geomean_ms) {
      const double g = f.winner_all_cases_ms.value_or(*winner->result.geomean_ms);
      std::cerr << "kopt: best " << winner->label << ": geomean " << fmt(g) << " ms";
      if (initial_geomean_) std::cerr << ", " << fmt(*initial_geomean_ / g, 3) << "x the initial kernel";
      if (cublas_geomean_) std::cerr << ", " << fmt(*cublas_geomean_ / g, 3) << "x cuBLAS";
      std::cerr << simulated << "\n";
    } else if (!compile_only()) {
      std::cerr << "kopt: no candidate passed every case\n";
    }
  }
  if (sig) {
    // Said even with --quiet: the run is not finished, and this is how to finish it.
    std::cerr << "kopt: interrupted by " << util::signal_name(sig) << ": " << store_->history().size()
              << " attempt(s) recorded in " << store_->dir().string()
              << "; summary.json and report.html are written for them\n"
              << "kopt: to continue the run: " << resume_command << "\n";
    return util::interrupt_exit_code(sig);
  }
  if (std::optional<int> code = proposer_.exit_code()) return *code;
  if (compile_only()) return 77;
  return winner ? 0 : 1;
}

int Driver::compile_only_listing() {
  ThreadPool pool(compile_threads(o_.compile_threads));
  const std::optional<store::TunerStats::Filtered> filtered =
      is_agent(o_) ? std::nullopt : filtered_before_compile(spec_, device_constants(), o_.quiet);
  // At most two compiles a thread in flight, and the budget holds (each
  // proposal counts as an evaluation; nothing is timed, so no patience): a
  // large evals budget on a large space must not queue candidates without end.
  std::deque<std::pair<spec::Candidate, std::future<cuda::CompileResult>>> jobs;
  int ok = 0, failed = 0, hits = 0;
  nlohmann::json out = nlohmann::json::array();
  auto collect_oldest = [&] {
    auto& [c, f] = jobs.front();
    cuda::CompileResult r = f.get();
    (r.ok ? ok : failed)++;
    hits += r.cache_hit;
    out.push_back({{"params", c.params}, {"compiled", r.ok}, {"compile_ms", r.compile_ms}, {"cache_hit", r.cache_hit},
                   {"error_name", r.error_name}});
    if (!r.ok) out.back()["error"] = r.detail.empty() ? cuda::first_error_line(r.log) : r.detail;
    if (!o_.quiet)
      std::cerr << "  " << c.label << ": "
                << (r.ok ? "compiled" : "compile_error " + r.error_name + ": " + out.back()["error"].get<std::string>())
                << "\n";
    jobs.pop_front();
  };
  while (!stop_fulfilled() && !util::interrupted()) {
    propose::Proposal p = proposer_.propose();
    if (p.kind != propose::Proposal::Kind::candidate) break;  // nothing is observed: a wait ends it too
    auto fut = submit_compile(pool, *runner_, p.candidate);
    count_evaluation({p.candidate.params, false, 0});
    jobs.emplace_back(std::move(p.candidate), std::move(fut));
    while (jobs.size() >= 2 * pool.size()) collect_oldest();
  }
  while (!jobs.empty()) collect_oldest();
  nlohmann::json listing = {{"compile_only", true}, {"arch", o_.arch}};
  listing.update(proposer_.summary());
  listing.erase("strategy");
  listing.update({{"compiled", ok}, {"failed", failed}, {"cache_hits", hits}, {"candidates", out}});
  if (filtered)
    listing["filtered_before_compile"] = {
        {"configurations", filtered->configurations}, {"space", filtered->space}, {"limits", filtered->limits}};
  std::cout << dump_json(listing, 2) << std::endl;
  std::cerr << "kopt: " << no_device_ << "\n"
            << "kopt: compiled " << ok << " candidate(s) for " << o_.arch << " (" << failed
            << " failed); checking and timing need a GPU\n";
  if (const int sig = util::interrupt_signal()) {
    std::cerr << "kopt: interrupted by " << util::signal_name(sig) << ": the listing above is incomplete\n";
    return util::interrupt_exit_code(sig);
  }
  return 77;
}

int Driver::interrupted_before_start() const {
  const int sig = util::interrupt_signal();
  std::cerr << "kopt: interrupted by " << util::signal_name(sig) << " before the run started; nothing was "
            << (o_.resume.empty() ? "written" : "changed in " + o_.resume.string()) << "\n";
  return util::interrupt_exit_code(sig);
}

int Driver::run(std::filesystem::path* run_dir, const std::filesystem::path& drafted) {
  if (util::interrupted()) return interrupted_before_start();
  const bool listing = compile_only() && !proposer_.finish_policy().compile_only_run_folder;
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stop_ = make_stop(listing);
  }
  if (listing) {
    proposer_.start(*this);  // no run folder: the service's history is empty
    return compile_only_listing();
  }
  open_store(run_dir);
  if (!drafted.empty()) {
    adopt_draft(drafted);
    open_device();
  }
  if (compile_only() && !o_.quiet)
    std::cerr << "kopt: " << no_device_ << "\nkopt: no GPU: candidates are compiled for " << arch_
              << " only (verdict 'compiled'); checking and timing need a GPU\n";
  proposer_.start(*this);
  struct FinishOnce {  // the proposer ends its own work however the run ends
    propose::Proposer& p;
    bool done = false;
    void operator()() {
      if (!done) p.finish();
      done = true;
    }
    ~FinishOnce() { (*this)(); }
  } finish_proposer{proposer_};
  try {
    replay_history();
    evaluate_initial();
    evaluate_baseline();
    run_pipeline();
  } catch (const util::Interrupted&) {
    // Stopped waiting for the GPU: what is recorded is summarised below.
  }
  finish_proposer();
  const double before_finalists = minutes_elapsed();
  Finalists f = choose_finalists();
  f.minutes = minutes_elapsed() - before_finalists;
  return finish(f);
}

}  // namespace kopt::driver
