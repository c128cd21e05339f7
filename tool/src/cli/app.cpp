#include "cli/app.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "util/error.h"

namespace kopt::cli {
namespace {

/// Runs the command; an exception becomes its message on stderr and an exit code.
int run_reporting_errors(Command& command) {
  try {
    return command.run();
  } catch (const NoDeviceError& e) {
    std::cerr << "kopt: " << e.what() << "\n";
    return kNoDevice;
  } catch (const SpecError& e) {
    std::cerr << "kopt: " << e.what() << "\n";
    return kUsage;
  } catch (const UsageError& e) {
    std::cerr << "kopt: " << e.what() << "\n";
    return kUsage;
  } catch (const std::exception& e) {
    std::cerr << "kopt: " << e.what() << "\n";
    return kEnvironment;
  }
}

}  // namespace

App::App() {
  commands_.push_back(make_devices_command());
  commands_.push_back(make_evaluate_command());
  commands_.push_back(make_optimize_command());
  commands_.push_back(make_generate_command());
  commands_.push_back(make_bench_command());
  commands_.push_back(make_worker_command());
}

int App::run(int argc, char** argv) {
  CLI::App app{"kopt - KernelOptimizer: compile, check, time and tune single CUDA kernels.\n"
               "Exit codes: 0 ok, 1 candidate rejected, 2 usage or spec error, 3 environment error, "
               "77 no CUDA device."};
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
    return app.exit(e) == 0 ? kOk : kUsage;
  }
  for (size_t i = 0; i < commands_.size(); ++i)
    if (*subs[i]) return run_reporting_errors(*commands_[i]);
  return kUsage;
}

}  // namespace kopt::cli
