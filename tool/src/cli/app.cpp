#include "cli/app.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "util/error.h"
#include "util/interrupt.h"
#include "util/text.h"

namespace kopt::cli {
namespace {

/// An error as one line on stderr: "kopt: <message>", the message clipped
/// (no message may flood the terminal, whatever it echoes).
void print_error(const std::string& message) { std::cerr << "kopt: " << clip(message, 2000) << "\n"; }

/// An error that ends a command after SIGINT/SIGTERM was received (a command
/// that winds down on it, `optimize`, returns 130/143 itself): it may be the
/// signal's doing, and the exit code says that the run was stopped.
int code_after(int code) {
  const int sig = util::interrupt_signal();
  return sig ? util::interrupt_exit_code(sig) : code;
}

/// Runs the command; an exception becomes its message on stderr and an exit code.
int run_reporting_errors(Command& command) {
  try {
    return command.run();
  } catch (const util::Interrupted& e) {
    print_error(e.what());
    return util::interrupt_exit_code(e.signal());
  } catch (const NoDeviceError& e) {
    print_error(e.what());
    return code_after(kNoDevice);
  } catch (const SpecError& e) {
    print_error(e.what());
    return code_after(kUsage);
  } catch (const UsageError& e) {
    print_error(e.what());
    return code_after(kUsage);
  } catch (const std::exception& e) {
    print_error(e.what());
    return code_after(kEnvironment);
  }
}

/// A command-line error CLI11 found, as one line with an id:
/// "kopt: [kopt.cli.010] --top: expected ... (kopt optimize --help)".
int report_parse_error(const CLI::ParseError& e, const std::string& command) {
  const char* id = "kopt.cli.013";  // anything else (options that exclude each other, ...)
  if (dynamic_cast<const CLI::ValidationError*>(&e) || dynamic_cast<const CLI::ConversionError*>(&e) ||
      dynamic_cast<const CLI::ArgumentMismatch*>(&e))
    id = "kopt.cli.010";
  else if (dynamic_cast<const CLI::ExtrasError*>(&e))
    id = "kopt.cli.011";
  else if (dynamic_cast<const CLI::RequiredError*>(&e))
    id = "kopt.cli.012";
  print_error(std::string("[") + id + "] " + e.what() + " (see kopt " + (command.empty() ? "" : command + " ") +
              "--help)");
  return kUsage;
}

}  // namespace

App::App() {
  commands_.push_back(make_devices_command());
  commands_.push_back(make_evaluate_command());
  commands_.push_back(make_optimize_command());
  commands_.push_back(make_generate_command());
  commands_.push_back(make_bench_command());
  commands_.push_back(make_export_command());
  commands_.push_back(make_worker_command());
}

int App::run(int argc, char** argv) {
  CLI::App app{"kopt - KernelOptimizer: compile, check, time and tune single CUDA kernels.\n"
               "Exit codes: 0 ok, 1 candidate rejected, 2 usage or spec error, 3 environment error, "
               "77 no CUDA device, 130/143 stopped by SIGINT/SIGTERM."};
  app.set_version_flag("--version", std::string("kopt ") + KOPT_VERSION);
  app.require_subcommand(1);
  std::vector<CLI::App*> subs;
  for (const auto& c : commands_) {
    subs.push_back(app.add_subcommand(c->name(), c->description()));
    c->add_options(*subs.back());
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::string command;
    for (size_t i = 0; i < commands_.size(); ++i)
      if (subs[i]->parsed()) command = commands_[i]->name();
    if (command.empty()) {  // CLI11 only says "A subcommand is required"
      std::string names;
      for (const auto& c : commands_) names += std::string(names.empty() ? "" : ", ") + c->name();
      if (argc < 2)
        print_error("[kopt.cli.012] give a subcommand: " + names + " (see kopt --help)");
      else
        print_error(std::string("[kopt.cli.011] ") + (argv[1][0] == '-' ? "unknown option " : "unknown subcommand ") +
                    quote(argv[1]) + " (subcommands: " + names + "; see kopt --help)");
      return kUsage;
    }
    return report_parse_error(e, command);
  }
  for (size_t i = 0; i < commands_.size(); ++i)
    if (*subs[i]) return run_reporting_errors(*commands_[i]);
  return kUsage;
}

}  // namespace kopt::cli
