#include "replay/replay.h"

#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "replay/table_runner.h"
#include "search/space.h"
#include "search/strategy.h"
#include "spec/spec.h"
#include "driver/driver.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/interrupt.h"
#include "util/json.h"

namespace kopt::replay {
namespace {

using nlohmann::json;
namespace stdfs = std::filesystem;
namespace score = search::score;

/// The performance case of a replayed run: the recorded objective.
constexpr const char* kCase = "recorded";

/// The template and reference of the replay's spec: never compiled or run
/// (the runner answers from the record), but a spec names real files.
constexpr const char* kTemplate =
    "// The template of a replayed space (kopt replay): never compiled, the record answers.\n"
    "extern \"C\" __global__ void replay_template(float* out) { out[0] = 0.0f; }\n"
    "extern \"C\" __global__ void replay_reference(float* out) { out[0] = 0.0f; }\n";

/// The spec of a replayed run: the record's parameters and values, no
/// constraint (the space is the record's), one performance case.
json replay_spec(const store::RecordedSpace& s) {
  json params = json::object();
  for (const spec::TuningParam& p : s.params) params[p.name] = p.values;
  const json launch = {{"grid", {1, 1, 1}}, {"block", {1, 1, 1}}, {"shared_bytes", 0}};
  return {{"format_version", 1},
          {"name", "replay"},
          {"description", "the recorded space " + s.source + " replayed by kopt replay"},
          {"signature", json::array({{{"name", "out"}, {"type", "float"}, {"role", "output"}, {"count", 1}}})},
          {"launch", launch},
          {"reference", {{"kind", "kernel"}, {"source", "replay.cu"}, {"entry", "replay_reference"}}},
          {"template", {{"source", "replay.cu"}, {"entry", "replay_template"}, {"launch", launch}}},
          {"cases", json::array({{{"name", kCase}, {"role", "performance"}, {"sizes", {{"N", 1}}}}})},
          {"tuning", {{"params", params}}}};
}

bool identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

stdfs::path make_temp_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = (stdfs::path(tmp && *tmp ? tmp : "/tmp") / "kopt-replay-XXXXXX").string();
  if (!::mkdtemp(pattern.data()))
    throw EnvironmentError("kopt.replay.107", "cannot create a temporary folder " + pattern + " (TMPDIR)");
  return pattern;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::optional<double> median_of(const std::vector<std::optional<double>>& v) {
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

score::Methodology methodology_of(const store::RecordedSpace& s, const score::MethodologyOptions& o) {
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
  if (!s.timed()) return score::Methodology(std::move(ok), failed, {}, {}, o);
  return score::Methodology(std::move(ok), failed, std::move(ok_seconds), std::move(failed_seconds), o);
}

Replay::Replay(store::RecordedSpace s, const score::MethodologyOptions& o)
    : s_(std::move(s)), methodology_(methodology_of(s_, o)), table_(std::make_unique<Table>(s_)) {
  for (const spec::TuningParam& p : s_.params)
    if (!identifier(p.name))
      throw SpecError("kopt.replay.106", s_.source + ": parameter \"" + p.name +
                                             "\": a replayed parameter needs a name of letters, digits and _ "
                                             "(not starting with a digit), as kopt's tuning parameters");
  dir_ = make_temp_dir();
  try {
    fs::write_file_atomic(dir_ / "replay.cu", kTemplate);
    fs::write_file_atomic(dir_ / "replay.json", dump_json(replay_spec(s_), 1) + "\n");
    spec::load_spec(dir_ / "replay.json");  // a name the spec refuses (a device constant's) is said now
  } catch (const SpecError& e) {
    std::error_code ec;
    stdfs::remove_all(dir_, ec);
    throw SpecError("kopt.replay.106", s_.source + ": its parameters cannot be kopt's: " + e.what());
  } catch (...) {
    std::error_code ec;
    stdfs::remove_all(dir_, ec);
    throw;
  }
}

Replay::~Replay() {
  std::error_code ec;
  stdfs::remove_all(dir_, ec);
}

size_t Replay::within(double tolerance) const {
  size_t n = 0;
  for (const auto& [c, o] : s_.entries) n += o.ok() && o.ms <= optimum() * (1 + tolerance);
  return n;
}

uint64_t Replay::cartesian_size() const {
  uint64_t cartesian = 1;
  for (const spec::TuningParam& p : s_.params)
    cartesian = cartesian > std::numeric_limits<uint64_t>::max() / std::max<size_t>(p.values.size(), 1)
                    ? std::numeric_limits<uint64_t>::max()
                    : cartesian * p.values.size();
  return cartesian;
}

std::string Replay::default_strategy() const {
  return search::default_strategy(std::optional<uint64_t>(size()), cartesian_size());
}

model::Budget Replay::default_budget() const {
  double evals = std::max<double>(1000, static_cast<double>(methodology_.last_evaluation()));
  if (methodology_.timed()) {
    double total = 0;
    for (const auto& [c, o] : s_.entries) total += o.seconds;
    evals = std::max(evals, std::ceil(1.2 * methodology_.time_budget() / (total / static_cast<double>(size()))));
  }
  model::Budget b;
  b.evaluations = static_cast<int64_t>(std::min(evals, static_cast<double>(size())));
  return b;
}

score::Trace Replay::run(const std::string& strategy, uint64_t seed, const model::Budget& budget,
                         int compile_threads) const {
  score::Trace trace;
  driver::OptimizeOptions o;
  o.spec = dir_ / "replay.json";
  o.strategy = strategy == "default" ? "" : strategy;
  o.budget = budget;
  o.seed = seed;
  o.results_dir = dir_ / "results";  // nothing is written there: the run is kept in memory
  o.in_memory = true;
  o.quiet = true;
  o.retime_rounds = 1;
  o.specialize = false;
  o.screen_factor = 0;  // a record holds one timing per configuration: nothing to screen
  o.shape_classes = 0;
  o.compile_threads = compile_threads;
  // The most a real run proposes ahead (twice its compile threads): a record
  // has no compile times apart from evaluation times to choose the depth by.
  o.compile_ahead = 2 * compile_threads;
  o.workers.command.clear();  // nothing may start a worker
  const Table* table = table_.get();
  o.runner = [table, &trace](const spec::Spec&) -> std::unique_ptr<driver::Runner> {
    return std::make_unique<TableRunner>(*table, kCase, trace);
  };
  // The space is the record's: where it holds every point of the parameters'
  // product (a complete sweep), the spec's space already is.
  if (size() < cartesian_size())
    o.space_filter = [table](const std::map<std::string, int64_t>& c) { return table->find(c) != nullptr; };
  const int code = driver::optimize(o);
  util::throw_if_interrupted();  // Ctrl-C: the replay stops (exit 130), not just this run
  if (code != 0 && code != 1)  // 1: nothing passed in this run's evaluations
    throw EnvironmentError("kopt.replay.108", "the replayed run of " + (strategy.empty() ? "default" : strategy) +
                                                  " (seed " + std::to_string(seed) + ") ended with exit code " +
                                                  std::to_string(code));
  return trace;
}

StrategyMeasures Replay::measure(const std::string& strategy, const ReplayOptions& o) const {
  const model::Budget budget = o.budget ? *o.budget : default_budget();
  std::vector<score::Trace> runs;
  for (int seed = 1; seed <= o.seeds; ++seed)
    runs.push_back(run(strategy, static_cast<uint64_t>(seed), budget, o.compile_threads));
  StrategyMeasures m = measure_runs(strategy, std::move(runs));
  if (strategy == "default" || strategy.empty()) m.strategy = "default (" + default_strategy() + ")";
  return m;
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

json Replay::to_json(const std::vector<StrategyMeasures>& results, const model::Budget& budget) const {
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  json j{{"label", s_.label},
         {"source", s_.source},
         {"format", s_.format},
         {"device", s_.device},
         {"size", size()},
         {"failed", failed()},
         {"optimum", optimum()},
         {"median", methodology_.median_value()},
         {"within_5pct", within(0.05)},
         {"within_1pct", within(0.01)},
         {"score_evaluations", {methodology_.first_evaluation(), methodology_.last_evaluation()}},
         {"timed", methodology_.timed()},
         {"default_strategy", default_strategy()},
         {"budget", budget.to_json()},
         {"notes", s_.notes}};
  if (methodology_.timed()) j["score_seconds"] = {methodology_.first_second(), methodology_.last_second()};
  json rs = json::array();
  for (const StrategyMeasures& m : results) {
    json per = json::array();
    for (size_t i = 0; i < m.to5.size(); ++i) {
      json run{{"seed", i + 1},
               {"evaluations", m.runs.size() > i ? m.runs[i].size() : 0},
               {"to5", m.to5[i] ? json(*m.to5[i]) : json(nullptr)},
               {"to1", m.to1[i] ? json(*m.to1[i]) : json(nullptr)}};
      if (methodology_.timed()) {
        run["seconds5"] = opt(m.seconds5[i]);
        run["seconds1"] = opt(m.seconds1[i]);
      }
      per.push_back(std::move(run));
    }
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

}  // namespace kopt::replay
