// JSON reading helpers of the spec parser: typed getters, key checks, paths and messages.
#include "spec/spec_parse.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cmath>
#include <limits>
#include <utility>

#include "util/json_read.h"
#include "util/suggest.h"

namespace kopt::spec::detail {

namespace stdfs = std::filesystem;

void Ctx::fail(const char* id, const std::string& path, const std::string& what) const {
  // "$.cases[2].sizes" with sections_["cases"] = {"cases.json", "$"} -> "cases.json: $[2].sizes".
  for (const auto& [key, origin] : sections_) {
    const std::string prefix = "$." + key;
    if (path.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rest = path.substr(prefix.size());
    if (!rest.empty() && rest[0] != '.' && rest[0] != '[') continue;
    throw SpecError(id, origin.file + ": " + origin.path + rest + ": " + what);
  }
  throw SpecError(id, file_ + ": " + path + ": " + what);
}

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string child(const std::string& parent, const std::string& key) {
  return json_path_child(parent, key);
}
std::string child(const std::string& parent, size_t index) { return json_path_child(parent, index); }

/// "a string \"abc\"", "a boolean", ... for "expected X, got Y" messages.
std::string describe(const json& j) { return json_describe(j); }

std::string shown(const std::string& s) { return json_shown(s); }

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

void expect_object(const Ctx& ctx, const json& j, const std::string& path) {
  if (!j.is_object()) ctx.fail("kopt.spec.104", path, "expected an object, got " + describe(j));
}
void expect_array(const Ctx& ctx, const json& j, const std::string& path) {
  if (!j.is_array()) ctx.fail("kopt.spec.104", path, "expected an array, got " + describe(j));
}

/// Rejects keys outside `allowed` (typos must not be silently ignored).
void check_keys(const Ctx& ctx, const json& obj, const std::string& path,
                const std::vector<std::string>& allowed) {
  for (const auto& [key, value] : obj.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    ctx.fail("kopt.spec.105", child(path, key),
             "unknown key '" + shown(key) + "'" + util::did_you_mean(key, allowed) + "; allowed keys: " + join(allowed));
  }
}

const json& need(const Ctx& ctx, const json& obj, const std::string& key, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end()) ctx.fail("kopt.spec.103", path, "missing required key '" + key + "'");
  return *it;
}
const json* opt(const json& obj, const std::string& key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

std::string get_string(const Ctx& ctx, const json& j, const std::string& path) {
  if (!j.is_string()) ctx.fail("kopt.spec.104", path, "expected a string, got " + describe(j));
  return j.get<std::string>();
}
std::string get_nonempty_string(const Ctx& ctx, const json& j, const std::string& path) {
  std::string s = get_string(ctx, j, path);
  if (s.empty()) ctx.fail("kopt.spec.104", path, "expected a non-empty string");
  return s;
}
bool get_bool(const Ctx& ctx, const json& j, const std::string& path) {
  if (!j.is_boolean()) ctx.fail("kopt.spec.104", path, "expected a boolean, got " + describe(j));
  return j.get<bool>();
}
double get_number(const Ctx& ctx, const json& j, const std::string& path) {
  if (!j.is_number()) {
    ctx.fail("kopt.spec.104", path, "expected a number, got " + describe(j) + json_quoted_number_hint(j));
  }
  return j.get<double>();
}
double get_finite(const Ctx& ctx, const json& j, const std::string& path) {
  const double v = get_number(ctx, j, path);
  if (!std::isfinite(v)) ctx.fail("kopt.spec.119", path, "expected a finite number");
  return v;
}
int64_t get_int(const Ctx& ctx, const json& j, const std::string& path) {
  if (!j.is_number_integer()) {
    ctx.fail("kopt.spec.104", path, "expected an integer, got " + describe(j) + json_quoted_number_hint(j));
  }
  if (j.is_number_unsigned() &&
      j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    ctx.fail("kopt.spec.119", path, "integer " + shown(j.dump()) + " does not fit in 64 bits (signed)");
  }
  return j.get<int64_t>();
}
/// An integer in [lo, hi] (kopt.spec.119 outside).
int64_t get_int_in(const Ctx& ctx, const json& j, const std::string& path, int64_t lo, int64_t hi,
                   const std::string& expected) {
  const int64_t v = get_int(ctx, j, path);
  if (v < lo || v > hi) {
    ctx.fail("kopt.spec.119", path, "expected " + expected + ", got " + std::to_string(v));
  }
  return v;
}
std::vector<std::string> get_string_list(const Ctx& ctx, const json& j, const std::string& path) {
  expect_array(ctx, j, path);
  std::vector<std::string> out;
  for (size_t i = 0; i < j.size(); ++i) out.push_back(get_string(ctx, j[i], child(path, i)));
  return out;
}

/// An expression: a string in the grammar of expr.h, or an integer.
Expr get_expr(const Ctx& ctx, const json& j, const std::string& path) {
  if (j.is_number_integer()) return Expr::constant(get_int(ctx, j, path));
  if (!j.is_string()) {
    ctx.fail("kopt.spec.104", path, "expected an expression string or an integer, got " + describe(j));
  }
  try {
    return Expr::parse(j.get<std::string>());
  } catch (const SpecError& e) {
    // "1e-5" or "0.5" is a number written as a string, not an expression.
    std::string hint = json_quoted_number_hint(j);
    if (!hint.empty()) hint = " (" + hint.substr(2) + ")";
    ctx.fail("kopt.spec.111", path, std::string("cannot parse expression: ") + e.what() + hint);
  }
}

void check_identifier(const Ctx& ctx, const std::string& name, const std::string& path,
                      const std::string& what) {
  if (!is_identifier(name)) {
    ctx.fail("kopt.spec.106", path,
             "invalid " + what + " '" + shown(name) + "': expected an identifier ([A-Za-z_][A-Za-z0-9_]*)");
  }
}

/// Names that end up in file names (spec and case names).
void check_file_safe(const Ctx& ctx, const std::string& name, const std::string& path,
                     const std::string& what) {
  const bool bad_char = std::any_of(name.begin(), name.end(), [](char c) {
    return c == '/' || c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
  if (name.empty() || name == "." || name == ".." || bad_char || name.size() > kMaxFileNameLength) {
    ctx.fail("kopt.spec.106", path,
             "invalid " + what + " '" + shown(name) + "'" +
                 (name.size() > kMaxFileNameLength ? " (" + std::to_string(name.size()) + " bytes)" : "") +
                 ": expected a non-empty name usable as a file name (at most " +
                 std::to_string(kMaxFileNameLength) +
                 " bytes; no '/', '\\', control characters, '.' or '..')");
  }
}

}  // namespace kopt::spec::detail
