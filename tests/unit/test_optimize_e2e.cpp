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
#include <thread>

#include <nlohmann/json.hpp>

#include "temp_dir.h"
#include "util/fs.h"

namespace {

namespace fsys = std::filesystem;
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
  for (const auto& [name, c] : sp["cases"].items()) {
    EXPECT_LE(c["median_ms"].get<double>(), c["single_median_ms"].get<double>()) << name;
    EXPECT_LT(c["variant"].get<size_t>(), sp["variants"].size()) << name;
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
         "      variants_seen |= 1 << c.variant;\n"
         "    }\n"
         "  std::printf(\"%d\\n\", variants_seen);\n"
         "  return variants_seen == (1 << kopt_tr::kVariants) - 1 ? 0 : 3;\n"
         "}\n";
  }
  const std::string build = std::string(nvcc) + " -std=c++17 -arch=sm_90 -o " + (gen / "app").string() + " " +
                            (gen / "main.cu").string() + " " + (gen / "tr.cu").string();
  ASSERT_EQ(run(build), 0) << build;
  // Every variant is reachable by launch_config() (each was chosen for a case).
  EXPECT_EQ(run((gen / "app").string()), 0);
}

}  // namespace
