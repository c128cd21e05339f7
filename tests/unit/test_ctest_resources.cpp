// CTest's GPU resources (model/ctest_resources.h, `kopt devices
// --ctest-resource-spec`, `--device-from-ctest`) and the depfile and
// --cache-out of `kopt generate` (gen/depfile.h), which the CMake module's
// optimize_kernel() uses. No GPU needed.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "gen/depfile.h"
#include "model/ctest_resources.h"
#include "spec/inputs.h"
#include "spec/spec.h"
#include "support/files.h"
#include "support/shell.h"
#include "temp_dir.h"
#include "util/error.h"

namespace {

namespace fsys = std::filesystem;
using kopt::model::ctest_gpu_from_environment;
using kopt::model::ctest_resource_spec;
using kopt::test::slurp;
using kopt::test::ShellRun;

const std::string kChecker = std::string(KOPT_SOURCE_DIR) + "/tests/cmake/check_resource_spec.cmake";

/// `cmd`'s exit code, and its stdout and stderr together in out.
ShellRun shell(const std::string& cmd) { return kopt::test::run_shell(cmd, kopt::test::Stderr::into_out); }

/// Runs the resource spec checker (tests/cmake/check_resource_spec.cmake) on `text`.
ShellRun check_spec(const std::string& text, const std::string& defines = "") {
  kopt::test::TempDir d("kopt-ctest");
  std::ofstream(d.path() / "spec.json") << text;
  return shell(std::string(KOPT_CMAKE_COMMAND) + " -DFILE=" + (d.path() / "spec.json").string() + " " + defines +
               " -P " + kChecker);
}

/// An environment of these variables only.
std::function<const char*(const char*)> env(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

std::string error_id(const std::function<void()>& f) {
  try {
    f();
  } catch (const kopt::UsageError& e) {
    return e.id() + " " + e.what();
  }
  return "no error";
}

TEST(CtestResourceSpec, IsCtestsVersion1FormatWithOneGpuEntryPerOrdinal) {
  const nlohmann::json j = ctest_resource_spec({0, 1}, 4);
  EXPECT_EQ(j, nlohmann::json::parse(R"({"version": {"major": 1, "minor": 0},
      "local": [{"gpus": [{"id": "0", "slots": 4}, {"id": "1", "slots": 4}]}]})"));
  const ShellRun r = check_spec(j.dump(2), "-DEXPECT_GPUS=2 -DEXPECT_SLOTS=4");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("resource spec OK"), std::string::npos) << r.out;
  EXPECT_EQ(ctest_resource_spec({0}, kopt::model::kCtestGpuSlots)["local"][0]["gpus"][0]["slots"], 4);
}

TEST(CtestResourceSpec, TheCheckerRefusesWhatCtestRefuses) {
  const std::map<std::string, std::string> bad = {
      {R"({"local": [{"gpus": []}]})", "$.version"},
      {R"({"version": {"major": 1, "minor": 1}, "local": [{"gpus": []}]})", "$.version.minor"},
      {R"({"version": {"major": "1", "minor": 0}, "local": [{"gpus": []}]})", "$.version.major"},
      {R"({"version": {"major": 1, "minor": 0}, "local": [{"gpus": []}, {"gpus": []}]})", "exactly one"},
      {R"({"version": {"major": 1, "minor": 0}, "local": [{"GPUs": []}]})", "resource type name"},
      {R"({"version": {"major": 1, "minor": 0}, "local": [{"gpus": [{"id": "GPU0", "slots": 1}]}]})", "an id is"},
      {R"({"version": {"major": 1, "minor": 0}, "local": [{"gpus": [{"id": 0, "slots": 1}]}]})", "expected a string"},
      {R"({"version": {"major": 1, "minor": 0}, "local": [{"gpus": [{"id": "0", "slots": "4"}]}]})", ".slots"},
      {R"({"version": {"major": 1, "minor": 0}, "local": [{"gpus": [{"id": "0", "slots": -1}]}]})", ".slots"},
      {R"({"version": {"major": 1, "minor": 0}, "local": [{"gpus": [{"id": "0", "slots": 1}, {"id": "0", "slots": 1}]}]})",
       "used twice"},
      {R"({"version": {"major": 1, "minor": 0}, "local": [{"crypto_chips": [{"id": "card0"}]}]})", "no \"gpus\""},
      {"[1]", "expected an object"},
      {"{ nope", "not valid JSON"},
  };
  for (const auto& [text, want] : bad) {
    const ShellRun r = check_spec(text);
    EXPECT_NE(r.code, 0) << text;
    std::string flat = r.out;
    for (char& c : flat)
      if (c == '\n') c = ' ';
    EXPECT_NE(flat.find(want), std::string::npos) << text << "\n" << r.out;
  }
  // What ctest's own example allows: other types, no slots (1).
  const ShellRun ok = check_spec(R"({"version": {"major": 1, "minor": 0},
      "local": [{"gpus": [{"id": "0", "slots": 2}], "crypto_chips": [{"id": "card0"}]}]})");
  EXPECT_EQ(ok.code, 0) << ok.out;
  // And the counts asked for.
  EXPECT_NE(check_spec(ctest_resource_spec({0}, 4).dump(), "-DEXPECT_GPUS=2").code, 0);
  EXPECT_NE(check_spec(ctest_resource_spec({0}, 2).dump(), "-DEXPECT_SLOTS=4").code, 0);
}

TEST(CtestGpu, WithoutResourceAllocationThereIsNone) {
  EXPECT_FALSE(ctest_gpu_from_environment(env({})));
  // The group variables alone do not count: CTEST_RESOURCE_GROUP_COUNT is the switch.
  EXPECT_FALSE(ctest_gpu_from_environment(env({{"CTEST_RESOURCE_GROUP_0_GPUS", "id:1,slots:1"}})));
}

TEST(CtestGpu, TheFirstGpuOfGroupZero) {
  auto g = ctest_gpu_from_environment(env({{"CTEST_RESOURCE_GROUP_COUNT", "1"},
                                           {"CTEST_RESOURCE_GROUP_0", "gpus"},
                                           {"CTEST_RESOURCE_GROUP_0_GPUS", "id:1,slots:4"}}));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->ordinal, 1);
  EXPECT_EQ(g->slots, 4);
  EXPECT_EQ(g->value, "id:1,slots:4");
  g = ctest_gpu_from_environment(env({{"CTEST_RESOURCE_GROUP_COUNT", "2"},
                                      {"CTEST_RESOURCE_GROUP_0", "crypto_chips,gpus"},
                                      {"CTEST_RESOURCE_GROUP_0_GPUS", "id:3,slots:2;id:0,slots:1"}}));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->ordinal, 3);
  EXPECT_EQ(g->slots, 2);
}

TEST(CtestGpu, AnEnvironmentItCannotReadIsAUsageErrorNamingTheVariable) {
  auto with = [](std::string count, std::string types, std::string gpus) {
    std::map<std::string, std::string> m = {{"CTEST_RESOURCE_GROUP_COUNT", count}, {"CTEST_RESOURCE_GROUP_0", types}};
    if (!gpus.empty()) m["CTEST_RESOURCE_GROUP_0_GPUS"] = gpus;
    return error_id([m] { ctest_gpu_from_environment(env(m)); });
  };
  EXPECT_EQ(with("x", "gpus", "id:0,slots:1").rfind("kopt.ctest.001 [kopt.ctest.001] CTEST_RESOURCE_GROUP_COUNT='x'", 0), 0u);
  EXPECT_EQ(with("0", "gpus", "id:0,slots:1").rfind("kopt.ctest.001", 0), 0u);
  EXPECT_EQ(with("1", "crypto_chips", "id:0,slots:1").rfind("kopt.ctest.002 [kopt.ctest.002] CTEST_RESOURCE_GROUP_0='crypto_chips'", 0), 0u);
  EXPECT_EQ(with("1", "gpus", "").rfind("kopt.ctest.002", 0), 0u);
  EXPECT_EQ(with("1", "gpus", "0").rfind("kopt.ctest.003 [kopt.ctest.003] CTEST_RESOURCE_GROUP_0_GPUS='0'", 0), 0u);
  EXPECT_EQ(with("1", "gpus", "id:0").rfind("kopt.ctest.003", 0), 0u);
  EXPECT_EQ(with("1", "gpus", "id:0,slots:x").rfind("kopt.ctest.003", 0), 0u);
  EXPECT_EQ(with("1", "gpus", "id:,slots:1").rfind("kopt.ctest.003", 0), 0u);
  const std::string e = with("1", "gpus", "id:gpu_a,slots:1");
  EXPECT_EQ(e.rfind("kopt.ctest.004", 0), 0u) << e;
  EXPECT_NE(e.find("the GPU id 'gpu_a' is not a CUDA device ordinal"), std::string::npos) << e;
  EXPECT_EQ(with("1", "gpus", "id:1024,slots:1").rfind("kopt.ctest.004", 0), 0u);
}

// --- the CLI ------------------------------------------------------------------

const std::string kSgemm = std::string(KOPT_SOURCE_DIR) + "/templates/sgemm/";
const std::string kCtestEnv =
    "CTEST_RESOURCE_GROUP_COUNT=1 CTEST_RESOURCE_GROUP_0=gpus CTEST_RESOURCE_GROUP_0_GPUS='id:1,slots:4' ";

TEST(CtestCli, EvaluateAndBenchTakeTheGpuCtestGave) {
  kopt::test::TempDir d("kopt-ctest");
  const std::string cache = " --cache-dir " + (d.path() / "cache").string();
  const std::string eval = std::string(KOPT_CLI) + " evaluate --spec " + kSgemm + "sgemm.json --kernel " + kSgemm +
                           "naive.cu --no-time --quiet --device-from-ctest" + cache;
  ShellRun r = shell(kCtestEnv + eval);
  EXPECT_NE(r.out.find("kopt evaluate: CTest gave this test GPU 1 (CTEST_RESOURCE_GROUP_0_GPUS=id:1,slots:4): "
                       "--device 1"),
            std::string::npos)
      << r.out;
  if (r.code != 0) EXPECT_EQ(r.code, 77) << r.out;  // no GPU here (or no GPU 1)
  const std::string bench = std::string(KOPT_CLI) + " bench --spec " + kSgemm + "sgemm.json --kernel " + kSgemm +
                            "naive.cu --device-from-ctest" + cache;
  r = shell(kCtestEnv + bench);
  EXPECT_NE(r.out.find("kopt bench: CTest gave this test GPU 1"), std::string::npos) << r.out;
  // Without resource allocation, or without the flag: --device, and no word of CTest.
  r = shell(eval);
  EXPECT_EQ(r.out.find("CTest gave"), std::string::npos) << r.out;
  r = shell(kCtestEnv + std::string(KOPT_CLI) + " evaluate --spec " + kSgemm + "sgemm.json --kernel " + kSgemm +
            "naive.cu --no-time --quiet" + cache);
  EXPECT_EQ(r.out.find("CTest gave"), std::string::npos) << r.out;
  // A resource environment it cannot read: exit 2 with the id, before any GPU work.
  r = shell("CTEST_RESOURCE_GROUP_COUNT=1 CTEST_RESOURCE_GROUP_0=gpus CTEST_RESOURCE_GROUP_0_GPUS='id:a,slots:1' " + eval);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("[kopt.ctest.004] CTEST_RESOURCE_GROUP_0_GPUS='id:a,slots:1': the GPU id 'a'"), std::string::npos)
      << r.out;
}

TEST(CtestCli, DevicesWritesNoResourceSpecWithoutAGpu) {
  kopt::test::TempDir d("kopt-ctest");
  const fsys::path f = d.path() / "gpus.json";
  const ShellRun r = shell(std::string(KOPT_CLI) + " devices --ctest-resource-spec " + f.string());
  if (r.code == 0) {  // a GPU machine: the file is CTest's format
    const ShellRun c = shell(std::string(KOPT_CMAKE_COMMAND) + " -DFILE=" + f.string() + " -DEXPECT_SLOTS=4 -P " + kChecker);
    EXPECT_EQ(c.code, 0) << c.out;
    return;
  }
  EXPECT_EQ(r.code, 77) << r.out;
  EXPECT_FALSE(fsys::exists(f));
  // Bad values are usage errors, found before the GPU is looked for.
  EXPECT_EQ(shell(std::string(KOPT_CLI) + " devices --ctest-resource-spec " + f.string() + " --ctest-slots 0").code, 2);
  EXPECT_EQ(shell(std::string(KOPT_CLI) + " devices --ctest-resource-spec " + d.path().string()).code, 2);
}

// --- generate's depfile and --cache-out ----------------------------------------

void npy(const fsys::path& f, int64_t n) {
  kopt::spec::NpyArray a;
  a.dtype = kopt::spec::DType::f32;
  a.shape = {n};
  a.data.assign(static_cast<size_t>(n) * 4, 0);
  fsys::create_directories(f.parent_path());
  kopt::spec::write_npy(f, a);
}

/// A vadd spec whose inputs, golden outputs and #includes are files.
fsys::path npy_spec(const fsys::path& d) {
  fsys::create_directories(d / "inc" / "sub");
  std::ofstream(d / "initial.cu") << "// kopt:entry vadd\n#include \"inc/common.h\"\n#include <cuda_fp16.h>\n"
                                     "extern \"C\" __global__ void vadd(const float* A, const float* B, float* C, int N) {}\n";
  std::ofstream(d / "inc" / "common.h") << "#pragma once\n  #  include \"sub/more.h\"\n#include \"missing.h\"\n";
  std::ofstream(d / "inc" / "sub" / "more.h") << "#include \"../common.h\"\n";  // a cycle
  for (const char* c : {"n1", "n4"}) {
    npy(d / "a" / (std::string(c) + "_A.npy"), c == std::string("n1") ? 1 : 4);
    npy(d / "golden" / (std::string(c) + "_C.npy"), c == std::string("n1") ? 1 : 4);
  }
  npy(d / "b with space.npy", 4);
  std::ofstream(d / "spec.json") << R"js({
    "format_version": 1, "name": "vadd",
    "signature": [
      {"name": "A", "type": "float", "role": "input", "count": "N", "init": {"kind": "npy", "path": "a/{case}_A.npy"}},
      {"name": "B", "type": "float", "role": "input", "count": "N"},
      {"name": "C", "type": "float", "role": "output", "count": "N"},
      {"name": "N", "type": "int32", "value": "N"}],
    "launch": {"grid": ["ceil_div(N, 256)", 1, 1], "block": [256, 1, 1], "shared_bytes": 0},
    "reference": {"kind": "npy", "outputs": {"C": "golden/{case}_C.npy"}},
    "initial": {"source": "initial.cu", "entry": "vadd"},
    "cases": [
      {"name": "n1", "role": "correctness", "sizes": {"N": 1}},
      {"name": "n4", "role": "performance", "sizes": {"N": 4}, "inputs": {"B": {"kind": "npy", "path": "b with space.npy"}}}],
    "tolerance": {"C": {"kind": "allclose", "rtol": 0, "atol": 0}}})js";
  return d / "spec.json";
}

TEST(Depfile, NamesEveryFileTheSpecNames) {
  kopt::test::TempDir t("kopt-dep");
  const fsys::path d = fsys::canonical(t.path());
  const fsys::path spec_file = npy_spec(d);
  const kopt::spec::Spec s = kopt::spec::load_spec(spec_file);
  kopt::driver::OptimizeOptions o;
  o.spec = spec_file;
  std::ofstream(d / "cache.json") << R"({"format_version": 1, "entries": []})";
  const auto deps = kopt::gen::spec_dependencies(s, o, d / "cache.json");
  const std::vector<fsys::path> want = {
      spec_file,           d / "cache.json",        d / "initial.cu",       d / "inc/common.h",
      d / "inc/sub/more.h", d / "a/n1_A.npy",        d / "a/n4_A.npy",       d / "b with space.npy",
      d / "golden/n1_C.npy", d / "golden/n4_C.npy"};
  EXPECT_EQ(deps, want);
  // A cache that does not exist yet is no dependency.
  EXPECT_EQ(kopt::gen::spec_dependencies(s, o, d / "nope.json").size(), want.size() - 1);
}

TEST(Depfile, MakeSyntaxWithEscapes) {
  EXPECT_EQ(kopt::gen::depfile_text("/b/k.cu", {"/s/a b.npy", "/s/c$d#e.cu", "/s/plain.json"}),
            "/b/k.cu: \\\n  /s/a\\ b.npy \\\n  /s/c$$d\\#e.cu \\\n  /s/plain.json\n");
  EXPECT_EQ(kopt::gen::depfile_text("/b/k.cu", {"/s/x\\ y"}), "/b/k.cu: \\\n  /s/x\\\\\\ y\n");
  EXPECT_EQ(error_id([] { kopt::gen::depfile_text("/b/k.cu", {"/s/a\nb"}); }).rfind("kopt.gen.111", 0), 0u);
}

TEST(GenerateCli, WritesTheDepfileAndLeavesTheCommittedCacheAlone) {
  kopt::test::TempDir t("kopt-dep");
  const fsys::path d = fsys::canonical(t.path());
  const fsys::path spec_file = npy_spec(d);
  const std::string committed = R"({"format_version": 1, "entries": []})" "\n";
  std::ofstream(d / "cache.json") << committed;
  fsys::permissions(d / "cache.json", fsys::perms::owner_read | fsys::perms::group_read);  // a read-only checkout
  const fsys::path out = d / "out";
  const ShellRun r = shell(std::string(KOPT_CLI) + " generate --spec " + spec_file.string() + " --name vadd --no-tune --out-dir " +
                      out.string() + " --cache-file " + (d / "cache.json").string() + " --cache-out " +
                      (out / "vadd.tuning.json").string() + " --depfile " + (out / "vadd.d").string() +
                      " --cache-dir " + (d / "nvrtc").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("not writable"), std::string::npos) << r.out;  // --cache-out: the file is only read
  EXPECT_TRUE(fsys::exists(out / "vadd.cu"));
  const std::string dep = slurp(out / "vadd.d");
  EXPECT_EQ(dep.rfind((out / "vadd.cu").string() + ": \\\n", 0), 0u) << dep;
  for (const char* f : {"spec.json", "cache.json", "initial.cu", "inc/common.h", "inc/sub/more.h", "a/n1_A.npy",
                        "a/n4_A.npy", "b\\ with\\ space.npy", "golden/n1_C.npy", "golden/n4_C.npy"})
    EXPECT_NE(dep.find((d / f).string()), std::string::npos) << f << "\n" << dep;
  EXPECT_EQ(slurp(d / "cache.json"), committed);
  EXPECT_EQ(nlohmann::json::parse(slurp(out / "vadd.tuning.json")), nlohmann::json::parse(committed));
  fsys::permissions(d / "cache.json", fsys::perms::owner_all);
  // A cache not committed yet: --cache-out is still written (an empty cache),
  // since the CMake module declares it an output and would otherwise run the
  // step on every build.
  const ShellRun none = shell(std::string(KOPT_CLI) + " generate --spec " + spec_file.string() +
                              " --name vadd --no-tune --out-dir " + (d / "out2").string() + " --cache-file " +
                              (d / "not_yet.json").string() + " --cache-out " + (d / "out2" / "vadd.tuning.json").string() +
                              " --cache-dir " + (d / "nvrtc").string());
  ASSERT_EQ(none.code, 0) << none.out;
  EXPECT_FALSE(fsys::exists(d / "not_yet.json"));
  ASSERT_TRUE(fsys::exists(d / "out2" / "vadd.tuning.json")) << none.out;
  EXPECT_TRUE(nlohmann::json::parse(slurp(d / "out2" / "vadd.tuning.json")).at("entries").empty());
}

}  // namespace
