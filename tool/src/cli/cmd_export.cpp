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
  ExportCommand()
      : Command("export",
                "Write a run folder in another tool's format: t4 (Kernel Tuner's T4 results JSON) to stdout or "
                "-o FILE") {}
  void add_options(CLI::App& sub) override {
    sub.add_option("--format", format_, "Output format: t4 (Kernel Tuner's T4 results schema 1.0.0)")
        ->required()
        ->check(check::one_of({"t4"}));
    io_.add(sub, "The run folder (results/run-NNN)", check::existing_dir(), "-o,--output",
            "Write to this file instead of stdout", "No note on stderr");
  }
  int run() override {
    if (!io_.out.empty()) check_output_file("--output", io_.out);
    const store::T4Export x = store::export_t4(io_.run_dir);
    const std::string text = dump_json(x.doc, 2) + "\n";
    if (io_.out.empty())
      std::cout << text << std::flush;
    else
      fs::write_output_file(io_.out, text);
    if (!io_.quiet) {
      std::cerr << "kopt: exported " << x.exported << " candidate(s) of " << fs::display(io_.run_dir)
                << " as T4 results";
      if (!io_.out.empty()) std::cerr << " to " << fs::display(io_.out);
      std::string left;
      if (x.not_configurations > 0)
        left += std::to_string(x.not_configurations) + " reference/initial/baseline attempt(s) (no configuration)";
      if (x.compiled_only > 0)
        left += (left.empty() ? "" : ", ") + std::to_string(x.compiled_only) + " compiled only (never run)";
      if (!left.empty()) std::cerr << "; left out: " << left;
      std::cerr << "\n";
      if (x.screened > 0)
        std::cerr << "kopt: " << x.screened << " of them were screened on a case (kopt optimize --screen-factor): "
                  << "their time there is their probe launch or first 10 launches, not 100; a run made with --screen-factor 0 times "
                     "every configuration in full\n";
    }
    return kOk;
  }

 private:
  std::string format_;
  RunFolderIo io_;
};

}  // namespace

std::unique_ptr<Command> make_export_command() { return std::make_unique<ExportCommand>(); }

}  // namespace kopt::cli
