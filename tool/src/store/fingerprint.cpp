#include "store/fingerprint.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstdio>
#include <filesystem>

#include "store/store.h"
#include "util/fs.h"

namespace kopt::store {
namespace {

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
  if (std::filesystem::is_regular_file(p, ec)) {
    const std::string content = fs::read_file(p, "file named by the spec", fs::kBlobMaxBytes);
    const XXH128_hash_t h = XXH3_128bits(content.data(), content.size());
    char buf[48];
    std::snprintf(buf, sizeof buf, "xxh3:%016llx%016llx", static_cast<unsigned long long>(h.high64),
                  static_cast<unsigned long long>(h.low64));
    j = buf;
  } else {
    j = p.filename().string();
  }
}

}  // namespace

nlohmann::json portable_spec_json(const spec::Spec& s) {
  nlohmann::json j = spec::to_json(s);
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
