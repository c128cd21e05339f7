#include "store/recorded.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "model/attempt.h"
#include "store/interop.h"
#include "store/store.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_read.h"

namespace kopt::store {
namespace {

using nlohmann::json;
namespace stdfs = std::filesystem;

std::string config_text(const std::map<std::string, int64_t>& c) {
  std::string s;
  for (const auto& [k, v] : c) s += (s.empty() ? "" : ",") + k + "=" + std::to_string(v);
  return s;
}

/// One recorded configuration before its values are mapped: its values as
/// JSON, where it is in the file, and its outcome.
struct Raw {
  std::map<std::string, json> values;
  std::string at;
  RecordedOutcome outcome;
};

/// The kopt verdict of a T4 invalidity or a Kernel Tuner error name, for the
/// replayed result (model::parse_verdict's names pass through).
std::string failure_name(const std::string& recorded) {
  static const std::map<std::string, std::string> names = {
      {"compile", "compile_error"},          {"runtime", "runtime_error"},
      {"correctness", "wrong_result"},       {"constraints", "infeasible"},
      {"timeout", "timeout"},                {"CompilationFailedConfig", "compile_error"},
      {"RuntimeFailedConfig", "runtime_error"}, {"InvalidConfig", "infeasible"},
      {"ErrorConfig", "runtime_error"}};
  const auto it = names.find(recorded);
  return it == names.end() ? recorded : it->second;
}

/// The parameters' value lists and the entries as integer configurations.
/// `order`: the parameters in the record's order; `lists`: a parameter's
/// values as the record lists them (a cache's tune_params, a run's spec),
/// used where it holds every recorded value.
void map_values(RecordedSpace& s, const std::vector<Raw>& raws, const std::vector<std::string>& order,
                const std::map<std::string, std::vector<json>>& lists) {
  for (const std::string& name : order) {
    std::vector<json> seen;  // distinct recorded values, first seen first
    std::set<std::string> texts;
    bool integers = true;
    for (const Raw& r : raws) {
      const json& v = r.values.at(name);
      if (texts.insert(v.dump()).second) seen.push_back(v);
      integers = integers && v.is_number_integer();
    }
    std::vector<json> values = seen;
    if (const auto it = lists.find(name); it != lists.end() && !it->second.empty()) {
      std::set<std::string> listed;
      for (const json& v : it->second) listed.insert(v.dump());
      bool covers = listed.size() == it->second.size();
      for (const std::string& t : texts) covers = covers && listed.count(t);
      if (covers) values = it->second;
      if (covers)
        for (const json& v : values) integers = integers && v.is_number_integer();
    } else if (integers) {
      std::sort(values.begin(), values.end(),
                [](const json& a, const json& b) { return a.get<int64_t>() < b.get<int64_t>(); });
    }
    spec::TuningParam p{name, {}};
    for (size_t i = 0; i < values.size(); ++i)
      p.values.push_back(integers ? values[i].get<int64_t>() : static_cast<int64_t>(i));
    if (!integers) {
      std::vector<std::string>& pos = s.positions[name];
      for (const json& v : values) pos.push_back(v.dump());
      s.notes.push_back("parameter " + name + " has values that are not integers: replayed on their positions 0-" +
                        std::to_string(values.size() - 1));
    }
    s.params.push_back(std::move(p));
  }
  std::set<std::string> known;
  size_t twice = 0;
  std::string first_twice;
  for (const Raw& r : raws) {
    std::map<std::string, int64_t> c;
    for (size_t d = 0; d < order.size(); ++d) {
      const json& v = r.values.at(order[d]);
      if (v.is_number_integer() && !s.positions.count(order[d])) {
        c[order[d]] = v.get<int64_t>();
      } else {
        const std::vector<std::string>& pos = s.positions.at(order[d]);
        c[order[d]] = static_cast<int64_t>(std::find(pos.begin(), pos.end(), v.dump()) - pos.begin());
      }
    }
    if (!known.insert(config_text(c)).second) {
      if (twice++ == 0) first_twice = r.at;
      continue;
    }
    s.entries.emplace_back(std::move(c), r.outcome);
  }
  if (twice)
    s.notes.push_back(std::to_string(twice) + " configuration(s) recorded more than once (first: " + first_twice +
                      "): the first record of each counts");
}

/// Every entry must have the parameters of the first.
void check_same_parameters(const std::vector<Raw>& raws, const std::string& where) {
  for (const Raw& r : raws) {
    if (r.values.size() == raws.front().values.size() &&
        std::equal(r.values.begin(), r.values.end(), raws.front().values.begin(),
                   [](const auto& a, const auto& b) { return a.first == b.first; }))
      continue;
    std::string names, first;
    for (const auto& [k, v] : r.values) names += (names.empty() ? "" : ", ") + k;
    for (const auto& [k, v] : raws.front().values) first += (first.empty() ? "" : ", ") + k;
    throw SpecError("kopt.replay.104", where + ": " + r.at + ": its parameters (" + names + ") differ from " +
                                           raws.front().at + "'s (" + first +
                                           "): a recorded space has one set of parameters");
  }
}

RecordedSpace finish(RecordedSpace s, const std::vector<Raw>& raws, const std::string& where,
                     const std::vector<std::string>& order, const std::map<std::string, std::vector<json>>& lists) {
  if (raws.empty()) throw SpecError("kopt.replay.101", where + ": nothing recorded (no configuration)");
  check_same_parameters(raws, where);
  map_values(s, raws, order, lists);
  if (s.failed() == s.entries.size())
    throw SpecError("kopt.replay.102", where + ": none of the " + std::to_string(s.entries.size()) +
                                           " recorded configurations passed: there is no optimum to search for");
  return s;
}

RecordedSpace from_file(const stdfs::path& file) {
  const WarmStart w = read_warm_start(file);
  const std::string where = fs::display(file);
  RecordedSpace s;
  s.label = file.stem().string();
  s.format = w.format;
  s.source = w.format + " " + file.filename().string();
  s.device = w.device;
  s.kernel = w.kernel;
  if (!w.note.empty()) s.notes.push_back(w.note);
  std::vector<Raw> raws;
  for (const WarmStartEntry& e : w.entries) {
    Raw r;
    r.values = e.values;
    r.at = e.path;
    r.outcome.seconds = e.cost_ms.value_or(0) / 1000.0;
    if (!e.failed.empty()) {
      // T4: "invalidity \"compile\"" or "correctness 0.5"; a cache: its error name.
      std::string why = e.failed;
      if (const size_t q = why.find('"'); q != std::string::npos) why = why.substr(q + 1, why.rfind('"') - q - 1);
      if (why.rfind("correctness ", 0) == 0) why = "correctness";
      r.outcome.verdict = failure_name(why);
    } else if (!e.time_ms || !(*e.time_ms > 0)) {
      throw SpecError("kopt.replay.103", where + ": " + e.path + ": passed but records no time (" +
                                             (w.format == "T4 results"
                                                  ? "no measurement \"time\" and no times.runtimes"
                                                  : "its \"time\" is not above 0") +
                                             "): a replay needs every passing configuration's objective");
    } else {
      r.outcome.verdict = "ok";
      r.outcome.ms = *e.time_ms;
    }
    raws.push_back(std::move(r));
  }
  std::vector<std::string> order;
  std::map<std::string, std::vector<json>> lists;
  for (const auto& [name, values] : w.tune_params) {
    order.push_back(name);
    lists[name] = values;
  }
  if (order.empty() && !raws.empty())
    for (const auto& [k, v] : raws.front().values) order.push_back(k);
  return finish(std::move(s), raws, where, order, lists);
}

RecordedSpace from_run_folder(const stdfs::path& dir) {
  const RunStore store = RunStore::open(dir, "");
  const std::string where = fs::display(dir);
  RecordedSpace s;
  s.label = dir.filename().string();
  if (s.label.empty()) s.label = dir.parent_path().filename().string();
  s.format = "kopt run folder";
  s.source = "kopt run folder " + where;
  const json device = parse_json_file(dir / "device.json", "run device");
  if (device.is_object() && device.contains("name") && device["name"].is_string()) s.device = device["name"];
  const json spec = parse_json_file(dir / "spec.json", "run spec");
  if (spec.is_object() && spec.contains("name") && spec["name"].is_string()) s.kernel = spec["name"];
  std::map<std::string, std::vector<json>> lists;
  if (spec.is_object() && spec.contains("tuning") && spec["tuning"].is_object() && spec["tuning"].contains("params") &&
      spec["tuning"]["params"].is_object())
    for (const auto& [k, v] : spec["tuning"]["params"].items())
      if (v.is_array()) lists[k] = v.get<std::vector<json>>();

  std::vector<Raw> raws;
  std::set<std::string> cases;  // the performance cases the first ok candidate was timed on
  std::string cases_at;
  size_t compiled_only = 0;
  for (const model::Attempt& a : store.history()) {
    if (a.kind != model::AttemptKind::candidate) continue;
    if (a.result.verdict == model::Verdict::compiled) {
      ++compiled_only;  // compiled without a GPU, never run
      continue;
    }
    Raw r;
    for (const auto& [k, v] : a.params) r.values[k] = v;
    r.at = "history.json attempt " + std::to_string(a.index) + " (" + a.label + ")";
    r.outcome.seconds = (a.result.compile_ms + a.result.check_ms + a.result.timing_ms) / 1000.0;
    if (a.result.verdict == model::Verdict::ok) {
      if (!a.result.geomean_ms || !(*a.result.geomean_ms > 0))
        throw SpecError("kopt.replay.103", where + ": " + r.at + ": passed but records no geomean_ms");
      r.outcome.verdict = "ok";
      r.outcome.ms = *a.result.geomean_ms;
      std::set<std::string> timed;
      for (const model::CaseResult& c : a.result.cases)
        if (c.role == "performance" && c.latency) timed.insert(c.name);
      if (cases_at.empty()) {
        cases = timed;
        cases_at = r.at;
      } else if (timed != cases) {
        throw SpecError("kopt.replay.105",
                        where + ": " + r.at + " was timed on other performance cases than " + cases_at +
                            " (" + std::to_string(timed.size()) + " and " + std::to_string(cases.size()) +
                            " cases): the run was searched in shape classes, so its objectives are not "
                            "comparable; record a space with --shape-classes off");
      }
    } else {
      r.outcome.verdict = model::verdict_name(a.result.verdict);
    }
    raws.push_back(std::move(r));
  }
  if (compiled_only)
    s.notes.push_back(std::to_string(compiled_only) + " candidate(s) compiled without a GPU (never run) left out");
  std::vector<std::string> order;
  if (!raws.empty())
    for (const auto& [k, v] : raws.front().values) order.push_back(k);
  return finish(std::move(s), raws, where, order, lists);
}

}  // namespace

bool RecordedSpace::timed() const {
  if (entries.empty()) return false;
  for (const auto& [c, o] : entries)
    if (!(o.seconds > 0)) return false;
  return true;
}

size_t RecordedSpace::failed() const {
  size_t n = 0;
  for (const auto& [c, o] : entries) n += !o.ok();
  return n;
}

RecordedSpace read_recorded_space(const stdfs::path& path) {
  std::error_code ec;
  if (stdfs::is_directory(path, ec)) return from_run_folder(path);
  return from_file(path);
}

nlohmann::ordered_json kernel_tuner_cache(const RecordedSpace& s) {
  using ojson = nlohmann::ordered_json;
  auto value = [&](const std::string& name, int64_t v) -> ojson {
    const auto it = s.positions.find(name);
    if (it == s.positions.end()) return v;
    return ojson::parse(it->second.at(static_cast<size_t>(v)));
  };
  ojson doc;
  doc["device_name"] = s.device.empty() ? "replay" : s.device;
  doc["kernel_name"] = s.kernel.empty() ? s.label : s.kernel;
  doc["problem_size"] = ojson::array({1});
  ojson keys = ojson::array(), params = ojson::object();
  for (const spec::TuningParam& p : s.params) {
    keys.push_back(p.name);
    ojson values = ojson::array();
    for (int64_t v : p.values) values.push_back(value(p.name, v));
    params[p.name] = std::move(values);
  }
  doc["tune_params_keys"] = keys;
  doc["tune_params"] = params;
  doc["objective"] = "time";
  ojson cache = ojson::object();
  for (const auto& [c, o] : s.entries) {
    std::string key;
    ojson e = ojson::object();
    for (const spec::TuningParam& p : s.params) {
      const ojson v = value(p.name, c.at(p.name));
      key += (key.empty() ? "" : ",") + (v.is_string() ? v.get<std::string>() : v.dump());
      e[p.name] = v;
    }
    if (o.ok()) {
      e["time"] = o.ms;
      e["times"] = ojson::array({o.ms});
    } else {
      const std::string v = o.verdict;
      e["time"] = v == "compile_error" || v == "compile" || v == "CompilationFailedConfig" ? "CompilationFailedConfig"
                  : v == "infeasible" || v == "constraints" || v == "InvalidConfig"       ? "InvalidConfig"
                                                                                          : "RuntimeFailedConfig";
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

}  // namespace kopt::store
