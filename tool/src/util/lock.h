// Exclusive locks between kopt processes: flock(2) on a lock file, with a
// small holder file beside it that says who holds the lock.
//
//   <name>        the lock file (empty); its flock is the lock
//   <name>.json   the holder: {"pid", "host", "command", "since", "what"},
//                 written atomically once the lock is taken
//
// The kernel releases a flock when its holder dies, so a kill -9 never leaves
// a lock stuck: a lock file or holder file left behind by a killed process is
// harmless, and the next process takes the lock over. A holder removes both
// files when it lets go (it does so while still holding the lock, and a taker
// checks after flock that the file it locked is still the one at the path,
// so removing them never lets two processes hold one lock).
//
// Users: the run folder's lock (store/store.h: one writer per run folder) and
// the per-device timing lock (DeviceLock below: one process measuring on a
// GPU at a time).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kopt::util {

/// Who holds a lock, as its holder file records it.
struct LockHolder {
  long long pid = 0;
  std::string host;
  std::string command;  // the holder's command line (one line, shortened, URL credentials cut)
  std::string since;    // ISO 8601 UTC
  std::string what;     // what the lock guards, e.g. "run folder results/run-001"

  /// This process, now.
  static LockHolder self(const std::string& what);
  /// A command line as a holder file records it: the words joined by spaces,
  /// argv[0] as its file name, URL credentials removed (url::redact_text:
  /// user-info dropped, credential-like query values masked), printable
  /// ASCII, at most 300 characters.
  static std::string display_command(const std::vector<std::string>& argv);
  /// The holder file's content; nullopt when it is missing or damaged.
  static std::optional<LockHolder> read(const std::filesystem::path& holder_file);
  /// "pid 1234 on host gpu01 (`kopt optimize --resume results/run-001`) since 2024-05-01T10:00:00Z".
  std::string describe() const;
  /// True when the holder is a process of this host that has ended or is
  /// ending (no such process, a zombie, or SIGKILL pending): its lock is
  /// about to be released by the kernel (a `kill -9` takes a moment).
  bool ending() const;
};

/// An exclusive flock on a lock file. Move-only; releasing (or destroying)
/// removes the holder file and the lock file, then lets go of the lock.
class FileLock {
 public:
  FileLock() = default;
  ~FileLock() { release(); }
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  /// The holder file of `lock_file`: the same name plus ".json".
  static std::filesystem::path holder_file(const std::filesystem::path& lock_file);

  /// Takes the lock if it is free, without waiting: returns the held lock, or
  /// nullopt when another process (or another FileLock of this one) holds it;
  /// then *holder, when given, is set to what the holder file says (nullopt
  /// when it says nothing). Writes the holder file (`what` says what the lock
  /// guards). Throws EnvironmentError(kopt.lock.001) when the lock file
  /// cannot be created or locked (a read-only folder, a file system without
  /// locks).
  static std::optional<FileLock> try_lock(const std::filesystem::path& lock_file, const std::string& what,
                                          std::optional<LockHolder>* holder = nullptr);

  bool held() const { return fd_ >= 0; }
  const std::filesystem::path& path() const { return path_; }
  /// Removes the holder and lock files and unlocks. Nothing when not held.
  void release();

 private:
  int fd_ = -1;
  std::filesystem::path path_;
};

/// The folder of the per-device timing locks: $KOPT_LOCK_DIR, else
/// $XDG_RUNTIME_DIR/kopt, else /tmp/kopt-locks-<uid>; created when missing
/// (0700 for the last two). Throws EnvironmentError(kopt.lock.002) when it
/// cannot be created or used (not a folder; under /tmp, not ours or a
/// symbolic link), naming the folder and KOPT_LOCK_DIR.
std::filesystem::path device_lock_dir();

/// The lock key of a device: its UUID when known ("GPU-8f3c..."), else its
/// ordinal as the system numbers devices: the ordinal-th entry of
/// $CUDA_VISIBLE_DEVICES when that is set, else the ordinal itself
/// ("gpu0"). Only letters, digits, '-', '_' and '.' are kept.
std::string device_lock_key(const std::string& uuid, int ordinal);

/// The per-device timing lock: two kopt processes measuring on one GPU wait
/// for each other. Held by a process (shared by every user in it) while any
/// DeviceLock of its key lives.
class DeviceLock {
 public:
  struct Options {
    /// Where the waiting process says that it waits (once), then every so
    /// often that it still does. Default: stderr, "kopt: ..." lines.
    std::function<void(const std::string& line)> say;
    std::chrono::milliseconds poll{50};
    /// Progress lines after this long, then at this interval.
    std::chrono::seconds first_progress{10}, progress_every{60};
  };

  /// Waits until this process holds the lock of `key` (in device_lock_dir()),
  /// taking it over at once when this process holds it already. Throws
  /// Interrupted when SIGINT/SIGTERM arrives while it waits (util/interrupt.h),
  /// EnvironmentError (kopt.lock.001/002) when the lock cannot be used.
  static DeviceLock acquire(const std::string& key, const std::string& what, const Options& options);
  static DeviceLock acquire(const std::string& key, const std::string& what) {
    return acquire(key, what, Options{});
  }

  DeviceLock() = default;
  bool held() const { return static_cast<bool>(lock_); }
  const std::string& key() const { return key_; }

 private:
  std::shared_ptr<FileLock> lock_;
  std::string key_;
};

}  // namespace kopt::util
