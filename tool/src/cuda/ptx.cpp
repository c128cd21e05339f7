// PTX parameter lists (see ptx.h). The grammar read is that of the PTX ISA,
// "Kernel Function Parameters": `.entry name ( .param [.attr ...] .type
// [.ptr [.space] [.align N]] name [[N]] , ... )`.
#include "cuda/ptx.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace kopt::cuda {
namespace {

bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.'; }

/// The element size of a PTX fundamental type (".u64" -> 8), 0 if not one.
size_t type_size(const std::string& t) {
  static const struct {
    const char* name;
    size_t size;
  } kTypes[] = {{".b8", 1},     {".u8", 1},     {".s8", 1},       {".b16", 2},      {".u16", 2},   {".s16", 2},
                {".f16", 2},    {".bf16", 2},   {".e4m3", 1},     {".e5m2", 1},     {".b32", 4},   {".u32", 4},
                {".s32", 4},    {".f32", 4},    {".f16x2", 4},    {".bf16x2", 4},   {".tf32", 4},  {".b64", 8},
                {".u64", 8},    {".s64", 8},    {".f64", 8},      {".b128", 16},    {".pred", 1}};
  for (const auto& k : kTypes)
    if (t == k.name) return k.size;
  return 0;
}

/// One parameter declaration (the text between commas): its size, or 0.
size_t param_size(const std::string& decl) {
  size_t size = 0;
  size_t count = 1;
  size_t i = 0;
  while (i < decl.size()) {
    if (std::isspace(static_cast<unsigned char>(decl[i]))) {
      ++i;
      continue;
    }
    if (decl[i] == '[') {  // array extent
      const size_t close = decl.find(']', i);
      if (close == std::string::npos) return 0;
      char* end = nullptr;
      const std::string digits = decl.substr(i + 1, close - i - 1);
      const unsigned long long n = std::strtoull(digits.c_str(), &end, 10);
      if (digits.empty() || *end != '\0' || n == 0) return 0;
      count *= static_cast<size_t>(n);
      i = close + 1;
      continue;
    }
    size_t j = i;
    while (j < decl.size() && is_ident(decl[j]) && decl[j] != '[') ++j;
    if (j == i) return 0;  // an unexpected character
    const std::string tok = decl.substr(i, j - i);
    i = j;
    if (const size_t s = type_size(tok); s && size == 0) size = s;
  }
  return size * count;
}

}  // namespace

std::optional<std::vector<size_t>> ptx_param_sizes(const std::string& ptx, const std::string& entry) {
  if (entry.empty()) return std::nullopt;
  size_t pos = 0;
  while ((pos = ptx.find(".entry", pos)) != std::string::npos) {
    size_t i = pos + 6;
    pos = i;
    if (i >= ptx.size() || !std::isspace(static_cast<unsigned char>(ptx[i]))) continue;
    while (i < ptx.size() && std::isspace(static_cast<unsigned char>(ptx[i]))) ++i;
    size_t j = i;
    while (j < ptx.size() && is_ident(ptx[j])) ++j;
    if (ptx.compare(i, j - i, entry) != 0 || j - i != entry.size()) continue;
    while (j < ptx.size() && std::isspace(static_cast<unsigned char>(ptx[j]))) ++j;
    std::vector<size_t> sizes;
    if (j >= ptx.size() || ptx[j] != '(') return sizes;  // no parameter list: no parameters
    const size_t close = ptx.find(')', j);
    if (close == std::string::npos) return std::nullopt;
    const std::string list = ptx.substr(j + 1, close - j - 1);
    size_t start = 0;
    bool any = list.find_first_not_of(" \t\r\n") != std::string::npos;
    while (any) {
      const size_t comma = list.find(',', start);
      const std::string decl = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (decl.find(".param") == std::string::npos) return std::nullopt;
      const size_t s = param_size(decl);
      if (s == 0) return std::nullopt;
      sizes.push_back(s);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return sizes;
  }
  return std::nullopt;
}

std::optional<size_t> ptx_variable_bytes(const std::string& ptx, const std::string& name, const std::string& space) {
  if (name.empty()) return std::nullopt;
  size_t start = 0;
  while (start < ptx.size()) {
    size_t end = ptx.find('\n', start);
    if (end == std::string::npos) end = ptx.size();
    const std::string line = ptx.substr(start, end - start);
    start = end + 1;
    // A module-scope declaration: "[.visible|.extern] .const [.align N] .type name[[N]] [= {...}];"
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] != '.') continue;
    const std::string decl = line.substr(first, std::min(line.find('='), line.find(';')) - first);
    if ((" " + decl + " ").find(" " + space + " ") == std::string::npos) continue;
    // The declared name: the identifier before the first '[' (or at the end).
    const std::string head = decl.substr(0, decl.find('['));
    const size_t last = head.find_last_not_of(" \t");
    if (last == std::string::npos) continue;
    size_t begin = last + 1;
    while (begin > 0 && is_ident(head[begin - 1])) --begin;
    if (head.compare(begin, last + 1 - begin, name) != 0 || last + 1 - begin != name.size()) continue;
    const size_t bytes = param_size(decl);
    if (bytes == 0) return std::nullopt;
    return bytes;
  }
  return std::nullopt;
}

}  // namespace kopt::cuda
