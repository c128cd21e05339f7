// `kopt export --format t4 RUN_DIR [-o FILE]`: a run folder in another
// tool's format. T4 is Kernel Tuner's results schema (store/interop.h,
// docs/interop.md); the document goes to FILE, or to stdout.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/command.h"
#include "cli/common.h"
#include "store/interop.h"
#include "util/fs.h"
#include "util/json.h"

namespace kopt::cli {
namespace {

class ExportCommand final : public Command {
 public:
  const char* name() const override { return "export"; }
  const char* description() const override {
    return "Write a run folder in another tool's format: t4 (Kernel Tuner's T4 results JSON) to stdout or -o FILE";
  }
  void add_options(CLI::App& sub) override {
    sub.add_option("--format", format_, "Output format: t4 (Kernel Tuner's T4 results schema 1.0.0)")
        ->required()
        ->check(check::one_of({"t4"}));
    sub.add_option("run_dir", run_dir_, "The run folder (results/run-NNN)")->required()->check(check::existing_dir());
    sub.add_option("-o,--output", output_, "Write to this file instead of stdout")->check(check::not_empty());
    sub.add_flag("-q,--quiet", quiet_, "No note on stderr");
  }
  int run() override {
    if (!output_.empty()) check_output_file("--output", output_);
    const store::T4Export x = store::export_t4(run_dir_);
    const std::string text = dump_json(x.doc, 2) + "\n";
    if (output_.empty())
      std::cout << text << std::flush;
    else
      fs::write_output_file(output_, text);
    if (!quiet_) {
      std::cerr << "kopt: exported " << x.exported << " candidate(s) of " << fs::display(run_dir_) << " as T4 results";
      if (!output_.empty()) std::cerr << " to " << fs::display(output_);
      std::string left;
      if (x.not_configurations > 0)
        left += std::to_string(x.not_configurations) + " reference/initial/baseline attempt(s) (no configuration)";
      if (x.compiled_only > 0)
        left += (left.empty() ? "" : ", ") + std::to_string(x.compiled_only) + " compiled only (never run)";
      if (!left.empty()) std::cerr << "; left out: " << left;
      std::cerr << "\n";
    }
    return kOk;
  }

 private:
  std::string format_;
  std::string run_dir_;
  std::string output_;
  bool quiet_ = false;
};

}  // namespace

std::unique_ptr<Command> make_export_command() { return std::make_unique<ExportCommand>(); }

}  // namespace kopt::cli
