// The worker supervisor. Everything a candidate can do to its worker (hang,
// crash, fault the CUDA context, scribble on stdout) must end up as a Result,
// never as an exception, a hang, a zombie or a leaked fd in this process.
//
// Design notes:
// - Workers are started with util::spawn (util/process.h: fork/execv, pipes,
//   process group, PR_SET_PDEATHSIG, the status pipe that reports exec
//   failures) and reaped with util::Child::reap. Otherwise only POSIX
//   primitives: poll with deadlines taken from steady_clock (never
//   sleep-and-hope). Every syscall loop handles EINTR.
// - Our pipe ends are non-blocking, so neither a read nor a write can block
//   past a deadline (a worker that stops reading its stdin cannot wedge us).
// - SIGPIPE: writing to a dead worker raises SIGPIPE, whose default action
//   would kill the tool. Instead of ignoring it process-wide (which would
//   change how the whole CLI behaves, e.g. `kopt ... | head`), it is blocked in
//   this thread around our writes and a SIGPIPE raised by them is consumed
//   before unblocking; the write itself then fails with EPIPE.
// - Killing: the worker is made leader of its own process group and the group
//   is SIGKILLed. The leader is reaped only after the group was killed (see
//   util::Child::reap), so kill(-pid) can never hit an unrelated process.
#include "eval/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include "util/error.h"
#include "util/json.h"
#include "util/process.h"

namespace kopt::eval {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

/// Longest reply line accepted. Results with per-case data are a few KB, but
/// lines of many MB must work; beyond this the worker is considered broken
/// (it would otherwise be able to exhaust our memory).
constexpr size_t kMaxLine = size_t{1} << 30;
/// How much of the worker log a crash report quotes.
constexpr long long kLogTailBytes = 2048;
/// How much of a bad reply a protocol error quotes.
constexpr size_t kQuoteBytes = 200;

std::string errno_text(int e) { return std::error_code(e, std::generic_category()).message(); }

void close_fd(int& fd) {
  if (fd >= 0) {
    // Not retried on EINTR: on Linux the fd is released even then.
    ::close(fd);
    fd = -1;
  }
}

/// Milliseconds until `deadline` for poll(), rounded up (poll must not wake
/// before the deadline and spin), clamped to int.
int poll_ms(Clock::time_point deadline) {
  auto now = Clock::now();
  if (deadline <= now) return 0;
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(deadline - now).count();
  long long ms = (us + 999) / 1000;
  return static_cast<int>(std::min<long long>(ms, INT_MAX));
}

Clock::time_point after(milliseconds d) {
  // Guard against overflow when a huge timeout is configured.
  auto now = Clock::now();
  if (d >= std::chrono::duration_cast<milliseconds>(Clock::time_point::max() - now))
    return Clock::time_point::max();
  return now + d;
}

const char* signal_abbrev(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGABRT: return "SIGABRT";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    case SIGQUIT: return "SIGQUIT";
    case SIGPIPE: return "SIGPIPE";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGALRM: return "SIGALRM";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    default: return nullptr;
  }
}

/// "exited with code 3", "killed by signal SIGSEGV (Segmentation fault)".
std::string describe_status(int status) {
  if (status == -1) return "exited (status unknown: already reaped elsewhere)";
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* abbrev = signal_abbrev(sig);
    std::string s = "killed by signal ";
    s += abbrev ? abbrev : std::to_string(sig);
    const char* text = strsignal(sig);
    if (text) s += std::string(" (") + text + ")";
#ifdef WCOREDUMP
    if (WCOREDUMP(status)) s += ", core dumped";
#endif
    return s;
  }
  return "ended with wait status " + std::to_string(status);
}

/// Length of the valid UTF-8 sequence at s[i], 0 if none (overlong forms,
/// surrogates and code points past U+10FFFF are invalid, as in RFC 3629).
size_t utf8_len(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  unsigned char c = b(0);
  size_t len;
  unsigned char lo = 0x80, hi = 0xbf;  // allowed range of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  if (b(1) < lo || b(1) > hi) return 0;
  for (size_t k = 2; k < len; ++k)
    if ((b(k) & 0xc0) != 0x80) return 0;
  return len;
}

/// Makes arbitrary bytes (a worker's garbage, its log) safe for a one-line
/// `detail`: control characters and invalid UTF-8 become \xNN escapes, so the
/// result always serialises, even with a strict json::dump().
std::string printable(std::string_view s, size_t max_bytes) {
  std::string out;
  size_t i = 0;
  while (i < s.size() && out.size() < max_bytes) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      ++i;
    } else if (c == '\t') {
      out += ' ';
      ++i;
    } else if (size_t n = c >= 0x80 ? utf8_len(s, i) : 0; n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
      ++i;
    }
  }
  if (i < s.size()) out += "...";
  return out;
}

std::string quote(std::string_view s) { return "'" + printable(s, kQuoteBytes) + "'"; }

/// Blocks SIGPIPE in the calling thread for its lifetime; a SIGPIPE raised
/// meanwhile by our own writes (it is directed at this thread) is consumed
/// before the old mask is restored, so it is never delivered.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    was_pending_ = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  ~SigpipeBlock() {
    int saved = errno;
    sigset_t pending;
    sigemptyset(&pending);
    if (!was_pending_ && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
      struct timespec zero {0, 0};
      while (sigtimedwait(&set_, nullptr, &zero) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    errno = saved;
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t set_, old_;
  bool was_pending_ = false;
};

/// Writes all of [p, p+n) to the non-blocking fd. Fails (false) on EPIPE or
/// another error, or when the reader accepts nothing for `stall` (a deadline
/// that each successful write pushes back).
bool write_all(int fd, const char* p, size_t n, milliseconds stall) {
  auto deadline = after(stall);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w > 0) {
      p += w;
      n -= static_cast<size_t>(w);
      deadline = after(stall);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (Clock::now() >= deadline) return false;
      pollfd pfd{fd, POLLOUT, 0};
      int r = ::poll(&pfd, 1, poll_ms(deadline));
      if (r < 0 && errno != EINTR) return false;
      continue;  // writable, or POLLERR (the next write reports EPIPE), or timeout
    }
    return false;  // EPIPE (worker gone) or another error
  }
  return true;
}

Result timeout_result(const std::string& why, const std::string& last_case,
                      const std::string& last_phase) {
  Result r;
  r.verdict = Verdict::timeout;
  r.detail = why;
  if (!last_case.empty()) {
    r.failed_case = last_case;
    r.detail += " (last progress: case '" + printable(last_case, 100) + "'" +
                (last_phase.empty() ? "" : ", phase '" + printable(last_phase, 40) + "'") + ")";
  }
  return r;
}

Result crash_result(std::string detail) {
  Result r;
  r.verdict = Verdict::worker_crash;
  r.detail = std::move(detail);
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------

Supervisor::Supervisor(SupervisorOptions options) : opt_(std::move(options)) {}

Supervisor::~Supervisor() {
  try {
    shutdown_worker(opt_.shutdown_grace);
  } catch (...) {
    // A destructor never throws; reap() itself does not either in practice.
  }
}

void Supervisor::start() {
  if (worker_.running()) reap(milliseconds(0));
  if (opt_.worker_argv.empty())
    throw EnvironmentError("kopt.worker.001", "no worker command configured");
  const std::string& exe = opt_.worker_argv[0];

  int log_fd = -1;
  log_offset_ = 0;
  if (!opt_.worker_log.empty()) {
    log_fd = ::open(opt_.worker_log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (log_fd < 0)
      throw EnvironmentError("kopt.worker.005", "cannot open the worker log '" + opt_.worker_log +
                                                    "': " + errno_text(errno));
    struct stat st;
    if (fstat(log_fd, &st) == 0) log_offset_ = static_cast<long long>(st.st_size);
  }

  // Own process group (the group is what gets killed), death with the
  // thread that started it, non-blocking pipe ends of 1 MB (fewer wake-ups
  // for multi-MB requests and results), stderr to the worker log.
  util::SpawnOptions so;
  so.stdin_mode = util::Stdio::pipe;
  so.stdout_mode = util::Stdio::pipe;
  so.stderr_mode = log_fd >= 0 ? util::Stdio::fd : util::Stdio::inherit;
  so.stderr_fd = log_fd;
  so.search_path = false;  // execv: argv[0] is the path
  so.new_process_group = true;
  so.die_with_parent = true;
  so.nonblocking = true;
  so.pipe_size = 1 << 20;
  so.env_add = opt_.worker_env;
  util::Child child;
  try {
    child = util::spawn(opt_.worker_argv, so);
  } catch (const util::SpawnError& e) {
    close_fd(log_fd);
    switch (e.stage()) {
      case util::SpawnError::Stage::setup:
        throw EnvironmentError("kopt.worker.005", "cannot create pipes for a worker: " + errno_text(e.code()));
      case util::SpawnError::Stage::fork:
        throw EnvironmentError("kopt.worker.005", "cannot fork a worker: " + errno_text(e.code()));
      case util::SpawnError::Stage::exec:
        break;
    }
    throw EnvironmentError("kopt.worker.001", "cannot execute the worker '" + exe + "': " + errno_text(e.code()));
  }
  close_fd(log_fd);
  worker_ = std::move(child);
  buffer_.clear();
  hello_.reset();
  ++workers_started_;
}

int Supervisor::reap(milliseconds grace) {
  if (!worker_.running()) return -1;
  buffer_.clear();
  hello_.reset();
  // Closes our pipe ends, waits up to `grace`, SIGKILLs the group, reaps.
  return worker_.reap(grace);
}

void Supervisor::shutdown_worker(milliseconds grace) {
  if (!worker_.running()) return;
  if (worker_.stdin_fd() >= 0) {
    // One non-blocking attempt: the pipe is empty while the worker is idle.
    SigpipeBlock block;
    static const char kShutdown[] = "{\"op\":\"shutdown\"}\n";
    ssize_t w;
    do w = ::write(worker_.stdin_fd(), kShutdown, sizeof kShutdown - 1);
    while (w < 0 && errno == EINTR);
  }
  reap(grace);
}

void Supervisor::stop(bool force) {
  if (force)
    reap(milliseconds(0));
  else
    shutdown_worker(milliseconds(2000));
}

bool Supervisor::send_line(const std::string& line) {
  const int fd = worker_.stdin_fd();
  if (fd < 0) return false;
  SigpipeBlock block;
  // Two writes rather than line + '\n': requests can be many MB.
  return write_all(fd, line.data(), line.size(), opt_.silence_timeout) &&
         write_all(fd, "\n", 1, opt_.silence_timeout);
}

std::optional<std::string> Supervisor::read_line(Clock::time_point deadline, bool* eof) {
  *eof = false;
  size_t scan_from = 0;  // bytes of buffer_ already known to hold no '\n'
  for (;;) {
    size_t nl = buffer_.find('\n', scan_from);
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    scan_from = buffer_.size();
    if (buffer_.size() > kMaxLine) {
      // Hand the oversized fragment to the caller, which reports it.
      std::string line;
      line.swap(buffer_);
      return line;
    }
    if (worker_.stdout_fd() < 0) {
      *eof = true;
      return std::nullopt;
    }
    // Polled even once the deadline has passed (poll_ms is 0 then): a reply
    // that is already waiting is read, not taken for silence. That matters
    // when the caller of submit() awaits the reply late.
    pollfd pfd{worker_.stdout_fd(), POLLIN, 0};
    int r = ::poll(&pfd, 1, poll_ms(deadline));
    if (r < 0) {
      if (errno == EINTR) continue;
      *eof = true;
      return std::nullopt;
    }
    if (r == 0) {
      if (Clock::now() >= deadline) return std::nullopt;
      continue;  // woken early (rounding): poll again for the rest
    }
    char chunk[1 << 16];
    ssize_t n = ::read(worker_.stdout_fd(), chunk, sizeof chunk);
    if (n > 0) {
      buffer_.append(chunk, static_cast<size_t>(n));
    } else if (n == 0) {
      *eof = true;
      return std::nullopt;
    } else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
      *eof = true;
      return std::nullopt;
    }
  }
}

std::string Supervisor::log_tail() const {
  if (opt_.worker_log.empty()) return {};
  int fd = ::open(opt_.worker_log.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string text;
  struct stat st;
  bool cut = false;
  if (fstat(fd, &st) == 0 && st.st_size > log_offset_) {
    long long from = std::max<long long>(log_offset_, st.st_size - kLogTailBytes);
    cut = from > log_offset_;
    text.resize(static_cast<size_t>(st.st_size - from));
    size_t got = 0;
    while (got < text.size()) {
      ssize_t n = ::pread(fd, &text[got], text.size() - got, static_cast<off_t>(from + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    text.resize(got);
  }
  ::close(fd);
  if (cut) {  // start at a line boundary when there is one
    size_t nl = text.find('\n');
    if (nl != std::string::npos && nl + 1 < text.size()) text.erase(0, nl + 1);
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.pop_back();
  if (text.empty()) return {};
  // One line: the lines are joined with " | ".
  std::string joined;
  for (char c : text) {
    if (c == '\n')
      joined += " | ";
    else if (c != '\r')
      joined += c;
  }
  return (cut ? "..." : "") + printable(joined, 4 * kLogTailBytes);
}

// ---------------------------------------------------------------------------

json Supervisor::hello() {
  if (worker_.running() && hello_) return *hello_;
  if (!worker_.running()) start();
  const std::string exe = opt_.worker_argv.empty() ? "" : opt_.worker_argv[0];
  auto with_log = [this](std::string msg) {
    std::string tail = log_tail();
    if (!tail.empty()) msg += "; worker log: " + tail;
    return msg;
  };

  // The worker died before answering: 127 is what exec failures in scripts
  // and a dynamic loader that cannot find a library (libcuda.so.1) exit with.
  auto died = [&]() -> EnvironmentError {
    int status = reap(milliseconds(1000));
    if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 127)
      return EnvironmentError("kopt.worker.001",
                              with_log("worker '" + exe + "' exited with code 127 before "
                                       "answering hello: it could not be executed or its shared "
                                       "libraries could not be loaded"));
    return EnvironmentError("kopt.worker.004", with_log("worker '" + exe + "' " +
                                                        describe_status(status) +
                                                        " before answering hello"));
  };
  // A failed send means the worker is gone already (EPIPE) or not reading.
  if (!send_line("{\"op\":\"hello\"}")) throw died();
  bool eof = false;
  auto line = read_line(after(opt_.hello_timeout), &eof);
  if (!line) {
    if (eof) throw died();
    reap(milliseconds(0));
    throw EnvironmentError("kopt.worker.003",
                           with_log("worker '" + exe + "' did not answer hello within " +
                                    std::to_string(opt_.hello_timeout.count()) + " ms"));
  }
  json reply = json::parse(*line, nullptr, /*allow_exceptions=*/false);
  if (reply.is_discarded() || !reply.is_object() || reply.value("reply", json()) != "hello" ||
      !reply.contains("ok") || !reply["ok"].is_boolean()) {
    reap(milliseconds(0));
    throw EnvironmentError("kopt.worker.004", "protocol error: worker '" + exe +
                                                  "' answered hello with " + quote(*line));
  }
  if (!reply["ok"].get<bool>()) {
    std::string err = reply.contains("error") && reply["error"].is_string()
                          ? reply["error"].get<std::string>()
                          : "(no error message)";
    shutdown_worker(milliseconds(1000));
    std::string lower = err;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower.find("no cuda device") != std::string::npos) {
      // The worker's message usually carries its own id ("[kopt.cuda.077] ..."):
      // keep that one alone, so that the message has one id.
      std::string id = "kopt.worker.077";
      if (err.rfind("[kopt.", 0) == 0 && err.find("] ") != std::string::npos) {
        id = err.substr(1, err.find("] ") - 1);
        err = err.substr(err.find("] ") + 2);
      }
      throw NoDeviceError(id, printable(err, 1000));
    }
    throw EnvironmentError("kopt.worker.002",
                           "worker '" + exe + "' failed to start: " + printable(err, 1000));
  }
  hello_ = reply;
  return reply;
}

void Supervisor::ensure_worker() {
  if (worker_.running()) {
    // An idle worker must have nothing to say: output or EOF between requests
    // means it died or wrote something unsolicited. Replace it rather than
    // blame the next candidate for it.
    pollfd pfd{worker_.stdout_fd(), POLLIN, 0};
    int r;
    do r = ::poll(&pfd, 1, 0);
    while (r < 0 && errno == EINTR);
    if (!buffer_.empty() || r != 0) reap(milliseconds(0));
  }
  if (!worker_.running() || !hello_) hello();
}

std::optional<json> Supervisor::roundtrip(const json& request, Result* failure) {
  Result scratch;
  if (!failure) failure = &scratch;
  if (!submit(request, failure)) return std::nullopt;
  return await_reply(failure);
}

bool Supervisor::submit(const json& request, Result* failure) {
  if (pending_ || evaluating_)
    throw std::logic_error(
        "Supervisor::submit: a request is pending already; collect its reply with await_reply() "
        "(or finish_evaluate()) before sending another");
  Result scratch;
  if (!failure) failure = &scratch;
  ensure_worker();
  const std::string line = dump_json(request);
  if (!send_line(line)) {
    // The worker took nothing (or not all) of the request, so no candidate
    // code ran for it: retry once on a fresh worker.
    reap(milliseconds(0));
    ensure_worker();
    if (!send_line(line)) {
      int status = reap(milliseconds(0));
      *failure = crash_result("could not send the request to a fresh worker (" +
                              describe_status(status) + ")");
      return false;
    }
  }

  // The watchdogs count from the send: the worker is at work from now on,
  // whatever the caller does before it awaits the reply.
  Pending p;
  p.has_id = request.is_object() && request.contains("id");
  p.id = p.has_id ? request["id"] : json();
  p.total_deadline = opt_.total_timeout.count() > 0 ? after(opt_.total_timeout)
                                                     : Clock::time_point::max();
  p.silence_deadline = after(opt_.silence_timeout);
  pending_ = std::move(p);
  return true;
}

std::optional<json> Supervisor::await_reply(Result* failure) {
  if (evaluating_)
    throw std::logic_error(
        "Supervisor::await_reply: the pending request was sent by begin_evaluate(); collect it "
        "with finish_evaluate()");
  if (!pending_)
    throw std::logic_error("Supervisor::await_reply: no request is pending (call submit() first)");
  // However this call ends (reply, failure or exception), the request is over.
  const Pending p = std::move(*pending_);
  pending_.reset();
  Result scratch;
  if (!failure) failure = &scratch;

  const bool has_id = p.has_id;
  const json& want_id = p.id;
  const auto total_deadline = p.total_deadline;
  auto silence_deadline = p.silence_deadline;
  std::string last_case, last_phase;

  auto protocol_error = [&](const std::string& what) {
    reap(milliseconds(0));
    Result r = crash_result("protocol error: " + what);
    r.failed_case = last_case;
    *failure = r;
    return std::nullopt;
  };

  for (;;) {
    bool eof = false;
    const bool total_first = total_deadline <= silence_deadline;
    auto got = read_line(std::min(silence_deadline, total_deadline), &eof);
    if (!got) {
      if (!eof) {
        reap(milliseconds(0));  // SIGKILL the group now: it may be spinning on the GPU
        *failure = total_first
                       ? timeout_result("evaluation took longer than the total timeout of " +
                                            std::to_string(opt_.total_timeout.count()) +
                                            " ms; worker killed",
                                        last_case, last_phase)
                       : timeout_result("no reply from the worker for " +
                                            std::to_string(opt_.silence_timeout.count()) +
                                            " ms (launch watchdog); worker killed",
                                        last_case, last_phase);
        return std::nullopt;
      }
      // EOF: the worker is dying. Give it a moment to finish, so the status
      // says how it died rather than "killed by SIGKILL" from us.
      std::string partial = buffer_;
      int status = reap(milliseconds(1000));
      std::string detail = "worker died without a result: " + describe_status(status);
      if (!last_case.empty())
        detail += ", during case '" + printable(last_case, 100) + "'" +
                  (last_phase.empty() ? "" : " (phase '" + printable(last_phase, 40) + "')");
      if (!partial.empty()) detail += "; unterminated output " + quote(partial);
      std::string tail = log_tail();
      if (!tail.empty()) detail += "; worker log: " + tail;
      *failure = crash_result(detail);
      failure->failed_case = last_case;
      return std::nullopt;
    }
    // Any line proves the worker is alive: the silence watchdog restarts.
    silence_deadline = after(opt_.silence_timeout);

    if (got->size() > kMaxLine)
      return protocol_error("reply line longer than " + std::to_string(kMaxLine) + " bytes");
    json reply = json::parse(*got, nullptr, /*allow_exceptions=*/false);
    if (reply.is_discarded()) return protocol_error("reply is not JSON: " + quote(*got));
    if (!reply.is_object() || !reply.contains("reply") || !reply["reply"].is_string())
      return protocol_error("reply without a \"reply\" field: " + quote(*got));
    const std::string kind = reply["reply"].get<std::string>();
    if (kind != "progress" && kind != "result" && kind != "error")
      return protocol_error("unknown reply " + quote(*got));
    if (kind == "error") {
      // The worker could not make sense of the request (see protocol.h). The
      // id may be absent: a line that is not JSON has none to copy.
      std::string msg = reply.contains("error") && reply["error"].is_string()
                            ? reply["error"].get<std::string>()
                            : dump_json(reply);
      reap(milliseconds(0));
      *failure = crash_result("worker rejected the request: " + printable(msg, 1000));
      return std::nullopt;
    }
    if (has_id && (!reply.contains("id") || reply["id"] != want_id))
      return protocol_error("reply for another request (expected id " + dump_json(want_id) +
                            "): " + quote(*got));

    if (kind == "progress") {
      if (reply.contains("case") && reply["case"].is_string()) last_case = reply["case"].get<std::string>();
      if (reply.contains("phase") && reply["phase"].is_string()) last_phase = reply["phase"].get<std::string>();
      if (opt_.on_progress) {
        try {
          opt_.on_progress(reply);
        } catch (...) {
          // The caller's exception; the worker is mid-request and its stream
          // would be out of step with the next request: replace it.
          reap(milliseconds(0));
          throw;
        }
      }
      continue;
    }
    return reply;  // "result"
  }
}

Result Supervisor::evaluate(const EvalRequest& request) {
  begin_evaluate(request);
  return finish_evaluate();
}

void Supervisor::begin_evaluate(const EvalRequest& request) {
  if (pending_ || evaluating_)
    throw std::logic_error(
        "Supervisor::begin_evaluate: a request is pending already; collect it with "
        "finish_evaluate() (or await_reply()) before sending another");
  json msg = request.to_json();
  msg["op"] = "evaluate";
  Result failure;
  const bool sent = submit(msg, &failure);  // may throw: then nothing is pending
  evaluating_ = true;
  if (!sent) send_failure_ = std::move(failure);
}

Result Supervisor::finish_evaluate() {
  if (!evaluating_)
    throw std::logic_error("Supervisor::finish_evaluate: no evaluation is pending (call begin_evaluate() first)");
  evaluating_ = false;
  if (send_failure_) {
    Result failure = std::move(*send_failure_);
    send_failure_.reset();
    return failure;
  }
  Result failure;
  auto reply = await_reply(&failure);
  if (!reply) return failure;

  bool healthy = false;
  Result result;
  try {
    auto h = reply->find("healthy");
    if (h == reply->end() || !h->is_boolean())
      json_io::fail("$.healthy", "missing or not a boolean");
    healthy = h->get<bool>();
    auto r = reply->find("result");
    if (r == reply->end()) json_io::fail("$.result", "missing");
    result = Result::from_json(*r);
  } catch (const std::exception& e) {
    reap(milliseconds(0));
    return crash_result(std::string("protocol error: bad result reply: ") +
                        printable(e.what(), 300) + ": " + quote(dump_json(*reply)));
  }
  if (!healthy) {
    // The worker's CUDA context is broken; it exits by itself after replying.
    stop(false);
  }
  return result;
}

}  // namespace kopt::eval
