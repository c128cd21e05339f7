// Dispatch by measurement (model/dispatch.h): the decision tree over the sizes
// that the launch header of a shape-specialised kernel uses.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "model/dispatch.h"
#include "util/error.h"

namespace {

using kopt::model::check_dispatch;
using kopt::model::derive_dispatch;
using kopt::model::DispatchSample;
using kopt::model::DispatchTree;
using nlohmann::json;

const std::vector<std::string> kMNK = {"M", "N", "K"};

DispatchSample sample(int64_t m, int64_t n, int64_t k, std::vector<double> ms) {
  return {std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k), {m, n, k}, std::move(ms)};
}

TEST(Dispatch, OneQuestionSeparatesTwoRegimes) {
  // Variant 1 is 5x faster at N <= 4, 2x slower elsewhere.
  std::vector<DispatchSample> s = {sample(4096, 1, 1024, {1.0, 0.2}), sample(4096, 4, 1024, {1.0, 0.2}),
                                   sample(4096, 1024, 1024, {1.0, 2.0}), sample(1024, 4096, 512, {1.0, 2.0})};
  const DispatchTree t = derive_dispatch(kMNK, s, 2, 0.03);
  ASSERT_EQ(t.nodes.size(), 3u);
  EXPECT_EQ(t.nodes[0].dim, 1);       // N
  EXPECT_EQ(t.nodes[0].threshold, 64);  // floor(sqrt(4 * 1024))
  EXPECT_EQ(t.select({4096, 2, 1024}), 1);
  EXPECT_EQ(t.select({4096, 64, 1024}), 1);
  EXPECT_EQ(t.select({4096, 65, 1024}), 0);
  EXPECT_EQ(t.to_cpp(2), "  if (N <= 64) return 1;\n  return 0;\n");
  for (const auto& c : check_dispatch(t, s)) EXPECT_DOUBLE_EQ(c.slowdown, 1.0) << c.name;
}

TEST(Dispatch, VariantZeroUnlessAnotherIsFasterByMoreThanTheNoise) {
  std::vector<DispatchSample> s = {sample(1000, 1000, 1000, {1.0, 0.99}), sample(2000, 2000, 2000, {8.0, 7.9})};
  const DispatchTree t = derive_dispatch(kMNK, s, 2, 0.03);
  ASSERT_EQ(t.nodes.size(), 1u);
  EXPECT_EQ(t.nodes[0].variant, 0);
  EXPECT_EQ(t.to_cpp(0), "return 0;\n");
  // A clear gain everywhere: the other variant for all.
  s = {sample(1000, 1000, 1000, {1.0, 0.5}), sample(2000, 2000, 2000, {8.0, 4.0})};
  EXPECT_EQ(derive_dispatch(kMNK, s, 2, 0.03).to_cpp(0), "return 1;\n");
}

TEST(Dispatch, ALeafNeverTakesAVariantMeasuredSlowerThanVariantZeroOnOneOfItsShapes) {
  // Variant 1 wins big on one shape and loses 20% on the other: the total
  // regret would favour variant 1 for both, but the leaf of the second shape
  // must keep variant 0.
  std::vector<DispatchSample> s = {sample(100, 100, 100, {1.0, 0.3}), sample(300, 300, 300, {1.0, 1.2})};
  const DispatchTree t = derive_dispatch(kMNK, s, 2, 0.03);
  for (const auto& c : check_dispatch(t, s)) {
    const auto& row = c.name == "300x300x300" ? s[1] : s[0];
    EXPECT_LE(row.ms[static_cast<size_t>(c.chosen)], row.ms[0] * 1.03) << c.name;
  }
  EXPECT_EQ(t.select({300, 300, 300}), 0);
  EXPECT_EQ(t.select({100, 100, 100}), 1);
}

TEST(Dispatch, FailedVariantsAreNeverChosenForTheirShapes) {
  std::vector<DispatchSample> s = {sample(512, 1, 500000, {90.0, 0.3, NAN}), sample(4096, 4096, 4096, {5.0, INFINITY, 4.0})};
  const DispatchTree t = derive_dispatch(kMNK, s, 3, 0.03);
  EXPECT_EQ(t.select({512, 1, 500000}), 1);
  EXPECT_EQ(t.select({4096, 4096, 4096}), 2);
  // A shape no variant ran on is left out rather than steering the tree.
  s.push_back(sample(7, 7, 7, {NAN, NAN, NAN}));
  EXPECT_EQ(derive_dispatch(kMNK, s, 3, 0.03).to_json(), t.to_json());
}

TEST(Dispatch, JsonRoundTripAndMalformedTreesAreNamed) {
  std::vector<DispatchSample> s = {sample(4096, 1, 1024, {1.0, 0.2}), sample(4096, 1024, 1024, {1.0, 2.0})};
  const DispatchTree t = derive_dispatch(kMNK, s, 2, 0.05);
  const DispatchTree back = DispatchTree::from_json(t.to_json(), "summary.json", 2);
  EXPECT_EQ(back.to_json(), t.to_json());
  EXPECT_EQ(back.to_cpp(4), t.to_cpp(4));
  auto error_of = [](const json& j, int variants) {
    try {
      DispatchTree::from_json(j, "cache.json", variants);
    } catch (const kopt::SpecError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  json j = t.to_json();
  j["nodes"][0]["left"] = 0;  // a cycle
  EXPECT_NE(error_of(j, 2).find("cache.json: $.nodes[0].left"), std::string::npos) << error_of(j, 2);
  j = t.to_json();
  j["nodes"][1]["variant"] = 2;
  EXPECT_NE(error_of(j, 2).find("$.nodes[1].variant"), std::string::npos) << error_of(j, 2);
  j = t.to_json();
  j["nodes"][0]["dim"] = 3;
  EXPECT_NE(error_of(j, 2).find("$.nodes[0].dim"), std::string::npos) << error_of(j, 2);
  EXPECT_NE(error_of(json{{"sizes", kMNK}, {"nodes", json::array()}}, 2).find("$.nodes"), std::string::npos);
  EXPECT_THROW(derive_dispatch(kMNK, {{"bad", {1, 2}, {1.0, 2.0}}}, 2, 0.03), std::invalid_argument);
}

// The H200 measurements of the twelve SGEMM configurations of
// scripts/sgemm_kinds.py on the DeepBench inference-server suite and the five
// flagship shapes (tests/data/dispatch/h200_kinds.json): the tree puts every
// one of the 80 shapes on a variant within 10% of its fastest, most within the
// noise, in a tree a reader can follow.
TEST(Dispatch, RecordedH200SweepOfTheSgemmKinds) {
  std::ifstream f(std::string(KOPT_SOURCE_DIR) + "/tests/data/dispatch/h200_kinds.json");
  ASSERT_TRUE(f) << "tests/data/dispatch/h200_kinds.json";
  const json d = json::parse(f);
  std::vector<DispatchSample> s;
  const int variants = static_cast<int>(d["variants"].size());
  for (const auto& c : d["cases"]) {
    std::vector<double> ms;
    for (const auto& v : c["variant_ms"]) ms.push_back(v.is_null() ? NAN : v.get<double>());
    s.push_back({c["case"], {c["M"], c["N"], c["K"]}, ms});
  }
  ASSERT_EQ(s.size(), 80u);
  const DispatchTree t = derive_dispatch(kMNK, s, variants, 0.03);
  EXPECT_LE(t.nodes.size(), 61u) << t.to_cpp(0);
  int within_noise = 0;
  double worst = 1.0;
  for (const auto& c : check_dispatch(t, s)) {
    EXPECT_LE(c.slowdown, 1.10) << c.name << ": variant " << c.chosen << ", the fastest is " << c.fastest;
    within_noise += c.slowdown <= 1.03;
    worst = std::max(worst, c.slowdown);
  }
  EXPECT_GE(within_noise, 75) << t.to_cpp(0);
  // The regimes are the first questions: skinny N, then deep K.
  EXPECT_EQ(t.nodes[0].dim, 1);
  EXPECT_EQ(t.select({512, 1, 500000}), 7);  // the row kernel with a cluster split of K
  EXPECT_EQ(t.select({4096, 2048, 1024}), 0);
  std::cout << "tree: " << t.nodes.size() << " nodes, " << within_noise << " of 80 shapes within 3% of the fastest, "
            << "worst " << worst << "\n";
}

}  // namespace
