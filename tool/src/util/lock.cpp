#include "util/lock.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/fs.h"
#include "util/interrupt.h"
#include "util/json.h"
#include "util/url.h"
#include "util/text.h"

namespace kopt::util {
namespace {

namespace stdfs = std::filesystem;

/// Printable ASCII, at most `max` bytes ("..." when cut).
std::string one_line(const std::string& s, size_t max) {
  std::string out;
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    out += c >= 0x20 && c < 0x7f ? ch : '?';
    if (out.size() >= max) return out + "...";
  }
  return out;
}

/// This process's command line (/proc/self/cmdline).
std::vector<std::string> own_argv() {
  std::string raw;
  try {
    raw = fs::read_file("/proc/self/cmdline");
  } catch (const std::exception&) {
    return {"kopt"};
  }
  std::vector<std::string> argv;
  for (size_t i = 0; i < raw.size();) {
    size_t end = raw.find('\0', i);
    if (end == std::string::npos) end = raw.size();
    argv.push_back(raw.substr(i, end - i));
    i = end + 1;
  }
  return argv;
}

std::string host_name() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return one_line(buf, 100);
}

std::string errno_text(int e) { return std::strerror(e); }

}  // namespace

// ---------------------------------------------------------------------------
// LockHolder

LockHolder LockHolder::self(const std::string& what) {
  LockHolder h;
  h.pid = ::getpid();
  h.host = host_name();
  h.command = display_command(own_argv());
  h.since = now_iso8601_utc();
  h.what = what;
  return h;
}

std::string LockHolder::display_command(const std::vector<std::string>& argv) {
  std::string line;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string word = i == 0 ? stdfs::path(argv[i]).filename().string() : argv[i];  // "kopt", not its folder
    if (!line.empty()) line += ' ';
    line += url::redact_text(word);
  }
  return one_line(line.empty() ? "kopt" : line, 300);
}

std::optional<LockHolder> LockHolder::read(const stdfs::path& holder_file) {
  std::error_code ec;
  if (!stdfs::is_regular_file(holder_file, ec)) return std::nullopt;
  try {
    if (stdfs::file_size(holder_file) > 64 * 1024) return std::nullopt;
    const nlohmann::json j = nlohmann::json::parse(fs::read_file(holder_file));
    LockHolder h;
    h.pid = j.at("pid").get<long long>();
    h.host = one_line(j.value("host", std::string()), 100);
    h.command = one_line(j.value("command", std::string()), 300);
    h.since = one_line(j.value("since", std::string()), 40);
    h.what = one_line(j.value("what", std::string()), 300);
    return h;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string LockHolder::describe() const {
  std::string s = "pid " + std::to_string(pid);
  if (!host.empty()) s += " on host " + host;
  if (!command.empty()) s += " (`" + command + "`)";
  if (!since.empty()) s += " since " + since;
  return s;
}

bool LockHolder::ending() const {
  if (pid <= 0 || host != host_name()) return false;
  std::string status;
  try {
    status = fs::read_file("/proc/" + std::to_string(pid) + "/status");
  } catch (const std::exception&) {
    return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
  }
  auto field = [&](const char* name) {
    const auto at = status.find(std::string("\n") + name + ":");
    if (at == std::string::npos) return std::string();
    const auto from = status.find_first_not_of(" \t", at + std::strlen(name) + 2);
    return from == std::string::npos ? std::string() : status.substr(from, status.find('\n', from) - from);
  };
  const std::string state = field("State");
  if (!state.empty() && (state[0] == 'Z' || state[0] == 'X')) return true;
  for (const char* mask : {"ShdPnd", "SigPnd"}) {
    const std::string hex = field(mask);
    if (!hex.empty() && (std::strtoull(hex.c_str(), nullptr, 16) & (1ULL << (SIGKILL - 1)))) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------
// FileLock

FileLock::FileLock(FileLock&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) { other.fd_ = -1; }

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

stdfs::path FileLock::holder_file(const stdfs::path& lock_file) {
  return lock_file.string() + ".json";
}

std::optional<FileLock> FileLock::try_lock(const stdfs::path& lock_file, const std::string& what,
                                           std::optional<LockHolder>* holder) {
  if (holder) holder->reset();
  for (int attempt = 0;; ++attempt) {
    int fd;
    do fd = ::open(lock_file.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
      throw EnvironmentError("kopt.lock.001", "cannot create the lock file " + lock_file.string() + ": " +
                                                  errno_text(errno));
    int r;
    do r = ::flock(fd, LOCK_EX | LOCK_NB);
    while (r < 0 && errno == EINTR);
    if (r < 0) {
      const int e = errno;
      ::close(fd);
      if (e == EWOULDBLOCK) {
        if (holder) *holder = LockHolder::read(holder_file(lock_file));
        return std::nullopt;
      }
      throw EnvironmentError("kopt.lock.001", "cannot lock " + lock_file.string() + " (flock: " + errno_text(e) +
                                                  "): put it on a file system with locks");
    }
    // The previous holder removes the file while it still holds the lock: the
    // file we locked must still be the one at the path, else take the new one.
    struct stat by_fd, by_path;
    if (::fstat(fd, &by_fd) == 0 && ::stat(lock_file.c_str(), &by_path) == 0 && by_fd.st_dev == by_path.st_dev &&
        by_fd.st_ino == by_path.st_ino) {
      FileLock l;
      l.fd_ = fd;
      l.path_ = lock_file;
      const LockHolder me = LockHolder::self(what);
      const nlohmann::json j = {{"pid", me.pid}, {"host", me.host}, {"command", me.command},
                                {"since", me.since}, {"what", me.what}};
      fs::write_file_atomic(holder_file(lock_file), dump_json(j, 2) + "\n");  // on failure `l` lets go
      return l;
    }
    ::close(fd);
    if (attempt > 1000)
      throw EnvironmentError("kopt.lock.001", "cannot lock " + lock_file.string() +
                                                  ": it is replaced faster than it can be locked");
  }
}

void FileLock::release() {
  if (fd_ < 0) return;
  // Removed while still locked, and only when the path is still our file.
  struct stat by_fd, by_path;
  if (::fstat(fd_, &by_fd) == 0 && ::stat(path_.c_str(), &by_path) == 0 && by_fd.st_dev == by_path.st_dev &&
      by_fd.st_ino == by_path.st_ino) {
    ::unlink(holder_file(path_).c_str());
    ::unlink(path_.c_str());
  }
  ::close(fd_);  // lets go of the flock
  fd_ = -1;
}

// ---------------------------------------------------------------------------
// The device lock folder and keys

stdfs::path device_lock_dir() {
  auto fail = [](const stdfs::path& dir, const std::string& why) -> EnvironmentError {
    return EnvironmentError("kopt.lock.002", "cannot use the device lock folder " + dir.string() + " (" + why +
                                                 "): set KOPT_LOCK_DIR to a folder of yours");
  };
  const char* env = std::getenv("KOPT_LOCK_DIR");
  if (env && *env) {
    const stdfs::path dir(env);
    std::error_code ec;
    stdfs::create_directories(dir, ec);
    if (!stdfs::is_directory(dir, ec)) throw fail(dir, ec ? ec.message() : "not a folder");
    if (::access(dir.c_str(), W_OK | X_OK) != 0) throw fail(dir, errno_text(errno));
    return dir;
  }
  stdfs::path dir;
  bool shared_tmp = false;
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  std::error_code ec;
  if (xdg && *xdg && stdfs::is_directory(xdg, ec) && ::access(xdg, W_OK | X_OK) == 0) {
    dir = stdfs::path(xdg) / "kopt";
  } else {
    dir = "/tmp/kopt-locks-" + std::to_string(::geteuid());
    shared_tmp = true;
  }
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) throw fail(dir, errno_text(errno));
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) throw fail(dir, errno_text(errno));
  if (S_ISLNK(st.st_mode)) throw fail(dir, "a symbolic link");
  if (!S_ISDIR(st.st_mode)) throw fail(dir, "not a folder");
  // Anyone can create /tmp/kopt-locks-<uid>: use it only if it is ours alone.
  if (shared_tmp && (st.st_uid != ::geteuid() || (st.st_mode & 022) != 0))
    throw fail(dir, "owned by another user or writable by others");
  if (::access(dir.c_str(), W_OK | X_OK) != 0) throw fail(dir, errno_text(errno));
  return dir;
}

std::string device_lock_key(const std::string& uuid, int ordinal) {
  auto clean = [](const std::string& s) {
    std::string out;
    for (char c : s) {
      if (out.size() >= 100) break;
      out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
    }
    return out;
  };
  const std::string by_ordinal = "gpu" + std::to_string(ordinal);
  if (!uuid.empty()) {
    const std::string k = clean(uuid);
    if (!k.empty() && k.find_first_not_of("._") != std::string::npos) return k;
  }
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!visible || !*visible || ordinal < 0) return by_ordinal;
  // The ordinal-th entry of the list (numbers, GPU-<uuid> or MIG-<uuid>).
  const std::string list(visible);
  size_t from = 0;
  for (int i = 0; i < ordinal; ++i) {
    from = list.find(',', from);
    if (from == std::string::npos) return by_ordinal;
    ++from;
  }
  std::string entry = list.substr(from, list.find(',', from) - from);
  entry.erase(0, entry.find_first_not_of(" \t"));
  entry.erase(entry.find_last_not_of(" \t") + 1);
  if (entry.empty()) return by_ordinal;
  if (entry.find_first_not_of("0123456789") == std::string::npos) return "gpu" + entry;
  const std::string k = clean(entry);
  return k.find_first_not_of("._") != std::string::npos ? k : by_ordinal;
}

// ---------------------------------------------------------------------------
// DeviceLock

namespace {

std::mutex g_registry_mu;
std::map<std::string, std::weak_ptr<FileLock>>& registry() {
  static auto* r = new std::map<std::string, std::weak_ptr<FileLock>>();
  return *r;
}

std::string wait_text(std::chrono::steady_clock::duration d) {
  const long long s = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  return s < 60 ? std::to_string(s) + " s" : std::to_string(s / 60) + " min " + std::to_string(s % 60) + " s";
}

}  // namespace

DeviceLock DeviceLock::acquire(const std::string& key, const std::string& what, const Options& options) {
  DeviceLock d;
  d.key_ = key;
  const stdfs::path file = device_lock_dir() / (key + ".lock");
  auto say = options.say ? options.say : [](const std::string& line) { std::cerr << line << std::endl; };
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto next_progress = t0 + options.first_progress;
  bool said = false;
  for (;;) {
    // The registry is locked only to look and to take, never while waiting:
    // a thread that waits for one GPU does not hold up another thread of this
    // process taking another GPU's lock (kopt optimize --devices).
    std::optional<LockHolder> holder;
    {
      std::lock_guard<std::mutex> guard(g_registry_mu);
      if (std::shared_ptr<FileLock> held = registry()[key].lock()) {  // this process holds it already
        if (said) say("kopt: " + what + " is free after " + wait_text(Clock::now() - t0) + ": measuring");
        d.lock_ = std::move(held);
        return d;
      }
      if (std::optional<FileLock> l = FileLock::try_lock(file, what, &holder)) {
        if (said) say("kopt: " + what + " is free after " + wait_text(Clock::now() - t0) + ": measuring");
        d.lock_ = std::make_shared<FileLock>(std::move(*l));
        registry()[key] = d.lock_;
        return d;
      }
    }
    const std::string who = holder ? holder->describe() : "another process";
    const auto now = Clock::now();
    if (!said) {
      say("kopt: waiting for " + what + ": " + who + " is measuring on it (lock " + file.string() +
          "); two processes timing on one GPU would disturb each other's measurements");
      said = true;
    } else if (now >= next_progress) {
      say("kopt: still waiting for " + what + " after " + wait_text(now - t0) + " (held by " + who + ")");
      next_progress = now + options.progress_every;
    }
    throw_if_interrupted();
    std::this_thread::sleep_for(options.poll);
    throw_if_interrupted();
  }
}

}  // namespace kopt::util
