// `kopt generate`: what the CMake module's optimize_kernel() runs. Writes
// <out-dir>/<name>.cu and <name>_launch.h from a tuning run on this GPU, else
// the tuning cache, else the initial kernel (gen/generate.h). With --check it
// only checks its arguments and the spec, as the build's run would: the
// module runs that when configuring, so that a bad BUDGET, STRATEGY or spec
// stops the configure step with kopt's own message.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "cli/command.h"
#include "cli/common.h"
#include "gen/generate.h"
#include "store/tuning_cache.h"
#include "driver/proposers.h"
#include "util/error.h"
#include "util/text.h"

namespace kopt::cli {
namespace {

class GenerateCommand final : public Command {
 public:
  GenerateCommand()
      : Command("generate",
                "For the CMake module: write <out-dir>/<name>.cu and <name>_launch.h from a tuning run on "
                "this GPU, else the tuning cache, else the initial kernel") {}
  void add_options(CLI::App& sub) override;
  int run() override;

 private:
  void check_arguments() const;
  int check_only() const;

  gen::GenerateOptions o_;  // defaults in gen/generate.h and driver/driver.h
  Environment env_;         // --device, --cache-dir, --quiet
  Budget budget_;           // --budget
  std::string worker_command_;  // --worker-command (testing; default: `kopt worker`)
  bool check_ = false;          // --check: check, tune nothing, write nothing
};

void GenerateCommand::add_options(CLI::App& sub) {
  driver::OptimizeOptions& t = o_.optimize;  // the tuning run
  sub.add_option("--spec", t.spec, "Workload spec (JSON)")->required()->check(check::existing_file());
  sub.add_option("--name", o_.name, "Kernel name (file names, header namespace)")
      ->required()
      ->check(check::identifier());
  sub.add_option("--out-dir", o_.out_dir, "Output folder")->required()->check(check::not_empty());
  sub.add_option("--cache-file", o_.cache_file, "Tuning cache JSON (read; updated after tuning)")
      ->check(check::not_empty());
  sub.add_option("--cache-out", o_.cache_out,
                 "Write the updated tuning cache here and only read --cache-file (a copy of it when nothing "
                 "was tuned)")
      ->check(check::not_empty());
  sub.add_option("--depfile", o_.depfile,
                 "Write a Make-syntax depfile naming every file the run reads (spec, sources and their "
                 "includes, .npy inputs and golden outputs, the cache), for add_custom_command(DEPFILE)")
      ->check(check::not_empty());
  sub.add_option("--input-cases", t.input_cases,
                 "JSON file of cases replacing the spec's, or a shape capture (docs/capture.md)")
      ->check(check::existing_file());
  sub.add_option("--cases-from", o_.cases_from,
                 "Like --input-cases, but while the file does not exist the spec's cases are used "
                 "(optimize_kernel(CASES_FROM))")
      ->check(check::not_empty());
  sub.add_option("--cases-out", o_.cases_out,
                 "Write the cases the kernel was generated for here ({\"cases\": [...]}), for the tests")
      ->check(check::not_empty());
  sub.add_option("--template", t.template_source, "Tunable template .cu")->check(check::existing_file());
  sub.add_option("--initial-kernel", t.initial_kernel, "Initial kernel .cu")->check(check::existing_file());
  sub.add_option("--reference", t.reference, "Reference kernel .cu")->check(check::existing_file());
  sub.add_option("--strategy", t.strategy, "Search strategy, as for kopt optimize (default: by space size)")
      ->check(check::one_of(driver::proposer_names()));
  budget_.add_budget(sub, "evals=N,minutes=M,patience=P (any subset; " + Budget::bare_text() + "; " +
                              Budget::default_text() + ")");
  sub.add_option("--seed", t.seed, "Search seed")->check(check::unsigned_whole())->capture_default_str();
  env_.add_device(sub)->capture_default_str();
  env_.add_cache_dir(sub);
  env_.add_compile_timeout(sub);
  sub.add_option("--target-gpu", o_.target_gpu, "GPU name to take from the cache without a GPU (env KOPT_TARGET_GPU)")
      ->envname("KOPT_TARGET_GPU");
  sub.add_flag("--require-gpu", o_.require_gpu, "Fail instead of falling back when there is no GPU (env KOPT_REQUIRE_GPU)")
      ->envname("KOPT_REQUIRE_GPU")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            for (const char* ok : {"", "1", "0", "true", "false", "on", "off", "yes", "no", "ON", "OFF", "TRUE", "FALSE",
                                   "YES", "NO", "True", "False", "On", "Off", "Yes", "No"})
              if (v == ok) return {};
            return "KOPT_REQUIRE_GPU (or the flag's value) must be 1, 0, true, false, on, off, yes or no, got " +
                   quote(v);
          },
          ""));
  sub.add_option("--from-run", o_.from_run,
                 "Take the kernel (and its shape-specialised variants) from this finished run folder")
      ->check(check::existing_dir());
  sub.add_flag("--no-specialize{false}", t.specialize,
               "One kernel configuration for every shape (no shape-specialised variants)");
  sub.add_flag("--no-tune{false}", o_.tune, "Do not tune even with a GPU; use the cache or the initial kernel");
  env_.add_quiet(sub, "Less progress on stderr");
  sub.add_flag("--check", check_,
               "Only check the arguments, the spec and the files it names, as this command line's run would, "
               "then exit (0: it would start; optimize_kernel() runs this when configuring)");
  sub.add_option("--worker-command", worker_command_,
                 "Testing: start this program (space-separated argv) instead of `kopt worker`")
      ->check(check::not_empty())
      ->group("Testing");
}

/// Everything that can be checked before any tuning: a bad argument must
/// not cost the GPU budget first (the name, the output folder and the cache
/// are used only after tuning).
void GenerateCommand::check_arguments() const {
  check_output_dir("--out-dir", o_.out_dir);
  if (!o_.depfile.empty()) check_output_file("--depfile", o_.depfile);
  if (!o_.cache_out.empty()) check_output_file("--cache-out", o_.cache_out);
  if (!o_.cases_out.empty()) check_output_file("--cases-out", o_.cases_out);
  if (!o_.cases_from.empty() && !o_.optimize.input_cases.empty())
    throw UsageError("kopt.cli.027", "--cases-from and --input-cases both give the cases; give one");
  if (!env_.cache_dir.empty()) check_output_dir("--cache-dir", env_.cache_dir);
  if (o_.cache_file.empty()) return;
  const std::filesystem::path& f = o_.cache_file;
  std::error_code ec;
  const auto st = std::filesystem::status(f, ec);
  if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
    throw UsageError("kopt.cli.017", "--cache-file " + clip(f.string()) + ": is " +
                                         (std::filesystem::is_directory(st) ? "a directory" : "not a regular file") +
                                         "; give the tuning cache's JSON file (it is created when missing)");
  // SpecError kopt.cache.1xx naming the file. Not with --check: the cache's
  // content is the build's to read (a tuned copy may replace it before then).
  if (std::filesystem::exists(st) && !check_) store::read_tuning_cache(f);
  // Tuning updates the cache; one that cannot be written would fail only
  // after the whole tuning run.
  const bool writable = std::filesystem::exists(st)
                            ? ::access(f.c_str(), W_OK) == 0 &&
                                  ::access((f.has_parent_path() ? f.parent_path() : ".").c_str(), W_OK | X_OK) == 0
                            : true;
  if (!std::filesystem::exists(st)) check_output_file("--cache-file", f);  // its folder must take it
  if (!writable && o_.tune && o_.from_run.empty() && o_.cache_out.empty()) {
    const std::string why = "--cache-file " + clip(f.string()) + ": is not writable (" + std::strerror(errno) +
                            "), so a tuning run could not update it";
    if (o_.require_gpu) throw UsageError("kopt.cli.014", why + "; make it writable or give --no-tune");
    std::cerr << "kopt generate: warning: " << why << "; with a GPU, give --no-tune or make it writable\n";
  }
}

/// --check: what the run would reject before tuning: the spec with its
/// overrides and cases (a --cases-from file once it exists), and what the
/// parameter search needs of them (a template, a parameter space: kopt.opt.003,
/// kopt.opt.004). The agent's settings are the build environment's, read when
/// it runs, so they are not checked here.
int GenerateCommand::check_only() const {
  driver::OptimizeOptions t = o_.optimize;
  t.quiet = true;
  std::error_code ec;
  if (!o_.cases_from.empty() && std::filesystem::exists(std::filesystem::symlink_status(o_.cases_from, ec)))
    t.input_cases = o_.cases_from;
  const spec::Spec s = driver::load_spec_with_overrides(t);
  if (o_.tune && o_.from_run.empty() && !driver::is_agent(t)) driver::make_proposer(t, &s);
  return kOk;
}

int GenerateCommand::run() {
  driver::OptimizeOptions& t = o_.optimize;
  t.budget = budget_.value();
  check_arguments();
  if (check_) return check_only();
  t.quiet = env_.quiet;
  t.cache_dir = env_.cache_path();
  t.compile_timeout_s = env_.compile_timeout_s;
  t.compile_argv = env_.compile_argv();
  t.workers = env_.worker_plan(worker_command_);
  return gen::generate(o_);
}

}  // namespace

std::unique_ptr<Command> make_generate_command() { return std::make_unique<GenerateCommand>(); }

}  // namespace kopt::cli
