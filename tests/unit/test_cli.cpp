// The kopt command line, run as a user would, on this machine. On a machine
// without a GPU the GPU-dependent paths must say so and exit 77.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "eval/supervisor.h"
#include "cli_run.h"
#include "temp_dir.h"
#include "util/error.h"
#include "util/fs.h"

namespace {

namespace fsys = std::filesystem;

using kopt::test::CliRun;

/// Runs `kopt <args>` through the shell, with `env` ("NAME=VALUE ...") in front.
CliRun run(const std::string& args, const std::string& env = "") { return kopt::test::run_kopt(args, env); }

bool has_gpu() { return run("devices").code == 0; }

const std::string kSgemmSpec = std::string(KOPT_SOURCE_DIR) + "/templates/sgemm/sgemm.json";

TEST(Cli, HelpAndVersion) {
  CliRun r = run("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("evaluate"), std::string::npos);
  EXPECT_NE(r.out.find("77"), std::string::npos);  // exit codes are documented
  r = run("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("kopt "), std::string::npos);
}

TEST(Cli, UnknownSubcommandIsUsageError) {
  EXPECT_EQ(run("frobnicate").code, 2);
  EXPECT_EQ(run("evaluate").code, 2);  // --spec is required
}

TEST(Cli, TyposGetTheClosestName) {
  CliRun r = run("optimze --spec x.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.first_err_line().find("[kopt.cli.011] unknown subcommand 'optimze' (did you mean 'optimize'?)"),
            std::string::npos)
      << r.err;
  // A subcommand that does not exist is an error even with --help (CLI11
  // alone would print the general help and exit 0).
  r = run("frobnicate --help");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("unknown subcommand 'frobnicate'"), std::string::npos) << r.err;
  // An unknown option is named as written, with the closest known one.
  r = run("optimize --spec " + kSgemmSpec + " --budgte 40");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.first_err_line().find("unknown option '--budgte' (did you mean '--budget'?)"), std::string::npos)
      << r.err;
  r = run("optimize --spec " + kSgemmSpec + " --budget 40 stray");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.first_err_line().find("unexpected argument 'stray'"), std::string::npos) << r.err;
  // The options before the subcommand get the closest name too.
  r = run("--verison");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.first_err_line().find("[kopt.cli.011] unknown option '--verison' (did you mean '--version'?)"),
            std::string::npos)
      << r.err;
  // A long option with one dash is named, not the option it leaves missing.
  r = run("evaluate -spec " + kSgemmSpec);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.first_err_line().find(
                "[kopt.cli.011] '-spec' is not an option: long options take two dashes (did you mean '--spec'?)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("is required"), std::string::npos) << r.err;
  r = run("-version");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.first_err_line().find("'-version' is not an option: long options take two dashes (did you mean "
                                    "'--version'?)"),
            std::string::npos)
      << r.err;
  // A required option that is simply missing is still said to be.
  r = run("evaluate --arch sm_90");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.first_err_line().find("[kopt.cli.012] --spec is required"), std::string::npos) << r.err;
}

TEST(Cli, HelpIsWrappedAtOneHundredColumnsWithoutFlagSyntax) {
  for (const char* sub : {"", "devices", "evaluate", "optimize", "generate", "bench", "export", "report", "replay",
                          "worker"}) {
    const CliRun r = run(std::string(sub) + " --help");
    ASSERT_EQ(r.code, 0) << sub;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      EXPECT_LE(line.size(), 100u) << "kopt " << sub << " --help: " << line;
      EXPECT_EQ(line.find("{false}"), std::string::npos) << "kopt " << sub << " --help: " << line;
    }
  }
}

// --budget's help says what a bare number means (docs/cli.md too).
TEST(Cli, BudgetHelpSaysWhatABareNumberIs) {
  for (const char* sub : {"optimize", "generate"}) {
    const CliRun r = run(std::string(sub) + " --help");
    ASSERT_EQ(r.code, 0) << sub;
    std::string flat;  // the help with its line breaks and indentation as single spaces
    for (char c : r.out)
      if (!(c == ' ' || c == '\n') || (!flat.empty() && flat.back() != ' ')) flat += c == '\n' ? ' ' : c;
    EXPECT_NE(flat.find("a bare number N means evals=N and Mm minutes=M, e.g. 40 or 40,10m"), std::string::npos)
        << sub << ": " << r.out;
  }
}

TEST(Cli, DevicesSaysNoDeviceClearly) {
  CliRun r = run("devices");
  if (r.code == 0) GTEST_SKIP() << "a CUDA device is present; this test covers machines without one";
  EXPECT_EQ(r.code, 77);
  EXPECT_NE(r.err.find("no CUDA device found"), std::string::npos) << r.err;
}

TEST(Cli, EvaluateWithoutGpuCompilesForGivenArchAndExits77) {
  if (has_gpu()) GTEST_SKIP() << "a CUDA device is present";
  const fsys::path cache = fsys::temp_directory_path() / ("kopt-cli-cache-" + std::to_string(::getpid()));
  CliRun r = run("evaluate --spec " + kSgemmSpec + " --arch sm_90 --cache-dir " + cache.string());
  EXPECT_EQ(r.code, 77) << r.err;
  EXPECT_NE(r.err.find("no CUDA device found"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("need a GPU"), std::string::npos) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_TRUE(j[0]["compiled"].get<bool>()) << j.dump(2);
  fsys::remove_all(cache);
}

TEST(Cli, EvaluateWithoutGpuReportsCompileErrors) {
  if (has_gpu()) GTEST_SKIP() << "a CUDA device is present";
  const fsys::path dir = fsys::temp_directory_path() / ("kopt-cli-bad-" + std::to_string(::getpid()));
  fsys::create_directories(dir);
  std::ofstream(dir / "bad.cu") << "// kopt:entry broken\nextern \"C\" __global__ void broken( {}\n";
  CliRun r = run("evaluate --spec " + kSgemmSpec + " --arch sm_90 --kernel " + (dir / "bad.cu").string() +
              " --cache-dir " + (dir / "cache").string());
  EXPECT_EQ(r.code, 1);  // rejected: no GPU is needed to know that
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j[0]["verdict"], "compile_error");
  EXPECT_FALSE(j[0]["compile_log"].get<std::string>().empty());
  fsys::remove_all(dir);
}

TEST(Cli, BadSpecIsExit2WithFileName) {
  const fsys::path dir = fsys::temp_directory_path() / ("kopt-cli-spec-" + std::to_string(::getpid()));
  fsys::create_directories(dir);
  std::ofstream(dir / "broken.json") << "{ \"name\": \"x\", ";
  CliRun r = run("evaluate --spec " + (dir / "broken.json").string() + " --arch sm_90");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("broken.json"), std::string::npos) << r.err;
  fsys::remove_all(dir);
}

TEST(Cli, BadParamsAreUsageErrors) {
  CliRun r = run("evaluate --spec " + kSgemmSpec + " --arch sm_90 --params BM");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("NAME=VALUE"), std::string::npos) << r.err;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

/// `kopt <args>` must be a usage error (exit 2) whose message is one line
/// that names `option`.
void expect_usage_error(const std::string& args, const std::string& option) {
  const CliRun r = run(args);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
  EXPECT_NE(first_line(r.err).find(option), std::string::npos) << args << "\n" << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << args << "\n" << r.err;
}

const std::string kTransposeSpec = std::string(KOPT_SOURCE_DIR) + "/templates/transpose/transpose.json";

/// optimize on the transpose template with the fake worker standing in for the GPU.
std::string fake_optimize(const kopt::test::TempDir& d, const std::string& extra) {
  return "optimize --spec " + kTransposeSpec + " --arch sm_90 --results-dir " + (d.path() / "results").string() +
         " --cache-dir " + (d.path() / "cache").string() + " --worker-command " + KOPT_FAKE_WORKER + " " + extra;
}

TEST(Cli, CompileThreadsOutsideOneToTheCapAreRejectedOrLowered) {
  const std::string opt = "optimize --spec " + kSgemmSpec + " --compile-threads ";
  for (const char* bad : {"0", "-5", "abc", "1.5", "''", "99999999999999999999", "1e3", "0x10", "' 4'"})
    expect_usage_error(opt + bad, "--compile-threads");
  // A value above 4x the hardware threads is lowered to that, with a warning.
  kopt::test::TempDir d("kopt-cli-threads");
  const CliRun r = run(fake_optimize(d, "--quiet --budget evals=2 --top 1 --compile-threads 100000"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(first_line(r.err).find("warning: --compile-threads 100000"), std::string::npos) << r.err;
}

// The fake worker's timings are made up: every line with a latency, a ratio,
// minutes or re-timing rounds says so, and so does `kopt report` of its run
// folder.
TEST(Cli, SimulatedTimingsAreSaidToBeMadeUp) {
  kopt::test::TempDir d("kopt-cli-simulated");
  CliRun r = run(fake_optimize(d, "--budget evals=3 --top 2 --retime-rounds 1"));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::regex timing(R"([0-9] ms\b|[0-9] min\b|[0-9] rounds\b|[0-9]x (cuBLAS|ref|the ))");
  int timed_lines = 0;
  std::istringstream lines(r.err);
  for (std::string line; std::getline(lines, line);) {
    if (!std::regex_search(line, timing)) continue;
    ++timed_lines;
    EXPECT_NE(line.find("simulated (fake worker): the timings are made up"), std::string::npos) << line;
  }
  EXPECT_GE(timed_lines, 7) << r.err;  // the initial kernel, 3 progress lines, re-timing, the totals, the best
  // The run folder's device.json says so; `kopt report` of it too.
  const fsys::path run_dir = d.path() / "results" / "run-001";
  EXPECT_NE(kopt::fs::read_file(run_dir / "device.json").find("\"simulated\": true"), std::string::npos);
  fsys::remove(run_dir / "report.html");
  r = run("report " + run_dir.string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, (run_dir / "report.html").string() + "\n");
  EXPECT_NE(r.err.find("kopt: simulated (fake worker): the timings are made up"), std::string::npos) << r.err;
  const std::string html = kopt::fs::read_file(run_dir / "report.html");
  EXPECT_NE(html.find("id=\"simulated\""), std::string::npos);
  // heatmap.svg says so in its title and under its heading; every tooltip
  // (<title>) of either file that shows a time says so.
  const std::string svg = kopt::fs::read_file(run_dir / "heatmap.svg");
  EXPECT_NE(svg.find("data-simulated=\"true\""), std::string::npos);
  EXPECT_NE(svg.find("<text class=\"simulated\""), std::string::npos);
  const std::regex title("<title>([^<]*)</title>"), time(R"([0-9] ms\b)");
  int timed_titles = 0;
  for (const std::string* text : {&html, &svg})
    for (std::sregex_iterator it(text->begin(), text->end(), title), end; it != end; ++it) {
      const std::string t = (*it)[1].str();
      if (!std::regex_search(t, time)) continue;
      ++timed_titles;
      EXPECT_NE(t.find("simulated"), std::string::npos) << t;
    }
  EXPECT_GE(timed_titles, 10);  // heatmap cells (twice: the file and the report), progress points, shapes
}

// `kopt report` of what is not a complete run folder: the folder or the file, exit 2.
TEST(Cli, ReportNamesAMissingOrDamagedRunFolder) {
  kopt::test::TempDir d("kopt-cli-report");
  CliRun r = run("report " + (d.path() / "run-009").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.first_err_line().find("[kopt.run.901] " + (d.path() / "run-009").string() + " does not exist"),
            std::string::npos) << r.err;
  r = run("report " + d.path().string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.first_err_line().find("is not a run folder: run.json is missing"), std::string::npos) << r.err;
  r = run("report");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("run_dir"), std::string::npos) << r.err;
  // A damaged history: the file and the attempt.
  r = run(fake_optimize(d, "--quiet --budget evals=2 --top 1"));
  ASSERT_EQ(r.code, 0) << r.err;
  const fsys::path run_dir = d.path() / "results" / "run-001";
  std::string history = kopt::fs::read_file(run_dir / "history.json");
  history.replace(history.find("\"index\": 2"), 11, "\"index\": \"2\"");
  kopt::fs::write_file_atomic(run_dir / "history.json", history);
  r = run("report " + run_dir.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.first_err_line().find("history.json"), std::string::npos) << r.err;
  EXPECT_NE(r.first_err_line().find("attempts[1]"), std::string::npos) << r.err;
  // --out a folder: refused before anything is written.
  r = run("report " + run_dir.string() + " --out " + d.path().string());
  EXPECT_EQ(r.code, 2);
}

TEST(Cli, AResultsFolderWhoseNameIsNotUtf8Works) {
  // The run folder's JSON files name it with U+FFFD in place of the byte;
  // the run itself is not refused (it was: a raw json exception, exit 3,
  // and an empty run-001 left behind).
  kopt::test::TempDir d("kopt-cli-utf8");
  const fsys::path results = d.path() / "r\xff";
  const CliRun r = run("optimize --spec " + kTransposeSpec + " --arch sm_90 --results-dir '" + results.string() +
                       "' --cache-dir " + (d.path() / "cache").string() + " --worker-command " + KOPT_FAKE_WORKER +
                       " --quiet --budget evals=2 --top 1");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fsys::exists(results / "run-001" / "summary.json")) << r.err;
}

TEST(Cli, NumericOptionsRejectNegativeNonFiniteAndJunk) {
  const std::string opt = "optimize --spec " + kSgemmSpec + " ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--seed -1", "--seed"},
      {"--seed 1e3", "--seed"},
      {"--seed ''", "--seed"},
      {"--seed 18446744073709551616", "--seed"},
      {"--top -1", "--top"},
      {"--top 0", "--top"},
      {"--top 101", "--top"},
      {"--top 2.5", "--top"},
      {"--retime-rounds -1", "--retime-rounds"},
      {"--retime-rounds 100000000", "--retime-rounds"},
      {"--specialize-threshold nan", "--specialize-threshold"},
      {"--specialize-threshold inf", "--specialize-threshold"},
      {"--specialize-threshold -0.1", "--specialize-threshold"},
      {"--specialize-threshold 1", "--specialize-threshold"},
      {"--max-iterations -3", "--max-iterations"},
      {"--max-iterations 0", "--max-iterations"},
      {"--device -1", "--device"},
      {"--device gpu0", "--device"},
      {"--max-repairs -1", "--max-repairs"},
      {"--token-budget -1", "--token-budget"},
      {"--llm-timeout nan", "--llm-timeout"},
      {"--llm-timeout -1", "--llm-timeout"},
      {"--llm-timeout 0", "--llm-timeout"},
      {"--llm-max-output-tokens 0", "--llm-max-output-tokens"},
  };
  for (const auto& [args, option] : cases) expect_usage_error(opt + args, option);
  expect_usage_error("evaluate --spec " + kSgemmSpec + " --device -1", "--device");
  expect_usage_error("worker --device -7", "--device");
  expect_usage_error("generate --spec " + kSgemmSpec + " --name k --out-dir x --seed -1", "--seed");
  expect_usage_error("bench --spec " + kSgemmSpec + " --kernel " + kSgemmSpec + " --tolerance nan", "--tolerance");
  expect_usage_error("bench --spec " + kSgemmSpec + " --kernel " + kSgemmSpec + " --recorded-ms inf", "--recorded-ms");
}

TEST(Cli, BudgetRejectsEveryBadItem) {
  const std::string opt = "optimize --spec " + kSgemmSpec + " --budget ";
  for (const char* bad : {"''", "' '", "minutes=nan", "minutes=inf", "minutes=-1", "minutes=0", "minutes=1e999",
                          "evals=-1", "evals=0", "evals=abc", "evals=1.5", "patience=-5", "patience=0", "foo=3",
                          "evals=5,,minutes=1", "evals=5,", "evals=5,evals=6", "nanm", "-3", "=5"})
    expect_usage_error(opt + bad, "--budget");
  const CliRun r = run(opt + "evals=-1");
  EXPECT_EQ(r.err.find("budget is zero"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("evals=-1"), std::string::npos) << r.err;
  const CliRun colon = run(opt + "evals:20");
  EXPECT_EQ(colon.code, 2);
  EXPECT_NE(colon.first_err_line().find(
                "[kopt.cli.008] --budget: 'evals:20': an item is key=value (did you mean 'evals=20'?)"),
            std::string::npos)
      << colon.err;
  expect_usage_error("generate --spec " + kSgemmSpec + " --name k --out-dir x --budget minutes=nan", "--budget");
}

// turns and tokens are the LLM agent's items: the search refuses them
// rather than ignore them; they parse like every item.
TEST(Cli, BudgetTurnsAndTokensAreTheAgentsItems) {
  kopt::test::TempDir d;
  const CliRun r = run(fake_optimize(d, "--budget evals=4,turns=3"));
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(first_line(r.err).find("[kopt.opt.008] --budget evals=4,turns=3: turns and tokens count the LLM agent's"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(d.path() / "results" / "run-001"));
  const std::string opt = "optimize --spec " + kSgemmSpec + " --budget ";
  for (const char* bad : {"turns=0", "turns=x", "tokens=-1", "tokens=1e3", "turns=2,turns=3"})
    expect_usage_error(opt + bad, "--budget");
}

TEST(Cli, EmptyNamesAndUnknownChoicesAreUsageErrors) {
  const std::string eval = "evaluate --spec " + kSgemmSpec + " --arch sm_90 ";
  expect_usage_error(eval + "--entry ''", "--entry");
  expect_usage_error(eval + "--entry ' '", "--entry");
  expect_usage_error(eval + "--cases ''", "--cases");
  expect_usage_error(eval + "--cases no_such_case", "--cases");
  expect_usage_error(eval + "--json ''", "--json");
  expect_usage_error(eval + "--cache-dir ''", "--cache-dir");
  const std::string opt = "optimize --spec " + kSgemmSpec + " ";
  expect_usage_error(opt + "--strategy bogus", "--strategy");
  expect_usage_error(opt + "--strategy ''", "--strategy");
  expect_usage_error(opt + "--results-dir ''", "--results-dir");
  expect_usage_error(opt + "--llm-model ''", "--llm-model");
  expect_usage_error(opt + "--llm-api grpc", "--llm-api");
  expect_usage_error(opt + "--worker-command ''", "--worker-command");
  const std::string gen = "generate --spec " + kSgemmSpec + " ";
  expect_usage_error(gen + "--name k --out-dir x --strategy bogus", "--strategy");
  expect_usage_error(gen + "--name '' --out-dir x", "--name");
  expect_usage_error(gen + "--name k --out-dir ''", "--out-dir");
  expect_usage_error(eval + "--entry 'two words'", "--entry");
  expect_usage_error(eval + "--entry '1k'", "--entry");
  expect_usage_error("frobnicate", "frobnicate");
  expect_usage_error("--bogus", "--bogus");
  expect_usage_error("", "subcommand");
}

TEST(Cli, InputFilesAreCheckedWhenTheCommandLineIsRead) {
  kopt::test::TempDir d("kopt-cli-inputs");
  std::ofstream(d / "file") << "x";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {(d / "nope.json").string(), "not found"},
      {d.path().string(), "a directory"},
      {"/dev/zero", "not a regular file"},
      {(d / "file" / "x.json").string(), "not a folder"},
      {"''", "empty"},
  };
  for (const auto& [path, why] : cases) {
    for (const std::string& args : {"evaluate --spec " + path, "evaluate --spec " + kSgemmSpec + " --kernel " + path,
                                    "optimize --initial-kernel " + path, "bench --spec " + kSgemmSpec + " --kernel " + path,
                                    "generate --name k --out-dir x --spec " + path}) {
      const CliRun r = run(args);
      EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
      EXPECT_NE(first_line(r.err).find(why), std::string::npos) << args << "\n" << r.err;
    }
  }
  expect_usage_error("optimize --spec " + kSgemmSpec + " --resume " + (d / "file").string(), "--resume");
  expect_usage_error("generate --spec " + kSgemmSpec + " --name k --out-dir x --from-run /dev/null", "--from-run");
}

TEST(Cli, BadArchIsAUsageErrorForEveryCommand) {
  for (const char* arch : {"sm_999", "sm_0", "compute_90", "garbage", "''", "sm_90x", "SM_90"}) {
    expect_usage_error("evaluate --spec " + kSgemmSpec + " --arch " + arch, "--arch");
    expect_usage_error("optimize --spec " + kSgemmSpec + " --arch " + arch, "--arch");
    expect_usage_error("bench --spec " + kSgemmSpec + " --kernel " + kSgemmSpec + " --arch " + arch, "--arch");
    expect_usage_error("generate --spec " + kSgemmSpec + " --name k --out-dir x --arch " + arch, "--arch");
  }
  const CliRun r = run("optimize --spec " + kSgemmSpec + " --arch compute_90");
  EXPECT_NE(r.err.find("sm_XY"), std::string::npos) << r.err;  // says what is accepted
}

TEST(Cli, ParamsAreCheckedAgainstTheSpec) {
  const std::string eval = "evaluate --spec " + kSgemmSpec + " --arch sm_90 --params ";
  for (const char* bad : {"'B M=3'", "BM", "=3", "BM=", "BM=abc", "BM=1.5", "BM=0x10", "'BM= 64'", "BM=64,BM=128",
                          "BM=64,,BN=64", "THREADZ=256", "bm=64", "1BM=64"})
    expect_usage_error(eval + bad, "--params");
  const CliRun r = run(eval + "THREADZ=256");
  EXPECT_NE(r.err.find("BM"), std::string::npos) << "lists the spec's parameters: " << r.err;
}

TEST(Cli, ParamsOutsideTheSpecsValuesAreEvaluatedWithAWarning) {
  kopt::test::TempDir d("kopt-cli-params");
  const CliRun r = run("evaluate --spec " + kSgemmSpec + " --arch sm_90 --no-time --quiet --cache-dir " +
                       (d.path() / "cache").string() + " --kernel " + std::string(KOPT_SOURCE_DIR) +
                       "/templates/sgemm/naive.cu --params BM=100");  // (without --kernel: the template, which needs all)
  EXPECT_NE(first_line(r.err).find("warning: --params BM=100 is not one of the spec's values"), std::string::npos)
      << r.err;
  EXPECT_TRUE(r.code == 77 || r.code == 0 || r.code == 1) << r.err;
}

TEST(Cli, BenchChecksEveryArgumentBeforeItsNoGpuExit) {
  kopt::test::TempDir d("kopt-cli-bench");
  std::ofstream(d / "garbage.json") << "{ not json";
  std::ofstream(d / "noentry.cu") << "__global__ void k() {}\n";
  const std::string kernel = std::string(KOPT_SOURCE_DIR) + "/templates/sgemm/naive.cu";
  const std::string bench = "bench --spec " + kSgemmSpec + " --kernel " + kernel + " ";
  expect_usage_error(bench + "--cache-file " + (d / "garbage.json").string(), "garbage.json");
  expect_usage_error(bench + "--cache-file " + d.path().string(), "--cache-file");
  expect_usage_error(bench + "--tolerance -50", "--tolerance");
  expect_usage_error(bench + "--tolerance 0", "--tolerance");
  expect_usage_error(bench + "--frobnicate", "--frobnicate");
  expect_usage_error(bench + "positional", "positional");
  expect_usage_error(bench + "--benchmark_format=bogus", "--benchmark_format");
  expect_usage_error(bench + "--benchmark_bogus=1", "--benchmark_bogus");
  expect_usage_error(bench + "--benchmark_repetitions=abc", "--benchmark_repetitions");
  expect_usage_error(bench + "--benchmark_out=" + d.path().string(), "--benchmark_out");
  expect_usage_error("bench --spec " + kSgemmSpec + " --kernel " + (d / "noentry.cu").string(), "--kernel");
  if (has_gpu()) return;
  // Good arguments: skipped for want of a GPU; a cache file that does not exist yet is only a warning.
  const CliRun r = run(bench + "--cache-file " + (d / "later.json").string() + " --benchmark_format=json");
  EXPECT_EQ(r.code, 77) << r.err;
}

TEST(Cli, EvaluateChecksOutputPathsBeforeTheWork) {
  kopt::test::TempDir d("kopt-cli-json");
  std::ofstream(d / "file") << "x";
  const std::string eval = "evaluate --spec " + kSgemmSpec + " --arch sm_90 --cache-dir " + (d / "cache").string();
  expect_usage_error(eval + " --json " + d.path().string(), "--json");
  expect_usage_error(eval + " --json " + (d / "file" / "out.json").string(), "--json");
  expect_usage_error("evaluate --spec " + kSgemmSpec + " --arch sm_90 --cache-dir " + (d / "file").string(),
                     "--cache-dir");
  EXPECT_FALSE(fsys::exists(d / "cache")) << "nothing compiled before the check";
  // A good --json: the results on stdout and in the file, and a folder created for it.
  const CliRun r = run(eval + " --quiet --no-time --json " + (d / "new" / "out.json").string());
  EXPECT_TRUE(r.code == 77 || r.code == 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out), nlohmann::json::parse(std::ifstream(d / "new" / "out.json")));
}

TEST(Cli, EvaluateEntryAndKernelFilesWithoutAnEntryLine) {
  kopt::test::TempDir d("kopt-cli-entry");
  std::ofstream(d / "noentry.cu") << "extern \"C\" __global__ void mine(const float* A, const float* B, float* C, int M, "
                                     "int N, int K) {}\n";
  const std::string eval = "evaluate --spec " + kSgemmSpec + " --arch sm_90 --quiet --cache-dir " +
                           (d / "cache").string() + " --kernel " + (d / "noentry.cu").string();
  expect_usage_error(eval, "--kernel");
  CliRun r = run(eval);
  EXPECT_NE(r.err.find("kopt:entry"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--entry"), std::string::npos) << r.err;
  r = run(eval + " --entry mine");  // compiles now
  EXPECT_TRUE(r.code == 77 || r.code == 0) << r.err;
  // --entry applies to the initial kernel too: a name it does not have fails to compile.
  r = run("evaluate --spec " + kSgemmSpec + " --arch sm_90 --quiet --cache-dir " + (d / "cache").string() +
          " --entry no_such_kernel");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)[0]["verdict"], "compile_error") << r.out;
}

TEST(Cli, GenerateChecksEveryArgumentBeforeAnyWork) {
  kopt::test::TempDir d("kopt-cli-gen");
  std::ofstream(d / "file") << "x";
  std::ofstream(d / "garbage.json") << "[1, 2";
  fsys::create_directories(d / "adir");
  const std::string gen = "generate --spec " + kSgemmSpec + " --cache-dir " + (d / "cache").string() + " ";
  const std::string out = " --out-dir " + (d / "out").string();
  expect_usage_error(gen + "--name 1bad" + out, "--name");
  expect_usage_error(gen + "--name a-b" + out, "--name");
  expect_usage_error(gen + "--name 'a b'" + out, "--name");
  expect_usage_error(gen + "--name k --out-dir " + (d / "file").string(), "--out-dir");
  expect_usage_error(gen + "--name k --out-dir " + (d / "file" / "sub").string(), "--out-dir");
  expect_usage_error(gen + "--name k" + out + " --cache-file " + (d / "adir").string(), "--cache-file");
  expect_usage_error(gen + "--name k" + out + " --cache-file " + (d / "garbage.json").string(), "garbage.json");
  expect_usage_error(gen + "--name k" + out + " --cache-file " + (d / "file" / "c.json").string(), "--cache-file");
  expect_usage_error(gen + "--name k" + out + " --budget evals=-1", "--budget");
  EXPECT_FALSE(fsys::exists(d / "out")) << "nothing written";
  EXPECT_FALSE(fsys::exists(d / "cache")) << "nothing compiled";
}

// --check (optimize_kernel() runs it when configuring): what the run would
// reject before tuning, exit 2 with its message; 0 otherwise, with nothing
// written and the tuning cache's content left to the build.
TEST(Cli, GenerateCheckJudgesAsTheRunWouldAndWritesNothing) {
  kopt::test::TempDir d("kopt-cli-gen-check");
  std::ofstream(d / "garbage.json") << "[1, 2";
  std::ofstream(d / "capture.json") << "{\"kopt_capture\": 1,";
  const std::string out = " --out-dir " + (d / "out").string() + " --cache-dir " + (d / "cache").string() +
                          " --depfile " + (d / "out" / "k.d").string() + " --check";
  const std::string gen = "generate --name k --spec " + kSgemmSpec + out;
  CliRun r = run(gen + " --budget evals=5 --strategy random --cache-file " + (d / "garbage.json").string() +
                 " --cases-from " + (d / "not_yet.json").string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(fsys::exists(d / "out")) << "nothing written";
  EXPECT_FALSE(fsys::exists(d / "cache")) << "nothing compiled";
  expect_usage_error(gen + " --budget evals=abc", "--budget");
  expect_usage_error(gen + " --strategy magic", "--strategy");
  r = run(gen + " --cases-from " + (d / "capture.json").string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("capture.json: not valid JSON"), std::string::npos) << r.err;
  // What the parameter search needs of the spec: vadd has no template. The
  // agent's needs are read when it runs; --no-tune searches nothing.
  const std::string vadd = "generate --name k --spec " + std::string(KOPT_TEST_DATA_DIR) + "/agent/vadd.json" + out;
  r = run(vadd);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("[kopt.opt.003]"), std::string::npos) << r.err;
  EXPECT_EQ(run(vadd + " --strategy agent").code, 0);
  EXPECT_EQ(run(vadd + " --no-tune").code, 0);
  EXPECT_FALSE(fsys::exists(d / "out"));
}

TEST(Cli, ErrorsAreOneLineWithUserTextClipped) {
  const std::string huge(100000, 'x');  // one argument may hold 128 KiB
  const std::string eval = "evaluate --spec " + kSgemmSpec + " --arch sm_90 ";
  for (const std::string& args : {eval + "--params " + huge + "=1", eval + "--params BM=" + huge,
                                  eval + "--cases " + huge, eval + "--arch " + huge,
                                  "optimize --spec " + kSgemmSpec + " --strategy " + huge,
                                  "optimize --spec " + kSgemmSpec + " --budget evals=" + huge, huge}) {
    const CliRun r = run(args);
    EXPECT_EQ(r.code, 2) << r.err.substr(0, 300);
    EXPECT_LT(r.err.size(), 2200u) << r.err.substr(0, 300);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err.substr(0, 300);
  }
}

TEST(Cli, RetimingStopsWhenTheMinutesBudgetIsSpent) {
  kopt::test::TempDir d("kopt-cli-retime");
  const auto t0 = std::chrono::steady_clock::now();
  // 3 finalists x 100 rounds x 100 ms would take 30 s; the budget is 3 s.
  const CliRun r =
      run(fake_optimize(d, "--quiet --budget evals=4,minutes=0.05 --top 3 --retime-rounds 100"), "KOPT_FAKE_EVAL_MS=100");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_LT(s, 15.0);
  const nlohmann::json summary = nlohmann::json::parse(r.out);
  ASSERT_FALSE(summary["retime"].empty()) << summary.dump(2);
  for (const auto& f : summary["retime"]) {
    EXPECT_GE(f["geomeans_ms"].size(), 1u);
    EXPECT_LT(f["geomeans_ms"].size(), 100u);
  }
}

TEST(Cli, CompileOnlySaysTheSeedsAreCompiledAndTheMissingDeviceOnce) {
  if (has_gpu()) GTEST_SKIP() << "a CUDA device is present";
  // The SGEMM template's $.tuning.seeds come first; without a GPU nothing is evaluated.
  const CliRun r = run("optimize --spec " + kSgemmSpec + " --arch sm_90 --budget evals=2");
  EXPECT_EQ(r.code, 77) << r.err;
  EXPECT_NE(r.err.find("$.tuning.seeds: 6 of 6 configuration(s) are in the space and are compiled first (no GPU: "
                       "nothing is evaluated), then the"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("evaluated first"), std::string::npos) << r.err;
  size_t ids = 0;
  for (size_t p = r.err.find("[kopt.cuda.077]"); p != std::string::npos; p = r.err.find("[kopt.cuda.077]", p + 1)) ++ids;
  EXPECT_EQ(ids, 1u) << r.err;
  EXPECT_NE(r.err.find("compiled 2 candidate(s) for sm_90 (0 failed); checking and timing need a GPU"),
            std::string::npos)
      << r.err;
}

TEST(Cli, RealWorkerReportsNoDeviceThroughTheSupervisor) {
  if (has_gpu()) GTEST_SKIP() << "a CUDA device is present";
  kopt::eval::SupervisorOptions o;
  o.worker_argv = {KOPT_CLI, "worker"};
  kopt::eval::Supervisor s(o);
  try {
    s.hello();
    FAIL() << "expected NoDeviceError";
  } catch (const kopt::NoDeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA device found"), std::string::npos) << e.what();
    // One id: the worker's own, not the supervisor's beside it.
    EXPECT_EQ(e.id(), "kopt.cuda.077") << e.what();
    EXPECT_EQ(std::string(e.what()).find("[kopt.", 1), std::string::npos) << e.what();
  }
  // optimize without --arch says how to go on without a GPU.
  const CliRun r = run("optimize --spec " + kSgemmSpec + " --budget 4 --results-dir " +
                       (std::filesystem::temp_directory_path() / ("kopt-nogpu-" + std::to_string(::getpid()))).string());
  EXPECT_EQ(r.code, 77) << r.err;
  EXPECT_NE(r.first_err_line().find("give --arch sm_XY"), std::string::npos) << r.err;
}

}  // namespace
