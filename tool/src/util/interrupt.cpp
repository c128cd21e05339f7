#include "util/interrupt.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace kopt::util {
namespace {

// Read and written in the handler: lock-free atomics and plain buffers only.
std::atomic<int> g_signal{0};
std::atomic<bool> g_active{false};
char g_next[512];
size_t g_next_len = 0;
bool g_tty = false;
struct sigaction g_old_int, g_old_term;

void put(const char* s, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(2, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}
void put(const char* s) { put(s, std::strlen(s)); }

const char* abbrev(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal"; }

void on_signal(int sig) {
  const int saved = errno;
  int expected = 0;
  if (g_signal.compare_exchange_strong(expected, sig)) {
    if (g_tty) put("\n");
    put("kopt: ");
    put(abbrev(sig));
    put(" received: ");
    put(g_next, g_next_len);
    put(" (send it again to stop at once)\n");
  } else {
    put("kopt: ");
    put(abbrev(sig));
    put(" again: stopping at once; every recorded attempt is kept (resume with `kopt optimize --resume RUN`)\n");
    ::_exit(128 + sig);
  }
  errno = saved;
}

}  // namespace

InterruptScope::InterruptScope(const std::string& what_next) {
  bool expected = false;
  if (!g_active.compare_exchange_strong(expected, true))
    throw std::logic_error("InterruptScope: a scope is active already");
  const size_t n = std::min(what_next.size(), sizeof g_next - 1);
  std::memcpy(g_next, what_next.data(), n);
  g_next_len = n;
  g_tty = ::isatty(2) == 1;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGTERM);
  sa.sa_flags = SA_RESTART;  // code that does not expect EINTR keeps working
  ::sigaction(SIGINT, &sa, &g_old_int);
  ::sigaction(SIGTERM, &sa, &g_old_term);
}

InterruptScope::~InterruptScope() {
  ::sigaction(SIGINT, &g_old_int, nullptr);
  ::sigaction(SIGTERM, &g_old_term, nullptr);
  g_active = false;
}

int interrupt_signal() { return g_signal.load(); }

void clear_interrupt() { g_signal = 0; }

std::string signal_name(int sig) {
  if (sig == SIGINT) return "SIGINT";
  if (sig == SIGTERM) return "SIGTERM";
  return "signal " + std::to_string(sig);
}

void throw_if_interrupted() {
  if (const int sig = interrupt_signal()) throw Interrupted(sig);
}

}  // namespace kopt::util
