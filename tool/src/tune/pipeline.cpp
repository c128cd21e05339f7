// Phase 4 of a run: the proposer's candidates, compiled on a thread pool ahead
// of the GPU, checked and timed in the worker, recorded and observed.
//
// Pipelined: as soon as candidate N's result has arrived, candidate N+1 is sent
// to the worker, and only then is N recorded, observed and reported, while the
// GPU evaluates N+1 (recording fsyncs several files and a strategy may refit a
// model: tens of ms that would otherwise idle the GPU). Durability: a kill -9
// can lose two candidates, the one being evaluated and the one whose result is
// being recorded. Nothing recorded is lost, and --resume may propose the lost
// ones again. SIGINT/SIGTERM (util/interrupt.h): the candidate in flight
// finishes and is recorded, nothing more is proposed or started (compiles
// already queued still run, into the cache, but are not evaluated).
#include <unistd.h>

#include <deque>
#include <exception>
#include <future>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "tune/driver_impl.h"
#include "util/interrupt.h"
#include "util/thread_pool.h"

namespace kopt::tune {
namespace {

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

/// Sum over performance cases of the time spent in measured launches (ms).
double measured_ms(const model::Result& r) {
  double total = 0;
  for (const auto& c : r.cases)
    if (c.latency) total += c.latency->mean_ms * c.latency->samples;
  return total;
}

/// One status line per candidate: redrawn in place on a terminal.
class Progress {
 public:
  explicit Progress(bool quiet) : quiet_(quiet), tty_(::isatty(2)) {}
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

 private:
  bool quiet_, tty_;
};

}  // namespace

/// The compile-ahead queue and the candidate on the worker.
class Pipeline {
 public:
  Pipeline(eval::Evaluator& ev, propose::Proposer& proposer, PipelineStats& stats, bool compile_only)
      : ev_(ev), proposer_(proposer), stats_(stats), compile_only_(compile_only),
        pool_(stats.threads), prefetch_(stats.threads * 2) {}

  /// Proposes candidates and queues their compiles, up to `prefetch` ahead.
  void refill() {
    while (!exhausted_ && queued_.size() < prefetch_ && !util::interrupted()) {
      propose::Proposal p = proposer_.propose();
      if (p.kind == propose::Proposal::Kind::done) exhausted_ = true;
      if (p.kind != propose::Proposal::Kind::candidate) break;
      auto fut = pool_.submit([ev = &ev_, c = p.candidate] { return ev->compile(c); });
      queued_.push_back({std::move(p.candidate), std::move(fut)});
    }
  }
  bool has_queued() const { return !queued_.empty(); }
  bool exhausted() const { return exhausted_; }

  /// The candidate on the worker (or, for a compile error or in compile-only
  /// mode, the one whose result is already known), from start to finish.
  struct Running {
    spec::Candidate candidate;
    bool on_worker = false;
    Clock::time_point started;
    std::optional<model::Result> known;
  };

  /// Takes the next queued candidate, waits for its compile and sends it to the worker.
  Running start_next(const std::function<model::Result(const cuda::CompileResult&)>& compile_only_result) {
    Queued job = std::move(queued_.front());
    queued_.pop_front();
    const auto t_wait = Clock::now();
    if (job.compiled.wait_for(std::chrono::seconds(0)) == std::future_status::ready) ++stats_.compiles_ready;
    cuda::CompileResult compiled = job.compiled.get();
    stats_.compile_wait_ms += ms_between(t_wait, Clock::now());
    ++stats_.compiles;
    stats_.cache_hits += compiled.cache_hit;
    if (!compiled.cache_hit) stats_.compile_ms.push_back(compiled.compile_ms);
    Running running{std::move(job.candidate), compiled.ok && !compile_only_, Clock::now(), std::nullopt};
    if (compile_only_) {
      running.known = compile_only_result(compiled);
      return running;
    }
    // A compile error sends nothing: the GPU stays idle, and the gap goes on
    // until a request does go out.
    if (running.on_worker && gpu_idle_since_) {
      stats_.host_gap_ms += ms_between(*gpu_idle_since_, running.started);
      gpu_idle_since_.reset();
    }
    ev_.start(running.candidate, compiled, false);
    return running;
  }

  /// The result of the running candidate.
  model::Result finish(Running& running) {
    if (running.known) return std::move(*running.known);
    model::Result r = ev_.finish();
    const auto t_result = Clock::now();
    if (running.on_worker) {
      gpu_idle_since_ = t_result;
      // Wall time of the request minus what the worker reports checking and
      // timing: module load, request and result transfer, a hang's timeout,
      // and any time the result waited for the previous candidate's bookkeeping.
      stats_.worker_other_ms += std::max(0.0, ms_between(running.started, t_result) - r.check_ms - r.timing_ms);
    }
    return r;
  }

 private:
  struct Queued {
    spec::Candidate candidate;
    std::future<cuda::CompileResult> compiled;
  };
  eval::Evaluator& ev_;
  propose::Proposer& proposer_;
  PipelineStats& stats_;
  bool compile_only_;
  ThreadPool pool_;  // compiles still queued at the end are abandoned (their results are cached)
  size_t prefetch_;
  std::deque<Queued> queued_;
  bool exhausted_ = false;
  // When the last result arrived, while no request has been sent since.
  std::optional<Clock::time_point> gpu_idle_since_;
};

void Driver::run_pipeline() {
  stats_.threads = compile_threads(o_.compile_threads);
  Pipeline pipe(*ev_, proposer_, stats_, compile_only());
  auto known = [this](const cuda::CompileResult& cr) { return compile_only_result(cr); };
  Progress progress(o_.quiet);
  const auto t_search = Clock::now();
  // Starts the next candidate, proposing first when none is queued. Returns
  // nullopt when the proposer is done (or a stop condition holds).
  auto next_running = [&]() -> std::optional<Pipeline::Running> {
    if (stop_->fulfilled() || util::interrupted()) return std::nullopt;
    if (!pipe.has_queued()) pipe.refill();
    if (!pipe.has_queued()) {
      if (pipe.exhausted() || util::interrupted()) return std::nullopt;
      throw std::logic_error("proposer " + proposer_.name() + " waits with no candidate outstanding");
    }
    return pipe.start_next(known);
  };

  std::optional<Pipeline::Running> current = next_running();  // a resumed run may have met its budget already
  while (current) {
    model::Result r = pipe.finish(*current);
    with_reference(r);
    stats_.gpu_measured_ms += measured_ms(r);
    stats_.check_ms += r.check_ms;
    stats_.timing_ms += r.timing_ms;
    const bool ok = r.verdict == model::Verdict::ok;
    stop_->update({current->candidate.params, ok, r.geomean_ms.value_or(0)});
    ++stats_.evaluated;

    // Keep the GPU busy: the next candidate goes out before N's bookkeeping.
    // Should that throw (a spec error in its launch, a worker that cannot be
    // started), N is still recorded first. A proposer that waits for N's
    // result (the agent) has nothing queued: its next candidate starts below.
    std::optional<Pipeline::Running> next;
    std::exception_ptr start_failed;
    try {
      if (!stop_->fulfilled() && !util::interrupted()) {  // interrupted: the one in flight was the last
        if (!pipe.has_queued()) pipe.refill();
        if (pipe.has_queued()) next = pipe.start_next(known);
      }
    } catch (...) {
      start_failed = std::current_exception();
    }

    const model::Attempt& a = record("candidate", current->candidate, r);
    proposer_.observe(current->candidate, a);

    const model::Attempt* best = store_->best();
    const double mins = std::chrono::duration<double>(Clock::now() - t_search).count() / 60.0;
    std::ostringstream line;
    line << "[" << stats_.evaluated << (o_.max_evaluations > 0 ? "/" + std::to_string(o_.max_evaluations) : "") << "] ";
    if (best && best->result.geomean_ms) {
      line << "best " << fmt(*best->result.geomean_ms) << " ms";
      if (reference_geomean_) line << " (" << fmt(*reference_geomean_ / *best->result.geomean_ms, 3) << "x ref";
      if (cublas_geomean_) line << ", " << fmt(*cublas_geomean_ / *best->result.geomean_ms, 3) << "x cuBLAS";
      if (reference_geomean_) line << ")";
    }
    line << " | " << a.label << ": " << model::verdict_name(a.result.verdict);
    if (a.result.geomean_ms) line << " " << fmt(*a.result.geomean_ms) << " ms";
    line << " | " << fmt(stats_.evaluated / std::max(mins, 1e-9), 3) << "/min";
    if (o_.max_evaluations > 0 && stats_.evaluated > 0)
      line << " | ETA " << fmt(mins / stats_.evaluated * (o_.max_evaluations - stats_.evaluated), 2) << " min";
    line << " | " << stop_->status();
    progress.line(line.str());
    if (start_failed) std::rethrow_exception(start_failed);

    if (next) {
      pipe.refill();
      current = std::move(next);
    } else {
      current = next_running();
    }
  }
  progress.done();
  stats_.search_minutes = std::chrono::duration<double>(Clock::now() - t_search).count() / 60.0;
}

}  // namespace kopt::tune
