// Shape capture (docs/capture.md): the capture code of a generated launch
// header, compiled into a small host program that calls launch_config() from
// several threads and processes; captures read back as weighted performance
// cases (--input-cases); the weighted geomean; kopt generate --cases-from.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/protocol.h"
#include "gen/generate.h"
#include "model/result.h"
#include "store/fingerprint.h"
#include "spec/capture.h"
#include "spec/spec.h"
#include "support/files.h"
#include "temp_dir.h"
#include "driver/driver.h"
#include "util/error.h"
#include "util/fs.h"

namespace {

namespace fsys = std::filesystem;
using kopt::test::read_json;
using kopt::test::slurp;
using kopt::test::TempDir;
using nlohmann::json;

const std::string kSgemm = std::string(KOPT_SOURCE_DIR) + "/templates/sgemm/sgemm.json";
const std::string kTranspose = std::string(KOPT_SOURCE_DIR) + "/templates/transpose/transpose.json";

struct Ran {
  int code = -1;
  std::string err;
};

/// Runs `cmd` through /bin/sh with stderr into `dir`/err.
Ran sh(const fsys::path& dir, const std::string& cmd) {
  const fsys::path err = dir / "err.txt";
  const int status = std::system((cmd + " 2>" + err.string()).c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(err)};
}

// The host program: argv = processes threads reps. It calls launch_config
// once before forking (counted once: a child starts with no counts), then
// every process (the children and the parent) runs `threads` threads of
// `reps` calls over three shapes: (1,7,5), (2,7,5), (3,7,5) for i % 3.
const char* kProgram = R"(#include "k_launch.h"
#include <sys/wait.h>
#include <unistd.h>
#include <cstdlib>
#include <thread>
#include <vector>
static void work(int threads, int reps) {
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([reps] { for (int i = 0; i < reps; ++i) (void)kopt_k::launch_config(1 + i % 3, 7, 5); });
  for (auto& t : ts) t.join();
}
int main(int argc, char** argv) {
  if (argc < 4) return 2;
  const int procs = std::atoi(argv[1]), threads = std::atoi(argv[2]), reps = std::atoi(argv[3]);
  (void)kopt_k::launch_config(9, 9, 9);
  (void)kopt_k::launch_config(0, 9, 9);  // no shape: not counted
  std::vector<pid_t> kids;
  for (int p = 0; p < procs; ++p) {
    const pid_t pid = fork();
    if (pid == 0) { work(threads, reps); std::exit(0); }
    kids.push_back(pid);
  }
  work(threads, reps);
  int bad = 0;
  for (pid_t k : kids) { int st = 0; waitpid(k, &st, 0); bad += !(WIFEXITED(st) && WEXITSTATUS(st) == 0); }
  if (argc > 4) kopt_k::capture::flush();  // flush() may be called early; exit adds the rest
  return bad;
}
)";

const char* kKernel =
    "// kopt:entry sgemm_k\n// kopt:grid ceil_div(N, 16), ceil_div(M, 16), 1\n// kopt:block 16, 16, 1\n"
    "extern \"C\" __global__ void sgemm_k(const float* A, const float* B, float* C, int M, int N, int K, float alpha) {}\n";

/// Builds the program against the launch header of sgemm.json once per
/// test binary (`defines`: extra -D flags); returns its path.
fsys::path program(const std::string& defines = "") {
  static std::map<std::string, fsys::path> built;
  if (built.count(defines)) return built[defines];
  static TempDir dir("kopt-capture-prog");
  const fsys::path d = dir.path() / std::to_string(built.size());
  fsys::create_directories(d);
  const kopt::spec::Spec s = kopt::spec::load_spec(kSgemm);
  std::ofstream(d / "k_launch.h") << kopt::gen::launch_header("k", kKernel, s, "k.cu");
  std::ofstream(d / "main.cpp") << kProgram;
  const std::string cmd = "c++ -std=c++17 -O1 -Wall -Wextra -Werror -pthread " + defines + " -I" + d.string() + " " +
                          (d / "main.cpp").string() + " -o " + (d / "prog").string() + " 2>" + (d / "cc.log").string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << slurp(d / "cc.log");
  built[defines] = d / "prog";
  return d / "prog";
}

/// The counts of a capture file: "M,N,K" -> count; checks the format.
std::map<std::string, uint64_t> counts_of(const fsys::path& file) {
  const json j = read_json(file);
  EXPECT_EQ(j["kopt_capture"], 1);
  EXPECT_EQ(j["kernel"], "k");
  EXPECT_EQ(j["sizes"], json::array({"M", "N", "K"}));
  const kopt::spec::Capture c = kopt::spec::parse_capture(j, file.string());  // kopt reads what the header writes
  std::map<std::string, uint64_t> out;
  for (const auto& s : c.shapes)
    out[std::to_string(s.sizes.at("M")) + "," + std::to_string(s.sizes.at("N")) + "," + std::to_string(s.sizes.at("K"))] =
        s.count;
  return out;
}

TEST(CaptureHeader, CountsEveryLaunchAcrossThreadsAndProcesses) {
  const fsys::path prog = program();
  TempDir d;
  const fsys::path file = d / "k.capture.json";
  // Two programs at once, each with 3 children and itself, 4 threads of 300 calls.
  const std::string env = "KOPT_CAPTURE=" + file.string() + " ";
  const Ran r = sh(d.path(), "(" + env + prog.string() + " 3 4 300 & " + env + prog.string() + " 3 4 300 & wait)");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // 2 programs x 4 processes x 4 threads x 100 calls of each shape; (9,9,9)
  // once per program (before the fork).
  std::map<std::string, uint64_t> want = {{"1,7,5", 3200}, {"2,7,5", 3200}, {"3,7,5", 3200}, {"9,9,9", 2}};
  EXPECT_EQ(counts_of(file), want);
  // Once more, flushing early too: the counts add up.
  const Ran r2 = sh(d.path(), env + prog.string() + " 0 2 30 flush");
  EXPECT_EQ(r2.code, 0) << r2.err;
  want = {{"1,7,5", 3220}, {"2,7,5", 3220}, {"3,7,5", 3220}, {"9,9,9", 3}};
  EXPECT_EQ(counts_of(file), want);
  // The file follows docs/schemas/capture.schema.json (checked where python3-jsonschema is installed).
  if (std::system("python3 -c 'import jsonschema' >/dev/null 2>&1") == 0) {
    const Ran v = sh(d.path(), "python3 -c 'import json, sys, jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), "
                               "json.load(open(sys.argv[2])))' " + file.string() + " " + KOPT_SOURCE_DIR +
                                   "/docs/schemas/capture.schema.json");
    EXPECT_EQ(v.code, 0) << v.err;
  }
  // The most frequent first; the lock file stays beside it, no temporary file.
  EXPECT_EQ(read_json(file)["launches"][3]["sizes"]["M"], 9);
  EXPECT_TRUE(fsys::exists(d / "k.capture.json.lock"));
  for (const auto& e : fsys::directory_iterator(d.path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

TEST(CaptureHeader, OffWritesNothing) {
  const fsys::path prog = program();
  TempDir d;
  const std::string cmd = "cd " + d.path().string() + " && env -u KOPT_CAPTURE -u KOPT_CAPTURE_k " + prog.string() + " 1 2 10";
  Ran r = sh(d.path(), cmd);
  EXPECT_EQ(r.code, 0) << r.err;
  r = sh(d.path(), "cd " + d.path().string() + " && KOPT_CAPTURE=off " + prog.string() + " 1 2 10");
  EXPECT_EQ(r.code, 0) << r.err;
  r = sh(d.path(), "cd " + d.path().string() + " && KOPT_CAPTURE= " + prog.string() + " 1 2 10");
  EXPECT_EQ(r.code, 0) << r.err;
  size_t files = 0;
  for (const auto& e : fsys::directory_iterator(d.path())) files += e.path().filename() != "err.txt";
  EXPECT_EQ(files, 0u);
  // Compiled out (-DKOPT_NO_CAPTURE): nothing, even with KOPT_CAPTURE set.
  const fsys::path off = program("-DKOPT_NO_CAPTURE");
  r = sh(d.path(), "KOPT_CAPTURE=" + (d / "x.json").string() + " " + off.string() + " 0 1 10");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fsys::exists(d / "x.json"));
  // A system that is not POSIX (as Windows: no __unix__): the header
  // compiles, capture::flush() too, and nothing is recorded.
  const fsys::path other = program("-U__unix__ -U__unix -Uunix");
  r = sh(d.path(), "KOPT_CAPTURE=" + (d / "y.json").string() + " " + other.string() + " 0 1 10 flush");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fsys::exists(d / "y.json"));
}

TEST(CaptureHeader, KernelVariableFolderAndCompileDefinition) {
  const fsys::path prog = program();
  TempDir d;
  // KOPT_CAPTURE_<name> wins over KOPT_CAPTURE; a folder gets <name>.capture.json.
  fsys::create_directories(d / "caps");
  Ran r = sh(d.path(), "KOPT_CAPTURE=" + (d / "nope.json").string() + " KOPT_CAPTURE_k=" + (d / "caps").string() + " " +
                           prog.string() + " 0 1 3");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fsys::exists(d / "nope.json"));
  EXPECT_EQ(counts_of(d / "caps" / "k.capture.json")["1,7,5"], 1u);
  // {kernel} is replaced by the kernel's name.
  r = sh(d.path(), "KOPT_CAPTURE=" + (d / "{kernel}.json").string() + " " + prog.string() + " 0 1 3");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fsys::exists(d / "k.json"));
  // -DKOPT_CAPTURE_FILE=... switches it on without the environment.
  const fsys::path on = program("-DKOPT_CAPTURE_FILE='\"" + (d / "built_in.json").string() + "\"'");
  r = sh(d.path(), "env -u KOPT_CAPTURE " + on.string() + " 0 1 3");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(counts_of(d / "built_in.json")["3,7,5"], 1u);
}

TEST(CaptureHeader, CorruptFileIsMovedAsideAndAnotherKernelsFileLeftAlone) {
  const fsys::path prog = program();
  TempDir d;
  const fsys::path file = d / "c.json";
  std::ofstream(file) << "{\"kopt_capture\": 1, \"kernel\": \"k\", \"launches\": [ {";  // truncated
  Ran r = sh(d.path(), "KOPT_CAPTURE=" + file.string() + " " + prog.string() + " 1 1 3");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("not a capture file (not valid JSON); moved it to " + file.string() + ".corrupt"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(counts_of(file)["1,7,5"], 2u);
  EXPECT_TRUE(fsys::exists(d / "c.json.corrupt"));
  // A count that is not a number: corrupt too.
  std::ofstream(file, std::ios::trunc)
      << R"({"kopt_capture": 1, "kernel": "k", "sizes": ["M","N","K"], "launches": [{"sizes": {"M": 1, "N": 7, "K": 5}, "count": -3}]})";
  r = sh(d.path(), "KOPT_CAPTURE=" + file.string() + " " + prog.string() + " 0 1 3");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("count of 1 or more"), std::string::npos) << r.err;
  EXPECT_EQ(counts_of(file)["1,7,5"], 1u);
  // A valid capture of another kernel is never overwritten.
  const std::string other =
      R"({"kopt_capture": 1, "kernel": "dgemm", "sizes": ["M","N","K"], "launches": [{"sizes": {"M": 1, "N": 7, "K": 5}, "count": 4}]})";
  std::ofstream(file, std::ios::trunc) << other;
  r = sh(d.path(), "KOPT_CAPTURE=" + file.string() + " " + prog.string() + " 0 1 3");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("holds the launches of kernel 'dgemm'"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(file), other);
  // A file written by someone else's JSON writer (other spacing and order) merges.
  std::ofstream(file, std::ios::trunc) << "{\n  \"launches\": [\n    {\"count\": 5, \"sizes\": {\"K\": 5, \"N\": 7, \"M\": 1}}\n  ],\n"
                                          "  \"sizes\": [\"K\", \"N\", \"M\"], \"kernel\": \"k\", \"kopt_capture\": 1\n}\n";
  r = sh(d.path(), "KOPT_CAPTURE=" + file.string() + " " + prog.string() + " 0 1 3");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(counts_of(file)["1,7,5"], 6u);
}

TEST(CaptureHeader, UnwritablePlacesNeverBreakTheProgram) {
  const fsys::path prog = program();
  TempDir d;
  // A folder that does not exist.
  Ran r = sh(d.path(), "KOPT_CAPTURE=" + (d / "no" / "such" / "c.json").string() + " " + prog.string() + " 2 2 20");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("cannot create its lock file"), std::string::npos) << r.err;
  EXPECT_LE(std::count(r.err.begin(), r.err.end(), '\n'), 3) << "at most one line per process: " << r.err;
  // The capture path is a folder's name that cannot take a file (a folder
  // where the temporary file would go is read-only).
  if (::geteuid() != 0) {
    fsys::create_directories(d / "ro");
    std::ofstream(d / "ro" / "c.json.lock") << "";
    ::chmod((d / "ro").c_str(), 0555);
    r = sh(d.path(), "KOPT_CAPTURE=" + (d / "ro" / "c.json").string() + " " + prog.string() + " 0 1 3");
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("cannot write it"), std::string::npos) << r.err;
    ::chmod((d / "ro").c_str(), 0755);
  }
  // The capture file is a directory.
  fsys::create_directories(d / "dir.json" / "x");
  r = sh(d.path(), "KOPT_CAPTURE_k=" + (d / "dir.json" / "x").string() + "/../ " + prog.string() + " 0 1 3");
  EXPECT_EQ(r.code, 0) << r.err;
}

// ---- kopt's side: captures as cases ----

json capture_doc(const std::vector<std::pair<std::map<std::string, int64_t>, uint64_t>>& launches,
                 const std::vector<std::string>& sizes = {"M", "N", "K"}) {
  json j = {{"kopt_capture", 1}, {"kernel", "sgemm"}, {"sizes", sizes}, {"launches", json::array()}};
  for (const auto& [s, n] : launches) j["launches"].push_back({{"sizes", s}, {"count", n}});
  return j;
}

kopt::spec::Spec load_with(const fsys::path& cases, const std::string& spec = kSgemm) {
  kopt::driver::OptimizeOptions o;
  o.spec = spec;
  o.input_cases = cases;
  o.quiet = true;
  return kopt::driver::load_spec_with_overrides(o);
}

TEST(CaptureCases, ReplaceThePerformanceCasesWeightedByCount) {
  TempDir d;
  const fsys::path f = d / "cap.json";
  std::ofstream(f) << capture_doc({{{{"M", 64}, {"N", 32}, {"K", 16}}, 3},
                                   {{{"M", 128}, {"N", 128}, {"K", 64}}, 40},
                                   {{{"M", 64}, {"N", 32}, {"K", 16}}, 2}})  // same shape again: added
                          .dump();
  const kopt::spec::Spec base = kopt::spec::load_spec(kSgemm);
  const kopt::spec::Spec s = load_with(f);
  size_t correctness = 0;
  for (const auto& c : base.cases) correctness += c.role == kopt::spec::CaseRole::correctness;
  ASSERT_EQ(s.cases.size(), correctness + 2);
  for (size_t i = 0; i < correctness; ++i) EXPECT_EQ(s.cases[i], *std::find_if(base.cases.begin(), base.cases.end(),
                                                                          [&](const auto& c) { return c.name == s.cases[i].name; }));
  const auto& a = s.cases[correctness];
  const auto& b = s.cases[correctness + 1];
  EXPECT_EQ(a.name, "captured_M128_N128_K64");
  EXPECT_EQ(a.role, kopt::spec::CaseRole::performance);
  EXPECT_EQ(a.weight, 40);
  EXPECT_EQ(b.name, "captured_M64_N32_K16");
  EXPECT_EQ(b.weight, 5);
  EXPECT_EQ(b.sizes, (std::map<std::string, int64_t>{{"M", 64}, {"N", 32}, {"K", 16}}));
  // The resolved spec keeps the weights; the spec's own cases have none written.
  const json j = kopt::spec::to_json(s);
  EXPECT_EQ(j["cases"][correctness]["weight"], 40.0);
  EXPECT_FALSE(j["cases"][0].contains("weight"));
  EXPECT_EQ(kopt::spec::parse_spec(j, s.path), s);
  // kopt generate --cases-out writes those cases; read back as --input-cases
  // they give the same spec, so the tests see the tuning cache's entry.
  std::ofstream(d / "cases.json") << json{{"cases", j["cases"]}}.dump();
  EXPECT_EQ(kopt::store::spec_fingerprint(load_with(d / "cases.json")), kopt::store::spec_fingerprint(s));
}

TEST(CaptureCases, AtMost64TheMostFrequent) {
  TempDir d;
  std::vector<std::pair<std::map<std::string, int64_t>, uint64_t>> l;
  for (int i = 1; i <= 70; ++i) l.push_back({{{"M", i}, {"N", 8}, {"K", 8}}, static_cast<uint64_t>(i)});
  std::ofstream(d / "cap.json") << capture_doc(l).dump();
  const kopt::spec::Spec s = load_with(d / "cap.json");
  const auto perf = s.performance_cases();
  ASSERT_EQ(perf.size(), kopt::spec::kMaxCapturedCases);
  EXPECT_EQ(perf.front()->name, "captured_M70_N8_K8");
  EXPECT_EQ(perf.back()->name, "captured_M7_N8_K8");
  // Said on stderr (not quiet).
  const std::string cmd = std::string(KOPT_CLI) + " evaluate --spec " + kSgemm + " --input-cases " +
                          (d / "cap.json").string() + " --arch sm_90 --cases captured_M70_N8_K8 >/dev/null";
  const Ran r = sh(d.path(), cmd);
  EXPECT_NE(r.err.find("70 distinct shapes; only the 64 most frequent are tuned on"),
            std::string::npos)
      << r.err;
}

/// load_with() throws SpecError `id` whose message has every piece of `want`.
void expect_error(const fsys::path& f, const std::string& id, const std::vector<std::string>& want,
                  const std::string& spec = kSgemm) {
  try {
    load_with(f, spec);
    ADD_FAILURE() << "no error, expected " << id;
  } catch (const kopt::SpecError& e) {
    EXPECT_EQ(e.id(), id) << e.what();
    for (const auto& w : want) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << w << " in " << e.what();
  }
}

TEST(CaptureCases, BadCapturesNameTheFileAndThePath) {
  TempDir d;
  const fsys::path f = d / "cap.json";
  const std::map<std::string, int64_t> mnk = {{"M", 8}, {"N", 8}, {"K", 8}};
  auto write = [&](const json& j) { std::ofstream(f, std::ios::trunc) << j.dump(); };
  json j = capture_doc({{mnk, 1}});
  j["kopt_capture"] = 2;
  write(j);
  expect_error(f, "kopt.capture.001", {f.string() + ": $.kopt_capture: expected 1"});
  j = capture_doc({{mnk, 1}});
  j["extra"] = true;
  write(j);
  expect_error(f, "kopt.capture.002", {"$.extra: unknown key 'extra'"});
  write(capture_doc({{{{"M", 8}, {"N", 8}}, 1}}, {"M", "N"}));
  expect_error(f, "kopt.capture.003", {"$.sizes", "missing: K"});
  write(capture_doc({{{{"M", 8}, {"N", 8}, {"K", 8}, {"L", 2}}, 1}}, {"M", "N", "K", "L"}));
  expect_error(f, "kopt.capture.003", {"not in the spec: L"});
  j = capture_doc({{mnk, 1}});
  j["launches"][0]["sizes"].erase("K");
  write(j);
  expect_error(f, "kopt.capture.004", {"$.launches[0].sizes: size 'K' is missing"});
  j = capture_doc({{mnk, 1}});
  j["launches"][0]["sizes"]["Q"] = 3;
  write(j);
  expect_error(f, "kopt.capture.004", {"$.launches[0].sizes.Q: 'Q' is not one of the capture's sizes"});
  write(capture_doc({}));
  expect_error(f, "kopt.capture.005", {"$.launches: no launches recorded"});
  j = capture_doc({{mnk, 1}});
  j["launches"][0]["count"] = 0;
  write(j);
  expect_error(f, "kopt.json.005", {"$.launches[0].count: expected a whole number of 1 or more"});
  j = capture_doc({{mnk, 1}});
  j["launches"][0]["sizes"]["M"] = -4;
  write(j);
  expect_error(f, "kopt.json.005", {"$.launches[0].sizes.M"});
  j = capture_doc({{mnk, 1}});
  j["kernel"] = 5;
  write(j);
  expect_error(f, "kopt.json.005", {"$.kernel: expected a string"});
  // A shape the spec cannot run: the message names the capture file.
  write(capture_doc({{{{"M", 4000000000}, {"N", 4000000000}, {"K", 8}}, 1}}));
  try {
    load_with(f);
    ADD_FAILURE() << "a 4e9 x 4e9 shape was accepted";
  } catch (const kopt::SpecError& e) {
    EXPECT_EQ(std::string(e.what()).find(f.string() + ": a captured shape does not fit the spec: "),
              e.id().size() + 3) << e.what();
    EXPECT_NE(std::string(e.what()).find("captured_M4000000000_N4000000000_K8"), std::string::npos) << e.what();
  }
}

TEST(CaseWeight, CheckedAndRoundTripped) {
  TempDir d;
  json cases = read_json(kSgemm)["cases"];
  auto write = [&](const json& w) {
    json c = cases;
    c[0]["weight"] = w;
    std::ofstream(d / "cases.json", std::ios::trunc) << c.dump();
  };
  write(0);
  expect_error(d / "cases.json", "kopt.spec.119", {"$[0].weight: expected a number greater than 0"});
  write(-1.5);
  expect_error(d / "cases.json", "kopt.spec.119", {"$[0].weight"});
  write("2");
  expect_error(d / "cases.json", "kopt.spec.104", {"$[0].weight: expected a number", "without quotes"});
  write(2.5);
  const kopt::spec::Spec s = load_with(d / "cases.json");
  EXPECT_EQ(s.cases[0].weight, 2.5);
  EXPECT_EQ(s.cases[1].weight, 1);
  // The worker request carries it.
  kopt::eval::EvalRequest rq;
  kopt::eval::CaseSpec cs;
  cs.name = "a";
  cs.weight = 2.5;
  rq.cases.push_back(cs);
  cs.weight = 1;
  rq.cases.push_back(cs);
  const kopt::eval::EvalRequest back = kopt::eval::EvalRequest::from_json(rq.to_json());
  EXPECT_EQ(back.cases[0].weight, 2.5);
  EXPECT_EQ(back.cases[1].weight, 1);
  // Without weights the fingerprint (and so every tuning cache) is as before.
  EXPECT_FALSE(kopt::spec::to_json(kopt::spec::load_spec(kSgemm))["cases"][0].contains("weight"));
}

TEST(WeightedGeomean, IsExpOfTheWeightedMeanOfLogs) {
  EXPECT_DOUBLE_EQ(kopt::model::geomean({2, 8}, {1, 1}), kopt::model::geomean({2, 8}));
  EXPECT_NEAR(kopt::model::geomean({2, 8}, {3, 1}), std::exp((3 * std::log(2) + std::log(8)) / 4), 1e-12);
  EXPECT_NEAR(kopt::model::geomean({2, 8}, {1e6, 1}), 2.0, 1e-4);
  EXPECT_EQ(kopt::model::geomean({}, {}), 0.0);
  EXPECT_THROW(kopt::model::geomean({1, 2}, {1}), std::invalid_argument);
  EXPECT_THROW(kopt::model::geomean({1}, {0}), std::invalid_argument);
  EXPECT_THROW(kopt::model::geomean({1}, {NAN}), std::invalid_argument);
  EXPECT_THROW(kopt::model::geomean({-1}, {1}), std::invalid_argument);
}

// kopt optimize --input-cases <capture>, end to end with the fake worker: the
// run tunes on the captured shapes, and the specialisation's geomeans are
// weighted by the counts.
TEST(CaptureCases, OptimizeTunesOnTheCaptureWithWeightedGeomeans) {
  TempDir d;
  json cap = {{"kopt_capture", 1}, {"kernel", "transpose"}, {"sizes", {"ROWS", "COLS"}}, {"launches", json::array()}};
  cap["launches"].push_back({{"sizes", {{"ROWS", 4096}, {"COLS", 64}}}, {"count", 900}});
  cap["launches"].push_back({{"sizes", {{"ROWS", 64}, {"COLS", 4096}}}, {"count", 90}});
  cap["launches"].push_back({{"sizes", {{"ROWS", 2048}, {"COLS", 2048}}}, {"count", 9}});
  std::ofstream(d / "cap.json") << cap.dump();
  const std::string cmd = std::string(KOPT_CLI) + " optimize --spec " + kTranspose + " --input-cases " +
                          (d / "cap.json").string() + " --arch sm_90 --top 2 --retime-rounds 1 --budget evals=10" +
                          " --results-dir " + (d / "results").string() + " --cache-dir " + (d / "cache").string() +
                          " --worker-command " + KOPT_FAKE_WORKER;
  const Ran r = sh(d.path(), cmd + " >/dev/null");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("application shapes from " + (d / "cap.json").string() +
                       ": 3 shapes of kernel 'transpose' as performance cases, weighted by their 999 launches, "
                       "in place of the spec's 4 performance cases"),
            std::string::npos)
      << r.err;
  const fsys::path run = d / "results" / "run-001";
  const json spec = read_json(run / "spec.json");
  std::map<std::string, double> weight;
  for (const auto& c : spec["cases"])
    if (c["role"] == "performance") weight[c["name"]] = c.value("weight", 1.0);
  EXPECT_EQ(weight, (std::map<std::string, double>{
                        {"captured_ROWS4096_COLS64", 900}, {"captured_ROWS64_COLS4096", 90}, {"captured_ROWS2048_COLS2048", 9}}));
  const json s = read_json(run / "summary.json");
  if (s.contains("specialization") && s["specialization"].contains("geomean_ms")) {
    const json& sp = s["specialization"];
    double lw = 0, ls = 0, w = 0;
    for (const auto& [name, c] : sp["cases"].items()) {
      lw += weight[name] * std::log(c["median_ms"].get<double>());
      ls += weight[name] * std::log(c["single_median_ms"].get<double>());
      w += weight[name];
    }
    EXPECT_NEAR(sp["geomean_ms"].get<double>(), std::exp(lw / w), 1e-9);
    EXPECT_NEAR(sp["single_geomean_ms"].get<double>(), std::exp(ls / w), 1e-9);
  }
  // Every attempt's geomean is the weighted one of its cases (the fake worker
  // weighs as the real one does).
  const json h = read_json(run / "history.json");
  size_t checked = 0;
  for (const auto& a : h["attempts"]) {
    if (!a.contains("geomean_ms") || a["verdict"] != "ok") continue;
    double lw = 0, w = 0;
    for (const auto& c : a["cases"])
      if (c.contains("latency")) {
        lw += weight[c["name"]] * std::log(c["latency"]["median_ms"].get<double>());
        w += weight[c["name"]];
      }
    if (w == 0) continue;
    EXPECT_NEAR(a["geomean_ms"].get<double>(), std::exp(lw / w), 1e-9) << a.dump();
    ++checked;
  }
  EXPECT_GT(checked, 3u);
}

// kopt generate --cases-from: a missing file falls back to the spec's cases
// (and says so); an existing capture is used and --cases-out written.
TEST(CaptureGenerate, CasesFromFallsBackWhileMissingAndWritesTheCases) {
  TempDir d;
  const fsys::path cap = d / "sgemm.capture.json";
  const std::string cmd = std::string(KOPT_CLI) + " generate --spec " + kSgemm + " --name sgemm --out-dir " +
                          (d / "out").string() + " --no-tune --cases-from " + cap.string() + " --cases-out " +
                          (d / "out" / "sgemm.cases.json").string() + " --depfile " + (d / "out" / "sgemm.d").string();
  Ran r = sh(d.path(), cmd);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("--cases-from " + cap.string() + " does not exist (yet): using the spec's cases"), std::string::npos)
      << r.err;
  EXPECT_EQ(read_json(d / "out" / "sgemm.cases.json")["cases"], kopt::spec::to_json(kopt::spec::load_spec(kSgemm))["cases"]);
  EXPECT_EQ(slurp(d / "out" / "sgemm.d").find(cap.string()), std::string::npos) << "a missing file is no dependency";
  std::ofstream(cap) << capture_doc({{{{"M", 96}, {"N", 48}, {"K", 24}}, 7}}).dump();
  r = sh(d.path(), cmd);
  ASSERT_EQ(r.code, 0) << r.err;
  const json cases = read_json(d / "out" / "sgemm.cases.json")["cases"];
  EXPECT_EQ(cases.back()["name"], "captured_M96_N48_K24");
  EXPECT_EQ(cases.back()["weight"], 7.0);
  // Not a dependency even now (optimize_kernel() follows it with a stamp of
  // its content: under Make a file that goes away would stay a dependency).
  EXPECT_EQ(slurp(d / "out" / "sgemm.d").find(cap.string()), std::string::npos);
  // The header it wrote records launches.
  EXPECT_NE(slurp(d / "out" / "sgemm_launch.h").find("capture::record({{M, N, K}})"), std::string::npos);
  // --cases-from with --input-cases: one source of cases.
  r = sh(d.path(), cmd + " --input-cases " + cap.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("kopt.cli.027"), std::string::npos) << r.err;
}

}  // namespace

namespace {

// kopt generate tuning on a capture (the fake worker as the GPU): the cache
// entry records the spec's own fingerprint too ("base_spec_hash"), a newer
// capture replaces that entry instead of adding one, and a build without a
// GPU whose capture changed uses it (said), not the initial kernel.
TEST(CaptureGenerate, CacheEntriesOfCapturesReplaceEachOtherAndServeOtherCaptures) {
  TempDir d;
  auto capture = [&](const std::string& name, int64_t rows) {
    json c = {{"kopt_capture", 1}, {"kernel", "transpose"}, {"sizes", {"ROWS", "COLS"}}, {"launches", json::array()}};
    c["launches"].push_back({{"sizes", {{"ROWS", rows}, {"COLS", 256}}}, {"count", 5}});
    std::ofstream(d / name) << c.dump();
    return d / name;
  };
  const fsys::path cache = d / "cache.json";
  auto generate = [&](const fsys::path& cap, const std::string& extra) {
    return sh(d.path(), std::string(KOPT_CLI) + " generate --spec " + kTranspose + " --name t --out-dir " +
                            (d / "out").string() + " --cases-from " + cap.string() + " --cache-file " + cache.string() +
                            " --cache-dir " + (d / "nvrtc").string() + " --budget evals=3 --no-specialize " + extra +
                            " >/dev/null");
  };
  Ran r = generate(capture("a.json", 1024), std::string("--worker-command ") + KOPT_FAKE_WORKER);
  ASSERT_EQ(r.code, 0) << r.err;
  json c = read_json(cache);
  ASSERT_EQ(c["entries"].size(), 1u) << c.dump(1);
  const std::string base = kopt::store::spec_fingerprint(kopt::spec::load_spec(kTranspose));
  EXPECT_EQ(c["entries"][0]["base_spec_hash"], base);
  EXPECT_EQ(c["entries"][0]["spec_hash"], kopt::store::spec_fingerprint(load_with(d / "a.json", kTranspose)));
  EXPECT_NE(c["entries"][0]["spec_hash"], base);
  r = generate(capture("b.json", 2048), std::string("--worker-command ") + KOPT_FAKE_WORKER);
  ASSERT_EQ(r.code, 0) << r.err;
  c = read_json(cache);
  ASSERT_EQ(c["entries"].size(), 1u) << "the entry of the earlier capture is replaced: " << c.dump(1);
  EXPECT_EQ(c["entries"][0]["spec_hash"], kopt::store::spec_fingerprint(load_with(d / "b.json", kTranspose)));
  // No GPU (--no-tune) and a capture nothing was tuned on: the entry of the
  // same spec, with a note; no stale-entry warning.
  r = generate(capture("c.json", 4096), "--no-tune");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("from the tuning cache cache.json, tuned on fake device"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tuned on other cases than c.json"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("stale"), std::string::npos) << r.err;
  EXPECT_EQ(read_json(d / "out" / "t.json")["source_of_kernel"].get<std::string>().find("initial kernel"),
            std::string::npos);
}

}  // namespace
