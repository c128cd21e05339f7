#include "model/ctest_resources.h"

#include <cstdlib>

#include "util/error.h"
#include "util/text.h"

namespace kopt::model {

nlohmann::json ctest_resource_spec(const std::vector<int>& ordinals, int slots) {
  nlohmann::json gpus = nlohmann::json::array();
  for (int o : ordinals) gpus.push_back({{"id", std::to_string(o)}, {"slots", slots < 1 ? 1 : slots}});
  return {{"version", {{"major", 1}, {"minor", 0}}}, {"local", nlohmann::json::array({{{"gpus", gpus}}})}};
}

namespace {

/// A whole number without sign, spaces or leading '+' within [lo, hi].
std::optional<long long> whole(const std::string& s, long long lo, long long hi) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  for (char c : s)
    if (c < '0' || c > '9') return std::nullopt;
  const long long v = std::stoll(s);
  if (v < lo || v > hi) return std::nullopt;
  return v;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) return out;
    start = p + 1;
  }
}

}  // namespace

std::optional<CtestGpu> ctest_gpu_from_environment(const std::function<const char*(const char*)>& getenv) {
  auto env = [&](const char* name) -> const char* { return getenv ? getenv(name) : std::getenv(name); };
  const char* count = env("CTEST_RESOURCE_GROUP_COUNT");
  if (!count) return std::nullopt;
  const std::string fix = " (optimize_kernel()'s tests declare RESOURCE_GROUPS \"gpus:N\"; see docs/cmake.md)";
  if (!whole(count, 1, 1000000))
    throw UsageError("kopt.ctest.001", "CTEST_RESOURCE_GROUP_COUNT=" + quote(count) +
                                           ": expected a whole number of 1 or more, as ctest sets it" + fix);
  const char* types = env("CTEST_RESOURCE_GROUP_0");
  bool has_gpus = false;
  if (types)
    for (const std::string& t : split(types, ','))
      has_gpus = has_gpus || t == "gpus";
  const char* gpus = env("CTEST_RESOURCE_GROUP_0_GPUS");
  if (!has_gpus || !gpus)
    throw UsageError("kopt.ctest.002", std::string("CTEST_RESOURCE_GROUP_0=") + quote(types ? types : "") +
                                           ": ctest gave this test no \"gpus\" in its first resource group, so "
                                           "there is no GPU to run on" + fix);
  const std::string value = gpus;
  const std::string where = "CTEST_RESOURCE_GROUP_0_GPUS=" + quote(value);
  // "id:ID,slots:N" pairs separated by ';': the first one is the GPU.
  const std::vector<std::string> first = split(split(value, ';').front(), ',');
  if (first.size() != 2 || first[0].rfind("id:", 0) != 0 || first[1].rfind("slots:", 0) != 0)
    throw UsageError("kopt.ctest.003", where + ": expected id:ID,slots:N (pairs separated by ';'), as ctest sets it");
  const std::string id = first[0].substr(3);
  const auto slots = whole(first[1].substr(6), 1, 1000000000);
  if (id.empty() || !slots)
    throw UsageError("kopt.ctest.003", where + ": expected id:ID,slots:N with N a whole number of 1 or more");
  const auto ordinal = whole(id, 0, 1023);
  if (!ordinal)
    throw UsageError("kopt.ctest.004", where + ": the GPU id " + quote(id) +
                                           " is not a CUDA device ordinal (0 to 1023); the resource spec file's "
                                           "\"gpus\" ids must be ordinals, as `kopt devices --ctest-resource-spec` "
                                           "writes them");
  return CtestGpu{static_cast<int>(*ordinal), static_cast<int>(*slots), value};
}

}  // namespace kopt::model
