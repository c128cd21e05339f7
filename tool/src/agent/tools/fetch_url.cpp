// fetch_url (--allow-doc-fetch): a documentation page as plain text, fetched
// with the agent's HTTP client (agent/http.h) from an allowed host at a public
// address only (agent/doc_fetch.h).
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <utility>

#include "agent/common.h"
#include "agent/doc_fetch.h"
#include "agent/http.h"
#include "agent/session.h"
#include "agent/tools/registry.h"
#include "util/url.h"

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
  return {"",
          "Fetch a documentation page (e.g. the CUDA C++ Programming Guide on docs.nvidia.com) as plain text. "
          "Only https URLs on the documentation allowlist can be fetched (docs.nvidia.com, developer.nvidia.com, "
          "nvidia.github.io, cppreference.com, docs.python.org, ... and hosts the user added).",
          {{"type", "object"}, {"properties", {{"url", {{"type", "string"}}}}}, {"required", {"url"}}}};
}

json run(Session& session, const json& a) {
  auto u = a.find("url");
  if (u == a.end() || !u->is_string()) throw ToolFailure("'url' is required");
  const std::string url = u->get<std::string>();
  for (char ch : url)
    if (static_cast<unsigned char>(ch) <= ' ' || ch == '"' || ch == '\\') throw ToolFailure("the URL has invalid characters");
  const AgentOptions& ao = session.agent_options();
  const docfetch::Policy policy =
      docfetch::make_policy(ao.doc_fetch_allow, std::getenv("KOPT_DOC_FETCH_ALLOW"), ao.doc_fetch_unchecked_endpoints);

  // Every hop is checked and pinned to the addresses checked; libcurl follows no redirect itself.
  std::string current = url;
  for (int hop = 0;; ++hop) {
    const std::string shown = url::redact_url(current);
    const std::string where = hop == 0 ? "" : "redirect " + std::to_string(hop) + " to " + clip(shown, 300) + ": ";
    std::string refusal;
    const std::optional<docfetch::Target> target = docfetch::check(policy, current, refusal);
    if (!target) throw ToolFailure("fetch refused: " + where + refusal);
    http::GetOptions go;
    go.timeout_s = 30;
    go.max_bytes = kMaxPageBytes;
    go.user_agent = "kopt-agent";
    go.follow_redirects = false;
    go.use_proxy = false;
    if (const std::string pin = target->resolve_entry(); !pin.empty()) go.resolve.push_back(pin);
    const bool unchecked = target->unchecked;
    go.allow_connect = [unchecked](const struct sockaddr* addr) {
      return unchecked || docfetch::classify(addr) == docfetch::AddressClass::public_address;
    };
    http::Result r;
    try {
      r = http::get(current, go);
    } catch (const LlmError& e) {
      throw ToolFailure(std::string("fetching is unavailable: ") + e.what());
    }
    if (!r.ok()) {
      if (!r.refused_address.empty())
        throw ToolFailure("fetch refused: " + where + "the connection went to " + r.refused_address +
                          ", which is not a public address");
      throw ToolFailure("fetch failed (curl error " + std::to_string(r.code) + "): " + where +
                        clip(url::redact_text(r.error), 300));
    }
    const bool redirect = r.status == 301 || r.status == 302 || r.status == 303 || r.status == 307 || r.status == 308;
    if (redirect && !r.redirect_url.empty()) {
      if (hop >= docfetch::kMaxRedirects)
        throw ToolFailure("fetch failed: more than " + std::to_string(docfetch::kMaxRedirects) + " redirects");
      current = r.redirect_url;
      continue;
    }
    json out = {{"url", shown}, {"text", clip(html_to_text(std::move(r.body)), kMaxTextChars)}};
    if (r.status >= 400) out["http_status"] = r.status;
    return out;
  }
}

}  // namespace kopt::agent::tools::fetch_url
