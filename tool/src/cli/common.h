// What several subcommands share: the environment they run in (device, NVRTC
// cache, architecture, quiet), how the GPU worker is started, and the search
// budget. Each default is applied here and nowhere else.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace kopt::tune {
struct OptimizeOptions;
}

namespace kopt::cli {

/// This executable (/proc/self/exe; "kopt" when that cannot be read).
std::filesystem::path self_exe();

/// The environment options. Each add_* declares one option on a subcommand,
/// where the subcommand wants it in its help, and returns it (e.g. for
/// capture_default_str()); subcommands whose help words differ pass their own.
struct Environment {
  static constexpr const char* kCacheDirHelp = "NVRTC compile cache (default: $KOPT_CACHE_DIR or ~/.cache/kopt)";

  int device = 0;         // --device N: CUDA device ordinal
  std::string cache_dir;  // --cache-dir DIR (empty: see cache_path())
  std::string arch;       // --arch sm_XY (empty: the device's)
  bool quiet = false;     // -q,--quiet: no progress on stderr

  CLI::Option* add_device(CLI::App& sub);
  CLI::Option* add_cache_dir(CLI::App& sub, const std::string& help = kCacheDirHelp);
  CLI::Option* add_arch(CLI::App& sub, const std::string& help);
  CLI::Option* add_quiet(CLI::App& sub, const std::string& help = "No progress on stderr");

  /// --cache-dir, else $KOPT_CACHE_DIR, else $XDG_CACHE_HOME/kopt, else
  /// ~/.cache/kopt, else <temp dir>/kopt-cache.
  std::filesystem::path cache_path() const;

  /// How to start the GPU worker: `<this kopt> worker --device N`; or, when
  /// `command` is not empty (optimize's --worker-command), its
  /// whitespace-separated words.
  std::vector<std::string> worker_argv(const std::string& command = "") const;
};

/// The search budget: --budget "evals=200,minutes=10,patience=20" (any
/// subset), "200" (evaluations) or "10m" (minutes); optimize's
/// --max-iterations N is the same as evals=N and wins over it.
struct Budget {
  /// Evaluations when neither --budget nor --max-iterations is given (docs/cli.md).
  static constexpr int64_t kDefaultEvaluations = 100;

  std::string text;            // --budget
  int64_t max_iterations = 0;  // --max-iterations (0: not given)

  /// "default evals=100", for the help texts.
  static std::string default_text();

  CLI::Option* add_budget(CLI::App& sub, const std::string& help);
  CLI::Option* add_max_iterations(CLI::App& sub);

  /// Sets o.max_evaluations, o.max_minutes and o.patience. Throws UsageError
  /// (kopt.cli.004 unknown key, kopt.cli.005 not a number).
  void apply(tune::OptimizeOptions& o) const;
};

}  // namespace kopt::cli
