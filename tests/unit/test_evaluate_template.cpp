// `kopt evaluate` on one configuration of a spec's template, and the
// compile-only verdict of a kernel whose parameters do not match the
// signature, run as a user would (KOPT_CLI). On a machine with a GPU the
// compile-only cases are skipped (they would run on it).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "temp_dir.h"
#include "util/fs.h"

namespace {

namespace stdfs = std::filesystem;
using nlohmann::json;

using kopt::test::CliRun;

CliRun run(const std::string& args) { return kopt::test::run_kopt(args); }

bool has_gpu() { return run("devices").code == 0; }

const stdfs::path kSgemmDir = stdfs::path(KOPT_SOURCE_DIR) / "templates" / "sgemm";
const std::string kSgemmSpec = (kSgemmDir / "sgemm.json").string();
const std::string kConfig = "BM=128,BN=128,BK=16,WM=64,WN=64,TM=8,TN=16,STAGES=2,ASYNC_A=1,PAD=4,MINB=1,KIND=0,SPLITK=1";

class EvaluateTemplate : public ::testing::Test {
 protected:
  std::string cache() const { return " --cache-dir " + (dir_ / "cache").string(); }
  kopt::test::TempDir dir_{"kopt-evtpl"};
};

TEST_F(EvaluateTemplate, ParamsWithoutKernelEvaluateTheTemplate) {
  if (has_gpu()) GTEST_SKIP() << "a CUDA device is present; this covers the compile-only path";
  CliRun r = run("evaluate --spec " + kSgemmSpec + " --arch sm_90 --params " + kConfig + cache());
  EXPECT_EQ(r.code, 77) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_TRUE(j[0]["compiled"].get<bool>()) << j.dump(2);
  EXPECT_EQ(j[0]["kernel"], (kSgemmDir / "sgemm_tiled.cu").string());
  EXPECT_NE(r.err.find("sgemm_tiled.cu [ASYNC_A=1,BK=16,"), std::string::npos) << r.err;
}

TEST_F(EvaluateTemplate, TheTemplateWithoutParamsSaysWhichToGive) {
  // --kernel naming the template file.
  CliRun r = run("evaluate --spec " + kSgemmSpec + " --arch sm_90 --kernel " + (kSgemmDir / "sgemm_tiled.cu").string() +
                 cache());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("[kopt.cli.030]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sgemm_tiled.cu is the spec's template: give --params ASYNC_A=V,BK=V,BM=V,BN=V"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  // Some parameters only.
  r = run("evaluate --spec " + kSgemmSpec + " --arch sm_90 --params BM=128,BN=128" + cache());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("[kopt.cli.030] --params: the template "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("also needs ASYNC_A=V,BK=V,KIND=V,MINB=V,PAD=V,SPLITK=V,STAGES=V,TM=V,TN=V,WM=V,WN=V"), std::string::npos)
      << r.err;
  // A name the template does not have.
  r = run("evaluate --spec " + kSgemmSpec + " --arch sm_90 --params " + kConfig + ",THREADZ=256" + cache());
  EXPECT_EQ(r.code, 2) << r.err;
  // The command line's own check (kopt.cli.009) names it before the template is built.
  EXPECT_NE(r.err.find("--params: 'THREADZ' is not a tuning parameter of sgemm.json"), std::string::npos) << r.err;
  // A spec with a template and no initial kernel, evaluated without --kernel.
  json spec = json::parse(kopt::fs::read_file(kSgemmSpec));
  spec.erase("initial");
  spec["template"]["source"] = (kSgemmDir / "sgemm_tiled.cu").string();
  spec["reference"]["source"] = (kSgemmDir / "reference.cu").string();
  const stdfs::path file = dir_ / "no_initial.json";
  kopt::fs::write_file_atomic(file, spec.dump(2));
  r = run("evaluate --spec " + file.string() + " --arch sm_90" + cache());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("[kopt.cli.030]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("give --params"), std::string::npos) << r.err;
}

TEST_F(EvaluateTemplate, AKernelMissingAParameterIsRejectedAtCompileTime) {
  if (has_gpu()) GTEST_SKIP() << "a CUDA device is present; this covers the compile-only path";
  // The SGEMM signature is (A, B, C, M, N, K).
  std::ofstream(dir_ / "no_k.cu") << "// kopt:entry sg\nextern \"C\" __global__ void sg(const float* A, "
                                     "const float* B, float* C, int M, int N) {}\n";
  std::ofstream(dir_ / "wide_m.cu") << "// kopt:entry sg\nextern \"C\" __global__ void sg(const float* A, "
                                       "const float* B, float* C, long long M, int N, int K) {}\n";
  CliRun r = run("evaluate --spec " + kSgemmSpec + " --arch sm_90 --kernel " + (dir_ / "no_k.cu").string() + " " +
                 (dir_ / "wide_m.cu").string() + cache());
  EXPECT_EQ(r.code, 1) << r.err;  // rejected: no GPU is needed to know that
  const json j = json::parse(r.out);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["verdict"], "compile_error");
  EXPECT_EQ(j[0]["error_name"], "KOPT_PARAM_MISMATCH");
  EXPECT_NE(j[0]["detail"].get<std::string>().find("it has 5 parameters, the signature 6"), std::string::npos)
      << j.dump(2);
  EXPECT_NE(j[0]["detail"].get<std::string>().find("parameter 5 ('K', int32, 4 bytes) is missing"),
            std::string::npos)
      << j.dump(2);
  EXPECT_NE(j[1]["detail"].get<std::string>().find("parameter 3 ('M', int32, 4 bytes) is 8 bytes in the kernel"),
            std::string::npos)
      << j.dump(2);
  EXPECT_NE(r.err.find("compile_error - the kernel's parameters do not match"), std::string::npos) << r.err;
}

}  // namespace
