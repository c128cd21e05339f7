// A fake OpenAI-compatible server for tests of the LLM client and the agent:
// every POST, to any path (/v1/chat/completions, /v1/responses, ...), is
// recorded and answered from a script of replies. Plain HTTP on a free port
// of 127.0.0.1 (LoopbackServer), no model behind it.
// Test support, not part of the tool: built into kopt_test_http, included as
// "support/fake_llm_server.h".
#pragma once

#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/loopback_server.h"

namespace kopt::test {

class FakeLlmServer {
 public:
  /// One scripted answer.
  struct Reply {
    int status = 200;                            // HTTP status
    std::string body;                            // sent as application/json, whatever it holds
    std::map<std::string, std::string> headers;  // added response headers (Retry-After, ...)
    int delay_ms = 0;                            // wait before answering (client timeouts)
  };

  /// One request as the server received it.
  struct Request {
    std::string path;                                 // without the query: "/v1/chat/completions"
    std::string body;                                 // as sent
    bool has_authorization = false;                   // an Authorization header was sent
    std::string authorization;                        // its value ("" when none)
    std::string all_headers;                          // "name: value\n" for every header
    std::multimap<std::string, std::string> params;   // the query parameters
    /// The body parsed as JSON; throws nlohmann::json::parse_error when it is not.
    nlohmann::json json_body() const { return nlohmann::json::parse(body); }
    /// The first value of query parameter `name`; "" when absent.
    std::string param(const std::string& name) const;
  };

  /// An empty script: until push() adds a reply, every request gets HTTP 500
  /// {"error":{"message":"no scripted reply"}}.
  FakeLlmServer();
  /// `replies` (response bodies) with HTTP 200, one per request in order;
  /// then HTTP 400 {"error": {"message": "script exhausted", "type":
  /// "invalid_request_error"}} to every further request (an API error that
  /// the client does not retry).
  explicit FakeLlmServer(const std::vector<nlohmann::json>& replies);
  FakeLlmServer(const FakeLlmServer&) = delete;
  FakeLlmServer& operator=(const FakeLlmServer&) = delete;

  /// Appends to the script. Replies are used in order; the last one is
  /// repeated for every request after it.
  void push(Reply r);
  /// push(Reply{status, body, {}, 0}).
  void push_json(const std::string& body, int status = 200);

  /// Every request so far, in the order received.
  std::vector<Request> received() const;
  /// The bodies of received().
  std::vector<std::string> bodies() const;

  /// "http://127.0.0.1:<port>/v1": the client's base URL.
  std::string base_url() const { return server_.url("/v1"); }
  int port() const { return server_.port(); }

 private:
  void handle(const httplib::Request& req, httplib::Response& res);

  mutable std::mutex mutex_;
  std::deque<Reply> replies_;
  std::vector<Request> received_;
  LoopbackServer server_;  // last: started after, and stopped before, the state it serves
};

}  // namespace kopt::test
