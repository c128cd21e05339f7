#include "store/interop.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>

#include "model/attempt.h"
#include "store/store.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_read.h"

// t4_invalidity switches over every verdict: a new one is a compile error here.
#pragma GCC diagnostic error "-Wswitch"

namespace kopt::store {

using nlohmann::json;
namespace stdfs = std::filesystem;

namespace {

// ---------------------------------------------------------------------------
// Export

/// The modification time of `file` as ISO 8601 UTC with microseconds and an
/// explicit offset ("2025-01-01T10:00:00.123456+00:00"; what Python's
/// datetime.fromisoformat reads), or nullopt.
std::optional<std::string> file_time_utc(const stdfs::path& file) {
  struct stat st;
  if (::stat(file.c_str(), &st) != 0) return std::nullopt;
  std::tm tm{};
  const std::time_t secs = st.st_mtim.tv_sec;
  if (!::gmtime_r(&secs, &tm)) return std::nullopt;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06ld+00:00", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long>(st.st_mtim.tv_nsec / 1000));
  return std::string(buf);
}

std::string candidate_folder(int index) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04d", index);
  return buf;
}

/// A finite double as JSON, else null (callers leave such values out).
bool finite(double v) { return std::isfinite(v); }

json t4_result(const model::Attempt& a, const stdfs::path& run_dir) {
  const model::Result& r = a.result;
  json out = json::object();
  if (auto ts = file_time_utc(run_dir / "candidates" / candidate_folder(a.index) / "result.json"))
    out["timestamp"] = *ts;
  out["configuration"] = model::params_json(a.params);
  out["objectives"] = json::array({"time"});

  json times = json::object();
  times["compilation_time"] = finite(r.compile_ms) ? r.compile_ms : 0.0;
  times["validation"] = finite(r.check_ms) ? r.check_ms : 0.0;
  times["benchmark"] = finite(r.timing_ms) ? r.timing_ms : 0.0;
  // The launches behind the objective: only a single performance case has a
  // series of its own (several cases' samples are not one series).
  json runtimes = json::array();
  const model::LatencyStats* only = nullptr;
  int timed = 0;
  for (const auto& c : r.cases)
    if (c.role == "performance" && c.latency) {
      ++timed;
      only = &*c.latency;
    }
  if (timed == 1 && r.verdict == model::Verdict::ok)
    for (double v : only->raw_ms)
      if (finite(v)) runtimes.push_back(v);
  times["runtimes"] = std::move(runtimes);
  out["times"] = std::move(times);

  out["invalidity"] = t4_invalidity(r.verdict);
  out["correctness"] = r.verdict == model::Verdict::ok ? 1 : 0;

  json measurements = json::array();
  if (r.verdict == model::Verdict::ok && r.geomean_ms && finite(*r.geomean_ms))
    measurements.push_back({{"name", "time"}, {"value", *r.geomean_ms}, {"unit", "ms"}});
  if (r.verdict == model::Verdict::ok)
    for (const auto& c : r.cases)
      if (c.role == "performance" && c.latency && finite(c.latency->median_ms))
        measurements.push_back({{"name", "time:" + c.name}, {"value", c.latency->median_ms}, {"unit", "ms"}});
  out["measurements"] = std::move(measurements);
  return out;
}

// ---------------------------------------------------------------------------
// Warm start

const char* const kInvalidities[] = {"timeout", "compile", "runtime", "correctness", "constraints", "correct"};

/// The strings Kernel Tuner's cache writes as the "time" of a configuration
/// that did not run (kernel_tuner/util.py: ErrorConfig and its subclasses).
const std::string kFailedConfigs[] = {"InvalidConfig", "CompilationFailedConfig", "RuntimeFailedConfig",
                                      "ErrorConfig"};

/// An integer value of a configuration: a JSON integer within int64, or a
/// number with an integral value (16.0, as numpy floats come out).
std::optional<int64_t> as_integer(const json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

std::string not_integer(const std::string& name, const json& v) {
  return name + "=" + json_shown(v.dump()) + " is not an integer (kopt's tuning parameters are integers)";
}

/// Sets e.config[name] from `v`, or e.unusable (the first reason) when it is not an integer.
void take_value(WarmStartEntry& e, const std::string& name, const json& v) {
  if (std::optional<int64_t> i = as_integer(v))
    e.config[name] = *i;
  else if (e.unusable.empty())
    e.unusable = not_integer(name, v);
}

/// Adds member `key` of `obj` to `cost` (ms) when it is a time (a finite
/// number >= 0). Costs only inform a replay: a warm start does not need them,
/// so one that cannot be a time is left out rather than refused.
void add_cost(std::optional<double>& cost, const json& obj, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0) return;
  cost = cost.value_or(0) + it->get<double>();
}

/// A schema_version, when present, must be a string of major version 1.
void check_version(const JsonAt& root, const std::string& format) {
  std::optional<JsonAt> v = root.find("schema_version");
  if (!v) return;
  const std::string s = v->string();
  const size_t dot = s.find('.');
  const std::string major = s.substr(0, dot);
  if (major.empty() || major.find_first_not_of("0123456789") != std::string::npos || dot == std::string::npos)
    v->fail("expected a version \"MAJOR.MINOR.PATCH\", got \"" + json_shown(s) + "\"", "kopt.interop.002");
  if (major != "1")
    v->fail(format + " of schema version " + json_shown(s) + ": kopt reads version 1.x (see docs/interop.md)",
            "kopt.interop.003");
}

/// Milliseconds per unit of a time measurement, or nullopt when `unit` is no time.
std::optional<double> ms_per(const std::string& unit) {
  if (unit.empty() || unit == "ms") return 1.0;
  if (unit == "s") return 1000.0;
  if (unit == "us") return 1e-3;
  if (unit == "ns") return 1e-6;
  return std::nullopt;
}

WarmStartEntry t4_entry(const JsonAt& r, std::string& objective) {
  r.expect_object();
  WarmStartEntry e;
  e.path = r.path();
  const JsonAt cfg = r.at("configuration");
  cfg.expect_object();
  for (const auto& [name, v] : cfg.value().items()) {
    take_value(e, name, v);
    e.values[name] = v;
  }
  if (std::optional<JsonAt> times = r.find("times"); times && times->value().is_object()) {
    std::optional<double> cost;
    for (const char* k : {"compilation", "compilation_time", "validation", "benchmark"})
      add_cost(cost, times->value(), k);
    e.cost_ms = cost;
  }

  const JsonAt inv = r.at("invalidity");
  const std::string invalidity = inv.string();
  if (std::find(std::begin(kInvalidities), std::end(kInvalidities), invalidity) == std::end(kInvalidities))
    inv.fail("expected one of timeout, compile, runtime, correctness, constraints, correct; got \"" +
                 json_shown(invalidity) + "\"",
             "kopt.interop.002");
  if (invalidity != "correct") e.failed = "invalidity \"" + invalidity + "\"";
  if (std::optional<JsonAt> c = r.find("correctness"); c && e.failed.empty()) {
    const double x = c->number();
    if (x < 1) e.failed = "correctness " + json(x).dump();
  }
  if (std::optional<JsonAt> obj = r.find("objectives")) {
    obj->expect_array();
    if (obj->size() > 0 && objective.empty() && obj->at(size_t{0}).value().is_string())
      objective = obj->at(size_t{0}).string();
  }
  if (!e.failed.empty()) return e;

  // The recorded time: the measurement "time", else the mean of the
  // runtimes. A time that cannot be one (a string, a negative number, a unit
  // that is no time) is refused, not skipped: it would reorder the warm start
  // without a word.
  if (std::optional<JsonAt> ms = r.find("measurements")) {
    ms->expect_array();
    for (size_t i = 0; i < ms->size() && !e.time_ms; ++i) {
      const JsonAt m = ms->at(i);
      if (!m.value().is_object() || m.value().value("name", json()) != "time") continue;
      std::string unit;
      if (std::optional<JsonAt> u = m.find("unit")) unit = u->string();
      const std::optional<double> k = ms_per(unit);
      if (!k)
        m.at("unit").fail("expected a unit of time (ms, s, us or ns; none means ms), got \"" + json_shown(unit) + "\"",
                          "kopt.interop.002");
      e.time_ms = m.at("value").number(0) * *k;
    }
  }
  if (!e.time_ms)
    if (std::optional<JsonAt> times = r.find("times"); times && times->value().is_object())
      if (std::optional<JsonAt> rt = times->find("runtimes"); rt && rt->size() > 0) {
        double sum = 0;
        for (size_t i = 0; i < rt->size(); ++i) sum += rt->at(i).number(0);
        e.time_ms = sum / static_cast<double>(rt->size());
      }
  return e;
}

void read_t4(const JsonAt& root, WarmStart& w) {
  w.format = "T4 results";
  check_version(root, w.format);
  const JsonAt results = root.at("results");
  results.expect_array();
  for (size_t i = 0; i < results.size(); ++i) w.entries.push_back(t4_entry(results.at(i), w.objective));
}

/// The values of a cache key ("16,1" -> {"16", "1"}).
std::vector<std::string> split_key(const std::string& key) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t comma = key.find(',', start);
    parts.push_back(key.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return parts;
    start = comma + 1;
  }
}

std::optional<int64_t> integer_text(const std::string& s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size() || s.find_first_not_of("0123456789", i) != std::string::npos) return std::nullopt;
  return std::stoll(s);
}

void read_cache(const JsonAt& root, WarmStart& w) {
  w.format = "Kernel Tuner cache";
  check_version(root, w.format);
  const JsonAt keys_at = root.at("tune_params_keys");
  keys_at.expect_array();
  std::vector<std::string> keys;
  for (size_t i = 0; i < keys_at.size(); ++i) keys.push_back(keys_at.at(i).string());
  if (std::optional<JsonAt> d = root.find("device_name"); d && d->value().is_string()) w.device = d->string();
  if (std::optional<JsonAt> k = root.find("kernel_name"); k && k->value().is_string()) w.kernel = k->string();
  if (std::optional<JsonAt> o = root.find("objective"); o && o->value().is_string()) w.objective = o->string();
  const std::optional<JsonAt> lists = root.find("tune_params");
  for (const std::string& k : keys) {
    std::vector<json> values;
    if (lists && lists->value().is_object() && lists->value().contains(k) && lists->value()[k].is_array())
      values = lists->value()[k].get<std::vector<json>>();
    w.tune_params.emplace_back(k, std::move(values));
  }

  const JsonAt cache = root.at("cache");
  cache.expect_object();
  for (const auto& [key, value] : cache.value().items()) {
    const JsonAt ent(value, cache.where(), json_path_child(cache.path(), key));
    ent.expect_object();
    WarmStartEntry e;
    e.path = ent.path();
    const std::vector<std::string> parts = split_key(key);
    for (size_t i = 0; i < keys.size(); ++i) {
      if (value.contains(keys[i])) {
        take_value(e, keys[i], value[keys[i]]);
        e.values[keys[i]] = value[keys[i]];
      } else if (parts.size() == keys.size()) {
        if (std::optional<int64_t> v = integer_text(parts[i]))
          e.config[keys[i]] = *v;
        else if (e.unusable.empty())
          e.unusable = not_integer(keys[i], json(parts[i]));
        e.values[keys[i]] = e.config.count(keys[i]) ? json(e.config[keys[i]]) : json(parts[i]);
      } else {
        ent.fail("has no \"" + json_shown(keys[i]) + "\" and its key has " + std::to_string(parts.size()) +
                     " value(s) for the " + std::to_string(keys.size()) + " of $.tune_params_keys",
                 "kopt.interop.002");
      }
    }
    std::optional<double> cost;
    for (const char* k : {"compile_time", "verification_time", "benchmark_time"}) add_cost(cost, value, k);
    e.cost_ms = cost;
    const JsonAt t = ent.at("time");
    if (t.value().is_string()) {
      // Kernel Tuner's failed configurations; any other string is no time.
      e.failed = t.string();
      if (std::find(std::begin(kFailedConfigs), std::end(kFailedConfigs), e.failed) == std::end(kFailedConfigs))
        t.fail("expected a time in ms or one of InvalidConfig, CompilationFailedConfig, RuntimeFailedConfig, "
               "ErrorConfig; got \"" + json_shown(e.failed) + "\"" + json_quoted_number_hint(t.value()),
               "kopt.interop.002");
    } else {
      e.time_ms = t.number(0);
    }
    w.entries.push_back(std::move(e));
  }
}

/// An open Kernel Tuner cache (no closing "}\n}", perhaps a trailing comma)
/// closed as Kernel Tuner closes it, when that makes it JSON.
std::optional<json> close_open_cache(const std::string& text, const std::string& where) {
  std::string s = text;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || s[first] != '{' || s.find("\"cache\"") == std::string::npos) return std::nullopt;
  if (!s.empty() && s.back() == ',') s.pop_back();
  s += "}\n}";
  try {
    return parse_json(s, where);
  } catch (const SpecError&) {
    return std::nullopt;
  }
}

int group_of(const WarmStartEntry& e) {
  if (!e.failed.empty() || !e.unusable.empty()) return 2;
  return e.time_ms ? 0 : 1;
}

}  // namespace

std::string t4_invalidity(model::Verdict verdict) {
  switch (verdict) {
    case model::Verdict::ok: return "correct";
    case model::Verdict::compile_error: return "compile";
    case model::Verdict::infeasible: return "constraints";
    case model::Verdict::timeout: return "timeout";
    case model::Verdict::wrong_result:
    case model::Verdict::nondeterministic: return "correctness";
    case model::Verdict::launch_error:
    case model::Verdict::runtime_error:
    case model::Verdict::out_of_bounds:
    case model::Verdict::worker_crash: return "runtime";
    // Never exported: export_t4 leaves compile-only candidates out.
    case model::Verdict::compiled: return "runtime";
  }
  return "runtime";  // unreachable for valid enumerators
}

T4Export export_t4(const stdfs::path& run_dir) {
  const RunStore store = RunStore::open(run_dir, "");
  T4Export x;
  json results = json::array();
  for (const model::Attempt& a : store.history()) {
    if (a.kind != model::AttemptKind::candidate) {
      ++x.not_configurations;
      continue;
    }
    if (a.result.verdict == model::Verdict::compiled) {
      ++x.compiled_only;
      continue;
    }
    results.push_back(t4_result(a, run_dir));
    ++x.exported;
    if (model::has_screened_case(a)) ++x.screened;
  }
  x.doc = {{"schema_version", kT4SchemaVersion}, {"results", std::move(results)}};
  return x;
}

WarmStart read_warm_start(const stdfs::path& file) {
  const std::string where = fs::display(file);
  const std::string text = fs::read_file(file, "warm-start file");
  WarmStart w;
  w.file = file;
  json doc;
  try {
    doc = parse_json(text, where);
  } catch (const SpecError& e) {
    if (e.id() != "kopt.json.001") throw;
    std::optional<json> closed = close_open_cache(text, where);
    if (!closed) throw;
    doc = std::move(*closed);
    w.note = "not closed (a Kernel Tuner session that stopped early); read as if closed";
  }
  const JsonAt root(doc, where);
  if (!doc.is_object())
    root.fail("expected T4 results or a Kernel Tuner cache (a JSON object), got " + json_describe(doc),
              "kopt.interop.001");
  if (doc.contains("results"))
    read_t4(root, w);
  else if (doc.contains("cache") || doc.contains("tune_params_keys"))
    read_cache(root, w);
  else
    root.fail("neither T4 results (no \"results\") nor a Kernel Tuner cache (no \"cache\" and "
              "\"tune_params_keys\"); see docs/interop.md",
              "kopt.interop.001");
  std::stable_sort(w.entries.begin(), w.entries.end(), [](const WarmStartEntry& a, const WarmStartEntry& b) {
    const int ga = group_of(a), gb = group_of(b);
    if (ga != gb) return ga < gb;
    return ga == 0 && *a.time_ms < *b.time_ms;
  });
  return w;
}

}  // namespace kopt::store
