#include "support/run_fixture.h"

#include <cstdio>
#include <exception>
#include <stdexcept>

namespace kopt::test {

model::LatencyStats latency_around(double median_ms, int launches) {
  if (launches < 1) throw std::invalid_argument("latency_around: launches must be >= 1");
  std::vector<double> samples;
  for (int i = 0; i < launches; ++i) {
    // -1 .. 1 over the launches; 0 in the middle.
    const double at = launches == 1 ? 0.0 : (2.0 * i - (launches - 1)) / (launches - 1);
    samples.push_back(at == 0 ? median_ms : median_ms * (1 + 0.01 * at));
  }
  model::LatencyStats s = model::latency_stats(samples);
  s.raw_ms = samples;
  return s;
}

model::Attempt synthetic_attempt(const std::string& kind, const std::string& label,
                                 std::map<std::string, int64_t> params, model::Verdict verdict,
                                 const CaseMedians& cases, int launches) {
  const std::optional<model::AttemptKind> k = model::parse_attempt_kind(kind);
  if (!k) throw std::invalid_argument("synthetic_attempt: '" + kind + "' is no attempt kind");
  model::Attempt a;
  a.kind = *k;
  a.label = label;
  a.params = std::move(params);
  a.source = "// " + label + "\nextern \"C\" __global__ void k() {}\n";
  a.result.verdict = verdict;
  const bool ok = verdict == model::Verdict::ok;
  if (!ok) a.result.detail = std::string("synthetic ") + model::verdict_name(verdict);
  std::vector<double> medians;
  for (const auto& [name, median_ms] : cases) {
    model::CaseResult c;
    c.name = name;
    c.role = "performance";
    c.passed = ok;
    if (ok) {
      c.latency = latency_around(median_ms, launches);
      medians.push_back(c.latency->median_ms);
    }
    a.result.cases.push_back(c);
  }
  if (!medians.empty()) a.result.geomean_ms = model::geomean(medians);
  return a;
}

nlohmann::json fixture_spec() { return {{"format_version", 1}, {"name", "fixture"}}; }

nlohmann::json fixture_device() { return {{"name", "Fake GPU"}, {"arch", "sm_90"}}; }

nlohmann::json specialization_variant(int variant, int index, const std::string& label,
                                      const std::map<std::string, int64_t>& params) {
  return {{"variant", variant},
          {"index", index},
          {"label", label},
          {"params", model::params_json(params)},
          {"file", "variants/v" + std::to_string(variant) + ".cu"}};
}

store::RunInfo fixture_info() {
  store::RunInfo info;
  info.strategy = "random";
  return info;
}

store::RunStore make_run(const std::filesystem::path& results, const std::vector<model::Attempt>& attempts,
                         const nlohmann::json& spec, const nlohmann::json& device, const store::RunInfo& info) {
  store::RunStore store = store::RunStore::create(results, spec, device, info);
  for (const model::Attempt& a : attempts) store.record(a);
  return store;
}

int fixture_main(int argc, char** argv, const std::function<void(const std::filesystem::path& out_dir)>& write) {
  const char* name = argc > 0 ? argv[0] : "fixture";
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", name);
    return 2;
  }
  try {
    const std::filesystem::path out = argv[1];
    std::filesystem::remove_all(out / "results");
    std::filesystem::create_directories(out);
    write(out);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", std::filesystem::path(name).filename().c_str(), e.what());
    return 1;
  }
}

}  // namespace kopt::test
