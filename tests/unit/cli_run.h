// Runs the kopt executable (KOPT_CLI) through the shell and collects its exit
// code, stdout and stderr. Shared by the unit tests of the command line.
#pragma once

#include <string>

#include "support/shell.h"

namespace kopt::test {

/// A run of kopt (ShellRun: code, out, err).
struct CliRun : ShellRun {
  std::string first_err_line() const { return err.substr(0, err.find('\n')); }
};

/// Runs `<before> KOPT_CLI <args><after>` with /bin/sh (run_shell): `before`
/// may hold environment assignments ("NAME=VALUE ") or limits ("ulimit -v N; "),
/// `after` redirections (" </dev/null").
inline CliRun run_kopt(const std::string& args, const std::string& before = "", const std::string& after = "") {
  return CliRun{run_shell(before + " " + std::string(KOPT_CLI) + " " + args + after)};
}

}  // namespace kopt::test
