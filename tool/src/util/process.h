// Child processes: the one way the tool starts a program (the worker
// supervisor's workers, the agent's ncu). argv only, no shell; fork/exec with
// only async-signal-safe calls in the child; every fd close-on-exec but the
// three standard streams; the child optionally leads its own process group,
// which is what gets SIGKILLed, so that what it started dies with it.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace kopt::util {

/// Where one of the child's standard streams goes.
enum class Stdio {
  inherit,    // the parent's
  null,       // /dev/null
  pipe,       // (stdin, stdout) a pipe; the parent's end is Child::stdin_fd() / stdout_fd()
  to_stdout,  // (stderr) wherever stdout goes (the same pipe, say)
  fd,         // (stderr) a copy of SpawnOptions::stderr_fd
};

struct SpawnOptions {
  Stdio stdin_mode = Stdio::null;       // inherit, null or pipe
  Stdio stdout_mode = Stdio::pipe;      // inherit, null or pipe
  Stdio stderr_mode = Stdio::inherit;   // inherit, null, to_stdout or fd
  int stderr_fd = -1;                   // with Stdio::fd; the parent keeps its own fd
  /// argv[0] without a '/' is looked up in PATH (in the parent, before the
  /// fork); otherwise argv[0] is the path executed (execv).
  bool search_path = false;
  /// The child leads a new process group (pgid = its pid): Child::kill_group,
  /// reap() and wait() SIGKILL the whole group.
  bool new_process_group = true;
  /// Linux: the child gets SIGKILL when the thread that spawned it dies
  /// (PR_SET_PDEATHSIG), and does not start if the parent is already gone.
  bool die_with_parent = false;
  /// Our pipe ends are O_NONBLOCK (separate open file descriptions: the
  /// child's ends stay blocking).
  bool nonblocking = false;
  /// F_SETPIPE_SZ on our pipe ends, best effort (0: the system's default).
  int pipe_size = 0;
  /// "NAME=VALUE" entries added to the child's environment (replacing a
  /// variable of that name); the rest of the parent's environment is kept.
  std::vector<std::string> env_add;
};

/// The child could not be started. stage: setup (pipes, /dev/null), fork, or
/// exec (the program could not be executed: code is the errno of the PATH
/// search, of exec, or of the child's set-up before exec; a child that was
/// forked has been reaped).
class SpawnError : public std::runtime_error {
 public:
  enum class Stage { setup, fork, exec };
  SpawnError(Stage stage, int code, const std::string& what)
      : std::runtime_error(what), stage_(stage), code_(code) {}
  Stage stage() const { return stage_; }
  int code() const { return code_; }  // an errno value

 private:
  Stage stage_;
  int code_;
};

/// A started child and our ends of its pipes. Move-only; destroying a child
/// that was not reaped yet kills and reaps it (reap(0)).
///
/// The child is reaped only after its group was killed: while it is an
/// unreaped zombie its pid, hence the group id, cannot be reused, so
/// kill(-pid) never hits an unrelated process.
class Child {
 public:
  Child() = default;
  ~Child();
  Child(Child&& other) noexcept;
  Child& operator=(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  /// True from spawn() until reap() or wait().
  bool running() const { return pid_ > 0; }
  /// The child's pid, -1 when not running.
  pid_t pid() const { return pid_; }
  /// Our write end of its stdin, -1 unless Stdio::pipe (or closed).
  int stdin_fd() const { return in_; }
  /// Our read end of its stdout, -1 unless Stdio::pipe (or closed).
  int stdout_fd() const { return out_; }
  void close_stdin();
  void close_stdout();

  /// Sends `sig` to the child's process group (to the child alone when it
  /// does not lead one). Nothing when not running.
  void kill_group(int sig = SIGKILL) const;

  /// Closes our pipe ends (closing stdin tells a well-behaved child to exit;
  /// closing stdout makes one blocked on a full pipe fail instead of hang),
  /// waits up to `grace` for the child to exit by itself, then SIGKILLs its
  /// process group (which kills what it started even when it exited on its
  /// own) and the child itself if it had not exited, and reaps it. Returns the
  /// wait status, -1 when unknown (already reaped elsewhere: SIGCHLD
  /// ignored). Afterwards running() is false. -1 at once when not running.
  int reap(std::chrono::milliseconds grace);

  /// reap() with no limit on the wait: the child's own exit is waited for,
  /// then what is left of its group is killed.
  int wait();

 private:
  friend Child spawn(const std::vector<std::string>& argv, const SpawnOptions& options);
  int reap_after(bool forever, std::chrono::milliseconds grace);

  pid_t pid_ = -1;
  int in_ = -1, out_ = -1;
  bool group_ = false;
};

/// Starts argv[0] with arguments argv. Returns once the child has exec'd (or
/// throws SpawnError: then nothing is left running and no fd is open).
/// Only the three standard streams are inherited: every other fd is closed in
/// the child. The child starts with an empty signal mask and SIGPIPE at its
/// default action.
Child spawn(const std::vector<std::string>& argv, const SpawnOptions& options = {});

/// The result of run_process.
struct ProcResult {
  bool started = false, timed_out = false;
  bool stopped = false;  // killed because `*stop` became true (run_process)
  int exit_code = -1;  // the exit code, 128 + the signal when killed; -1 unknown
  std::string output;  // stdout and stderr together; "cannot start ..." when not started
};

/// Runs argv to completion (PATH searched for argv[0], stdin /dev/null,
/// stdout and stderr captured together, at most `max_output` bytes kept) in
/// its own process group. After `timeout_s` the group is SIGKILLed
/// (timed_out); when the program exits, what is left of its group (a worker
/// it started, say) is killed too. With `stop`: once `*stop` is true the
/// group is SIGKILLed as well (stopped; seen within 100 ms), for work whose
/// result is no longer wanted.
ProcResult run_process(const std::vector<std::string>& argv, double timeout_s,
                       size_t max_output = size_t{8} << 20, const std::atomic<bool>* stop = nullptr);

/// A program in PATH or in one of the `extra` folders (searched after PATH);
/// empty when absent.
std::string find_program(const std::string& name, const std::vector<std::string>& extra = {});

}  // namespace kopt::util
