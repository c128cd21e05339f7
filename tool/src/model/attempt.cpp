#include "model/attempt.h"

#include <algorithm>
#include <cmath>

// Every switch over an enum of this file names each enumerator: a new one is a
// compile error until it is handled.
#pragma GCC diagnostic error "-Wswitch"

namespace kopt::model {

using nlohmann::json;
namespace jio = json_io;

namespace {

LatencyStats latency_from(const json& j, const std::string& path) {
  LatencyStats s;
  s.median_ms = jio::get_double(jio::member(j, "median_ms", path), path + ".median_ms");
  s.mean_ms = jio::get_double(jio::member(j, "mean_ms", path), path + ".mean_ms");
  s.min_ms = jio::get_double(jio::member(j, "min_ms", path), path + ".min_ms");
  s.max_ms = jio::get_double(jio::member(j, "max_ms", path), path + ".max_ms");
  s.stddev_ms = jio::get_double(jio::member(j, "stddev_ms", path), path + ".stddev_ms");
  s.samples = jio::get_int32(jio::member(j, "samples", path), path + ".samples");
  return s;
}

}  // namespace

const char* attempt_kind_name(AttemptKind k) {
  switch (k) {
    case AttemptKind::initial: return "initial";
    case AttemptKind::baseline: return "baseline";
    case AttemptKind::candidate: return "candidate";
    case AttemptKind::reference: return "reference";
  }
  return "unknown";  // unreachable for valid enumerators
}

std::optional<AttemptKind> parse_attempt_kind(const std::string& s) {
  for (AttemptKind k : kAllAttemptKinds)
    if (s == attempt_kind_name(k)) return k;
  return std::nullopt;
}

bool competes_for_best(const Attempt& a) {
  bool kind = false;
  switch (a.kind) {
    case AttemptKind::initial:
    case AttemptKind::candidate: kind = true; break;
    case AttemptKind::baseline:
    case AttemptKind::reference: kind = false; break;
  }
  const std::optional<double>& g = a.result.geomean_ms;
  return kind && a.result.verdict == Verdict::ok && g && std::isfinite(*g) && *g > 0;
}

bool better_attempt(const Attempt& a, const Attempt& b) { return *a.result.geomean_ms < *b.result.geomean_ms; }

const Attempt* best_attempt(const std::vector<Attempt>& history) {
  const Attempt* b = nullptr;
  for (const Attempt& a : history)
    if (competes_for_best(a) && (!b || better_attempt(a, *b))) b = &a;
  return b;
}

const Attempt* first_ok(const std::vector<Attempt>& history, AttemptKind kind) {
  for (const Attempt& a : history)
    if (a.kind == kind && a.result.verdict == Verdict::ok) return &a;
  return nullptr;
}

std::optional<double> case_median_ms(const Attempt& a, const std::string& case_name) {
  for (const CaseResult& c : a.result.cases)
    if (c.name == case_name && c.latency && std::isfinite(c.latency->median_ms) && c.latency->median_ms > 0)
      return c.latency->median_ms;
  return std::nullopt;
}

std::vector<std::string> timed_performance_cases(const Attempt& a) {
  std::vector<std::string> names;
  for (const CaseResult& c : a.result.cases)
    if (c.role == "performance" && c.latency) names.push_back(c.name);
  std::sort(names.begin(), names.end());
  return names;
}

bool has_screened_case(const Attempt& a) {
  return std::any_of(a.result.cases.begin(), a.result.cases.end(), [](const CaseResult& c) { return c.screened; });
}

int64_t fold_fastest_medians(const Attempt& a, std::map<std::string, double>& fastest) {
  int64_t screened = 0;
  for (const CaseResult& c : a.result.cases) {
    if (c.screened) {
      ++screened;
      continue;
    }
    if (c.role != "performance" || !c.latency || !std::isfinite(c.latency->median_ms) || !(c.latency->median_ms > 0))
      continue;
    auto [it, fresh] = fastest.emplace(c.name, c.latency->median_ms);
    if (!fresh) it->second = std::min(it->second, c.latency->median_ms);
  }
  return screened;
}

json latency_json(const LatencyStats& s) {
  return json{{"median_ms", jio::from_double(s.median_ms)}, {"mean_ms", jio::from_double(s.mean_ms)},
              {"min_ms", jio::from_double(s.min_ms)},       {"max_ms", jio::from_double(s.max_ms)},
              {"stddev_ms", jio::from_double(s.stddev_ms)}, {"samples", s.samples}};
}

json params_json(const std::map<std::string, int64_t>& params) {
  json j = json::object();
  for (const auto& [k, v] : params) j[k] = v;
  return j;
}

json result_json(const Result& r, bool full) {
  json j = r.to_json();
  if (!full) j.erase("compile_log");
  json& cases = j["cases"];
  for (size_t i = 0; i < r.cases.size() && i < cases.size(); ++i) {
    // (Older Result::to_json versions left reference_latency out.)
    if (r.cases[i].reference_latency && !cases[i].contains("reference_latency"))
      cases[i]["reference_latency"] = latency_json(*r.cases[i].reference_latency);
    if (!full)
      for (const char* k : {"latency", "reference_latency"})
        if (cases[i].contains(k) && cases[i][k].is_object()) cases[i][k].erase("raw_ms");
  }
  return j;
}

json Attempt::to_json() const {
  json j = result_json(result, /*full=*/false);
  j["index"] = index;
  j["kind"] = attempt_kind_name(kind);
  j["label"] = label;
  j["params"] = params_json(params);
  j["compile_options"] = compile_options;
  j["seconds_since_start"] = jio::from_double(seconds_since_start);
  // Per-case medians at a glance (the full statistics are in "cases").
  json med = json::object();
  for (const CaseResult& c : result.cases)
    if (c.latency) med[c.name] = jio::from_double(c.latency->median_ms);
  j["median_ms"] = std::move(med);
  return j;
}

Attempt Attempt::from_json(const json& j) {
  jio::require_object(j, "$");
  Attempt a;
  a.index = jio::get_int32(jio::member(j, "index", "$"), "$.index");
  if (a.index < 1) jio::fail("$.index", "must be 1 or more");
  const std::string kind = jio::get_string(jio::member(j, "kind", "$"), "$.kind");
  const std::optional<AttemptKind> k = parse_attempt_kind(kind);
  if (!k) jio::fail("$.kind", "expected initial, baseline, candidate or reference, got '" + kind.substr(0, 60) + "'");
  a.kind = *k;
  if (auto it = j.find("label"); it != j.end()) a.label = jio::get_string(*it, "$.label");
  if (auto it = j.find("params"); it != j.end()) {
    jio::require_object(*it, "$.params");
    for (const auto& [k, v] : it->items()) a.params[k] = jio::get_int(v, "$.params." + k);
  }
  if (auto it = j.find("compile_options"); it != j.end()) {
    if (!it->is_array()) jio::fail("$.compile_options", "expected an array");
    for (size_t i = 0; i < it->size(); ++i)
      a.compile_options.push_back(
          jio::get_string((*it)[i], "$.compile_options[" + std::to_string(i) + "]"));
  }
  if (auto it = j.find("seconds_since_start"); it != j.end())
    a.seconds_since_start = jio::get_double(*it, "$.seconds_since_start");
  a.result = Result::from_json(j);
  if (auto it = j.find("cases"); it != j.end() && it->is_array()) {
    for (size_t i = 0; i < it->size() && i < a.result.cases.size(); ++i) {
      const json& jc = (*it)[i];
      auto rl = jc.find("reference_latency");
      if (rl != jc.end() && !rl->is_null() && !a.result.cases[i].reference_latency)
        a.result.cases[i].reference_latency =
            latency_from(*rl, "$.cases[" + std::to_string(i) + "].reference_latency");
    }
  }
  return a;
}

}  // namespace kopt::model
