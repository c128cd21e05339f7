// The HTTP side of the LLM client: libcurl (one easy handle per attempt),
// retries with exponential backoff and full jitter, error classification, and
// the key kept out of everything but the Authorization header.
#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <ctime>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "agent/llm.h"
#include "agent/llm_wire.h"
#include "util/json.h"

namespace kopt::agent {

using nlohmann::json;

namespace {

// ---------------------------------------------------------------------------
// libcurl
// ---------------------------------------------------------------------------

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

/// One HTTP exchange.
struct HttpResult {
  CURLcode code = CURLE_OK;
  std::string curl_error;  // when code != CURLE_OK
  long status = 0;
  std::string body;
  std::optional<double> retry_after_s;  // from retry-after-ms, else retry-after
};

struct HeaderCapture {
  std::optional<double> retry_after_ms_s, retry_after_s;
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
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

HttpResult post_json(const std::string& url, const std::string& body, const LlmConfig& config) {
  curl_global();
  HttpResult r;
  CurlHandle h(curl_easy_init());
  if (!h) throw LlmError(LlmError::Kind::transport, 0, "curl_easy_init failed");

  CurlList headers;
  append_header(headers, "Content-Type: application/json");
  append_header(headers, "Accept: application/json");
  append_header(headers, "Expect:");  // no 100-continue round trip for big prompts
  if (!config.api_key.empty()) append_header(headers, "Authorization: Bearer " + config.api_key);

  HeaderCapture cap;
  char errbuf[CURL_ERROR_SIZE] = {0};
  const long timeout_ms = std::max(1L, static_cast<long>(std::llround(config.timeout_s * 1000.0)));
  CURL* c = h.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_USERAGENT, "kopt/" KOPT_VERSION);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, std::min(timeout_ms, 30000L));
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");  // whatever libcurl can decode
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &cap);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);

  r.code = curl_easy_perform(c);
  if (r.code != CURLE_OK) {
    r.curl_error = errbuf[0] ? errbuf : curl_easy_strerror(r.code);
    return r;
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  r.retry_after_s = cap.retry_after_ms_s ? cap.retry_after_ms_s : cap.retry_after_s;
  return r;
}

/// Transport errors worth another try (the others are a bad URL or TLS set-up).
bool retryable(CURLcode code) {
  switch (code) {
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

std::string seconds_text(double s) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(s < 10 ? 2 : 1);
  o << s << " s";
  return o.str();
}

// ---------------------------------------------------------------------------
// The client
// ---------------------------------------------------------------------------

class HttpClient final : public LlmClient {
 public:
  HttpClient(LlmConfig config, ClientHooks hooks) : config_(std::move(config)), hooks_(std::move(hooks)) {
    responses_ = config_.resolved_api() == "responses";
    url_ = wire::endpoint_url(config_);
    if (!hooks_.sleep) hooks_.sleep = [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
    if (!hooks_.uniform01) {
      auto rng = std::make_shared<std::mt19937_64>(std::random_device{}());
      auto mutex = std::make_shared<std::mutex>();
      hooks_.uniform01 = [rng, mutex] {
        std::lock_guard<std::mutex> lock(*mutex);
        return std::uniform_real_distribution<double>(0.0, 1.0)(*rng);
      };
    }
  }

  const LlmConfig& config() const override { return config_; }

  ChatResponse complete(const ChatRequest& request) override {
    const json body = responses_ ? wire::responses_request(request, config_)
                                 : wire::chat_request(request, config_);
    const std::string text = dump_json(body);
    const std::string where = "POST " + redact(url_, config_.api_key);
    const int max_attempts = std::max(0, config_.max_retries) + 1;

    for (int attempt = 1;; ++attempt) {
      const HttpResult http = post_json(url_, text, config_);
      const bool last = attempt >= max_attempts;

      // Transport failure.
      if (http.code != CURLE_OK) {
        const std::string what = redact(http.curl_error, config_.api_key);
        if (!last && retryable(http.code)) {
          const double delay = backoff(attempt, std::nullopt);
          note(attempt, 0, "transport error (" + what + "); retrying in " + seconds_text(delay));
          sleep(delay);
          continue;
        }
        note(attempt, 0, "transport error (" + what + "); giving up");
        throw LlmError(LlmError::Kind::transport, 0,
                       where + ": " + what + " (" + curl_easy_strerror(http.code) + ") after " +
                           std::to_string(attempt) + " attempt(s)");
      }

      const int status = static_cast<int>(http.status);
      const std::string reply = redact(http.body, config_.api_key);

      // Success.
      if (status >= 200 && status < 300) {
        json parsed = json::parse(reply, nullptr, /*allow_exceptions=*/false);
        if (parsed.is_discarded()) {
          note(attempt, status, "HTTP " + std::to_string(status) + ": the body is not JSON");
          throw LlmError(LlmError::Kind::protocol, status,
                         where + ": HTTP " + std::to_string(status) + " with a body that is not JSON: " +
                             snippet(reply));
        }
        note(attempt, status, "HTTP " + std::to_string(status));
        ChatResponse r = responses_ ? wire::parse_responses_reply(parsed, request.messages)
                                    : wire::parse_chat_reply(parsed, request.messages);
        r.attempts = attempt;
        r.request = redact_json(body);
        r.response = std::move(parsed);
        return r;
      }

      // An HTTP error.
      const wire::ApiError err = wire::parse_api_error(reply);
      const std::string detail = "HTTP " + std::to_string(status) + detail_suffix(err);
      LlmError::Kind kind = LlmError::Kind::bad_request;
      bool retry = false;
      if (status == 401 || status == 403) {
        kind = LlmError::Kind::auth;
      } else if (status == 404) {
        kind = LlmError::Kind::not_found;
      } else if (status == 429) {
        retry = !wire::is_quota_error(err);
        kind = retry ? LlmError::Kind::rate_limited : LlmError::Kind::quota;
      } else if (status == 408) {
        kind = LlmError::Kind::transport;
        retry = true;
      } else if (status == 409 || status >= 500) {
        kind = LlmError::Kind::server;
        retry = true;
      } else if (status >= 400 && status < 500 && wire::is_context_length_error(err)) {
        kind = LlmError::Kind::context_length;
      } else if (status < 400) {  // 1xx/3xx left over: not the API we expected
        kind = LlmError::Kind::protocol;
      }

      if (retry && !last) {
        const double delay = backoff(attempt, http.retry_after_s);
        note(attempt, status,
             detail + "; retrying in " + seconds_text(delay) + (http.retry_after_s ? " (retry-after)" : ""));
        sleep(delay);
        continue;
      }
      note(attempt, status, detail + "; giving up");
      std::string message = where + ": " + detail + " [" + llm_error_kind_name(kind) + "]";
      if (retry) message += " after " + std::to_string(attempt) + " attempt(s)";
      if (kind == LlmError::Kind::not_found) message += " (check the base URL and the model name)";
      if (kind == LlmError::Kind::auth) message += " (check the API key)";
      throw LlmError(kind, status, message);
    }
  }

 private:
  /// Seconds to wait before retrying after failed attempt `attempt` (1-based).
  double backoff(int attempt, std::optional<double> retry_after_s) const {
    if (retry_after_s) return std::min(*retry_after_s, config_.backoff_max_s);
    const double cap = std::min(config_.backoff_max_s,
                                config_.backoff_initial_s * std::pow(2.0, std::min(attempt - 1, 62)));
    const double u = std::clamp(hooks_.uniform01(), 0.0, 1.0);
    return std::max(0.0, u * cap);
  }

  void sleep(double seconds) const {
    hooks_.sleep(std::chrono::milliseconds(std::llround(seconds * 1000.0)));
  }

  void note(int attempt, int status, const std::string& text) const {
    if (hooks_.on_attempt) hooks_.on_attempt(attempt, status, redact(text, config_.api_key));
  }

  json redact_json(const json& j) const {
    if (config_.api_key.size() < 4) return j;
    const std::string text = dump_json(j);
    if (text.find(config_.api_key) == std::string::npos) return j;
    json out = json::parse(redact(text, config_.api_key), nullptr, false);
    return out.is_discarded() ? json("[REDACTED]") : out;
  }

  static std::string snippet(const std::string& s) {
    constexpr std::size_t n = 200;
    return s.size() <= n ? s : s.substr(0, n) + "...";
  }

  static std::string detail_suffix(const wire::ApiError& e) {
    std::string s;
    if (!e.code.empty()) s += " " + e.code;
    else if (!e.type.empty()) s += " " + e.type;
    if (!e.message.empty()) s += ": " + snippet(e.message);
    return s;
  }

  LlmConfig config_;
  ClientHooks hooks_;
  bool responses_ = false;
  std::string url_;
};

}  // namespace

std::unique_ptr<LlmClient> make_client(const LlmConfig& config, ClientHooks hooks) {
  const auto bad = [](const std::string& what) { throw UsageError("kopt.agent.002", what); };
  if (config.base_url.rfind("http://", 0) != 0 && config.base_url.rfind("https://", 0) != 0)
    bad("the LLM base URL must start with http:// or https:// (got '" +
        redact(config.base_url, config.api_key) + "')");
  if (config.api != "auto" && config.api != "chat" && config.api != "responses")
    bad("unknown LLM API '" + config.api + "' (expected auto, chat or responses)");
  if (config.model.empty()) bad("no LLM model given (set OPENAI_MODEL)");
  if (!(std::isfinite(config.timeout_s) && config.timeout_s > 0))
    bad("the LLM timeout must be a positive number of seconds");
  if (config.max_retries < 0) bad("the LLM retry count must be 0 or more");
  if (!(config.backoff_initial_s >= 0 && config.backoff_max_s >= 0 && std::isfinite(config.backoff_max_s)))
    bad("the LLM backoff times must be 0 or more seconds");
  return std::make_unique<HttpClient>(config, std::move(hooks));
}

}  // namespace kopt::agent
