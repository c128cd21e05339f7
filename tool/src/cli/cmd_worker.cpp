// `kopt worker`: internal, the GPU worker process that the supervisor starts
// (JSON lines on stdin/stdout; eval/worker.h and eval/protocol.h).
#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "cli/common.h"
#include "eval/worker.h"

namespace kopt::cli {
namespace {

class WorkerCommand final : public Command {
 public:
  const char* name() const override { return "worker"; }
  const char* description() const override {
    return "Internal: the GPU worker process (JSON lines on stdin/stdout)";
  }
  void add_options(CLI::App& sub) override { env_.add_device(sub); }

  int run() override {
    eval::WorkerOptions o;
    o.device = env_.device;
    return eval::run_worker(o);
  }

 private:
  Environment env_;  // only --device
};

}  // namespace

std::unique_ptr<Command> make_worker_command() { return std::make_unique<WorkerCommand>(); }

}  // namespace kopt::cli
