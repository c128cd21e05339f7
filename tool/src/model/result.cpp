#include "model/result.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "util/error.h"

// Every switch over Verdict names each enumerator: a new verdict is a compile
// error until it is handled.
#pragma GCC diagnostic error "-Wswitch"

namespace kopt::model {

using nlohmann::json;

// ---------------------------------------------------------------------------
// Verdicts

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::ok: return "ok";
    case Verdict::compile_error: return "compile_error";
    case Verdict::infeasible: return "infeasible";
    case Verdict::launch_error: return "launch_error";
    case Verdict::runtime_error: return "runtime_error";
    case Verdict::timeout: return "timeout";
    case Verdict::wrong_result: return "wrong_result";
    case Verdict::out_of_bounds: return "out_of_bounds";
    case Verdict::nondeterministic: return "nondeterministic";
    case Verdict::worker_crash: return "worker_crash";
    case Verdict::compiled: return "compiled";
  }
  return "unknown";  // unreachable for valid enumerators
}

Verdict parse_verdict(const std::string& s) {
  for (Verdict v : kAllVerdicts)
    if (s == verdict_name(v)) return v;
  throw std::invalid_argument("unknown verdict '" + s + "'");
}

// ---------------------------------------------------------------------------
// Statistics

LatencyStats latency_stats(std::vector<double> samples_ms) {
  LatencyStats st;
  if (samples_ms.empty()) return st;
  std::sort(samples_ms.begin(), samples_ms.end());
  const size_t n = samples_ms.size();
  st.samples = static_cast<int>(n);
  st.min_ms = samples_ms.front();
  st.max_ms = samples_ms.back();
  st.median_ms = (n % 2 == 1) ? samples_ms[n / 2]
                              : (samples_ms[n / 2 - 1] + samples_ms[n / 2]) / 2.0;
  double sum = 0;
  for (double x : samples_ms) sum += x;
  st.mean_ms = sum / static_cast<double>(n);
  // Two-pass population variance: numerically stable for the small spreads of
  // repeated launches (the one-pass sum-of-squares formula cancels badly).
  double ss = 0;
  for (double x : samples_ms) ss += (x - st.mean_ms) * (x - st.mean_ms);
  st.stddev_ms = std::sqrt(ss / static_cast<double>(n));
  return st;
}

double geomean(const std::vector<double>& values) {
  if (values.empty()) return 0.0;
  double log_sum = 0;
  for (double v : values) {
    if (!std::isfinite(v) || v <= 0)
      throw std::invalid_argument("geomean: value " + std::to_string(v) +
                                  " is not a positive finite number");
    log_sum += std::log(v);  // a product of many latencies could overflow/underflow
  }
  return std::exp(log_sum / static_cast<double>(values.size()));
}

double geomean(const std::vector<double>& values, const std::vector<double>& weights) {
  if (values.size() != weights.size())
    throw std::invalid_argument("geomean: " + std::to_string(values.size()) + " values but " +
                                std::to_string(weights.size()) + " weights");
  if (values.empty()) return 0.0;
  double log_sum = 0, weight_sum = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const double v = values[i], w = weights[i];
    if (!std::isfinite(v) || v <= 0)
      throw std::invalid_argument("geomean: value " + std::to_string(v) + " is not a positive finite number");
    if (!std::isfinite(w) || w <= 0)
      throw std::invalid_argument("geomean: weight " + std::to_string(w) + " is not a positive finite number");
    log_sum += w * std::log(v);
    weight_sum += w;
  }
  if (!std::isfinite(weight_sum) || !std::isfinite(log_sum))
    throw std::invalid_argument("geomean: the weights' sum is not finite");
  return std::exp(log_sum / weight_sum);
}

// ---------------------------------------------------------------------------
// JSON helpers

namespace json_io {

void fail(const std::string& path, const std::string& what) {
  throw kopt::Error("kopt.protocol.001", path + ": " + what);
}

json from_double(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

void require_object(const json& j, const std::string& path) {
  if (!j.is_object()) fail(path, std::string("expected an object, got ") + j.type_name());
}

const json& member(const json& obj, const char* key, const std::string& path) {
  require_object(obj, path);
  auto it = obj.find(key);
  if (it == obj.end()) fail(path + "." + key, "missing");
  return *it;
}

double get_double(const json& j, const std::string& path) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  }
  fail(path, std::string("expected a number, got ") + j.type_name() +
                 (j.is_string() ? " '" + j.get<std::string>().substr(0, 40) + "'" : ""));
}

int64_t get_int(const json& j, const std::string& path) {
  if (j.is_number_unsigned()) {
    auto u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(path, "integer out of range");
    return static_cast<int64_t>(u);
  }
  if (j.is_number_integer()) return j.get<int64_t>();
  fail(path, std::string("expected an integer, got ") + j.type_name());
}

uint64_t get_uint(const json& j, const std::string& path) {
  if (j.is_number_unsigned()) return j.get<uint64_t>();
  if (j.is_number_integer()) {
    auto v = j.get<int64_t>();
    if (v < 0) fail(path, "expected a non-negative integer");
    return static_cast<uint64_t>(v);
  }
  fail(path, std::string("expected a non-negative integer, got ") + j.type_name());
}

int get_int32(const json& j, const std::string& path) {
  int64_t v = get_int(j, path);
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    fail(path, "integer out of range");
  return static_cast<int>(v);
}

bool get_bool(const json& j, const std::string& path) {
  if (!j.is_boolean()) fail(path, std::string("expected a boolean, got ") + j.type_name());
  return j.get<bool>();
}

std::string get_string(const json& j, const std::string& path) {
  if (!j.is_string()) fail(path, std::string("expected a string, got ") + j.type_name());
  return j.get<std::string>();
}

}  // namespace json_io

// ---------------------------------------------------------------------------
// Result JSON

namespace {

using namespace json_io;

json latency_to_json(const LatencyStats& s) {
  json j{{"median_ms", from_double(s.median_ms)}, {"mean_ms", from_double(s.mean_ms)},
         {"min_ms", from_double(s.min_ms)},       {"max_ms", from_double(s.max_ms)},
         {"stddev_ms", from_double(s.stddev_ms)}, {"samples", s.samples}};
  if (!s.raw_ms.empty()) j["raw_ms"] = s.raw_ms;
  return j;
}

LatencyStats latency_from_json(const json& j, const std::string& path) {
  LatencyStats s;
  s.median_ms = get_double(member(j, "median_ms", path), path + ".median_ms");
  s.mean_ms = get_double(member(j, "mean_ms", path), path + ".mean_ms");
  s.min_ms = get_double(member(j, "min_ms", path), path + ".min_ms");
  s.max_ms = get_double(member(j, "max_ms", path), path + ".max_ms");
  s.stddev_ms = get_double(member(j, "stddev_ms", path), path + ".stddev_ms");
  s.samples = get_int32(member(j, "samples", path), path + ".samples");
  if (auto r = j.find("raw_ms"); r != j.end()) {
    if (!r->is_array()) throw kopt::Error("kopt.result.001", path + ".raw_ms: expected an array of numbers");
    for (size_t i = 0; i < r->size(); ++i)
      s.raw_ms.push_back(get_double((*r)[i], path + ".raw_ms[" + std::to_string(i) + "]"));
  }
  return s;
}

// Optional members: Result JSON is also what history.json stores, so a reader
// tolerates absent fields (older files) but never a field of the wrong type.
template <typename T, typename Get>
void read_opt(const json& obj, const char* key, const std::string& path, T* out, Get get) {
  auto it = obj.find(key);
  if (it != obj.end()) *out = get(*it, path + "." + key);
}

}  // namespace

json Result::to_json() const {
  json j;
  j["verdict"] = verdict_name(verdict);
  j["detail"] = detail;
  j["error_name"] = error_name;
  j["failed_case"] = failed_case;
  json cs = json::array();
  for (const CaseResult& c : cases) {
    json jc{{"name", c.name},
            {"role", c.role},
            {"passed", c.passed},
            {"max_abs_error", from_double(c.max_abs_error)},
            {"max_error_ratio", from_double(c.max_error_ratio)},
            {"worst_output", c.worst_output}};
    if (c.latency) jc["latency"] = latency_to_json(*c.latency);
    if (c.reference_latency) jc["reference_latency"] = latency_to_json(*c.reference_latency);
    if (c.screened) jc["screened"] = true;
    if (c.screen_ms) jc["screen_ms"] = from_double(*c.screen_ms);
    if (c.screen_median_ms) jc["screen_median_ms"] = from_double(*c.screen_median_ms);
    if (c.blocks_per_sm) jc["blocks_per_sm"] = *c.blocks_per_sm;
    if (c.rel_error_max) jc["rel_error_max"] = from_double(*c.rel_error_max);
    if (c.rel_error_rms) jc["rel_error_rms"] = from_double(*c.rel_error_rms);
    cs.push_back(std::move(jc));
  }
  j["cases"] = std::move(cs);
  if (geomean_ms) j["geomean_ms"] = from_double(*geomean_ms);
  if (reference_geomean_ms) j["reference_geomean_ms"] = from_double(*reference_geomean_ms);
  if (speedup) j["speedup"] = from_double(*speedup);
  j["compile_ms"] = from_double(compile_ms);
  j["compile_cache_hit"] = compile_cache_hit;
  if (check_ms > 0) j["check_ms"] = from_double(check_ms);
  if (timing_ms > 0) j["timing_ms"] = from_double(timing_ms);
  j["compile_log"] = compile_log;
  if (device) j["device"] = *device;
  if (!device_uuid.empty()) j["device_uuid"] = device_uuid;
  return j;
}

Result Result::from_json(const json& j) {
  const std::string root = "$";
  Result r;
  std::string v = get_string(member(j, "verdict", root), "$.verdict");
  try {
    r.verdict = parse_verdict(v);
  } catch (const std::invalid_argument&) {
    fail("$.verdict", "unknown verdict '" + v.substr(0, 60) + "'");
  }
  read_opt(j, "detail", root, &r.detail, get_string);
  read_opt(j, "error_name", root, &r.error_name, get_string);
  read_opt(j, "failed_case", root, &r.failed_case, get_string);
  if (auto it = j.find("cases"); it != j.end()) {
    if (!it->is_array()) fail("$.cases", std::string("expected an array, got ") + it->type_name());
    for (size_t i = 0; i < it->size(); ++i) {
      const json& jc = (*it)[i];
      const std::string p = "$.cases[" + std::to_string(i) + "]";
      CaseResult c;
      c.name = get_string(member(jc, "name", p), p + ".name");
      read_opt(jc, "role", p, &c.role, get_string);
      read_opt(jc, "passed", p, &c.passed, get_bool);
      read_opt(jc, "max_abs_error", p, &c.max_abs_error, get_double);
      read_opt(jc, "max_error_ratio", p, &c.max_error_ratio, get_double);
      read_opt(jc, "worst_output", p, &c.worst_output, get_string);
      read_opt(jc, "screened", p, &c.screened, get_bool);
      if (auto sm = jc.find("screen_ms"); sm != jc.end() && !sm->is_null()) c.screen_ms = get_double(*sm, p + ".screen_ms");
      if (auto sm = jc.find("screen_median_ms"); sm != jc.end() && !sm->is_null())
        c.screen_median_ms = get_double(*sm, p + ".screen_median_ms");
      if (auto bs = jc.find("blocks_per_sm"); bs != jc.end() && !bs->is_null())
        c.blocks_per_sm = get_int32(*bs, p + ".blocks_per_sm");
      for (const auto& [key, out] : {std::pair{"rel_error_max", &c.rel_error_max}, std::pair{"rel_error_rms", &c.rel_error_rms}})
        if (auto e = jc.find(key); e != jc.end() && !e->is_null()) *out = get_double(*e, p + "." + key);
      if (auto lt = jc.find("latency"); lt != jc.end() && !lt->is_null())
        c.latency = latency_from_json(*lt, p + ".latency");
      if (auto lt = jc.find("reference_latency"); lt != jc.end() && !lt->is_null())
        c.reference_latency = latency_from_json(*lt, p + ".reference_latency");
      r.cases.push_back(std::move(c));
    }
  }
  auto read_opt_double = [&](const char* key, std::optional<double>* out) {
    auto it = j.find(key);
    if (it != j.end() && !it->is_null()) *out = get_double(*it, root + "." + key);
  };
  read_opt_double("geomean_ms", &r.geomean_ms);
  read_opt_double("reference_geomean_ms", &r.reference_geomean_ms);
  read_opt_double("speedup", &r.speedup);
  read_opt(j, "compile_ms", root, &r.compile_ms, get_double);
  read_opt(j, "compile_cache_hit", root, &r.compile_cache_hit, get_bool);
  read_opt(j, "check_ms", root, &r.check_ms, get_double);
  read_opt(j, "timing_ms", root, &r.timing_ms, get_double);
  read_opt(j, "compile_log", root, &r.compile_log, get_string);
  if (auto it = j.find("device"); it != j.end() && !it->is_null()) r.device = get_int32(*it, "$.device");
  read_opt(j, "device_uuid", root, &r.device_uuid, get_string);
  return r;
}

}  // namespace kopt::model
