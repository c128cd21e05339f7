// GPU tests of the evaluation harness, through the CLI as a user runs it.
//
//   Test 1 (HostileSuite.EveryKernelGetsAnExpectedVerdict): one `kopt evaluate`
//     over every kernel in tests/gpu/kernels (hostile ones that must be
//     rejected, each for its own reason, and correct ones that must be
//     accepted); each file names its acceptable verdicts in a line
//       // kopt-test:expect VERDICT [VERDICT...]
//   Test 2 (SgemmTemplate.NaiveIsAcceptedAndTimed): the sgemm template's naive
//     kernel is accepted, timed on every performance case, and ranked.
//
// main() first runs `kopt devices`: when it exits 77 (no CUDA device) the whole
// program prints "SKIP: ..." and exits 77, which CTest reports as skipped
// (SKIP_RETURN_CODE 77), never as passed.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#ifndef KOPT_CLI
#error "KOPT_CLI (path of the kopt binary) must be defined"
#endif
#ifndef KOPT_GPU_KERNELS_DIR
#error "KOPT_GPU_KERNELS_DIR must be defined"
#endif
#ifndef KOPT_SOURCE_DIR
#error "KOPT_SOURCE_DIR must be defined"
#endif

extern char** environ;

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Bounds on one `kopt` invocation (each test makes one). Test 1 restarts a
// worker after every crash and waits out a 3 s launch watchdog once; test 2
// times five large GEMMs (and the reference) 110 times each.
constexpr std::chrono::seconds kHostileSuiteBound{600};
constexpr std::chrono::seconds kTemplateBound{480};
constexpr std::chrono::seconds kDevicesBound{120};

const std::set<std::string> kVerdicts = {
    "ok",       "compile_error", "infeasible",    "launch_error",     "runtime_error",
    "timeout",  "wrong_result",  "out_of_bounds", "nondeterministic", "worker_crash"};

fs::path g_tmp;  // this process's scratch folder
std::string g_devices_out;  // stdout of `kopt devices` (main() runs it first)

struct ProcResult {
  bool started = false;
  std::string spawn_error;
  bool timed_out = false;
  int exit_code = -1;    // when it exited
  int term_signal = 0;   // when a signal ended it
  double seconds = 0;
  std::string out, err;  // captured stdout and stderr

  std::string describe() const {
    std::ostringstream s;
    if (!started) s << "could not start: " << spawn_error;
    else if (timed_out) s << "killed after " << seconds << " s (time bound exceeded)";
    else if (term_signal) s << "killed by signal " << term_signal << " (" << strsignal(term_signal) << ")";
    else s << "exit code " << exit_code;
    return s.str();
  }
};

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string tail(const std::string& s, size_t n) {
  return s.size() <= n ? s : "[...]\n" + s.substr(s.size() - n);
}

std::string quote_argv(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

// Runs argv (argv[0] is a path; no PATH search) in its own process group with
// stdout and stderr captured to files; kills the whole group (the CLI and the
// workers it started) when the bound is exceeded.
ProcResult run_process(const std::vector<std::string>& argv, std::chrono::seconds bound,
                       const std::string& tag) {
  ProcResult r;
  const fs::path out_path = g_tmp / (tag + ".stdout");
  const fs::path err_path = g_tmp / (tag + ".stderr");

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);

  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);

  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, cargv[0], &actions, &attr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    r.spawn_error = std::string(argv[0]) + ": " + std::strerror(rc);
    return r;
  }
  r.started = true;

  const auto deadline = t0 + bound;
  int status = 0;
  for (;;) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      r.timed_out = true;
      kill(-pid, SIGKILL);  // its process group: the CLI and its workers
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r.timed_out) {
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
  }
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  return r;
}

// Every "// kopt-test:expect V1 V2 ..." line of a kernel file; an empty list
// when there is none.
std::vector<std::string> expected_verdicts(const fs::path& file) {
  std::ifstream f(file);
  std::string line;
  std::vector<std::string> out;
  const std::string marker = "kopt-test:expect";
  while (std::getline(f, line)) {
    const auto c = line.find("//");
    if (c == std::string::npos) continue;
    const auto m = line.find(marker, c);
    if (m == std::string::npos) continue;
    std::istringstream words(line.substr(m + marker.size()));
    std::string w;
    while (words >> w) out.push_back(w);
  }
  return out;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string str_field(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return "";
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}

// Parses the --json file the CLI wrote (an array with one Result per kernel).
// Adds a failure and returns false when it is missing or malformed.
bool load_results(const fs::path& file, size_t expected_count, json* out) {
  if (!fs::exists(file)) {
    ADD_FAILURE() << "kopt evaluate did not write " << file;
    return false;
  }
  try {
    *out = json::parse(read_file(file));
  } catch (const std::exception& e) {
    ADD_FAILURE() << file << " is not JSON: " << e.what();
    return false;
  }
  if (!out->is_array()) {
    ADD_FAILURE() << file << ": expected a JSON array of results, got " << out->type_name();
    return false;
  }
  if (out->size() != expected_count) {
    ADD_FAILURE() << file << ": expected " << expected_count << " results (one per --kernel), got "
                  << out->size();
    return false;
  }
  return true;
}

// The per-device timing lock is keyed by the UUID the worker reports (cuDeviceGetUuid).
TEST(Devices, EveryDeviceHasAUuidInNvidiaSmisSpelling) {
  json j;
  ASSERT_NO_THROW(j = json::parse(g_devices_out)) << g_devices_out;
  const json& list = j.is_array() ? j : j.value("devices", json::array());
  ASSERT_FALSE(list.empty()) << g_devices_out;
  const std::regex form("GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
  for (const json& dev : list) {
    const std::string uuid = dev.value("uuid", "");
    EXPECT_TRUE(std::regex_match(uuid, form)) << "uuid '" << uuid << "' of " << dev.dump();
    std::cout << "  device " << dev.value("ordinal", -1) << ": " << uuid << std::endl;
  }
}

TEST(HostileSuite, EveryKernelGetsAnExpectedVerdict) {
  const fs::path kernels_dir = KOPT_GPU_KERNELS_DIR;
  const fs::path spec = fs::path(KOPT_SOURCE_DIR) / "tests/gpu/sgemm_hostile.json";
  ASSERT_TRUE(fs::is_regular_file(spec)) << spec;

  std::vector<fs::path> kernels;
  for (const auto& e : fs::directory_iterator(kernels_dir))
    if (e.is_regular_file() && e.path().extension() == ".cu") kernels.push_back(e.path());
  std::sort(kernels.begin(), kernels.end());
  ASSERT_FALSE(kernels.empty()) << "no .cu files in " << kernels_dir;

  // Every file must say what it expects, in known verdict names.
  std::vector<std::vector<std::string>> expected;
  std::string bad_expectations;
  for (const auto& k : kernels) {
    auto e = expected_verdicts(k);
    if (e.empty()) bad_expectations += "\n  " + k.filename().string() + ": no 'kopt-test:expect' line";
    for (const auto& v : e)
      if (!kVerdicts.count(v))
        bad_expectations += "\n  " + k.filename().string() + ": unknown verdict '" + v + "'";
    expected.push_back(std::move(e));
  }
  ASSERT_TRUE(bad_expectations.empty()) << "kernel files with a bad expectation:" << bad_expectations;

  const fs::path json_out = g_tmp / "hostile_results.json";
  std::vector<std::string> argv = {KOPT_CLI, "evaluate", "--spec", spec.string()};
  for (const auto& k : kernels) {
    argv.push_back("--kernel");
    argv.push_back(k.string());
  }
  argv.push_back("--json");
  argv.push_back(json_out.string());

  std::cout << "[ run      ] " << quote_argv(argv) << std::endl;
  const ProcResult p = run_process(argv, kHostileSuiteBound, "hostile");
  std::cout << "[ finished ] " << p.describe() << " in " << std::fixed << std::setprecision(1)
            << p.seconds << " s" << std::endl;

  const std::string log = "\n--- stderr (tail) ---\n" + tail(p.err, 6000);
  ASSERT_TRUE(p.started) << p.describe();
  ASSERT_FALSE(p.timed_out) << "kopt evaluate exceeded " << kHostileSuiteBound.count() << " s" << log;
  ASSERT_EQ(p.term_signal, 0) << "kopt evaluate crashed: " << p.describe() << log;
  ASSERT_TRUE(p.exit_code == 0 || p.exit_code == 1)
      << "kopt evaluate: " << p.describe() << " (expected 0 or 1)" << log
      << "\n--- stdout (tail) ---\n" << tail(p.out, 4000);

  json results;
  if (!load_results(json_out, kernels.size(), &results)) {
    std::cout << log << std::endl;
    return;
  }

  // One table of everything, then every mismatch in one failure.
  std::ostringstream table, mismatches;
  int n_mismatch = 0;
  bool any_rejected = false;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const json& r = results[i];
    const std::string name = kernels[i].filename().string();
    const std::string verdict = str_field(r, "verdict");
    const std::string detail = str_field(r, "detail");
    const std::string error_name = str_field(r, "error_name");
    const std::string failed_case = str_field(r, "failed_case");
    const bool good = std::find(expected[i].begin(), expected[i].end(), verdict) != expected[i].end();
    if (verdict != "ok") any_rejected = true;

    table << "  " << (good ? "   " : "!! ") << std::left << std::setw(28) << name << std::setw(18)
          << (verdict.empty() ? "(none)" : verdict) << "expect " << join(expected[i], "|");
    if (!failed_case.empty()) table << "  case " << failed_case;
    if (!error_name.empty()) table << "  " << error_name;
    table << "\n";
    if (!detail.empty()) table << "        " << detail << "\n";

    if (!good) {
      ++n_mismatch;
      mismatches << "\n  " << name << ": got '" << (verdict.empty() ? "(no verdict)" : verdict)
                 << "', expected " << join(expected[i], " or ");
      if (!failed_case.empty()) mismatches << "; case " << failed_case;
      if (!error_name.empty()) mismatches << "; " << error_name;
      mismatches << "; detail: " << (detail.empty() ? "(none)" : detail);
    }
  }
  std::cout << "Verdicts (" << kernels.size() << " kernels):\n" << table.str() << std::flush;

  EXPECT_EQ(n_mismatch, 0) << n_mismatch << " of " << kernels.size()
                           << " kernels got an unexpected verdict:" << mismatches.str();
  // The exit code must agree with the verdicts (0: all ok, 1: some rejected).
  EXPECT_EQ(p.exit_code, any_rejected ? 1 : 0)
      << "exit code disagrees with the verdicts in " << json_out;
}

TEST(SgemmTemplate, NaiveIsAcceptedAndTimed) {
  const fs::path dir = fs::path(KOPT_SOURCE_DIR) / "templates/sgemm";
  const fs::path spec = dir / "sgemm.json";
  const fs::path kernel = dir / "naive.cu";
  ASSERT_TRUE(fs::is_regular_file(spec)) << spec;
  ASSERT_TRUE(fs::is_regular_file(kernel)) << kernel;

  // The performance cases, from the spec itself.
  std::vector<std::string> perf_cases;
  {
    const json s = json::parse(read_file(spec));
    for (const auto& c : s.at("cases"))
      if (c.value("role", "correctness") == "performance") perf_cases.push_back(c.at("name"));
  }
  ASSERT_GE(perf_cases.size(), 5u) << "templates/sgemm/sgemm.json should have the 5 flagship performance cases";

  const fs::path json_out = g_tmp / "template_results.json";
  const std::vector<std::string> argv = {KOPT_CLI,       "evaluate", "--spec",
                                         spec.string(),  "--kernel", kernel.string(),
                                         "--json",       json_out.string()};
  std::cout << "[ run      ] " << quote_argv(argv) << std::endl;
  const ProcResult p = run_process(argv, kTemplateBound, "template");
  std::cout << "[ finished ] " << p.describe() << " in " << std::fixed << std::setprecision(1)
            << p.seconds << " s" << std::endl;

  const std::string log = "\n--- stderr (tail) ---\n" + tail(p.err, 6000) +
                          "\n--- stdout (tail) ---\n" + tail(p.out, 4000);
  ASSERT_TRUE(p.started) << p.describe();
  ASSERT_FALSE(p.timed_out) << "kopt evaluate exceeded " << kTemplateBound.count() << " s" << log;
  ASSERT_EQ(p.term_signal, 0) << "kopt evaluate crashed: " << p.describe() << log;

  json results;
  ASSERT_TRUE(load_results(json_out, 1, &results)) << log;
  const json& r = results[0];
  EXPECT_EQ(p.exit_code, 0) << p.describe() << log;
  ASSERT_EQ(str_field(r, "verdict"), "ok")
      << "naive.cu rejected; detail: " << str_field(r, "detail")
      << "; case: " << str_field(r, "failed_case") << "; error: " << str_field(r, "error_name");

  // The same array is printed on stdout.
  try {
    const json printed = json::parse(p.out);
    EXPECT_TRUE(printed.is_array() && printed.size() == 1 &&
                str_field(printed[0], "verdict") == "ok")
        << "stdout does not hold the result array: " << tail(p.out, 2000);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "stdout is not the JSON result array (" << e.what() << "): " << tail(p.out, 2000);
  }

  ASSERT_TRUE(r.contains("cases") && r["cases"].is_array()) << r.dump(2);
  std::cout << "naive.cu on templates/sgemm/sgemm.json:\n";
  std::set<std::string> timed;
  for (const auto& c : r["cases"]) {
    const std::string name = str_field(c, "name");
    EXPECT_TRUE(c.value("passed", false)) << "case " << name << " did not pass: " << c.dump();
    if (str_field(c, "role") != "performance") continue;
    const bool has_latency = c.contains("latency") && c["latency"].is_object() &&
                             c["latency"].contains("median_ms") &&
                             c["latency"]["median_ms"].is_number();
    EXPECT_TRUE(has_latency) << "performance case " << name << " has no latency: " << c.dump();
    if (!has_latency) continue;
    const json& l = c["latency"];
    const double median = l["median_ms"].get<double>();
    EXPECT_GT(median, 0.0) << "case " << name;
    timed.insert(name);
    std::cout << "  " << std::left << std::setw(18) << name << std::right << std::fixed
              << std::setprecision(4) << "median " << std::setw(10) << median << " ms";
    if (l.contains("min_ms") && l["min_ms"].is_number())
      std::cout << "  min " << std::setw(10) << l["min_ms"].get<double>() << " ms";
    if (l.contains("samples") && l["samples"].is_number())
      std::cout << "  (" << l["samples"].get<long long>() << " samples)";
    std::cout << "\n";
  }
  for (const auto& name : perf_cases)
    EXPECT_TRUE(timed.count(name)) << "performance case " << name << " was not timed";

  const bool has_geomean = r.contains("geomean_ms") && r["geomean_ms"].is_number();
  const bool has_speedup = r.contains("speedup") && r["speedup"].is_number();
  EXPECT_TRUE(has_geomean) << "no geomean_ms in " << r.dump();
  EXPECT_TRUE(has_speedup) << "no speedup in " << r.dump();
  if (has_geomean) {
    EXPECT_GT(r["geomean_ms"].get<double>(), 0.0);
    std::cout << "  geomean " << r["geomean_ms"].get<double>() << " ms";
  }
  if (r.contains("reference_geomean_ms") && r["reference_geomean_ms"].is_number())
    std::cout << "  reference geomean " << r["reference_geomean_ms"].get<double>() << " ms";
  if (has_speedup) {
    EXPECT_GT(r["speedup"].get<double>(), 0.0);
    std::cout << "  speedup " << r["speedup"].get<double>() << "x";
  }
  std::cout << std::endl;
}

}  // namespace

// `kopt optimize` end to end on the SGEMM template with a small budget: a run
// folder whose summary names a best kernel that passed every case, timed
// against the reference, the initial kernel and cuBLAS.
TEST(SgemmTemplate, OptimizeEndToEnd) {
  const fs::path spec = fs::path(KOPT_SOURCE_DIR) / "templates/sgemm/sgemm.json";
  const fs::path results = g_tmp / "results";
  // Two shape classes and a screen factor of 1: every candidate after a
  // class's first is screened on each case where its probe is slower than
  // the fastest median so far.
  const std::vector<std::string> argv = {KOPT_CLI,  "optimize", "--spec", spec.string(), "--budget", "evals=8",
                                         "--top",   "2",        "--retime-rounds", "1", "--results-dir",
                                         results.string(), "--quiet", "--shape-classes", "2", "--screen-factor",
                                         "1"};
  std::cout << "[ run      ] " << quote_argv(argv) << std::endl;
  const ProcResult p = run_process(argv, kTemplateBound, "optimize");
  std::cout << "[ finished ] " << p.describe() << " in " << std::fixed << std::setprecision(1) << p.seconds << " s"
            << std::endl;
  const std::string log = "\n--- stderr (tail) ---\n" + tail(p.err, 6000);
  ASSERT_TRUE(p.started) << p.describe();
  ASSERT_FALSE(p.timed_out) << log;
  ASSERT_EQ(p.exit_code, 0) << p.describe() << log;
  const fs::path run = results / "run-001";
  for (const char* f : {"history.json", "summary.json", "best.cu", "report.html", "heatmap.svg"})
    EXPECT_TRUE(fs::is_regular_file(run / f)) << f;
  const json s = json::parse(read_file(run / "summary.json"));
  ASSERT_TRUE(s.contains("best") && s["best"].is_object()) << s.dump(1);
  ASSERT_TRUE(s.contains("final_best")) << s.dump(1);
  const json& fb = s["final_best"];
  for (const char* k : {"geomean_ms", "speedup_vs_reference", "speedup_vs_initial", "ratio_to_cublas"})
    EXPECT_TRUE(fb.contains(k) && fb[k].is_number() && fb[k].get<double>() > 0) << k << " in " << fb.dump();
  // The winner passed every case (its result.json says so case by case).
  char idx[16];
  std::snprintf(idx, sizeof idx, "%04d", fb.at("index").get<int>());
  const json r = json::parse(read_file(run / "candidates" / idx / "result.json"));
  EXPECT_EQ(str_field(r, "verdict"), "ok");
  for (const auto& c : r.at("cases")) EXPECT_TRUE(c.value("passed", false)) << c.dump();
  // Shape classes and screening, as the real worker does them: a case
  // timed under a limit has its probe alone when the probe was over it, its
  // first kScreenLaunches (10) timed launches when their median was over the
  // second limit, else the full count of measured launches.
  ASSERT_TRUE(s.contains("shape_classes") && s["shape_classes"].size() == 2) << s.dump(1);
  const json h = json::parse(read_file(run / "history.json"));
  const int iterations = json::parse(read_file(spec)).at("timing").at("iterations").get<int>();
  int limited = 0, screened = 0;
  for (const auto& a : h.at("attempts"))
    for (const auto& c : a.at("cases")) {
      if (!c.contains("screen_ms") || !c.contains("latency")) continue;
      ++limited;
      const json& l = c.at("latency");
      if (c.value("screened", false)) {
        ++screened;
        if (l.at("samples").get<int>() == 1) {
          EXPECT_GT(l.at("median_ms").get<double>(), c.at("screen_ms").get<double>()) << c.dump();
        } else {
          EXPECT_EQ(l.at("samples").get<int>(), 10) << c.dump();
          ASSERT_TRUE(c.contains("screen_median_ms")) << c.dump();
          EXPECT_GT(l.at("median_ms").get<double>(), c.at("screen_median_ms").get<double>()) << c.dump();
        }
      } else {
        EXPECT_EQ(l.at("samples").get<int>(), iterations) << c.dump();
      }
    }
  EXPECT_GT(limited, 0) << "no case was timed under a screening limit";
  // Every finalist re-timed on every performance case.
  for (const auto& e : s.at("retime"))
    if (!e.value("failed_recheck", false))
      EXPECT_EQ(e.at("cases_median_ms").size(), s["shape_classes"][0]["cases"].size() +
                                                    s["shape_classes"][1]["cases"].size())
          << e.dump();
  std::cout << "  " << limited << " cases timed under a screening limit, " << screened << " screened" << std::endl;
  const json& t = s.at("tuner");
  std::cout << "  best " << fb.value("label", "") << ": geomean " << fb["geomean_ms"].get<double>() << " ms, "
            << fb["speedup_vs_initial"].get<double>() << "x the initial kernel, " << fb["ratio_to_cublas"].get<double>()
            << " of cuBLAS; " << t.value("candidates_per_minute", 0.0) << " candidates/min, GPU measured fraction "
            << t.value("gpu_measured_fraction", 0.0) << std::endl;
}

int main(int argc, char** argv) {
  char tmpl[] = "/tmp/kopt_gpu_tests.XXXXXX";
  if (!mkdtemp(tmpl)) {
    std::perror("mkdtemp");
    return 1;
  }
  g_tmp = tmpl;

  // No CUDA device: skip (exit 77), visibly.
  const ProcResult d = run_process({KOPT_CLI, "devices"}, kDevicesBound, "devices");
  if (!d.started || d.timed_out || d.term_signal || (d.exit_code != 0 && d.exit_code != 77)) {
    std::cerr << "FAIL: `" << KOPT_CLI << " devices`: " << d.describe() << "\n"
              << tail(d.out + d.err, 4000) << std::endl;
    return 1;
  }
  if (d.exit_code == 77) {
    std::string why = d.err.empty() ? d.out : d.err;
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    std::replace(why.begin(), why.end(), '\n', ' ');
    std::cout << "SKIP: no CUDA device found (`kopt devices`: " << (why.empty() ? "exit 77" : why)
              << ")" << std::endl;
    std::error_code ec;
    fs::remove_all(g_tmp, ec);
    return 77;
  }
  std::cout << "Device (`kopt devices`): " << tail(d.out, 2000) << std::endl;
  g_devices_out = d.out;

  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  if (rc == 0) {
    std::error_code ec;
    fs::remove_all(g_tmp, ec);
  } else {
    std::cout << "Outputs kept in " << g_tmp << std::endl;
  }
  return rc;
}
