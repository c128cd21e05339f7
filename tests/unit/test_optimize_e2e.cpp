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
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <vector>
#include <thread>

#include <nlohmann/json.hpp>

#include "support/files.h"
#include "support/shell.h"
#include "temp_dir.h"
#include "model/dispatch.h"
#include "util/fs.h"

namespace {

namespace fsys = std::filesystem;
using kopt::test::read_json;
using kopt::test::run_shell;
using kopt::test::ShellRun;
using kopt::test::TempDir;
using nlohmann::json;

const std::string kSpec = std::string(KOPT_SOURCE_DIR) + "/templates/transpose/transpose.json";

std::string optimize_cmd(const TempDir& d, const std::string& extra) {
  return std::string(KOPT_CLI) + " optimize --spec " + kSpec + " --arch sm_90 --quiet --top 2 --retime-rounds 1" +
         " --results-dir " + (d.path() / "results").string() + " --cache-dir " + (d.path() / "cache").string() +
         " --worker-command " + KOPT_FAKE_WORKER + " " + extra;
}

int run(const std::string& cmd) {
  const int status = std::system((cmd + " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// The options every run of a test shares, without --spec (for --resume RUN alone).
std::string common_args(const TempDir& d) {
  return std::string(" --arch sm_90 --quiet --top 2 --retime-rounds 1 --results-dir ") +
         (d.path() / "results").string() + " --cache-dir " + (d.path() / "cache").string() + " --worker-command " +
         KOPT_FAKE_WORKER;
}

std::string resume_cmd(const TempDir& d, const fsys::path& run, const std::string& extra) {
  return std::string(KOPT_CLI) + " optimize --resume " + run.string() + common_args(d) + " " + extra;
}

/// `cmd` started in the background with `env` added, exec'd by /bin/sh (the
/// pid is kopt's own), stdout and stderr to files.
pid_t start_background(const std::string& cmd, const std::vector<std::pair<std::string, std::string>>& env,
                       const fsys::path& out, const fsys::path& err) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    const std::string line = "exec " + cmd + " >" + out.string() + " 2>" + err.string();
    ::execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

int wait_code(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// Kills (SIGKILL) and reaps a background process that a failed assertion
/// left running; nothing once it was waited for.
class Reaper {
 public:
  explicit Reaper(pid_t pid) : pid_(pid) {}
  ~Reaper() {
    if (pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;

 private:
  pid_t pid_;
};

/// Polls `done` every 50 ms for up to `seconds`.
bool wait_until(const std::function<bool()>& done, double seconds = 60) {
  for (int i = 0; i < seconds * 20; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

size_t attempts_recorded(const fsys::path& run) {
  std::error_code ec;
  if (!fsys::exists(run / "history.json", ec)) return 0;
  try {
    return read_json(run / "history.json")["attempts"].size();
  } catch (const std::exception&) {
    return 0;
  }
}

/// The pids of `parent`'s children (from /proc).
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> kids;
  for (const auto& e : fsys::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state;
    long ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent) kids.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return kids;
}

bool process_alive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  const auto close = stat.rfind(')');
  return close != std::string::npos && stat.size() > close + 2 && stat[close + 2] != 'Z';
}

/// The file's content, empty while it does not exist.
std::string text_of(const fsys::path& file) {
  std::error_code ec;
  return fsys::exists(file, ec) ? kopt::fs::read_file(file) : std::string();
}

/// Every file under `dir` with its content.
std::map<std::string, std::string> files_under(const fsys::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fsys::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files[fsys::relative(e.path(), dir).string()] = kopt::fs::read_file(e.path());
  return files;
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
  TempDir d;
  ASSERT_EQ(run(optimize_cmd(d, "--budget evals=4")), 0);
  const fsys::path r = d.path() / "results" / "run-001";
  for (const char* f : {"spec.json", "device.json", "run.json", "history.json", "summary.json", "best.cu",
                        "heatmap.svg", "report.html"})
    EXPECT_TRUE(fsys::exists(r / f)) << f;
  const json h = checked_history(r);
  EXPECT_EQ(h["attempts"].size(), 5u);  // the initial kernel + 4 candidates
  const json s = read_json(r / "summary.json");
  EXPECT_EQ(s["format_version"], 1);
  ASSERT_TRUE(s.contains("final_best"));
  EXPECT_EQ(s["budget_used"]["evaluations"], 4);
  // The GPU idle time of the pipelined search loop is visible.
  const json& t = s["tuner"];
  for (const char* k : {"host_gap_ms", "worker_other_ms"}) {
    ASSERT_TRUE(t.contains(k) && t[k].is_number()) << k << ": " << t.dump();
    EXPECT_GE(t[k].get<double>(), 0.0) << k;
  }
  const std::string best = kopt::fs::read_file(r / "best.cu");
  EXPECT_NE(best.find("// kopt:entry "), std::string::npos);
  // The fake worker's latencies make some candidate beat the initial kernel.
  EXPECT_NE(s["final_best"]["label"].get<std::string>().find('='), std::string::npos) << s["final_best"].dump();
  EXPECT_NE(best.find("// kopt:param TILE="), std::string::npos);
}

TEST(OptimizeE2E, ResumeEvaluatesOnlyWhatIsMissing) {
  TempDir d;
  ASSERT_EQ(run(optimize_cmd(d, "--budget evals=3")), 0);
  const fsys::path r = d.path() / "results" / "run-001";
  ASSERT_EQ(checked_history(r)["attempts"].size(), 4u);
  ASSERT_EQ(run(optimize_cmd(d, "--budget evals=6 --resume " + r.string())), 0);
  EXPECT_EQ(checked_history(r)["attempts"].size(), 7u);  // 3 more candidates, initial not redone
  EXPECT_FALSE(fsys::exists(d.path() / "results" / "run-002"));
}

TEST(OptimizeE2E, ResumeRefusesAnotherSpecAndChangesNothing) {
  TempDir d;
  ASSERT_EQ(run(optimize_cmd(d, "--budget evals=2")), 0);
  const fsys::path r = d.path() / "results" / "run-001";
  const std::string before = read_json(r / "history.json").dump();
  const std::string other = std::string(KOPT_CLI) + " optimize --spec " + KOPT_SOURCE_DIR +
                            "/templates/softmax/softmax.json --arch sm_90 --quiet --budget evals=2 --resume " +
                            r.string() + " --worker-command " + KOPT_FAKE_WORKER;
  EXPECT_EQ(run(other), 2);
  EXPECT_EQ(read_json(r / "history.json").dump(), before);
}

TEST(OptimizeE2E, ZeroBudgetIsAUsageError) {
  TempDir d;
  EXPECT_EQ(run(optimize_cmd(d, "--budget evals=0")), 2);
  EXPECT_FALSE(fsys::exists(d.path() / "results" / "run-001"));
}

TEST(OptimizeE2E, ResumeAfterKill9) {
  TempDir d;
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
  const fsys::path r = d.path() / "results" / "run-001";
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

TEST(OptimizeE2E, CompilationOverlapsEvaluation) {
  TempDir d;
  // Each evaluation keeps the fake GPU busy 3 s, several times one NVRTC
  // compile of the transpose template: with the compile pool working ahead,
  // every compile but the first is finished before the GPU loop needs it.
  ASSERT_EQ(run("KOPT_FAKE_EVAL_MS=3000 " + optimize_cmd(d, "--budget evals=4")), 0);
  const json t = read_json(d.path() / "results" / "run-001" / "summary.json")["tuner"];
  EXPECT_GE(t["compiles_ready_when_needed"].get<int>(), 3) << t.dump();
  EXPECT_GE(t["compile_wait_ms"].get<double>(), 0.0);
}

TEST(OptimizeE2E, ShapeSpecialisationWritesVariants) {
  TempDir d;
  // The fake worker's latencies differ per (configuration, case), so
  // different configurations win different performance cases.
  ASSERT_EQ(run(optimize_cmd(d, "--budget evals=12")), 0);
  const fsys::path r = d.path() / "results" / "run-001";
  const json s = read_json(r / "summary.json");
  ASSERT_TRUE(s.contains("specialization")) << s.dump(1);
  const json& sp = s["specialization"];
  ASSERT_GE(sp["variants"].size(), 2u) << sp.dump(1);
  EXPECT_EQ(sp["variants"][0]["label"], s["final_best"]["label"]) << "variant 0 is the single best";
  for (const auto& v : sp["variants"]) EXPECT_TRUE(fsys::exists(r / v["file"].get<std::string>())) << v.dump();
  EXPECT_EQ(sp["cases"].size(), 4u);  // the transpose spec's performance cases
  // The measured dispatch: a tree over the sizes, grown on every variant's
  // latency on every case; what each case runs is what the tree says, never
  // slower than variant 0 by more than the threshold.
  const auto tree = kopt::model::DispatchTree::from_json(sp["dispatch"], "summary.json",
                                                         static_cast<int>(sp["variants"].size()));
  const double threshold = sp["threshold"].get<double>();
  for (const auto& [name, c] : sp["cases"].items()) {
    EXPECT_LE(c["median_ms"].get<double>(), c["single_median_ms"].get<double>() * (1 + threshold)) << name;
    EXPECT_LT(c["variant"].get<size_t>(), sp["variants"].size()) << name;
    ASSERT_EQ(sp["latency_ms"][name].size(), sp["variants"].size()) << name;
    std::vector<int64_t> sizes;
    for (const auto& k : tree.sizes) sizes.push_back(c["sizes"][k].get<int64_t>());
    EXPECT_EQ(c["variant"].get<int>(), tree.select(sizes)) << name;
    EXPECT_DOUBLE_EQ(c["median_ms"].get<double>(), sp["latency_ms"][name][c["variant"].get<size_t>()].get<double>());
  }
  EXPECT_LT(sp["geomean_ms"].get<double>(), sp["single_geomean_ms"].get<double>());

  // --no-specialize: one configuration, no variants.
  TempDir d2;
  ASSERT_EQ(run(optimize_cmd(d2, "--budget evals=12 --no-specialize")), 0);
  const fsys::path r2 = d2.path() / "results" / "run-001";
  EXPECT_FALSE(read_json(r2 / "summary.json").contains("specialization"));
  EXPECT_FALSE(fsys::exists(r2 / "variants"));
}

// The variants of a run, through the tuning cache into `kopt generate`, and
// the generated .cu and launch header compiled and linked by nvcc the way a
// user's build does.
TEST(OptimizeE2E, GeneratedVariantsCompileWithNvcc) {
  TempDir d;
  ASSERT_EQ(run(optimize_cmd(d, "--budget evals=12")), 0);
  const fsys::path r = d.path() / "results" / "run-001";
  const json s = read_json(r / "summary.json");
  ASSERT_TRUE(s.contains("specialization"));
  const json& sp = s["specialization"];
  json variants = json::array();
  for (const auto& v : sp["variants"]) {
    json shapes = json::array();
    for (const auto& [name, c] : sp["cases"].items())
      if (c["variant"] == v["variant"]) shapes.push_back(c["sizes"]);
    variants.push_back({{"label", v["label"]}, {"kernel_source", kopt::fs::read_file(r / v["file"].get<std::string>())},
                        {"shapes", shapes}});
  }
  const json cache = {{"format_version", 1},
                      {"entries",
                       {{{"workload", "transpose"},
                         {"spec_hash", read_json(r / "run.json")["spec_hash"]},
                         {"gpu", {{"name", "fake device (kopt_fake_worker)"}, {"compute_capability", "9.0"}}},
                         {"kernel_source", variants[0]["kernel_source"]},
                         {"specialization", sp},
                         {"variants", variants}}}}};
  {
    std::ofstream out(d.path() / "cache.json");
    out << cache.dump(2);
  }
  const fsys::path gen = d.path() / "gen";
  ASSERT_EQ(run(std::string(KOPT_CLI) + " generate --spec " + kSpec + " --name tr --out-dir " + gen.string() +
                " --cache-file " + (d.path() / "cache.json").string() + " --no-tune"),
            0);
  const std::string header = kopt::fs::read_file(gen / "tr_launch.h");
  EXPECT_NE(header.find("constexpr int kVariants = " + std::to_string(variants.size()) + ";"), std::string::npos);
  // The measured dispatch, written out as the tree's own ifs.
  const auto tree = kopt::model::DispatchTree::from_json(sp["dispatch"], "summary.json",
                                                         static_cast<int>(sp["variants"].size()));
  EXPECT_NE(header.find(tree.to_cpp(2)), std::string::npos) << header;
  EXPECT_EQ(header.find("kopt_tuned"), std::string::npos) << "no nearest-shape table with a measured dispatch";
  const std::string cu = kopt::fs::read_file(gen / "tr.cu");
  EXPECT_NE(cu.find("// kopt:entry "), std::string::npos);

  // kopt evaluate on the generated file checks every variant (compile-only here).
  const fsys::path ev = d.path() / "evaluate.json";
  run(std::string(KOPT_CLI) + " evaluate --spec " + kSpec + " --kernel " + (gen / "tr.cu").string() +
      " --arch sm_90 --json " + ev.string());
  const json results = read_json(ev);
  ASSERT_EQ(results.size(), variants.size()) << results.dump(1);
  for (const auto& r : results) EXPECT_NE(r["verdict"], "compile_error") << r.dump(1);

  const char* nvcc = "/usr/local/cuda/bin/nvcc";
  if (!fsys::exists(nvcc)) GTEST_SKIP() << "nvcc not found at " << nvcc;
  {
    std::ofstream m(gen / "main.cu");
    m << "#include <cstdio>\n#include \"tr_launch.h\"\n"
         "int main() {\n"
         "  int variants_seen = 0;\n"
         "  for (long long rows : {8192LL, 16384LL, 1024LL, 4096LL, 3LL})\n"
         "    for (long long cols : {8192LL, 1024LL, 16384LL, 4096LL, 5LL}) {\n"
         "      kopt_tr::LaunchConfig c = kopt_tr::launch_config(rows, cols);\n"
         "      if (c.variant < 0 || c.variant >= kopt_tr::kVariants) return 1;\n"
         "      if (kopt_tr::kernel_for(c) != kopt_tr::kernels[c.variant]) return 2;\n"
         "    }\n";
    // Each tuned shape runs the variant summary.json recorded for it.
    for (const auto& [name, c] : sp["cases"].items())
      m << "  if (kopt_tr::launch_config(" << c["sizes"]["ROWS"] << ", " << c["sizes"]["COLS"]
        << ").variant != " << c["variant"] << ") return 3;\n"
        << "  variants_seen |= 1 << " << c["variant"] << ";\n";
    m << "  std::printf(\"%d\\n\", variants_seen);\n"
         "  return variants_seen == (1 << kopt_tr::kVariants) - 1 ? 0 : 4;\n"
         "}\n";
  }
  const std::string build = std::string(nvcc) + " -std=c++17 -arch=sm_90 -o " + (gen / "app").string() + " " +
                            (gen / "main.cu").string() + " " + (gen / "tr.cu").string();
  ASSERT_EQ(run(build), 0) << build;
  // Every tuned shape gets its recorded variant, and every variant is used by one.
  EXPECT_EQ(run((gen / "app").string()), 0);
}

// ---------------------------------------------------------------------------
// Hostile timing: two processes on one run folder or one GPU, signals.

// Issue 12's corruption: a second `--resume` of a run in use removed
// candidates/0013 (recorded) as "stale" and rewrote it. Now it exits 2, says
// who holds the folder, and touches nothing.
TEST(OptimizeE2E, SecondResumeOfARunInUseExitsTwoAndTouchesNothing) {
  TempDir d;
  ASSERT_EQ(run(optimize_cmd(d, "--budget evals=13")), 0);
  const fsys::path r = d.path() / "results" / "run-001";
  ASSERT_EQ(checked_history(r)["attempts"].size(), 14u);  // candidates/0013 is recorded
  const auto recorded = files_under(r / "candidates");

  // The first process: a slow resume that holds the folder.
  const pid_t first = start_background(resume_cmd(d, r, "--budget evals=40"), {{"KOPT_FAKE_EVAL_MS", "300"}},
                                       d.path() / "first.out", d.path() / "first.err");
  Reaper reap_first(first);
  ASSERT_GT(first, 0);
  ASSERT_TRUE(wait_until([&] {
    std::error_code ec;
    return fsys::exists(r / "run.lock.json", ec) &&
           text_of(r / "run.lock.json").find("\"pid\": " + std::to_string(first)) != std::string::npos;
  })) << "the first process never took the lock";

  // The second (not quiet): refused at once, on its first stderr line.
  std::string loud = resume_cmd(d, r, "--budget evals=40");
  loud.erase(loud.find(" --quiet"), 8);
  const ShellRun second = run_shell(loud);
  EXPECT_EQ(second.code, 2) << second.err;
  const std::string line = second.err.substr(0, second.err.find('\n'));
  EXPECT_NE(line.find("[kopt.run.908] " + r.string() + " is in use: pid " + std::to_string(first) + " on host "),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("kopt optimize --resume " + r.string()), std::string::npos) << "the holder's command: " << line;

  ::kill(first, SIGKILL);
  wait_code(first);
  // What was recorded before either started is byte-for-byte intact.
  const auto after = files_under(r / "candidates");
  for (const auto& [file, content] : recorded) {
    auto it = after.find(file);
    ASSERT_NE(it, after.end()) << file << " was removed";
    EXPECT_EQ(it->second, content) << file << " was rewritten";
  }
  // kill -9 leaves no stuck lock: the next resume takes it over and finishes.
  const ShellRun third = run_shell(resume_cmd(d, r, "--budget evals=14"));
  EXPECT_EQ(third.code, 0) << third.err;
  checked_history(r);
  EXPECT_FALSE(fsys::exists(r / "run.lock")) << "a run that ends removes its lock";
}

TEST(OptimizeE2E, SigtermMidRunWritesTheSummaryAndSaysHowToResume) {
  TempDir d;
  const fsys::path r = d.path() / "results" / "run-001";
  const pid_t pid = start_background(optimize_cmd(d, "--budget evals=40"), {{"KOPT_FAKE_EVAL_MS", "150"}},
                                     d.path() / "kopt.out", d.path() / "kopt.err");
  Reaper reap_pid(pid);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(wait_until([&] { return attempts_recorded(r) >= 4; })) << text_of(d.path() / "kopt.err");
  std::vector<pid_t> workers = children_of(pid);
  ASSERT_FALSE(workers.empty()) << "no worker found";
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  EXPECT_EQ(wait_code(pid), 143);
  const std::string err = kopt::fs::read_file(d.path() / "kopt.err");

  const json h = checked_history(r);
  ASSERT_LT(h["attempts"].size(), 41u) << "the run finished before it was stopped";
  ASSERT_TRUE(fsys::exists(r / "summary.json")) << err;
  const json sm = read_json(r / "summary.json");
  EXPECT_EQ(sm["attempts"], h["attempts"].size()) << "the summary covers every recorded attempt";
  EXPECT_EQ(sm["interrupted"]["signal"], "SIGTERM");
  EXPECT_EQ(sm["interrupted"]["resume"], "kopt optimize --resume " + r.string());
  EXPECT_TRUE(fsys::exists(r / "report.html"));
  EXPECT_TRUE(fsys::exists(r / "best.cu"));
  EXPECT_NE(err.find("kopt: to continue the run: kopt optimize --resume " + r.string()), std::string::npos) << err;
  EXPECT_EQ(read_json(d.path() / "kopt.out")["interrupted"]["signal"], "SIGTERM") << "the summary on stdout";
  for (pid_t w : workers) EXPECT_FALSE(process_alive(w)) << "worker " << w << " outlived kopt";
  EXPECT_FALSE(fsys::exists(r / "run.lock"));

  // Resuming finishes the run without redoing anything.
  const size_t recorded = h["attempts"].size();
  const ShellRun resumed = run_shell(resume_cmd(d, r, "--budget evals=8"));
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_EQ(checked_history(r)["attempts"].size(), std::max<size_t>(recorded, 9u));
  EXPECT_FALSE(read_json(r / "summary.json").contains("interrupted"));
}

TEST(OptimizeE2E, SecondSigintExitsAtOnceAndLosesNothingRecorded) {
  TempDir d;
  const fsys::path r = d.path() / "results" / "run-001";
  // Each evaluation takes 3 s: after the first SIGINT the candidate in flight
  // is still running when the second arrives.
  const pid_t pid = start_background(optimize_cmd(d, "--budget evals=40"), {{"KOPT_FAKE_EVAL_MS", "3000"}},
                                     d.path() / "kopt.out", d.path() / "kopt.err");
  Reaper reap_pid(pid);
  ASSERT_TRUE(wait_until([&] { return attempts_recorded(r) >= 1; })) << text_of(d.path() / "kopt.err");
  const std::string before = kopt::fs::read_file(r / "history.json");
  const std::vector<pid_t> workers = children_of(pid);
  const auto t0 = std::chrono::steady_clock::now();
  ::kill(pid, SIGINT);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::kill(pid, SIGINT);
  EXPECT_EQ(wait_code(pid), 130);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(2500)) << "did not exit at once";
  const std::string err = kopt::fs::read_file(d.path() / "kopt.err");
  EXPECT_NE(err.find("SIGINT received"), std::string::npos) << err;
  EXPECT_NE(err.find("SIGINT again: stopping at once"), std::string::npos) << err;
  const json h = checked_history(r);
  EXPECT_GE(h["attempts"].size(), json::parse(before)["attempts"].size());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // PR_SET_PDEATHSIG is asynchronous
  for (pid_t w : workers) EXPECT_FALSE(process_alive(w)) << "worker " << w << " outlived kopt";
}

TEST(OptimizeE2E, ResumeAloneTakesTheRunsSpecAndSettings) {
  TempDir d;
  ASSERT_EQ(run(optimize_cmd(d, "--budget evals=3 --strategy random --seed 7")), 0);
  const fsys::path r = d.path() / "results" / "run-001";
  ASSERT_EQ(checked_history(r)["attempts"].size(), 4u);

  // No --spec, no --budget: the run's own (evals=3, met already): nothing new.
  ShellRun again = run_shell(resume_cmd(d, r, ""));
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(checked_history(r)["attempts"].size(), 4u);

  // A larger budget: the search goes on with the run's strategy and seed.
  again = run_shell(resume_cmd(d, r, "--budget evals=5"));
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(checked_history(r)["attempts"].size(), 6u);
  const json sm = read_json(r / "summary.json");
  EXPECT_EQ(sm["strategy"], "random") << "the default would be exhaustive for this space";
  EXPECT_EQ(sm["seed"], 7);
  EXPECT_FALSE(fsys::exists(d.path() / "results" / "run-002"));

  // Without a budget again: the last session's (evals=5), not run.json's.
  again = run_shell(resume_cmd(d, r, ""));
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(checked_history(r)["attempts"].size(), 6u);

  // --resume of a folder that is not a run: exit 2 naming it, nothing written.
  fsys::create_directories(d.path() / "empty");
  const ShellRun bad = run_shell(resume_cmd(d, d.path() / "empty", ""));
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("[kopt.run.901] " + (d.path() / "empty").string()), std::string::npos) << bad.err;
  EXPECT_TRUE(fsys::is_empty(d.path() / "empty"));
}

TEST(OptimizeE2E, ResumeAloneRefusesARunWhoseKernelFilesChanged) {
  TempDir d;
  // A spec of our own whose template can be edited.
  const fsys::path src = fsys::path(kSpec).parent_path();
  const fsys::path mine = d.path() / "spec";
  fsys::copy(src, mine, fsys::copy_options::recursive);
  const std::string spec = (mine / "transpose.json").string();
  const std::string cmd = std::string(KOPT_CLI) + " optimize --spec " + spec + common_args(d) + " --budget evals=2";
  ASSERT_EQ(run(cmd), 0);
  const fsys::path r = d.path() / "results" / "run-001";
  const std::string before = kopt::fs::read_file(r / "history.json");
  for (const auto& e : fsys::directory_iterator(mine))
    if (e.path().extension() == ".cu") std::ofstream(e.path(), std::ios::app) << "\n// edited\n";
  const ShellRun again = run_shell(resume_cmd(d, r, "--budget evals=4"));
  EXPECT_EQ(again.code, 2) << again.err;
  EXPECT_NE(again.err.find("[kopt.run.902] " + (r / "spec.json").string() + ": a file that it names"),
            std::string::npos)
      << again.err;
  EXPECT_NE(again.err.find("or a header they include, changed since the run began"), std::string::npos) << again.err;
  EXPECT_EQ(kopt::fs::read_file(r / "history.json"), before);
}

// Two processes timing on one GPU (the fake worker's KOPT_FAKE_UUID makes
// them share one): the second waits, says so and for whom, and their
// measuring windows do not overlap.
TEST(OptimizeE2E, TwoProcessesOnOneGpuTakeTurns) {
  TempDir d, a, b;
  const fsys::path locks = d.path() / "locks";
  const std::vector<std::pair<std::string, std::string>> env = {
      {"KOPT_LOCK_DIR", locks.string()}, {"KOPT_FAKE_UUID", "GPU-test-shared"}, {"KOPT_FAKE_EVAL_MS", "100"}};
  auto with_log = [&](const TempDir& t) {
    auto e = env;
    e.emplace_back("KOPT_FAKE_EVAL_LOG", (t.path() / "windows.txt").string());
    return e;
  };
  auto slow = with_log(a);
  slow.emplace_back("KOPT_FAKE_EVAL_MS", "400");  // later in the list: wins
  const pid_t first = start_background(optimize_cmd(a, "--budget evals=4"), slow, a.path() / "out",
                                       a.path() / "err");
  Reaper reap_first(first);
  ASSERT_TRUE(wait_until([&] { return fsys::exists(a.path() / "windows.txt"); }))
      << text_of(a.path() / "err");
  const pid_t second = start_background(optimize_cmd(b, "--budget evals=4"), with_log(b), b.path() / "out",
                                        b.path() / "err");
  Reaper reap_second(second);
  EXPECT_EQ(wait_code(first), 0) << kopt::fs::read_file(a.path() / "err");
  EXPECT_EQ(wait_code(second), 0) << kopt::fs::read_file(b.path() / "err");

  const std::string err = kopt::fs::read_file(b.path() / "err");
  EXPECT_NE(err.find("kopt: waiting for the GPU GPU-test-shared (fake device (kopt_fake_worker)): pid " +
                     std::to_string(first) + " on host "),
            std::string::npos)
      << err;
  EXPECT_EQ(kopt::fs::read_file(a.path() / "err").find("waiting for the GPU"), std::string::npos);

  auto windows = [](const fsys::path& f) {
    std::vector<std::pair<long long, long long>> w;
    std::istringstream in(kopt::fs::read_file(f));
    for (long long s, e; in >> s >> e;) w.emplace_back(s, e);
    return w;
  };
  const auto wa = windows(a.path() / "windows.txt"), wb = windows(b.path() / "windows.txt");
  ASSERT_GE(wa.size(), 5u);
  ASSERT_GE(wb.size(), 5u);
  for (const auto& x : wa)
    for (const auto& y : wb) EXPECT_TRUE(x.second <= y.first || y.second <= x.first) << "measurements overlap";
  EXPECT_TRUE(fsys::is_empty(locks)) << "lock files are removed when their holders end";
}

// While another process measures on "the GPU": a run waiting for it can be
// stopped (exit 130, its run folder summarised), and a compile-only run,
// which needs no GPU lock, does not wait at all.
TEST(OptimizeE2E, WaitingForTheGpuCanBeStoppedAndCompileOnlyNeverWaits) {
  TempDir d, busy, waiting;
  const fsys::path locks = d.path() / "locks";
  const std::vector<std::pair<std::string, std::string>> env = {{"KOPT_LOCK_DIR", locks.string()},
                                                                {"KOPT_FAKE_UUID", "GPU-busy"},
                                                                {"KOPT_FAKE_EVAL_MS", "60000"}};
  // Someone measures on "the GPU" for a minute.
  const pid_t holder = start_background(optimize_cmd(busy, "--budget evals=4"), env, busy.path() / "out",
                                        busy.path() / "err");
  Reaper reap_holder(holder);
  ASSERT_TRUE(wait_until([&] { return fsys::exists(locks / "GPU-busy.lock.json"); }))
      << text_of(busy.path() / "err");

  // A second run waits for it; SIGINT ends the wait and the run, cleanly.
  const pid_t second = start_background(optimize_cmd(waiting, "--budget evals=4"), env, waiting.path() / "out",
                                        waiting.path() / "err");
  Reaper reap_second(second);
  ASSERT_TRUE(wait_until([&] {
    return text_of(waiting.path() / "err").find("waiting for the GPU GPU-busy") != std::string::npos;
  })) << text_of(waiting.path() / "err");
  ::kill(second, SIGINT);
  EXPECT_EQ(wait_code(second), 130) << kopt::fs::read_file(waiting.path() / "err");
  const fsys::path r = waiting.path() / "results" / "run-001";
  ASSERT_TRUE(fsys::exists(r / "summary.json")) << kopt::fs::read_file(waiting.path() / "err");
  EXPECT_EQ(read_json(r / "summary.json")["interrupted"]["signal"], "SIGINT");
  EXPECT_EQ(read_json(r / "history.json")["attempts"].size(), 0u) << "stopped before its first measurement";

  // Compile-only: no wait.
  const auto t0 = std::chrono::steady_clock::now();
  const std::string cmd = "KOPT_LOCK_DIR=" + locks.string() + " " + KOPT_CLI + " optimize --spec " + kSpec +
                          " --arch sm_90 --budget evals=2 --results-dir " + (d.path() / "results").string() +
                          " --cache-dir " + (d.path() / "cache").string() + " --worker-command '" +
                          KOPT_FAKE_WORKER + " --no-device'";
  const ShellRun c = run_shell(cmd);
  EXPECT_EQ(c.code, 77) << c.err;
  EXPECT_EQ(c.err.find("waiting for the GPU"), std::string::npos) << c.err;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(50));
  ::kill(holder, SIGKILL);
  wait_code(holder);
}

}  // namespace
