#include "gen/depfile.h"

#include <set>

#include "spec/local_include.h"
#include "util/error.h"
#include "util/text.h"

namespace kopt::gen {
namespace {

std::string escape(const std::string& path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    const char c = path[i];
    if (c == '\n' || c == '\r')
      throw UsageError("kopt.gen.111", "--depfile: the path " + quote(path) +
                                           " contains a line break, which a depfile cannot hold; rename it");
    if (c == '$') {
      out += "$$";
    } else if (c == ' ' || c == '#') {
      // Backslashes right before the escaped character are doubled.
      for (size_t j = i; j > 0 && path[j - 1] == '\\'; --j) out += '\\';
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::vector<std::filesystem::path> spec_dependencies(const spec::Spec& s, const driver::OptimizeOptions& o,
                                                     const std::filesystem::path& cache_file) {
  std::vector<std::filesystem::path> deps;
  std::set<std::filesystem::path> seen;
  auto add = [&](const std::filesystem::path& p) {
    if (p.empty()) return;
    const std::filesystem::path a = std::filesystem::absolute(p).lexically_normal();
    if (seen.insert(a).second) deps.push_back(a);
  };
  add(s.path.empty() ? o.spec : s.path);
  if (!o.input_cases.empty()) add(o.input_cases);
  std::error_code ec;
  if (!cache_file.empty() && std::filesystem::is_regular_file(cache_file, ec)) add(cache_file);
  std::vector<std::filesystem::path> sources;
  if (s.template_kernel) sources.push_back(s.template_kernel->source);
  if (s.initial) sources.push_back(s.initial->source);
  if (s.reference.kind == spec::Reference::Kind::kernel) sources.push_back(s.reference.kernel.source);
  for (const auto& src : sources) {
    add(src);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(src, ec)) continue;
    try {
      for (const auto& f : spec::read_kernel_source(src).includes) add(f);
    } catch (const Error&) {
      // An unreadable source or include fails the run, which reports it.
    }
  }
  auto add_npy = [&](const std::filesystem::path& p) {
    if (p.empty()) return;
    if (p.string().find("{case}") == std::string::npos) return add(p);
    for (const auto& c : s.cases) add(spec::expand_case(p, c.name));
  };
  for (const auto& p : s.signature)
    if (p.is_buffer && p.generator.kind == spec::Generator::Kind::npy) add_npy(p.generator.npy);
  for (const auto& c : s.cases)
    for (const auto& [buffer, g] : c.input_overrides)
      if (g.kind == spec::Generator::Kind::npy) add(spec::expand_case(g.npy, c.name));
  if (s.reference.kind == spec::Reference::Kind::npy)
    for (const auto& [output, p] : s.reference.npy) add_npy(p);
  return deps;
}

std::string depfile_text(const std::filesystem::path& target, const std::vector<std::filesystem::path>& deps) {
  std::string out = escape(target.string()) + ":";
  for (const auto& d : deps) out += " \\\n  " + escape(d.string());
  return out + "\n";
}

}  // namespace kopt::gen
