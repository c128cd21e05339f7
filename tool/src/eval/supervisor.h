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
#include "eval/result.h"

namespace kopt::eval {

struct SupervisorOptions {
  /// argv of the worker, e.g. {"/usr/bin/kopt", "worker"}. argv[0] is the path
  /// executed (execv, no PATH search).
  std::vector<std::string> worker_argv;
  /// Kill a worker that sends nothing (no progress, no result) for this long.
  /// Every line received restarts it: progress replies are heartbeats.
  std::chrono::milliseconds silence_timeout{30000};
  /// Kill a worker whose whole evaluation takes longer than this (0: no limit),
  /// counted from the moment the request is sent (a fresh worker's hello has
  /// its own hello_timeout).
  std::chrono::milliseconds total_timeout{0};
  /// Time allowed for the worker to answer "hello" (driver start-up).
  std::chrono::milliseconds hello_timeout{60000};
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
/// Error ids thrown by hello() / evaluate():
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
  ~Supervisor();  // shuts the worker down (SIGKILL after a short grace period)
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
  Result evaluate(const EvalRequest& request);

  /// Lower level, for tests and other ops: sends `request` (adds nothing) and
  /// returns the first reply whose "reply" is "result" (progress replies are
  /// passed to on_progress). On timeout or worker death returns nullopt and
  /// sets *failure to a Result describing it. Starts a worker (and says hello)
  /// if none is running. When `request` has an "id", every reply must carry
  /// the same id, else it is a protocol error. An exception thrown by
  /// on_progress propagates, after the worker (now out of step) was killed.
  std::optional<nlohmann::json> roundtrip(const nlohmann::json& request, Result* failure);

  /// Number of worker processes started so far (for tests and statistics).
  int workers_started() const { return workers_started_; }
  /// PID of the live worker, or -1.
  pid_t worker_pid() const { return pid_; }

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
  /// (-1 if unknown). Leaves pid_ == -1 and no fd open.
  int reap(std::chrono::milliseconds grace);
  /// Polite stop: {"op":"shutdown"}, then reap(grace).
  void shutdown_worker(std::chrono::milliseconds grace);
  /// The worker log's bytes written since the current worker started (last ~2 KB,
  /// one line, printable); empty when there is no log.
  std::string log_tail() const;

  SupervisorOptions opt_;
  long long log_offset_ = 0;  // size of worker_log when the current worker started
  pid_t pid_ = -1;
  int to_worker_ = -1;    // write end of the worker's stdin
  int from_worker_ = -1;  // read end of the worker's stdout
  std::string buffer_;    // bytes read past the last newline
  int workers_started_ = 0;
  std::optional<nlohmann::json> hello_;
};

}  // namespace kopt::eval
