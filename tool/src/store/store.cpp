#include "store/store.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <sys/stat.h>
#include <sys/types.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "store/record_json.h"
#include "spec/kernel_file.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/json_read.h"
#include "util/text.h"

// The verdict counts switch over every verdict: a new one is a compile error here.
#pragma GCC diagnostic error "-Wswitch"

namespace kopt::store {

namespace stdfs = std::filesystem;
using nlohmann::json;
namespace jio = model::json_io;
using model::latency_json;
using model::params_json;
using model::result_json;

namespace {

constexpr const char* kRunJson = "run.json";
constexpr const char* kSpecJson = "spec.json";
constexpr const char* kDeviceJson = "device.json";
constexpr const char* kHistoryJson = "history.json";
constexpr const char* kSummaryJson = "summary.json";
constexpr const char* kBestCu = "best.cu";
constexpr const char* kRunLock = "run.lock";

std::string candidate_name(int index) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d", index);
  return buf;
}

std::string run_name(uint64_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "run-%03llu", static_cast<unsigned long long>(n));
  return buf;
}

// "run-017" -> 17; anything else -> 0.
uint64_t run_number(const std::string& name) {
  if (name.size() < 5 || name.compare(0, 4, "run-") != 0 || name.size() > 4 + 12) return 0;
  uint64_t n = 0;
  for (size_t i = 4; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return 0;
    n = n * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  return n;
}

bool finite_positive(const std::optional<double>& v) { return v && std::isfinite(*v) && *v > 0; }

// The first ok attempt of `kind` with a usable geomean.
/// Whether two attempts were timed on the same performance cases, so that a
/// ratio of their geomeans means something (with shape classes a candidate is
/// timed on its class's cases alone).
bool same_cases(const Attempt& a, const Attempt* b) {
  if (!b) return true;  // no attempt to compare with: the ratio is not written anyway
  const std::vector<std::string> y = model::timed_performance_cases(*b);  // sorted, as is a's
  // Empty: not timed as an attempt of its own (a reference timed beside the candidates).
  return y.empty() || model::timed_performance_cases(a) == y;
}

const Attempt* first_ok_of_kind(const std::vector<Attempt>& history, model::AttemptKind kind) {
  for (const Attempt& a : history)
    if (a.kind == kind && a.result.verdict == model::Verdict::ok && finite_positive(a.result.geomean_ms))
      return &a;
  return nullptr;
}

std::string fmt_double(double v, const char* f = "%.4g") {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// Reads and parses a JSON file of a run folder, or throws kopt.run.901.
json read_run_json(const stdfs::path& dir, const char* name, const char* what) {
  const stdfs::path p = dir / name;
  // A folder or a device in its place is reported by read_file, below.
  if (fs::unreadable_reason(p).rfind("not found", 0) == 0) {
    throw UsageError("kopt.run.901",
                     dir.string() + " is not a complete run folder: " + name + " (" + what +
                         ") is missing. Pass a folder made by `kopt optimize` (results/run-NNN) that "
                         "it finished creating, or start a new run.");
  }
  try {
    return parse_json_file(p, std::string("run folder's ") + name);
  } catch (const SpecError& e) {
    // "<file>: cannot read ...: permission denied" or "<file>: $.x: duplicate key 'y'".
    std::string msg = e.what();
    const std::string prefix = "[" + e.id() + "] ";
    if (msg.rfind(prefix, 0) == 0) msg = msg.substr(prefix.size());
    throw UsageError("kopt.run.901", msg + (e.id() == "kopt.io.004"
                                                ? "; fix its permissions, or start a new run."
                                                : "; the run folder is damaged: restore the file, or start a new run."));
  }
}

void check_format_version(const json& j, const stdfs::path& file, const std::string& tool_version) {
  auto it = j.is_object() ? j.find("format_version") : j.end();
  if (!j.is_object() || it == j.end()) {
    throw UsageError("kopt.run.901", file.string() +
                                         " has no format_version: it was not written by kopt, or "
                                         "it is damaged; start a new run.");
  }
  if (!it->is_number_integer() || it->get<int64_t>() != kFormatVersion) {
    const std::string got = dump_json(*it);
    throw UsageError(
        "kopt.run.903",
        file.string() + " has format_version " + got +
            (tool_version.empty() ? "" : " (written by kopt " + tool_version + ")") +
            ", but this kopt (" + KOPT_VERSION + ") reads only format_version " +
            std::to_string(kFormatVersion) +
            ": resume it with the kopt version that made it, or start a new run.");
  }
}

// history.json leaves the raw per-launch samples out; result.json has them.
// A missing or damaged result.json only loses the samples.
void restore_raw_samples(const stdfs::path& result_path, model::Result* r) {
  std::error_code ec;
  if (!stdfs::is_regular_file(result_path, ec)) return;
  try {
    const model::Result full = model::Result::from_json(parse_json_file(result_path, "candidate result"));
    if (full.verdict != r->verdict || full.cases.size() != r->cases.size()) return;
    for (size_t i = 0; i < r->cases.size(); ++i) {
      model::CaseResult& c = r->cases[i];
      const model::CaseResult& f = full.cases[i];
      if (f.name != c.name) continue;
      if (c.latency && f.latency && c.latency->raw_ms.empty()) c.latency->raw_ms = f.latency->raw_ms;
      if (c.reference_latency && f.reference_latency && c.reference_latency->raw_ms.empty())
        c.reference_latency->raw_ms = f.reference_latency->raw_ms;
    }
  } catch (const std::exception&) {
  }
}


// The checks every reader of a run folder makes first (kopt.run.901).
void check_run_folder(const stdfs::path& dir) {
  std::error_code ec;
  if (!stdfs::exists(dir, ec)) {
    throw UsageError("kopt.run.901", dir.string() +
                                         " does not exist: pass the folder of an earlier run "
                                         "(e.g. results/run-001), or start a new run.");
  }
  if (!stdfs::is_directory(dir, ec)) {
    throw UsageError("kopt.run.901", dir.string() +
                                         " is not a folder: pass the folder of an earlier run "
                                         "(e.g. results/run-001), or start a new run.");
  }
  if (!stdfs::exists(dir / kRunJson, ec)) {
    throw UsageError("kopt.run.901", dir.string() +
                                         " is not a run folder: run.json is missing. Pass a folder "
                                         "made by `kopt optimize` (results/run-NNN), or start a new run.");
  }
}

// run.json's settings (kopt.run.901 when damaged, kopt.run.903 for another format).
RunInfo parse_run_info(const stdfs::path& dir, const json& run) {
  const stdfs::path run_path = dir / kRunJson;
  RunInfo info;
  std::string tool_version;
  if (run.is_object() && run.contains("tool_version") && run["tool_version"].is_string())
    tool_version = run["tool_version"].get<std::string>();
  check_format_version(run, run_path, tool_version);
  try {
    const JsonAt r(run, fs::display(run_path));
    info.spec_hash = r.at("spec_hash").string();
    info.tool_version = tool_version;
    if (auto v = r.find("spec_file_hash")) info.spec_file_hash = v->string();
    if (auto v = r.find("strategy")) info.strategy = v->string();
    if (auto v = r.find("seed")) info.seed = record_json::unsigned_integer(*v);
    if (auto v = r.find("budget")) info.budget = v->expect_object().value();
    if (auto v = r.find("created")) info.created = v->string();
    if (auto o = r.find("options")) {
      o->expect_object();
      if (auto v = o->find("shape_classes")) info.shape_classes = v->integer(-1, 64);
      if (auto v = o->find("screen_factor")) info.screen_factor = v->number(0, 1000);
    }
  } catch (const Error& e) {
    throw UsageError("kopt.run.901", run_path.string() + " is damaged (" + e.what() +
                                         "): restore it, or start a new run.");
  }
  return info;
}

// run.json's document (parse_run_info reads it back).
json run_info_json(const RunInfo& info) {
  json run{{"format_version", kFormatVersion}, {"tool_version", info.tool_version},
           {"spec_hash", info.spec_hash},     {"spec_file_hash", info.spec_file_hash},
           {"strategy", info.strategy},       {"seed", info.seed},
           {"budget", info.budget},           {"created", info.created}};
  json options = json::object();
  if (info.shape_classes) options["shape_classes"] = *info.shape_classes;
  if (info.screen_factor) options["screen_factor"] = *info.screen_factor;
  if (!options.empty()) run["options"] = std::move(options);
  return run;
}

/// Whether summary.json "counts" lists the verdict when no attempt has it:
/// every verdict of a search does; "compiled" (compile-only runs) only when
/// there is one.
bool counted_when_none(model::Verdict v) {
  switch (v) {
    case model::Verdict::ok:
    case model::Verdict::compile_error:
    case model::Verdict::infeasible:
    case model::Verdict::launch_error:
    case model::Verdict::runtime_error:
    case model::Verdict::timeout:
    case model::Verdict::wrong_result:
    case model::Verdict::out_of_bounds:
    case model::Verdict::nondeterministic:
    case model::Verdict::worker_crash: return true;
    case model::Verdict::compiled: return false;
  }
  return true;
}

// Every attempt history.json names, with its kernel.cu, compile.log and raw
// samples read back (kopt.run.901 when the folder is damaged).
std::vector<Attempt> load_attempts(const stdfs::path& dir, const std::string& tool_version) {
  std::error_code ec;
  const stdfs::path hist_path = dir / kHistoryJson;
  const json hist = read_run_json(dir, kHistoryJson, "the attempts so far");
  check_format_version(hist, hist_path, tool_version);
  auto at = hist.find("attempts");
  if (at == hist.end() || !at->is_array()) {
    throw UsageError("kopt.run.901", hist_path.string() +
                                         " has no \"attempts\" array: it is damaged; restore it, "
                                         "or start a new run.");
  }
  std::vector<Attempt> attempts;
  for (size_t i = 0; i < at->size(); ++i) {
    Attempt a;
    try {
      a = Attempt::from_json((*at)[i]);
    } catch (const Error& e) {
      throw UsageError("kopt.run.901", hist_path.string() + " is damaged: attempts[" +
                                           std::to_string(i) + "]: " + e.what() +
                                           "; restore it, or start a new run.");
    }
    if (a.index != static_cast<int>(i) + 1) {
      throw UsageError("kopt.run.901", hist_path.string() + " is damaged: attempts[" +
                                           std::to_string(i) + "] has index " +
                                           std::to_string(a.index) + ", expected " +
                                           std::to_string(i + 1) +
                                           "; restore it, or start a new run.");
    }
    const stdfs::path cdir = dir / "candidates" / candidate_name(a.index);
    // Missing: the folder is damaged; a folder or a device in its place: read_file says so.
    if (fs::unreadable_reason(cdir / "kernel.cu").rfind("not found", 0) == 0) {
      throw UsageError("kopt.run.901", (cdir / "kernel.cu").string() + " is missing, but " +
                                           hist_path.string() + " names attempt " +
                                           std::to_string(a.index) +
                                           ": the run folder is damaged; start a new run.");
    }
    a.source = fs::read_file(cdir / "kernel.cu", "candidate source", fs::kSourceMaxBytes);
    if (stdfs::is_regular_file(cdir / "compile.log", ec))
      a.result.compile_log = fs::read_file(cdir / "compile.log", "compile log", fs::kLogMaxBytes);
    restore_raw_samples(cdir / "result.json", &a.result);
    attempts.push_back(std::move(a));
  }
  return attempts;
}

}  // namespace

// ---------------------------------------------------------------------------
// RunLock

RunLock RunLock::acquire_new(const stdfs::path& dir) {
  std::optional<util::LockHolder> holder;
  std::optional<util::FileLock> l =
      util::FileLock::try_lock(dir / kRunLock, "run folder " + dir.string(), &holder);
  // A holder killed a moment ago (kill -9, then --resume at once) still holds
  // the lock until the kernel has torn it down: wait for that, briefly.
  for (int i = 0; !l && holder && holder->ending() && i < 250; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    l = util::FileLock::try_lock(dir / kRunLock, "run folder " + dir.string(), &holder);
  }
  if (!l) {
    throw UsageError("kopt.run.908",
                     dir.string() + " is in use: " +
                         (holder ? holder->describe() : std::string("another process")) +
                         " is writing this run folder (lock " + (dir / kRunLock).string() +
                         "); wait for it to end or stop it, or start a new run: two processes on one run "
                         "folder would corrupt it");
  }
  RunLock r;
  r.lock_ = std::move(*l);
  r.dir_ = dir;
  return r;
}

RunLock RunLock::acquire(const stdfs::path& dir) {
  check_run_folder(dir);  // nothing is written into a folder that is not a run's
  return acquire_new(dir);
}

// ---------------------------------------------------------------------------
// RunStore

std::string RunStore::hash_spec(const json& spec_json) {
  // nlohmann objects are sorted by key, so dump() is canonical. dump_json is
  // dump() that tolerates invalid UTF-8 (identical output otherwise).
  const std::string text = dump_json(spec_json);
  const XXH128_hash_t h = XXH3_128bits(text.data(), text.size());
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

RunStore RunStore::create(const stdfs::path& results_dir, const json& spec_json,
                          const json& device_json, RunInfo info) {
  std::error_code ec;
  stdfs::create_directories(results_dir, ec);
  if (ec || !stdfs::is_directory(results_dir)) {
    throw EnvironmentError("kopt.run.904", "cannot create the results folder " +
                                               results_dir.string() + ": " +
                                               (ec ? ec.message() : "not a folder"));
  }
  uint64_t last = 0;
  for (stdfs::directory_iterator it(results_dir, ec), end; !ec && it != end; it.increment(ec))
    last = std::max(last, run_number(it->path().filename().string()));
  if (ec) {
    throw EnvironmentError("kopt.run.904",
                           "cannot list the results folder " + results_dir.string() + ": " + ec.message());
  }

  // mkdir fails if the folder exists: two runs started at once never share one.
  stdfs::path dir;
  for (uint64_t n = last + 1;; ++n) {
    dir = results_dir / run_name(n);
    if (::mkdir(dir.c_str(), 0755) == 0) break;
    if (errno != EEXIST || n > last + 10000) {
      throw EnvironmentError("kopt.run.905", "cannot create the run folder " + dir.string() + ": " +
                                                 std::strerror(errno));
    }
  }

  RunStore s;
  s.dir_ = dir;
  s.lock_ = RunLock::acquire_new(dir);  // before anything is written into it
  // The caller may identify the workload its own way (store::spec_fingerprint,
  // which hashes file contents, not paths); spec.json is guarded separately.
  const std::string spec_file_hash = hash_spec(spec_json);
  if (info.spec_hash.empty()) info.spec_hash = spec_file_hash;
  info.tool_version = KOPT_VERSION;
  if (info.created.empty()) info.created = now_iso8601_utc();
  if (info.budget.is_null()) info.budget = json::object();
  s.info_ = std::move(info);
  s.spec_json_ = spec_json;
  s.device_json_ = device_json.is_null() ? json::object() : device_json;

  fs::write_file_atomic(dir / kSpecJson, dump_json(spec_json, 2) + "\n");
  fs::write_file_atomic(dir / kDeviceJson, dump_json(s.device_json_, 2) + "\n");
  fs::write_file_atomic(dir / kHistoryJson,
                        dump_json(json{{"format_version", kFormatVersion}, {"attempts", json::array()}}, 2) + "\n");
  // run.json last: a folder without it was never finished and is not resumable.
  s.info_.spec_file_hash = spec_file_hash;
  fs::write_file_atomic(dir / kRunJson, dump_json(run_info_json(s.info_), 2) + "\n");
  s.note_history_file();
  return s;
}

RunStore RunStore::open(const stdfs::path& dir, const std::string& expected_spec_hash) {
  return open(dir, expected_spec_hash, RunLock());
}

RunInfo RunStore::read_info(const stdfs::path& dir) {
  check_run_folder(dir);
  return parse_run_info(dir, read_run_json(dir, kRunJson, "the run's settings"));
}

RunStore RunStore::open(const stdfs::path& dir, const std::string& expected_spec_hash, RunLock lock) {
  if (lock.held() && lock.dir() != dir)
    throw std::invalid_argument("RunStore::open: the lock given is of " + lock.dir().string() + ", not of " +
                                dir.string());
  check_run_folder(dir);

  RunStore s;
  s.dir_ = dir;
  s.lock_ = std::move(lock);
  const json run = read_run_json(dir, kRunJson, "the run's settings");
  s.info_ = parse_run_info(dir, run);
  const std::string& tool_version = s.info_.tool_version;
  std::error_code ec;

  if (!expected_spec_hash.empty() && expected_spec_hash != s.info_.spec_hash) {
    throw UsageError("kopt.run.902",
                     dir.string() + " was made from another spec, or a file it names (kernel, reference, "
                         "template or input) or a header they include changed since (hash " + s.info_.spec_hash +
                         " vs " + expected_spec_hash +
                         " for the spec given now): start a new run, or pass the spec it was made "
                         "from (its copy is " + (dir / kSpecJson).string() + ") with those files as they were.");
  }

  s.spec_json_ = read_run_json(dir, kSpecJson, "the workload");
  const std::string actual = hash_spec(s.spec_json_);
  const std::string recorded = !s.info_.spec_file_hash.empty() ? s.info_.spec_file_hash : s.info_.spec_hash;
  if (actual != recorded) {
    throw UsageError("kopt.run.901",
                     (dir / kSpecJson).string() + " does not match the hash recorded in run.json (" +
                         actual + " vs " + recorded +
                         "): it was edited since the run began; restore it, or start a new run.");
  }

  // device.json is informative only: a missing or damaged one is not fatal.
  if (stdfs::is_regular_file(dir / kDeviceJson, ec)) {
    try {
      s.device_json_ = parse_json_file(dir / kDeviceJson, "run folder's device.json");
    } catch (const std::exception&) {
      s.device_json_ = json::object();
    }
  } else {
    s.device_json_ = json::object();
  }

  s.history_ = load_attempts(dir, tool_version);
  s.note_history_file();
  return s;
}

void RunStore::note_history_file() {
  struct stat st;
  if (::stat((dir_ / kHistoryJson).c_str(), &st) != 0) {
    history_id_ = FileId{};
    return;
  }
  history_id_.dev = static_cast<unsigned long long>(st.st_dev);
  history_id_.ino = static_cast<unsigned long long>(st.st_ino);
  history_id_.size = static_cast<long long>(st.st_size);
  history_id_.mtime_ns = static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
}

void RunStore::sync_history() {
  const FileId known = history_id_;
  note_history_file();
  if (history_id_ == known) return;
  // Another process wrote history.json since this store last did.
  std::vector<Attempt> disk;
  try {
    disk = load_attempts(dir_, info_.tool_version);
  } catch (...) {
    history_id_ = known;
    throw;
  }
  auto same = [](const Attempt& a, const Attempt& b) {
    return a.index == b.index && a.kind == b.kind && a.label == b.label && a.params == b.params &&
           a.source == b.source;
  };
  bool prefix = disk.size() >= history_.size();
  for (size_t i = 0; prefix && i < history_.size(); ++i) prefix = same(disk[i], history_[i]);
  if (!prefix) {
    history_id_ = known;
    throw EnvironmentError(
        "kopt.run.909", (dir_ / kHistoryJson).string() +
                            " was rewritten by another process and no longer starts with the " +
                            std::to_string(history_.size()) +
                            " attempt(s) this run knows: stopping without writing, so that neither's attempts "
                            "are lost; let only one kopt write this run folder at a time, then resume it");
  }
  for (size_t i = history_.size(); i < disk.size(); ++i) history_.push_back(std::move(disk[i]));
}

RunStore RunStore::in_memory(const json& spec_json, RunInfo info) {
  RunStore s;
  s.memory_ = true;
  if (info.spec_hash.empty()) info.spec_hash = hash_spec(spec_json);
  info.tool_version = KOPT_VERSION;
  if (info.created.empty()) info.created = now_iso8601_utc();
  s.info_ = std::move(info);
  s.spec_json_ = spec_json;
  return s;
}

void RunStore::record(Attempt attempt) {
  if (memory_) {
    if (attempt.index == 0) attempt.index = next_index();
    if (attempt.index != next_index())
      throw std::invalid_argument("RunStore::record: attempt index " + std::to_string(attempt.index) +
                                  " is not the next index " + std::to_string(next_index()));
    history_.push_back(std::move(attempt));
    return;
  }
  // Never trust the in-memory history alone: a folder that history.json on
  // disk names is recorded, whoever recorded it.
  sync_history();
  if (attempt.index == 0) attempt.index = next_index();
  if (attempt.index != next_index()) {
    throw std::invalid_argument("RunStore::record: attempt index " + std::to_string(attempt.index) +
                                " is not the next index " + std::to_string(next_index()));
  }
  // A folder that history.json does not name is a killed run's leftover: discarded.
  const stdfs::path cdir = dir_ / "candidates" / candidate_name(attempt.index);
  std::error_code ec;
  if (stdfs::exists(cdir, ec)) stdfs::remove_all(cdir, ec);
  if (ec) {
    throw EnvironmentError("kopt.run.907", "cannot remove the stale candidate folder " +
                                               cdir.string() + ": " + ec.message());
  }

  fs::write_file_atomic(cdir / "kernel.cu", attempt.source);
  fs::write_file_atomic(cdir / "params.json", dump_json(params_json(attempt.params), 2) + "\n");
  fs::write_file_atomic(cdir / "compile.log", attempt.result.compile_log);
  json rj = result_json(attempt.result, /*full=*/true);
  rj["index"] = attempt.index;
  rj["kind"] = model::attempt_kind_name(attempt.kind);
  rj["label"] = attempt.label;
  rj["params"] = params_json(attempt.params);
  rj["compile_options"] = attempt.compile_options;
  rj["seconds_since_start"] = jio::from_double(attempt.seconds_since_start);
  fs::write_file_atomic(cdir / "result.json", dump_json(rj, 2) + "\n");

  history_.push_back(std::move(attempt));
  json attempts = json::array();
  for (const Attempt& a : history_) attempts.push_back(a.to_json());
  try {
    fs::write_file_atomic(dir_ / kHistoryJson,
                          dump_json(json{{"format_version", kFormatVersion}, {"attempts", attempts}}, 2) + "\n");
  } catch (...) {
    history_.pop_back();
    throw;
  }
  note_history_file();

  // Temporary files of writes interrupted by a kill (name.tmp.PID.N) are
  // garbage: every write of this process has completed by now.
  for (stdfs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code ignore;
    if (fs::atomic_temp_pid(name) && it->is_regular_file(ignore)) stdfs::remove(it->path(), ignore);
  }
}

const Attempt* RunStore::find(const std::map<std::string, int64_t>& params,
                              const std::string& source) const {
  for (const Attempt& a : history_)
    if (a.params == params && a.source == source) return &a;
  return nullptr;
}

const Attempt* RunStore::best() const { return model::best_attempt(history_); }

Summary RunStore::summary() const {
  Summary s;
  s.format_version = kFormatVersion;
  s.tool_version = KOPT_VERSION;
  s.run = dir_.filename().string();
  s.workload = spec_json_.is_object() ? spec_json_.value("name", "") : "";
  s.gpu = device_json_;
  s.spec_hash = info_.spec_hash;
  s.strategy = info_.strategy;
  s.seed = info_.seed;
  s.created = info_.created;

  const Attempt* b = best();
  const Attempt* ref = first_ok_of_kind(history_, model::AttemptKind::reference);
  const Attempt* ini = first_ok_of_kind(history_, model::AttemptKind::initial);

  std::optional<double> ref_geo;
  if (ref) ref_geo = ref->result.geomean_ms;
  else if (b && finite_positive(b->result.reference_geomean_ms)) ref_geo = b->result.reference_geomean_ms;
  std::optional<double> ini_geo;
  if (ini) ini_geo = ini->result.geomean_ms;
  // With shape classes the best geomean is over its class's cases: no ratio to
  // a geomean over others (the winner's over every case is "final_best").
  const bool comparable = b && same_cases(*b, ref) && same_cases(*b, ini);

  if (b) {
    const double g = *b->result.geomean_ms;
    SummaryBest sb;
    sb.index = b->index;
    sb.kind = b->kind;
    sb.label = b->label;
    sb.params = b->params;
    sb.geomean_ms = g;
    for (const model::CaseResult& c : b->result.cases) {
      if (!c.latency) continue;
      SummaryCase sc;
      sc.name = c.name;
      sc.median_ms = c.latency->median_ms;
      sc.mean_ms = c.latency->mean_ms;
      sc.min_ms = c.latency->min_ms;
      sc.max_ms = c.latency->max_ms;
      sc.stddev_ms = c.latency->stddev_ms;
      sc.samples = c.latency->samples;
      // Reference median: measured with this candidate, else the reference attempt's.
      std::optional<double> rm;
      if (c.reference_latency) rm = c.reference_latency->median_ms;
      else if (ref)
        for (const model::CaseResult& rc : ref->result.cases)
          if (rc.name == c.name && rc.latency) rm = rc.latency->median_ms;
      if (finite_positive(rm)) {
        sc.reference_median_ms = *rm;
        if (c.latency->median_ms > 0) sc.speedup = *rm / c.latency->median_ms;
      }
      sb.cases.push_back(std::move(sc));
    }
    if (comparable && finite_positive(ref_geo)) sb.speedup_vs_reference = *ref_geo / g;
    if (comparable && finite_positive(ini_geo)) sb.speedup_vs_initial = *ini_geo / g;
    if (!comparable) sb.note = "timed on its shape class's cases alone; final_best is over every case";
    s.best = std::move(sb);
  }
  s.reference_geomean_ms = ref_geo;
  s.initial_geomean_ms = ini_geo;

  for (model::Verdict v : model::kAllVerdicts)
    if (counted_when_none(v)) s.counts[model::verdict_name(v)] = 0;
  for (const Attempt& a : history_) ++s.counts[model::verdict_name(a.result.verdict)];
  s.attempts = static_cast<int64_t>(history_.size());
  s.accuracy = accuracy_of(s, history_);
  return s;
}

Summary RunStore::summary(const json& extra) const {
  Summary s = summary();
  s.merge(extra.is_null() ? json::object() : extra, "summary.json");
  return s;
}

void RunStore::write_summary(const Summary& s) const {
  if (memory_) throw std::logic_error("RunStore::write_summary: a run kept in memory has no folder");
  // "accuracy" follows the kernels the summary names now (the driver sets
  // final_best and the variants after RunStore::summary()).
  Summary out = s;
  out.accuracy = accuracy_of(out, history_);
  store::write_summary(dir_ / kSummaryJson, out);
}

void RunStore::write_summary(const json& extra) const { write_summary(summary(extra)); }

Summary RunStore::read_summary(ReadMode mode) const { return store::read_summary(dir_ / kSummaryJson, mode); }

void RunStore::replace_spec(const json& spec_json) {
  if (!history_.empty())
    throw std::logic_error("RunStore::replace_spec: " + dir_.string() + " has attempts already");
  spec_json_ = spec_json;
  info_.spec_file_hash = hash_spec(spec_json);
  fs::write_file_atomic(dir_ / kSpecJson, dump_json(spec_json, 2) + "\n");
  fs::write_file_atomic(dir_ / kRunJson, dump_json(run_info_json(info_), 2) + "\n");
}

void RunStore::write_best(const std::string& entry, const std::vector<std::string>& launch_lines) const {
  const Attempt* b = best();
  if (!b) {
    throw Error("kopt.run.906", dir_.string() +
                                    ": no attempt passed every check, so there is no best kernel "
                                    "to write (see history.json for the verdicts).");
  }
  write_best(*b, entry, launch_lines);
}

void RunStore::write_best(const Attempt& attempt, const std::string& entry,
                          const std::vector<std::string>& launch_lines, const std::filesystem::path& file) const {
  if (memory_) throw std::logic_error("RunStore::write_best: a run kept in memory has no folder");
  const Attempt* b = &attempt;
  const Summary sum = summary();
  using spec::one_line;
  spec::SelfContainedKernel k;
  // The run folder by its name: the file travels (into a tuning cache, a
  // generated kernel) and must not carry the path of the machine it was made on.
  const std::string run_name = one_line(dir_.filename().string());
  if (file.empty())
    k.header.title = "best.cu: the fastest kernel of " + run_name + ", written by KernelOptimizer " + KOPT_VERSION + ".";
  else
    k.header.title = one_line(file.generic_string()) + ": a shape-specialised variant of " + run_name +
                     " (see summary.json \"specialization\"), written by KernelOptimizer " + KOPT_VERSION + ".";
  const std::string workload = one_line(spec_json_.is_object() ? spec_json_.value("name", "") : "");
  k.header.fields.emplace_back("Workload", workload.empty() ? "(unnamed)" : workload);
  std::string gpu;
  if (device_json_.is_object()) {
    if (device_json_.contains("name") && device_json_["name"].is_string())
      gpu = device_json_["name"].get<std::string>();
    if (device_json_.contains("arch") && device_json_["arch"].is_string())
      gpu += (gpu.empty() ? "" : " (") + device_json_["arch"].get<std::string>() + (gpu.empty() ? "" : ")");
  }
  k.header.fields.emplace_back("GPU", gpu.empty() ? "unknown" : one_line(gpu));
  std::ostringstream geo;
  if (finite_positive(b->result.geomean_ms)) {
    const double g = *b->result.geomean_ms;
    int nperf = 0;
    for (const model::CaseResult& c : b->result.cases) nperf += c.latency ? 1 : 0;
    geo << fmt_double(g) << " ms over " << nperf << " performance case" << (nperf == 1 ? "" : "s");
    const Attempt* ref = first_ok_of_kind(history_, model::AttemptKind::reference);
    const Attempt* ini = first_ok_of_kind(history_, model::AttemptKind::initial);
    if (!same_cases(*b, ref) || !same_cases(*b, ini)) {
      geo << " (its shape class's; summary.json \"final_best\" has the geomean over every case)";
    } else {
      if (sum.reference_geomean_ms && std::isfinite(*sum.reference_geomean_ms))
        geo << "; " << fmt_double(*sum.reference_geomean_ms / g, "%.3g") << "x the reference";
      if (sum.initial_geomean_ms && std::isfinite(*sum.initial_geomean_ms))
        geo << "; " << fmt_double(*sum.initial_geomean_ms / g, "%.3g") << "x the initial kernel";
    }
  } else {
    geo << "not timed (verdict " << model::verdict_name(b->result.verdict) << ")";
  }
  k.header.fields.emplace_back("Geomean", geo.str());
  std::ostringstream att;
  att << "#" << b->index << " of " << history_.size() << " (" << model::attempt_kind_name(b->kind);
  if (!b->label.empty()) att << " \"" << one_line(b->label) << "\"";
  att << ")";
  k.header.fields.emplace_back("Attempt", att.str());
  k.header.fields.emplace_back("Reproduce", "kopt evaluate --kernel " +
                                                (file.empty() ? std::string("best.cu") : one_line(file.filename().string())) +
                                                " (parameters are #defines below: override with -DNAME=VALUE)");
  k.entry = entry;
  k.launch_lines = launch_lines;
  k.compile_options = b->compile_options;
  k.params = b->params;
  k.source = b->source;
  const std::filesystem::path out = dir_ / (file.empty() ? std::filesystem::path(kBestCu) : file);
  std::filesystem::create_directories(out.parent_path());
  fs::write_file_atomic(out, spec::self_contained_kernel_file(k));
}

}  // namespace kopt::store
