// Text as it may appear in a message: user strings echoed in errors are
// clipped, so that a 10 MB name or argument cannot flood the terminal or a log.
#pragma once

#include <ctime>
#include <string>

namespace kopt {

/// Characters of a user string echoed in a message.
constexpr size_t kEchoLimit = 100;

/// `s` with line breaks and other control characters shown as spaces, cut
/// to `limit` characters with "..." after (and "(N characters)").
inline std::string clip(const std::string& s, size_t limit = kEchoLimit) {
  size_t cut = limit;
  if (s.size() > limit)
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
  std::string out = s.size() <= limit ? s : s.substr(0, cut);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  if (s.size() > limit) out += "... (" + std::to_string(s.size()) + " characters)";
  return out;
}

/// "'<clip(s)>'": a user string quoted for a message.
inline std::string quote(const std::string& s, size_t limit = kEchoLimit) { return "'" + clip(s, limit) + "'"; }

/// The head and the tail of a long text (three quarters head), with how much
/// was left out in between: for a log or a tool's output shown in a message.
inline std::string clip_middle(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  const size_t head = max * 3 / 4, tail = max - head;
  return s.substr(0, head) + "\n[... " + std::to_string(s.size() - head - tail) + " characters omitted ...]\n" +
         s.substr(s.size() - tail);
}

/// The current time as ISO 8601 in UTC, "2026-12-01T15:18:13Z" (the form of
/// every timestamp kopt writes: run folders, lock holders, generated files).
inline std::string now_iso8601_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace kopt
