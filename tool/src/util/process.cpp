// Child processes (see process.h).
//
// Only POSIX primitives: pipe2/fork/execv, poll with deadlines taken from
// steady_clock, waitid/waitpid; every syscall loop handles EINTR. Everything
// the child needs is prepared before the fork: the child (of a possibly
// multi-threaded parent) makes only async-signal-safe calls.
#include "util/process.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>
#include <system_error>
#include <thread>

namespace kopt::util {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string errno_text(int e) { return std::error_code(e, std::generic_category()).message(); }

void close_fd(int& fd) {
  if (fd >= 0) {
    // Not retried on EINTR: on Linux the fd is released even then.
    ::close(fd);
    fd = -1;
  }
}

Clock::time_point after(milliseconds d) {
  // Guard against overflow when a huge timeout is configured.
  auto now = Clock::now();
  if (d >= std::chrono::duration_cast<milliseconds>(Clock::time_point::max() - now)) return Clock::time_point::max();
  return now + d;
}

/// What the child does between fork and exec, prepared by the parent.
struct ChildPlan {
  int fd[3] = {-1, -1, -1};  // become the child's 0, 1, 2 (-1: inherited)
  int status_fd = -1;        // write end of the status pipe (close-on-exec)
  const char* path = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;  // nullptr: the parent's environment
  pid_t parent = -1;
  bool new_group = true, die_with_parent = false;
};

/// Child side: reports errno on the status pipe (closed by a successful
/// exec), never on stdout, where the parent could mistake it for output.
[[noreturn]] void child_fail(int status_fd, int e) {
  ssize_t ignored = ::write(status_fd, &e, sizeof e);
  (void)ignored;
  _exit(127);
}

/// The child side of spawn(): only async-signal-safe calls (the parent may be
/// multi-threaded, and only the forking thread exists in the child).
[[noreturn]] void exec_child(const ChildPlan& p) {
  const int status_fd = p.status_fd;
  auto fail = [status_fd](int e) { child_fail(status_fd, e); };
  // Own process group: the parent kills the group, grandchildren included.
  if (p.new_group) setpgid(0, 0);
#ifdef __linux__
  if (p.die_with_parent) {
    // Die with the parent's thread; if it is already gone, stop now.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != p.parent) _exit(127);
  }
#endif
  // The signal mask and ignored dispositions survive exec: give the child a
  // clean state (a child whose parent vanished should die of SIGPIPE).
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGPIPE, &dfl, nullptr);
  // Move our fds above 2 first: if the parent ran with fd 0/1/2 closed, a
  // pipe end may itself be 0, 1 or 2 and one dup2 could clobber another.
  int moved[3] = {-1, -1, -1};
  for (int i = 0; i < 3; ++i)
    if (p.fd[i] >= 0 && (moved[i] = fcntl(p.fd[i], F_DUPFD_CLOEXEC, 3)) < 0) fail(errno);
  // dup2 clears FD_CLOEXEC on the targets; the F_DUPFD_CLOEXEC copies and
  // every pipe end (pipe2(O_CLOEXEC)) close at exec.
  for (int i = 0; i < 3; ++i)
    if (moved[i] >= 0 && dup2(moved[i], i) < 0) fail(errno);
  // Our pipes are O_NONBLOCK only on the parent's ends (separate open file
  // descriptions), so the child sees ordinary blocking streams.
#if defined(SYS_close_range)
  // Close fds the rest of the tool may have opened without O_CLOEXEC
  // (std::fstream does): a child must not hold them. Keep status_fd.
  if (status_fd > 3) syscall(SYS_close_range, 3u, static_cast<unsigned>(status_fd - 1), 0u);
  syscall(SYS_close_range, static_cast<unsigned>(status_fd + 1), ~0u, 0u);
#endif
  if (p.envp)
    execve(p.path, p.argv, p.envp);
  else
    execv(p.path, p.argv);
  child_fail(status_fd, errno);
}

/// argv[0] looked up as execvp would (PATH, else the system's default path):
/// the first executable regular file; ENOENT or EACCES when there is none.
std::string search_path(const std::string& name, int* error) {
  *error = 0;
  if (name.find('/') != std::string::npos) return name;
  const char* env = std::getenv("PATH");
  const std::string path = env ? env : "/bin:/usr/bin";
  bool denied = false;
  size_t from = 0;
  for (;;) {
    const size_t colon = path.find(':', from);
    std::string dir = path.substr(from, colon == std::string::npos ? std::string::npos : colon - from);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    struct stat st;
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
      denied = true;
    }
    if (colon == std::string::npos) break;
    from = colon + 1;
  }
  *error = denied ? EACCES : ENOENT;
  return "";
}

}  // namespace

// ---------------------------------------------------------------------------
// Child

Child::~Child() {
  if (running()) reap(milliseconds(0));
  close_stdin();
  close_stdout();
}

Child::Child(Child&& other) noexcept
    : pid_(other.pid_), in_(other.in_), out_(other.out_), group_(other.group_) {
  other.pid_ = -1;
  other.in_ = other.out_ = -1;
}

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    if (running()) reap(milliseconds(0));
    close_stdin();
    close_stdout();
    pid_ = other.pid_;
    in_ = other.in_;
    out_ = other.out_;
    group_ = other.group_;
    other.pid_ = -1;
    other.in_ = other.out_ = -1;
  }
  return *this;
}

void Child::close_stdin() { close_fd(in_); }
void Child::close_stdout() { close_fd(out_); }

void Child::kill_group(int sig) const {
  if (!running()) return;
  ::kill(group_ ? -pid_ : pid_, sig);
}

int Child::reap(milliseconds grace) { return reap_after(false, grace); }

int Child::wait() { return reap_after(true, milliseconds(0)); }

int Child::reap_after(bool forever, milliseconds grace) {
  close_stdin();
  close_stdout();
  if (!running()) return -1;
  const pid_t pid = pid_;
  pid_ = -1;

  // Wait for a natural exit without reaping (WNOWAIT), so the pid stays
  // reserved while we kill the group below.
  bool exited = false;
  if (forever) {
    for (;;) {
      siginfo_t info;
      std::memset(&info, 0, sizeof info);
      const int r = waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT);
      if (r == 0) {
        exited = true;
        break;
      }
      if (errno != EINTR) break;  // ECHILD: not our child any more (SIGCHLD ignored by the host)
    }
  } else {
    const auto deadline = after(grace);
    auto step = milliseconds(1);
    for (;;) {
      siginfo_t info;
      std::memset(&info, 0, sizeof info);
      const int r = waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
      if (r == 0 && info.si_pid == pid) {
        exited = true;
        break;
      }
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) break;  // ECHILD: not our child any more (SIGCHLD ignored by the host)
      const auto now = Clock::now();
      if (now >= deadline) break;
      std::this_thread::sleep_for(std::min<Clock::duration>(step, deadline - now));
      step = std::min(step * 2, milliseconds(20));
    }
  }
  // Processes the child started die with it, even if the child exited on its
  // own. If the child's setpgid never happened the group does not exist: kill
  // the child itself too (safe: it is not reaped yet).
  if (group_) ::kill(-pid, SIGKILL);
  if (!exited) ::kill(pid, SIGKILL);
  int status = 0;
  pid_t r;
  do r = ::waitpid(pid, &status, 0);
  while (r < 0 && errno == EINTR);
  return r == pid ? status : -1;
}

// ---------------------------------------------------------------------------
// spawn

Child spawn(const std::vector<std::string>& argv, const SpawnOptions& o) {
  if (argv.empty()) throw SpawnError(SpawnError::Stage::exec, EINVAL, "cannot start a program: empty argv");
  std::string path = argv[0];
  if (o.search_path) {
    int e = 0;
    path = search_path(argv[0], &e);
    if (path.empty()) throw SpawnError(SpawnError::Stage::exec, e, "cannot start " + argv[0] + ": " + errno_text(e));
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // The environment with env_add, built before the fork (the child may only
  // make async-signal-safe calls).
  std::vector<std::string> env_strings;
  std::vector<char*> envp;
  if (!o.env_add.empty()) {
    auto name_of = [](const std::string& e) { return e.substr(0, e.find('=')); };
    std::set<std::string> replaced;
    for (const std::string& e : o.env_add) replaced.insert(name_of(e));
    for (char** e = environ; e && *e; ++e)
      if (!replaced.count(name_of(*e))) env_strings.emplace_back(*e);
    env_strings.insert(env_strings.end(), o.env_add.begin(), o.env_add.end());
    for (std::string& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
  }

  int in[2] = {-1, -1}, out[2] = {-1, -1}, status[2] = {-1, -1}, devnull = -1;
  auto close_all = [&] {
    for (int* fd : {&in[0], &in[1], &out[0], &out[1], &status[0], &status[1], &devnull}) close_fd(*fd);
  };
  auto setup_error = [&](const char* what) {
    const int e = errno;
    close_all();
    return SpawnError(SpawnError::Stage::setup, e, std::string(what) + ": " + errno_text(e));
  };
  const bool want_null = o.stdin_mode == Stdio::null || o.stdout_mode == Stdio::null || o.stderr_mode == Stdio::null;
  if (want_null && (devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC)) < 0) throw setup_error("cannot open /dev/null");
  if ((o.stdin_mode == Stdio::pipe && pipe2(in, O_CLOEXEC) != 0) ||
      (o.stdout_mode == Stdio::pipe && pipe2(out, O_CLOEXEC) != 0) || pipe2(status, O_CLOEXEC) != 0)
    throw setup_error("cannot create pipes");
#ifdef F_SETPIPE_SZ
  // Bigger pipes: fewer wake-ups for multi-MB messages (best effort).
  if (o.pipe_size > 0) {
    if (in[1] >= 0) fcntl(in[1], F_SETPIPE_SZ, o.pipe_size);
    if (out[0] >= 0) fcntl(out[0], F_SETPIPE_SZ, o.pipe_size);
  }
#endif

  ChildPlan plan;
  auto stream = [&](Stdio mode, int pipe_end) { return mode == Stdio::pipe ? pipe_end : mode == Stdio::null ? devnull : -1; };
  plan.fd[0] = stream(o.stdin_mode, in[0]);
  plan.fd[1] = stream(o.stdout_mode, out[1]);
  plan.fd[2] = o.stderr_mode == Stdio::to_stdout ? (plan.fd[1] >= 0 ? plan.fd[1] : 1)
               : o.stderr_mode == Stdio::fd      ? o.stderr_fd
               : o.stderr_mode == Stdio::null    ? devnull
                                                 : -1;
  plan.status_fd = status[1];
  plan.path = path.c_str();
  plan.argv = args.data();
  plan.envp = envp.empty() ? nullptr : envp.data();
  plan.parent = getpid();
  plan.new_group = o.new_process_group;
  plan.die_with_parent = o.die_with_parent;

  const pid_t pid = fork();
  if (pid == 0) exec_child(plan);
  if (pid < 0) {
    const int e = errno;
    close_all();
    throw SpawnError(SpawnError::Stage::fork, e, "cannot fork: " + errno_text(e));
  }
  // Also set the group from here: whichever of parent and child runs first,
  // the group exists before we could ever need to kill it (EACCES once the
  // child has exec'd is harmless: it did it itself by then).
  if (o.new_process_group) setpgid(pid, pid);
  close_fd(in[0]);
  close_fd(out[1]);
  close_fd(status[1]);
  close_fd(devnull);
  Child c;
  c.pid_ = pid;
  c.in_ = in[1];
  c.out_ = out[0];
  c.group_ = o.new_process_group;
  if (o.nonblocking) {
    for (int fd : {c.in_, c.out_})
      if (fd >= 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }

  // The status pipe reads EOF when exec succeeded (its write end is
  // close-on-exec) or an errno when it failed. This blocks only for the
  // fork-to-exec window of the child.
  int child_errno = 0;
  ssize_t n;
  do n = ::read(status[0], &child_errno, sizeof child_errno);
  while (n < 0 && errno == EINTR);
  close_fd(status[0]);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    c.reap(milliseconds(1000));  // it is exiting with 127 already
    throw SpawnError(SpawnError::Stage::exec, child_errno,
                     "cannot execute '" + argv[0] + "': " + errno_text(child_errno));
  }
  return c;
}

// ---------------------------------------------------------------------------
// Run to completion

ProcResult run_process(const std::vector<std::string>& argv, double timeout_s, size_t max_output,
                       const std::atomic<bool>* stop) {
  ProcResult res;
  SpawnOptions so;
  so.stdin_mode = Stdio::null;
  so.stdout_mode = Stdio::pipe;
  so.stderr_mode = Stdio::to_stdout;
  so.search_path = true;
  so.new_process_group = true;
  Child child;
  try {
    child = spawn(argv, so);
  } catch (const SpawnError& e) {
    res.output = "cannot start " + (argv.empty() ? std::string() : argv[0]) + ": " + std::strerror(e.code());
    return res;
  }
  res.started = true;
  const int fd = child.stdout_fd();
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[65536];
  for (;;) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      res.timed_out = true;
      child.kill_group(SIGKILL);
      break;
    }
    if (stop && stop->load()) {
      res.stopped = true;
      child.kill_group(SIGKILL);
      break;
    }
    pollfd p{fd, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, stop ? 100 : 500)));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    if (res.output.size() < max_output) res.output.append(buf, static_cast<size_t>(got));
  }
  // Waits for the program itself, then kills the leftovers of its group (e.g. a worker).
  const int status = child.wait();
  if (status == -1)
    res.exit_code = -1;
  else
    res.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return res;
}

std::string find_program(const std::string& name, const std::vector<std::string>& extra) {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    for (std::string d; std::getline(ss, d, ':');)
      if (!d.empty()) dirs.push_back(d);
  }
  dirs.insert(dirs.end(), extra.begin(), extra.end());
  for (const auto& d : dirs) {
    const std::filesystem::path p = std::filesystem::path(d) / name;
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

}  // namespace kopt::util
