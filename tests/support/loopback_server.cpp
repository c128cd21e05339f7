#include "support/loopback_server.h"

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <stdexcept>

namespace kopt::test {

LoopbackServer::LoopbackServer(const Routes& routes) {
  routes(server_);
  port_ = server_.bind_to_any_port("127.0.0.1");
  if (port_ <= 0) throw std::runtime_error("loopback server: cannot bind a port of 127.0.0.1");
  thread_ = std::thread([this] {
    // The worker threads of the server inherit this mask.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    server_.listen_after_bind();
    listen_returned_ = true;
  });
  // No time limit: a loaded machine may be slow to schedule the thread, and
  // stop() before the server runs would not end listen_after_bind().
  while (!server_.is_running() && !listen_returned_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!server_.is_running()) {
    thread_.join();
    throw std::runtime_error("loopback server: cannot listen on port " + std::to_string(port_));
  }
}

LoopbackServer::~LoopbackServer() { stop(); }

void LoopbackServer::stop() {
  server_.stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace kopt::test
