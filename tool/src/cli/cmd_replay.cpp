// `kopt replay RECORD...`: search strategies replayed over recorded spaces
// (a run folder, T4 results, a Kernel Tuner cache) without a GPU, through
// the run driver of `kopt optimize` (replay/replay.h); prints per strategy
// the evaluations and simulated seconds to within 5% and 1% of the recorded
// optimum and the methodology score (docs/search.md, "Replaying a recorded
// space").
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/common.h"
#include "replay/replay.h"
#include "store/recorded.h"
#include "search/strategy.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/json_read.h"

namespace kopt::cli {
namespace {

using nlohmann::json;

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t comma = s.find(',', start);
    std::string part = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty()) out.push_back(part);
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

/// --external FILE: runs made elsewhere, in the form --traces writes
/// ([{"space", "strategy", "runs": [[[value or null, seconds], ...], ...]}]);
/// those of the space `label`. Errors name the file and the JSON path.
std::vector<std::pair<std::string, std::vector<search::score::Trace>>> external_runs(const std::string& file,
                                                                                   const std::string& label) {
  const json doc = parse_json_file(file, "external runs");
  const JsonAt root(doc, fs::display(file));
  root.expect_array();
  std::vector<std::pair<std::string, std::vector<search::score::Trace>>> out;
  for (size_t i = 0; i < root.size(); ++i) {
    const JsonAt e = root.at(i);
    if (e.at("space").string() != label) continue;
    std::vector<search::score::Trace> runs;
    const JsonAt rs = e.at("runs");
    for (size_t r = 0; r < rs.size(); ++r) {
      search::score::Trace t;
      const JsonAt steps = rs.at(r);
      for (size_t k = 0; k < steps.size(); ++k) {
        const JsonAt step = steps.at(k);
        const JsonAt v = step.at(size_t{0});
        t.push_back({v.value().is_null() ? std::nullopt : std::optional<double>(v.number(0)), step.at(1).number(0)});
      }
      runs.push_back(std::move(t));
    }
    out.emplace_back(e.at("strategy").string(), std::move(runs));
  }
  return out;
}

/// --traces: each run's evaluations as [value or null, seconds].
json traces_json(const std::string& label, const replay::StrategyMeasures& m) {
  json runs = json::array();
  for (const search::score::Trace& t : m.runs) {
    json steps = json::array();
    for (const search::score::Step& s : t) steps.push_back({s.value ? json(*s.value) : json(nullptr), s.seconds});
    runs.push_back(std::move(steps));
  }
  return {{"space", label}, {"strategy", m.strategy}, {"runs", std::move(runs)}};
}

class ReplayCommand final : public Command {
 public:
  ReplayCommand()
      : Command("replay",
                "Replay search strategies over recorded spaces (a run folder, T4 results, a Kernel Tuner cache) "
                "without a GPU; prints evaluations and seconds to 5% and 1% of the optimum and the methodology score") {}
  void add_options(CLI::App& sub) override {
    sub.add_option("records", records_,
                   "Recorded spaces: kopt run folders (results/run-NNN), T4 results files, Kernel Tuner cache files")
        ->required();
    sub.add_option("--strategy", strategies_,
                   "Comma-separated: default (what kopt optimize picks for the space), " + names() +
                       ", or all (default and every strategy but exhaustive)")
        ->capture_default_str();
    sub.add_option("--seeds", seeds_, "Runs per strategy, seeds 1..N")->check(check::whole(1, 10000))->capture_default_str();
    budget_opt_ = budget_.add_budget(
        sub, "evals=N,minutes=M,patience=P per run, as kopt optimize counts it (minutes on the simulated clock; "
             "default: enough for every measure, see docs/search.md)");
    sub.add_option("--compile-threads", compile_threads_,
                   "Compile threads of each replayed run: as in kopt optimize, twice as many candidates are "
                   "proposed ahead of their results")
        ->check(check::whole(1, 256))
        ->capture_default_str();
    sub.add_option("--json", json_file_, "Also write the measures (every seed's) as JSON")->check(check::not_empty());
    sub.add_option("--traces", traces_file_, "Write every run's evaluations ([value or null, seconds] each) as JSON")
        ->check(check::not_empty());
    sub.add_option("--external", external_file_,
                   "Measure runs made elsewhere (in the form --traces writes) beside the strategies")
        ->check(check::existing_file());
    sub.add_option("--write-cache", cache_dir_,
                   "Write each record as a Kernel Tuner cache file DIR/<label>.json (what Kernel Tuner's "
                   "simulation mode replays) and replay nothing")
        ->check(check::not_empty());
    sub.add_flag("-q,--quiet", quiet_, "No progress on stderr");
  }

  int run() override {
    if (!json_file_.empty()) check_output_file("--json", json_file_);
    if (!traces_file_.empty()) check_output_file("--traces", traces_file_);
    if (!cache_dir_.empty()) check_output_dir("--write-cache", cache_dir_);
    const std::vector<std::string> strategies = chosen_strategies();
    replay::ReplayOptions o;
    o.seeds = seeds_;
    o.compile_threads = compile_threads_;
    if (budget_opt_->count() > 0) o.budget = budget_.value();
    json all = json::array(), traces = json::array();
    for (const std::string& record : records_) {
      store::RecordedSpace s = store::read_recorded_space(record);
      if (!quiet_)
        for (const std::string& note : s.notes) std::cerr << "kopt: " << fs::display(record) << ": " << note << "\n";
      if (!cache_dir_.empty()) {
        const std::filesystem::path f = std::filesystem::path(cache_dir_) / (s.label + ".json");
        fs::write_output_file(f, store::kernel_tuner_cache(s).dump(0) + "\n");
        if (!quiet_) std::cerr << "kopt: wrote " << fs::display(f) << " (" << s.entries.size() << " configurations)\n";
        continue;
      }
      const replay::Replay r(std::move(s), o.methodology);
      std::vector<replay::StrategyMeasures> results;
      for (const std::string& name : strategies) {
        results.push_back(r.measure(name, o));
        if (!quiet_) std::cerr << "kopt: " << r.recorded().label << ": " << results.back().strategy << " done\n";
      }
      if (!external_file_.empty())
        for (auto& [name, runs] : external_runs(external_file_, r.recorded().label))
          results.push_back(r.measure_runs(name, std::move(runs)));
      std::cout << replay::measures_table(r, results) << "\n" << std::flush;
      all.push_back(r.to_json(results, o.budget ? *o.budget : r.default_budget()));
      if (!traces_file_.empty())
        for (const replay::StrategyMeasures& m : results) traces.push_back(traces_json(r.recorded().label, m));
    }
    if (!json_file_.empty()) fs::write_output_file(json_file_, dump_json(all, 1) + "\n");
    if (!traces_file_.empty()) fs::write_output_file(traces_file_, dump_json(traces) + "\n");
    return kOk;
  }

 private:
  static std::string names() {
    std::string s;
    for (const std::string& n : search::strategy_names()) s += (s.empty() ? "" : ", ") + n;
    return s;
  }
  /// --strategy as names; UsageError(kopt.search.801) naming an unknown one.
  std::vector<std::string> chosen_strategies() const {
    std::vector<std::string> out;
    const std::vector<std::string> known = search::strategy_names();
    for (const std::string& n : split_commas(strategies_)) {
      if (n == "all") {
        out.push_back("default");
        for (const std::string& k : known)
          if (k != "exhaustive") out.push_back(k);
      } else if (n == "default" || std::find(known.begin(), known.end(), n) != known.end()) {
        out.push_back(n);
      } else {
        throw UsageError("kopt.search.801", "--strategy: unknown strategy '" + n + "' (known: default, " + names() +
                                             ", all)");
      }
    }
    if (out.empty()) throw UsageError("kopt.search.801", "--strategy: no strategy given");
    return out;
  }

  std::vector<std::string> records_;
  std::string strategies_ = "default";
  int seeds_ = 10;
  Budget budget_;
  CLI::Option* budget_opt_ = nullptr;
  int compile_threads_ = 1;
  std::string json_file_, traces_file_, external_file_, cache_dir_;
  bool quiet_ = false;
};

}  // namespace

std::unique_ptr<Command> make_replay_command() { return std::make_unique<ReplayCommand>(); }

}  // namespace kopt::cli
