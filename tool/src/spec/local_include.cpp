#include "spec/local_include.h"

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
bool quoted_include(const std::string& line, std::string& name) {
  size_t i = skip_blanks(line, 0);
  if (i >= line.size() || line[i] != '#') return false;
  i = skip_blanks(line, i + 1);
  if (line.compare(i, 7, "include") != 0) return false;
  i = skip_blanks(line, i + 7);
  if (i >= line.size() || line[i] != '"') return false;
  const size_t close = line.find('"', i + 1);
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

stdfs::path identity(const stdfs::path& p) {
  std::error_code ec;
  const stdfs::path c = stdfs::weakly_canonical(p, ec);
  return ec ? stdfs::absolute(p, ec).lexically_normal() : c;
}

class Expander {
 public:
  ExpandedSource result;

  void expand(const std::string& text, const stdfs::path& file, bool included) {
    seen_.insert(identity(file));
    const stdfs::path dir = file.parent_path();
    size_t pos = 0;
    for (size_t number = 1; pos < text.size(); ++number) {
      const size_t start = pos, eol = text.find('\n', pos);
      const size_t end = eol == std::string::npos ? text.size() : eol + 1;
      const std::string line = text.substr(start, (eol == std::string::npos ? text.size() : eol) - start);
      pos = end;
      std::string name;
      if (included && pragma_once(line)) continue;
      if (!quoted_include(line, name)) {
        result.text.append(text, start, end - start);
        continue;
      }
      const stdfs::path target = (dir / name).lexically_normal();
      std::error_code ec;
      const stdfs::file_status st = stdfs::status(target, ec);
      if (ec || !stdfs::exists(st) || stdfs::is_directory(st)) {  // not ours: NVRTC's include path
        result.text.append(text, start, end - start);
        continue;
      }
      const stdfs::path id = identity(target);
      if (seen_.count(id)) continue;  // once per source
      const std::string where = fs::display(file) + ":" + std::to_string(number) + ": #include " + quote(name, 200);
      if (result.includes.size() >= kMaxLocalIncludes)
        throw SpecError("kopt.spec.137", where + ": more than " + std::to_string(kMaxLocalIncludes) +
                                             " files included into one kernel source");
      std::string body;
      try {
        body = fs::read_file(target, "included kernel source", fs::kSourceMaxBytes);
      } catch (const Error& e) {
        const std::string m = e.what();  // "[kopt.io.00x] <file>: cannot read ...: <reason>"
        const size_t tag = m.rfind("[", 0) == 0 ? m.find("] ") : std::string::npos;
        throw SpecError("kopt.spec.137", where + ": " + (tag == std::string::npos ? m : m.substr(tag + 2)));
      }
      result.includes.push_back(stdfs::absolute(target, ec).lexically_normal());
      const size_t before = result.text.size();
      expand(body, target, true);
      // The line's own newline ends the included text when that lacks one.
      if (result.text.size() > before && result.text.back() != '\n' && eol != std::string::npos) result.text += '\n';
      if (result.text.size() > fs::kSourceMaxBytes)
        throw SpecError("kopt.spec.137", where + ": the source with its includes is larger than " +
                                             std::to_string(fs::kSourceMaxBytes >> 20) + " MiB");
    }
  }

 private:
  std::set<stdfs::path> seen_;
};

}  // namespace

ExpandedSource expand_local_includes(const std::string& text, const stdfs::path& file) {
  if (text.find("include") == std::string::npos) return {text, {}};
  Expander x;
  x.result.text.reserve(text.size());
  x.expand(text, file, false);
  return std::move(x.result);
}

ExpandedSource read_kernel_source(const stdfs::path& file) {
  return expand_local_includes(fs::read_file(file, "kernel source", fs::kSourceMaxBytes), file);
}

std::string read_kernel_text(const stdfs::path& file) { return read_kernel_source(file).text; }

}  // namespace kopt::spec
