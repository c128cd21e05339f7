// Errors that stop the tool: bad usage, bad input files, a broken environment.
//
// A failed *candidate* is never an exception: compile, launch and validation
// outcomes are values (see eval/result.h). Exceptions are for what the user or
// the machine must fix, and each carries a stable id such as "kopt.spec.102"
// so that scripts and the README can refer to it.
#pragma once

#include <stdexcept>
#include <string>

namespace kopt {

/// Base of every exception the library throws on purpose.
/// what() is "[<id>] <message>"; id() is the bare id (e.g. "kopt.spec.102").
class Error : public std::runtime_error {
 public:
  Error(std::string id, const std::string& message)
      : std::runtime_error("[" + id + "] " + message), id_(std::move(id)) {}
  const std::string& id() const noexcept { return id_; }

 private:
  std::string id_;
};

/// Bad workload spec, bad expression, missing or unreadable input file.
/// Exit code 2 at the CLI.
class SpecError : public Error {
  using Error::Error;
};

/// Bad command-line usage. Exit code 2 at the CLI.
class UsageError : public Error {
  using Error::Error;
};

/// No CUDA driver or no CUDA device. Exit code 77 at the CLI (CTest's skip code).
class NoDeviceError : public Error {
  using Error::Error;
};

/// A CUDA driver / NVRTC / OS failure that is not the candidate's fault
/// (out of memory in the harness, driver missing a symbol, fork failed...).
class EnvironmentError : public Error {
  using Error::Error;
};

}  // namespace kopt
