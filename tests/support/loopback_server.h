// An in-process HTTP server on 127.0.0.1 for tests of kopt's HTTP clients
// (the LLM client, fetch_url): cpp-httplib, plain HTTP, a free port chosen by
// the kernel, served on a thread of its own for the object's lifetime.
// Test support, not part of the tool: built into kopt_test_http, included as
// "support/loopback_server.h". FakeLlmServer (support/fake_llm_server.h) is
// built on it.
#pragma once

#include <httplib.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace kopt::test {

class LoopbackServer {
 public:
  /// Registers the handlers on the server (called once, before it starts).
  using Routes = std::function<void(httplib::Server&)>;

  /// Calls `routes`, binds to a free port of 127.0.0.1 and serves on a
  /// thread; returns once the server accepts connections. SIGPIPE is blocked
  /// in the server's threads, so a client that hangs up early makes a write
  /// fail (EPIPE) instead of killing the test binary. Throws
  /// std::runtime_error when no port can be bound or listening fails.
  explicit LoopbackServer(const Routes& routes);
  /// stop().
  ~LoopbackServer();
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;

  /// Stops serving and joins the thread; requests after it are refused.
  /// Idempotent.
  void stop();

  /// The bound port (1-65535).
  int port() const { return port_; }
  /// "127.0.0.1:<port>".
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  /// "http://127.0.0.1:<port>" followed by `path` (which starts with '/').
  std::string url(const std::string& path = "") const { return "http://" + endpoint() + path; }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<bool> listen_returned_{false};
};

}  // namespace kopt::test
