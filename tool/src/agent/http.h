// HTTP for the agent over libcurl (the only libcurl user in the tool): the
// LLM client's POST and fetch_url's GET share one handle set-up (internal to
// the agent).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/llm.h"

struct sockaddr;

namespace kopt::agent::http {

/// One HTTP exchange.
struct Result {
  int code = 0;            // the CURLcode: 0 when the exchange happened (whatever the status)
  std::string error;       // when code != 0: libcurl's message
  std::string code_text;   // when code != 0: curl_easy_strerror(code)
  long status = 0;         // the HTTP status
  std::string body;
  std::optional<double> retry_after_s;  // from retry-after-ms, else retry-after
  std::string redirect_url;  // get() without follow_redirects: where a 3xx points (absolute)
  std::string refused_address;  // get() with allow_connect: the address it refused (code != 0 then)
  bool ok() const { return code == 0; }
};

/// POSTs a JSON body to an OpenAI-compatible API: the key (when set) goes in
/// the Authorization header only; config.timeout_s bounds the exchange.
/// Throws LlmError(transport) when libcurl cannot be set up.
Result post_json(const std::string& url, const std::string& body, const LlmConfig& config);

/// Whether a transport error (a CURLcode) is worth another try; the others are
/// a bad URL, a TLS set-up problem, running out of memory or redirect loops.
bool retryable(int code);

struct GetOptions {
  double timeout_s = 30;          // the whole exchange
  size_t max_bytes = 4000000;     // a longer body fails (code CURLE_FILESIZE_EXCEEDED)
  const char* user_agent = "kopt-agent";
  long max_redirects = 50;        // redirects are followed (http and https only)
  /// false: a redirect is a result (status 3xx, redirect_url) for the caller to check.
  bool follow_redirects = true;
  /// CURLOPT_RESOLVE entries ("host:port:addr[,addr...]"): the addresses to
  /// connect to, instead of asking DNS again.
  std::vector<std::string> resolve;
  /// When set, called with each socket's address before it connects; false
  /// refuses it (the exchange then fails with Result::refused_address set).
  std::function<bool(const ::sockaddr*)> allow_connect;
  bool use_proxy = true;          // false: no proxy, whatever http_proxy and friends say
};

/// GETs an http:// or https:// URL (other schemes fail, redirects included).
/// Any HTTP status is a result: the caller reads `status`. Throws
/// LlmError(transport) when libcurl cannot be set up.
Result get(const std::string& url, const GetOptions& options = {});

}  // namespace kopt::agent::http
