// Runs candidates in worker processes and turns every way a worker can fail
// (hang, crash, sticky CUDA error, garbage on its pipe) into a recorded
// verdict; the process that keeps the results never initialises CUDA.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/protocol.h"
#include "util/process.h"

namespace kopt::eval {

struct SupervisorOptions {
  /// argv of the worker, e.g. {"/usr/bin/kopt", "worker"}. argv[0] is the path
  /// executed (execv, no PATH search).
  std::vector<std::string> worker_argv;
  /// "NAME=VALUE" entries added to the worker's environment (a launcher's
  /// KOPT_WORKER_DEVICE, say: eval/pool.h).
  std::vector<std::string> worker_env;
  /// Kill a worker that sends nothing (no progress, no result) for this long.
  /// Every line received restarts it: progress replies are heartbeats.
  std::chrono::milliseconds silence_timeout{30000};
  /// Kill a worker whose whole evaluation takes longer than this (0: no limit),
  /// counted from the moment the request is sent (a fresh worker's hello has
  /// its own hello_timeout).
  std::chrono::milliseconds total_timeout{0};
  /// Time allowed for the worker to answer "hello" (driver start-up).
  std::chrono::milliseconds hello_timeout{60000};
  /// When the supervisor goes away: how long a worker told to shut down may
  /// take to exit before its process group is killed (a worker under a
  /// profiler, which writes its report after the worker exits, needs longer).
  std::chrono::milliseconds shutdown_grace{1000};
  /// Where the workers' stderr goes (appended). Empty: inherit the parent's.
  std::string worker_log;
  /// Called for each progress reply (on the calling thread).
  std::function<void(const nlohmann::json&)> on_progress;
};

/// One supervisor owns at most one live worker at a time and reuses it while
/// it is healthy. Not thread-safe: call from one thread.
///
/// Each worker runs in its own process group, which is what gets SIGKILLed, so
/// that processes the worker started die with it. On Linux a worker also gets
/// SIGKILL if the thread that started it dies (PR_SET_PDEATHSIG): a tool killed
/// by a CI timeout does not leave workers holding the GPU.
///
/// Error ids thrown by hello() / evaluate() (and by the calls that start a
/// worker like it: begin_evaluate(), submit(), roundtrip()):
///   kopt.worker.001  the worker cannot be executed (exec failed, or it exited
///                    with code 127 before answering: missing shared libraries)
///   kopt.worker.002  the worker answered hello with ok:false (other than no device)
///   kopt.worker.003  no hello reply within hello_timeout
///   kopt.worker.004  the worker died or broke the protocol before answering hello
///   kopt.worker.005  the OS refused to start a worker (pipe, fork, worker log)
///   kopt.worker.077  NoDeviceError: the worker found no CUDA device
class Supervisor {
 public:
  explicit Supervisor(SupervisorOptions options);
  ~Supervisor();  // shuts the worker down (SIGKILL after a short grace period), busy or not
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  /// Starts a worker if none is running and returns its "hello" reply.
  /// Throws NoDeviceError(kopt.worker.077) when the worker reports no CUDA
  /// device, EnvironmentError(kopt.worker.0xx) when it cannot be started or
  /// does not answer.
  nlohmann::json hello();

  /// Sends one request and waits for its result. Never throws for anything the
  /// candidate does: a hang becomes Verdict::timeout (the worker is killed with
  /// SIGKILL), a dead worker Verdict::worker_crash (or runtime_error when the
  /// worker said why first), and the next call starts a fresh worker.
  /// Throws EnvironmentError only when a worker cannot be started at all.
  /// Same as begin_evaluate() then finish_evaluate().
  Result evaluate(const EvalRequest& request);

  /// The first half of evaluate(), for callers that keep the GPU busy while
  /// they do host work: sends the request (see submit()) and returns without
  /// waiting for the result. finish_evaluate() must come next; no other
  /// request can be sent before it. A request that cannot be sent even to a
  /// fresh worker is not an exception: finish_evaluate() returns its
  /// Verdict::worker_crash. The watchdog clocks start when the request is
  /// sent, here (see submit()).
  /// Throws as evaluate() does when no worker can be started (nothing is then
  /// pending), and std::logic_error when a request is pending already.
  void begin_evaluate(const EvalRequest& request);

  /// The second half of evaluate(): waits for the result of the request that
  /// begin_evaluate() sent, turning every failure into a verdict as evaluate()
  /// does. Afterwards nothing is pending, however it ended (an exception from
  /// on_progress propagates, as from evaluate()). Throws std::logic_error when
  /// begin_evaluate() did not come first.
  Result finish_evaluate();

  /// Lower level, for tests and other ops: sends `request` (adds nothing) and
  /// returns the first reply whose "reply" is "result" (progress replies are
  /// passed to on_progress). On timeout or worker death returns nullopt and
  /// sets *failure to a Result describing it. Starts a worker (and says hello)
  /// if none is running. When `request` has an "id", every reply must carry
  /// the same id, else it is a protocol error. An exception thrown by
  /// on_progress propagates, after the worker (now out of step) was killed.
  /// Same as submit() then await_reply().
  std::optional<nlohmann::json> roundtrip(const nlohmann::json& request, Result* failure);

  /// The send half of roundtrip(): starts a worker (and says hello) if none is
  /// running, sends `request` (adds nothing) and returns true; the request is
  /// then pending until await_reply(). A worker that does not take the whole
  /// request (it died, or stopped reading its stdin) ran no candidate code for
  /// it, so the request is sent once more, to a fresh worker; if that fails
  /// too, returns false with *failure set (Verdict::worker_crash) and nothing
  /// pending. The silence and total watchdog clocks start here, once the
  /// request is sent: the worker works while the caller does, and time the
  /// caller takes before await_reply() counts against both (a reply that is
  /// already waiting when a deadline has passed is still read, not taken for
  /// silence). Throws EnvironmentError / NoDeviceError when no worker can be
  /// started (see hello(); nothing is then pending), std::logic_error when a
  /// request is pending already (at most one can be).
  bool submit(const nlohmann::json& request, Result* failure);

  /// The receive half of roundtrip(): waits for the reply to the request that
  /// submit() sent, with the deadlines set there, and returns it, or nullopt
  /// with *failure set on timeout, worker death, a protocol error or an error
  /// reply (the worker is then killed and the next submit() starts a fresh
  /// one). Afterwards nothing is pending, however it ended; an exception from
  /// on_progress propagates as from roundtrip(). Throws std::logic_error when
  /// no request is pending, or when the pending one belongs to
  /// begin_evaluate() (finish_evaluate() collects that one).
  std::optional<nlohmann::json> await_reply(Result* failure);

  /// True from a submit() or begin_evaluate() until the call that collects it.
  bool pending() const { return pending_.has_value() || evaluating_; }

  /// Number of worker processes started so far (for tests and statistics).
  int workers_started() const { return workers_started_; }
  /// PID of the live worker, or -1.
  pid_t worker_pid() const { return worker_.pid(); }

 private:
  void start();
  void stop(bool force);
  bool send_line(const std::string& line);
  /// Reads one line with the deadline; nullopt on timeout / EOF (sets *eof).
  std::optional<std::string> read_line(std::chrono::steady_clock::time_point deadline, bool* eof);

  // --- helpers (supervisor.cpp) ---
  /// Makes sure a worker that has answered hello is running and idle: reaps one
  /// that died or wrote unsolicited output since its last reply.
  void ensure_worker();
  /// Closes our pipe ends, waits up to `grace` for the worker to exit on its
  /// own, then SIGKILLs its process group and reaps it. Returns the wait status
  /// (-1 if unknown). Leaves no worker running and no fd open.
  int reap(std::chrono::milliseconds grace);
  /// Polite stop: {"op":"shutdown"}, then reap(grace).
  void shutdown_worker(std::chrono::milliseconds grace);
  /// The worker log's bytes written since the current worker started (last ~2 KB,
  /// one line, printable); empty when there is no log.
  std::string log_tail() const;

  /// A request that submit() sent and await_reply() has not collected yet.
  struct Pending {
    bool has_id = false;
    nlohmann::json id;  // every reply must carry it when has_id
    std::chrono::steady_clock::time_point total_deadline;
    std::chrono::steady_clock::time_point silence_deadline;
  };

  SupervisorOptions opt_;
  std::optional<Pending> pending_;
  /// Between begin_evaluate() and finish_evaluate(); send_failure_ holds the
  /// verdict when the request could not be sent (nothing is pending then).
  bool evaluating_ = false;
  std::optional<Result> send_failure_;
  long long log_offset_ = 0;  // size of worker_log when the current worker started
  util::Child worker_;    // the live worker, its stdin (write end) and stdout (read end)
  std::string buffer_;    // bytes read past the last newline
  int workers_started_ = 0;
  std::optional<nlohmann::json> hello_;
};

}  // namespace kopt::eval
