// The layer check (see layers.h): the table parser, the include scanner and
// the tree walk.
#include "layers.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <system_error>
#include <tuple>

namespace kopt::layers {
namespace fs = std::filesystem;

namespace {

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_name(const std::string& s) {
  if (s.empty() || !is_ident_start(s[0])) return false;
  return std::all_of(s.begin(), s.end(), is_ident_char);
}

std::string trim(const std::string& s) {
  const char* ws = " \t\r\f\v";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

std::vector<std::string> split_ws(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

std::optional<std::string> read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

bool is_source(const fs::path& p) {
  static const std::set<std::string> exts = {".h", ".hh", ".hpp", ".cpp", ".cc", ".cxx"};
  return exts.count(p.extension().string()) > 0;
}

/// `p`'s components as strings ("a/b/c.h" -> a, b, c.h).
std::vector<std::string> parts_of(const fs::path& p) {
  std::vector<std::string> out;
  for (const auto& c : p) out.push_back(c.string());
  return out;
}

}  // namespace

// ---------------------------------------------------------------- the table

const Part* Table::find(const std::string& name) const {
  for (const auto& p : parts)
    if (p.name == name) return &p;
  return nullptr;
}

bool Table::allows(const std::string& from, const std::string& to) const {
  if (from == to) return true;
  const Part* p = find(from);
  if (!p) return false;
  return std::find(p->deps.begin(), p->deps.end(), to) != p->deps.end();
}

std::string Table::allowed_text(const std::string& part) const {
  const Part* p = find(part);
  if (!p) return "nothing";
  if (p->star) return "*";
  if (p->deps.empty()) return "nothing";
  return join(p->deps, " ");
}

TableResult parse_table(const std::string& text, const std::string& origin) {
  TableResult r;
  r.table.origin = origin;
  auto error = [&](int line, const std::string& what) {
    r.errors.push_back(origin + ":" + std::to_string(line) + ": " + what);
  };
  std::map<std::string, int> line_of;  // part -> its line
  std::istringstream in(text);
  int n = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++n;
    std::string l = raw.substr(0, raw.find('#'));
    l = trim(l);
    if (l.empty()) continue;
    size_t colon = l.find(':');
    if (colon == std::string::npos) {
      error(n, "expected 'part: dep dep ...', got '" + l + "'");
      continue;
    }
    Part p;
    p.name = trim(l.substr(0, colon));
    p.line = n;
    if (!is_name(p.name)) {
      error(n, "bad part name '" + p.name + "' (letters, digits and _)");
      continue;
    }
    if (auto it = line_of.find(p.name); it != line_of.end()) {
      error(n, "part '" + p.name + "' listed twice (first at line " + std::to_string(it->second) + ")");
      continue;
    }
    bool good = true;
    std::vector<std::string> deps = split_ws(l.substr(colon + 1));
    for (size_t i = 0; i < deps.size(); ++i) {
      const std::string& d = deps[i];
      if (d == "*") {
        if (deps.size() != 1) {
          error(n, "'*' (every other part) must be alone after the colon");
          good = false;
        }
        p.star = true;
      } else if (!is_name(d)) {
        error(n, "bad dependency '" + d + "' (names are letters, digits and _, separated by spaces)");
        good = false;
      } else if (d == p.name) {
        error(n, "part '" + p.name + "' lists itself");
        good = false;
      } else if (std::find(deps.begin(), deps.begin() + i, d) != deps.begin() + i) {
        error(n, "part '" + p.name + "' lists '" + d + "' twice");
        good = false;
      }
    }
    if (!p.star) p.deps = deps;
    line_of[p.name] = n;
    if (good) r.table.parts.push_back(std::move(p));
    else r.table.parts.push_back(Part{p.name, n, {}, false});  // keep the name known: no knock-on errors
  }
  if (r.table.parts.empty() && r.errors.empty()) r.errors.push_back(origin + ": no parts");
  // Deps without a line of their own; then `*` becomes every other part.
  for (auto& p : r.table.parts)
    for (const auto& d : p.deps)
      if (!line_of.count(d))
        error(p.line, "part '" + p.name + "' uses '" + d + "', which has no line of its own");
  for (auto& p : r.table.parts)
    if (p.star)
      for (const auto& q : r.table.parts)
        if (q.name != p.name) p.deps.push_back(q.name);
  if (!r.errors.empty()) return r;

  // A cycle: depth-first, in file order, so that the message is stable.
  std::map<std::string, int> state;  // 0 new, 1 on the path, 2 done
  std::vector<std::string> path;
  std::function<bool(const Part&)> visit = [&](const Part& p) -> bool {
    state[p.name] = 1;
    path.push_back(p.name);
    for (const auto& d : p.deps) {
      const Part* q = r.table.find(d);
      if (state[d] == 1) {
        auto from = std::find(path.begin(), path.end(), d);
        std::vector<std::string> cycle(from, path.end());
        std::vector<std::string> lines;
        for (const auto& c : cycle) lines.push_back(std::to_string(line_of[c]));
        cycle.push_back(d);
        r.errors.push_back(origin + ": cycle: " + join(cycle, " -> ") + " (lines " + join(lines, ", ") + ")");
        return true;
      }
      if (state[d] == 0 && visit(*q)) return true;
    }
    path.pop_back();
    state[p.name] = 2;
    return false;
  };
  for (const auto& p : r.table.parts)
    if (state[p.name] == 0 && visit(p)) break;
  return r;
}

// --------------------------------------------------------- the include scan

std::vector<Include> find_includes(const std::string& s) {
  std::vector<Include> out;
  const size_t n = s.size();
  size_t i = 0;
  int line = 1;
  bool line_start = true;  // only blanks and comments since the last newline
  auto at = [&](size_t k) { return k < n ? s[k] : '\0'; };
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; };
  // At "/*": skips the comment (an unterminated one runs to the end).
  auto skip_block_comment = [&] {
    i += 2;
    while (i < n && !(s[i] == '*' && at(i + 1) == '/')) {
      if (s[i] == '\n') ++line;
      ++i;
    }
    i = std::min(n, i + 2);
  };
  // At "//": skips to the newline (not past it); a backslash-newline continues it.
  auto skip_line_comment = [&] {
    while (i < n && s[i] != '\n') {
      if (s[i] == '\\' && at(i + 1) == '\n') {
        ++line;
        i += 2;
      } else if (s[i] == '\\' && at(i + 1) == '\r' && at(i + 2) == '\n') {
        ++line;
        i += 3;
      } else {
        ++i;
      }
    }
  };
  // At a quote: skips the literal; an unterminated one ends at the newline.
  auto skip_literal = [&] {
    const char q = s[i++];
    while (i < n && s[i] != q && s[i] != '\n') {
      if (s[i] == '\\' && i + 1 < n) {
        if (s[i + 1] == '\n') ++line;
        i += 2;
      } else {
        ++i;
      }
    }
    if (i < n && s[i] == q) ++i;
  };
  // At the quote of R"delim( ... )delim": skips it; false (nothing skipped)
  // when what follows is no raw string delimiter.
  auto skip_raw_string = [&]() -> bool {
    size_t open = i + 1;
    while (open < n && open - i - 1 <= 16 && s[open] != '(') {
      char c = s[open];
      if (blank(c) || c == '\n' || c == ')' || c == '\\' || c == '"') return false;
      ++open;
    }
    if (open >= n || s[open] != '(') return false;
    const std::string close = ")" + s.substr(i + 1, open - i - 1) + "\"";
    size_t end = s.find(close, open + 1);
    end = end == std::string::npos ? n : end + close.size();
    line += static_cast<int>(std::count(s.begin() + static_cast<std::ptrdiff_t>(i),
                                        s.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
    i = end;
    return true;
  };

  while (i < n) {
    const char c = s[i];
    if (c == '\n') {
      ++line;
      line_start = true;
      ++i;
    } else if (blank(c)) {
      ++i;
    } else if (c == '\\' && at(i + 1) == '\n') {  // a line splice: the logical line goes on
      ++line;
      i += 2;
    } else if (c == '/' && at(i + 1) == '/') {
      skip_line_comment();
    } else if (c == '/' && at(i + 1) == '*') {
      skip_block_comment();
    } else if (c == '#' && line_start) {
      line_start = false;
      ++i;
      while (i < n) {  // blanks and comments between '#' and the directive's name
        if (blank(s[i])) ++i;
        else if (s[i] == '/' && at(i + 1) == '*') skip_block_comment();
        else break;
      }
      size_t b = i;
      while (i < n && is_ident_char(s[i])) ++i;
      if (s.compare(b, i - b, "include") != 0) continue;
      while (i < n) {
        if (blank(s[i])) ++i;
        else if (s[i] == '/' && at(i + 1) == '*') skip_block_comment();
        else break;
      }
      if (at(i) == '"') {
        size_t e = i + 1;
        while (e < n && s[e] != '"' && s[e] != '\n') ++e;
        if (at(e) == '"') out.push_back(Include{line, s.substr(i + 1, e - i - 1)});
        i = e < n && s[e] == '"' ? e + 1 : e;
      } else if (at(i) == '<') {
        while (i < n && s[i] != '>' && s[i] != '\n') ++i;
        if (at(i) == '>') ++i;
      }
    } else if (is_ident_start(c)) {
      line_start = false;
      size_t b = i;
      while (i < n && is_ident_char(s[i])) ++i;
      const std::string id = s.substr(b, i - b);
      if (at(i) == '"' && (id == "R" || id == "LR" || id == "uR" || id == "UR" || id == "u8R")) skip_raw_string();
      // Other prefixes (L, u, U, u8) are followed by an ordinary literal: next round.
    } else if (is_digit(c) || (c == '.' && is_digit(at(i + 1)))) {
      // A preprocessing number: digit separators (1'000) are no character literal.
      line_start = false;
      ++i;
      while (i < n) {
        char d = s[i];
        if ((d == '+' || d == '-') && (s[i - 1] == 'e' || s[i - 1] == 'E' || s[i - 1] == 'p' || s[i - 1] == 'P')) ++i;
        else if (d == '\'' && is_ident_char(at(i + 1))) i += 2;
        else if (is_ident_char(d) || d == '.') ++i;
        else break;
      }
    } else if (c == '"' || c == '\'') {
      line_start = false;
      skip_literal();
    } else {
      line_start = false;
      ++i;
    }
  }
  return out;
}

// ------------------------------------------------------------- the tree walk

CheckReport check_tree(const Table& table, const fs::path& src, const std::string& src_label) {
  CheckReport rep;
  std::string label = src_label;
  while (label.size() > 1 && label.back() == '/') label.pop_back();
  auto shown = [&](const fs::path& rel) { return label + "/" + rel.generic_string(); };
  struct Finding {
    std::string path;
    int line;
    std::string text;
  };
  std::vector<Finding> findings;
  std::set<std::pair<std::string, std::string>> used;  // (part, part it includes)

  std::set<std::string> folders;
  std::vector<fs::path> files;  // relative to src
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(src, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    fs::path rel = it->path().lexically_relative(src);
    const std::string name = it->path().filename().string();
    if (!name.empty() && name[0] == '.') {  // hidden: .git, editor files
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_directory() && it.depth() == 0) folders.insert(name);
    if (it->is_regular_file() && is_source(it->path())) files.push_back(rel);
  }
  if (ec) findings.push_back({label, 0, label + ": " + ec.message()});
  std::sort(files.begin(), files.end());

  for (const auto& f : folders)
    if (!table.find(f))
      findings.push_back({shown(f) + "/", 0,
                          shown(f) + "/: folder '" + f + "' is not a part in " + table.origin});
  for (const auto& p : table.parts)
    if (!folders.count(p.name)) rep.notes.push_back("part '" + p.name + "' has no folder under " + label);

  for (const auto& rel : files) {
    const std::vector<std::string> comps = parts_of(rel);
    if (comps.size() < 2) {
      findings.push_back({shown(rel), 0, shown(rel) + ": not inside a part's folder"});
      continue;
    }
    const std::string& part = comps[0];
    if (!table.find(part)) continue;  // its folder is reported
    ++rep.files;
    auto text = read_text(src / rel);
    if (!text) {
      findings.push_back({shown(rel), 0, shown(rel) + ": cannot be read"});
      continue;
    }
    for (const auto& inc : find_includes(*text)) {
      const fs::path ip = fs::path(inc.path);
      const std::string where = shown(rel) + ":" + std::to_string(inc.line) + ": ";
      auto add = [&](const std::string& what) { findings.push_back({shown(rel), inc.line, where + what}); };
      // Where the compiler finds it: beside the including file, else under src.
      fs::path target;
      const fs::path beside = (rel.parent_path() / ip).lexically_normal();
      const bool relative = !ip.empty() && (*ip.begin() == "." || *ip.begin() == "..");
      if (ip.is_absolute()) continue;
      if (relative || fs::exists(src / beside, ec)) {
        target = beside;
      } else if (parts_of(ip).size() >= 2) {
        target = ip.lexically_normal();
      } else {
        continue;  // "x.h" not beside the file: found on the include path, no part
      }
      const std::vector<std::string> tc = parts_of(target);
      if (tc.empty() || tc[0] == ".." || tc.size() < 2) {
        add("'" + inc.path + "' reaches outside " + label);
        continue;
      }
      const std::string& to = tc[0];
      ++rep.includes;
      used.insert({part, to});
      if (!table.find(to)) {
        add("'" + inc.path + "' names part '" + to + "', which " + table.origin + " does not list");
      } else if (!table.allows(part, to)) {
        add("part '" + part + "' may not include '" + inc.path + "' (" + table.origin + " allows " + part + ": " +
            table.allowed_text(part) + ")");
      }
    }
  }
  // A link no include uses allows more than the code needs: the table is
  // kept to the links in use (a part without a folder, or written `*`, aside).
  for (const auto& p : table.parts) {
    if (p.star || !folders.count(p.name)) continue;
    for (const auto& d : p.deps)
      if (!used.count({p.name, d}))
        findings.push_back({table.origin, p.line,
                            table.origin + ":" + std::to_string(p.line) + ": part '" + p.name + "' lists '" + d +
                                "' but no file of it includes a header of '" + d + "': remove the link"});
  }
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    return std::tie(a.path, a.line) < std::tie(b.path, b.line);
  });
  for (auto& f : findings) rep.errors.push_back(std::move(f.text));
  return rep;
}

// ----------------------------------------------------------- the command line

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const char* usage = "usage: kopt_check_layers --table tool/layers.txt --src tool/src\n";
  std::string table_file, src;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      out << usage;
      return 0;
    }
    if ((a == "--table" || a == "--src") && i + 1 < args.size()) {
      (a == "--table" ? table_file : src) = args[++i];
    } else {
      err << "kopt_check_layers: unexpected argument '" << a << "'\n" << usage;
      return 2;
    }
  }
  if (table_file.empty() || src.empty()) {
    err << usage;
    return 2;
  }
  auto text = read_text(table_file);
  if (!text) {
    err << "kopt_check_layers: cannot read " << table_file << "\n";
    return 2;
  }
  std::error_code ec;
  if (!fs::is_directory(src, ec)) {
    err << "kopt_check_layers: " << src << " is not a folder\n";
    return 2;
  }
  TableResult t = parse_table(*text, table_file);
  if (!t.errors.empty()) {
    for (const auto& e : t.errors) err << e << "\n";
    err << "layers: " << t.errors.size() << " error(s) in " << table_file << "\n";
    return 1;
  }
  CheckReport rep = check_tree(t.table, src, src);
  for (const auto& n : rep.notes) err << "layers: note: " << n << "\n";
  if (!rep.ok()) {
    for (const auto& e : rep.errors) err << e << "\n";
    err << "layers: " << rep.files << " files, " << rep.includes << " includes, " << rep.errors.size()
        << " error(s)\n";
    return 1;
  }
  out << "layers: " << rep.files << " files, " << rep.includes << " includes, all allowed\n";
  return 0;
}

}  // namespace kopt::layers
