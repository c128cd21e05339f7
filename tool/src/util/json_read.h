// Reading JSON that people write (specs, --input-cases, tuning caches, run
// folders, worker requests): strict parsing and errors that name the file and
// the JSON path, never a raw "[json.exception...]".
//
// parse_json() is nlohmann's parser with what it lets through turned into
// errors: a duplicate key (nlohmann keeps the last one silently), a number
// beyond the range of a double (1e999), nesting deeper than kMaxJsonDepth.
// Its errors (SpecError, exit 2) read "<where>: <position>: <what>":
//
//   kopt.json.001  not valid JSON (line and column, and the JSON path reached)
//   kopt.json.002  duplicate key (the key and the path of its object)
//   kopt.json.003  a number out of range (beyond a double)
//   kopt.json.004  nested too deeply
//   kopt.json.005  a value of the wrong type or out of range for what reads
//                  it (JsonAt, json_errors_at)
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "util/fs.h"

namespace kopt {

constexpr size_t kMaxJsonDepth = 256;

/// JSON paths as messages show them: json_path_child("$.cases", 3) is
/// "$.cases[3]", json_path_child("$.sizes", "M") is "$.sizes.M", and a key
/// that is not an identifier is quoted: "$.outputs[\"my out\"]".
std::string json_path_child(const std::string& parent, const std::string& key);
std::string json_path_child(const std::string& parent, size_t index);

/// `text` cut to `max` characters ("..." appended), for messages.
std::string json_shown(const std::string& text, size_t max = 60);

/// Parses `text` as one JSON value. `where` names it in messages (a file
/// name, or e.g. "worker request"). Throws SpecError kopt.json.001-004.
nlohmann::json parse_json(const std::string& text, const std::string& where);

/// fs::read_file(file, what, max_bytes) (kopt.io.*), then parse_json.
nlohmann::json parse_json_file(const std::filesystem::path& file, const std::string& what,
                               uint64_t max_bytes = fs::kJsonMaxBytes);

/// Throws SpecError("kopt.json.005", "<where>: <path>: <e without its
/// [json.exception...] prefix>").
[[noreturn]] void throw_json_error(const std::string& where, const std::string& path,
                                   const nlohmann::json::exception& e);

/// Runs f(); a nlohmann::json::exception it throws (a type error of a
/// `.get<T>()`, a missing `.at()`) becomes kopt.json.005 naming `where` and
/// `path`. For code that reads a whole section without a JsonAt.
template <typename F>
decltype(auto) json_errors_at(const std::string& where, const std::string& path, F&& f) {
  try {
    return f();
  } catch (const nlohmann::json::exception& e) {
    throw_json_error(where, path, e);
  }
}

/// A JSON value with the file and the path it was read from: typed reads
/// whose errors (SpecError kopt.json.005) name both, e.g.
///   "cache.json: $.entries[2].gpu.name: expected a string, got an integer (5)".
class JsonAt {
 public:
  JsonAt(const nlohmann::json& j, std::string where, std::string path = "$")
      : j_(&j), where_(std::move(where)), path_(std::move(path)) {}

  const nlohmann::json& value() const { return *j_; }
  const std::string& where() const { return where_; }
  const std::string& path() const { return path_; }

  /// Member `key` of this object (errors: not an object, member missing).
  JsonAt at(const std::string& key) const;
  /// Member `key`, or nullopt when absent (error: not an object). A null
  /// member is returned: the typed read then says "got null".
  std::optional<JsonAt> find(const std::string& key) const;
  /// Element i of this array (errors: not an array, out of range).
  JsonAt at(size_t i) const;
  /// The number of elements of this array (error: not an array).
  size_t size() const;

  const JsonAt& expect_object() const;
  const JsonAt& expect_array() const;
  std::string string() const;
  bool boolean() const;
  /// An integer in [lo, hi].
  int64_t integer(int64_t lo = INT64_MIN, int64_t hi = INT64_MAX) const;
  /// A finite number in [lo, hi].
  double number(double lo = -1.7976931348623157e308, double hi = 1.7976931348623157e308) const;

  /// Throws SpecError(id, "<where>: <path>: <what>").
  [[noreturn]] void fail(const std::string& what, const char* id = "kopt.json.005") const;

 private:
  const nlohmann::json* j_;
  std::string where_;
  std::string path_;
};

/// "a string \"abc\"", "an integer (5)", "an object"... for "expected X, got Y".
std::string json_describe(const nlohmann::json& j);

/// For "expected a number" messages: when `j` is a string that holds a
/// number (\"1e-5\"), "; numbers are written without quotes (1e-5, not
/// \"1e-5\")"; else "".
std::string json_quoted_number_hint(const nlohmann::json& j);

}  // namespace kopt
