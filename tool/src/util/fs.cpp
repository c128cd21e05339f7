#include "util/fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "util/error.h"

namespace kopt::fs {

std::string display(const std::filesystem::path& path) {
  const std::string& s = path.native();
  if (s.empty()) return "''";
  constexpr size_t kMax = 240;
  if (s.size() <= kMax) return s;
  return s.substr(0, kMax / 2 - 2) + "..." + s.substr(s.size() - (kMax / 2 - 1));
}

namespace {

struct Problem {
  const char* id = nullptr;  // nullptr: none
  std::string reason;
};

Problem stat_problem(int err) {
  switch (err) {
    case ENOENT: return {"kopt.io.003", "not found"};
    case ENOTDIR: return {"kopt.io.003", "not found (a part of the path is not a folder)"};
    case EACCES: return {"kopt.io.004", "permission denied (a folder on the path cannot be searched)"};
    default: return {"kopt.io.001", std::strerror(err)};
  }
}

Problem type_problem(mode_t mode) {
  if (S_ISREG(mode)) return {};
  if (S_ISDIR(mode)) return {"kopt.io.005", "a directory, not a file"};
  if (S_ISCHR(mode)) return {"kopt.io.006", "not a regular file (a character device)"};
  if (S_ISBLK(mode)) return {"kopt.io.006", "not a regular file (a block device)"};
  if (S_ISFIFO(mode)) return {"kopt.io.006", "not a regular file (a named pipe)"};
  if (S_ISSOCK(mode)) return {"kopt.io.006", "not a regular file (a socket)"};
  return {"kopt.io.006", "not a regular file"};
}

Problem open_problem(int err) {
  if (err == EACCES || err == EPERM) return {"kopt.io.004", "permission denied"};
  return stat_problem(err);
}

/// Checks `path` and opens it (O_NONBLOCK: a FIFO that slipped past stat
/// cannot block us; regular files ignore the flag). fd < 0 on a problem.
int open_regular(const std::filesystem::path& path, Problem& problem, uint64_t& size) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    problem = stat_problem(errno);
    return -1;
  }
  problem = type_problem(st.st_mode);
  if (problem.id) return -1;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    problem = open_problem(errno);
    return -1;
  }
  // The file may have been replaced between stat and open.
  if (::fstat(fd, &st) != 0 || (problem = type_problem(st.st_mode)).id) {
    if (!problem.id) problem = {"kopt.io.001", std::strerror(errno)};
    ::close(fd);
    return -1;
  }
  size = static_cast<uint64_t>(st.st_size);
  return fd;
}

std::string mib(uint64_t bytes) {
  if (bytes < kMiB) return std::to_string(bytes) + " bytes";
  if (bytes % kMiB == 0) return std::to_string(bytes / kMiB) + " MiB";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / static_cast<double>(kMiB));
  return buf;
}

}  // namespace

std::string unreadable_reason(const std::filesystem::path& path) {
  Problem p;
  uint64_t size = 0;
  const int fd = open_regular(path, p, size);
  if (fd >= 0) ::close(fd);
  return p.id ? p.reason : std::string();
}

InputFile::InputFile(const std::filesystem::path& path, std::string what)
    : path_(path), what_(std::move(what)) {
  Problem p;
  fd_ = open_regular(path_, p, size_);
  if (fd_ < 0) fail(p.id, p.reason);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void InputFile::fail(const char* id, const std::string& reason) const {
  throw SpecError(id, display(path_) + ": cannot read the " + what_ + ": " + reason);
}

void InputFile::check_size(uint64_t max_bytes) const {
  if (size_ > max_bytes) {
    fail("kopt.io.007", "larger than " + mib(max_bytes) + " (the limit for the " + what_ + "; it is " +
                            mib(size_) + ")");
  }
}

std::string InputFile::read(uint64_t offset, size_t n) const {
  std::string out;
  out.resize(n);
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd_, out.data() + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      fail("kopt.io.001", std::strerror(errno));
    }
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  out.resize(done);
  return out;
}

std::string read_file(const std::filesystem::path& path, const std::string& what, uint64_t max_bytes) {
  const InputFile in(path, what);
  in.check_size(max_bytes);
  // Read up to one byte past the limit: a file that grows, or one whose size
  // stat does not know (/proc), is still held to it.
  std::string text;
  uint64_t want = std::min<uint64_t>(in.size(), max_bytes) + 1;
  for (;;) {
    std::string chunk = in.read(text.size(), static_cast<size_t>(want - text.size()));
    if (chunk.empty()) break;
    text += chunk;
    if (text.size() > max_bytes) {
      in.fail("kopt.io.007", "larger than " + mib(max_bytes) + " (the limit for the " + what + ")");
    }
    if (text.size() == want) want = std::min<uint64_t>(want * 2, max_bytes + 1);
  }
  return text;
}

namespace {

/// Writes all of `data` to `fd`: 0, or the errno of the failure.
int write_all(int fd, const char* data, size_t size) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    done += static_cast<size_t>(n);
  }
  return 0;
}

/// Where the data of `given` must go: a symlink is written through (the link
/// stays, its target is replaced), so the rename happens beside the target.
std::filesystem::path write_target(const std::filesystem::path& given) {
  std::error_code ec;
  if (!std::filesystem::is_symlink(given, ec)) return given;
  const std::filesystem::path real = std::filesystem::canonical(given, ec);
  if (!ec) return real;
  // A dangling link: create its target.
  const std::filesystem::path t = std::filesystem::read_symlink(given, ec);
  if (ec) return given;
  return t.is_absolute() ? t : given.parent_path() / t;
}

/// Writes `data` in place into an existing device or FIFO; false when
/// `given` is not one (nothing done).
bool write_in_place(const std::filesystem::path& given, const char* data, size_t size) {
  struct stat st {};
  if (::stat(given.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return false;
  if (S_ISDIR(st.st_mode)) {
    throw EnvironmentError("kopt.io.002", "cannot write '" + display(given) + "': a directory, not a file");
  }
  const int fd = ::open(given.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int e = errno;
    throw EnvironmentError("kopt.io.002", "cannot write '" + display(given) + "': " +
                                              (e == ENXIO ? "a named pipe that nobody reads" : std::strerror(e)));
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  const int e = write_all(fd, data, size);
  ::close(fd);
  if (e) throw EnvironmentError("kopt.io.002", "cannot write '" + display(given) + "': " + std::strerror(e));
  return true;
}

void write_raw_atomic(const std::filesystem::path& path, const char* data, size_t size) {
  std::error_code ec;
  if (path.has_parent_path()) {
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) {
      // Said here: the open below would only say "No such file or directory".
      throw EnvironmentError("kopt.io.002", "cannot create the folder '" + display(path.parent_path()) +
                                                "': " + ec.message());
    }
  }
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  const std::filesystem::path tmp =
      path.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rng() & 0xffffff);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw EnvironmentError("kopt.io.002", "cannot write '" + display(path) + "': cannot create a file in '" +
                                              display(path.has_parent_path() ? path.parent_path() : ".") +
                                              "' (" + std::strerror(errno) + ")");
  }
  if (const int e = write_all(fd, data, size)) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw EnvironmentError("kopt.io.002", "cannot write '" + display(path) + "' (through '" + display(tmp) +
                                              "', now removed): " + std::strerror(e));
  }
  ::fsync(fd);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw EnvironmentError("kopt.io.002", "cannot rename '" + tmp.string() + "' to '" +
                                              path.string() + "': " + std::strerror(e));
  }
}
}  // namespace

std::optional<long long> atomic_temp_pid(const std::string& name) {
  const auto p = name.rfind(".tmp.");
  if (p == std::string::npos || p == 0) return std::nullopt;
  const std::string rest = name.substr(p + 5);
  const auto dot = rest.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == rest.size() || dot > 18) return std::nullopt;
  for (size_t i = 0; i < rest.size(); ++i)
    if (i != dot && (rest[i] < '0' || rest[i] > '9')) return std::nullopt;
  return std::stoll(rest.substr(0, dot));
}

void write_file_atomic(const std::filesystem::path& path, const std::string& data) {
  write_raw_atomic(path, data.data(), data.size());
}

void write_file_atomic(const std::filesystem::path& path, const std::vector<char>& data) {
  write_raw_atomic(path, data.data(), data.size());
}

void write_output_file(const std::filesystem::path& path, const std::string& data) {
  if (write_in_place(path, data.data(), data.size())) return;
  write_raw_atomic(write_target(path), data.data(), data.size());
}

}  // namespace kopt::fs
