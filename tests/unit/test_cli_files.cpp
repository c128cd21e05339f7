// Files the kopt command line reads, given carelessly or with hostile intent:
// device files, folders, FIFOs, bad --input-cases, damaged run folders. Every
// case must exit 2 (usage or spec error) with a first stderr line that names
// the option or the file, and must never read a device until memory runs out.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "temp_dir.h"

namespace {

namespace fsys = std::filesystem;
using kopt::test::TempDir;
using nlohmann::json;

using kopt::test::CliRun;

/// Runs kopt with a memory limit (a regression that reads /dev/zero ends
/// with bad_alloc instead of taking the machine down) and a time limit.
CliRun run(const std::string& args) { return kopt::test::run_kopt(args, "ulimit -v 4000000; timeout 60", " </dev/null"); }

const std::string kSpec = std::string(KOPT_SOURCE_DIR) + "/templates/transpose/transpose.json";

void expect_usage_error(const CliRun& r, const std::vector<std::string>& needles) {
  EXPECT_EQ(r.code, 2) << r.err;
  const std::string first = r.first_err_line();
  for (const std::string& n : needles) EXPECT_NE(first.find(n), std::string::npos) << "'" << n << "' not in: " << first;
  EXPECT_EQ(r.err.find("bad_alloc"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("json.exception"), std::string::npos) << r.err;
}

TEST(CliFiles, DeviceFilesAndFoldersAreRefusedByEveryFileOption) {
  // Before: each of these read /dev/zero until std::bad_alloc.
  TempDir d;
  const std::string common = " --arch sm_90 --quiet --results-dir " + (d / "results").string();
  for (const char* bad : {"/dev/zero", "/dev/urandom"}) {
    expect_usage_error(run(std::string("evaluate --spec ") + bad), {"--spec", bad, "not a regular file"});
    expect_usage_error(run("evaluate --spec " + kSpec + " --kernel " + bad), {"--kernel", bad});
    expect_usage_error(run(std::string("optimize --spec ") + bad + common), {"--spec", bad});
    expect_usage_error(run("optimize --spec " + kSpec + " --initial-kernel " + bad + common),
                       {"--initial-kernel", bad});
    expect_usage_error(run("optimize --spec " + kSpec + " --input-cases " + bad + common), {"--input-cases", bad});
    expect_usage_error(run("optimize --spec " + kSpec + " --template " + bad + common), {"--template", bad});
    expect_usage_error(run("optimize --spec " + kSpec + " --reference " + bad + common), {"--reference", bad});
  }
  expect_usage_error(run("evaluate --spec " + d.path().string()), {"--spec", "a directory, not a file"});
  ASSERT_EQ(::mkfifo((d / "fifo.json").c_str(), 0600), 0);
  expect_usage_error(run("evaluate --spec " + (d / "fifo.json").string()), {"--spec", "named pipe"});
  expect_usage_error(run("evaluate --spec " + (d / "missing.json").string()), {"--spec", "not found"});
}

TEST(CliFiles, ATuningCacheThatIsNotAFileIsNamed) {
  TempDir d;
  // generate reads --cache-file before anything else it reads from disk.
  const CliRun r = run("generate --spec " + kSpec + " --name t --out-dir " + (d / "out").string() +
                       " --cache-file /dev/zero --no-tune");
  expect_usage_error(r, {"/dev/zero", "not a regular file"});
}

TEST(CliFiles, BadInputCasesAreBlamedOnThatFile) {
  // Before: errors in the cases of an --input-cases file named the spec.
  TempDir d;
  const std::string common = " --arch sm_90 --quiet --results-dir " + (d / "results").string();
  const fsys::path cases = d / "cases.json";
  std::ofstream(cases) << R"({"cases": [{"name": "a", "sizes": {"ROWS": -3, "COLS": 8}}]})";
  CliRun r = run("optimize --spec " + kSpec + " --input-cases " + cases.string() + common);
  expect_usage_error(r, {cases.string() + ": $.cases[0].sizes.ROWS"});
  EXPECT_EQ(r.first_err_line().find("transpose.json"), std::string::npos) << r.err;

  std::ofstream(cases, std::ios::trunc) << R"([{"name": "a", "sizes": {"ROWS": 8, "ROWS": 8}}])";
  r = run("optimize --spec " + kSpec + " --input-cases " + cases.string() + common);
  expect_usage_error(r, {cases.string() + ": $[0].sizes: duplicate key 'ROWS'"});

  std::ofstream(cases, std::ios::trunc) << R"({"cases": [], "extra": 1})";
  r = run("optimize --spec " + kSpec + " --input-cases " + cases.string() + common);
  expect_usage_error(r, {cases.string() + ": $.extra: unknown key 'extra'"});

  std::ofstream(cases, std::ios::trunc) << "[{\"name\": \"a\", \"sizes\": {\"ROWS\": 1e999}}]";
  r = run("optimize --spec " + kSpec + " --input-cases " + cases.string() + common);
  expect_usage_error(r, {cases.string() + ": $[0].sizes.ROWS: the number 1e999 is out of range"});
}

TEST(CliFiles, SpecErrorsNameFileAndJsonPath) {
  TempDir d;
  json spec = json::parse(std::ifstream(kSpec));
  // Paths inside the spec stay valid from the copy's folder.
  const std::string dir = fsys::path(kSpec).parent_path().string();
  for (const char* k : {"initial", "template", "reference"})
    if (spec.contains(k) && spec[k].contains("source")) spec[k]["source"] = dir + "/" + spec[k]["source"].get<std::string>();
  std::string text = spec.dump(2);
  text.insert(text.find('{') + 1, "\n  \"name\": \"dup\",");
  std::ofstream(d / "dup.json") << text;
  expect_usage_error(run("evaluate --arch sm_90 --spec " + (d / "dup.json").string()),
                     {(d / "dup.json").string() + ": $: duplicate key 'name'"});
}

TEST(CliFiles, DamagedSummaryOnResumeAndGenerate) {
  TempDir d;
  const std::string base = std::string(" --spec ") + kSpec + " --arch sm_90 --quiet --top 1 --retime-rounds 1" +
                           " --results-dir " + (d / "results").string() + " --cache-dir " +
                           (d / "cache").string() + " --worker-command " + KOPT_FAKE_WORKER;
  CliRun r = run("optimize" + base + " --budget evals=2");
  ASSERT_EQ(r.code, 0) << r.err;
  const fsys::path rd = d / "results" / "run-001";
  ASSERT_TRUE(fsys::exists(rd / "summary.json"));

  // Garbage in summary.json: a resume rebuilds it from the history.
  std::ofstream(rd / "summary.json", std::ios::trunc) << "{\"attempts\": 1e999, garbage";
  r = run("optimize" + base + " --budget evals=3 --resume " + rd.string());
  EXPECT_EQ(r.code, 0) << r.err;
  json s;
  ASSERT_NO_THROW(s = json::parse(std::ifstream(rd / "summary.json")));
  EXPECT_TRUE(s.is_object());

  // generate --from-run names the file and the JSON path of what is wrong.
  s["final_best"]["label"] = 5;
  std::ofstream(rd / "summary.json", std::ios::trunc) << s.dump(2);
  r = run("generate --spec " + kSpec + " --name t --out-dir " + (d / "gen").string() + " --from-run " + rd.string());
  expect_usage_error(r, {(rd / "summary.json").string() + ": $.final_best.label: expected a string"});

  std::ofstream(rd / "summary.json", std::ios::trunc) << "{\"a\": 1, \"a\": 2}";
  r = run("generate --spec " + kSpec + " --name t --out-dir " + (d / "gen").string() + " --from-run " + rd.string());
  expect_usage_error(r, {(rd / "summary.json").string() + ": $: duplicate key 'a'"});

  // A variant file outside the run folder is refused.
  s["final_best"]["label"] = "x";
  s["specialization"] = {{"variants", {{{"file", "../../etc/passwd"}}, {{"file", "best.cu"}}}}};
  std::ofstream(rd / "summary.json", std::ios::trunc) << s.dump(2);
  r = run("generate --spec " + kSpec + " --name t --out-dir " + (d / "gen").string() + " --from-run " + rd.string());
  expect_usage_error(r, {"$.specialization.variants[0].file", "inside the run folder"});
}

TEST(CliFiles, WorkerRequestsAreBoundedAndChecked) {
  // The worker reads JSON lines; a line that never ends must not exhaust memory.
  const std::string w = std::string(KOPT_CLI) + " worker";
  auto run_worker = [&](const std::string& input_cmd) {
    const std::string cmd = "ulimit -v 4000000; " + input_cmd + " | timeout 60 " + w + " 2>/dev/null";
    FILE* p = ::popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int status = ::pclose(p);
    return std::make_pair(WIFEXITED(status) ? WEXITSTATUS(status) : -1, out);
  };
  auto [code, out] = run_worker("head -c 80000000 /dev/zero");
  EXPECT_EQ(code, 3) << out;
  EXPECT_NE(out.find("longer than"), std::string::npos) << out;
  std::tie(code, out) = run_worker(R"(printf '%s\n' '{"op": 5}' '[1]' '{"op":"evaluate","id":"x"}' '{"op":"evaluate","id":7,"x":1e999}' '{"op":"evaluate","id":3}' '{"op":"bogus","id":9}' '{"op":"shutdown"}')");
  EXPECT_EQ(code, 0) << out;
  std::istringstream lines(out);
  std::string line;
  int errors = 0;
  while (std::getline(lines, line)) {
    const json reply = json::parse(line);
    EXPECT_EQ(reply["reply"], "error") << line;
    EXPECT_EQ(reply["error"].get<std::string>().find("json.exception"), std::string::npos) << line;
    ++errors;
  }
  EXPECT_EQ(errors, 6) << out;
  EXPECT_NE(out.find("the number 1e999 is out of range"), std::string::npos) << out;
  EXPECT_NE(out.find("\"id\":3"), std::string::npos) << out;
  EXPECT_NE(out.find("\"id\":9"), std::string::npos) << out;  // an unknown op's error carries its id
}

}  // namespace
