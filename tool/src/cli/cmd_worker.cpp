// `kopt worker`: internal, the GPU worker process that the supervisor starts
// (JSON lines on stdin/stdout; eval/worker.h and eval/protocol.h).
#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "cli/common.h"
#include "cuda/nvrtc.h"
#include "eval/worker.h"

namespace kopt::cli {
namespace {

class WorkerCommand final : public Command {
 public:
  WorkerCommand()
      : Command("worker",
                "Internal: the GPU worker process (JSON lines on stdin/stdout)") {}
  void add_options(CLI::App& sub) override { env_.add_device(sub); }

  int run() override {
    eval::WorkerOptions o;
    o.device = env_.device;
    return eval::run_worker(o);
  }

 private:
  Environment env_;  // only --device
};

/// `kopt compile-worker`: one compile in a process of its own, so that the
/// tool can stop a compile that takes too long (--compile-timeout).
class CompileWorkerCommand final : public Command {
 public:
  CompileWorkerCommand()
      : Command("compile-worker",
                "Internal: one NVRTC compile (--request FILE) into the compile cache (--cache-dir DIR)") {}
  void add_options(CLI::App& sub) override {
    sub.add_option("--request", request_, "The compile request (JSON, written by kopt)")->required();
    sub.add_option("--cache-dir", cache_dir_, "The compile cache the result goes to")->required();
  }
  int run() override { return cuda::run_compile_worker(request_, cache_dir_); }

 private:
  std::string request_, cache_dir_;
};

}  // namespace

std::unique_ptr<Command> make_worker_command() { return std::make_unique<WorkerCommand>(); }
std::unique_ptr<Command> make_compile_worker_command() { return std::make_unique<CompileWorkerCommand>(); }

}  // namespace kopt::cli
