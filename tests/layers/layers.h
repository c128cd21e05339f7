// The layer check: which part of tool/src may include which (tool/layers.txt).
//
// A part is a folder directly under the source root (tool/src/<part>/...); a
// file's part is its first folder there. The table (tool/layers.txt, whose
// header comment describes the format) lists, per part, the other parts whose
// headers it may include. check_tree() finds every quoted include of every
// source file (.h .hh .hpp .cpp .cc .cxx, recursively) and checks it against
// the table; kopt_check_layers (check_layers_main.cpp) is the command line,
// run by the CTest test layers.includes. Standard library only, no kopt code:
// the checker must not depend on what it checks.
#pragma once

#include <cstddef>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

namespace kopt::layers {

struct Part {
  std::string name;
  int line = 0;                   // its line in the table
  std::vector<std::string> deps;  // as written, "*" expanded
  bool star = false;              // written `name: *` (every other part)
};

struct Table {
  std::string origin;       // how messages name the table (a path)
  std::vector<Part> parts;  // in file order

  const Part* find(const std::string& name) const;
  /// `from` may include `to`'s headers: the same part or one of its deps.
  bool allows(const std::string& from, const std::string& to) const;
  /// What `part`'s line allows, for messages: "util model", "*" or "nothing".
  std::string allowed_text(const std::string& part) const;
};

struct TableResult {
  Table table;
  /// "origin:line: what" (or "origin: what" for a cycle or an empty table);
  /// empty when the table is good.
  std::vector<std::string> errors;
};

/// Parses a table's text. Errors: a line that is not `part: dep ...`, a name
/// that is not letters, digits and `_`, a part listed twice, a part listing
/// itself or a dep twice, `*` next to other deps, a dep without a line of its
/// own, a cycle (`*` counts as an edge to every other part), no parts at all.
TableResult parse_table(const std::string& text, const std::string& origin);

struct Include {
  int line = 0;      // 1-based
  std::string path;  // between the quotes
};

/// The quoted includes (`#include "..."`) of a C or C++ source text, in
/// order. `#include <...>` is ignored, and so is everything inside comments
/// (// and /* */, with line splices) and string, character and raw string
/// literals; `# include` with spaces and a comment before the `#` count.
std::vector<Include> find_includes(const std::string& text);

struct CheckReport {
  size_t files = 0;                 // source files checked
  size_t includes = 0;              // quoted includes that name a part (their own included)
  std::vector<std::string> errors;  // "path:line: what" / "path: what", sorted by path and line
  std::vector<std::string> notes;   // parts in the table without a folder (not errors)
  bool ok() const { return errors.empty(); }
};

/// Checks every source file under `src` against `table`. `src_label` is how
/// messages name `src` (the path as the user gave it). Errors:
///   <src>/<file>:<line>: part 'a' may not include 'b/x.h' (<table> allows a: ...)
///   <src>/<file>:<line>: 'b/x.h' names part 'b', which <table> does not list
///   <src>/<file>:<line>: '../x.h' reaches outside <src>
///   <src>/b/: folder 'b' is not a part in <table>  (its files are not checked)
///   <src>/<file>: not inside a part's folder
///   <table>:<line>: part 'a' lists 'b' but no file of it includes a header
///     of 'b': remove the link  (parts without a folder and `*` aside)
/// An include resolves as the compiler does: next to the including file
/// first (a subfolder of the same part, or `"x.h"` beside it), otherwise from
/// `src`, whose first folder is the part. A quoted include without a folder
/// that is not beside the file (a third-party header) is not a part include.
CheckReport check_tree(const Table& table, const std::filesystem::path& src, const std::string& src_label);

/// The command line: `--table FILE --src DIR`. Prints each error on `err`
/// and returns 1 when there is one (table errors included); prints
/// `layers: N files, M includes, all allowed` on `out` and returns 0 when
/// there is none; returns 2 for a usage error or an unreadable table/folder.
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace kopt::layers
