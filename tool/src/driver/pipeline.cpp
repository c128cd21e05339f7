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
// finishes and is recorded, nothing more is proposed or started.
//
// Compiles run ahead on a thread pool: as many candidates are proposed ahead of
// the GPU as keep it fed (compile_ahead_depth: from the recent compile and
// evaluation times), at most twice the pool's threads, or --compile-ahead N. A candidate
// whose compile is done may start before an earlier one whose compile is not
// (Runner::start_when_compiled; a replay and a compile-only run keep the
// proposal order). When the search ends, compiles not yet started are dropped and
// running ones stopped (Runner::stop_compiles): nothing waits for results
// that nobody reads.
//
// With several workers (--devices: the runner's slots, driver/runner.h) each idle one gets
// the next candidate; results are recorded and observed in the order they
// arrive, each with its device. A worker whose device is lost (it cannot be
// restarted, or does not answer a fresh hello after a worker_crash or a
// timeout) is dropped, and its candidate goes back to the queue for another;
// a candidate whose worker died while its device stays is run once more
// (docs/multi-gpu.md).
#include <unistd.h>

#include <condition_variable>
#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <map>
#include <exception>
#include <future>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "cuda/nvrtc.h"
#include "driver/driver_impl.h"
#include "driver/proposers.h"
#include "util/error.h"
#include "util/interrupt.h"
#include "util/text.h"
#include "util/thread_pool.h"

namespace kopt::driver {
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

/// The `q` quantile of the last `n` values of `v`.
double recent_quantile(const std::vector<double>& v, size_t n, double q) {
  return quantile(std::vector<double>(v.end() - static_cast<std::ptrdiff_t>(std::min(n, v.size())), v.end()), q);
}

}  // namespace

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

size_t compile_ahead_depth(const std::vector<double>& compile_ms, const std::vector<double>& eval_ms, size_t workers,
                           size_t most) {
  constexpr size_t kRecent = 32, kEnough = 4;
  workers = std::max<size_t>(workers, 1);
  const size_t least = std::min(workers + 1, most);
  if (compile_ms.size() < kEnough || eval_ms.size() < kEnough) return most;
  const double c = recent_quantile(compile_ms, kRecent, 0.75);
  const double e = std::max(recent_quantile(eval_ms, kRecent, 0.5), 1e-3);
  const double need = std::ceil(2.0 * c * static_cast<double>(workers) / e) + 1.0;
  if (!(need < static_cast<double>(most))) return most;  // NaN too
  return std::max(least, static_cast<size_t>(need));
}

std::future<cuda::CompileResult> submit_compile(ThreadPool& pool, Runner& runner, const spec::Candidate& c,
                                                std::function<void()> on_done) {
  struct Parts {
    std::mutex mu;
    std::vector<cuda::CompileResult> results;
    std::exception_ptr error;
    size_t left = 0;
    std::promise<cuda::CompileResult> joined;
  };
  auto parts = std::make_shared<Parts>();
  const size_t n = std::max<size_t>(1, runner.compile_parts(c));
  parts->results.resize(n);
  parts->left = n;
  std::future<cuda::CompileResult> fut = parts->joined.get_future();
  for (size_t i = 0; i < n; ++i)
    pool.submit([r = &runner, c, i, parts, on_done] {
      std::exception_ptr error;
      cuda::CompileResult one;
      try {
        one = r->compile_part(c, i);
      } catch (...) {
        error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(parts->mu);
        parts->results[i] = std::move(one);
        if (error && !parts->error) parts->error = error;
        if (--parts->left > 0) return;
      }
      try {
        if (parts->error) std::rethrow_exception(parts->error);
        parts->joined.set_value(r->join_parts(c, std::move(parts->results)));
      } catch (...) {
        parts->joined.set_exception(std::current_exception());
      }
      if (on_done) on_done();
    });
  return fut;
}

/// The compile-ahead queue and the candidates on the workers.
class Pipeline {
 public:
  /// `compile_ahead`: a fixed depth, or 0 to choose it as the run goes (compile_ahead_depth).
  Pipeline(Runner& runner, propose::Proposer& proposer, PipelineStats& stats, bool compile_only, int compile_ahead)
      : runner_(runner), proposer_(proposer), stats_(stats), compile_only_(compile_only),
        pool_threads_(std::in_place, stats.threads),
        most_ahead_(stats.threads * 2 + (runner.size() > 1 ? runner.size() : 0)),
        fixed_ahead_(compile_ahead > 0 ? static_cast<size_t>(compile_ahead) : 0),
        idle_since_(runner.size()) {}

  /// The search is over: compiles not started are dropped, and those running
  /// are stopped (in a compiler process; one in this process runs to its
  /// end), rather than waited for. Nobody reads their results, and waiting
  /// for a queue of unrolled-loop compiles can add tens of seconds to a run.
  ~Pipeline() {
    pool_threads_->discard_queued();
    runner_.stop_compiles(true);
    pool_threads_.reset();  // joins the threads: at most the stopped compiles' ends
    runner_.stop_compiles(false);
  }
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  /// Candidates to keep proposed ahead of the GPU now.
  size_t ahead() const {
    if (fixed_ahead_) return fixed_ahead_;
    if (compile_only_) return most_ahead_;
    return compile_ahead_depth(stats_.compile_ms, eval_ms_, runner_.size(), most_ahead_);
  }

  /// Proposes candidates and queues their compiles, up to ahead() of them.
  void refill() {
    for (;;) {
      const size_t depth = ahead();
      if (exhausted_ || queued_.size() >= depth || util::interrupted()) break;
      propose::Proposal p = proposer_.propose();
      if (p.kind == propose::Proposal::Kind::done) exhausted_ = true;
      if (p.kind != propose::Proposal::Kind::candidate) break;
      // done_ is signalled after the future is set: a wait for any compile
      // (next_index) sees it ready when woken.
      queued_.push_back({p.candidate, submit_compile(*pool_threads_, runner_, p.candidate, [d = done_] { d->signal(); }), 0});
      stats_.ahead.push_back(static_cast<double>(depth));
    }
  }
  bool has_queued() const { return !queued_.empty(); }
  bool exhausted() const { return exhausted_; }

  /// A candidate taken back from a lost worker (or run once more): first in line.
  void requeue(spec::Candidate c, cuda::CompileResult compiled, int retries) {
    std::promise<cuda::CompileResult> ready;
    ready.set_value(std::move(compiled));
    queued_.push_front({std::move(c), ready.get_future(), retries});
  }

  /// What the pipeline knows of a candidate it started.
  struct Running {
    spec::Candidate candidate;
    cuda::CompileResult compiled;
    bool on_worker = false;
    int retries = 0;
  };

  /// An idle worker's slot, or nullopt (compile-only: slot 0 when nothing is running).
  std::optional<size_t> idle_slot(bool anything_running) const {
    if (compile_only_) return anything_running ? std::nullopt : std::optional<size_t>(0);
    for (size_t i = 0; i < runner_.size(); ++i)
      if (runner_.idle(i)) return i;
    return std::nullopt;
  }

  /// Takes the next queued candidate, waits for its compile and sends it to
  /// the worker of `slot` (compile-only: its result is known at once).
  void start_next(size_t slot, std::map<size_t, Running>& running, std::deque<model::Result>& known,
                  const std::function<model::Result(const cuda::CompileResult&)>& compile_only_result) {
    const auto t_wait = Clock::now();
    bool waited = false;
    const auto at = queued_.begin() + static_cast<std::ptrdiff_t>(next_index(waited));
    Queued job = std::move(*at);
    queued_.erase(at);
    // The proposer may withdraw it (a shape class whose time is up) before
    // its compile is waited for; the compile still lands in the cache.
    if (job.retries == 0 && !proposer_.before_start(job.candidate)) {
      ++stats_.withdrawn;
      return;
    }
    if (!waited && ready(job)) ++stats_.compiles_ready;
    cuda::CompileResult compiled = job.compiled.get();
    stats_.compile_wait_ms += ms_between(t_wait, Clock::now());
    if (job.retries == 0) {  // a requeued candidate's compile was counted the first time
      ++stats_.compiles;
      stats_.cache_hits += compiled.cache_hit;
      if (!compiled.cache_hit) stats_.compile_ms.push_back(compiled.compile_ms);
    }
    Running r{std::move(job.candidate), std::move(compiled), false, job.retries};
    r.on_worker = r.compiled.ok && !compile_only_;
    if (compile_only_) {
      known.push_back(compile_only_result(r.compiled));
      running[slot] = std::move(r);
      return;
    }
    // A compile error sends nothing: the GPU stays idle, and the gap goes on
    // until a request does go out.
    const auto now = Clock::now();
    if (r.on_worker && idle_since_[slot]) {
      stats_.host_gap_ms += ms_between(*idle_since_[slot], now);
      idle_since_[slot].reset();
    }
    runner_.start(slot, r.candidate, r.compiled);
    running[slot] = std::move(r);
  }

  /// Bookkeeping of a result from a worker.
  void finished(const RunnerDone& d, bool on_worker) {
    if (!on_worker) return;
    idle_since_[d.slot] = d.finished;
    // Wall time of the request minus what the worker reports checking and
    // timing: module load, request and result transfer, a hang's timeout,
    // and any time the result waited for the previous candidate's bookkeeping.
    const double wall = ms_between(d.sent, d.finished);
    eval_ms_.push_back(wall);
    stats_.worker_other_ms += std::max(0.0, wall - d.result.check_ms - d.result.timing_ms);
    if (d.slot < stats_.devices.size()) stats_.devices[d.slot].busy_ms += wall;
  }

 private:
  struct Queued {
    spec::Candidate candidate;
    std::future<cuda::CompileResult> compiled;
    int retries = 0;
  };

  /// Counts finished compiles; wakes the pipeline waiting for any of them.
  class Done {
   public:
    void signal() {
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++count_;
      }
      cv_.notify_all();
    }
    uint64_t count() {
      std::lock_guard<std::mutex> lock(mu_);
      return count_;
    }
    void wait_past(uint64_t seen) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return count_ != seen; });
    }

   private:
    std::mutex mu_;
    std::condition_variable cv_;
    uint64_t count_ = 0;
  };

  static bool ready(const Queued& q) {
    return q.compiled.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }

  /// The queued candidate to start next: the first in line when its compile
  /// is done (a candidate taken back is always ready), or when the run
  /// keeps the proposal order (compile-only, or the runner's choice); else the first whose compile is done,
  /// waiting for one when none is (`waited`).
  size_t next_index(bool& waited) {
    if (compile_only_ || !runner_.start_when_compiled() || ready(queued_.front())) return 0;
    for (;;) {
      const uint64_t seen = done_->count();  // read before looking: a compile done after it wakes the wait
      for (size_t i = 0; i < queued_.size(); ++i)
        if (ready(queued_[i])) return i;
      waited = true;
      done_->wait_past(seen);
    }
  }
  Runner& runner_;
  propose::Proposer& proposer_;
  PipelineStats& stats_;
  bool compile_only_;
  std::shared_ptr<Done> done_ = std::make_shared<Done>();  // before the pool: its jobs hold it
  std::optional<ThreadPool> pool_threads_;  // reset first in ~Pipeline
  size_t most_ahead_;   // twice the compile threads (plus the workers, with several)
  size_t fixed_ahead_;  // --compile-ahead N; 0: ahead() chooses
  std::vector<double> eval_ms_;  // wall time of each evaluation on a worker, request to result
  std::deque<Queued> queued_;
  bool exhausted_ = false;
  // Per slot: when its last result arrived, while no request has been sent since.
  std::vector<std::optional<Clock::time_point>> idle_since_;
};

std::string Driver::progress_line(const model::Attempt& a, double mins, bool several) const {
  const model::Attempt* best = store_->best();
  std::ostringstream line;
  const int64_t evals = o_.budget.evaluations;
  line << "[" << stats_.evaluated << (evals > 0 ? "/" + std::to_string(evals) : "") << "] ";
  if (const std::string p = proposer_.progress(); !p.empty()) {
    line << p;  // shape classes: the geomeans are over one class's cases, the ratios to all cases' meaningless
  } else if (best && best->result.geomean_ms) {
    line << "best " << fmt(*best->result.geomean_ms) << " ms";
    if (reference_geomean_) line << " (" << fmt(*reference_geomean_ / *best->result.geomean_ms, 3) << "x ref";
    if (cublas_geomean_) line << ", " << fmt(*cublas_geomean_ / *best->result.geomean_ms, 3) << "x cuBLAS";
    if (reference_geomean_) line << ")";
  }
  line << " | " << a.label << ": " << model::verdict_name(a.result.verdict);
  if (a.result.verdict == model::Verdict::compile_error)  // why, in one line
    line << " (" << clip(a.result.detail.empty() ? cuda::first_error_line(a.result.compile_log) : a.result.detail, 200)
         << ")";
  if (a.result.geomean_ms) line << " " << fmt(*a.result.geomean_ms) << " ms";
  if (several && a.result.device) line << " on device " << *a.result.device;
  line << " | " << fmt(stats_.evaluated / std::max(mins, 1e-9), 3) << "/min";
  if (evals > 0 && stats_.evaluated > 0)
    line << " | ETA " << fmt(mins / stats_.evaluated * (evals - stats_.evaluated), 2) << " min";
  line << " | " << stop_->status();
  if (device_ && device_->simulated) line << " | " << model::kSimulatedNote;
  return line.str();
}

void Driver::run_pipeline() {
  stats_.threads = compile_threads(o_.compile_threads);
  if (!is_agent(o_)) stats_.filtered = filtered_before_compile(spec_, device_constants(), o_.quiet);
  const bool several = runner_->size() > 1;
  const size_t primary_before = runner_->primary();
  for (size_t i = 0; i < runner_->size(); ++i) {
    const RunnerSlot slot = runner_->slot(i);
    PipelineStats::Device d;
    d.device = slot.device;
    d.name = slot.gpu;
    d.uuid = slot.uuid;
    d.dropped = slot.dropped;
    stats_.devices.push_back(d);
  }
  Pipeline pipe(*runner_, proposer_, stats_, compile_only(), o_.compile_ahead);
  stats_.fixed_ahead = o_.compile_ahead > 0;
  auto known_result = [this](const cuda::CompileResult& cr) { return compile_only_result(cr); };
  Progress progress(o_.quiet);
  const auto t_search = now();  // the run's clock (a replay's is simulated): the budget's too

  std::map<size_t, Pipeline::Running> running;  // by slot
  std::deque<model::Result> known;              // compile-only results, in order
  std::exception_ptr failure;                    // the run ends with it once nothing is running
  // Sends work to every idle worker. With candidates on other workers, a new
  // one starts only while the evaluations budget has room for it (what is
  // left counts the resumed run's candidates too: budget_left()).
  auto fill = [&] {
    while (!failure && !stop_fulfilled() && !util::interrupted()) {
      const std::optional<size_t> slot = pipe.idle_slot(!running.empty());
      if (!slot) return;
      if (!running.empty()) {
        const std::optional<int64_t> left = budget_left().evaluations;
        if (left && *left <= static_cast<int64_t>(running.size())) return;
      }
      if (!pipe.has_queued()) pipe.refill();
      if (!pipe.has_queued()) return;  // the proposer waits for a result, or is done
      pipe.start_next(*slot, running, known, known_result);
    }
  };
  auto fill_catching = [&] {
    try {
      fill();
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  };

  fill();  // a resumed run may have met its budget already
  for (;;) {
    if (running.empty()) {
      if (failure) std::rethrow_exception(failure);
      if (stop_fulfilled() || util::interrupted()) break;
      if (!pipe.has_queued()) pipe.refill();
      if (!pipe.has_queued()) {
        if (pipe.exhausted() || util::interrupted()) break;
        throw std::logic_error("proposer " + proposer_.name() + " waits with no candidate outstanding");
      }
      if (!compile_only() && runner_->live_count() == 0)
        throw EnvironmentError("kopt.pool.005", "every device was dropped (see the lines above); "
                                                "nothing is left to evaluate on");
      fill();
      continue;
    }
    // The next result: compile-only results at once, else the first worker to finish.
    RunnerDone d;
    if (compile_only()) {
      d.slot = running.begin()->first;
      d.result = std::move(known.front());
      known.pop_front();
    } else {
      d = runner_->wait_any();
    }
    Pipeline::Running current = std::move(running.at(d.slot));
    running.erase(d.slot);
    if (d.error) {  // not the candidate's doing (a spec error, an interrupted wait): the run ends
      if (!failure) failure = d.error;
      continue;
    }
    model::Result r = std::move(d.result);
    if (!compile_only()) pipe.finished(d, current.on_worker);
    if (!d.lost.empty() && several) {
      runner_->drop(d.slot, d.lost);
      stats_.devices[d.slot].dropped = d.lost;
      if (runner_->live_count() > 0) {  // the candidate was not the cause: another worker takes it
        if (!o_.quiet) std::cerr << "kopt: " << current.candidate.label << " goes back to the queue\n";
        pipe.requeue(std::move(current.candidate), std::move(current.compiled), current.retries);
        fill_catching();
        continue;
      }
      // No device left: the run ends once the others' results are recorded.
      // This candidate is not (its device failed, not it): --resume proposes it again.
      if (!failure)
        failure = std::make_exception_ptr(EnvironmentError(
            "kopt.pool.005", "every device was dropped (the last: " + runner_->slot(d.slot).name + ", " + d.lost +
                                 "); what was evaluated is recorded: kopt optimize --resume " + store_->dir().string()));
      continue;
    } else if (several && r.verdict == model::Verdict::worker_crash && current.retries == 0) {
      // The worker died, its device is still there: once more, on whichever worker is free.
      if (!o_.quiet)
        std::cerr << "kopt: the worker on " << runner_->slot(d.slot).name << " died on " << current.candidate.label
                  << " (" << r.detail << "); running it once more\n";
      pipe.requeue(std::move(current.candidate), std::move(current.compiled), 1);
      fill_catching();
      continue;
    }
    with_reference(r);
    const double measured = measured_ms(r);
    stats_.gpu_measured_ms += measured;
    stats_.check_ms += r.check_ms;
    stats_.timing_ms += r.timing_ms;
    if (!compile_only() && current.on_worker && d.slot < stats_.devices.size()) {
      stats_.devices[d.slot].measured_ms += measured;
      ++stats_.devices[d.slot].evaluated;
    }
    const bool ok = r.verdict == model::Verdict::ok;
    count_evaluation({current.candidate.params, ok, r.geomean_ms.value_or(0)});
    ++stats_.evaluated;

    // Keep the GPUs busy: the next candidates go out before this one's
    // bookkeeping. Should that throw (a spec error in its launch, a worker
    // that cannot be started), this one is still recorded first. A proposer
    // that waits for this result (the agent) has nothing queued: its next
    // candidate starts at the top of the loop.
    fill_catching();

    const model::Attempt& a = record(model::AttemptKind::candidate, current.candidate, r);
    proposer_.observe(current.candidate, a);

    const double mins = std::chrono::duration<double>(now() - t_search).count() / 60.0;
    progress.line(progress_line(a, mins, several));
    if (!failure) pipe.refill();
  }
  progress.done();
  stats_.search_minutes = std::chrono::duration<double>(now() - t_search).count() / 60.0;
  // The re-timing runs on one device: the first that is still live.
  if (!compile_only() && runner_->primary() < runner_->size() && runner_->primary() != primary_before && !o_.quiet)
    std::cerr << "kopt: the final re-timing runs on " << runner_->slot(runner_->primary()).name << "\n";
}

}  // namespace kopt::driver
