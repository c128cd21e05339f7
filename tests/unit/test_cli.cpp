// The kopt command line, run as a user would, on this machine. On a machine
// without a GPU the GPU-dependent paths must say so and exit 77.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "eval/supervisor.h"
#include "util/error.h"

namespace {

namespace fsys = std::filesystem;

struct CliRun {
  int code = -1;
  std::string out, err;
};

CliRun run(const std::string& args) {
  const fsys::path err = fsys::temp_directory_path() / ("kopt-cli-err-" + std::to_string(::getpid()));
  const std::string cmd = std::string(KOPT_CLI) + " " + args + " 2>" + err.string();
  CliRun r;
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  fsys::remove(err);
  return r;
}

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
  }
}

}  // namespace
