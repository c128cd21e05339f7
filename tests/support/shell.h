// Running a shell command in tests and collecting its exit code, stdout and
// stderr (kopt's command line, cmake -P scripts, a built host program).
// Test support, not part of the tool: header-only, included as
// "support/shell.h".
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "support/files.h"

namespace kopt::test {

struct ShellRun {
  int code = -1;    // the exit status; -1 when the command did not exit (a signal) or no shell started
  std::string out;  // what it wrote to stdout
  std::string err;  // what it wrote to stderr
};

/// Where run_shell() puts the command's stderr.
enum class Stderr { separate, into_out };

/// Runs `cmd >OUT 2>ERR` with /bin/sh (`cmd >OUT 2>&1` with
/// Stderr::into_out: one stream, in the order written, in out). The
/// redirections apply to the last command of `cmd` ("cd D && kopt ...": to
/// kopt). OUT and ERR are files in the system's temp folder, removed
/// afterwards; files, not pipes, so that a process `cmd` leaves running with
/// them open cannot block the test.
inline ShellRun run_shell(const std::string& cmd, Stderr stderr_to = Stderr::separate) {
  static std::atomic<int> counter{0};
  const std::string stem = "kopt-shell-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  const std::filesystem::path out = std::filesystem::temp_directory_path() / (stem + ".out");
  const std::filesystem::path err = std::filesystem::temp_directory_path() / (stem + ".err");
  const std::string redirect = stderr_to == Stderr::into_out ? " 2>&1" : " 2>" + err.string();
  const int status = std::system((cmd + " >" + out.string() + redirect).c_str());
  ShellRun r;
  r.code = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::error_code ec;
  std::filesystem::remove(out, ec);
  std::filesystem::remove(err, ec);
  return r;
}

}  // namespace kopt::test
