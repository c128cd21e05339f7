// Numbers as a user types them (command-line values, the budget grammar):
// strict forms that reject what strtol/strtod would quietly accept.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

namespace kopt {

/// A whole number: decimal digits with an optional leading '-' (no spaces,
/// no sign '+', no hex, no exponent), within int64. nullopt otherwise.
inline std::optional<int64_t> parse_whole(const std::string& t) {
  const bool neg = !t.empty() && t[0] == '-';
  const std::string digits = neg ? t.substr(1) : t;
  if (digits.empty() || digits.size() > 19 || digits.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(t.c_str(), &end, 10);
  if (errno == ERANGE || *end != '\0') return std::nullopt;
  return static_cast<int64_t>(v);
}

/// Same within uint64 (no '-').
inline std::optional<uint64_t> parse_unsigned(const std::string& t) {
  if (t.empty() || t.size() > 20 || t.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(t.c_str(), &end, 10);
  if (errno == ERANGE || *end != '\0') return std::nullopt;
  return static_cast<uint64_t>(v);
}

/// A finite decimal number ("1.5", "2e-3"; not "nan", "inf", hex or words).
inline std::optional<double> parse_finite(const std::string& t) {
  // Digits, one optional sign, a point, an exponent: strtod alone would also
  // take "nan", "inf", "0x1p3" and leading spaces.
  if (t.empty() || t.size() > 64 || t.find_first_not_of("0123456789+-.eE") != std::string::npos ||
      t.find_first_of("0123456789") == std::string::npos)
    return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (*end != '\0' || !std::isfinite(v) || errno == ERANGE) return std::nullopt;
  return v;
}

}  // namespace kopt
