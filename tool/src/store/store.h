// The run folder: every attempt of an optimization run, written so that a run
// killed at any point (even SIGKILL) can be resumed.
//
//   results/run-NNN/
//     spec.json            the resolved workload (spec::to_json)
//     device.json          the GPU (model::DeviceInfo::to_json), or {"arch": ...} with no GPU
//     run.json             format_version, tool version, spec_hash (workload identity),
//                          spec_file_hash (guards spec.json against edits), strategy, seed, budget, created
//     candidates/NNNN/     kernel.cu, params.json, compile.log, result.json (one per attempt)
//     history.json         every attempt in order: index, kind, label, params, verdict, timings
//     summary.json         best candidate, its params and per-case latencies, speedups, counts by verdict
//     best.cu              the best kernel, self-contained (see write_best)
//     variants/v<N>.cu     shape-specialised variants, same form (v0 = best.cu's kernel)
//     run.lock             while a process writes the folder: its flock (RunLock), and
//     run.lock.json        who holds it (pid, host, command, since)
//
// Every file is written atomically (write to a temporary file, then rename).
// An attempt is recorded by first writing its candidates/NNNN/ files and last
// rewriting history.json, so history.json never names an attempt whose files
// are incomplete; on resume, candidate folders not in history.json are
// discarded and re-evaluated.
//
// One process writes a run folder at a time: create() and the writer's open()
// hold its RunLock. Should another writer bypass the lock (an older kopt),
// record() still never removes or rewrites a candidate folder that
// history.json names: it re-reads history.json when the file changed since
// this store last read or wrote it, takes in the other's attempts and records
// its own at the next free index.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/attempt.h"
#include "store/summary.h"
#include "util/lock.h"

namespace kopt::store {

constexpr int kFormatVersion = 1;

using model::Attempt;


/// run.json: who made the run and with which settings. Written once when the
/// run folder is created (and again, with the new spec_file_hash, when a
/// drafted workload's spec.json is replaced before any attempt); read by
/// every opener. Its reader and writer are RunStore's (store.cpp);
/// docs/schemas/run.schema.json is its schema.
struct RunInfo {
  std::string spec_hash;   // identity of the workload (store::spec_fingerprint); empty: hash of spec.json
  /// RunStore::hash_spec of spec.json as written, which guards it against
  /// edits; empty in older runs (spec_hash serves then). Set by the store.
  std::string spec_file_hash;
  std::string strategy;
  uint64_t seed = 0;
  nlohmann::json budget;   // as given (Proposer::budget_json): {"evaluations": N, "minutes": M, ...}
  /// Options a resume must keep (run.json "options"; absent in older runs).
  /// Read when the last session left no summary.json to take them from.
  std::optional<int64_t> shape_classes;  // -1 auto, 0 off, else the number of classes
  std::optional<double> screen_factor;   // 0 off, else >= 1
  std::string tool_version;
  std::string created;     // ISO 8601 UTC
};

/// The lock of a run folder: its writer holds it (run.lock in the folder, with
/// run.lock.json saying who; util/lock.h). Released when destroyed, and by the
/// kernel when the process dies, however it dies.
class RunLock {
 public:
  /// Takes the lock of the run folder `dir`, without waiting. Throws what
  /// RunStore::open throws when `dir` is not a run folder (kopt.run.901;
  /// nothing is written then), UsageError(kopt.run.908) naming the holder
  /// (pid, host, command, since when) when another process holds it, and
  /// EnvironmentError(kopt.lock.001) when the folder cannot be locked.
  static RunLock acquire(const std::filesystem::path& dir);

  RunLock() = default;
  bool held() const { return lock_.held(); }
  /// The run folder it locks (empty when not held).
  const std::filesystem::path& dir() const { return dir_; }

 private:
  friend class RunStore;
  static RunLock acquire_new(const std::filesystem::path& dir);
  util::FileLock lock_;
  std::filesystem::path dir_;
};

class RunStore {
 public:
  /// Creates results_dir/run-NNN with the next free NNN (001, 002...), writing
  /// spec.json, device.json and run.json. The store holds the new folder's
  /// RunLock (taken before anything is written into it). Throws
  /// EnvironmentError(kopt.run.9xx).
  static RunStore create(const std::filesystem::path& results_dir, const nlohmann::json& spec_json,
                         const nlohmann::json& device_json, RunInfo info);
  /// A run kept in memory, with no folder (a replay's run: driver::OptimizeOptions::in_memory):
  /// record() keeps the attempts in history() and writes nothing; dir() is empty,
  /// and nothing may be written (write_summary, write_best throw std::logic_error).
  static RunStore in_memory(const nlohmann::json& spec_json, RunInfo info);
  bool in_memory() const { return memory_; }

  /// Opens an existing run to resume it. Throws UsageError(kopt.run.901) when
  /// `dir` is not a run folder (names what is missing), kopt.run.902 when its
  /// spec hash differs from `expected_spec_hash` (the spec, a file it names
  /// or a header they include changed since: store::spec_fingerprint), and
  /// kopt.run.903 for an unsupported format_version. Never modifies files
  /// while checking.
  /// An empty `expected_spec_hash` skips the spec check (e.g. to regenerate
  /// the reports of a finished run).
  /// This form only reads: it takes no lock (a reader of a finished run).
  static RunStore open(const std::filesystem::path& dir, const std::string& expected_spec_hash);
  /// The writer's form: `lock` (RunLock::acquire of `dir`, taken before
  /// anything was read) is held by the store from now on. Throws
  /// std::invalid_argument when `lock` is not the held lock of `dir`.
  static RunStore open(const std::filesystem::path& dir, const std::string& expected_spec_hash, RunLock lock);

  /// run.json of the run folder `dir` (strategy, seed, budget as given when
  /// the run was created...), read without a lock and without changing
  /// anything. Throws as open() does (kopt.run.901, kopt.run.903).
  static RunInfo read_info(const std::filesystem::path& dir);

  /// Hands the store's lock over (e.g. to the store that reopens the folder);
  /// the store does not hold it any more.
  RunLock release_lock() { return std::move(lock_); }
  bool locked() const { return lock_.held(); }

  /// Canonical hash of a spec document (what run.json and the tuning cache use).
  static std::string hash_spec(const nlohmann::json& spec_json);

  const std::filesystem::path& dir() const { return dir_; }
  const RunInfo& info() const { return info_; }
  const std::vector<Attempt>& history() const { return history_; }

  /// Next attempt index (history size + 1).
  int next_index() const { return static_cast<int>(history_.size()) + 1; }

  /// Records an attempt (sets attempt.index if 0). Writes candidates/NNNN/*
  /// then history.json, atomically. When history.json changed on disk since
  /// this store last read or wrote it (another writer that ignored the lock),
  /// it is read again first and the other's attempts join history(); the
  /// attempt then gets the next free index (an index set by the caller that
  /// is not the next one is std::invalid_argument). A candidate folder that
  /// history.json names is never removed or rewritten; one it does not name is
  /// a killed run's leftover and is replaced. Throws EnvironmentError
  /// (kopt.run.909) when history.json no longer starts with this store's
  /// attempts (rewritten by someone else): nothing is written then.
  void record(Attempt attempt);

  /// The attempt with these params and this source, if already recorded.
  const Attempt* find(const std::map<std::string, int64_t>& params, const std::string& source) const;

  /// The run's best attempt (model::best_attempt over the history), if any.
  const Attempt* best() const;

  /// The summary.json keys this store derives (Summary::store_keys): format_version,
  /// tool_version, run, workload, gpu, spec_hash, strategy, seed, created, best
  /// (null when no attempt passed; else index, kind, label, params,
  /// geomean_ms, cases [{name, median_ms, mean_ms, min_ms, max_ms, stddev_ms,
  /// samples, reference_median_ms?, speedup?}], speedup_vs_reference,
  /// speedup_vs_initial), reference_geomean_ms, initial_geomean_ms (null
  /// when unknown), counts (every verdict name -> number of attempts; a
  /// compile-only run's "compiled" only when there is one), attempts (history
  /// size), accuracy (store::accuracy_of: the best's errors beside cuBLAS's,
  /// when measured). The caller sets the rest (the run driver: driver/finish.cpp).
  Summary summary() const;
  /// summary() with `extra`'s keys set as Summary::merge sets them (its keys
  /// win; SpecError for a value of the wrong type).
  Summary summary(const nlohmann::json& extra) const;

  /// Writes summary.json (atomically), with "accuracy" derived again for the
  /// kernels `s` names (store::accuracy_of: the variants, final_best or best).
  void write_summary(const Summary& s) const;
  /// Writes summary(extra).
  void write_summary(const nlohmann::json& extra) const;
  void write_summary() const { write_summary(summary()); }

  /// Reads this run folder's summary.json (store::read_summary).
  Summary read_summary(ReadMode mode) const;

  /// Replaces spec.json by `spec_json` (a drafted workload whose files moved
  /// beside it) and rewrites run.json with its spec_file_hash. Only before
  /// the first attempt: std::logic_error otherwise.
  void replace_spec(const nlohmann::json& spec_json);

  /// Writes best.cu: a comment header (workload, GPU, geomean, attempt),
  /// `// kopt:` annotations (entry, grid, block, shared, options, one
  /// `// kopt:param NAME=VALUE` per parameter) so that `kopt evaluate
  /// --kernel best.cu` reproduces it, the tuning parameters as #defines
  /// guarded by #ifndef, then the source. Annotation lines of the source that the header supersedes
  /// are neutralised (`// kopt:grid` becomes `// kopt-superseded:grid`) so
  /// that the header's win. The run folder supplies the header's values; the
  /// file's form is spec::self_contained_kernel_file's (spec/kernel_file.h).
  /// Throws kopt::Error(kopt.run.906) when no attempt passed (best() is null).
  void write_best(const std::string& entry, const std::vector<std::string>& launch_lines) const;
  /// Same, for a given attempt (e.g. the winner of the final re-timing),
  /// into `file` relative to the run folder (default best.cu; the optimizer
  /// writes shape-specialised variants as variants/v<N>.cu).
  void write_best(const Attempt& attempt, const std::string& entry,
                  const std::vector<std::string>& launch_lines, const std::filesystem::path& file = {}) const;

 private:
  /// Re-reads history.json when it is not the file this store last read or
  /// wrote (see record()).
  void sync_history();
  /// Remembers history.json's identity (device, inode, size, mtime) as it is now.
  void note_history_file();

  std::filesystem::path dir_;
  RunInfo info_;
  std::vector<Attempt> history_;
  nlohmann::json spec_json_, device_json_;
  RunLock lock_;
  struct FileId {
    unsigned long long dev = 0, ino = 0;
    long long size = -1, mtime_ns = 0;
    bool operator==(const FileId& o) const {
      return dev == o.dev && ino == o.ino && size == o.size && mtime_ns == o.mtime_ns;
    }
  };
  FileId history_id_;
  bool memory_ = false;  // in_memory(): no folder, nothing written
};

}  // namespace kopt::store
