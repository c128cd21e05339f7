#include "util/fs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "util/error.h"

namespace kopt::fs {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw SpecError("kopt.io.001",
                    "cannot open '" + path.string() + "': " + std::strerror(errno));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {
void write_raw_atomic(const std::filesystem::path& path, const char* data, size_t size) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  const std::filesystem::path tmp =
      path.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rng() & 0xffffff);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw EnvironmentError("kopt.io.002",
                           "cannot create '" + tmp.string() + "': " + std::strerror(errno));
  }
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, data + done, size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw EnvironmentError("kopt.io.002",
                             "cannot write '" + tmp.string() + "': " + std::strerror(e));
    }
    done += static_cast<size_t>(n);
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

void write_file_atomic(const std::filesystem::path& path, const std::string& data) {
  write_raw_atomic(path, data.data(), data.size());
}

void write_file_atomic(const std::filesystem::path& path, const std::vector<char>& data) {
  write_raw_atomic(path, data.data(), data.size());
}

}  // namespace kopt::fs
