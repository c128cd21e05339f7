// kopt generate's launch header: compiled by the host compiler, with and
// without size names.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "gen/generate.h"
#include "spec/spec.h"

namespace {

namespace fsys = std::filesystem;
using nlohmann::json;

const std::string kData = std::string(KOPT_TEST_DATA_DIR) + "/agent/";

fsys::path temp_dir(const std::string& name) {
  const fsys::path d = fsys::temp_directory_path() / ("kopt-gen-" + name + "-" + std::to_string(::getpid()));
  fsys::remove_all(d);
  fsys::create_directories(d);
  return d;
}

/// The host part of a launch header must compile on its own (g++ -fsyntax-only).
void expect_header_compiles(const fsys::path& dir, const std::string& header, const std::string& use) {
  std::ofstream(dir / "k_launch.h") << header;
  std::ofstream(dir / "use.cpp") << "#include \"k_launch.h\"\nint main() {\n" << use << "\n}\n";
  const std::string cmd = "c++ -std=c++17 -Wall -Werror -fsyntax-only -I" + dir.string() + " " +
                          (dir / "use.cpp").string() + " 2>" + (dir / "cc.log").string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << header;
}

const char* kKernel =
    "// kopt:entry vadd\n// kopt:grid ceil_div(N, 256), 1, 1\n// kopt:block 256, 1, 1\n"
    "extern \"C\" __global__ void vadd(const float* A, const float* B, float* C, int N) {}\n";

TEST(GenerateHeader, CompilesWithSizes) {
  const fsys::path d = temp_dir("sizes");
  const kopt::spec::Spec s = kopt::spec::load_spec(kData + "vadd.json");
  const std::string h = kopt::gen::launch_header("k", kKernel, s, "kernel.cu");
  expect_header_compiles(d, h,
                         "  kopt_k::LaunchConfig c = kopt_k::launch_config(1000);\n"
                         "  return c.grid[0] == 4 && c.block[0] == 256 && c.variant == 0 && kopt_k::kVariants == 1 ? 0 : 1;");
  fsys::remove_all(d);
}

// A workload whose cases have no sizes (fixed shapes): launch_config() takes
// no arguments.
TEST(GenerateHeader, CompilesWithoutSizes) {
  const fsys::path d = temp_dir("nosizes");
  json j = json::parse(std::ifstream(kData + "vadd.json"));
  for (auto& p : j["signature"]) {
    if (p.contains("count")) p["count"] = 1024;
    if (p.contains("value")) p["value"] = 1024;
  }
  j["launch"]["grid"] = json::array({4, 1, 1});
  for (auto& c : j["cases"]) c.erase("sizes");
  j["reference"]["source"] = kData + "reference.cu";
  j["initial"]["source"] = kData + "initial.cu";
  std::ofstream(d / "fixed.json") << j.dump(1);
  const kopt::spec::Spec s = kopt::spec::load_spec(d / "fixed.json");
  const std::string kernel =
      "// kopt:entry vadd\n// kopt:grid 4, 1, 1\n// kopt:block 256, 1, 1\n"
      "extern \"C\" __global__ void vadd(const float* A, const float* B, float* C, int N) {}\n";
  const std::vector<kopt::gen::KernelVariant> variants = {{kernel, "a.cu", "A", {}}, {kernel, "b.cu", "B", {}}};
  expect_header_compiles(d, kopt::gen::launch_header("k", variants, s),
                         "  kopt_k::LaunchConfig c = kopt_k::launch_config();\n"
                         "  return c.grid[0] == 4 && kopt_k::kVariants == 2 ? 0 : 1;");
  fsys::remove_all(d);
}

}  // namespace
