#include "store/fingerprint.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstdio>
#include <filesystem>

#include "spec/local_include.h"
#include "store/store.h"
#include "util/fs.h"

namespace kopt::store {
namespace {

std::string content_hash(const std::string& content) {
  const XXH128_hash_t h = XXH3_128bits(content.data(), content.size());
  char buf[48];
  std::snprintf(buf, sizeof buf, "xxh3:%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

void replace_paths(nlohmann::json& j) {
  if (j.is_object() || j.is_array()) {
    for (auto& v : j) replace_paths(v);
    return;
  }
  if (!j.is_string()) return;
  const std::string s = j.get<std::string>();
  if (s.empty() || s[0] != '/') return;
  const std::filesystem::path p(s);
  std::error_code ec;
  if (std::filesystem::is_regular_file(p, ec))
    j = content_hash(fs::read_file(p, "file named by the spec", fs::kBlobMaxBytes));
  else
    j = p.filename().string();
}

/// A kernel's "source": the hash of its text as compiled, local includes
/// expanded (a changed header changes the hash; a file that includes nothing
/// hashes as replace_paths hashes it).
void hash_kernel_source(nlohmann::json& k, const spec::KernelSource& source) {
  std::error_code ec;
  if (source.source.is_absolute() && std::filesystem::is_regular_file(source.source, ec))
    k["source"] = content_hash(spec::read_kernel_text(source.source));
}

}  // namespace

nlohmann::json portable_spec_json(const spec::Spec& s) {
  nlohmann::json j = spec::to_json(s);
  if (s.template_kernel) hash_kernel_source(j["template"], *s.template_kernel);
  if (s.initial) hash_kernel_source(j["initial"], *s.initial);
  if (s.reference.kind == spec::Reference::Kind::kernel) hash_kernel_source(j["reference"], s.reference.kernel);
  replace_paths(j);
  return j;
}

std::string spec_fingerprint(const spec::Spec& s) {
  nlohmann::json j = portable_spec_json(s);
  // block_work and traffic_bytes change no measurement, only how the
  // dispatch model reads them (docs/dispatch.md): the same workload with or
  // without them.
  if (auto t = j.find("template"); t != j.end() && t->is_object())
    if (auto l = t->find("launch"); l != t->end() && l->is_object()) l->erase("block_work"), l->erase("traffic_bytes");
  // Nor do the search's seeds: they set the order in which configurations are
  // tried, not what is measured.
  if (auto t = j.find("tuning"); t != j.end() && t->is_object()) t->erase("seeds");
  return RunStore::hash_spec(j);
}

}  // namespace kopt::store
