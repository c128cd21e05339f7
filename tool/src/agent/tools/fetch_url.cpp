// fetch_url (--allow-doc-fetch): a documentation page as plain text, fetched
// with the agent's HTTP client (agent/http.h).
#include <cctype>
#include <cstring>
#include <utility>

#include "agent/common.h"
#include "agent/http.h"
#include "agent/tools/registry.h"

namespace kopt::agent::tools::fetch_url {

using nlohmann::json;

namespace {

constexpr size_t kMaxPageBytes = 4000000;
constexpr size_t kMaxTextChars = 20000;

/// HTML to text: drops scripts and styles, then tags; collapses blanks;
/// decodes the common entities.
std::string html_to_text(std::string s) {
  std::string out;
  for (const char* tag : {"script", "style"}) {
    for (;;) {
      std::string l = lower(s);
      const size_t b = l.find(std::string("<") + tag);
      if (b == std::string::npos) break;
      const size_t e = l.find(std::string("</") + tag, b);
      const size_t end = e == std::string::npos ? s.size() : l.find('>', e);
      s.erase(b, (end == std::string::npos ? s.size() : end + 1) - b);
    }
  }
  bool in_tag = false, space = false;
  for (char ch : s) {
    if (ch == '<') in_tag = true;
    else if (ch == '>' && in_tag) { in_tag = false; ch = ' '; }
    if (in_tag) continue;
    if (std::isspace(static_cast<unsigned char>(ch))) {
      if (!space) out += (ch == '\n' ? '\n' : ' ');
      space = true;
    } else {
      out += ch;
      space = false;
    }
  }
  for (auto [from, to] : {std::pair<const char*, const char*>{"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}, {"&nbsp;", " "}, {"&amp;", "&"}})
    for (size_t p2 = 0; (p2 = out.find(from, p2)) != std::string::npos; p2 += std::strlen(to)) out.replace(p2, std::strlen(from), to);
  return out;
}

}  // namespace

ToolDef define() {
  return {"", "Fetch a documentation page (e.g. the CUDA C++ Programming Guide) as plain text.",
          {{"type", "object"}, {"properties", {{"url", {{"type", "string"}}}}}, {"required", {"url"}}}};
}

json run(Session&, const json& a) {
  auto u = a.find("url");
  if (u == a.end() || !u->is_string()) throw ToolFailure("'url' is required");
  const std::string url = u->get<std::string>();
  if (url.rfind("https://", 0) != 0 && url.rfind("http://", 0) != 0) throw ToolFailure("only http(s) URLs can be fetched");
  for (char ch : url)
    if (static_cast<unsigned char>(ch) <= ' ' || ch == '"' || ch == '\\') throw ToolFailure("the URL has invalid characters");
  http::GetOptions go;
  go.timeout_s = 30;
  go.max_bytes = kMaxPageBytes;
  go.user_agent = "kopt-agent";
  http::Result r;
  try {
    r = http::get(url, go);
  } catch (const LlmError& e) {
    throw ToolFailure(std::string("fetching is unavailable: ") + e.what());
  }
  if (!r.ok()) throw ToolFailure("fetch failed (curl error " + std::to_string(r.code) + "): " + clip(r.error, 300));
  return {{"url", url}, {"text", clip(html_to_text(std::move(r.body)), kMaxTextChars)}};
}

}  // namespace kopt::agent::tools::fetch_url
