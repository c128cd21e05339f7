// SIGINT and SIGTERM as a request to stop cleanly: while an InterruptScope
// lives, the first of them only sets a flag (and says on stderr what happens
// next); long work polls interrupted() and winds down, writing what it has.
// A second signal ends the process at once with 128 + its number (_exit: the
// files the tool writes are written atomically, so nothing recorded is lost,
// and a worker started with die_with_parent dies with it).
#pragma once

#include <stdexcept>
#include <string>

namespace kopt::util {

/// Installs the handlers for SIGINT and SIGTERM; the destructor puts the
/// previous ones back. Scopes do not nest (a second one while one lives
/// throws std::logic_error). `what_next` is the line printed on the first
/// signal, e.g. "finishing the candidate in flight, then writing summary.json".
class InterruptScope {
 public:
  explicit InterruptScope(const std::string& what_next);
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
};

/// The first SIGINT or SIGTERM received while a scope lived, 0 when none.
/// Stays set after the scope ends (until clear_interrupt()).
int interrupt_signal();
inline bool interrupted() { return interrupt_signal() != 0; }
/// "SIGINT", "SIGTERM" (or "signal N").
std::string signal_name(int sig);
/// The exit code for a run stopped by `sig`: 128 + sig (130 SIGINT, 143 SIGTERM).
inline int interrupt_exit_code(int sig) { return 128 + sig; }
/// Forgets a received signal (tests).
void clear_interrupt();

/// Thrown by work that stops waiting because of a signal (a device lock wait).
class Interrupted : public std::runtime_error {
 public:
  explicit Interrupted(int sig) : std::runtime_error("interrupted by " + signal_name(sig)), sig_(sig) {}
  int signal() const { return sig_; }

 private:
  int sig_;
};

/// Throws Interrupted when a signal was received.
void throw_if_interrupted();

}  // namespace kopt::util
