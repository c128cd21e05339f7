// `kopt generate`: what the CMake module's optimize_kernel() runs. Writes
// <out-dir>/<name>.cu and <name>_launch.h from a tuning run on this GPU, else
// the tuning cache, else the initial kernel (gen/generate.h).
#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "cli/common.h"
#include "gen/generate.h"

namespace kopt::cli {
namespace {

class GenerateCommand final : public Command {
 public:
  const char* name() const override { return "generate"; }
  const char* description() const override {
    return "For the CMake module: write <out-dir>/<name>.cu and <name>_launch.h from a tuning run on "
           "this GPU, else the tuning cache, else the initial kernel";
  }
  void add_options(CLI::App& sub) override;
  int run() override;

 private:
  gen::GenerateOptions o_;  // defaults in gen/generate.h and tune/driver.h
  Environment env_;         // --device, --cache-dir, --quiet
  Budget budget_;           // --budget
};

void GenerateCommand::add_options(CLI::App& sub) {
  tune::OptimizeOptions& t = o_.optimize;  // the tuning run
  sub.add_option("--spec", t.spec, "Workload spec (JSON)")->required()->check(CLI::ExistingFile);
  sub.add_option("--name", o_.name, "Kernel name (file names, header namespace)")->required();
  sub.add_option("--out-dir", o_.out_dir, "Output folder")->required();
  sub.add_option("--cache-file", o_.cache_file, "Tuning cache JSON (read; updated after tuning)");
  sub.add_option("--template", t.template_source, "Tunable template .cu")->check(CLI::ExistingFile);
  sub.add_option("--initial-kernel", t.initial_kernel, "Initial kernel .cu")->check(CLI::ExistingFile);
  sub.add_option("--reference", t.reference, "Reference kernel .cu")->check(CLI::ExistingFile);
  sub.add_option("--strategy", t.strategy, "Search strategy");
  budget_.add_budget(sub, "evals=N,minutes=M,patience=P (" + Budget::default_text() + ")");
  sub.add_option("--seed", t.seed, "Search seed");
  env_.add_device(sub);
  env_.add_cache_dir(sub, "NVRTC compile cache");
  sub.add_option("--target-gpu", o_.target_gpu, "GPU name to take from the cache without a GPU (env KOPT_TARGET_GPU)")
      ->envname("KOPT_TARGET_GPU");
  sub.add_flag("--require-gpu", o_.require_gpu, "Fail instead of falling back when there is no GPU (env KOPT_REQUIRE_GPU)")
      ->envname("KOPT_REQUIRE_GPU");
  sub.add_option("--from-run", o_.from_run,
                 "Take the kernel (and its shape-specialised variants) from this finished run folder")
      ->check(CLI::ExistingDirectory);
  sub.add_flag("--no-specialize{false}", t.specialize,
               "One kernel configuration for every shape (no shape-specialised variants)");
  sub.add_flag("--no-tune{false}", o_.tune, "Do not tune even with a GPU; use the cache or the initial kernel");
  env_.add_quiet(sub, "Less progress on stderr");
}

int GenerateCommand::run() {
  tune::OptimizeOptions& t = o_.optimize;
  budget_.apply(t);
  t.device = env_.device;
  t.quiet = env_.quiet;
  t.cache_dir = env_.cache_path();
  t.worker_argv = env_.worker_argv();
  return gen::generate(o_);
}

}  // namespace

std::unique_ptr<Command> make_generate_command() { return std::make_unique<GenerateCommand>(); }

}  // namespace kopt::cli
