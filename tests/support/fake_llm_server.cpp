#include "support/fake_llm_server.h"

#include <chrono>
#include <cstdlib>
#include <thread>
#include <utility>

namespace kopt::test {
namespace {

/// libcurl honours http_proxy: make sure the loopback server is reached
/// directly (adds 127.0.0.1 to no_proxy and NO_PROXY).
void bypass_proxies() {
  for (const char* name : {"no_proxy", "NO_PROXY"}) {
    const char* old = std::getenv(name);
    const std::string value = old && *old ? std::string(old) + ",127.0.0.1" : std::string("127.0.0.1");
    if (!old || std::string(old).find("127.0.0.1") == std::string::npos) ::setenv(name, value.c_str(), 1);
  }
}

}  // namespace

std::string FakeLlmServer::Request::param(const std::string& name) const {
  const auto it = params.find(name);
  return it == params.end() ? std::string() : it->second;
}

FakeLlmServer::FakeLlmServer()
    : server_([this](httplib::Server& s) {
        bypass_proxies();
        // One request per connection: a retry always opens a new one.
        s.set_keep_alive_max_count(1);
        s.Post(R"(.*)", [this](const httplib::Request& req, httplib::Response& res) { handle(req, res); });
      }) {}

FakeLlmServer::FakeLlmServer(const std::vector<nlohmann::json>& replies) : FakeLlmServer() {
  for (const nlohmann::json& r : replies) push_json(r.dump());
  push(Reply{400, R"({"error": {"message": "script exhausted", "type": "invalid_request_error"}})", {}, 0});
}

void FakeLlmServer::push(Reply r) {
  std::lock_guard<std::mutex> lock(mutex_);
  replies_.push_back(std::move(r));
}

void FakeLlmServer::push_json(const std::string& body, int status) { push(Reply{status, body, {}, 0}); }

std::vector<FakeLlmServer::Request> FakeLlmServer::received() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return received_;
}

std::vector<std::string> FakeLlmServer::bodies() const {
  std::vector<std::string> out;
  for (const Request& r : received()) out.push_back(r.body);
  return out;
}

void FakeLlmServer::handle(const httplib::Request& req, httplib::Response& res) {
  Reply reply;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Request r;
    r.path = req.path;
    r.body = req.body;
    r.has_authorization = req.has_header("Authorization");
    r.authorization = req.get_header_value("Authorization");
    for (const auto& [name, value] : req.headers) r.all_headers += name + ": " + value + "\n";
    r.params.insert(req.params.begin(), req.params.end());
    received_.push_back(std::move(r));
    if (replies_.empty()) {
      reply = Reply{500, R"({"error":{"message":"no scripted reply"}})", {}, 0};
    } else {
      reply = replies_.front();
      if (replies_.size() > 1) replies_.pop_front();
    }
  }
  if (reply.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(reply.delay_ms));
  res.status = reply.status;
  for (const auto& [name, value] : reply.headers) res.set_header(name, value);
  res.set_content(reply.body, "application/json");
}

}  // namespace kopt::test
