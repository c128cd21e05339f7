// Checks of the report's SVG and HTML text shared by the report tests: XML
// well-formedness (a small checker, no XML library), UTF-8 validity.
#pragma once

#include <cctype>
#include <regex>
#include <string>
#include <vector>

namespace kopt::test {

// A small XML well-formedness check: balanced and properly nested tags,
// quoted unique attributes without '<', known entities only, one root.
// Returns "" when well-formed.
inline std::string xml_problem(const std::string& x) {
  std::vector<std::string> stack;
  bool root_seen = false;
  static const std::regex entity(R"(&(amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);)");
  auto entity_ok = [&](size_t p) {
    const std::string sub = x.substr(p, 12);
    std::smatch m;
    return std::regex_search(sub, m, entity, std::regex_constants::match_continuous);
  };
  auto name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == ':' || c == '_' || c == '.';
  };
  size_t i = 0;
  while (i < x.size()) {
    const char c = x[i];
    if (c == '<') {
      if (x.compare(i, 4, "<!--") == 0) {
        const auto e = x.find("-->", i);
        if (e == std::string::npos) return "unclosed comment";
        i = e + 3;
        continue;
      }
      if (x.compare(i, 2, "<?") == 0) {
        if (root_seen) return "processing instruction after the root";
        const auto e = x.find("?>", i);
        if (e == std::string::npos) return "unclosed <?";
        i = e + 2;
        continue;
      }
      const bool closing = i + 1 < x.size() && x[i + 1] == '/';
      size_t j = i + (closing ? 2 : 1);
      const size_t ns = j;
      while (j < x.size() && name_char(x[j])) ++j;
      const std::string name = x.substr(ns, j - ns);
      if (name.empty()) return "bad tag at offset " + std::to_string(i);
      if (closing) {
        while (j < x.size() && std::isspace(static_cast<unsigned char>(x[j]))) ++j;
        if (j >= x.size() || x[j] != '>') return "bad closing tag </" + name;
        if (stack.empty() || stack.back() != name)
          return "</" + name + "> closes <" + (stack.empty() ? std::string("nothing") : stack.back()) + ">";
        stack.pop_back();
        i = j + 1;
        continue;
      }
      if (stack.empty() && root_seen) return "second root element <" + name + ">";
      root_seen = true;
      std::set<std::string> attrs;
      bool self_closing = false;
      while (true) {
        while (j < x.size() && std::isspace(static_cast<unsigned char>(x[j]))) ++j;
        if (j >= x.size()) return "unterminated <" + name;
        if (x[j] == '>') { ++j; break; }
        if (x[j] == '/' && j + 1 < x.size() && x[j + 1] == '>') { j += 2; self_closing = true; break; }
        const size_t as = j;
        while (j < x.size() && name_char(x[j])) ++j;
        const std::string an = x.substr(as, j - as);
        if (an.empty()) return "bad attribute in <" + name + "> at offset " + std::to_string(j);
        if (!attrs.insert(an).second) return "duplicate attribute " + an + " in <" + name + ">";
        if (j >= x.size() || x[j] != '=') return "attribute " + an + " without value";
        ++j;
        if (j >= x.size() || (x[j] != '"' && x[j] != '\'')) return "unquoted attribute " + an;
        const char q = x[j];
        const auto e = x.find(q, j + 1);
        if (e == std::string::npos) return "unterminated attribute " + an;
        for (size_t k = j + 1; k < e; ++k) {
          if (x[k] == '<') return "'<' in attribute " + an;
          if (x[k] == '&' && !entity_ok(k)) return "bad entity in attribute " + an;
        }
        j = e + 1;
      }
      if (!self_closing) stack.push_back(name);
      i = j;
      continue;
    }
    if (c == '&' && !entity_ok(i)) return "bad entity at offset " + std::to_string(i);
    if (stack.empty() && !std::isspace(static_cast<unsigned char>(c)))
      return "text outside the root at offset " + std::to_string(i);
    ++i;
  }
  if (!stack.empty()) return "unclosed <" + stack.back() + ">";
  if (!root_seen) return "no root element";
  return "";
}

inline bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (int k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += static_cast<size_t>(len);
  }
  return true;
}

}  // namespace kopt::test
