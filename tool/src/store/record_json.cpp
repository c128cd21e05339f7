#include "store/record_json.h"

#include <cmath>

namespace kopt::store::record_json {

using nlohmann::json;

std::optional<double> number_or_null(const JsonAt& v, double lo) {
  if (v.value().is_null()) return std::nullopt;
  return v.number(lo);
}

std::optional<double> opt_number(const JsonAt& obj, const char* key, double lo) {
  const std::optional<JsonAt> v = obj.find(key);
  return v ? number_or_null(*v, lo) : std::nullopt;
}

std::optional<double> special_or_null(const JsonAt& v) {
  const json& j = v.value();
  if (j.is_null()) return std::nullopt;
  if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    if (s == "NaN") return std::nan("");
    if (s == "Infinity") return INFINITY;
    if (s == "-Infinity") return -INFINITY;
    v.fail("expected a number (or \"NaN\", \"Infinity\", \"-Infinity\"), got " + json_describe(j));
  }
  return v.number();
}

std::optional<double> opt_special(const JsonAt& obj, const char* key) {
  const std::optional<JsonAt> v = obj.find(key);
  return v ? special_or_null(*v) : std::nullopt;
}

json special_json(const std::optional<double>& v) { return v ? model::json_io::from_double(*v) : json(nullptr); }

std::map<std::string, int64_t> int_map(const JsonAt& obj, int64_t lo) {
  obj.expect_object();
  std::map<std::string, int64_t> out;
  for (const auto& [k, v] : obj.value().items()) out[k] = obj.at(k).integer(lo);
  return out;
}

model::AttemptKind attempt_kind(const JsonAt& v) {
  const std::string s = v.string();
  const std::optional<model::AttemptKind> k = model::parse_attempt_kind(s);
  if (!k) v.fail("expected initial, baseline, candidate or reference, got \"" + json_shown(s) + "\"");
  return *k;
}

uint64_t unsigned_integer(const JsonAt& v) {
  if (v.value().is_number_unsigned()) return v.value().get<uint64_t>();
  return static_cast<uint64_t>(v.integer(0));
}

}  // namespace kopt::store::record_json
