// LLM client configuration: the transcript's small helpers, LlmError,
// resolve_config() (command line > environment > .env > defaults),
// parse_dotenv() and redact().
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <system_error>

#include "agent/llm.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/url.h"

namespace kopt::agent {

const char* role_name(Role r) {
  switch (r) {
    case Role::system: return "system";
    case Role::user: return "user";
    case Role::assistant: return "assistant";
    case Role::tool: return "tool";
  }
  return "unknown";
}

Usage& Usage::operator+=(const Usage& o) {
  input_tokens += o.input_tokens;
  output_tokens += o.output_tokens;
  reasoning_tokens += o.reasoning_tokens;
  total_tokens += o.total_tokens;
  return *this;
}

nlohmann::json Usage::to_json() const {
  return nlohmann::json{{"input_tokens", input_tokens},
                        {"output_tokens", output_tokens},
                        {"reasoning_tokens", reasoning_tokens},
                        {"total_tokens", total_tokens}};
}

const char* llm_error_kind_name(LlmError::Kind k) {
  switch (k) {
    case LlmError::Kind::transport: return "transport";
    case LlmError::Kind::auth: return "auth";
    case LlmError::Kind::not_found: return "not_found";
    case LlmError::Kind::bad_request: return "bad_request";
    case LlmError::Kind::quota: return "quota";
    case LlmError::Kind::rate_limited: return "rate_limited";
    case LlmError::Kind::server: return "server";
    case LlmError::Kind::context_length: return "context_length";
    case LlmError::Kind::protocol: return "protocol";
  }
  return "unknown";
}

namespace {

std::string error_id(LlmError::Kind k) {
  const int n = 10 + static_cast<int>(k);
  return std::string("kopt.agent.0") + (n < 10 ? "0" : "") + std::to_string(n);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// The lower-case host of an http(s) URL ("" when there is none).
std::string url_host(const std::string& url) {
  const auto scheme = url.find("://");
  std::string rest = scheme == std::string::npos ? url : url.substr(scheme + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (const auto at = rest.rfind('@'); at != std::string::npos) rest = rest.substr(at + 1);
  if (!rest.empty() && rest.front() == '[') return lower(rest.substr(0, rest.find(']') + 1));
  return lower(rest.substr(0, rest.find(':')));
}

}  // namespace

LlmError::LlmError(Kind kind, int http_status, const std::string& message)
    : Error(error_id(kind), message), kind_(kind), status_(http_status) {}

std::string LlmConfig::resolved_api() const {
  if (api == "chat" || api == "responses") return api;
  return url_host(base_url) == "api.openai.com" ? "responses" : "chat";
}

bool LlmConfig::is_openai_host() const {
  const std::string host = url_host(base_url);
  return host == "api.openai.com" || ends_with(host, ".openai.azure.com");
}

std::string redact(const std::string& text, const std::string& secret) {
  if (secret.size() < 4 || text.size() < secret.size()) return text;
  std::string out;
  out.reserve(text.size());
  std::size_t pos = 0;
  for (;;) {
    const auto hit = text.find(secret, pos);
    if (hit == std::string::npos) break;
    out.append(text, pos, hit - pos).append("[REDACTED]");
    pos = hit + secret.size();
  }
  if (pos == 0) return text;
  out.append(text, pos, std::string::npos);
  return out;
}

std::string redact(const std::string& text, const LlmConfig& config) {
  return url::redact_text(redact(text, config.api_key), url::url_secrets(config.base_url));
}

// ---------------------------------------------------------------------------
// .env
// ---------------------------------------------------------------------------

namespace {

[[noreturn]] void dotenv_error(const std::string& origin, int line, const std::string& what) {
  // Never quote the line: it may hold the key.
  throw UsageError("kopt.agent.001", origin + ":" + std::to_string(line) + ": " + what +
                                         " (expected KEY=VALUE, optionally quoted)");
}

bool is_space(char c) { return c == ' ' || c == '\t'; }

/// After a closing quote: only blanks and an optional # comment may follow.
void expect_line_end(const std::string& s, std::size_t i, const std::string& origin, int line) {
  while (i < s.size() && is_space(s[i])) ++i;
  if (i < s.size() && s[i] != '#') dotenv_error(origin, line, "unexpected text after the closing quote");
}

}  // namespace

std::map<std::string, std::string> parse_dotenv(const std::string& text, const std::string& origin) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string s;
  int line = 0;
  while (std::getline(in, s)) {
    ++line;
    if (!s.empty() && s.back() == '\r') s.pop_back();
    if (line == 1 && s.rfind("\xEF\xBB\xBF", 0) == 0) s.erase(0, 3);  // UTF-8 BOM
    std::size_t i = 0;
    while (i < s.size() && is_space(s[i])) ++i;
    if (i == s.size() || s[i] == '#') continue;
    if (s.compare(i, 6, "export") == 0 && i + 6 < s.size() && is_space(s[i + 6])) {
      i += 6;
      while (i < s.size() && is_space(s[i])) ++i;
    }
    const std::size_t key_begin = i;
    if (i < s.size() && (std::isalpha(static_cast<unsigned char>(s[i])) || s[i] == '_')) {
      while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_' || s[i] == '.'))
        ++i;
    }
    if (i == key_begin) dotenv_error(origin, line, "no variable name");
    const std::string key = s.substr(key_begin, i - key_begin);
    while (i < s.size() && is_space(s[i])) ++i;
    if (i == s.size() || s[i] != '=') dotenv_error(origin, line, "no '=' after the name " + key);
    ++i;
    while (i < s.size() && is_space(s[i])) ++i;

    std::string value;
    if (i < s.size() && s[i] == '\'') {
      const auto close = s.find('\'', i + 1);
      if (close == std::string::npos) dotenv_error(origin, line, "unterminated single quote for " + key);
      value = s.substr(i + 1, close - i - 1);
      expect_line_end(s, close + 1, origin, line);
    } else if (i < s.size() && s[i] == '"') {
      std::size_t j = i + 1;
      bool closed = false;
      for (; j < s.size(); ++j) {
        const char c = s[j];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\' && j + 1 < s.size()) {
          const char e = s[++j];
          switch (e) {
            case 'n': value += '\n'; break;
            case 't': value += '\t'; break;
            case 'r': value += '\r'; break;
            case '"': value += '"'; break;
            case '\\': value += '\\'; break;
            default: value += '\\'; value += e; break;
          }
          continue;
        }
        value += c;
      }
      if (!closed) dotenv_error(origin, line, "unterminated double quote for " + key);
      expect_line_end(s, j + 1, origin, line);
    } else {
      // Unquoted: up to a '#' that follows a blank (a comment), trailing blanks trimmed.
      std::size_t end = s.size();
      for (std::size_t j = i; j < s.size(); ++j) {
        if (s[j] == '#' && (j == i || is_space(s[j - 1]))) {
          end = j;
          break;
        }
      }
      value = s.substr(i, end - i);
      while (!value.empty() && is_space(value.back())) value.pop_back();
    }
    out[key] = value;
  }
  return out;
}

// ---------------------------------------------------------------------------
// resolve_config
// ---------------------------------------------------------------------------

namespace {

struct Source {
  std::string value;
  std::string origin;  // for error messages: "--flag", "VAR", "file:VAR"
};

void check_api(const std::string& api, const std::string& origin) {
  if (api != "auto" && api != "chat" && api != "responses")
    throw UsageError("kopt.agent.002",
                     origin + ": unknown API '" + api + "' (expected auto, chat or responses)");
}

}  // namespace

LlmConfig resolve_config(const LlmOverrides& cli, const std::string& dotenv,
                         const std::function<const char*(const char*)>& getenv) {
  const auto env = [&](const char* name) -> const char* {
    return getenv ? getenv(name) : std::getenv(name);
  };

  std::map<std::string, std::string> file_vars;
  if (!dotenv.empty()) {
    // No .env file is fine; one that cannot be read (a folder, a device,
    // no permission, too big) is an error naming it.
    const std::string why = fs::unreadable_reason(dotenv);
    if (why.rfind("not found", 0) != 0) {
      if (!why.empty()) throw UsageError("kopt.agent.003", fs::display(dotenv) + ": cannot read the .env file: " + why);
      std::string text;
      try {
        text = fs::read_file(dotenv, ".env file", fs::kSourceMaxBytes);
      } catch (const SpecError& e) {
        throw UsageError("kopt.agent.003", std::string(e.what()).substr(e.id().size() + 3));
      }
      file_vars = parse_dotenv(text, dotenv);
    }
  }

  // Environment first, then .env: a variable set in the environment (even to
  // "") is never overridden by the file.
  const auto lookup = [&](const char* name) -> std::optional<Source> {
    if (const char* v = env(name)) return Source{v, name};
    if (auto it = file_vars.find(name); it != file_vars.end())
      return Source{it->second, dotenv + ":" + name};
    return std::nullopt;
  };

  LlmConfig c;
  if (cli.api_key) c.api_key = *cli.api_key;
  else if (auto s = lookup("OPENAI_API_KEY")) c.api_key = s->value;

  // An empty base URL, model or API means "the default".
  if (cli.base_url && !cli.base_url->empty()) c.base_url = *cli.base_url;
  else if (auto s = lookup("OPENAI_BASE_URL"); s && !s->value.empty()) c.base_url = s->value;

  if (cli.model && !cli.model->empty()) c.model = *cli.model;
  else if (auto s = lookup("OPENAI_MODEL"); s && !s->value.empty()) c.model = s->value;

  if (cli.reasoning_effort) {
    c.reasoning_effort = *cli.reasoning_effort;
    c.reasoning_effort_explicit = true;
  } else if (auto s = lookup("OPENAI_REASONING_EFFORT")) {
    c.reasoning_effort = s->value;
    c.reasoning_effort_explicit = true;
  }

  if (cli.api && !cli.api->empty()) {
    check_api(*cli.api, "--llm-api");
    c.api = *cli.api;
  } else if (auto s = lookup("KOPT_LLM_API"); s && !s->value.empty()) {
    check_api(s->value, s->origin);
    c.api = s->value;
  }

  if (cli.timeout_s) {
    if (!(std::isfinite(*cli.timeout_s) && *cli.timeout_s > 0))
      throw UsageError("kopt.agent.002", "the LLM timeout must be a positive number of seconds");
    c.timeout_s = *cli.timeout_s;
  }
  if (cli.max_retries) {
    if (*cli.max_retries < 0)
      throw UsageError("kopt.agent.002", "the LLM retry count must be 0 or more");
    c.max_retries = *cli.max_retries;
  }
  return c;
}

}  // namespace kopt::agent
