// The kopt command line: one Command per subcommand (cli/command.h, which
// also lists the exit codes), registered and dispatched here.
#pragma once

#include <memory>
#include <vector>

#include "cli/command.h"

namespace kopt::cli {

class App {
 public:
  App();
  /// Parses the command line and runs the subcommand given; returns the exit code.
  int run(int argc, char** argv);

 private:
  std::vector<std::unique_ptr<Command>> commands_;  // in the order `kopt --help` lists them
};

}  // namespace kopt::cli
