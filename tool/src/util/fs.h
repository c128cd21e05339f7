// Small file helpers shared by every stage.
//
// Every file the tool reads goes through read_file() or InputFile: it must be
// a regular file (not a folder, a device such as /dev/zero, a FIFO or a
// socket), it is read with a size limit, and every failure is a one-line
// SpecError that names the file and what it was for:
//
//   kopt.io.001  cannot open or read the file (the OS reason)
//   kopt.io.003  not found
//   kopt.io.004  permission denied
//   kopt.io.005  a directory, not a file
//   kopt.io.006  not a regular file (a device, a FIFO, a socket)
//   kopt.io.007  larger than the limit for its kind
//
// (kopt.io.002 is write_file_atomic's.) Messages read
//   "<file>: cannot read the <what>: <reason>"
// e.g. "/dev/zero: cannot read the spec: not a regular file (a character device)".
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kopt::fs {

constexpr uint64_t kMiB = uint64_t{1} << 20;

/// Size limits of the files the tool reads, by kind (docs/spec-format.md,
/// "Files the tool reads").
constexpr uint64_t kJsonMaxBytes = 64 * kMiB;    ///< specs, --input-cases, tuning caches, run-folder JSON
constexpr uint64_t kSourceMaxBytes = 16 * kMiB;  ///< kernel sources (.cu), .env files
constexpr uint64_t kLogMaxBytes = 64 * kMiB;     ///< compile logs, agent event logs
/// Compiled kernels of the tool's own cache, and files hashed for a run's
/// fingerprint (which may be input .npy files).
constexpr uint64_t kBlobMaxBytes = uint64_t{16} << 30;

/// `path` as shown in messages: paths longer than 240 characters are cut in
/// the middle ("/very/lo...file.json"), so that a hostile argument cannot
/// flood the terminal.
std::string display(const std::filesystem::path& path);

/// "", when `path` names a regular file that can be opened for reading; else
/// the reason, as read_file() words it ("not found", "permission denied", "a
/// directory, not a file", "not a regular file (a character device)"...).
/// Opens nothing that could block (a FIFO is recognised by stat).
std::string unreadable_reason(const std::filesystem::path& path);

/// A regular file opened for reading (the checks of the header comment).
/// The size is the one fstat() reported at open.
class InputFile {
 public:
  /// Throws SpecError kopt.io.001/003/004/005/006 naming `path` and `what`.
  InputFile(const std::filesystem::path& path, std::string what);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  uint64_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }
  const std::string& what() const { return what_; }

  /// Up to `n` bytes from `offset` (fewer at the end of the file).
  /// Throws kopt.io.001 on a read error.
  std::string read(uint64_t offset, size_t n) const;
  /// Throws kopt.io.007 when size() > max_bytes.
  void check_size(uint64_t max_bytes) const;
  /// Throws SpecError(id, "<file>: cannot read the <what>: <reason>").
  [[noreturn]] void fail(const char* id, const std::string& reason) const;

 private:
  std::filesystem::path path_;
  std::string what_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

/// Reads a whole regular file of at most `max_bytes` bytes. `what` says what
/// the file is for, in messages ("spec", "kernel source", "tuning cache"...).
/// Throws SpecError kopt.io.001/003-007 (see the header comment).
std::string read_file(const std::filesystem::path& path, const std::string& what = "file",
                      uint64_t max_bytes = kJsonMaxBytes);

/// Writes `data` to `path` atomically: it is written to a temporary file in the
/// same folder, flushed, then renamed over `path`, so a reader (or a run killed
/// with SIGKILL) sees either the old or the new content, never a torn file.
/// Creates missing parent folders. Whatever is at `path` (a symlink too) is
/// replaced: for the tool's own files (run folders, caches).
/// Throws kopt::EnvironmentError("kopt.io.002").
void write_file_atomic(const std::filesystem::path& path, const std::string& data);

/// Same, for binary blobs.
void write_file_atomic(const std::filesystem::path& path, const std::vector<char>& data);

/// The process id in the name of write_file_atomic's temporary file
/// ("history.json.tmp.1234.567": 1234, the writer's pid, then a random
/// number), or nullopt when `filename` (a name, not a path) is not one. Such
/// a file outlives its write only when the writer was killed between
/// creating and renaming it; the owners of the tool's folders remove those
/// (the run store, the compile cache), and nothing ever reads one.
std::optional<long long> atomic_temp_pid(const std::string& filename);

/// A file the user named (evaluate --json FILE): written like
/// write_file_atomic, except that a symlink is written through (the link
/// stays, its target is replaced atomically) and an existing device or FIFO
/// (/dev/stdout, /dev/null) is written in place, never replaced (as root a
/// rename would replace the device's entry). A directory is an error.
/// Throws kopt::EnvironmentError("kopt.io.002").
void write_output_file(const std::filesystem::path& path, const std::string& data);

}  // namespace kopt::fs
