#include "gen/unroll_pragma.h"

#include <cctype>
#include <map>
#include <optional>
#include <sstream>

#include "spec/expr.h"
#include "util/error.h"

namespace kopt::gen {
namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

size_t skip_blanks(const std::string& s, size_t i) {
  while (i < s.size() && blank(s[i])) ++i;
  return i;
}

/// [b, e) of `s` without blanks at either end.
std::pair<size_t, size_t> trimmed(const std::string& s, size_t b, size_t e) {
  while (b < e && blank(s[b])) ++b;
  while (e > b && blank(s[e - 1])) --e;
  return {b, e};
}

/// One unroll pragma of a source; [begin, end) is the text that is replaced.
struct Site {
  size_t begin = 0, end = 0;
  std::string arg;             // trimmed; empty for `#pragma unroll` alone
  bool operator_form = false;  // _Pragma("unroll ARG")
  std::string macro;           // NAME(unroll ARG), NAME a macro that stringizes into _Pragma
  size_t line = 0;             // 1-based
  bool continued = false;      // the directive's line ends with '\'
};

/// `#pragma unroll [ARG]` at `i` ('#', the first token of its line).
std::optional<Site> pragma_directive(const std::string& s, size_t i) {
  size_t j = skip_blanks(s, i + 1);
  for (const char* word : {"pragma", "unroll"}) {
    if (s.compare(j, 6, word) != 0 || (j + 6 < s.size() && ident_char(s[j + 6]))) return std::nullopt;
    j = skip_blanks(s, j + 6);
  }
  size_t e = j;  // the argument ends at the end of the line or a comment
  while (e < s.size() && s[e] != '\n' && !(s[e] == '/' && e + 1 < s.size() && (s[e + 1] == '/' || s[e + 1] == '*')))
    ++e;
  Site site;
  site.begin = i;
  const auto [ab, ae] = trimmed(s, j, e);
  site.arg = s.substr(ab, ae - ab);
  site.end = site.arg.empty() ? j : ae;
  size_t eol = s.find('\n', i);
  if (eol == std::string::npos) eol = s.size();
  while (eol > i && blank(s[eol - 1])) --eol;
  site.continued = eol > i && s[eol - 1] == '\\';
  return site;
}

/// `unroll [ARG]` in [b, e) of `s` (blanks around it allowed): the Site of
/// the text [begin, end) that holds it; nullopt for any other text.
std::optional<Site> unroll_text(const std::string& s, size_t b, size_t e, size_t begin, size_t end) {
  const auto [cb, ce] = trimmed(s, b, e);
  if (s.compare(cb, 6, "unroll") != 0 || (cb + 6 < ce && ident_char(s[cb + 6]))) return std::nullopt;
  const auto [ab, ae] = trimmed(s, cb + 6, ce);
  Site site;
  site.begin = begin;
  site.end = end;
  site.arg = s.substr(ab, ae - ab);
  return site;
}

/// `_Pragma ( "unroll [ARG]" )` at `i` (the `_Pragma` token); a string with
/// an escape or a prefix is not read.
std::optional<Site> pragma_operator(const std::string& s, size_t i) {
  size_t j = skip_blanks(s, i + 7);
  if (j >= s.size() || s[j] != '(') return std::nullopt;
  j = skip_blanks(s, j + 1);
  if (j >= s.size() || s[j] != '"') return std::nullopt;
  const size_t close = s.find_first_of("\"\\\n", j + 1);
  if (close == std::string::npos || s[close] != '"') return std::nullopt;
  const size_t paren = skip_blanks(s, close + 1);
  if (paren >= s.size() || s[paren] != ')') return std::nullopt;
  std::optional<Site> site = unroll_text(s, j + 1, close, i, paren + 1);
  if (site) site->operator_form = true;
  return site;
}

/// Where a string or character literal starting at `i` ends (the closing
/// quote's next character; a literal does not go on past its line).
size_t literal_end(const std::string& s, size_t i) {
  const char quote = s[i];
  for (++i; i < s.size() && s[i] != '\n'; ++i) {
    if (s[i] == '\\') ++i;
    else if (s[i] == quote) return i + 1;
  }
  return i;
}

/// Where a raw string literal whose '"' is at `i` ends (R"delim( ... )delim").
size_t raw_literal_end(const std::string& s, size_t i) {
  const size_t open = s.find('(', i + 1);
  if (open == std::string::npos) return s.size();
  const std::string close = ")" + s.substr(i + 1, open - i - 1) + "\"";
  const size_t e = s.find(close, open + 1);
  return e == std::string::npos ? s.size() : e + close.size();
}

/// `s` with each comment's characters blanked (line breaks kept), so that a
/// #define in a comment is not read as one.
std::string without_comments(const std::string& s) {
  std::string out = s;
  for (size_t i = 0; i < out.size();) {
    const char c = out[i];
    const char next = i + 1 < out.size() ? out[i + 1] : '\0';
    if (c == '"' || c == '\'') {
      i = literal_end(out, i);
    } else if (c == '/' && next == '/') {
      for (; i < out.size() && out[i] != '\n'; ++i) out[i] = ' ';
    } else if (c == '/' && next == '*') {
      const size_t e = std::min(out.find("*/", i + 2), out.size() - 2) + 2;
      for (; i < e && i < out.size(); ++i)
        if (out[i] != '\n') out[i] = ' ';
    } else {
      ++i;
    }
  }
  return out;
}

/// The directive of a line ("define", "ifndef", ...), the name after it and
/// (when asked) the rest of the line after the name; false when the line is
/// no directive.
bool directive_of(const std::string& line, std::string* directive, std::string* name, std::string* rest = nullptr) {
  size_t i = skip_blanks(line, 0);
  if (i >= line.size() || line[i] != '#') return false;
  auto word = [&](std::string* out) {
    i = skip_blanks(line, i);
    size_t e = i;
    while (e < line.size() && ident_char(line[e])) ++e;
    *out = line.substr(i, e - i);
    i = e;
  };
  ++i;
  word(directive);
  word(name);
  if (rest) *rest = line.substr(i);
  return true;
}

/// The #define and #undef lines of `s` (comments blanked, lines continued
/// with '\\' joined): each directive, the name after it and the rest.
struct DirectiveLine {
  std::string directive, name, rest;
};
std::vector<DirectiveLine> directive_lines(const std::string& s) {
  std::vector<DirectiveLine> out;
  std::istringstream in(without_comments(s));
  std::string logical;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\\') {
      logical += line.substr(0, line.size() - 1) + " ";
      continue;
    }
    logical += line;
    DirectiveLine d;
    if (directive_of(logical, &d.directive, &d.name, &d.rest) && (d.directive == "define" || d.directive == "undef"))
      out.push_back(std::move(d));
    logical.clear();
  }
  return out;
}

/// A function-like macro of the source that makes a pragma of its argument
/// (`#define P(x) _Pragma(#x)`, or #__VA_ARGS__).
struct PragmaMacro {
  bool pragma_alone = false;  // the body is that _Pragma and nothing else: KOPT_PRAGMA_UNROLL may stand for it
  bool ambiguous = false;     // #defined more than once or #undef'd: which definition a use sees is not read
};

/// The stringizing pragma macros of `s`, by name.
std::map<std::string, PragmaMacro> stringizing_macros(const std::string& s) {
  std::map<std::string, PragmaMacro> out;
  std::map<std::string, int> definitions;
  std::set<std::string> undefined;
  const std::vector<DirectiveLine> lines = directive_lines(s);
  for (const DirectiveLine& d : lines) {
    if (d.directive == "undef") undefined.insert(d.name);
    else ++definitions[d.name];
  }
  for (const DirectiveLine& d : lines) {
    if (d.directive != "define" || d.rest.empty() || d.rest[0] != '(') continue;  // object-like
    const size_t close = d.rest.find(')');
    if (close == std::string::npos) continue;
    std::string param = d.rest.substr(1, close - 1);
    param.erase(0, skip_blanks(param, 0));
    while (!param.empty() && blank(param.back())) param.pop_back();
    std::string body;  // without blanks
    for (size_t k = close + 1; k < d.rest.size(); ++k)
      if (!blank(d.rest[k])) body += d.rest[k];
    const std::string arg = param == "..." ? "__VA_ARGS__" : param;
    if (arg.empty() || arg.find(',') != std::string::npos) continue;
    if (body.find("_Pragma(#" + arg + ")") == std::string::npos) continue;
    PragmaMacro& m = out[d.name];
    m.pragma_alone = body == "_Pragma(#" + arg + ")";
    m.ambiguous = definitions[d.name] > 1 || undefined.count(d.name);
  }
  return out;
}

/// The end of the parenthesised text whose '(' is at `open`, on its line
/// (nested parentheses counted; a literal or a line break ends the search):
/// the index of its ')', or npos.
size_t closing_paren(const std::string& s, size_t open) {
  int depth = 0;
  for (size_t k = open; k < s.size(); ++k) {
    const char c = s[k];
    if (c == '\n' || c == '"' || c == '\'') return std::string::npos;
    if (c == '(') ++depth;
    if (c == ')' && --depth == 0) return k;
  }
  return std::string::npos;
}

/// `NAME ( unroll [ARG] )` at `i` (the NAME token) on one line.
std::optional<Site> pragma_macro(const std::string& s, size_t i, const std::string& name) {
  const size_t j = skip_blanks(s, i + name.size());
  if (j >= s.size() || s[j] != '(') return std::nullopt;
  const size_t close = closing_paren(s, j);
  if (close == std::string::npos) return std::nullopt;
  std::optional<Site> site = unroll_text(s, j + 1, close, i, close + 1);
  if (site) site->macro = name;
  return site;
}

/// The identifiers of an argument (not the letters of a number: 8u, 0x10).
std::set<std::string> identifiers(const std::string& arg) {
  std::set<std::string> out;
  for (size_t i = 0; i < arg.size();) {
    size_t e = i + 1;
    if (ident_char(arg[i])) {
      while (e < arg.size() && ident_char(arg[e])) ++e;
      if (ident_start(arg[i])) out.insert(arg.substr(i, e - i));
    }
    i = e;
  }
  return out;
}

/// The parameters of `#define NAME(a, b)` at `i` ('#'); empty for any other
/// line.
std::set<std::string> function_macro_params(const std::string& s, size_t i) {
  size_t j = skip_blanks(s, i + 1);
  if (s.compare(j, 6, "define") != 0) return {};
  j = skip_blanks(s, j + 6);
  while (j < s.size() && ident_char(s[j])) ++j;
  if (j >= s.size() || s[j] != '(') return {};
  const size_t close = s.find_first_of(")\n", j);
  if (close == std::string::npos || s[close] != ')') return {};
  std::set<std::string> out;
  for (size_t k = j + 1; k < close;) {
    size_t e = k;
    while (e < close && ident_char(s[e])) ++e;
    if (e > k) out.insert(s.substr(k, e - k));
    k = e + 1;
  }
  out.insert("__VA_ARGS__");
  return out;
}

/// Every unroll pragma of `s` outside comments and literals, in order; also
/// the uses of `macros` (stringizing_macros) with an unroll argument.
std::vector<Site> unroll_sites(const std::string& s, const std::map<std::string, PragmaMacro>& macros) {
  std::vector<Site> sites;
  bool line_start = true;  // only blanks (or comments) so far on this line
  size_t line = 1, i = 0;
  // The parameters of the function-like macro whose #define is being read: a
  // use of a pragma macro in its body whose argument names one of them is
  // the outer macro's business (its argument is substituted there).
  std::set<std::string> define_params;
  auto advance_to = [&](size_t e) {
    for (size_t k = i; k < e && k < s.size(); ++k) line += s[k] == '\n';
    i = std::min(e, s.size());
  };
  while (i < s.size()) {
    const char c = s[i];
    const char next = i + 1 < s.size() ? s[i + 1] : '\0';
    if (c == '\n') {
      line_start = true;
      if (!(i > 0 && s[i - 1] == '\\')) define_params.clear();
      advance_to(i + 1);
    } else if (blank(c)) {
      ++i;
    } else if (c == '/' && next == '/') {
      advance_to(s.find('\n', i) == std::string::npos ? s.size() : s.find('\n', i));
    } else if (c == '/' && next == '*') {
      const size_t e = s.find("*/", i + 2);
      advance_to(e == std::string::npos ? s.size() : e + 2);
    } else if (c == '"' || (c == '\'' && !(i > 0 && ident_char(s[i - 1])))) {
      advance_to(literal_end(s, i));  // a ' after a digit is a digit separator (1'000)
      line_start = false;
    } else if (c == '#' && line_start) {
      line_start = false;
      if (auto site = pragma_directive(s, i)) {
        site->line = line;
        sites.push_back(*site);
        advance_to(site->end);
      } else {
        define_params = function_macro_params(s, i);
        ++i;
      }
    } else if (ident_start(c) || std::isdigit(static_cast<unsigned char>(c))) {
      line_start = false;
      size_t e = i;
      while (e < s.size() && (ident_char(s[e]) || (std::isdigit(static_cast<unsigned char>(c)) && s[e] == '.'))) ++e;
      const std::string word = s.substr(i, e - i);
      const bool raw_prefix = word == "R" || word == "LR" || word == "uR" || word == "UR" || word == "u8R";
      if (raw_prefix && e < s.size() && s[e] == '"') {
        e = raw_literal_end(s, e);
      } else if (word == "_Pragma") {
        if (auto site = pragma_operator(s, i)) {
          site->line = line;
          sites.push_back(*site);
          e = site->end;
        }
      } else if (macros.count(word)) {
        if (auto site = pragma_macro(s, i, word)) {
          bool outer = false;
          for (const std::string& id : identifiers(site->arg)) outer = outer || define_params.count(id);
          if (!outer) {
            site->line = line;
            sites.push_back(*site);
            e = site->end;
          }
        }
      }
      advance_to(e);
    } else {
      line_start = false;
      ++i;
    }
  }
  return sites;
}


/// The names `source` #defines anywhere (`defined`), and those whose value at
/// a line may differ from the one the generated file puts before the source
/// (`redefined`): a name it #undefs, or #defines other than as a default
/// right under `#ifndef NAME`. A #define under `#ifndef X`, X a name the file
/// fixes (Kernel Tuner's defaults under `#ifndef kernel_tuner`), is skipped
/// by the preprocessor and does not count; nothing else is evaluated.
void source_macros(const std::string& source, const UnrollNames& names, std::set<std::string>* defined,
                   std::set<std::string>* redefined) {
  std::vector<std::string> lines;
  std::istringstream in(source);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string directive, name;
  std::set<std::string> undefined;
  for (const std::string& line : lines)
    if (directive_of(line, &directive, &name) && directive == "undef") undefined.insert(name);
  // Open conditionals: whether each one's current branch is known to be skipped.
  std::vector<bool> skipped;
  auto outer = [&](size_t depth) { return depth > 0 && skipped[depth - 1]; };
  std::string guard;  // NAME of the previous directive line when it was `#ifndef NAME`
  for (const std::string& line : lines) {
    if (!directive_of(line, &directive, &name)) {
      if (skip_blanks(line, 0) < line.size()) guard.clear();  // blank lines keep the guard
      continue;
    }
    const bool skip = !skipped.empty() && skipped.back();
    if (directive == "if" || directive == "ifdef" || directive == "ifndef") {
      skipped.push_back(skip || (directive == "ifndef" && names.fixed.count(name) && !undefined.count(name)));
    } else if ((directive == "elif" || directive == "else") && !skipped.empty()) {
      skipped.back() = outer(skipped.size() - 1);  // the #ifndef was false, or not evaluated
    } else if (directive == "endif" && !skipped.empty()) {
      skipped.pop_back();
    } else if (directive == "define" && !name.empty()) {
      defined->insert(name);
      if (!skip && name != guard) redefined->insert(name);
    } else if (directive == "undef" && !name.empty()) {
      redefined->insert(name);
    }
    guard = directive == "ifndef" ? name : "";
  }
}

/// The value of `arg` when every name in it is one the file fixes and the
/// source leaves alone, and it reads as C; otherwise nullopt and `why`.
std::optional<int64_t> fixed_value(const std::string& arg, const std::set<std::string>& ids, const UnrollNames& names,
                                   const std::set<std::string>& defined, const std::set<std::string>& redefined,
                                   std::string* why) {
  for (const std::string& id : ids) {
    if (redefined.count(id)) {
      *why = id + " is #defined again or #undef'd in the kernel's source";
      return std::nullopt;
    }
    if (!names.fixed.count(id)) {
      *why = names.macros.count(id) ? id + " depends on the sizes (the application's -D)"
             : defined.count(id)    ? id + " is a macro of the kernel's source"
                                    : id + " is not a value the file fixes";
      return std::nullopt;
    }
  }
  try {
    const spec::Expr e = spec::Expr::parse(arg);
    // Only C's operators: spec::Expr's Python precedence reads them as C does.
    if (e.cpp() != e.text()) {
      *why = "not an expression of C's operators alone";
      return std::nullopt;
    }
    return e.eval(names.fixed);
  } catch (const SpecError&) {
    *why = "not an integer expression kopt evaluates";
    return std::nullopt;
  }
}

/// The text that replaces `site`; empty with `*note` untouched to leave it.
std::string replacement(const Site& site, const UnrollNames& names, const std::set<std::string>& defined,
                        const std::set<std::string>& redefined, const std::map<std::string, PragmaMacro>& macros,
                        UnrollRewrite* out) {
  const std::set<std::string> ids = identifiers(site.arg);
  bool macro = false;
  for (const std::string& id : ids)
    macro = macro || names.fixed.count(id) || names.macros.count(id) || defined.count(id);
  if (!macro) return "";  // a literal or a C++ constant: nvcc reads it as NVRTC did
  auto form = [&](const std::string& arg) {
    if (!site.macro.empty()) return site.macro + "(unroll " + arg + ")";
    return site.operator_form ? "_Pragma(\"unroll " + arg + "\")" : "#pragma unroll " + arg;
  };
  const std::string written = form(site.arg);
  if (site.continued) {
    out->continued.push_back("line " + std::to_string(site.line) + ": " + site.arg);
    return "";
  }
  if (!site.macro.empty() && macros.at(site.macro).ambiguous) {
    out->not_rewritten.push_back("line " + std::to_string(site.line) + ": " + written + " (" + site.macro +
                                 " is #defined more than once or #undef'd)");
    return "";
  }
  std::string why;
  if (const auto v = fixed_value(site.arg, ids, names, defined, redefined, &why)) {
    const std::string named = site.arg + "=" + std::to_string(*v);
    const bool comment_safe = site.arg.find("*/") == std::string::npos;
    if (*v <= 0 && !site.macro.empty()) {
      // The macro's use stays (its body may do more than the pragma), with
      // the value: ignored by nvcc as NVRTC ignored it (warning #20168-D).
      out->valued.push_back(named);
      return form(std::to_string(*v)) + (comment_safe ? " /* " + site.arg + " */" : "");
    }
    if (*v <= 0) {
      out->left_out.push_back(named);
      if (!comment_safe) return " ";
      return "/* " + written + " (= " + std::to_string(*v) +
             ") left out: NVRTC and nvcc ignore a value below 1 (warning #20168-D) */";
    }
    out->valued.push_back(named);
    const std::string value = std::to_string(*v);
    const std::string note = comment_safe ? " /* " + site.arg + " */" : "";
    return form(value) + note;
  }
  if (!site.macro.empty() && !macros.at(site.macro).pragma_alone) {  // the macro does more than the pragma
    out->not_rewritten.push_back("line " + std::to_string(site.line) + ": " + written + " (" + why + ")");
    return "";
  }
  out->through_macro.push_back(site.arg + " (" + why + ")");
  return "KOPT_PRAGMA_UNROLL(" + site.arg + ")";
}

}  // namespace

UnrollRewrite rewrite_unroll_pragmas(const std::string& source, const UnrollNames& names) {
  std::set<std::string> defined, redefined;
  source_macros(source, names, &defined, &redefined);
  const std::map<std::string, PragmaMacro> macros = stringizing_macros(source);
  UnrollRewrite out;
  size_t copied = 0;
  for (const Site& site : unroll_sites(source, macros)) {
    const std::string text = replacement(site, names, defined, redefined, macros, &out);
    if (text.empty()) continue;
    out.source.append(source, copied, site.begin - copied);
    out.source += text;
    copied = site.end;
  }
  out.source.append(source, copied, std::string::npos);
  return out;
}

std::string unroll_macro_definition() {
  return "// nvcc does not expand macros in `#pragma unroll` (NVRTC, which kopt tuned with, does):\n"
         "// KOPT_PRAGMA_UNROLL(x) expands x where it stands, then makes `#pragma unroll x` with _Pragma.\n"
         "#ifndef KOPT_PRAGMA_UNROLL\n"
         "#define KOPT_PRAGMA_UNROLL_(...) _Pragma(#__VA_ARGS__)\n"
         "#define KOPT_PRAGMA_UNROLL(...) KOPT_PRAGMA_UNROLL_(unroll __VA_ARGS__)\n"
         "#endif\n";
}

}  // namespace kopt::gen
