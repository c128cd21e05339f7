// The kopt command line: subcommands, their options. The exit codes are in
// cli/command.h.
#pragma once

#include "cli/command.h"

namespace kopt::cli {

class App {
 public:
  int run(int argc, char** argv);
};

}  // namespace kopt::cli
