// Compiling ahead of the GPU: a candidate whose compile is done starts before
// an earlier one whose compile is not, and when the search ends, nothing waits
// for compiles whose results nobody reads (queued ones are dropped, running
// ones stopped). The pieces: ThreadPool::discard_queued, run_process's stop
// flag, cuda::Compiler::stop; then the whole driver over a runner whose
// compiles take set times. No GPU and no worker process.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda/nvrtc.h"
#include "driver/driver.h"
#include "driver/runner.h"
#include "model/device_info.h"
#include "runner_support.h"
#include "temp_dir.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/thread_pool.h"

namespace {

namespace fsys = std::filesystem;
using Clock = std::chrono::steady_clock;
using kopt::test::TempDir;
using nlohmann::json;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

TEST(CompileAhead, DiscardQueuedDropsJobsNotStartedAndLetsRunningOnesFinish) {
  kopt::ThreadPool pool(1);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::future<int> running = pool.submit([gate] {
    gate.wait();
    return 1;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the one thread has taken the first job
  std::vector<std::future<int>> queued;
  for (int i = 0; i < 3; ++i) queued.push_back(pool.submit([i] { return 10 + i; }));
  EXPECT_EQ(pool.discard_queued(), 3u);
  release.set_value();
  EXPECT_EQ(running.get(), 1);
  for (auto& f : queued) EXPECT_THROW(f.get(), std::future_error);
  EXPECT_EQ(pool.submit([] { return 7; }).get(), 7);  // the pool still works
}

TEST(CompileAhead, RunProcessStopsTheGroupWhenAskedTo) {
  std::atomic<bool> stop{false};
  std::thread setter([&stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop = true;
  });
  const auto t0 = Clock::now();
  const kopt::util::ProcResult r = kopt::util::run_process({"/bin/sh", "-c", "sleep 30"}, 60, 1024, &stop);
  setter.join();
  EXPECT_TRUE(r.started);
  EXPECT_TRUE(r.stopped);
  EXPECT_FALSE(r.timed_out);
  EXPECT_LT(seconds_since(t0), 5.0);
  // Without the flag set, the program runs to its end.
  std::atomic<bool> never{false};
  const kopt::util::ProcResult done = kopt::util::run_process({"/bin/sh", "-c", "echo hi"}, 60, 1024, &never);
  EXPECT_FALSE(done.stopped);
  EXPECT_EQ(done.exit_code, 0);
  EXPECT_EQ(done.output, "hi\n");
}

kopt::cuda::CompileRequest tiny_request(const std::string& tag) {
  kopt::cuda::CompileRequest r;
  r.source = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] = " + tag + "; }\n";
  r.entry = "k";
  return r;
}

TEST(CompileAhead, AStoppedCompilerEndsItsCompilesWithoutAResultAndCachesNothing) {
  TempDir dir;
  kopt::cuda::CompilerOptions o;
  // A compiler process that never finishes: only the stop ends it.
  o.helper_argv = {"/bin/sh", "-c", "sleep 30", "sh"};
  o.timeout_s = 60;
  kopt::cuda::Compiler compiler(dir.path() / "cache", o);
  std::thread stopper([&compiler] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    compiler.stop(true);
  });
  const auto t0 = Clock::now();
  const kopt::cuda::CompileResult r = compiler.compile(tiny_request("1.0f"));
  stopper.join();
  EXPECT_LT(seconds_since(t0), 5.0);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error_name, kopt::cuda::kCompileStopped);
  EXPECT_FALSE(fsys::exists(dir.path() / "cache" / (r.key + ".json")));  // no entry: compiled again later

  // While stopped, a compile that misses the cache does not start at all.
  kopt::cuda::Compiler here(dir.path() / "cache2");
  here.stop(true);
  const kopt::cuda::CompileResult refused = here.compile(tiny_request("2.0f"));
  EXPECT_EQ(refused.error_name, kopt::cuda::kCompileStopped);
  EXPECT_EQ(here.misses(), 0);
  // Once resumed, the same request compiles (NVRTC in this process).
  here.stop(false);
  const kopt::cuda::CompileResult ok = here.compile(tiny_request("2.0f"));
  EXPECT_TRUE(ok.ok) << ok.log;
  EXPECT_FALSE(ok.cache_hit);
}

const std::string kSpec = std::string(KOPT_SOURCE_DIR) + "/templates/transpose/transpose.json";

/// A runner whose compiles take set times: the configurations in `slow` take
/// `slow_s` (or until the compiles are stopped), every other one returns at
/// once. Results answer at once, 1 ms each. Records what it was asked.
class TimedCompiles final : public kopt::driver::Runner {
 public:
  struct Log {
    std::mutex mu;
    std::vector<std::string> compiled, started;
    std::vector<bool> stop_calls;
    std::vector<double> joined_ms;  // with parts: 2 when a candidate's parts ran side by side
  };

  TimedCompiles(const kopt::spec::Spec& spec, bool out_of_order, int slow_from, double slow_s, Log& log)
      : spec_(spec), out_of_order_(out_of_order), slow_from_(slow_from), slow_s_(slow_s), log_(log) {}

  kopt::model::DeviceInfo open() override { return kopt::model::hopper_limits("timed device"); }
  std::string arch() override { return "sm_90"; }
  kopt::cuda::CompileResult compile(const kopt::spec::Candidate& c) override {
    bool slow = false;
    {
      std::lock_guard<std::mutex> lock(log_.mu);
      // The slow ones: the configurations proposed as number slow_from and on
      // (1-based: slow_from 1 makes the first proposed slow), counted by the
      // first compile of each (the finalists' compiles come back as hits).
      if (!first_seen_.count(c.label)) first_seen_[c.label] = static_cast<int>(first_seen_.size()) + 1;
      const int number = first_seen_[c.label];
      slow = slow_from_ > 0 ? number == slow_from_ : number >= -slow_from_;
      log_.compiled.push_back(c.label);
    }
    kopt::cuda::CompileResult r;
    r.ok = true;
    if (slow) {
      std::unique_lock<std::mutex> lock(stop_mu_);
      stop_cv_.wait_for(lock, std::chrono::duration<double>(slow_s_), [this] { return stopped_; });
      if (stopped_) {
        r.ok = false;
        r.error_name = kopt::cuda::kCompileStopped;
      }
    }
    return r;
  }
  void stop_compiles(bool stopped) override {
    {
      std::lock_guard<std::mutex> lock(stop_mu_);
      stopped_ = stopped;
    }
    stop_cv_.notify_all();
    std::lock_guard<std::mutex> lock(log_.mu);
    log_.stop_calls.push_back(stopped);
  }
  bool start_when_compiled() const override { return out_of_order_; }

  /// With parts: two per candidate, each waiting (up to 5 s) until the other
  /// is running too, so that they end at once only when run side by side.
  size_t compile_parts(const kopt::spec::Candidate& c) override { return parts_ ? 2 : Runner::compile_parts(c); }
  kopt::cuda::CompileResult compile_part(const kopt::spec::Candidate& c, size_t i) override {
    if (!parts_) return Runner::compile_part(c, i);
    std::unique_lock<std::mutex> lock(part_mu_);
    ++part_running_[c.label];
    part_cv_.notify_all();
    const bool together = part_cv_.wait_for(lock, std::chrono::seconds(5), [&] { return part_running_[c.label] == 2; });
    kopt::cuda::CompileResult r;
    r.ok = true;
    r.compile_ms = together ? 1 : 1000;
    return r;
  }
  kopt::cuda::CompileResult join_parts(const kopt::spec::Candidate& c,
                                       std::vector<kopt::cuda::CompileResult> parts) override {
    if (!parts_) return Runner::join_parts(c, std::move(parts));
    EXPECT_EQ(parts.size(), 2u);
    kopt::cuda::CompileResult r;
    r.ok = true;
    for (const auto& p : parts) r.compile_ms += p.compile_ms;
    std::lock_guard<std::mutex> lock(log_.mu);
    log_.joined_ms.push_back(r.compile_ms);
    return r;
  }
  bool parts_ = false;

  size_t size() const override { return 1; }
  kopt::driver::RunnerSlot slot(size_t) const override { return {0, "timed", "timed device", "", ""}; }
  bool idle(size_t) const override { return !pending_; }
  size_t live_count() const override { return 1; }
  size_t primary() const override { return 0; }
  void drop(size_t, const std::string&) override {}
  void start(size_t, kopt::spec::Candidate c, kopt::cuda::CompileResult compiled) override {
    EXPECT_TRUE(compiled.ok) << c.label << " started with " << compiled.error_name;  // a stopped compile never starts
    {
      std::lock_guard<std::mutex> lock(log_.mu);
      log_.started.push_back(c.label);
    }
    pending_ = std::move(c);
  }
  kopt::driver::RunnerDone wait_any() override {
    kopt::driver::RunnerDone d;
    d.candidate = std::move(*pending_);
    pending_.reset();
    d.result = result();
    d.sent = d.finished = now();
    return d;
  }
  kopt::model::Result evaluate(const kopt::spec::Candidate&, bool) override { return result(); }
  kopt::model::Result evaluate_baseline() override { throw std::logic_error("no baseline"); }
  json profile(const kopt::spec::Candidate&, const std::string&, const fsys::path&) override {
    return {{"available", false}, {"reason", "profiling unavailable"}};
  }

 private:
  kopt::model::Result result() const { return kopt::test::passed_result(spec_, 1.0); }

  const kopt::spec::Spec spec_;
  const bool out_of_order_;
  const int slow_from_;
  const double slow_s_;
  Log& log_;
  std::map<std::string, int> first_seen_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopped_ = false;
  std::optional<kopt::spec::Candidate> pending_;
  std::mutex part_mu_;
  std::condition_variable part_cv_;
  std::map<std::string, int> part_running_;
};

struct Timed {
  int code = -1;
  double seconds = 0;
  TimedCompiles::Log log;
};

/// `slow_from` > 0: only the configuration proposed as that number is slow;
/// < 0: every one from number -slow_from on.
void run_timed(Timed& t, const TempDir& d, const std::string& budget, bool out_of_order, int slow_from,
               double slow_s, bool parts = false) {
  kopt::driver::OptimizeOptions o = kopt::test::runner_options(kSpec, budget, d.path());
  o.compile_threads = 2;
  o.runner = [&t, out_of_order, slow_from, slow_s, parts](const kopt::spec::Spec& s) -> std::unique_ptr<kopt::driver::Runner> {
    auto r = std::make_unique<TimedCompiles>(s, out_of_order, slow_from, slow_s, t.log);
    r->parts_ = parts;
    return r;
  };
  const auto t0 = Clock::now();
  testing::internal::CaptureStdout();
  t.code = kopt::driver::optimize(o, nullptr);
  testing::internal::GetCapturedStdout();
  t.seconds = seconds_since(t0);
}

TEST(CompileAhead, ACandidateWhoseCompileIsDoneStartsBeforeASlowerEarlierOne) {
  TempDir d;
  Timed t;
  run_timed(t, d, "evals=4", /*out_of_order=*/true, /*slow_from=*/1, /*slow_s=*/2.0);
  ASSERT_EQ(t.code, 0);
  ASSERT_GE(t.log.started.size(), 2u);
  const std::string first_proposed = t.log.compiled.front();
  // The first proposed compiles for 2 s; the others, done at once, go first.
  EXPECT_NE(t.log.started.front(), first_proposed);
  EXPECT_EQ(t.log.started.size(), 4u);
}

TEST(CompileAhead, ARunnerThatKeepsTheProposalOrderStartsInIt) {
  TempDir d;
  Timed t;
  run_timed(t, d, "evals=3", /*out_of_order=*/false, /*slow_from=*/1, /*slow_s=*/0.5);
  ASSERT_EQ(t.code, 0);
  ASSERT_EQ(t.log.started.size(), 3u);
  // In proposal order: the n-th started is the n-th configuration compiled for the first time.
  std::vector<std::string> first_compiles;
  for (const auto& l : t.log.compiled)
    if (std::find(first_compiles.begin(), first_compiles.end(), l) == first_compiles.end()) first_compiles.push_back(l);
  for (size_t i = 0; i < t.log.started.size(); ++i) EXPECT_EQ(t.log.started[i], first_compiles[i]) << i;
}

TEST(CompileAhead, TheEndOfTheSearchStopsCompilesNobodyWaitsFor) {
  TempDir d;
  Timed t;
  // Two fast configurations, then every compile takes 60 s unless stopped:
  // the two evaluations meet the budget while compiles are running and queued.
  run_timed(t, d, "evals=2", /*out_of_order=*/true, /*slow_from=*/-3, /*slow_s=*/60.0);
  ASSERT_EQ(t.code, 0);
  EXPECT_EQ(t.log.started.size(), 2u);
  EXPECT_LT(t.seconds, 30.0) << "the run waited for compiles nobody reads";
  ASSERT_GE(t.log.stop_calls.size(), 2u);
  EXPECT_TRUE(t.log.stop_calls[0]);
  EXPECT_FALSE(t.log.stop_calls[1]);  // later compiles (the finalists') run again
  // Of the 2 * 2 compiles proposed ahead, those not started were dropped:
  // at most the two threads' running ones and the two evaluated were asked.
  EXPECT_LE(t.log.compiled.size(), 2u + 2u + 2u) << t.log.compiled.size();
}

TEST(CompileAhead, ACandidatesCompilePartsRunSideBySide) {
  TempDir d;
  Timed t;
  run_timed(t, d, "evals=3", /*out_of_order=*/true, /*slow_from=*/0, /*slow_s=*/0, /*parts=*/true);
  ASSERT_EQ(t.code, 0);
  ASSERT_EQ(t.log.started.size(), 3u);
  ASSERT_GE(t.log.joined_ms.size(), 3u);
  // Each candidate's two parts ran at once on the two threads, and were joined once.
  for (double ms : t.log.joined_ms) EXPECT_EQ(ms, 2.0);
}

}  // namespace
