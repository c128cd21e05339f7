// The HTTP side of the LLM client: one POST per attempt (agent/http.h, over
// libcurl), retries with exponential backoff and full jitter, error
// classification, and the key kept out of everything but the Authorization
// header.
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

#include "agent/http.h"
#include "agent/llm.h"
#include "agent/llm_wire.h"
#include "util/json.h"
#include "util/url.h"

namespace kopt::agent {

using nlohmann::json;

namespace {

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
    const std::string where = "POST " + redact(url_, config_);  // the URL without its credentials
    const int max_attempts = std::max(0, config_.max_retries) + 1;

    for (int attempt = 1;; ++attempt) {
      const http::Result ex = http::post_json(url_, text, config_);
      const bool last = attempt >= max_attempts;

      // Transport failure.
      if (!ex.ok()) {
        const std::string what = redact(ex.error, config_);  // libcurl may echo the URL
        if (!last && http::retryable(ex.code)) {
          const double delay = backoff(attempt, std::nullopt);
          note(attempt, 0, "transport error (" + what + "); retrying in " + seconds_text(delay));
          sleep(delay);
          continue;
        }
        note(attempt, 0, "transport error (" + what + "); giving up");
        throw LlmError(LlmError::Kind::transport, 0,
                       where + ": " + what + " (" + ex.code_text + ") after " +
                           std::to_string(attempt) + " attempt(s)");
      }

      const int status = static_cast<int>(ex.status);
      const std::string reply = redact(ex.body, config_);

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
        const double delay = backoff(attempt, ex.retry_after_s);
        note(attempt, status,
             detail + "; retrying in " + seconds_text(delay) + (ex.retry_after_s ? " (retry-after)" : ""));
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
    if (hooks_.on_attempt) hooks_.on_attempt(attempt, status, redact(text, config_));
  }

  json redact_json(const json& j) const {
    const std::string text = dump_json(j);
    const std::string clean = redact(text, config_);
    if (clean == text) return j;
    json out = json::parse(clean, nullptr, false);
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
        redact(url::redact_url(config.base_url), config) + "')");
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
