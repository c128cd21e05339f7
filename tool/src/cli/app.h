// The kopt command line: subcommands, their options, exit codes.
//
// Exit codes (documented in README "Exit codes"):
//   0  success (every candidate evaluated was accepted)
//   1  a candidate was rejected (its verdict is in the output)
//   2  usage error, spec error, unreadable file
//   3  environment error (driver failure, worker could not start)
//   77 no CUDA device (CTest's SKIP_RETURN_CODE); non-GPU work was still done
#pragma once

namespace kopt::cli {

enum ExitCode { kOk = 0, kRejected = 1, kUsage = 2, kEnvironment = 3, kNoDevice = 77 };

class App {
 public:
  int run(int argc, char** argv);
};

}  // namespace kopt::cli
