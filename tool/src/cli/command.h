// One `kopt` subcommand: its name and help line, its options, and what it does.
//
// Every subcommand is a Command in its own cmd_<name>.cpp; App (app.cpp)
// registers them, parses the command line and runs the one given. A command
// keeps its options as members with in-class defaults, next to the help text
// that documents them (add_options); run() turns them into the library's
// options and returns the exit code.
//
// Exit codes (documented in docs/cli.md "Exit codes"):
//   0  success (every candidate evaluated was accepted)
//   1  a candidate was rejected (its verdict is in the output)
//   2  usage error, spec error, unreadable file
//   3  environment error (driver failure, worker could not start)
//   77 no CUDA device (CTest's SKIP_RETURN_CODE); non-GPU work was still done
#pragma once

#include <memory>

namespace CLI {
class App;
}

namespace kopt::cli {

enum ExitCode { kOk = 0, kRejected = 1, kUsage = 2, kEnvironment = 3, kNoDevice = 77 };

class Command {
 public:
  /// `name`: the subcommand's word (`kopt <name>`); `description`: its line
  /// in `kopt --help`. Both are string literals (kept, not copied).
  Command(const char* name, const char* description) : name_(name), description_(description) {}
  virtual ~Command() = default;
  const char* name() const { return name_; }
  const char* description() const { return description_; }
  /// Declares the options on this command's subcommand (`sub` outlives run()).
  virtual void add_options(CLI::App& sub) = 0;
  /// Runs after a successful parse; returns the exit code. May throw: App maps
  /// NoDeviceError to 77, SpecError and UsageError to 2, anything else to 3.
  virtual int run() = 0;

 private:
  const char* name_;
  const char* description_;
};

// The subcommands, one a file, in the order `kopt --help` lists them.
std::unique_ptr<Command> make_devices_command();   // cmd_devices.cpp
std::unique_ptr<Command> make_evaluate_command();  // cmd_evaluate.cpp
std::unique_ptr<Command> make_optimize_command();  // cmd_optimize.cpp
std::unique_ptr<Command> make_generate_command();  // cmd_generate.cpp
std::unique_ptr<Command> make_bench_command();     // cmd_bench.cpp
std::unique_ptr<Command> make_export_command();    // cmd_export.cpp
std::unique_ptr<Command> make_report_command();    // cmd_report.cpp
std::unique_ptr<Command> make_replay_command();    // cmd_replay.cpp
std::unique_ptr<Command> make_worker_command();    // cmd_worker.cpp
std::unique_ptr<Command> make_compile_worker_command();  // cmd_worker.cpp

}  // namespace kopt::cli
