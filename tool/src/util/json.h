// JSON output helpers.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kopt {

/// Serialises `j`, replacing invalid UTF-8 (compiler logs, kernel printf
/// output) with U+FFFD instead of throwing. indent < 0: one line.
inline std::string dump_json(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace kopt
