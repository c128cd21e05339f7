#include "cli/common.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>

#include "cuda/nvrtc.h"
#include "model/ctest_resources.h"
#include "eval/evaluator_pool.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/text.h"
#include "util/thread_pool.h"

namespace kopt::cli {

std::filesystem::path self_exe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path("kopt") : p;
}

// --- option values ---------------------------------------------------------

namespace {

std::string number_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::string got(const std::string& text) { return ", got " + quote(text); }

}  // namespace

namespace check {

CLI::Validator whole(int64_t lo, int64_t hi) {
  const std::string range = hi == std::numeric_limits<int64_t>::max()
                                ? std::to_string(lo) + " or more"
                                : "from " + std::to_string(lo) + " to " + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& t) -> std::string {
        const std::optional<int64_t> v = parse_whole(t);
        if (!v || *v < lo || *v > hi) return "expected a whole number " + range + got(t);
        return {};
      },
      hi == std::numeric_limits<int64_t>::max() ? ">=" + std::to_string(lo)
                                                : std::to_string(lo) + ".." + std::to_string(hi));
}

CLI::Validator unsigned_whole() {
  return CLI::Validator(
      [](std::string& t) -> std::string {
        if (!parse_unsigned(t)) return "expected a whole number from 0 to 18446744073709551615" + got(t);
        return {};
      },
      "0..2^64-1");
}

CLI::Validator finite(double lo, bool lo_inclusive, double hi, bool hi_inclusive) {
  std::string range = std::string(lo_inclusive ? ">= " : "> ") + number_text(lo);
  if (std::isfinite(hi)) range += std::string(hi_inclusive ? " and <= " : " and < ") + number_text(hi);
  return CLI::Validator(
      [=](std::string& t) -> std::string {
        const std::optional<double> v = parse_finite(t);
        if (!v || (lo_inclusive ? *v < lo : *v <= lo) || (hi_inclusive ? *v > hi : *v >= hi))
          return "expected a finite number " + range + got(t);
        return {};
      },
      std::string(lo_inclusive ? "[" : "(") + number_text(lo) + "," +
          (std::isfinite(hi) ? number_text(hi) + (hi_inclusive ? "]" : ")") : "inf)"));
}

CLI::Validator not_empty() {
  return CLI::Validator(
      [](std::string& t) -> std::string {
        if (t.find_first_not_of(" \t\r\n") == std::string::npos) return "expected a value, got an empty string";
        return {};
      },
      "");
}

CLI::Validator identifier() {
  return CLI::Validator(
      [](std::string& t) -> std::string {
        static const std::regex ident("[A-Za-z_][A-Za-z0-9_]*");
        if (t.size() > 200 || !std::regex_match(t, ident))
          return "expected a C identifier (letters, digits and '_', not starting with a digit; at most 200)" + got(t);
        return {};
      },
      "C identifier");
}

CLI::Validator entry_name() {
  return CLI::Validator(
      [](std::string& t) -> std::string {
        static const std::regex name("[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*(<[^<>]*(<[^<>]*>[^<>]*)*>)?");
        if (t.size() > 1000 || !std::regex_match(t, name))
          return "expected a kernel name (a C identifier, or a name expression such as ns::kernel<128>)" + got(t);
        return {};
      },
      "NAME");
}

namespace {

/// Why `t` cannot be used as an input of this kind ("" when it can).
std::string input_problem(const std::string& t, bool want_dir) {
  if (t.empty()) return std::string("expected a ") + (want_dir ? "folder" : "file name") + ", got an empty string";
  struct stat st {};
  if (::stat(t.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) return clip(t) + ": not found";
    if (err == ENOTDIR) return clip(t) + ": not found (a part of the path is not a folder)";
    if (err == EACCES) return clip(t) + ": cannot be reached: a folder on the way is not searchable (permission denied)";
    return clip(t) + ": cannot be used: " + std::strerror(err);
  }
  if (want_dir) {
    if (!S_ISDIR(st.st_mode)) return clip(t) + ": is not a folder";
    if (::access(t.c_str(), R_OK | X_OK) != 0) return clip(t) + ": the folder cannot be read (" + std::strerror(errno) + ")";
    return {};
  }
  // The rule and the words of fs::read_file, which reads it later: a regular
  // file that can be opened ("a directory, not a file", "not a regular file
  // (a named pipe)", "permission denied").
  const std::string why = fs::unreadable_reason(t);
  return why.empty() ? std::string() : clip(t) + ": " + why;
}

}  // namespace

CLI::Validator existing_file() {
  return CLI::Validator([](std::string& t) { return input_problem(t, false); }, "FILE");
}

CLI::Validator existing_dir() {
  return CLI::Validator([](std::string& t) { return input_problem(t, true); }, "DIR");
}

CLI::Validator one_of(std::vector<std::string> names) {
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  return CLI::Validator(
      [names, list](std::string& t) -> std::string {
        for (const auto& n : names)
          if (t == n) return {};
        return "expected one of " + list + got(t);
      },
      "");
}

CLI::Validator shape_classes() {
  return CLI::Validator(
      [](std::string& t) -> std::string {
        if (t == "auto" || t == "off") return {};
        const std::optional<int64_t> n = parse_whole(t);
        if (n && *n >= 1 && *n <= 64) return {};
        return "expected auto, off or a number of classes from 1 to 64" + got(t);
      },
      "");
}

CLI::Validator screen_factor() {
  return CLI::Validator(
      [](std::string& t) -> std::string {
        const std::optional<double> x = parse_finite(t);
        if (x && (*x == 0 || (*x >= 1 && *x <= 1000))) return {};
        return "expected 0 (off) or a factor from 1 to 1000" + got(t);
      },
      "");
}

CLI::Validator arch() {
  return CLI::Validator(
      [](std::string& t) -> std::string {
        const std::vector<int> archs = cuda::supported_archs();
        std::string list;
        for (int a : archs) list += (list.empty() ? "sm_" : ", sm_") + std::to_string(a);
        static const std::regex form("sm_([0-9]{2,3})[af]?");
        std::smatch m;
        if (!std::regex_match(t, m, form)) {
          const std::string why = t.rfind("compute_", 0) == 0 ? " (a virtual architecture: give the real one, sm_XY)"
                                                               : "";
          return "expected a real GPU architecture sm_XY (this NVRTC: " + list + ")" + got(t) + why;
        }
        const int n = std::stoi(m[1].str());
        if (!archs.empty() && std::find(archs.begin(), archs.end(), n) == archs.end())
          return "sm_" + m[1].str() + " is not an architecture this NVRTC compiles for (" + list + ")";
        return {};
      },
      "sm_XY");
}

}  // namespace check

namespace {

/// The nearest existing folder at or above `p` (for a path that is created).
std::filesystem::path existing_parent(std::filesystem::path p) {
  std::error_code ec;
  p = std::filesystem::absolute(p, ec);
  while (!p.empty() && !std::filesystem::exists(p, ec)) {
    if (p == p.parent_path()) break;
    p = p.parent_path();
  }
  return p;
}

void check_writable_parent(const std::string& option, const std::filesystem::path& path) {
  const std::filesystem::path parent = existing_parent(path.parent_path().empty() ? "." : path.parent_path());
  std::error_code ec;
  if (!std::filesystem::is_directory(parent, ec))
    throw UsageError("kopt.cli.014", option + " " + clip(path.string()) + ": cannot be created: " +
                                         clip(parent.string()) + " is not a folder");
  if (::access(parent.c_str(), W_OK | X_OK) != 0)
    throw UsageError("kopt.cli.014", option + " " + clip(path.string()) + ": cannot be created: the folder " +
                                         clip(parent.string()) + " is not writable (" + std::strerror(errno) + ")");
  // access() answers yes to root and knows nothing of read-only mounts or
  // folders such as /proc: create (and remove) a file there to be sure.
  const std::filesystem::path probe = parent / (".kopt-probe." + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int e = errno;
    if (e != EEXIST)
      throw UsageError("kopt.cli.014", option + " " + clip(path.string()) + ": cannot be created: no file can be " +
                                           "created in the folder " + clip(parent.string()) + " (" + std::strerror(e) + ")");
    return;
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace

void check_output_file(const std::string& option, const std::filesystem::path& path) {
  if (path.empty()) throw UsageError("kopt.cli.014", option + ": expected a file name, got an empty string");
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(st))
    throw UsageError("kopt.cli.014", option + " " + clip(path.string()) + ": is a directory; give a file name");
  if (std::filesystem::exists(st)) {
    if (!std::filesystem::is_regular_file(st))
      throw UsageError("kopt.cli.014", option + " " + clip(path.string()) + ": is not a regular file");
    if (::access(path.c_str(), W_OK) != 0)
      throw UsageError("kopt.cli.014",
                       option + " " + clip(path.string()) + ": is not writable (" + std::strerror(errno) + ")");
  }
  check_writable_parent(option, path);  // the file is replaced through a temporary file beside it
}

void check_output_dir(const std::string& option, const std::filesystem::path& path) {
  if (path.empty()) throw UsageError("kopt.cli.014", option + ": expected a folder, got an empty string");
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (std::filesystem::exists(st)) {
    if (!std::filesystem::is_directory(st))
      throw UsageError("kopt.cli.014", option + " " + clip(path.string()) + ": exists and is not a folder");
    if (::access(path.c_str(), W_OK | X_OK) != 0)
      throw UsageError("kopt.cli.014",
                       option + " " + clip(path.string()) + ": the folder is not writable (" + std::strerror(errno) + ")");
    return;
  }
  check_writable_parent(option, path);
}

int shape_classes_value(const std::string& text) {
  if (text == "auto") return -1;
  if (text == "off") return 0;
  return static_cast<int>(parse_whole(text).value_or(-1));
}

unsigned max_compile_threads() { return max_pool_threads(); }

// --- environment -------------------------------------------------------------

CLI::Option* Environment::add_device(CLI::App& sub) {
  return sub.add_option("--device", device, "CUDA device ordinal")->check(check::whole(0, 1023));
}

CLI::Option* Environment::add_device_from_ctest(CLI::App& sub) {
  return sub.add_flag("--device-from-ctest", device_from_ctest,
                      "Under ctest --resource-spec-file: run on the GPU CTest gave this test "
                      "(CTEST_RESOURCE_GROUP_0_GPUS), instead of --device");
}

void Environment::resolve_device(const std::string& command) {
  if (!device_from_ctest) return;
  const auto gpu = model::ctest_gpu_from_environment();  // UsageError kopt.ctest.00x
  if (!gpu) return;                                      // no resource spec file: --device
  device = gpu->ordinal;
  std::cerr << "kopt " << command << ": CTest gave this test GPU " << gpu->ordinal << " ("
            << "CTEST_RESOURCE_GROUP_0_GPUS=" << gpu->value << "): --device " << gpu->ordinal << "\n";
}

CLI::Option* Environment::add_cache_dir(CLI::App& sub, const std::string& help) {
  return sub.add_option("--cache-dir", cache_dir, help)->check(check::not_empty());
}

CLI::Option* Environment::add_arch(CLI::App& sub, const std::string& help) {
  return sub.add_option("--arch", arch, help)->check(check::arch());
}

CLI::Option* Environment::add_quiet(CLI::App& sub, const std::string& help) {
  return sub.add_flag("-q,--quiet", quiet, help);
}

void RunFolderIo::add(CLI::App& sub, const std::string& dir_help, const CLI::Validator& dir_check,
                      const std::string& out_flags, const std::string& out_help, const std::string& quiet_help) {
  sub.add_option("run_dir", run_dir, dir_help)->required()->check(dir_check);
  sub.add_option(out_flags, out, out_help)->check(check::not_empty());
  sub.add_flag("-q,--quiet", quiet, quiet_help);
}

CLI::Option* Environment::add_compile_timeout(CLI::App& sub) {
  return sub
      .add_option("--compile-timeout", compile_timeout_s,
                  "Seconds one NVRTC compile may take: each runs in a compiler process that is stopped after "
                  "this long, and the candidate is recorded as a compile error (0: compile in this process, "
                  "no limit)")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
}

std::vector<std::string> Environment::compile_argv() const {
  if (!(compile_timeout_s > 0)) return {};
  return {self_exe().string(), "compile-worker"};
}

std::filesystem::path Environment::cache_path() const {
  if (!cache_dir.empty()) return cache_dir;
  if (const char* x = std::getenv("KOPT_CACHE_DIR")) return x;
  if (const char* x = std::getenv("XDG_CACHE_HOME")) return std::filesystem::path(x) / "kopt";
  if (const char* h = std::getenv("HOME")) return std::filesystem::path(h) / ".cache" / "kopt";
  return std::filesystem::temp_directory_path() / "kopt-cache";
}

model::WorkerPlan Environment::worker_plan(const std::string& command, const std::string& devices,
                                           const std::string& launcher, bool device_given) const {
  model::WorkerPlan plan;
  plan.devices = {device};
  if (!devices.empty()) {
    if (device_given)
      throw UsageError("kopt.pool.004", "--device and --devices: give one of them (--devices " + clip(devices) +
                                            " lists every GPU)");
    plan.devices.clear();
    std::stringstream items(devices);
    for (std::string item; std::getline(items, item, ',');) {
      const std::optional<int64_t> n =
          item.size() <= 4 && item.find_first_not_of("0123456789") == std::string::npos ? parse_whole(item)
                                                                                         : std::nullopt;
      if (!n || *n > 1023)
        throw UsageError("kopt.pool.001", "--devices: '" + clip(item) + "' is not a device number from 0 to 1023 "
                                          "(give them as 0,1,2)");
      if (plan.devices.size() == model::WorkerPlan::kMaxWorkers)
        throw UsageError("kopt.pool.001", "--devices: more than " + std::to_string(model::WorkerPlan::kMaxWorkers) +
                                              " workers (each one is a process and a thread)");
      plan.devices.push_back(static_cast<int>(*n));
    }
    if (devices.back() == ',')
      throw UsageError("kopt.pool.001", "--devices: an empty item at the end of '" + clip(devices) + "'");
  }
  if (!launcher.empty()) plan.launcher = eval::split_launcher(launcher);
  if (command.empty()) {
    plan.command = {self_exe().string(), "worker", "--device", "{device}"};
  } else {
    std::istringstream words(command);
    for (std::string w; words >> w;) plan.command.push_back(w);
  }
  eval::plan_workers(plan);  // a launcher not on PATH, a device twice: refused before any work
  return plan;
}

std::string Budget::default_text() { return "default evals=" + std::to_string(model::Budget::kDefaultEvaluations); }

std::string Budget::bare_text() { return "a bare number N means evals=N and Mm minutes=M, e.g. 40 or 40,10m"; }

model::Budget Budget::default_budget() {
  model::Budget b;
  b.evaluations = model::Budget::kDefaultEvaluations;
  return b;
}

CLI::Option* Budget::add_budget(CLI::App& sub, const std::string& help) {
  return sub.add_option("--budget", text, help)->check(check::not_empty());
}

CLI::Option* Budget::add_max_iterations(CLI::App& sub) {
  return sub.add_option("--max-iterations", max_iterations, "Same as --budget evals=N")
      ->check(check::whole(1, model::Budget::kMaxCount));
}

CLI::Option* Budget::add_token_budget(CLI::App& sub) {
  return sub.add_option("--token-budget", token_budget, "Agent: total tokens, the same as --budget tokens=T (0: no limit)")
      ->check(check::whole(0, model::Budget::kMaxTokens));
}

model::Budget Budget::value(const model::Budget& fallback) const {
  model::Budget b;
  if (!text.empty())
    b = model::parse_budget(text, "--budget");
  else if (max_iterations == 0)
    b = fallback;
  if (max_iterations > 0) b.evaluations = max_iterations;
  if (token_budget > 0) b.tokens = token_budget;
  return b;
}

}  // namespace kopt::cli
