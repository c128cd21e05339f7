// What several subcommands share: the environment they run in (device, NVRTC
// cache, architecture, quiet), how the GPU worker is started, and the search
// budget. Each default is applied here and nowhere else.
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "model/budget.h"
#include "model/worker_plan.h"
#include "driver/driver.h"
#include "util/numbers.h"

namespace CLI {
class App;
class Option;
class Validator;
}  // namespace CLI

namespace kopt::cli {

/// This executable (/proc/self/exe; "kopt" when that cannot be read).
std::filesystem::path self_exe();

// ---------------------------------------------------------------------------
// Checking option values. Every option that takes a value has one of these
// validators (->check(...)): it accepts the whole argument or rejects it at
// parse time with a one-line reason; CLI11 puts the option's name in front and
// App prints "kopt: [kopt.cli.010] --top: expected ..." and exits 2. The user's
// text is echoed clipped (util/text.h).

/// The number forms (parse_whole, parse_unsigned, parse_finite) are util/numbers.h's.

namespace check {
/// A whole number from `lo` to `hi`.
CLI::Validator whole(int64_t lo, int64_t hi = std::numeric_limits<int64_t>::max());
/// A whole number from 0 to 2^64-1 (the seed; a negative one is an error, not wrapped).
CLI::Validator unsigned_whole();
/// A finite number x with lo < x (lo <= x when `lo_inclusive`) and x <= hi.
CLI::Validator finite(double lo, bool lo_inclusive, double hi, bool hi_inclusive = true);
/// Not empty and not only spaces (names, paths).
CLI::Validator not_empty();
/// A C identifier (generate's --name: file names and a C++ namespace).
CLI::Validator identifier();
/// A kernel's entry point: a C identifier, optionally qualified (ns::k) and
/// with template arguments (k<128, 4>), as NVRTC's name expressions take it.
CLI::Validator entry_name();
/// An input file: it exists, is a regular file (not a directory, a device
/// or a FIFO) and can be read. The reason names what is wrong: not found,
/// a folder on the way that cannot be searched, a directory, ...
CLI::Validator existing_file();
/// An existing folder that can be read (--resume, --from-run).
CLI::Validator existing_dir();
/// One of `names` (e.g. --strategy).
CLI::Validator one_of(std::vector<std::string> names);
/// --shape-classes: "auto", "off" or a whole number from 1 to 64.
CLI::Validator shape_classes();
/// --screen-factor: 0 (off) or a finite factor from 1 to 1000.
CLI::Validator screen_factor();
/// A real GPU architecture NVRTC can compile for: sm_XY with XY one of
/// cuda::supported_archs(), optionally with the a/f suffix (sm_90a).
CLI::Validator arch();
}  // namespace check

/// Output files and folders, checked before any work so that results are
/// never computed and then lost. Throws UsageError kopt.cli.014 naming
/// `option` when `path` is empty, is a directory (for a file) or not a
/// directory (for a folder), or cannot be written; a missing path is fine when
/// its nearest existing parent is a writable folder (it is created).
void check_output_file(const std::string& option, const std::filesystem::path& path);
void check_output_dir(const std::string& option, const std::filesystem::path& path);

/// --shape-classes's value as driver::OptimizeOptions::shape_classes takes it
/// ("auto" -1, "off" 0, else the number); the validator has checked it.
int shape_classes_value(const std::string& text);

/// The most --compile-threads can ask for: 4x the hardware threads
/// (util/thread_pool.h max_pool_threads()).
unsigned max_compile_threads();

/// The environment options. Each add_* declares one option on a subcommand,
/// where the subcommand wants it in its help, and returns it (e.g. for
/// capture_default_str()); subcommands whose help words differ pass their own.
struct Environment {
  static constexpr const char* kCacheDirHelp = "NVRTC compile cache (default: $KOPT_CACHE_DIR or ~/.cache/kopt)";

  int device = 0;         // --device N: CUDA device ordinal
  bool device_from_ctest = false;  // --device-from-ctest: CTest's GPU wins over --device
  std::string cache_dir;  // --cache-dir DIR (empty: see cache_path())
  std::string arch;       // --arch sm_XY (empty: the device's)
  bool quiet = false;     // -q,--quiet: no progress on stderr
  /// --compile-timeout SECONDS: each compile in a compiler process, stopped
  /// after this long (0: compile in this process, without a limit).
  double compile_timeout_s = driver::kDefaultCompileTimeoutS;

  CLI::Option* add_device(CLI::App& sub);
  /// --device-from-ctest (evaluate, bench: the tests optimize_kernel() registers).
  CLI::Option* add_device_from_ctest(CLI::App& sub);
  /// With --device-from-ctest, under `ctest --resource-spec-file`: sets
  /// `device` to the GPU CTest gave the test (CTEST_RESOURCE_GROUP_0_GPUS,
  /// model/ctest_resources.h) and says so on stderr, one line naming
  /// `command`; else leaves --device alone. Throws UsageError kopt.ctest.00x
  /// for a resource environment it cannot read.
  void resolve_device(const std::string& command);
  CLI::Option* add_cache_dir(CLI::App& sub, const std::string& help = kCacheDirHelp);
  CLI::Option* add_arch(CLI::App& sub, const std::string& help);
  CLI::Option* add_quiet(CLI::App& sub, const std::string& help = "No progress on stderr");
  CLI::Option* add_compile_timeout(CLI::App& sub);
  /// `<this kopt> compile-worker` while --compile-timeout is above 0, else
  /// empty (cuda::CompilerOptions::helper_argv).
  std::vector<std::string> compile_argv() const;

  /// --cache-dir, else $KOPT_CACHE_DIR, else $XDG_CACHE_HOME/kopt, else
  /// ~/.cache/kopt, else <temp dir>/kopt-cache.
  std::filesystem::path cache_path() const;

  /// Where and how the GPU workers are started (model/worker_plan.h): on
  /// --device, or on each device of `devices` (optimize's --devices
  /// "0,1,..."; at most WorkerPlan::kMaxWorkers), each as `<this kopt>
  /// worker --device {device}` or, when `command` is not empty
  /// (--worker-command, testing), its whitespace-separated words; through
  /// the words of `launcher` (--worker-launcher) when it is not empty.
  /// Checked now, before any work (eval::plan_workers): UsageError
  /// kopt.pool.001 (a bad --devices list), kopt.pool.002 (a launcher not on
  /// PATH, an open quote), kopt.pool.003 (a device twice without a launcher),
  /// kopt.pool.004 (--device with --devices: `device_given`).
  model::WorkerPlan worker_plan(const std::string& command = "", const std::string& devices = "",
                                const std::string& launcher = "", bool device_given = false) const;
};

/// The options of a command that reads one run folder and writes what it
/// makes of it (report, export): the folder, an output file and -q.
struct RunFolderIo {
  std::string run_dir;  // RUN_DIR (positional, required)
  std::string out;      // the output file (empty: the command's default)
  bool quiet = false;   // -q,--quiet

  /// Declares, in this order: RUN_DIR (help `dir_help`, checked by
  /// `dir_check`), the output file as `out_flags` (e.g. "-o,--out"; help
  /// `out_help`, check::not_empty()) and -q,--quiet (help `quiet_help`).
  void add(CLI::App& sub, const std::string& dir_help, const CLI::Validator& dir_check, const std::string& out_flags,
           const std::string& out_help, const std::string& quiet_help);
};

/// The budget options (model/budget.h): --budget "evals=200,minutes=10,
/// patience=20" (any subset; model::parse_budget's grammar), and the
/// shorthands --max-iterations N (evals=N, winning over it) and optimize's
/// --token-budget T (tokens=T, likewise).
struct Budget {
  std::string text;            // --budget
  int64_t max_iterations = 0;  // --max-iterations (0: not given)
  int64_t token_budget = 0;    // --token-budget (0: not given)

  /// "default evals=100", for the help texts.
  static std::string default_text();
  /// What a bare item means (model::parse_budget): "a bare number N means
  /// evals=N and Mm minutes=M, e.g. ...", for the options' help.
  static std::string bare_text();

  CLI::Option* add_budget(CLI::App& sub, const std::string& help);
  CLI::Option* add_max_iterations(CLI::App& sub);
  CLI::Option* add_token_budget(CLI::App& sub);

  /// The budget the options say: --budget parsed (UsageError kopt.cli.004,
  /// kopt.cli.005, kopt.cli.008), else, without --max-iterations either,
  /// `fallback` (evals=model::Budget::kDefaultEvaluations; --resume: the
  /// run's); then the shorthands on top.
  model::Budget value(const model::Budget& fallback = default_budget()) const;
  /// evals=model::Budget::kDefaultEvaluations.
  static model::Budget default_budget();
};

}  // namespace kopt::cli
