#include "spec/local_include.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <system_error>

#include "util/error.h"
#include "util/fs.h"
#include "util/text.h"

namespace kopt::spec {
namespace {

namespace stdfs = std::filesystem;

size_t skip_blanks(const std::string& s, size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return i;
}

/// The NAME of a line `#include "NAME"...`; false for any other line.
/// `close`: where the closing quote is.
bool quoted_include(const std::string& line, std::string& name, size_t& close) {
  size_t i = skip_blanks(line, 0);
  if (i >= line.size() || line[i] != '#') return false;
  i = skip_blanks(line, i + 1);
  if (line.compare(i, 7, "include") != 0) return false;
  i = skip_blanks(line, i + 7);
  if (i >= line.size() || line[i] != '"') return false;
  close = line.find('"', i + 1);
  if (close == std::string::npos || close == i + 1) return false;
  name = line.substr(i + 1, close - i - 1);
  return true;
}

/// A `#pragma once` line (blanks and a trailing comment or '\r' allowed).
bool pragma_once(const std::string& line) {
  size_t i = skip_blanks(line, 0);
  if (i >= line.size() || line[i] != '#') return false;
  i = skip_blanks(line, i + 1);
  if (line.compare(i, 6, "pragma") != 0) return false;
  i = skip_blanks(line, i + 6);
  if (line.compare(i, 4, "once") != 0) return false;
  i = skip_blanks(line, i + 4);
  return i == line.size() || line[i] == '\r' || line.compare(i, 2, "//") == 0;
}

/// Whether a block comment is open at the end of `line`, given whether one
/// was open at its start. String and character literals and `//` comments
/// are skipped; a literal does not go on past its line, and a `'` after a
/// letter, digit or '_' is a digit separator (1'000), not a literal.
bool comment_open_after(const std::string& line, bool open) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    const bool next_is = i + 1 < line.size();
    if (open) {
      if (c == '*' && next_is && line[i + 1] == '/') open = false, ++i;
    } else if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
    } else if (c == '"' || (c == '\'' && (i == 0 || !(std::isalnum(static_cast<unsigned char>(line[i - 1])) ||
                                                       line[i - 1] == '_')))) {
      quote = c;
    } else if (c == '/' && next_is && line[i + 1] == '/') {
      return false;
    } else if (c == '/' && next_is && line[i + 1] == '*') {
      open = true, ++i;
    }
  }
  return open;
}

/// `text` without a leading UTF-8 byte-order mark: the preprocessor skips a
/// file's mark, NVRTC does not, and in the middle of a source it is no token.
std::string without_bom(std::string text) {
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);
  return text;
}

stdfs::path identity(const stdfs::path& p) {
  std::error_code ec;
  const stdfs::path c = stdfs::weakly_canonical(p, ec);
  return ec ? stdfs::absolute(p, ec).lexically_normal() : c;
}

/// +1 for a line `#if`, `#ifdef` or `#ifndef`, -1 for `#endif`, else 0.
int conditional_delta(const std::string& line) {
  size_t i = skip_blanks(line, 0);
  if (i >= line.size() || line[i] != '#') return 0;
  i = skip_blanks(line, i + 1);
  size_t e = i;
  while (e < line.size() && std::isalpha(static_cast<unsigned char>(line[e]))) ++e;
  const std::string word = line.substr(i, e - i);
  if (word == "if" || word == "ifdef" || word == "ifndef") return 1;
  return word == "endif" ? -1 : 0;
}

/// One line of a source as the expansion reads it.
struct SourceLine {
  size_t number;       // 1-based
  size_t start, end;   // its bytes in the text, the newline included
  bool has_newline;
  bool commented;      // inside a block comment at its start: no directive
  bool open_after;     // a block comment is open at its end
  bool inside_if;      // inside an #if block of this file
  std::string name;    // a local #include's NAME (empty: not one)
  size_t close = 0;    // where that include's closing quote is
  stdfs::path target;  // the file it names, beside the including one
};

/// The lines of `text` (of `file`), each local #include resolved: a quoted
/// NAME, not in a block comment, that names a file (not a folder) beside
/// `file`. Other quoted names are left for NVRTC's include path.
std::vector<SourceLine> scan_lines(const std::string& text, const stdfs::path& file) {
  std::vector<SourceLine> out;
  int depth = 0;
  bool in_comment = false;
  for (size_t pos = 0, number = 1; pos < text.size(); ++number) {
    const size_t eol = text.find('\n', pos);
    SourceLine l{number, pos, eol == std::string::npos ? text.size() : eol + 1, eol != std::string::npos,
                 in_comment, false, false, {}, 0, {}};
    const std::string line = text.substr(pos, (eol == std::string::npos ? text.size() : eol) - pos);
    pos = l.end;
    in_comment = l.open_after = comment_open_after(line, in_comment);
    if (!l.commented) depth += conditional_delta(line);
    l.inside_if = depth > 0;
    std::string name;
    if (!l.commented && quoted_include(line, name, l.close)) {
      const stdfs::path target = (file.parent_path() / name).lexically_normal();
      std::error_code ec;
      const stdfs::file_status st = stdfs::status(target, ec);
      if (!ec && stdfs::exists(st) && !stdfs::is_directory(st)) l.name = name, l.target = target;
    }
    out.push_back(std::move(l));
  }
  return out;
}

class Expander {
 public:
  ExpandedSource result;

  /// Counts the places each file is included from, over the whole include
  /// tree, and whether one of them is inside an #if block (`conditional`:
  /// the including file itself is); a header included from several places,
  /// one of them conditional, is expanded at each, under a guard (expand()).
  /// Files that cannot be read are left to expand().
  void count_sites(const std::string& text, const stdfs::path& file, bool conditional) {
    active_.push_back(identity(file));
    for (const SourceLine& l : scan_lines(text, file)) {
      if (l.name.empty()) continue;
      const stdfs::path id = identity(l.target);
      if (conditional || l.inside_if) conditional_.insert(id);
      if (++sites_[id] > kMaxSites)
        throw SpecError("kopt.spec.137", fs::display(file) + ":" + std::to_string(l.number) + ": more than " +
                                             std::to_string(kMaxSites) + " local #include lines in one kernel source");
      if (std::find(active_.begin(), active_.end(), id) != active_.end()) continue;  // a cycle
      std::string body;
      try {
        body = without_bom(fs::read_file(l.target, "included kernel source", fs::kSourceMaxBytes));
      } catch (const Error&) {
        continue;  // expand() says what is wrong, naming the line
      }
      count_sites(body, l.target, conditional || l.inside_if);
    }
    active_.pop_back();
  }

  /// The #undef lines of the guards expand() wrote (the generated files hold
  /// one source per variant, each of which must define its headers again).
  void end_guards() {
    for (size_t k = 0; k < guards_.size(); ++k) result.text += "#undef KOPT_LOCAL_INCLUDE_" + std::to_string(k) + "\n";
  }

  // A file is expanded where it is first included; a later #include of it
  // is dropped, as #pragma once would. Except for a file included from
  // several places of which one is inside an #if block (two #if branches,
  // two headers chosen by a define): the first expansion may be in a branch
  // the preprocessor skips, so it is expanded at each place, inside
  // #ifndef KOPT_LOCAL_INCLUDE_<k> ... #endif, and whichever expansion the
  // preprocessor reaches first defines it. <k> counts the guarded files in
  // order, so the text does not depend on where the sources live.
  void expand(const std::string& text, const stdfs::path& file, bool included) {
    seen_.insert(identity(file));
    active_.push_back(identity(file));
    for (const SourceLine& l : scan_lines(text, file)) {
      // A line inside a block comment is no directive: an #include there stays comment text.
      if (!l.commented && included && pragma_once(text.substr(l.start, l.end - l.start - l.has_newline))) continue;
      if (l.name.empty()) {  // not a local #include (one NVRTC's include path may serve is left to it)
        result.text.append(text, l.start, l.end - l.start);
        continue;
      }
      const stdfs::path id = identity(l.target);
      const bool guarded = sites_[id] > 1 && conditional_.count(id);
      const bool cycle = std::find(active_.begin(), active_.end(), id) != active_.end();
      if (cycle || (!guarded && seen_.count(id))) {  // once per source
        keep_comment_opening(text, l);
        continue;
      }
      const std::string where = fs::display(file) + ":" + std::to_string(l.number) + ": #include " + quote(l.name, 200);
      if (result.includes.size() >= kMaxLocalIncludes)
        throw SpecError("kopt.spec.137", where + ": more than " + std::to_string(kMaxLocalIncludes) +
                                             " files included into one kernel source");
      std::string body;
      try {
        body = without_bom(fs::read_file(l.target, "included kernel source", fs::kSourceMaxBytes));
      } catch (const Error& e) {
        const std::string m = e.what();  // "[kopt.io.00x] <file>: cannot read ...: <reason>"
        const size_t tag = m.rfind("[", 0) == 0 ? m.find("] ") : std::string::npos;
        throw SpecError("kopt.spec.137", where + ": " + (tag == std::string::npos ? m : m.substr(tag + 2)));
      }
      std::error_code ec;
      if (!seen_.count(id)) result.includes.push_back(stdfs::absolute(l.target, ec).lexically_normal());
      std::string guard;
      if (guarded) {
        auto [it, added] = guards_.emplace(id, guards_.size());
        guard = "KOPT_LOCAL_INCLUDE_" + std::to_string(it->second);
        if (!result.text.empty() && result.text.back() != '\n') result.text += '\n';
        result.text += "#ifndef " + guard + "\n#define " + guard + "\n";
      }
      const size_t before = result.text.size();
      expand(body, l.target, true);
      // The line's own newline ends the included text when that lacks one.
      if (result.text.size() > before && result.text.back() != '\n' && (l.has_newline || guarded))
        result.text += '\n';
      if (guarded) result.text += "#endif  // " + guard + "\n";
      keep_comment_opening(text, l);
      if (result.text.size() > fs::kSourceMaxBytes)
        throw SpecError("kopt.spec.137", where + ": the source with its includes is larger than " +
                                             std::to_string(fs::kSourceMaxBytes >> 20) + " MiB");
    }
    active_.pop_back();
  }

 private:
  /// A block comment that the #include line `l` opens after the name goes
  /// on below it: the rest of the line stays, on a line of its own after the
  /// included text, so that the comment's later lines stay comment.
  void keep_comment_opening(const std::string& text, const SourceLine& l) {
    if (!l.open_after) return;
    if (!result.text.empty() && result.text.back() != '\n') result.text += '\n';
    // The bytes after the closing quote (l.close counts from the line's start), up to the newline.
    result.text.append(text, l.start + l.close + 1, l.end - l.has_newline - (l.start + l.close + 1));
    if (l.has_newline) result.text += '\n';
  }

  static constexpr int kMaxSites = 10000;
  std::set<stdfs::path> seen_;           // files expanded so far
  std::vector<stdfs::path> active_;      // the files being expanded, outermost first
  std::map<stdfs::path, int> sites_;     // file -> the places it is included from
  std::set<stdfs::path> conditional_;    // files included from inside an #if block
  std::map<stdfs::path, size_t> guards_; // file -> its guard's number
};

}  // namespace

ExpandedSource expand_local_includes(const std::string& text, const stdfs::path& file) {
  if (text.find("include") == std::string::npos) return {without_bom(text), {}};
  Expander x;
  const std::string own = without_bom(text);
  x.count_sites(own, file, false);
  x.result.text.reserve(text.size());
  x.expand(own, file, false);
  x.end_guards();
  return std::move(x.result);
}

ExpandedSource read_kernel_source(const stdfs::path& file) {
  return expand_local_includes(fs::read_file(file, "kernel source", fs::kSourceMaxBytes), file);
}

std::string read_kernel_text(const stdfs::path& file) { return read_kernel_source(file).text; }

Annotations kernel_annotations(const std::string& own_text, const ExpandedSource& expanded, const std::string& origin) {
  Annotations a = parse_annotations(without_bom(own_text), origin);
  if (expanded.includes.empty()) return a;
  const Annotations all = parse_annotations(expanded.text, origin);
  if (!a.entry) a.entry = all.entry;
  if (!a.grid) a.grid = all.grid, a.grid_line = all.grid_line;
  if (!a.block) a.block = all.block, a.block_line = all.block_line;
  if (!a.shared_bytes) a.shared_bytes = all.shared_bytes, a.shared_line = all.shared_line;
  if (!a.static_shared_bytes) a.static_shared_bytes = all.static_shared_bytes, a.static_shared_line = all.static_shared_line;
  if (a.options.empty()) a.options = all.options;
  for (const auto& [k, v] : all.params) a.params.emplace(k, v);  // the file's own value wins
  return a;
}

Annotations read_kernel_annotations(const stdfs::path& file) {
  const std::string own = fs::read_file(file, "kernel source", fs::kSourceMaxBytes);
  return kernel_annotations(own, expand_local_includes(own, file), fs::display(file));
}

}  // namespace kopt::spec
