// `kopt bench`: the CTest benchmark of a generated kernel, in Google
// Benchmark's format (so its JSON output works with Benchmark's compare.py).
//
// Times the kernel and the reference on every performance case (CUDA events
// in the worker, 10 warm-up + 100 measured launches by default), reports each
// measured launch to Google Benchmark as manual time, and fails (exit 1) when
// the kernel's geometric-mean latency exceeds the recorded best for this GPU
// by more than the tolerance. Exit 77 without a GPU; 1 when the kernel fails
// its checks.
#include <benchmark/benchmark.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli/command.h"
#include "cli/common.h"
#include "eval/evaluator.h"
#include "eval/evaluator_pool.h"
#include "store/fingerprint.h"
#include "store/tuning_cache.h"
#include "driver/driver.h"
#include "util/error.h"
#include "util/text.h"

namespace kopt::cli {
namespace {

class BenchCommand final : public Command {
 public:
  BenchCommand()
      : Command("bench",
                "Time a kernel and the reference on the performance cases (Google Benchmark output; "
                "--benchmark_* flags are passed through) and fail when slower than the recorded best") {}
  void add_options(CLI::App& sub) override;
  int run() override;

 private:
  void check_benchmark_flags() const;
  void report(const model::DeviceInfo& device, const model::Result& r) const;
  double recorded_best(const spec::Spec& s, const std::string& gpu, std::string& source) const;
  std::vector<std::string> benchmark_args() const;

  std::string spec_, kernel_;      // --spec, --kernel (required)
  std::string input_cases_;        // --input-cases: cases or a shape capture replacing the spec's
  std::string cache_file_;         // --cache-file: the tuning cache holding the recorded best
  double recorded_ms_ = 0;         // --recorded-ms: explicit recorded best geomean (overrides the cache)
  double tolerance_percent_ = 10;  // --tolerance: allowed slowdown
  Environment env_;                // --cache-dir, --device
  CLI::App* sub_ = nullptr;        // its remaining arguments: --benchmark_* flags for Google Benchmark
  std::optional<store::TuningCache> cache_;  // --cache-file, read before any GPU work (unset: none)
};

void BenchCommand::add_options(CLI::App& sub) {
  sub.add_option("--spec", spec_, "Workload spec (JSON)")->required()->check(check::existing_file());
  sub.add_option("--kernel", kernel_, "Kernel .cu (with kopt: annotations)")->required()->check(check::existing_file());
  sub.add_option("--input-cases", input_cases_,
                 "JSON file of cases replacing the spec's, or a shape capture (docs/capture.md)")
      ->check(check::existing_file());
  sub.add_option("--cache-file", cache_file_, "Tuning cache holding the recorded best (a missing file: none)")
      ->check(check::not_empty());
  sub.add_option("--recorded-ms", recorded_ms_, "Recorded best geomean in ms (instead of the cache)")
      ->check(check::finite(0, false, INFINITY));
  sub.add_option("--tolerance", tolerance_percent_, "Allowed slowdown in percent")
      ->check(check::finite(0, false, 1000))
      ->capture_default_str();
  env_.add_cache_dir(sub);
  env_.add_device(sub)->capture_default_str();
  env_.add_device_from_ctest(sub);
  sub.allow_extras();
  sub_ = &sub;
}

std::vector<std::string> BenchCommand::benchmark_args() const {
  std::vector<std::string> args = {"kopt-bench"};
  for (const auto& a : sub_->remaining()) args.push_back(a);
  return args;
}

/// The arguments left for Google Benchmark, checked before any work: only
/// --benchmark_* flags it knows, with values it takes (its own parser would
/// ignore an unknown flag, and exit 0 on a bad format), and a writable
/// --benchmark_out. Throws UsageError kopt.cli.011 naming the argument.
void BenchCommand::check_benchmark_flags() const {
  std::vector<std::string> args = benchmark_args();
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--benchmark_", 0) != 0)
      throw UsageError("kopt.cli.011", "bench: unknown option " + quote(a) +
                                           " (kopt bench takes its own options and Google Benchmark's --benchmark_*; "
                                           "see kopt bench --help)");
    const auto eq = a.find('=');
    const std::string flag = a.substr(0, eq), value = eq == std::string::npos ? "" : a.substr(eq + 1);
    if ((flag == "--benchmark_format" || flag == "--benchmark_out_format") && value != "console" &&
        value != "json" && value != "csv")
      throw UsageError("kopt.cli.011", flag + ": expected console, json or csv, got " + quote(value));
    if (flag == "--benchmark_out") check_output_file("--benchmark_out", value);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  std::ostringstream said;  // its complaint about a bad value goes into our one-line message
  std::streambuf* cerr_buf = std::cerr.rdbuf(said.rdbuf());
  benchmark::Initialize(&argc, argv.data());  // takes the flags it knows (and accepts) out of argv
  std::cerr.rdbuf(cerr_buf);
  if (argc > 1) {
    std::string why = said.str();
    while (!why.empty() && std::isspace(static_cast<unsigned char>(why.back()))) why.pop_back();
    if (why.empty()) why = "not a Google Benchmark flag";
    throw UsageError("kopt.cli.011", clip(argv[1]) + ": " + clip(why, 300));
  }
}

/// Google Benchmark: one benchmark per (kernel|reference, case), each
/// iteration one launch timed by CUDA events in the worker.
void BenchCommand::report(const model::DeviceInfo& device, const model::Result& r) const {
  std::vector<std::string> args = benchmark_args();
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  int argc = static_cast<int>(argv.size());
  benchmark::Initialize(&argc, argv.data());
  benchmark::AddCustomContext("gpu", device.name);
  benchmark::AddCustomContext("kernel", kernel_);
  if (device.simulated) benchmark::AddCustomContext("simulated", model::kSimulatedNote);
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
}

/// The recorded best geomean for this spec on `gpu` (0: none) and where it came from.
double BenchCommand::recorded_best(const spec::Spec& s, const std::string& gpu, std::string& source) const {
  double recorded = recorded_ms_;
  source = "--recorded-ms";
  if (recorded <= 0 && cache_) {
    const std::string hash = store::spec_fingerprint(s);
    for (const store::CacheEntry& e : cache_->entries)
      if (e.spec_hash == hash && e.gpu.name.value_or("") == gpu && e.geomean_ms > 0) {
        recorded = e.geomean_ms;
        source = "the tuning cache " + cache_file_;
      }
  }
  return recorded;
}

int BenchCommand::run() {
  // Every argument is checked before the GPU is looked for: without one the
  // exit is 77 (skipped), which must never hide a broken command line.
  check_benchmark_flags();
  if (!env_.cache_dir.empty()) check_output_dir("--cache-dir", env_.cache_dir);
  driver::OptimizeOptions so;
  so.spec = spec_;
  so.input_cases = input_cases_;
  const spec::Spec s = driver::load_spec_with_overrides(so);
  spec::Candidate c = eval::candidate_from_file(kernel_);
  if (c.entry.empty())
    throw UsageError("kopt.cli.015", "--kernel " + clip(kernel_) +
                                         ": the file has no '// kopt:entry NAME' line (kopt generate writes one)");
  if (!cache_file_.empty()) {
    std::error_code ec;
    const auto st = std::filesystem::status(cache_file_, ec);
    if (!std::filesystem::exists(st)) {
      std::cerr << "kopt bench: warning: --cache-file " << clip(cache_file_)
                << " does not exist (yet): no recorded best from it\n";
    } else if (!std::filesystem::is_regular_file(st)) {
      throw UsageError("kopt.cli.017", "--cache-file " + clip(cache_file_) + ": is " +
                                           (std::filesystem::is_directory(st) ? "a directory" : "not a regular file") +
                                           "; give the tuning cache's JSON file");
    } else {
      cache_ = store::read_tuning_cache(cache_file_);  // SpecError kopt.cache.1xx naming the file
    }
  }
  env_.resolve_device("bench");
  eval::EvaluatorOptions eo;
  eo.worker_argv = eval::plan_workers(env_.worker_plan()).front().argv;
  eo.cache_dir = env_.cache_path();
  eo.time = true;
  eo.time_reference = true;
  eval::Evaluator ev(s, eo);
  const model::DeviceInfo& device = ev.device();  // NoDeviceError -> 77 in App

  const model::Result r = ev.evaluate(c);
  if (r.verdict != model::Verdict::ok) {
    std::cerr << "kopt bench: the kernel was rejected: " << model::verdict_name(r.verdict) << " - " << r.detail << "\n";
    return kRejected;
  }
  report(device, r);

  // Regression gate against the recorded best.
  std::string source;
  const double recorded = recorded_best(s, device.name, source);
  std::cerr << "kopt bench: geomean " << *r.geomean_ms << " ms";
  if (r.speedup) std::cerr << " (" << *r.speedup << "x the reference)";
  if (device.simulated) std::cerr << " (" << model::kSimulatedNote << ")";
  std::cerr << "\n";
  if (recorded <= 0) {
    std::cerr << "kopt bench: no recorded best for " << device.name << ": nothing to compare against\n";
    return kOk;
  }
  const double limit = recorded * (1 + tolerance_percent_ / 100);
  std::cerr << "kopt bench: recorded best " << recorded << " ms (" << source << "), limit " << limit << " ms (+"
            << tolerance_percent_ << "%)\n";
  if (*r.geomean_ms > limit) {
    std::cerr << "kopt bench: FAIL: " << *r.geomean_ms << " ms is slower than the recorded best by more than "
              << tolerance_percent_ << "%\n";
    return kRejected;
  }
  return kOk;
}

}  // namespace

std::unique_ptr<Command> make_bench_command() { return std::make_unique<BenchCommand>(); }

}  // namespace kopt::cli
