// The SGEMM template's kinds (templates/sgemm/sgemm_tiled.cu, KIND 0 tiled with cluster split-K,
// KIND 1 rows) against its spec (templates/sgemm/sgemm.json): the tuning space has no duplicate
// kernels, every configuration's launch fits the device on every case, and representative
// configurations of each kind compile with NVRTC for sm_90. No GPU needed.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <tuple>

#include "cuda/nvrtc.h"
#include "search/device_constants.h"
#include "search/space.h"
#include "spec/launch.h"
#include "spec/local_include.h"
#include "spec/spec.h"

namespace {

using kopt::search::Config;

const std::string kDir = std::string(KOPT_SOURCE_DIR) + "/templates/sgemm/";

struct SgemmSpace {
  kopt::spec::Spec spec = kopt::spec::load_spec(kDir + "sgemm.json");
  std::vector<Config> valid =
      kopt::search::Space(spec.tuning.params, spec.tuning.constraints, kopt::search::device_constants(nullptr))
          .enumerate_valid();
};

const SgemmSpace& sgemm_space() {
  static const SgemmSpace s;  // enumerating the space takes a while: once for the tests below
  return s;
}

TEST(SpecSgemmKinds, EveryKindIsInTheSpaceWithoutDuplicates) {
  const SgemmSpace& s = sgemm_space();
  std::map<int64_t, size_t> per_kind;
  // KIND 1 reads only TM, TN, BM, SPLITK and MINB: two valid configurations that agree on those
  // would be the same kernel twice.
  std::set<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>> rows;
  for (const Config& c : s.valid) {
    ++per_kind[c.at("KIND")];
    if (c.at("KIND") == 1)
      EXPECT_TRUE(rows.insert({c.at("TM"), c.at("TN"), c.at("BM"), c.at("SPLITK"), c.at("MINB")}).second)
          << kopt::search::config_key(c);
    if (c.at("KIND") == 0) EXPECT_GE(c.at("TN"), 8) << kopt::search::config_key(c);  // TN 1, 2, 4 are KIND 1's
  }
  EXPECT_GT(per_kind[0], 1000u);  // the tiled kernel: 1744 configurations times SPLITK 1, 2, 4, 8
  EXPECT_GT(per_kind[1], 40u);
  EXPECT_EQ(per_kind.size(), 2u);
  for (int64_t split : {1, 2, 4, 8})
    for (int64_t kind : {0, 1}) {
      bool found = false;
      for (const Config& c : s.valid) found = found || (c.at("KIND") == kind && c.at("SPLITK") == split);
      EXPECT_TRUE(found) << "KIND " << kind << " SPLITK " << split;
    }
}

TEST(SpecSgemmKinds, LaunchesFitTheDeviceOnEveryCase) {
  const SgemmSpace& s = sgemm_space();
  ASSERT_TRUE(s.spec.template_kernel.has_value());
  const kopt::spec::Launch& launch = s.spec.template_kernel->launch.value();
  size_t checked = 0;
  for (size_t i = 0; i < s.valid.size(); ++i) {
    const Config& c = s.valid[i];
    // Every KIND 1 and every split-K configuration, and a sample of the rest (the launch of the
    // tiled kernel without split-K is the one it always had).
    if (c.at("KIND") == 0 && c.at("SPLITK") == 1 && i % 17 != 0) continue;
    for (const kopt::spec::Case& k : s.spec.cases) {
      const kopt::spec::LaunchDims d = kopt::spec::resolve_launch(launch, k, c);
      const std::string where = kopt::search::config_key(c) + " on " + k.name;
      for (int j = 0; j < 3; ++j) {
        ASSERT_GE(d.grid[j], 1) << where;
        ASSERT_GE(d.block[j], 1) << where;
      }
      ASSERT_LE(d.grid[1], 65535) << where;
      ASSERT_LE(d.grid[2], 65535) << where;
      ASSERT_LE(d.block[0] * d.block[1] * d.block[2], 1024) << where;
      ASSERT_LE(d.shared_bytes, 232448) << where;
      // A cluster of SPLITK blocks along x: the grid must hold whole clusters.
      ASSERT_EQ(d.grid[0] % c.at("SPLITK"), 0) << where;
      if (c.at("KIND") == 1) {
        ASSERT_EQ(d.block[0], 2 * c.at("BM")) << where;
        ASSERT_EQ(d.shared_bytes, 0) << where;  // its buffers are static
        ASSERT_EQ(d.grid[0], (k.sizes.at("M") + c.at("TM") - 1) / c.at("TM") * c.at("SPLITK")) << where;
        ASSERT_EQ(d.grid[1], (k.sizes.at("N") + c.at("TN") - 1) / c.at("TN")) << where;
      } else if (c.at("SPLITK") > 1) {
        ASSERT_GE(d.shared_bytes, c.at("BM") * c.at("BN") * 4) << where;  // the partial tile
      }
    }
    ++checked;
  }
  EXPECT_GT(checked, 5000u);
}

kopt::cuda::CompileResult compile(const std::map<std::string, int64_t>& defines) {
  kopt::cuda::Compiler c;
  kopt::cuda::CompileRequest r;
  r.source = kopt::spec::read_kernel_text(kDir + "sgemm_tiled.cu");  // its local includes expanded, as kopt reads it
  r.source_name = "sgemm_tiled.cu";
  r.entry = "sgemm_tiled";
  r.arch = "sm_90";
  r.defines = defines;
  return c.compile(r);
}

TEST(NvrtcSgemmKinds, RepresentativeConfigurationsCompileForSm90) {
  const std::map<std::string, int64_t> k1 = {{"KIND", 1}, {"BN", 64}, {"BK", 8},     {"WM", 32},
                                             {"WN", 32},  {"STAGES", 1}, {"ASYNC_A", 0}, {"PAD", 0}, {"MINB", 1}};
  auto with = [](std::map<std::string, int64_t> base, const std::map<std::string, int64_t>& more) {
    for (const auto& [k, v] : more) base[k] = v;
    return base;
  };
  const std::map<std::string, int64_t> k0 = {{"KIND", 0}, {"BM", 64}, {"BN", 64},     {"BK", 16},  {"WM", 32},
                                             {"WN", 64},  {"TM", 8},  {"TN", 8},      {"STAGES", 3}, {"ASYNC_A", 1},
                                             {"PAD", 4},  {"MINB", 1}};
  const std::vector<std::pair<std::string, std::map<std::string, int64_t>>> configs = {
      {"KIND 0, cluster split-K 4", with(k0, {{"SPLITK", 4}})},
      {"KIND 1, N = 1, one block a row block", with(k1, {{"BM", 128}, {"TM", 8}, {"TN", 1}, {"SPLITK", 1}})},
      {"KIND 1, N = 4, cluster split-K 8", with(k1, {{"BM", 64}, {"TM", 16}, {"TN", 4}, {"SPLITK", 8}})},
  };
  for (const auto& [what, defines] : configs) {
    const kopt::cuda::CompileResult res = compile(defines);
    ASSERT_TRUE(res.ok) << what << ": " << res.log;
    EXPECT_EQ(res.lowered_entry, "sgemm_tiled") << what;
    EXPECT_EQ(res.log.find("warning"), std::string::npos) << what << ": " << res.log;
  }
}

TEST(NvrtcSgemmKinds, AnInvalidSplitIsACompileError) {
  // SPLITK outside 1, 2, 4, 8 (a portable cluster holds at most 8 blocks) stops at #error.
  const kopt::cuda::CompileResult res = compile({{"KIND", 1}, {"TM", 8}, {"TN", 1}, {"BM", 64}, {"SPLITK", 3}});
  EXPECT_FALSE(res.ok);
  EXPECT_NE(res.log.find("SPLITK must be 1, 2, 4 or 8"), std::string::npos) << res.log;
}

}  // namespace
