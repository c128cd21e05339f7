// kopt_search_replay: replays kopt's search strategies on recorded spaces
// and prints, per strategy, the evaluations (and seconds) to within 5% and 1%
// of the optimum and the methodology scores (tests/support/replay_space.h).
// A development tool, built with the unit tests; scripts/compare_kernel_tuner.py
// runs it beside Kernel Tuner's strategies.
//
//   kopt_search_replay [--strategies a,b,...] [--seeds N] [--max-evaluations N]
//                      [--json FILE] [--traces FILE] [--external FILE]
//                      [--write-cache DIR] SPACE...
//
// SPACE: a Kernel Tuner cache file; a kopt sweep record (tests/data/search/,
// its spec found under --source-dir, default the source tree this was built
// from); synthetic:FAMILY-SEED (synthetic_spaces.h); "sgemm-synthetic" (the
// synthetic SGEMM record of the unit tests); "development" or "holdout" (the
// synthetic sets). --write-cache writes each space as a Kernel Tuner cache
// file DIR/<label>.json and replays nothing. --traces writes every run;
// --external measures runs made elsewhere (in that format) beside kopt's
// strategies (--strategies "" for none). Exit codes: 0, 2 bad usage or input.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "search/strategy.h"
#include "spec/spec.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/json_read.h"

#include "support/replay_space.h"
#include "support/search_replay.h"
#include "support/synthetic_spaces.h"

namespace {

namespace stdfs = std::filesystem;
using namespace kopt;
using namespace kopt::search;
using namespace kopt::search::replay;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string part = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty()) out.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

/// The spaces one SPACE argument names.
std::vector<RecordedSpace> load(const std::string& arg, const stdfs::path& source) {
  std::vector<RecordedSpace> out;
  if (arg == "development" || arg == "holdout") {
    for (const auto& [family, seed] : arg == "development" ? development_spaces() : holdout_spaces())
      out.push_back(synthetic_space(family, seed));
    return out;
  }
  if (arg.rfind("synthetic:", 0) == 0) {
    const std::string name = arg.substr(10);
    const size_t dash = name.rfind('-');
    if (dash == std::string::npos) throw UsageError("kopt.replay.121", "expected synthetic:FAMILY-SEED, got " + arg);
    out.push_back(synthetic_space(name.substr(0, dash), std::stoull(name.substr(dash + 1))));
    return out;
  }
  if (arg == "sgemm-synthetic") {
    const spec::Spec s = spec::load_spec(source / "templates" / "sgemm" / "sgemm.json");
    const Space space = sgemm_part_space(s, Record{});
    const Record r = synthetic_sgemm_record(space, performance_cases(s), 2026);
    out.push_back(from_record(space, r, "sgemm-synthetic"));
    return out;
  }
  const nlohmann::json doc = parse_json_file(arg, "space");
  if (doc.is_object() && doc.contains("cache")) {
    out.push_back(read_kernel_tuner_cache(arg));
  } else {
    const Record r = load_record(arg);
    const spec::Spec s = spec::load_spec(source / r.spec);
    out.push_back(from_record(sgemm_part_space(s, r), r, stdfs::path(arg).stem().string()));
  }
  return out;
}

/// --traces: each run's evaluations as [value or null, seconds].
nlohmann::json traces_json(const Replay& r, const StrategyMeasures& m) {
  nlohmann::json runs = nlohmann::json::array();
  for (const score::Trace& t : m.runs) {
    nlohmann::json steps = nlohmann::json::array();
    for (const score::Step& s : t) steps.push_back({s.value ? nlohmann::json(*s.value) : nlohmann::json(nullptr), s.seconds});
    runs.push_back(std::move(steps));
  }
  return {{"space", r.recorded().label}, {"strategy", m.strategy}, {"score", m.score},
          {"score_time", m.score_time ? nlohmann::json(*m.score_time) : nlohmann::json(nullptr)}, {"runs", runs}};
}

/// --external: other tools' runs on these spaces, as --traces writes them
/// ([{"space", "strategy", "runs": [[[value or null, seconds], ...], ...]}]);
/// those of space `r` are measured.
std::vector<StrategyMeasures> external(const Replay& r, const std::string& file) {
  std::vector<StrategyMeasures> out;
  const nlohmann::json doc = parse_json_file(file, "external runs");
  for (const nlohmann::json& e : doc) {
    if (e.at("space").get<std::string>() != r.recorded().label) continue;
    std::vector<score::Trace> runs;
    for (const nlohmann::json& run : e.at("runs")) {
      score::Trace t;
      for (const nlohmann::json& step : run)
        t.push_back({step.at(0).is_null() ? std::nullopt : std::optional<double>(step.at(0).get<double>()),
                     step.at(1).get<double>()});
      runs.push_back(std::move(t));
    }
    out.push_back(r.measure_runs(e.at("strategy").get<std::string>(), std::move(runs)));
  }
  return out;
}

int run(int argc, char** argv) {
  std::vector<std::string> strategies = {"default"}, spaces;
  for (const std::string& n : strategy_names())
    if (n != "exhaustive") strategies.push_back(n);
  ReplayOptions o;
  std::string json_file, cache_dir, traces_file, external_file;
  stdfs::path source = KOPT_SOURCE_DIR;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError("kopt.replay.121", a + " needs a value");
      return argv[++i];
    };
    if (a == "--strategies") strategies = split(value());
    else if (a == "--seeds") o.seeds = std::max(1, std::atoi(value().c_str()));
    else if (a == "--max-evaluations") o.max_evaluations = std::strtoull(value().c_str(), nullptr, 10);
    else if (a == "--json") json_file = value();
    else if (a == "--write-cache") cache_dir = value();
    else if (a == "--traces") traces_file = value();
    else if (a == "--external") external_file = value();
    else if (a == "--source-dir") source = value();
    else if (a == "-h" || a == "--help") {
      std::printf("usage: kopt_search_replay [--strategies a,b] [--seeds N] [--max-evaluations N] [--json FILE]\n"
                  "                          [--traces FILE] [--external FILE] [--write-cache DIR]\n"
                  "                          [--source-dir DIR] SPACE...\n");
      return 0;
    } else if (!a.empty() && a[0] == '-') throw UsageError("kopt.replay.121", "unknown option " + a);
    else spaces.push_back(a);
  }
  if (spaces.empty()) throw UsageError("kopt.replay.121", "no SPACE given (--help)");
  nlohmann::json all = nlohmann::json::array(), traces = nlohmann::json::array();
  for (const std::string& arg : spaces) {
    for (RecordedSpace& s : load(arg, source)) {
      if (!cache_dir.empty()) {
        const stdfs::path f = stdfs::path(cache_dir) / (s.label + ".json");
        fs::write_file_atomic(f, kernel_tuner_cache(s).dump(0) + "\n");
        std::fprintf(stderr, "kopt_search_replay: wrote %s (%zu configurations)\n", f.string().c_str(), s.entries.size());
        continue;
      }
      const Replay r(std::move(s), o.methodology);
      std::vector<StrategyMeasures> results;
      for (const std::string& name : strategies) {
        const std::string actual = name == "default" ? default_strategy(r.size()) : name;
        StrategyMeasures m = r.measure(actual, o);
        if (name == "default") m.strategy = "default (" + actual + ")";
        results.push_back(std::move(m));
        std::fprintf(stderr, "kopt_search_replay: %s: %s done\n", r.recorded().label.c_str(), name.c_str());
      }
      if (!external_file.empty())
        for (StrategyMeasures& m : external(r, external_file)) results.push_back(std::move(m));
      std::printf("%s\n", measures_table(r, results).c_str());
      std::fflush(stdout);
      all.push_back(r.to_json(results));
      if (!traces_file.empty())
        for (const StrategyMeasures& m : results) traces.push_back(traces_json(r, m));
    }
  }
  if (!json_file.empty()) fs::write_file_atomic(json_file, dump_json(all, 1) + "\n");
  if (!traces_file.empty()) fs::write_file_atomic(traces_file, dump_json(traces) + "\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const kopt::Error& e) {
    std::fprintf(stderr, "kopt_search_replay: %s\n", e.what());
    return 2;
  }
}
