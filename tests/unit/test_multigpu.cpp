// Several workers (`kopt optimize --devices`, `--worker-launcher`; eval/evaluator_pool.h):
// the worker command lines, then whole runs on the fake worker started
// through a launcher wrapper (tests/multigpu/fake_launcher.sh) that plays two
// GPUs, a lost link and a GPU that is not there. No GPU needed.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/evaluator_pool.h"
#include "support/files.h"
#include "support/shell.h"
#include "temp_dir.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"

namespace {

namespace fsys = std::filesystem;
using kopt::test::read_json;
using kopt::test::ShellRun;
using kopt::test::TempDir;
using nlohmann::json;

const std::string kSpec = std::string(KOPT_SOURCE_DIR) + "/templates/transpose/transpose.json";
const std::string kLauncher = std::string(KOPT_SOURCE_DIR) + "/tests/multigpu/fake_launcher.sh";

template <class F>
std::string error_id(F&& f) {
  try {
    f();
  } catch (const kopt::Error& e) {
    return e.id();
  }
  return "no error";
}

// --- worker command lines ---------------------------------------------------

TEST(MultiGpuPlan, WithoutALauncherEachDeviceGetsItsWorkerCommandLine) {
  const auto slots = kopt::eval::plan_workers({{0, 1}, {"/opt/kopt", "worker", "--device", "{device}"}, {}});
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots[0].argv, (std::vector<std::string>{"/opt/kopt", "worker", "--device", "0"}));
  EXPECT_EQ(slots[1].argv, (std::vector<std::string>{"/opt/kopt", "worker", "--device", "1"}));
  EXPECT_EQ(slots[1].device, 1);
  EXPECT_EQ(slots[1].name, "device 1");
  EXPECT_NE(std::find(slots[1].env.begin(), slots[1].env.end(), "KOPT_WORKER_DEVICE=1"), slots[1].env.end());
  EXPECT_NE(std::find(slots[1].env.begin(), slots[1].env.end(), "KOPT_WORKER_INDEX=1"), slots[1].env.end());
  EXPECT_NE(std::find(slots[1].env.begin(), slots[1].env.end(), "KOPT_WORKER_COUNT=2"), slots[1].env.end());
}

TEST(MultiGpuPlan, ALauncherGoesFirstWithItsPlaceholdersReplaced) {
  const auto slots =
      kopt::eval::plan_workers(
          {{3, 3}, {"/opt/kopt", "worker", "--device", "{device}"}, {"/usr/bin/env", "HOST=gpu-{index}"}});
  ASSERT_EQ(slots.size(), 2u);  // a device number may repeat with a launcher: one per host
  EXPECT_EQ(slots[1].argv, (std::vector<std::string>{"/usr/bin/env", "HOST=gpu-1", "/opt/kopt", "worker", "--device", "3"}));
  EXPECT_EQ(slots[1].name, "device 3 (worker 1)");
}

TEST(MultiGpuPlan, AShellLauncherGetsTheWorkerCommandLineAsOneQuotedWord) {
  const std::string sh = kopt::util::find_program("sh");
  ASSERT_FALSE(sh.empty());
  const auto slots = kopt::eval::plan_workers({{1}, {"/opt/my kopt", "worker", "--device", "{device}"}, {"sh", "-c"}});
  EXPECT_EQ(slots[0].argv, (std::vector<std::string>{sh, "-c", "'/opt/my kopt' worker --device 1"}));
  // {worker} puts that word anywhere.
  const auto placed =
      kopt::eval::plan_workers({{0}, {"/opt/kopt", "worker"}, {"/usr/bin/timeout", "100", "{worker}", "--x"}});
  EXPECT_EQ(placed[0].argv, (std::vector<std::string>{"/usr/bin/timeout", "100", "/opt/kopt worker", "--x"}));
  EXPECT_EQ(kopt::eval::shell_quote_command({"it's"}), "'it'\\''s'");
}

TEST(MultiGpuPlan, RefusesADeviceTwiceAndALauncherNotOnPath) {
  EXPECT_EQ(error_id([] { kopt::eval::plan_workers({{0, 0}, {"/opt/kopt"}, {}}); }), "kopt.pool.003");
  EXPECT_EQ(error_id([] { kopt::eval::plan_workers({{0}, {"/opt/kopt"}, {"kopt-no-such-launcher"}}); }),
            "kopt.pool.002");
  EXPECT_EQ(error_id([] { kopt::eval::plan_workers({{}, {"/opt/kopt"}, {}}); }), "kopt.pool.001");
}

TEST(MultiGpuPlan, SplitsALauncherLikeAShell) {
  EXPECT_EQ(kopt::eval::split_launcher("srun --gpus=1  -N1"), (std::vector<std::string>{"srun", "--gpus=1", "-N1"}));
  EXPECT_EQ(kopt::eval::split_launcher("ssh -o 'ProxyJump a b' \"x\\\"y\" c\\ d"),
            (std::vector<std::string>{"ssh", "-o", "ProxyJump a b", "x\"y", "c d"}));
  EXPECT_EQ(error_id([] { kopt::eval::split_launcher("ssh 'host"); }), "kopt.pool.002");
  EXPECT_EQ(error_id([] { kopt::eval::split_launcher("   "); }), "kopt.pool.002");
}

// --- whole runs -------------------------------------------------------------

class MultiGpuRun : public ::testing::Test {
 protected:
  TempDir dir_;
  fsys::path launcher_dir() const { return dir_.path() / "launcher"; }

  void SetUp() override { fsys::create_directories(launcher_dir()); }
  // One NVRTC cache for every test of the suite, in the build tree (CTest
  // runs each test in a process of its own): the transpose template's
  // candidates are compiled once, not once per test.
  static fsys::path cache_dir() { return fsys::path(KOPT_CLI).parent_path().parent_path() / "tests" / "multigpu-nvrtc-cache"; }

  /// `kopt optimize` on the transpose template with the fake worker; `env`
  /// is put before it ("A=1 B=2"), `extra` after.
  ShellRun optimize(const std::string& env, const std::string& extra, const std::string& results = "results") {
    return kopt::test::run_shell("env FAKE_LAUNCHER_DIR=" + launcher_dir().string() + " " + env + " " + KOPT_CLI +
                                 " optimize --arch sm_90 --top 2 --retime-rounds 2 --seed 7 --results-dir " +
                                 (dir_.path() / results).string() + " --cache-dir " + cache_dir().string() + " " +
                                 extra);
  }
  static std::string fake(const std::string& args = "") {
    return std::string(" --worker-command \"") + KOPT_FAKE_WORKER + " worker" + args + "\"";
  }
  static std::string through_launcher() { return " --worker-launcher \"sh " + kLauncher + "\""; }

  fsys::path only_run(const std::string& results = "results") const {
    std::vector<fsys::path> runs;
    for (const auto& e : fsys::directory_iterator(dir_.path() / results)) runs.push_back(e.path());
    EXPECT_EQ(runs.size(), 1u);
    return runs.empty() ? fsys::path() : runs[0];
  }
  static std::vector<json> candidates(const fsys::path& run) {
    std::vector<json> out;
    const json history = read_json(run / "history.json");
    for (const auto& a : history["attempts"]) {
      if (a["kind"] == "candidate") out.push_back(a);
    }
    return out;
  }
  /// The evaluations a device's fake worker logged: (begin, end) ns.
  std::vector<std::pair<long long, long long>> eval_log(int device) const {
    std::vector<std::pair<long long, long long>> v;
    std::ifstream in(launcher_dir() / ("eval-" + std::to_string(device) + ".log"));
    for (long long b, e; in >> b >> e;) v.push_back({b, e});
    return v;
  }
  std::vector<std::string> launches() const {
    std::vector<std::string> v;
    std::ifstream in(launcher_dir() / "launches.log");
    for (std::string line; std::getline(in, line);) v.push_back(line);
    return v;
  }
};

TEST_F(MultiGpuRun, SpreadsCandidatesOverTwoDevicesAndRetimesOnOne) {
  // 300 ms an evaluation: longer than a candidate's compile on a busy 2-core
  // machine with a cold compile cache, so both workers have work at once
  // (with 40 ms the run was compile-bound there and the check below flaked).
  const ShellRun r = optimize("KOPT_FAKE_EVAL_MS=300", "--spec " + kSpec + " --budget evals=12 --devices 0,1" + fake() +
                                                     through_launcher());
  ASSERT_EQ(r.code, 0) << r.err;
  const fsys::path run = only_run();
  const auto cands = candidates(run);
  ASSERT_EQ(cands.size(), 12u);
  std::map<int, int> per_device;
  for (const auto& a : cands) {
    EXPECT_EQ(a["verdict"], "ok") << a.dump();
    ASSERT_TRUE(a.contains("device")) << a.dump();
    ++per_device[a["device"].get<int>()];
  }
  EXPECT_GT(per_device[0], 0);
  EXPECT_GT(per_device[1], 0);
  EXPECT_EQ(per_device[0] + per_device[1], 12);
  // Both workers were started through the launcher, each told its device.
  const auto l = launches();
  ASSERT_EQ(l.size(), 2u);
  std::set<std::string> starts(l.begin(), l.end());
  EXPECT_EQ(starts.count("0 0 2 " + std::string(KOPT_FAKE_WORKER) + " worker"), 1u) << l[0] << " / " << l[1];
  EXPECT_EQ(starts.count("1 1 2 " + std::string(KOPT_FAKE_WORKER) + " worker"), 1u);
  // The two devices measured at the same time; each one, one candidate at a time.
  const auto log0 = eval_log(0), log1 = eval_log(1);
  bool overlap = false;
  for (const auto& a : log0)
    for (const auto& b : log1) overlap = overlap || (a.first < b.second && b.first < a.second);
  EXPECT_TRUE(overlap) << "the devices never measured at once";
  for (const auto* log : {&log0, &log1})
    for (size_t i = 1; i < log->size(); ++i) EXPECT_GE((*log)[i].first, (*log)[i - 1].second);
  // Device 1 did the candidates recorded for it and nothing else: the initial
  // kernel and every round of the final re-timing ran on device 0.
  EXPECT_EQ(log1.size(), static_cast<size_t>(per_device[1]));
  const json summary = read_json(run / "summary.json");
  ASSERT_TRUE(summary["retime"].is_array());
  ASSERT_GE(summary["retime"].size(), 2u);
  for (const auto& e : summary["retime"]) {
    EXPECT_EQ(e["device"], 0) << e.dump();
    EXPECT_EQ(e["geomeans_ms"].size(), 2u);
  }
  EXPECT_EQ(log0.size(), static_cast<size_t>(per_device[0]) + 1 + 2 * summary["retime"].size());
  const json history = read_json(run / "history.json");
  for (const auto& a : history["attempts"])
    if (a["kind"] == "initial") EXPECT_EQ(a["device"], 0);
  // summary.json: each worker's share.
  const json& devs = summary["tuner"]["devices"];
  ASSERT_EQ(devs.size(), 2u);
  EXPECT_EQ(devs[0]["device"], 0);
  EXPECT_EQ(devs[1]["device"], 1);
  EXPECT_EQ(devs[0]["evaluated"].get<int>() + devs[1]["evaluated"].get<int>(), 12);
  EXPECT_FALSE(devs[1].contains("dropped"));
}

TEST_F(MultiGpuRun, ALostWorkerIsDroppedItsCandidateRequeuedAndTheRunGoesOn) {
  // Device 1's worker exits on its 3rd candidate, and its host cannot be reached again.
  const ShellRun r = optimize("KOPT_FAKE_EVAL_MS=20 FAKE_LAUNCHER_LOSE=1 FAKE_LAUNCHER_LOSE_AFTER=2",
                         "--spec " + kSpec + " --budget evals=10 --devices 0,1" + fake() + through_launcher());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("device 1 (worker 1) dropped: [kopt.worker."), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the run goes on with device 0 (worker 0)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("goes back to the queue"), std::string::npos) << r.err;
  const fsys::path run = only_run();
  const auto cands = candidates(run);
  ASSERT_EQ(cands.size(), 10u);  // nothing lost, nothing recorded twice
  std::set<std::string> labels;
  int on1 = 0;
  for (const auto& a : cands) {
    EXPECT_EQ(a["verdict"], "ok") << a.dump();  // the lost candidate ran again on device 0
    labels.insert(a["label"].get<std::string>());
    on1 += a["device"] == 1;
  }
  EXPECT_EQ(labels.size(), 10u);
  EXPECT_EQ(on1, 2);
  EXPECT_EQ(launches().size(), 3u);  // device 1: the first start, and the one that failed
  const json devs = read_json(run / "summary.json")["tuner"]["devices"];
  ASSERT_EQ(devs.size(), 2u);
  EXPECT_TRUE(devs[1].contains("dropped"));
  EXPECT_EQ(devs[1]["evaluated"], 2);
}

TEST_F(MultiGpuRun, LosingEveryDeviceEndsTheRunAndResumeFinishesIt) {
  const ShellRun lost = optimize("KOPT_FAKE_EVAL_MS=20 FAKE_LAUNCHER_LOSE='0 1' FAKE_LAUNCHER_LOSE_AFTER=2",
                            "--spec " + kSpec + " --budget evals=10 --devices 0,1" + fake() + through_launcher());
  EXPECT_EQ(lost.code, 3) << lost.err;
  EXPECT_NE(lost.err.find("[kopt.pool.005] every device was dropped"), std::string::npos) << lost.err;
  EXPECT_NE(lost.err.find("kopt optimize --resume "), std::string::npos) << lost.err;
  const fsys::path run = only_run();
  const auto before = candidates(run);
  // Device 0 evaluated the initial kernel and one candidate, device 1 two; the
  // candidates in flight when the devices went are not recorded.
  EXPECT_EQ(before.size(), 3u);
  for (const auto& a : before) EXPECT_EQ(a["verdict"], "ok") << a.dump();
  const ShellRun resumed = optimize("KOPT_FAKE_EVAL_MS=20", "--resume " + run.string() + " --devices 0,1" + fake() +
                                                           " --worker-launcher \"sh -c\"");
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  const auto after = candidates(run);
  ASSERT_EQ(after.size(), 10u);
  std::set<std::string> labels;
  for (const auto& a : after) labels.insert(a["label"].get<std::string>());
  EXPECT_EQ(labels.size(), 10u);
}

TEST_F(MultiGpuRun, AWorkerThatDiesOnAHealthyDeviceIsRestartedAndItsCandidateRunOnceMore) {
  const ShellRun r = optimize("KOPT_FAKE_EVAL_MS=20 FAKE_LAUNCHER_CRASH=1 FAKE_LAUNCHER_LOSE_AFTER=1",
                         "--spec " + kSpec + " --budget evals=8 --devices 0,1" + fake() + through_launcher());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("running it once more"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("dropped"), std::string::npos) << r.err;
  const auto cands = candidates(only_run());
  ASSERT_EQ(cands.size(), 8u);
  for (const auto& a : cands) EXPECT_EQ(a["verdict"], "ok") << a.dump();
  EXPECT_EQ(launches().size(), 3u);  // device 1's worker was started again
}

TEST_F(MultiGpuRun, ADeviceWithoutAGpuIsDroppedAtTheStart) {
  const ShellRun r = optimize("FAKE_LAUNCHER_NODEV=1",
                         "--spec " + kSpec + " --budget evals=4 --devices 0,1" + fake() + through_launcher());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("device 1 (worker 1) dropped: [kopt.worker.077]"), std::string::npos) << r.err;
  for (const auto& a : candidates(only_run())) EXPECT_EQ(a["device"], 0);
  // Every device without a GPU: as a plain run without one (--arch: compile only, exit 77).
  const ShellRun none = optimize("FAKE_LAUNCHER_NODEV=0", "--spec " + kSpec + " --budget evals=4 --devices 0" + fake() +
                                                         through_launcher(), "results2");
  EXPECT_EQ(none.code, 77) << none.err;
}

// Without a launcher the devices are this machine's: those past the count
// the first worker reports get no thread and no worker, with one note.
TEST_F(MultiGpuRun, DevicesPastThoseTheMachineHasAreLeftOutBeforeTheirWorkersStart) {
  const ShellRun r = optimize("KOPT_FAKE_DEVICE_COUNT=2", "--spec " + kSpec + " --budget evals=4 --devices 0,1,2,3,7" +
                                                         fake(" --device {device}"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("--devices: this machine has 2 CUDA devices (0 to 1); left out: device 2, 3, 7"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("device 2 dropped"), std::string::npos) << "one note, not a line per device: " << r.err;
  const fsys::path run = only_run();
  const json devs = read_json(run / "summary.json")["tuner"]["devices"];
  ASSERT_EQ(devs.size(), 5u) << devs.dump();
  for (size_t i = 2; i < 5; ++i)
    EXPECT_NE(devs[i].value("dropped", "").find("no such device"), std::string::npos) << devs[i].dump();
  for (const auto& a : candidates(run)) EXPECT_LT(a["device"].get<int>(), 2) << a.dump();
}

TEST_F(MultiGpuRun, ResumeOfAMultiDeviceRunEvaluatesOnlyWhatIsMissing) {
  const ShellRun first = optimize("KOPT_FAKE_EVAL_MS=10", "--spec " + kSpec + " --budget evals=6 --devices 0,1" + fake() +
                                                         through_launcher());
  ASSERT_EQ(first.code, 0) << first.err;
  const fsys::path run = only_run();
  const ShellRun second = optimize("KOPT_FAKE_EVAL_MS=10", "--resume " + run.string() + " --budget evals=11 --devices 0,1" +
                                                          fake() + through_launcher());
  ASSERT_EQ(second.code, 0) << second.err;
  const auto cands = candidates(run);
  ASSERT_EQ(cands.size(), 11u);
  std::set<std::string> labels;
  for (const auto& a : cands) labels.insert(a["label"].get<std::string>());
  EXPECT_EQ(labels.size(), 11u);
  EXPECT_EQ(read_json(run / "summary.json")["budget_used"]["evaluations"], 5);
}

TEST_F(MultiGpuRun, OneDeviceOrAShellLauncherGivesThePlainRunsResult) {
  const std::string common = "--spec " + kSpec + " --budget evals=8";
  const ShellRun plain = optimize("", common + fake(), "plain");
  const ShellRun one = optimize("", common + " --devices 0" + fake(" --device {device}"), "one");
  const ShellRun shell = optimize("", common + " --devices 0 --worker-launcher \"sh -c\"" + fake(), "shell");
  ASSERT_EQ(plain.code, 0) << plain.err;
  ASSERT_EQ(one.code, 0) << one.err;
  ASSERT_EQ(shell.code, 0) << shell.err;
  auto best = [&](const std::string& results) {
    const json s = read_json(only_run(results) / "summary.json");
    return s["best"]["label"].dump() + " " + s["best"]["geomean_ms"].dump();
  };
  EXPECT_EQ(best("one"), best("plain"));
  EXPECT_EQ(best("shell"), best("plain"));
  for (const std::string results : {"plain", "one", "shell"})
    for (const auto& a : candidates(only_run(results))) EXPECT_EQ(a["device"], 0) << results;
}

TEST_F(MultiGpuRun, BadDeviceListsAndLaunchersAreUsageErrors) {
  const std::string common = "--spec " + kSpec + fake();
  const ShellRun bad = optimize("", common + " --devices 0,x");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("[kopt.pool.001] --devices: 'x' is not a device number"), std::string::npos) << bad.err;
  const ShellRun both = optimize("", common + " --device 1 --devices 0,1");
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.err.find("[kopt.pool.004]"), std::string::npos) << both.err;
  const ShellRun twice = optimize("", common + " --devices 0,0");
  EXPECT_EQ(twice.code, 2);
  EXPECT_NE(twice.err.find("[kopt.pool.003]"), std::string::npos) << twice.err;
  const ShellRun missing = optimize("", common + " --worker-launcher kopt-no-such-launcher");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("[kopt.pool.002] --worker-launcher: 'kopt-no-such-launcher' is not a program on PATH"),
            std::string::npos)
      << missing.err;
  EXPECT_FALSE(fsys::exists(dir_.path() / "results"));  // refused before any work
}

}  // namespace
