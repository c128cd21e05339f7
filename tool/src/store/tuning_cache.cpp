#include "store/tuning_cache.h"

#include <algorithm>

#include "store/record_json.h"
#include "spec/spec.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/json_read.h"

namespace kopt::store {

using nlohmann::json;
using namespace record_json;

namespace {

constexpr const char* kFixOrDelete = "; fix the file or delete it to start a new cache";

/// The keys an entry has as members of CacheEntry (the rest go to `others`).
const char* const kEntryKeys[] = {"workload",      "spec_hash", "base_spec_hash", "gpu",
                                  "kernel_source", "params",    "geomean_ms",     "best",
                                  "cublas_geomean_ms", "specialization", "variants", "tool_version", "created"};

CacheVariant cache_variant(const JsonAt& v) {
  v.expect_object();
  CacheVariant out;
  out.kernel_source = v.at("kernel_source").string();
  if (auto l = v.find("label")) out.label = l->string();
  if (auto shapes = v.find("shapes"))
    for (size_t k = 0; k < shapes->size(); ++k) out.shapes.push_back(int_map(shapes->at(k), 1));
  return out;
}

/// The parts of an entry that must agree: the variants and the
/// specialisation that lists them (kopt generate writes the one with the
/// other; an entry that keeps one without the other, or with another count,
/// would silently lose the specialisation or dispatch to variants that are
/// not there).
void check_variants_agree(const CacheEntry& e, const JsonAt& at) {
  const size_t listed = e.specialization ? e.specialization->variants.size() : 0;
  const size_t have = e.variants ? e.variants->size() : 0;
  const std::string sp_path = at.path() + ".specialization";
  if (listed > 1 && have != listed) {
    if (!e.variants)
      at.fail("has no \"variants\", but " + sp_path + " lists " + std::to_string(listed) +
                  " variants (each needs its kernel_source there)" + kFixOrDelete,
              "kopt.cache.105");
    at.at("variants").fail("has " + std::to_string(have) + " variant(s), but " + sp_path + " lists " +
                               std::to_string(listed) + kFixOrDelete,
                           "kopt.cache.105");
  }
  if (have > 1 && e.specialization && listed != have)
    at.at("specialization")
        .fail("lists " + std::to_string(listed) + " variant(s), but " + at.path() + ".variants has " +
                  std::to_string(have) + kFixOrDelete,
              "kopt.cache.105");
}

CacheEntry cache_entry(const JsonAt& at) {
  for (const char* k : {"spec_hash", "gpu", "kernel_source"})
    if (!at.value().is_object() || !at.value().contains(k))
      throw SpecError("kopt.cache.104", at.where() + ": " + at.path() + ": missing '" + k + "'" + kFixOrDelete);
  CacheEntry e;
  e.spec_hash = at.at("spec_hash").string();
  if (auto v = at.find("base_spec_hash")) e.base_spec_hash = v->string();
  if (auto v = at.find("workload")) e.workload = v->string();
  const JsonAt gpu = at.at("gpu");
  gpu.expect_object();
  if (auto v = gpu.find("name")) e.gpu.name = v->string();
  if (auto v = gpu.find("compute_capability")) e.gpu.compute_capability = v->string();
  e.kernel_source = at.at("kernel_source").string();
  // Tuning parameter values: integers (they become -D NAME=VALUE).
  if (auto v = at.find("params")) e.params = int_map(*v);
  if (auto v = at.find("geomean_ms")) e.geomean_ms = v->number(0);
  if (auto v = at.find("best")) e.best = FinalBest::from_json(*v);
  if (auto v = at.find("cublas_geomean_ms")) e.cublas_geomean_ms = v->number(0);
  if (auto v = at.find("specialization"); v && !v->value().is_null())
    e.specialization = Specialization::from_json(*v, ReadMode::strict);
  if (auto vs = at.find("variants")) {
    std::vector<CacheVariant> variants;
    for (size_t k = 0; k < vs->size(); ++k) variants.push_back(cache_variant(vs->at(k)));
    e.variants = std::move(variants);
  }
  if (auto v = at.find("tool_version")) e.tool_version = v->string();
  if (auto v = at.find("created")) e.created = v->string();
  for (const auto& [k, v] : at.value().items())
    if (std::find(std::begin(kEntryKeys), std::end(kEntryKeys), k) == std::end(kEntryKeys)) e.others[k] = v;
  check_variants_agree(e, at);
  return e;
}

json cache_entry_json(const CacheEntry& e) {
  json gpu = json::object();
  if (e.gpu.name) gpu["name"] = *e.gpu.name;
  if (e.gpu.compute_capability) gpu["compute_capability"] = *e.gpu.compute_capability;
  json j = e.others.is_object() ? e.others : json::object();
  j["workload"] = e.workload;
  j["spec_hash"] = e.spec_hash;
  if (e.base_spec_hash) j["base_spec_hash"] = *e.base_spec_hash;
  j["gpu"] = std::move(gpu);
  j["kernel_source"] = e.kernel_source;
  j["params"] = model::params_json(e.params);
  j["geomean_ms"] = e.geomean_ms;
  j["best"] = e.best.to_json();
  j["cublas_geomean_ms"] = e.cublas_geomean_ms;
  j["specialization"] = e.specialization ? e.specialization->to_json() : json(nullptr);
  if (e.variants) {
    json vs = json::array();
    for (const CacheVariant& v : *e.variants)
      vs.push_back({{"label", v.label}, {"kernel_source", v.kernel_source}, {"shapes", v.shapes}});
    j["variants"] = std::move(vs);
  }
  j["tool_version"] = e.tool_version;
  j["created"] = e.created;
  return j;
}

/// `values` as "64, 128, 256".
std::string listed(const std::vector<int64_t>& values) {
  std::string s;
  for (int64_t v : values) s += (s.empty() ? "" : ", ") + std::to_string(v);
  return s;
}

}  // namespace

std::string CacheGpu::label() const {
  return name.value_or("?") + " (compute capability " + compute_capability.value_or("?") + ")";
}

json TuningCache::to_json() const {
  json j = others.is_object() ? others : json::object();
  j["format_version"] = 1;
  json es = json::array();
  for (const CacheEntry& e : entries) es.push_back(cache_entry_json(e));
  j["entries"] = std::move(es);
  return j;
}

TuningCache TuningCache::from_json(const json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("entries") || !j["entries"].is_array())
    throw SpecError("kopt.cache.102", where + ": $.entries: expected an array of cache entries" + kFixOrDelete);
  const auto version = j.find("format_version");
  if (version == j.end() || !version->is_number_integer() || *version != 1)
    throw SpecError("kopt.cache.103", where + ": $.format_version: expected 1");
  TuningCache c;
  const JsonAt entries = JsonAt(j, where).at("entries");
  for (size_t i = 0; i < entries.size(); ++i) c.entries.push_back(cache_entry(entries.at(i)));
  for (const auto& [k, v] : j.items())
    if (k != "format_version" && k != "entries") c.others[k] = v;
  return c;
}

TuningCache read_tuning_cache(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return {};
  json j;
  try {
    j = parse_json_file(file, "tuning cache");
  } catch (const SpecError& e) {
    if (e.id().rfind("kopt.json.", 0) != 0) throw;  // not a file (kopt.io.*): no advice to delete it
    std::string msg = e.what();
    const std::string prefix = "[" + e.id() + "] ";
    if (msg.rfind(prefix, 0) == 0) msg = msg.substr(prefix.size());
    throw SpecError(e.id(), msg + "; fix it or delete it to start a new cache");
  }
  return TuningCache::from_json(j, fs::display(file));
}

void write_tuning_cache(const std::filesystem::path& file, const TuningCache& cache) {
  fs::write_file_atomic(file, dump_json(cache.to_json(), 2) + "\n");
}

void check_entry_against_spec(const CacheEntry& entry, size_t index, const spec::Spec& spec,
                              const std::string& where) {
  const std::string at = "$.entries[" + std::to_string(index) + "]";
  auto check = [&](const std::map<std::string, int64_t>& params, const std::string& path) {
    for (const auto& [name, value] : params)
      for (const spec::TuningParam& p : spec.tuning.params)
        if (p.name == name && std::find(p.values.begin(), p.values.end(), value) == p.values.end())
          throw SpecError("kopt.cache.105", where + ": " + json_path_child(path, name) + ": " +
                                                std::to_string(value) + " is not a value of the spec's tuning "
                                                "parameter " + name + " (" + listed(p.values) + ")" + kFixOrDelete);
  };
  check(entry.params, at + ".params");
  if (entry.best.params) check(*entry.best.params, at + ".best.params");
  if (entry.specialization)
    for (size_t v = 0; v < entry.specialization->variants.size(); ++v)
      check(entry.specialization->variants[v].params,
            at + ".specialization.variants[" + std::to_string(v) + "].params");
}

}  // namespace kopt::store
