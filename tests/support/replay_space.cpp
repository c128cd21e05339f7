// A recorded space replayed and scored (see replay_space.h).
#include "support/replay_space.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "search/strategy.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/json_read.h"

namespace kopt::search::replay {
namespace {

using nlohmann::json;

[[noreturn]] void bad_cache(const std::string& file, const std::string& path, const std::string& what) {
  throw SpecError("kopt.replay.110", file + ": " + path + ": " + what);
}

/// Kernel Tuner's correct_open_cache: a file that does not end with its
/// closing braces is read as if it did (a trailing comma dropped).
std::string closed_cache_text(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  const std::string tail = text.size() >= 3 ? text.substr(text.size() - 3) : text;
  if (!text.empty() && tail != "}\n}" && tail != "}}}") {
    if (text.back() == ',') text.pop_back();
    text += "}\n}";
  }
  return text;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::optional<double> median_of(const std::vector<std::optional<double>>& v) {
  // Unreached counts as worse than anything reached: the median exists while
  // at most half of the seeds never got there.
  std::vector<double> x;
  for (const auto& e : v) x.push_back(e ? *e : std::numeric_limits<double>::infinity());
  std::optional<double> m = score::median(x);
  if (!m || !std::isfinite(*m)) return std::nullopt;
  return m;
}

template <typename T>
std::vector<std::optional<double>> as_double(const std::vector<std::optional<T>>& v) {
  std::vector<std::optional<double>> out;
  for (const auto& e : v) out.push_back(e ? std::optional<double>(static_cast<double>(*e)) : std::nullopt);
  return out;
}

std::string cell(const std::optional<double>& v, const char* f) { return v ? fmt(f, *v) : std::string("-"); }

}  // namespace

bool RecordedSpace::timed() const {
  if (entries.empty()) return false;
  for (const auto& [c, o] : entries)
    if (!(o.seconds > 0)) return false;
  return true;
}

RecordedSpace read_kernel_tuner_cache(const std::filesystem::path& file) {
  const std::string where = file.string();
  const json doc = parse_json(closed_cache_text(fs::read_file(file)), where);
  if (!doc.is_object() || !doc.contains("cache") || !doc.contains("tune_params"))
    bad_cache(where, "$", "not a Kernel Tuner cache file (no \"cache\" or \"tune_params\")");
  RecordedSpace s;
  s.label = file.stem().string();
  s.source = "Kernel Tuner cache " + file.filename().string();
  if (doc.contains("device_name") && doc["device_name"].is_string()) s.device = doc["device_name"];
  if (doc.contains("kernel_name") && doc["kernel_name"].is_string()) s.kernel = doc["kernel_name"];
  const json& tp = doc["tune_params"];
  if (!tp.is_object() || tp.empty()) bad_cache(where, "$.tune_params", "expected an object of value lists");
  std::vector<std::string> names;
  if (doc.contains("tune_params_keys") && doc["tune_params_keys"].is_array()) {
    for (const json& k : doc["tune_params_keys"]) names.push_back(k.get<std::string>());
  } else {
    for (const auto& [k, v] : tp.items()) names.push_back(k);
  }
  // Integer values as they are; otherwise positions (as JSON text -> index).
  std::vector<std::vector<std::string>> texts(names.size());
  for (size_t d = 0; d < names.size(); ++d) {
    const std::string path = json_path_child("$.tune_params", names[d]);
    if (!tp.contains(names[d]) || !tp[names[d]].is_array() || tp[names[d]].empty())
      bad_cache(where, path, "expected a non-empty list of values");
    spec::TuningParam p{names[d], {}};
    bool integers = true;
    for (const json& v : tp[names[d]]) {
      texts[d].push_back(v.dump());
      integers = integers && v.is_number_integer();
    }
    for (size_t i = 0; i < texts[d].size(); ++i)
      p.values.push_back(integers ? tp[names[d]][i].get<int64_t>() : static_cast<int64_t>(i));
    s.params.push_back(std::move(p));
  }
  const json& cache = doc["cache"];
  if (!cache.is_object()) bad_cache(where, "$.cache", "expected an object");
  for (const auto& [key, e] : cache.items()) {
    const std::string path = json_path_child("$.cache", key);
    if (!e.is_object()) bad_cache(where, path, "expected an object");
    Config c;
    for (size_t d = 0; d < names.size(); ++d) {
      if (!e.contains(names[d])) bad_cache(where, path, "no value for " + names[d]);
      const std::string text = e[names[d]].dump();
      const auto it = std::find(texts[d].begin(), texts[d].end(), text);
      if (it == texts[d].end()) bad_cache(where, json_path_child(path, names[d]), text + " is not in tune_params");
      c[names[d]] = s.params[d].values[static_cast<size_t>(it - texts[d].begin())];
    }
    Outcome o;
    const json& t = e.contains("time") ? e["time"] : json();
    if (t.is_number() && std::isfinite(t.get<double>()) && t.get<double>() > 0 && t.get<double>() < 1e20) {
      o.verdict = "ok";
      o.ms = t.get<double>();
    } else {
      o.verdict = t.is_string() ? t.get<std::string>() : "ErrorConfig";
    }
    double ms = 0;
    for (const char* k : {"compile_time", "verification_time", "benchmark_time"})
      if (e.contains(k) && e[k].is_number()) ms += e[k].get<double>();
    o.seconds = ms / 1000.0;
    s.entries.push_back({std::move(c), o});
  }
  if (s.entries.empty()) bad_cache(where, "$.cache", "no entries");
  return s;
}

nlohmann::ordered_json kernel_tuner_cache(const RecordedSpace& s) {
  using json = nlohmann::ordered_json;
  json doc;
  doc["device_name"] = s.device.empty() ? "replay" : s.device;
  doc["kernel_name"] = s.kernel.empty() ? s.label : s.kernel;
  doc["problem_size"] = json::array({1});
  json keys = json::array(), params = json::object();
  for (const spec::TuningParam& p : s.params) {
    keys.push_back(p.name);
    params[p.name] = p.values;
  }
  doc["tune_params_keys"] = keys;
  doc["tune_params"] = params;
  doc["objective"] = "time";
  json cache = json::object();
  for (const auto& [c, o] : s.entries) {
    std::string key;
    json e = json::object();
    for (const spec::TuningParam& p : s.params) {
      key += (key.empty() ? "" : ",") + std::to_string(c.at(p.name));
      e[p.name] = c.at(p.name);
    }
    if (o.ok()) {
      e["time"] = o.ms;
      e["times"] = json::array({o.ms});
    } else {
      const bool named = o.verdict == "CompilationFailedConfig" || o.verdict == "RuntimeFailedConfig" ||
                         o.verdict == "InvalidConfig";
      e["time"] = named ? o.verdict : (o.verdict == "compile_error" ? "CompilationFailedConfig" : "RuntimeFailedConfig");
    }
    e["compile_time"] = o.seconds * 1000.0;
    e["verification_time"] = 0;
    e["benchmark_time"] = 0;
    e["strategy_time"] = 0;
    e["framework_time"] = 0;
    cache[key] = std::move(e);
  }
  doc["cache"] = std::move(cache);
  return doc;
}

RecordedSpace from_record(const Space& full, const Record& r, const std::string& label) {
  RecordedSpace s;
  s.label = label;
  s.source = r.source;
  s.device = r.device_name;
  s.kernel = r.spec;
  s.params = full.params();
  for (const Entry& e : r.entries) {
    if (!full.valid(e.params)) continue;
    Outcome o;
    o.verdict = e.ok() ? "ok" : e.verdict;
    o.ms = e.ok() ? *e.geomean_ms : 0.0;
    s.entries.push_back({e.params, o});
  }
  return s;
}

score::Methodology methodology_of(const RecordedSpace& s, const score::MethodologyOptions& o) {
  std::vector<double> ok, ok_seconds, failed_seconds;
  size_t failed = 0;
  for (const auto& [c, e] : s.entries) {
    if (e.ok()) {
      ok.push_back(e.ms);
      ok_seconds.push_back(e.seconds);
    } else {
      ++failed;
      failed_seconds.push_back(e.seconds);
    }
  }
  if (ok.empty()) throw SpecError("kopt.replay.102", s.label + ": no recorded configuration passed");
  if (!s.timed()) return score::Methodology(std::move(ok), failed, {}, {}, o);
  return score::Methodology(std::move(ok), failed, std::move(ok_seconds), std::move(failed_seconds), o);
}

Replay::Replay(RecordedSpace s, const score::MethodologyOptions& o)
    : s_(std::move(s)), space_(s_.params, {}), methodology_(methodology_of(s_, o)) {
  for (size_t i = 0; i < s_.entries.size(); ++i) {
    if (!s_.entries[i].second.ok()) ++failed_;
    index_[config_key(s_.entries[i].first)] = i;
  }
  const auto* index = &index_;
  space_ = space_.restricted_to([index](const Config& c) { return index->count(config_key(c)) != 0; },
                                "not a recorded configuration");
}

const Outcome& Replay::outcome(const Config& c) const { return s_.entries.at(index_.at(config_key(c))).second; }

size_t Replay::within(double tolerance) const {
  size_t n = 0;
  for (const auto& [c, o] : s_.entries)
    if (o.ok() && o.ms <= optimum() * (1 + tolerance)) ++n;
  return n;
}

score::Trace Replay::run(const std::string& strategy, uint64_t seed, size_t max_evaluations) const {
  auto s = make_strategy(strategy);
  s->initialize(space_, seed);
  const size_t cap = max_evaluations ? std::min(max_evaluations, size()) : size();
  const double target1 = optimum() * 1.01;
  bool reached1 = false;
  double elapsed = 0;
  score::Trace t;
  while (t.size() < cap) {
    // Long enough for every measure: within 1%, past the score's range and
    // past the time budget.
    if (reached1 && t.size() >= methodology_.last_evaluation() &&
        (!methodology_.timed() || elapsed >= methodology_.time_budget()))
      break;
    std::optional<Config> c = s->next();
    if (!c) break;
    const Outcome& o = outcome(*c);
    s->observe({*c, o.ok(), o.ok() ? o.ms : 0.0});
    t.push_back({o.ok() ? std::optional<double>(o.ms) : std::nullopt, o.seconds});
    elapsed += o.seconds;
    reached1 = reached1 || (o.ok() && o.ms <= target1);
  }
  return t;
}

StrategyMeasures Replay::measure(const std::string& strategy, const ReplayOptions& o) const {
  std::vector<score::Trace> runs;
  for (int seed = 1; seed <= o.seeds; ++seed) runs.push_back(run(strategy, static_cast<uint64_t>(seed), o.max_evaluations));
  return measure_runs(strategy, std::move(runs));
}

StrategyMeasures Replay::measure_runs(const std::string& name, std::vector<score::Trace> runs) const {
  StrategyMeasures m;
  m.strategy = name;
  m.seeds = static_cast<int>(runs.size());
  for (const score::Trace& t : runs) {
    m.to5.push_back(score::evaluations_to(t, optimum() * 1.05));
    m.to1.push_back(score::evaluations_to(t, optimum() * 1.01));
    if (methodology_.timed()) {
      m.seconds5.push_back(score::seconds_to(t, optimum() * 1.05));
      m.seconds1.push_back(score::seconds_to(t, optimum() * 1.01));
    }
  }
  m.score = methodology_.score(runs);
  try {
    m.score_time = methodology_.score_over_time(runs);
  } catch (const UsageError& e) {
    m.score_time_note = e.what();  // e.g. runs with too few results in the time range
  }
  m.runs = std::move(runs);
  return m;
}

std::optional<double> StrategyMeasures::median_to5() const { return median_of(as_double(to5)); }
std::optional<double> StrategyMeasures::median_to1() const { return median_of(as_double(to1)); }
std::optional<double> StrategyMeasures::median_seconds5() const { return median_of(seconds5); }
std::optional<double> StrategyMeasures::median_seconds1() const { return median_of(seconds1); }

json Replay::to_json(const std::vector<StrategyMeasures>& results) const {
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  json j{{"label", s_.label},
         {"source", s_.source},
         {"device", s_.device},
         {"size", size()},
         {"failed", failed_},
         {"optimum", optimum()},
         {"median", methodology_.median_value()},
         {"within_5pct", within(0.05)},
         {"within_1pct", within(0.01)},
         {"score_evaluations", {methodology_.first_evaluation(), methodology_.last_evaluation()}},
         {"timed", methodology_.timed()}};
  if (methodology_.timed()) j["score_seconds"] = {methodology_.first_second(), methodology_.last_second()};
  json rs = json::array();
  for (const StrategyMeasures& m : results) {
    json per = json::array();
    for (size_t i = 0; i < m.to5.size(); ++i)
      per.push_back({{"to5", m.to5[i] ? json(*m.to5[i]) : json(nullptr)},
                     {"to1", m.to1[i] ? json(*m.to1[i]) : json(nullptr)}});
    rs.push_back({{"strategy", m.strategy},
                  {"seeds", m.seeds},
                  {"median_to5", opt(m.median_to5())},
                  {"median_to1", opt(m.median_to1())},
                  {"median_seconds5", opt(m.median_seconds5())},
                  {"median_seconds1", opt(m.median_seconds1())},
                  {"score", m.score},
                  {"score_time", opt(m.score_time)},
                  {"runs", per}});
  }
  j["results"] = std::move(rs);
  return j;
}

std::string measures_table(const Replay& r, const std::vector<StrategyMeasures>& results) {
  const score::Methodology& m = r.methodology();
  std::ostringstream out;
  out << r.recorded().label << ": " << r.size() << " configurations, " << r.failed() << " failed; optimum "
      << fmt("%.4g", r.optimum()) << ", " << r.within(0.05) << " within 5%, " << r.within(0.01)
      << " within 1%; score over evaluations " << m.first_evaluation() << "-" << m.last_evaluation();
  if (m.timed()) out << " and over " << fmt("%.0f", m.first_second()) << "-" << fmt("%.0f", m.last_second()) << " s";
  out << "\n\n| strategy | to 5% | to 1% |" << (m.timed() ? " s to 5% | s to 1% |" : "") << " score |"
      << (m.timed() ? " score (time) |" : "") << "\n| --- | ---: | ---: |" << (m.timed() ? " ---: | ---: |" : "")
      << " ---: |" << (m.timed() ? " ---: |" : "") << "\n";
  for (const StrategyMeasures& s : results) {
    out << "| " << s.strategy << " | " << cell(s.median_to5(), "%.1f") << " | " << cell(s.median_to1(), "%.1f") << " |";
    if (m.timed()) out << " " << cell(s.median_seconds5(), "%.0f") << " | " << cell(s.median_seconds1(), "%.0f") << " |";
    out << " " << fmt("%.3f", s.score) << " |";
    if (m.timed()) out << " " << cell(s.score_time, "%.3f") << " |";
    out << "\n";
  }
  return out.str();
}

}  // namespace kopt::search::replay
