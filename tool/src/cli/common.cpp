#include "cli/common.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <sstream>

#include "tune/driver.h"
#include "util/error.h"

namespace kopt::cli {

std::filesystem::path self_exe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path("kopt") : p;
}

CLI::Option* Environment::add_device(CLI::App& sub) {
  return sub.add_option("--device", device, "CUDA device ordinal");
}

CLI::Option* Environment::add_cache_dir(CLI::App& sub, const std::string& help) {
  return sub.add_option("--cache-dir", cache_dir, help);
}

CLI::Option* Environment::add_arch(CLI::App& sub, const std::string& help) {
  return sub.add_option("--arch", arch, help);
}

CLI::Option* Environment::add_quiet(CLI::App& sub, const std::string& help) {
  return sub.add_flag("-q,--quiet", quiet, help);
}

std::filesystem::path Environment::cache_path() const {
  if (!cache_dir.empty()) return cache_dir;
  if (const char* x = std::getenv("KOPT_CACHE_DIR")) return x;
  if (const char* x = std::getenv("XDG_CACHE_HOME")) return std::filesystem::path(x) / "kopt";
  if (const char* h = std::getenv("HOME")) return std::filesystem::path(h) / ".cache" / "kopt";
  return std::filesystem::temp_directory_path() / "kopt-cache";
}

std::vector<std::string> Environment::worker_argv(const std::string& command) const {
  if (command.empty()) return {self_exe().string(), "worker", "--device", std::to_string(device)};
  std::vector<std::string> argv;
  std::istringstream words(command);
  for (std::string w; words >> w;) argv.push_back(w);
  return argv;
}

std::string Budget::default_text() { return "default evals=" + std::to_string(kDefaultEvaluations); }

CLI::Option* Budget::add_budget(CLI::App& sub, const std::string& help) {
  return sub.add_option("--budget", text, help);
}

CLI::Option* Budget::add_max_iterations(CLI::App& sub) {
  return sub.add_option("--max-iterations", max_iterations, "Same as --budget evals=N");
}

namespace {

/// Sets one budget item ("evals=200", "200", "10m") on `o`.
void apply_item(const std::string& item, tune::OptimizeOptions& o) {
  auto eq = item.find('=');
  std::string key = eq == std::string::npos ? "" : item.substr(0, eq);
  std::string value = eq == std::string::npos ? item : item.substr(eq + 1);
  if (key.empty() && !value.empty() && (value.back() == 'm')) {
    key = "minutes";
    value.pop_back();
  } else if (key.empty()) {
    key = "evals";
  }
  try {
    size_t used = 0;
    if (key == "evals" || key == "evaluations") {
      o.max_evaluations = std::stoll(value, &used);
    } else if (key == "minutes" || key == "min") {
      o.max_minutes = std::stod(value, &used);
    } else if (key == "patience") {
      o.patience = std::stoll(value, &used);
    } else {
      throw UsageError("kopt.cli.004", "--budget: unknown key '" + key + "' (known: evals, minutes, patience)");
    }
    if (used != value.size()) throw std::invalid_argument("trailing");
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception&) {
    throw UsageError("kopt.cli.005", "--budget: '" + item + "' needs a number (e.g. evals=200,minutes=10)");
  }
}

}  // namespace

void Budget::apply(tune::OptimizeOptions& o) const {
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) apply_item(item, o);
  if (max_iterations > 0) o.max_evaluations = max_iterations;
  if (text.empty() && max_iterations == 0) o.max_evaluations = kDefaultEvaluations;
}

}  // namespace kopt::cli
