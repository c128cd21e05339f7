// Runs the kopt executable (KOPT_CLI) through the shell and collects its exit
// code, stdout and stderr. Shared by the unit tests of the command line.
#pragma once

#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace kopt::test {

struct CliRun {
  int code = -1;  // the exit status; -1 when kopt did not exit (a signal)
  std::string out, err;
  std::string first_err_line() const { return err.substr(0, err.find('\n')); }
};

/// Runs `<before> KOPT_CLI <args> 2>FILE <after>` with /bin/sh: `before` may
/// hold environment assignments ("NAME=VALUE ") or limits ("ulimit -v N; "),
/// `after` redirections (" </dev/null").
inline CliRun run_kopt(const std::string& args, const std::string& before = "", const std::string& after = "") {
  static std::atomic<int> counter{0};
  const std::filesystem::path err =
      std::filesystem::temp_directory_path() /
      ("kopt-cli-err-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  const std::string cmd = before + " " + std::string(KOPT_CLI) + " " + args + " 2>" + err.string() + after;
  CliRun r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  std::error_code ec;
  std::filesystem::remove(err, ec);
  return r;
}

}  // namespace kopt::test
