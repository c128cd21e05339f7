// `kopt report RUN_DIR [--out FILE]`: (re)makes a run folder's report.html
// and heatmap.svg from its records (history.json, summary.json, spec.json),
// on any machine: no GPU and no worker are needed, so a run folder copied from
// a GPU machine can be looked at anywhere (docs/run-folder.md, "Reports").
// The run folder is only read (RunStore::open without a lock); the reports go
// into it, or to --out.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/command.h"
#include "cli/common.h"
#include "model/device_info.h"
#include "report/report.h"
#include "store/store.h"
#include "util/error.h"
#include "util/fs.h"

namespace kopt::cli {
namespace {

class ReportCommand final : public Command {
 public:
  ReportCommand()
      : Command("report",
                "Make a run folder's report.html and heatmap.svg again from its records (no GPU needed), "
                "e.g. for a run folder copied from a GPU machine") {}
  void add_options(CLI::App& sub) override {
    io_.add(sub, "The run folder (results/run-NNN), e.g. copied from a GPU machine", check::not_empty(), "-o,--out",
            "Write report.html to FILE (heatmap.svg goes beside it) instead of into the run folder",
            "Only warnings on stderr");
  }
  int run() override {
    // Every record is read first (kopt.run.901 naming the file when one is
    // missing or damaged), then the output is checked, then written.
    const store::RunStore store = store::RunStore::open(io_.run_dir, "");
    const std::filesystem::path html = io_.out.empty() ? store.dir() / "report.html" : std::filesystem::path(io_.out);
    if (html.filename() == "heatmap.svg")
      throw UsageError("kopt.cli.014", "--out " + fs::display(html) + ": heatmap.svg is written beside the report; "
                                       "name the report otherwise (report.html)");
    check_output_file(io_.out.empty() ? "--out (default: RUN_DIR/report.html)" : "--out", html);
    check_output_file("--out (heatmap.svg beside it)", html.parent_path() / "heatmap.svg");
    const report::WrittenReports w = report::write_reports(store, report::performance_cases(store), html);
    for (const std::string& note : w.notes) std::cerr << "kopt: warning: " << note << "\n";
    std::cout << w.html.string() << std::endl;
    if (!io_.quiet) {
      const store::Summary s = store.summary();
      std::cerr << "kopt: wrote " << fs::display(w.html) << " and " << fs::display(w.heatmap) << " from "
                << store.history().size() << " attempt(s) of " << fs::display(store.dir()) << "\n";
      if (model::is_simulated(s.gpu))
        std::cerr << "kopt: " << model::kSimulatedNote << ": the run's GPU was the fake worker\n";
    }
    return kOk;
  }

 private:
  RunFolderIo io_;
};

}  // namespace

std::unique_ptr<Command> make_report_command() { return std::make_unique<ReportCommand>(); }

}  // namespace kopt::cli
