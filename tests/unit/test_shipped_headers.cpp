// The shipped headers whose text every generated launch header copies
// (gen/shipped.h): gen/launch_runtime.h, model/dispatch_rule.h and
// gen/capture_runtime.h. They are compiled here as the real C++ they are and
// checked against kopt's own code (its expression evaluator, its capture
// reader); the launch header holds their text unchanged. That the header's
// dispatch agrees with kopt's (model/dispatch.cpp calls the same rule) is
// checked in test_generate.cpp on 21,000 sizes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "gen/capture_runtime.h"
#include "gen/generate.h"
#include "gen/launch_runtime.h"
#include "gen/shipped.h"
#include "model/dispatch.h"
#include "model/dispatch_rule.h"
#include "spec/capture.h"
#include "spec/expr.h"
#include "spec/spec.h"
#include "dispatch_fixture.h"
#include "support/files.h"
#include "util/error.h"

namespace {

using kopt::test::slurp;

/// The text between `// kopt:embed-begin NAME` and `// kopt:embed-end NAME`
/// in a file of the source tree ("" when the markers are missing).
std::string region(const std::string& file, const std::string& name) {
  const std::string text = slurp(std::string(KOPT_SOURCE_DIR) + "/tool/src/" + file);
  const std::string begin = "// kopt:embed-begin " + name + "\n", end = "// kopt:embed-end " + name + "\n";
  const size_t b = text.find(begin);
  const size_t e = b == std::string::npos ? b : text.find(end, b);
  if (e == std::string::npos) return "";
  return text.substr(b + begin.size(), e - b - begin.size());
}

// What kopt embedded at build time is the shipped files' text, and a launch
// header with every part (a cost model, shape capture) holds it unchanged.
TEST(ShippedHeaders, LaunchHeadersCopyTheirTextUnchanged) {
  const std::vector<std::tuple<const char*, const char*, const char*>> regions = {
      {"gen/launch_runtime.h", "expression_functions", kopt::gen::shipped::expression_functions},
      {"gen/launch_runtime.h", "launch_config", kopt::gen::shipped::launch_config},
      {"model/dispatch_rule.h", "dispatch_rule", kopt::gen::shipped::dispatch_rule},
      {"model/dispatch_rule.h", "nearest_tuned", kopt::gen::shipped::nearest_tuned},
      {"gen/capture_runtime.h", "capture_includes", kopt::gen::shipped::capture_includes},
      {"gen/capture_runtime.h", "capture_runtime", kopt::gen::shipped::capture_runtime}};
  const kopt::spec::Spec s = kopt::spec::load_spec(std::string(KOPT_SOURCE_DIR) + "/templates/sgemm/sgemm.json");
  auto kernel = [](int tile) {
    const std::string t = std::to_string(tile);
    return kopt::test::empty_sgemm({"BM=" + t, "BN=" + t}, "ceil_div(N, BN), ceil_div(M, BM), 1");
  };
  const std::vector<kopt::gen::KernelVariant> vs = {{kernel(64), "v0.cu", "", {}}, {kernel(128), "v1.cu", "", {}}};
  const kopt::model::DispatchTree t = kopt::test::modelled_dispatch(
      {"M", "N", "K"}, {{"a", {4096, 4096, 4096}, {2.0, 1.0}}, {"b", {256, 256, 4096}, {1.0, 2.0}}}, {2, 1},
      {1e-9, 1e-9}, 0.1, "BM * BN * K");
  const std::string with_model = kopt::gen::launch_header("k", vs, s, &t);
  const std::vector<kopt::gen::KernelVariant> shaped = {{kernel(64), "v0.cu", "", {{{"M", 64}, {"N", 64}, {"K", 64}}}},
                                                        {kernel(128), "v1.cu", "", {{{"M", 9}, {"N", 9}, {"K", 9}}}}};
  const std::string nearest = kopt::gen::launch_header("k", shaped, s);
  for (const auto& [file, name, embedded] : regions) {
    const std::string want = region(file, name);
    ASSERT_FALSE(want.empty()) << file << " has no region " << name;
    EXPECT_EQ(embedded, want) << name << ": the text kopt embedded is not " << file << "'s";
    const std::string& header = std::string(name) == "nearest_tuned" ? nearest : with_model;
    EXPECT_NE(header.find(want), std::string::npos) << name << " is not in the launch header unchanged";
  }
  EXPECT_EQ(with_model.find("nearest_tuned"), std::string::npos) << "a header holds only the rule it uses";
}

// The launch header's expression functions give what kopt's expressions
// (spec::Expr, with which kopt timed every launch) give, on positive
// arguments: those of launches.
TEST(ShippedHeaders, ExpressionFunctionsAgreeWithKoptsExpressions) {
  namespace rt = kopt::gen::launch_runtime;
  const std::vector<long long> xs = {1, 2, 3, 7, 8, 9, 31, 32, 33, 100, 255, 256, 1000, 4096, 65535, 1 << 20, 3000000007LL};
  auto eval = [](const std::string& e, long long a, long long b) {
    return kopt::spec::Expr::parse(e).eval({{"a", a}, {"b", b}});
  };
  for (long long a : xs) {
    EXPECT_EQ(rt::abs(a), eval("abs(a)", a, 1));
    EXPECT_EQ(rt::abs(-a), eval("abs(0 - a)", a, 1));
    EXPECT_EQ(rt::log2(a), eval("log2(a)", a, 1)) << a;
    EXPECT_EQ(rt::is_pow2(a), eval("is_pow2(a)", a, 1)) << a;
    if (a <= 62) EXPECT_EQ(rt::pow2(a), eval("pow2(a)", a, 1));
    for (long long b : xs) {
      EXPECT_EQ(rt::ceil_div(a, b), eval("ceil_div(a, b)", a, b)) << a << ", " << b;
      EXPECT_EQ(rt::align_up(a, b), eval("align_up(a, b)", a, b)) << a << ", " << b;
      EXPECT_EQ(rt::min(a, b), eval("min(a, b)", a, b));
      EXPECT_EQ(rt::max(a, b), eval("max(a, b)", a, b));
      EXPECT_EQ(rt::min(a, b, 5, a + 1), eval("min(a, b, 5, a + 1)", a, b));
      EXPECT_EQ(rt::max(a, b, 5, a + 1), eval("max(a, b, 5, a + 1)", a, b));
    }
  }
  const rt::LaunchConfig c{{1, 2, 3}, {4, 5, 6}, 7, 0};
  EXPECT_EQ(c.grid[2] * c.block[2] + c.shared_bytes, 25u);
}

// The capture runtime writes what kopt reads (spec::parse_capture), merges
// a file into its counts, and leaves another kernel's file alone.
TEST(ShippedHeaders, TheCaptureRuntimeWritesWhatKoptReads) {
  namespace cap = kopt::gen::capture_example;
  cap::Counts counts;
  counts[{4096, 1024, 512}] = 120;
  counts[{1, 7, 5}] = 3;
  counts[{2, 7, 5}] = 120;
  const std::string text = cap::to_text(cap::ranked(counts));
  const kopt::spec::Capture c = kopt::spec::parse_capture(nlohmann::json::parse(text), "capture");
  EXPECT_EQ(c.kernel, "example");
  EXPECT_EQ(c.size_names, (std::vector<std::string>{"M", "N", "K"}));
  ASSERT_EQ(c.shapes.size(), 3u);
  EXPECT_EQ(c.launches, 243u);
  EXPECT_EQ(c.shapes[2].sizes, (std::map<std::string, int64_t>{{"M", 1}, {"N", 7}, {"K", 5}}));
  EXPECT_EQ(c.shapes[2].count, 3u);
  // Read back: the counts add up.
  cap::Counts merged = counts;
  bool other = false;
  EXPECT_EQ(cap::merge_text(text, merged, other), "");
  EXPECT_FALSE(other);
  EXPECT_EQ((merged[{4096, 1024, 512}]), 240u);
  // Another kernel's capture, or another format: left alone (other = true); not JSON: refused.
  const std::string another = "{\"kopt_capture\": 1, \"kernel\": \"sgemm\", \"sizes\": [\"M\", \"N\", \"K\"], \"launches\": []}";
  EXPECT_NE(cap::merge_text(another, merged, other).find("kernel 'sgemm'"), std::string::npos);
  EXPECT_TRUE(other);
  other = false;
  EXPECT_EQ(cap::merge_text("{\"kopt_capture\": 2}", merged, other), "it is a capture of another format than 1");
  EXPECT_TRUE(other);
  other = false;
  EXPECT_EQ(cap::merge_text("{\"kopt_capture\": 1,", merged, other), "not valid JSON");
  EXPECT_FALSE(other);
  EXPECT_EQ((merged[{4096, 1024, 512}]), 240u) << "a refused file adds nothing";
}

// The nearest-tuned-shape choice of headers without a measured dispatch:
// the distance is in log sizes, each taken as 1 at least.
TEST(ShippedHeaders, NearestTunedShapeIsByLogDistance) {
  namespace rule = kopt::model::dispatch_rule;
  const double shapes[][2] = {{1000, 1000}, {4, 1000}, {1000, 4}};
  const int variants[] = {0, 1, 2};
  auto at = [&](double a, double b) {
    const double want[] = {a, b};
    return rule::nearest_tuned(&shapes[0][0], variants, 3, 2, want);
  };
  EXPECT_EQ(at(900, 1100), 0);
  EXPECT_EQ(at(1, 2000), 1);
  EXPECT_EQ(at(0, 2000), 1) << "a size below 1 is taken as 1";
  EXPECT_EQ(at(2000, 1), 2);
  EXPECT_EQ(at(60, 1000), 1) << "60 is nearer 4 (15x) than 1000 (16.7x)";
  EXPECT_EQ(at(64, 1000), 0) << "64 is nearer 1000 (15.6x) than 4 (16x)";
  EXPECT_EQ(rule::nearest_tuned(&shapes[0][0], variants, 0, 2, shapes[0]), 0) << "no shapes: variant 0";
}

}  // namespace
