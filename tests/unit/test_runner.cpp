// The runner seam (driver/runner.h): the whole run driver (the search loop,
// the budget's stop conditions, the finalists, the run folder) over a runner
// that answers from a table with a simulated clock, as a replay of a recorded
// space does. No worker process is started (the worker plan has no command).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "model/device_info.h"
#include "runner_support.h"
#include "temp_dir.h"
#include "driver/driver.h"
#include "driver/runner.h"
#include "util/fs.h"

namespace {

namespace fsys = std::filesystem;
using kopt::test::TempDir;
using nlohmann::json;

const std::string kSpec = std::string(KOPT_SOURCE_DIR) + "/templates/transpose/transpose.json";

/// The recorded space: every configuration's latency on every performance
/// case (1 ms at TILE=32, BLOCK_ROWS=8, PAD=1, VEC=4, more away from it; 2 ms
/// for the initial kernel), each evaluation taking `seconds` of simulated time.
/// What the runner was asked (it dies with the driver).
struct Asked {
  int started = 0, evaluated_alone = 0;
};

class TableRunner final : public kopt::driver::Runner {
 public:
  TableRunner(const kopt::spec::Spec& spec, double seconds, Asked& asked)
      : spec_(spec), seconds_(seconds), asked_(asked) {}

  kopt::model::DeviceInfo open() override { return kopt::model::hopper_limits("recorded device"); }
  std::string arch() override { return "sm_90"; }
  kopt::cuda::CompileResult compile(const kopt::spec::Candidate&) override {
    kopt::cuda::CompileResult r;
    r.ok = true;  // a replay answers from the record, without NVRTC
    return r;
  }
  size_t size() const override { return 1; }
  kopt::driver::RunnerSlot slot(size_t) const override { return {0, "the record", "recorded device", "", ""}; }
  bool idle(size_t) const override { return !pending_; }
  size_t live_count() const override { return 1; }
  size_t primary() const override { return 0; }
  void drop(size_t, const std::string&) override {}
  void start(size_t, kopt::spec::Candidate c, kopt::cuda::CompileResult) override {
    ++asked_.started;
    pending_ = std::move(c);
  }
  kopt::driver::RunnerDone wait_any() override {
    kopt::driver::RunnerDone d;
    d.candidate = std::move(*pending_);
    pending_.reset();
    d.result = result_for(d.candidate);
    d.sent = d.finished = now();
    return d;
  }
  kopt::model::Result evaluate(const kopt::spec::Candidate& c, bool) override {
    ++asked_.evaluated_alone;
    return result_for(c);
  }
  kopt::model::Result evaluate_baseline() override { throw std::logic_error("the transpose spec has no baseline"); }
  json profile(const kopt::spec::Candidate&, const std::string&, const fsys::path&) override {
    return {{"available", false}, {"reason", "profiling unavailable: a recorded space"}};
  }
  std::chrono::steady_clock::time_point now() const override {
    return start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(simulated_s_));
  }

 private:
  kopt::model::Result result_for(const kopt::spec::Candidate& c) {
    simulated_s_ += seconds_;
    double ms = 2.0;  // the initial kernel (no parameters)
    if (c.params.count("TILE")) {
      auto off = [&](const char* k, int64_t best, double cost) { return c.params.at(k) == best ? 0.0 : cost; };
      ms = 1.0 + off("TILE", 32, 0.4) + off("BLOCK_ROWS", 8, 0.2) + off("PAD", 1, 0.1) + off("VEC", 4, 0.1);
    }
    return kopt::test::passed_result(spec_, ms);
  }

  const kopt::spec::Spec spec_;
  const double seconds_;
  Asked& asked_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double simulated_s_ = 0;
  std::optional<kopt::spec::Candidate> pending_;
};

struct Ran {
  int code = -1;
  json summary, history;
  Asked asked;
};

Ran run(const TempDir& d, const std::string& budget, double seconds_per_evaluation) {
  kopt::driver::OptimizeOptions o = kopt::test::runner_options(kSpec, budget, d.path());
  Ran r;
  o.runner = [&r, seconds_per_evaluation](const kopt::spec::Spec& s) -> std::unique_ptr<kopt::driver::Runner> {
    return std::make_unique<TableRunner>(s, seconds_per_evaluation, r.asked);
  };
  fsys::path dir;
  testing::internal::CaptureStdout();
  r.code = kopt::driver::optimize(o, &dir);
  testing::internal::GetCapturedStdout();
  r.summary = json::parse(kopt::fs::read_file(dir / "summary.json"));
  r.history = json::parse(kopt::fs::read_file(dir / "history.json"));
  return r;
}

TEST(Runner, TheDriverRunsOverAnyRunnerAndFindsTheRecordedOptimum) {
  TempDir d;
  Ran r = run(d, "evals=1000", 1.0);
  ASSERT_EQ(r.code, 0);
  // Every valid configuration evaluated once (exhaustive), the initial kernel and the finalists alone.
  EXPECT_EQ(r.asked.started, r.summary["valid_configurations"].get<int>()) << r.summary.dump(1);
  EXPECT_GE(r.asked.evaluated_alone, 2);
  EXPECT_EQ(r.summary["final_best"]["params"],
            json({{"TILE", 32}, {"BLOCK_ROWS", 8}, {"PAD", 1}, {"VEC", 4}}));
  EXPECT_DOUBLE_EQ(r.summary["final_best"]["geomean_ms"].get<double>(), 1.0);
}

// The budget's minutes count on the runner's clock: a replay's minutes are
// the recorded ones. 30 s an evaluation, 2 minutes: the initial kernel and
// three candidates fit.
TEST(Runner, TheMinutesBudgetCountsTheRunnersClock) {
  TempDir d;
  Ran r = run(d, "minutes=2", 30.0);
  ASSERT_EQ(r.code, 0);
  int candidates = 0;
  for (const auto& a : r.history["attempts"]) candidates += a["kind"] == "candidate";
  EXPECT_EQ(candidates, 3) << r.history.dump(1);
  // The run's minutes are the simulated ones too: three candidates, 1.5 min of search.
  EXPECT_NEAR(r.summary["time_split"]["search_minutes"].get<double>(), 1.5, 0.01) << r.summary["time_split"].dump();
  EXPECT_GE(r.summary["time_split"]["total_minutes"].get<double>(), 2.0) << r.summary["time_split"].dump();
}

}  // namespace
