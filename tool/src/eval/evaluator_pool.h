// Several workers at once: one Evaluator per device (`kopt optimize
// --devices 0,1,...`), each worker started directly or through a launcher the
// user configured (`--worker-launcher "ssh gpu-node-3"`, docs/multi-gpu.md).
//
// Each slot of the pool owns one Evaluator and one thread, which does all of
// that slot's worker I/O: its workers are started on it, so that they die
// with it (PR_SET_PDEATHSIG follows the starting thread), and a slow or
// silent worker holds up no other slot. The threads are started by open(),
// never by the constructor: a thread that cannot be created (a process limit)
// is an error there, with every thread already started still joined by the
// destructor, so nothing is left waiting. The caller (one thread) starts a
// candidate on an idle slot and collects results in the order they finish.
// The device timing lock (util::DeviceLock) is each Evaluator's own, keyed by
// the UUID its worker reports: it is taken per device.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "eval/evaluator.h"
#include "model/worker_plan.h"

namespace kopt::eval {

/// How one worker of a pool is started.
struct WorkerSlot {
  int device = 0;                 // the CUDA ordinal (recorded as Result::device)
  std::vector<std::string> argv;  // the whole command: launcher words, then the worker's
  std::vector<std::string> env;   // added to its environment (KOPT_WORKER_*)
  std::string name;               // "device 1", for messages
};

/// A --worker-launcher value as words: split at unquoted blanks; '...' and
/// "..." quote (a backslash escapes the next character outside '...').
/// Throws UsageError(kopt.pool.002) for an unterminated quote or no word.
std::vector<std::string> split_launcher(const std::string& text);

/// The worker command lines of a plan (model/worker_plan.h), one per entry of
/// plan.devices:
///   worker   plan.command with every "{device}" replaced by the ordinal
///            (`kopt worker --device {device}` by default);
///   launcher when plan.launcher is not empty, its words first, "{device}"
///            and "{index}" (the slot, 0-based) replaced in each; then the
///            worker command line: in place of a word "{worker}" as ONE word,
///            quoted for a POSIX shell; else, when the last launcher word is
///            "-c" (`bash -c`, `sh -c`), appended as one such word; else
///            appended word by word (`ssh host`, `srun ...`, `env A=B`).
/// The launcher's first word, unless it holds a '/', is looked up in PATH
/// here (UsageError kopt.pool.002 when it is not there). Each slot's
/// environment gets KOPT_WORKER_DEVICE, KOPT_WORKER_INDEX, KOPT_WORKER_COUNT.
/// A device given twice is refused without a launcher (kopt.pool.003): two
/// workers would time on one GPU at once. No device, or more than
/// WorkerPlan::kMaxWorkers, is kopt.pool.001.
std::vector<WorkerSlot> plan_workers(const model::WorkerPlan& plan);

/// `options` with the worker of `slot`: its command line, environment and
/// ordinal (recorded in results). How every Evaluator of a plan is set up.
EvaluatorOptions on_worker(EvaluatorOptions options, const WorkerSlot& slot);

/// The worker command line as one word for a POSIX shell ('...' quoting).
std::string shell_quote_command(const std::vector<std::string>& argv);

class EvaluatorPool {
 public:
  struct Options {
    /// Where "device N dropped ..." lines go (default: stderr).
    std::function<void(const std::string&)> say;
    /// After a worker_crash or timeout verdict, start a fresh worker at once
    /// and call the device lost when it does not answer (Done::lost). Off
    /// for a pool of one (the plain run keeps its old behaviour).
    bool probe_after_failure = true;
    /// The slots' ordinals are devices of this machine (no launcher): once
    /// the first worker has said how many devices there are, slots past
    /// that count are left out, with one note, before their threads and
    /// workers are started.
    bool local_devices = false;
  };

  /// `base` is each slot's EvaluatorOptions with worker_argv, worker_env and
  /// device replaced by the slot's.
  EvaluatorPool(const spec::Spec& spec, const EvaluatorOptions& base, std::vector<WorkerSlot> slots,
                Options options);
  ~EvaluatorPool();
  EvaluatorPool(const EvaluatorPool&) = delete;
  EvaluatorPool& operator=(const EvaluatorPool&) = delete;

  size_t size() const { return slots_.size(); }
  const WorkerSlot& slot(size_t i) const { return slots_[i]->config; }
  Evaluator& evaluator(size_t i) { return *slots_[i]->ev; }

  /// Starts the slots' threads and every worker, and reads its device
  /// (hello), all at once (with `local_devices` and several slots, the first
  /// worker's hello comes first, to learn the device count). A slot whose
  /// worker fails is dropped with a message, and so is a second worker
  /// reporting the UUID of a device another slot has (one GPU twice). When
  /// none is left, rethrows the first slot's error (NoDeviceError when that
  /// was no device). Returns the first live slot. Throws
  /// EnvironmentError(kopt.pool.006) when a slot's thread cannot be created
  /// (the threads started before it are joined by the destructor).
  size_t open();

  bool live(size_t i) const { return !slots_[i]->dropped; }
  size_t live_count() const;
  /// The first live slot (the initial kernel, the baseline and the final
  /// re-timing run there); size() when none is left.
  size_t primary() const;
  /// Live, and nothing started on it.
  bool idle(size_t i) const { return live(i) && !slots_[i]->busy; }
  size_t busy_count() const;
  /// Slot i is never used again; says so with `why` (one line).
  void drop(size_t i, const std::string& why);
  /// Why slot i was dropped (empty while live).
  const std::string& dropped_reason(size_t i) const { return slots_[i]->reason; }

  /// Sends `c` to the idle slot i: its thread calls Evaluator::start() then
  /// finish(). Returns at once.
  void start(size_t i, Candidate c, cuda::CompileResult compiled, std::optional<bool> time_reference);

  struct Done {
    size_t slot = 0;
    Candidate candidate;
    Result result;
    /// Non-empty when the device seems lost: its worker could not be
    /// (re)started, or did not answer a fresh hello after the candidate
    /// failed with worker_crash or timeout. `result` is still the verdict.
    std::string lost;
    /// The worker could not be started for it: the candidate never ran.
    bool never_sent = false;
    /// An exception from start() that is not the device's (a spec error, an
    /// interrupted lock wait): the caller rethrows it.
    std::exception_ptr error;
    std::chrono::steady_clock::time_point sent, finished;
  };
  /// Waits for the next result of any slot (in the order they finish).
  /// std::logic_error when nothing is started.
  Done wait_any();

 private:
  struct Slot {
    WorkerSlot config;
    std::unique_ptr<Evaluator> ev;
    std::thread thread;
    std::deque<std::function<void()>> tasks;  // guarded by mu_
    bool busy = false, dropped = false;
    std::string reason;
  };
  void post(size_t i, std::function<void()> task);
  void loop(size_t i);
  /// Starts slot i's thread (kopt.pool.006 when the OS refuses one).
  void start_thread(size_t i);
  /// Runs the hello of every slot in `which` on its thread, at once; returns
  /// each one's error (null when it answered).
  std::vector<std::exception_ptr> hellos(const std::vector<size_t>& which);
  /// With local_devices: leaves out the slots past the device count slot
  /// `first` reported.
  void leave_out_missing_devices(size_t first);

  Options opt_;
  std::vector<std::unique_ptr<Slot>> slots_;
  mutable std::mutex mu_;
  std::condition_variable task_cv_, done_cv_;
  std::deque<Done> done_;
  bool stop_ = false;
};

}  // namespace kopt::eval
