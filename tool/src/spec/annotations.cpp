#include "spec/annotations.h"

#include <sstream>

#include "util/error.h"

namespace kopt::spec {
namespace {
std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}
}  // namespace

std::vector<std::string> split_top_level(const std::string& list) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char ch : list) {
    if (ch == '(') ++depth;
    if (ch == ')') --depth;
    if (ch == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!trim(cur).empty() || !out.empty()) out.push_back(trim(cur));
  return out;
}

Annotations parse_annotations(const std::string& source, const std::string& origin) {
  Annotations a;
  a.origin = origin;
  std::istringstream in(source);
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const auto pos = line.find("// kopt:");
    if (pos == std::string::npos) continue;
    const std::string rest = line.substr(pos + 8);
    const auto sp = rest.find_first_of(" \t");
    const std::string key = trim(rest.substr(0, sp));
    const std::string value = sp == std::string::npos ? "" : trim(rest.substr(sp));
    const std::string where = origin + ":" + std::to_string(lineno) + ": ";
    auto dims = [&](const char* what) {
      auto parts = split_top_level(value);
      if (parts.empty() || parts.size() > 3)
        throw SpecError("kopt.annot.401", where + "kopt:" + what + " needs 1 to 3 comma-separated expressions, got '" + value + "'");
      std::vector<Expr> e;
      for (const auto& p : parts) {
        try {
          e.push_back(Expr::parse(p));
        } catch (const Error& err) {
          throw SpecError("kopt.annot.402", where + "kopt:" + what + ": " + err.what());
        }
      }
      while (e.size() < 3) e.push_back(Expr::constant(1));
      return e;
    };
    if (key == "entry") {
      if (value.empty() || value.find_first_of(" \t") != std::string::npos)
        throw SpecError("kopt.annot.403", where + "kopt:entry needs one function name, got '" + value + "'");
      if (!a.entry) a.entry = value;
    } else if (key == "grid") {
      auto d = dims("grid");
      if (!a.grid) a.grid = d, a.grid_line = lineno;
    } else if (key == "block") {
      auto d = dims("block");
      if (!a.block) a.block = d, a.block_line = lineno;
    } else if (key == "shared" || key == "static_shared") {
      std::optional<Expr> e;
      try {
        e = Expr::parse(value);
      } catch (const Error& err) {
        throw SpecError("kopt.annot.402", where + "kopt:" + key + ": " + err.what());
      }
      std::optional<Expr>& field = key == "shared" ? a.shared_bytes : a.static_shared_bytes;
      if (!field) {
        field = e;
        (key == "shared" ? a.shared_line : a.static_shared_line) = lineno;
      }
    } else if (key == "options") {
      std::istringstream opts(value);
      std::string o;
      while (opts >> o) a.options.push_back(o);
    } else if (key == "param") {
      const auto eq = value.find('=');
      const std::string name = trim(value.substr(0, eq));
      int64_t v = 0;
      try {
        if (eq == std::string::npos || name.empty()) throw std::invalid_argument("no '='");
        size_t used = 0;
        const std::string num = trim(value.substr(eq + 1));
        v = std::stoll(num, &used);
        if (used != num.size()) throw std::invalid_argument("trailing characters");
      } catch (const std::exception&) {
        throw SpecError("kopt.annot.405", where + "kopt:param needs NAME=INTEGER, got '" + value + "'");
      }
      a.params.emplace(name, v);  // the first line for a name wins
    } else {
      throw SpecError("kopt.annot.404", where + "unknown annotation 'kopt:" + key +
                                            "' (known: entry, grid, block, shared, static_shared, options, param)");
    }
  }
  return a;
}

}  // namespace kopt::spec
