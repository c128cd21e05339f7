#include "cli/bench.h"

#include <benchmark/benchmark.h>

#include <iostream>

#include "eval/evaluator.h"
#include "gen/generate.h"
#include "run/fingerprint.h"
#include "run/store.h"
#include "util/error.h"

namespace kopt::cli {

int run_bench(const BenchOptions& o) {
  const spec::Spec s = spec::load_spec(o.spec);
  eval::EvaluatorOptions eo;
  eo.worker_argv = o.worker_argv;
  eo.cache_dir = o.cache_dir;
  eo.time = true;
  eo.time_reference = true;
  eval::Evaluator ev(s, eo);
  const model::DeviceInfo& device = ev.device();  // NoDeviceError -> 77 at the caller

  spec::Candidate c = eval::candidate_from_file(o.kernel);
  if (c.entry.empty() && s.initial) c.entry = s.initial->entry;
  const model::Result r = ev.evaluate(c);
  if (r.verdict != model::Verdict::ok) {
    std::cerr << "kopt bench: the kernel was rejected: " << model::verdict_name(r.verdict) << " - " << r.detail << "\n";
    return 1;
  }

  // Google Benchmark: one benchmark per (kernel|reference, case), each
  // iteration one launch timed by CUDA events in the worker.
  std::vector<std::string> args = {"kopt-bench"};
  args.insert(args.end(), o.benchmark_args.begin(), o.benchmark_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  benchmark::Initialize(&argc, argv.data());
  benchmark::AddCustomContext("gpu", device.name);
  benchmark::AddCustomContext("kernel", o.kernel);
  for (const auto& cr : r.cases) {
    auto add = [&](const std::string& who, const model::LatencyStats& lat) {
      const std::vector<double> samples = lat.raw_ms;
      if (samples.empty()) return;
      benchmark::RegisterBenchmark((who + "/" + cr.name).c_str(),
                                   [samples](benchmark::State& st) {
                                     size_t i = 0;
                                     for (auto _ : st) st.SetIterationTime(samples[i++ % samples.size()] / 1e3);
                                   })
          ->UseManualTime()
          ->Iterations(static_cast<benchmark::IterationCount>(samples.size()))
          ->Unit(benchmark::kMillisecond);
    };
    if (cr.latency) add("kernel", *cr.latency);
    if (cr.reference_latency) add("reference", *cr.reference_latency);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();

  // Regression gate against the recorded best.
  double recorded = o.recorded_ms;
  std::string source = "--recorded-ms";
  if (recorded <= 0 && !o.cache_file.empty()) {
    const nlohmann::json cache = gen::read_cache(o.cache_file);
    const std::string hash = run::spec_fingerprint(s);
    for (const auto& e : cache["entries"])
      if (e["spec_hash"] == hash && e["gpu"].value("name", "") == device.name && e.value("geomean_ms", 0.0) > 0) {
        recorded = e["geomean_ms"].get<double>();
        source = "the tuning cache " + o.cache_file;
      }
  }
  std::cerr << "kopt bench: geomean " << *r.geomean_ms << " ms";
  if (r.speedup) std::cerr << " (" << *r.speedup << "x the reference)";
  std::cerr << "\n";
  if (recorded <= 0) {
    std::cerr << "kopt bench: no recorded best for " << device.name << ": nothing to compare against\n";
    return 0;
  }
  const double limit = recorded * (1 + o.tolerance_percent / 100);
  std::cerr << "kopt bench: recorded best " << recorded << " ms (" << source << "), limit " << limit << " ms (+"
            << o.tolerance_percent << "%)\n";
  if (*r.geomean_ms > limit) {
    std::cerr << "kopt bench: FAIL: " << *r.geomean_ms << " ms is slower than the recorded best by more than "
              << o.tolerance_percent << "%\n";
    return 1;
  }
  return 0;
}

}  // namespace kopt::cli
