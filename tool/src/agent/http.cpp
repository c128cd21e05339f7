// HTTP over libcurl (see http.h): one easy handle per exchange.
#include "agent/http.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <memory>
#include <mutex>

namespace kopt::agent::http {

namespace {

void curl_global() {
  static std::once_flag once;
  static CURLcode rc = CURLE_OK;
  std::call_once(once, [] { rc = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (rc != CURLE_OK)
    throw LlmError(LlmError::Kind::transport, 0,
                   std::string("curl_global_init failed: ") + curl_easy_strerror(rc));
}

struct CurlDeleter {
  void operator()(CURL* h) const noexcept { curl_easy_cleanup(h); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const noexcept { curl_slist_free_all(l); }
};
using CurlHandle = std::unique_ptr<CURL, CurlDeleter>;
using CurlList = std::unique_ptr<curl_slist, SlistDeleter>;

void append_header(CurlList& list, const std::string& line) {
  curl_slist* next = curl_slist_append(list.get(), line.c_str());
  if (!next) throw LlmError(LlmError::Kind::transport, 0, "curl_slist_append: out of memory");
  list.release();
  list.reset(next);
}

struct HeaderCapture {
  std::optional<double> retry_after_ms_s, retry_after_s;
};

/// Where the body goes: at most `max` bytes, else the transfer stops.
struct BodySink {
  std::string* body = nullptr;
  size_t max = std::numeric_limits<size_t>::max();
  bool overflow = false;
};

std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

std::optional<double> parse_seconds(const std::string& v) {
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || *end != '\0' || !std::isfinite(d) || d < 0) return std::nullopt;
  return d;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* cap = static_cast<HeaderCapture*>(user);
  const std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {  // a new response (after 100 Continue, say)
    *cap = {};
    return size * n;
  }
  const auto colon = line.find(':');
  if (colon == std::string::npos) return size * n;
  std::string name = line.substr(0, colon);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::string value = trim(line.substr(colon + 1));
  if (name == "retry-after-ms") {
    if (auto ms = parse_seconds(value)) cap->retry_after_ms_s = *ms / 1000.0;
  } else if (name == "retry-after") {
    if (auto s = parse_seconds(value)) {
      cap->retry_after_s = *s;
    } else if (const time_t when = curl_getdate(value.c_str(), nullptr); when != -1) {
      cap->retry_after_s = std::max(0.0, std::difftime(when, std::time(nullptr)));
    }
  }
  return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<BodySink*>(user);
  const size_t len = size * n;
  if (len > sink->max - std::min(sink->max, sink->body->size())) {
    sink->overflow = true;
    return 0;  // stops the transfer (CURLE_WRITE_ERROR)
  }
  sink->body->append(data, len);
  return len;
}

/// GetOptions::allow_connect and what it refused.
struct ConnectGuard {
  const std::function<bool(const ::sockaddr*)>* allow = nullptr;
  std::string refused;
};

curl_socket_t open_socket(void* user, curlsocktype purpose, struct curl_sockaddr* a) {
  auto* g = static_cast<ConnectGuard*>(user);
  if (purpose != CURLSOCKTYPE_IPCXN || !(*g->allow)(&a->addr)) {
    char text[128] = "?";
    if (a->addr.sa_family == AF_INET || a->addr.sa_family == AF_INET6) {
      const void* in = a->addr.sa_family == AF_INET
                           ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(&a->addr)->sin_addr)
                           : static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(&a->addr)->sin6_addr);
      inet_ntop(a->addr.sa_family, in, text, sizeof text);
    }
    g->refused = text;
    return CURL_SOCKET_BAD;
  }
  return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/// One exchange's handle and what its callbacks fill.
struct Exchange {
  CurlHandle h;
  HeaderCapture cap;
  BodySink sink;
  ConnectGuard guard;
  CurlList resolve;
  char errbuf[CURL_ERROR_SIZE] = {0};
  Result r;
};

/// The set-up every exchange shares: URL, user agent, timeouts, decoding,
/// body and header callbacks, the error buffer.
void open_exchange(Exchange& x, const std::string& url, double timeout_s, const char* user_agent, size_t max_body) {
  curl_global();
  x.h.reset(curl_easy_init());
  if (!x.h) throw LlmError(LlmError::Kind::transport, 0, "curl_easy_init failed");
  x.sink.body = &x.r.body;
  x.sink.max = max_body;
  const long timeout_ms = std::max(1L, static_cast<long>(std::llround(timeout_s * 1000.0)));
  CURL* c = x.h.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_USERAGENT, user_agent);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, std::min(timeout_ms, 30000L));
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");  // whatever libcurl can decode
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &x.sink);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &x.cap);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, x.errbuf);
}

Result perform(Exchange& x) {
  Result& r = x.r;
  CURLcode code = curl_easy_perform(x.h.get());
  if (code == CURLE_WRITE_ERROR && x.sink.overflow) {
    code = CURLE_FILESIZE_EXCEEDED;
    std::snprintf(x.errbuf, sizeof x.errbuf, "the body is longer than %zu bytes", x.sink.max);
  }
  r.code = static_cast<int>(code);
  if (code != CURLE_OK) {
    r.error = x.errbuf[0] ? x.errbuf : curl_easy_strerror(code);
    r.code_text = curl_easy_strerror(code);
    r.refused_address = x.guard.refused;
    return std::move(r);
  }
  curl_easy_getinfo(x.h.get(), CURLINFO_RESPONSE_CODE, &r.status);
  char* location = nullptr;
  if (curl_easy_getinfo(x.h.get(), CURLINFO_REDIRECT_URL, &location) == CURLE_OK && location) r.redirect_url = location;
  r.retry_after_s = x.cap.retry_after_ms_s ? x.cap.retry_after_ms_s : x.cap.retry_after_s;
  return std::move(r);
}

}  // namespace

Result post_json(const std::string& url, const std::string& body, const LlmConfig& config) {
  Exchange x;
  open_exchange(x, url, config.timeout_s, "kopt/" KOPT_VERSION, std::numeric_limits<size_t>::max());
  CurlList headers;
  append_header(headers, "Content-Type: application/json");
  append_header(headers, "Accept: application/json");
  append_header(headers, "Expect:");  // no 100-continue round trip for big prompts
  if (!config.api_key.empty()) append_header(headers, "Authorization: Bearer " + config.api_key);
  CURL* c = x.h.get();
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  return perform(x);
}

Result get(const std::string& url, const GetOptions& o) {
  Exchange x;
  open_exchange(x, url, o.timeout_s, o.user_agent, o.max_bytes);
  CURL* c = x.h.get();
  curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, o.follow_redirects ? 1L : 0L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, o.max_redirects);
  for (const auto& entry : o.resolve) append_header(x.resolve, entry);
  if (x.resolve) curl_easy_setopt(c, CURLOPT_RESOLVE, x.resolve.get());
  if (o.allow_connect) {
    x.guard.allow = &o.allow_connect;
    curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_socket);
    curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, &x.guard);
  }
  if (!o.use_proxy) curl_easy_setopt(c, CURLOPT_PROXY, "");
  curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(o.max_bytes));
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85.0
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
  curl_easy_setopt(c, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  return perform(x);
}

bool retryable(int code) {
  switch (static_cast<CURLcode>(code)) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_NOT_BUILT_IN:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_OUT_OF_MEMORY:
    case CURLE_TOO_MANY_REDIRECTS:
      return false;
    default:
      return true;
  }
}

}  // namespace kopt::agent::http
