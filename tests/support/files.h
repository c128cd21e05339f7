// Reading files in tests: the whole text of a file, and a JSON document.
// Test support, not part of the tool: header-only, included as
// "support/files.h".
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace kopt::test {

/// The bytes of `path`; "" when it cannot be opened (missing, unreadable).
/// For checks such as "the file does not name X", which a missing file
/// passes; where the file must exist, use read_json() or kopt::fs::read_file().
inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The JSON document in `path`. Throws std::runtime_error naming the file
/// when it cannot be opened or does not parse (nlohmann's message appended).
inline nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::runtime_error(path.string() + ": not JSON: " + e.what());
  }
}

}  // namespace kopt::test
