// `kopt optimize` end to end on a CPU-only machine: real spec, real NVRTC
// compiles of the transpose template, and the fake worker standing in for the
// GPU (it answers every candidate "ok" with a fixed pseudo-random latency per
// configuration). Covers the run folder, resume, and resume after kill -9.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

namespace {

namespace fsys = std::filesystem;
using nlohmann::json;

const std::string kSpec = std::string(KOPT_SOURCE_DIR) + "/templates/transpose/transpose.json";

struct Dir {
  fsys::path path;
  Dir() {
    path = fsys::temp_directory_path() / ("kopt-e2e-" + std::to_string(::getpid()) + "-" +
                                          std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fsys::create_directories(path);
  }
  ~Dir() { fsys::remove_all(path); }
};

std::string optimize_cmd(const Dir& d, const std::string& extra) {
  return std::string(KOPT_CLI) + " optimize --spec " + kSpec + " --arch sm_90 --quiet --top 2 --retime-rounds 1" +
         " --results-dir " + (d.path / "results").string() + " --cache-dir " + (d.path / "cache").string() +
         " --worker-command " + KOPT_FAKE_WORKER + " " + extra;
}

int run(const std::string& cmd) {
  const int status = std::system((cmd + " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

json read_json(const fsys::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

/// Checks the history's invariants and returns it.
json checked_history(const fsys::path& run) {
  const json h = read_json(run / "history.json");
  EXPECT_EQ(h["format_version"], 1);
  std::set<std::string> labels;
  int initial = 0;
  for (size_t i = 0; i < h["attempts"].size(); ++i) {
    const json& a = h["attempts"][i];
    EXPECT_EQ(a["index"].get<int>(), static_cast<int>(i) + 1) << "indices must be contiguous";
    if (a["kind"] == "initial") ++initial;
    if (a["kind"] == "candidate") {
      EXPECT_TRUE(labels.insert(a["label"].get<std::string>()).second) << "evaluated twice: " << a["label"];
      char buf[16];
      std::snprintf(buf, sizeof buf, "%04d", a["index"].get<int>());
      EXPECT_TRUE(fsys::exists(run / "candidates" / buf / "result.json")) << buf;
    }
  }
  EXPECT_EQ(initial, 1) << "the initial kernel is evaluated exactly once";
  return h;
}

TEST(OptimizeE2E, WritesACompleteRunFolder) {
  Dir d;
  ASSERT_EQ(run(optimize_cmd(d, "--budget evals=4")), 0);
  const fsys::path r = d.path / "results" / "run-001";
  for (const char* f : {"spec.json", "device.json", "run.json", "history.json", "summary.json", "best.cu",
                        "heatmap.svg", "report.html"})
    EXPECT_TRUE(fsys::exists(r / f)) << f;
  const json h = checked_history(r);
  EXPECT_EQ(h["attempts"].size(), 5u);  // the initial kernel + 4 candidates
  const json s = read_json(r / "summary.json");
  EXPECT_EQ(s["format_version"], 1);
  ASSERT_TRUE(s.contains("final_best"));
  EXPECT_EQ(s["budget_used"]["evaluations"], 4);
  std::ifstream best(r / "best.cu");
  std::stringstream ss;
  ss << best.rdbuf();
  EXPECT_NE(ss.str().find("// kopt:entry "), std::string::npos);
  // The fake worker's latencies make some candidate beat the initial kernel.
  EXPECT_NE(s["final_best"]["label"].get<std::string>().find('='), std::string::npos) << s["final_best"].dump();
  EXPECT_NE(ss.str().find("// kopt:param TILE="), std::string::npos);
}

TEST(OptimizeE2E, ResumeEvaluatesOnlyWhatIsMissing) {
  Dir d;
  ASSERT_EQ(run(optimize_cmd(d, "--budget evals=3")), 0);
  const fsys::path r = d.path / "results" / "run-001";
  ASSERT_EQ(checked_history(r)["attempts"].size(), 4u);
  ASSERT_EQ(run(optimize_cmd(d, "--budget evals=6 --resume " + r.string())), 0);
  EXPECT_EQ(checked_history(r)["attempts"].size(), 7u);  // 3 more candidates, initial not redone
  EXPECT_FALSE(fsys::exists(d.path / "results" / "run-002"));
}

TEST(OptimizeE2E, ResumeRefusesAnotherSpecAndChangesNothing) {
  Dir d;
  ASSERT_EQ(run(optimize_cmd(d, "--budget evals=2")), 0);
  const fsys::path r = d.path / "results" / "run-001";
  const std::string before = read_json(r / "history.json").dump();
  const std::string other = std::string(KOPT_CLI) + " optimize --spec " + KOPT_SOURCE_DIR +
                            "/templates/softmax/softmax.json --arch sm_90 --quiet --budget evals=2 --resume " +
                            r.string() + " --worker-command " + KOPT_FAKE_WORKER;
  EXPECT_EQ(run(other), 2);
  EXPECT_EQ(read_json(r / "history.json").dump(), before);
}

TEST(OptimizeE2E, ZeroBudgetIsAUsageError) {
  Dir d;
  EXPECT_EQ(run(optimize_cmd(d, "--budget evals=0")), 2);
  EXPECT_FALSE(fsys::exists(d.path / "results" / "run-001"));
}

TEST(OptimizeE2E, ResumeAfterKill9) {
  Dir d;
  // A slow "GPU" so the run is surely mid-way when it is killed.
  const std::string cmd = "KOPT_FAKE_EVAL_MS=150 " + optimize_cmd(d, "--budget evals=40");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setpgid(0, 0);
    ::execl("/bin/sh", "sh", "-c", (cmd + " >/dev/null 2>&1").c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  const fsys::path r = d.path / "results" / "run-001";
  // Wait until a few attempts are recorded, then kill everything at once.
  for (int i = 0; i < 600; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::error_code ec;
    if (fsys::exists(r / "history.json", ec)) {
      try {
        if (read_json(r / "history.json")["attempts"].size() >= 4) break;
      } catch (const std::exception&) {
        ADD_FAILURE() << "history.json was torn";
      }
    }
  }
  ::kill(-pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  const size_t recorded = checked_history(r)["attempts"].size();
  ASSERT_GE(recorded, 4u);
  ASSERT_LT(recorded, 41u) << "the run finished before it was killed";
  // Resume to a total of 8 candidate evaluations.
  ASSERT_EQ(run(optimize_cmd(d, "--budget evals=8 --resume " + r.string())), 0);
  const json h = checked_history(r);
  EXPECT_EQ(h["attempts"].size(), std::max<size_t>(recorded, 9u));
  EXPECT_TRUE(fsys::exists(r / "best.cu"));
}

}  // namespace
