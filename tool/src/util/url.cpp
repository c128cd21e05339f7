// URL splitting and credential redaction (see url.h).
#include "util/url.h"

#include <algorithm>
#include <cctype>

namespace kopt::url {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_scheme_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// Percent-decoding ('+' as a blank, as in form-encoded queries).
std::string decode(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else {
      out += s[i] == '+' ? ' ' : s[i];
    }
  }
  return out;
}

/// The end of the authority of `s` starting at `from`.
size_t authority_end(const std::string& s, size_t from) {
  const size_t e = s.find_first_of("/?#", from);
  return e == std::string::npos ? s.size() : e;
}

/// "a=1&key=x" with credential values masked; `secrets` (when given) gets the
/// masked values.
std::string mask_params(const std::string& params, std::vector<std::string>* secrets) {
  std::string out;
  size_t pos = 0;
  while (pos <= params.size()) {
    size_t end = params.find_first_of("&;", pos);
    if (end == std::string::npos) end = params.size();
    const std::string item = params.substr(pos, end - pos);
    const size_t eq = item.find('=');
    if (eq != std::string::npos && is_credential_name(item.substr(0, eq)) && eq + 1 < item.size()) {
      if (secrets) {
        secrets->push_back(item.substr(eq + 1));
        secrets->push_back(decode(item.substr(eq + 1)));
      }
      out += item.substr(0, eq + 1) + kRedacted;
    } else {
      out += item;
    }
    if (end < params.size()) out += params[end];
    pos = end + 1;
  }
  return out;
}

/// Path, query and fragment with credential parameters masked.
std::string mask_rest(const std::string& rest, std::vector<std::string>* secrets) {
  const size_t q = rest.find('?');
  const size_t h = rest.find('#');
  std::string out;
  if (q != std::string::npos && (h == std::string::npos || q < h)) {
    const size_t qend = h == std::string::npos ? rest.size() : h;
    out = rest.substr(0, q + 1) + mask_params(rest.substr(q + 1, qend - q - 1), secrets);
  } else {
    out = rest.substr(0, h == std::string::npos ? rest.size() : h);
  }
  if (h != std::string::npos) {
    const std::string frag = rest.substr(h + 1);
    out += "#" + (frag.find('=') != std::string::npos ? mask_params(frag, secrets) : frag);
  }
  return out;
}

/// The user-info of `authority` (before its last '@'), or npos.
size_t userinfo_at(const std::string& s, size_t begin, size_t end) {
  const size_t at = s.rfind('@', end == 0 ? 0 : end - 1);
  return at != std::string::npos && at >= begin && at < end ? at : std::string::npos;
}

}  // namespace

bool is_credential_name(const std::string& raw) {
  std::string n = lower(decode(raw));
  std::replace(n.begin(), n.end(), '-', '_');
  n.erase(std::remove_if(n.begin(), n.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); }),
          n.end());
  for (const char* exact : {"sig", "pwd", "auth", "authorization", "code", "session", "sid"})
    if (n == exact) return true;
  for (const char* part : {"key", "token", "secret", "passw", "signature", "credential"})
    if (n.find(part) != std::string::npos) return true;
  return false;
}

std::optional<Parts> split(const std::string& url) {
  const size_t sep = url.find("://");
  if (sep == std::string::npos || sep == 0) return std::nullopt;
  for (size_t i = 0; i < sep; ++i)
    if (!is_scheme_char(url[i]) || (i == 0 && !std::isalpha(static_cast<unsigned char>(url[i])))) return std::nullopt;
  Parts p;
  p.scheme = lower(url.substr(0, sep));
  const size_t a = sep + 3;
  const size_t e = authority_end(url, a);
  size_t hp = a;
  if (const size_t at = userinfo_at(url, a, e); at != std::string::npos) {
    p.has_userinfo = true;
    p.userinfo = url.substr(a, at - a);
    hp = at + 1;
  }
  std::string hostport = url.substr(hp, e - hp);
  if (!hostport.empty() && hostport.front() == '[') {
    const size_t close = hostport.find(']');
    if (close == std::string::npos) return std::nullopt;
    p.host = lower(hostport.substr(1, close - 1));
    p.ipv6_literal = true;
    const std::string after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return std::nullopt;
      p.port = after.substr(1);
    }
  } else {
    const size_t colon = hostport.rfind(':');
    if (colon != std::string::npos) {
      p.port = hostport.substr(colon + 1);
      hostport.erase(colon);
    }
    p.host = lower(hostport);
  }
  for (char c : p.port)
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  p.rest = url.substr(e);
  return p;
}

std::string redact_url(const std::string& url) {
  const size_t sep = url.find("://");
  const size_t a = sep == std::string::npos ? 0 : sep + 3;
  const size_t e = authority_end(url, a);
  std::string out = url.substr(0, a);
  const size_t at = userinfo_at(url, a, e);
  out += url.substr(at == std::string::npos ? a : at + 1, e - (at == std::string::npos ? a : at + 1));
  return out + mask_rest(url.substr(e), nullptr);
}

std::vector<std::string> url_secrets(const std::string& url) {
  std::vector<std::string> raw;
  const size_t sep = url.find("://");
  const size_t a = sep == std::string::npos ? 0 : sep + 3;
  const size_t e = authority_end(url, a);
  if (const size_t at = userinfo_at(url, a, e); at != std::string::npos) {
    const std::string info = url.substr(a, at - a);
    const size_t colon = info.find(':');
    const std::string secret = colon == std::string::npos ? info : info.substr(colon + 1);
    raw.push_back(secret);
    raw.push_back(decode(secret));
  }
  mask_rest(url.substr(e), &raw);
  std::vector<std::string> out;
  for (auto& s : raw)
    if (s.size() >= 6 && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(std::move(s));
  // Longest first: a piece that contains another is replaced whole.
  std::sort(out.begin(), out.end(), [](const std::string& x, const std::string& y) { return x.size() > y.size(); });
  return out;
}

std::string redact_text(const std::string& text, const std::vector<std::string>& secrets) {
  std::string out;
  size_t pos = 0;  // text[pos..] is not copied yet
  size_t from = 0;
  for (;;) {
    const size_t hit = text.find("://", from);
    if (hit == std::string::npos) break;
    from = hit + 3;
    size_t begin = hit;
    while (begin > pos && is_scheme_char(text[begin - 1])) --begin;
    while (begin < hit && !std::isalpha(static_cast<unsigned char>(text[begin]))) ++begin;
    if (begin == hit) continue;  // no scheme before "://"
    size_t end = hit + 3;
    while (end < text.size()) {
      const unsigned char c = static_cast<unsigned char>(text[end]);
      if (std::isspace(c) || std::iscntrl(c) || c == '"' || c == '\'' || c == '<' || c == '>' || c == '`' ||
          c == '\\')
        break;
      ++end;
    }
    out.append(text, pos, begin - pos);
    out += redact_url(text.substr(begin, end - begin));
    pos = from = end;
  }
  out.append(text, pos, std::string::npos);
  for (const auto& s : secrets) {
    if (s.empty()) continue;
    for (size_t p = out.find(s); p != std::string::npos; p = out.find(s, p + std::char_traits<char>::length(kRedacted)))
      out.replace(p, s.size(), kRedacted);
  }
  return out;
}

}  // namespace kopt::url
