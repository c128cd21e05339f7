#include "report/text.h"

#include <cmath>
#include <cstdio>

#include "util/url.h"

namespace kopt::report::text {

// ---------------------------------------------------------------------------
// Text helpers

// Appends the code point `cp` as UTF-8.
void put_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Decodes `s` into code points; invalid UTF-8 becomes U+FFFD.
std::vector<uint32_t> decode_utf8(const std::string& s) {
  std::vector<uint32_t> cps;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    int len = 0;
    uint32_t cp = 0, min = 0;
    if (c < 0x80) { cps.push_back(c); ++i; continue; }
    if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; min = 0x80; }
    else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; min = 0x800; }
    else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; min = 0x10000; }
    bool ok = len > 0 && i + static_cast<size_t>(len) <= n;
    for (int k = 1; ok && k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) ok = false;
      else cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if (ok && (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) ok = false;
    if (!ok) { cps.push_back(0xFFFD); ++i; continue; }
    cps.push_back(cp);
    i += static_cast<size_t>(len);
  }
  return cps;
}

// Escapes text for XML/HTML content and attribute values. Invalid UTF-8 and
// characters XML forbids become U+FFFD; with `multiline` false, tabs and line
// breaks become spaces. A URL in the text is shown without its credentials
// (util/url.h), whatever the run folder holds.
std::string esc(const std::string& text, bool multiline) {
  const std::string s = text.find("://") == std::string::npos ? text : url::redact_text(text);
  std::string out;
  out.reserve(s.size() + 16);
  for (uint32_t cp : decode_utf8(s)) {
    switch (cp) {
      case '&': out += "&amp;"; continue;
      case '<': out += "&lt;"; continue;
      case '>': out += "&gt;"; continue;
      case '"': out += "&quot;"; continue;
      case '\'': out += "&#39;"; continue;
      default: break;
    }
    if (cp == '\t' || cp == '\n' || cp == '\r') {
      out += multiline ? static_cast<char>(cp) : ' ';
    } else if (cp < 0x20 || cp == 0x7F || cp == 0xFFFE || cp == 0xFFFF) {
      put_utf8(out, 0xFFFD);
    } else {
      put_utf8(out, cp);
    }
  }
  return out;
}

std::string esc_label(const std::string& text) {
  const std::string e = esc(text);
  std::string out;
  out.reserve(e.size() + 16);
  for (char c : e) {
    out += c;
    if (c == ',') out += "<wbr>";
  }
  return out;
}

// At most `max_chars` code points of `s` (the last one an ellipsis if cut).
std::string truncate(const std::string& s, size_t max_chars) {
  std::vector<uint32_t> cps = decode_utf8(s);
  if (cps.size() <= max_chars) return s;
  std::string out;
  for (size_t i = 0; i + 1 < max_chars && i < cps.size(); ++i) put_utf8(out, cps[i]);
  put_utf8(out, 0x2026);
  return out;
}

size_t length_chars(const std::string& s) { return decode_utf8(s).size(); }

std::string fmt(double v, const char* f) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// A number for an attribute: full precision, locale independent.
std::string num_attr(double v) { return fmt(v, "%.17g"); }

std::string speedup_text(double s) {
  if (!std::isfinite(s)) return fmt(s);
  return fmt(s, s >= 1000 ? "%.0f" : "%.3g") + "x";
}

bool finite_positive(double v) { return std::isfinite(v) && v > 0; }

}  // namespace kopt::report::text
