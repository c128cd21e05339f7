// Dispatch by measurement (model/dispatch.h): the decision tree over the sizes
// that the launch header of a shape-specialised kernel uses.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "model/dispatch.h"
#include "spec/launch.h"
#include "spec/spec.h"
#include "util/error.h"

namespace {

using kopt::model::check_dispatch;
using kopt::model::derive_dispatch;
using kopt::model::DispatchSample;
using kopt::model::DispatchTree;
using nlohmann::json;

const std::vector<std::string> kMNK = {"M", "N", "K"};

/// Expects DispatchTree::from_json to refuse `j` with an error naming `path`; `what` says what was wrong.
void expect_refused(const json& j, int variants, const std::string& path, const std::string& what) {
  try {
    DispatchTree::from_json(j, "summary.json", variants);
    FAIL() << what << " was accepted";
  } catch (const kopt::Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

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

// The cost model on real runs and on shapes they never saw. The tree and the
// model are grown on what kopt measured on the tuned shapes (17, then 18) of
// templates/sgemm/application_shapes.json (one H200), with the launches from
// templates/sgemm/sgemm.json's template launch; they are then judged on the
// benchmark's timings of every variant on the 75 DeepBench shapes, none of
// them tuned on. Five independent runs: h200_classes.json (11 variants; its
// tree alone ran 23 of the shapes more than 5% slower than variant 0, up to
// 4.7x: a 48-block grid on 512x1500x2816) and h200_example.json (the example
// project's tuning committed until 2026-12-04: 11 variants, tuned on 18
// shapes), h200_seeded.json (the example re-tuned with the spec's first five
// seeds, 2026-12-03: 7 variants, not committed), h200_six_seeds.json
// (re-tuned with all six seeds and deduplicated finalists, 2026-12-03: 11
// variants, not committed) and h200_spread.json (re-tuned with this model,
// 2026-12-04: 11 variants; the example's committed tuning). All five are
// written by scripts/record_dispatch.py.
//
// The miss these records once named: on h200_seeded, 3072x1500x1024 ran
// variant 5 (a 3-stage 128x64 tile, 576 blocks in 1.45 waves), predicted
// 0.260 ms against variant 0's 0.286, measured 0.309 against 0.275 (1.12x);
// h200_six_seeds the same with its variant 9. With the spread-waves and data
// terms, fitted variants whose time at one or two waves the rounded-up waves
// alone under-predicted by 14-20% (variant 0, a 64x64 split-K tile at 6
// blocks per SM) are predicted there, and the pick is variant 0: no record
// runs a DeepBench shape more than 5% slower than variant 0 now.
class RecordedClassRun : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    const std::string file = std::string("tests/data/dispatch/") + GetParam();
    std::ifstream f(std::string(KOPT_SOURCE_DIR) + "/" + file);
    ASSERT_TRUE(f) << file;
    d_ = json::parse(f);
    std::ifstream t(std::string(KOPT_SOURCE_DIR) + "/templates/sgemm/sgemm.json");
    ASSERT_TRUE(t) << "templates/sgemm/sgemm.json";
    const json l = json::parse(t)["template"]["launch"];
    for (int i = 0; i < 3; ++i) {
      const json& g = l["grid"][static_cast<size_t>(i)];
      launch_.grid[i] = g.is_string() ? kopt::spec::Expr::parse(g) : kopt::spec::Expr::constant(g.get<int64_t>());
    }
    ASSERT_TRUE(l.contains("block_work")) << "the SGEMM template's launch has no block_work";
    ASSERT_TRUE(l.contains("traffic_bytes")) << "the SGEMM template's launch has no traffic_bytes";
    launch_.block_work = kopt::spec::Expr::parse(l["block_work"].get<std::string>());
    launch_.traffic_bytes = kopt::spec::Expr::parse(l["traffic_bytes"].get<std::string>());
    data_bytes_ = kopt::spec::data_bytes_expr(kopt::spec::load_spec(std::string(KOPT_SOURCE_DIR) + "/templates/sgemm/sgemm.json"));
    for (const auto& v : d_["variants"]) {
      std::map<std::string, int64_t> p;
      std::stringstream ss(v["label"].get<std::string>().substr(v["label"].get<std::string>().find(':') + 1));
      for (std::string kv; std::getline(ss, kv, ',');) p[kv.substr(0, kv.find('='))] = std::stoll(kv.substr(kv.find('=') + 1));
      params_.push_back(p);
      blocks_per_sm_.push_back(v["blocks_per_sm"].get<int>());
    }
    tuned_ = samples(d_["tuned"]);
    held_out_ = samples(d_["held_out"]);
  }
  std::vector<DispatchSample> samples(const json& rows) const {
    std::vector<DispatchSample> out;
    for (const auto& c : rows) {
      DispatchSample s{c["case"], {c["M"], c["N"], c["K"]}, {}};
      for (const auto& v : c["variant_ms"]) s.ms.push_back(v.is_null() ? NAN : v.get<double>());
      kopt::spec::Case sc;
      sc.name = s.name;
      sc.sizes = {{"M", s.sizes[0]}, {"N", s.sizes[1]}, {"K", s.sizes[2]}};
      for (const auto& p : params_) {
        const kopt::spec::LaunchDims ld = kopt::spec::resolve_launch(launch_, sc, p);
        s.blocks.push_back(ld.grid[0] * ld.grid[1] * ld.grid[2]);
        s.block_work.push_back(static_cast<double>(ld.block_work.value()));
        s.traffic.push_back(static_cast<double>(ld.traffic_bytes.value()));
        s.data_bytes.push_back(static_cast<double>(data_bytes_.eval(kopt::spec::bindings_for(sc, p))));
      }
      out.push_back(std::move(s));
    }
    return out;
  }
  DispatchTree grown(const std::vector<DispatchSample>& on) const {
    DispatchTree t = derive_dispatch(kMNK, on, static_cast<int>(params_.size()), 0.03);
    t.model = kopt::model::derive_dispatch_model(t, on, blocks_per_sm_, d_["sm_count"].get<int>(),
                                                 launch_.block_work.text(), launch_.traffic_bytes.text(),
                                                 data_bytes_.text());
    return t;
  }
  json d_;
  kopt::spec::Launch launch_;
  kopt::spec::Expr data_bytes_;  // spec::data_bytes_expr of the SGEMM template: (M*K)*4 + (K*N)*4 + (M*N)*4
  std::vector<std::map<std::string, int64_t>> params_;
  std::vector<int> blocks_per_sm_;
  std::vector<DispatchSample> tuned_, held_out_;
};

struct Judged {
  int slower_than_v0 = 0, within_5pct = 0;
  std::set<std::string> slower_than_v0_shapes;
  int untimed = 0;  // picks of a variant the benchmark did not time there (its probe launch was over 2x cuBLAS's)
  double geomean_vs_fastest = 0;  // geomean of fastest / dispatched, over the shapes where it was timed
  std::string worst;
};

Judged judge(const DispatchTree& t, const std::vector<DispatchSample>& shapes, bool with_model) {
  Judged j;
  double log_sum = 0, worst = 0;
  int timed = 0;
  for (const auto& s : shapes) {
    const int v = with_model ? t.select_guarded(s) : t.select(s.sizes);
    double best = INFINITY;
    for (double x : s.ms)
      if (std::isfinite(x)) best = std::min(best, x);
    const double mine = std::isfinite(s.ms[static_cast<size_t>(v)]) ? s.ms[static_cast<size_t>(v)] : INFINITY;
    const double vs0 = mine / s.ms[0];
    if (std::isfinite(mine) && vs0 > 1.05) {
      ++j.slower_than_v0;
      j.slower_than_v0_shapes.insert(s.name);
      if (vs0 > worst) {
        worst = vs0;
        j.worst = s.name + " (variant " + std::to_string(v) + ", " + std::to_string(vs0) + "x variant 0)";
      }
    }
    j.within_5pct += mine <= 1.05 * best;
    if (std::isfinite(mine)) {
      log_sum += std::log(best / mine);
      ++timed;
    } else {
      ++j.untimed;
    }
  }
  j.geomean_vs_fastest = timed ? std::exp(log_sum / timed) : 0.0;
  return j;
}

TEST_P(RecordedClassRun, OffTheTunedShapesTheModelPicksAndIsNeverSlowerThanVariantZero) {
  ASSERT_GE(tuned_.size(), 17u);
  ASSERT_EQ(held_out_.size(), 75u);
  const DispatchTree t = grown(tuned_);
  ASSERT_TRUE(t.model.has_value());
  ASSERT_TRUE(t.model->margin.has_value()) << "no margin passed the leave-one-out check";
  EXPECT_GE(*t.model->margin, 0.05);  // never below the bar's 5%
  EXPECT_LE(*t.model->margin, 3.0);
  for (double b : t.model->ms_per_byte) EXPECT_GE(b, 0.0);
  for (double w : t.model->ms_per_work) EXPECT_GE(w, 0.0);

  // On the tuned shapes the tree decides: each runs the tree's variant,
  // within the noise of its fastest.
  for (const auto& s : tuned_) EXPECT_EQ(t.select_guarded(s), t.select(s.sizes)) << s.name;

  const Judged tree = judge(t, held_out_, false), model = judge(t, held_out_, true);
  std::cout << GetParam() << ", held-out DeepBench shapes: tree alone " << tree.slower_than_v0
            << " of 75 more than 5% slower than variant 0 (worst " << tree.worst << "), " << tree.within_5pct
            << " within 5% of the fastest, geomean fastest/dispatched " << tree.geomean_vs_fastest << "; the model "
            << "(margin " << *t.model->margin << ") " << model.slower_than_v0 << ", " << model.within_5pct << ", "
            << model.geomean_vs_fastest << "\n";
  EXPECT_EQ(model.slower_than_v0_shapes, std::set<std::string>{}) << model.worst;
  EXPECT_EQ(model.untimed, 0);  // on the tuned shapes every variant was timed
  EXPECT_GT(model.geomean_vs_fastest, tree.geomean_vs_fastest);
  EXPECT_GT(model.within_5pct, tree.within_5pct);
  // With this rule: 53 (h200_classes), 68 (h200_example), 75 (h200_seeded),
  // 69 (h200_six_seeds) and 75 (h200_spread, the committed tuning; the
  // benchmark's two runs of its header: 75 and 75) of 75 within 5% of the
  // fastest. Before the
  // spread-waves and data terms and the support (docs/dispatch.md): 47, 70,
  // 71 and 65, with 3072x1500x1024 12% slower than variant 0 on the two
  // seeded records (the benchmark's two runs of the example's header then:
  // 70 and 70; of the h200_seeded header 70 and 71, of h200_six_seeds 65 and
  // 64). Unweighted, with a margin from 0, and without those terms: 48 and
  // 69 on the first two; 46 and 67 without the launch term (ms_fixed) as
  // well. The tree guarded by the older veto-only wave model reached 40 on
  // h200_classes.
  EXPECT_GE(model.within_5pct, 50);
  if (std::string(GetParam()) == "h200_spread.json") EXPECT_EQ(model.within_5pct, 75);
  EXPECT_GE(model.geomean_vs_fastest, 0.9);
}

TEST_P(RecordedClassRun, TheModelRoundTripsThroughJsonAndMalformedOnesAreNamed) {
  const int variants = static_cast<int>(params_.size());
  const DispatchTree t = grown(tuned_);
  ASSERT_TRUE(t.model.has_value());
  const DispatchTree back = DispatchTree::from_json(t.to_json(), "summary.json", variants);
  ASSERT_TRUE(back.model.has_value());
  EXPECT_EQ(back.model->blocks_per_sm, t.model->blocks_per_sm);
  EXPECT_EQ(back.model->ms_per_byte, t.model->ms_per_byte);
  EXPECT_EQ(back.model->ms_fixed, t.model->ms_fixed);
  EXPECT_EQ(back.model->ms_per_work_spread, t.model->ms_per_work_spread);
  EXPECT_EQ(back.model->ms_per_data_byte, t.model->ms_per_data_byte);
  EXPECT_EQ(back.model->data_bytes, t.model->data_bytes);
  EXPECT_EQ(back.model->support, t.model->support);
  EXPECT_EQ(t.model->data_bytes, "(M*K)*4 + (K*N)*4 + (M*N)*4");
  ASSERT_EQ(t.model->support.size(), params_.size());
  EXPECT_EQ(t.model->support[0].size(), 3u);  // variant 0 is within 2x of the fastest somewhere
  EXPECT_EQ(back.model->traffic, t.model->traffic);
  EXPECT_EQ(back.model->tuned, t.model->tuned);
  EXPECT_EQ(back.model->margin, t.model->margin);
  for (const auto& s : held_out_) EXPECT_EQ(back.select_guarded(s), t.select_guarded(s)) << s.name;

  json bad = t.to_json();
  bad["model"]["blocks_per_sm"].erase(0);
  expect_refused(bad, variants, "$.model.blocks_per_sm", "a model with too few blocks_per_sm entries");
  bad = t.to_json();
  bad["model"]["traffic_bytes"] = "";
  expect_refused(bad, variants, "$.model.ms_per_byte", "a model with traffic coefficients but no traffic_bytes");
  // A model from before the launch term (no "ms_fixed") reads with 0 there, as it was fitted.
  json no_fixed = t.to_json();
  no_fixed["model"].erase("ms_fixed");
  const DispatchTree nf = DispatchTree::from_json(no_fixed, "summary.json", variants);
  ASSERT_TRUE(nf.model.has_value());
  EXPECT_EQ(nf.model->ms_fixed, std::vector<double>(params_.size(), 0.0));
  bad = t.to_json();
  bad["model"]["ms_fixed"].erase(0);
  expect_refused(bad, variants, "$.model.ms_fixed", "a model with too few ms_fixed entries");
  bad = t.to_json();
  bad["model"]["data_bytes"] = "";
  bool positive = false;
  for (double x : t.model->ms_per_data_byte) positive = positive || x > 0;
  if (positive)
    expect_refused(bad, variants, "$.model.ms_per_data_byte", "a model with data coefficients but no data_bytes");
  bad = t.to_json();
  bad["model"]["support"][1] = json::array({json::array({1, 2})});
  expect_refused(bad, variants, "$.model.support[1]", "a support range for one size of three");
  bad = t.to_json();
  bad["model"]["support"][0][0] = json::array({5, 4});
  expect_refused(bad, variants, "$.model.support[0][0][1]", "a support range whose greatest is below its least");
  // A model from before the spread, data and support terms reads with 0 and no limit, as it was fitted.
  json older = t.to_json();
  for (const char* k : {"ms_per_work_spread", "ms_per_data_byte", "data_bytes", "support"}) older["model"].erase(k);
  const DispatchTree od = DispatchTree::from_json(older, "summary.json", variants);
  ASSERT_TRUE(od.model.has_value());
  EXPECT_EQ(od.model->ms_per_work_spread, std::vector<double>(params_.size(), 0.0));
  EXPECT_TRUE(od.model->support.empty());
  // ...and is written back as it was read: no "support" (no limit), which reads again.
  EXPECT_FALSE(od.to_json()["model"].contains("support"));
  const DispatchTree od2 = DispatchTree::from_json(od.to_json(), "summary.json", variants);
  ASSERT_TRUE(od2.model.has_value());
  EXPECT_TRUE(od2.model->support.empty());
  for (const auto& x : held_out_) EXPECT_EQ(od2.select_guarded(x), od.select_guarded(x)) << x.name;
  // A model from an older kopt (no "rule": its margin was the veto's) reads as none.
  json old = t.to_json();
  old["model"].erase("rule");
  EXPECT_FALSE(DispatchTree::from_json(old, "summary.json", variants).model.has_value());
  // Without occupancy, or without launches, there is no model.
  std::vector<int> none(blocks_per_sm_.size(), 0);
  EXPECT_FALSE(kopt::model::derive_dispatch_model(t, tuned_, none, 132, "1").has_value());
  std::vector<DispatchSample> bare = tuned_;
  for (auto& s : bare) s.blocks.clear();
  EXPECT_FALSE(kopt::model::derive_dispatch_model(t, bare, blocks_per_sm_, 132, "1").has_value());
  // Samples with traffic for a model without (or the reverse) are refused, not half-used.
  EXPECT_FALSE(kopt::model::derive_dispatch_model(t, tuned_, blocks_per_sm_, 132, "1", "").has_value());
}

// The same rule grown on half of the 75 DeepBench shapes (every other one,
// with the benchmark's timings) and judged on the other half, both ways: a
// second check, on shapes of the same suite.
TEST_P(RecordedClassRun, GrownOnHalfOfTheSuiteTheModelHoldsOnTheOtherHalf) {
  for (int fold = 0; fold < 2; ++fold) {
    std::vector<DispatchSample> grow, judge_on;
    for (size_t i = 0; i < held_out_.size(); ++i) (static_cast<int>(i % 2) == fold ? grow : judge_on).push_back(held_out_[i]);
    const DispatchTree t = grown(grow);
    ASSERT_TRUE(t.model.has_value());
    const Judged tree = judge(t, judge_on, false), model = judge(t, judge_on, true);
    std::cout << GetParam() << ", fold " << fold << ": margin " << (t.model->margin ? *t.model->margin : -1)
              << "; tree alone " << tree.slower_than_v0 << " of " << judge_on.size() << " more than 5% slower than "
              << "variant 0 (worst " << tree.worst << "), " << tree.within_5pct << " within 5%; the model "
              << model.slower_than_v0 << " (worst " << model.worst << "), " << model.within_5pct << ", "
              << model.untimed << " on a variant the benchmark did not time there\n";
    // None. Without the support (DispatchModel::support), h200_seeded fold 0 ran the
    // row kernel fitted on N <= 4 at 35x1500x2048 and 35x1500x2560, 1.46x variant 0; before the
    // spread-waves and data terms, h200_seeded and h200_six_seeds fold 0 ran 3072x1500x1024 12% slower.
    EXPECT_EQ(model.slower_than_v0_shapes, std::set<std::string>{}) << model.worst;
    // Grown on benchmark rows, where a variant slower than 2x cuBLAS at its
    // probe was not timed, the fit sees such variants only where they were
    // fast; one such pick was seen (an earlier example tuning, fold 1: 512x1x500000).
    EXPECT_LE(model.untimed, 1);
  }
}

INSTANTIATE_TEST_SUITE_P(H200, RecordedClassRun, ::testing::Values("h200_classes.json", "h200_example.json", "h200_seeded.json",
                                           "h200_six_seeds.json", "h200_spread.json"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           return std::string(i.param).substr(0, std::string(i.param).find('.'));
                         });

// Between the tuned shapes. h200_six_seeds_probes.json holds the tuned
// shapes of h200_six_seeds.json and, as held-out shapes, the benchmark's
// timings of every variant of the same header on 180 shapes near them
// (scripts/probe_shapes.py templates/sgemm/application_shapes.json: each tuned
// size of at least 64 times 1/2, 2, 2/3 or 3/2, one at a time; one H200 run,
// 2026-12-03). docs/dispatch.md, "Between the tuned shapes".
class RecordedProbes : public RecordedClassRun {
 protected:
  /// The samples with variants `keep` alone (keep[0] == 0: variant 0 stays variant 0).
  static std::vector<DispatchSample> only(const std::vector<DispatchSample>& in, const std::vector<size_t>& keep) {
    std::vector<DispatchSample> out;
    for (const auto& s : in) {
      DispatchSample o{s.name, s.sizes, {}};
      for (size_t v : keep) {
        o.ms.push_back(s.ms[v]);
        o.blocks.push_back(s.blocks[v]);
        o.block_work.push_back(s.block_work[v]);
        o.traffic.push_back(s.traffic[v]);
        o.data_bytes.push_back(s.data_bytes[v]);
      }
      out.push_back(std::move(o));
    }
    return out;
  }
  /// The tree and the model grown on the tuned shapes with variants `keep` alone.
  DispatchTree grown_with(const std::vector<size_t>& keep) const {
    const std::vector<DispatchSample> on = only(tuned_, keep);
    DispatchTree t = derive_dispatch(kMNK, on, static_cast<int>(keep.size()), 0.03);
    std::vector<int> bps;
    for (size_t v : keep) bps.push_back(blocks_per_sm_[v]);
    t.model = kopt::model::derive_dispatch_model(t, on, bps, d_["sm_count"].get<int>(), launch_.block_work.text(),
                                                 launch_.traffic_bytes.text(), data_bytes_.text());
    return t;
  }
  /// Geomean over `shapes` of (fastest of every variant) / (the dispatched one of `keep`), where it was timed.
  double speed(const DispatchTree& t, const std::vector<DispatchSample>& shapes, const std::vector<size_t>& keep) const {
    const std::vector<DispatchSample> sub = only(shapes, keep);
    double log_sum = 0;
    int n = 0;
    for (size_t i = 0; i < shapes.size(); ++i) {
      const double mine = sub[i].ms[static_cast<size_t>(t.select_guarded(sub[i]))];
      double best = INFINITY;
      for (double x : shapes[i].ms)
        if (std::isfinite(x)) best = std::min(best, x);
      if (std::isfinite(mine)) {
        log_sum += std::log(best / mine);
        ++n;
      }
    }
    return n ? std::exp(log_sum / n) : 0.0;
  }
};

TEST_P(RecordedProbes, BetweenTheTunedShapesTheModelIsNeverSlowerThanVariantZero) {
  ASSERT_EQ(held_out_.size(), 180u);
  const DispatchTree t = grown(tuned_);
  ASSERT_TRUE(t.model.has_value());
  const Judged tree = judge(t, held_out_, false), model = judge(t, held_out_, true);
  std::cout << GetParam() << ", 180 probe shapes: tree alone " << tree.slower_than_v0
            << " more than 5% slower than variant 0 (worst " << tree.worst << "), " << tree.within_5pct
            << " within 5% of the fastest; the model " << model.slower_than_v0 << " (" << model.worst << "), "
            << model.within_5pct << ", geomean fastest/dispatched " << model.geomean_vs_fastest << "\n";
  // 160 of 180 within 5% of the fastest, none more than 5% slower than
  // variant 0. Before the spread-waves and data terms and the support: 154,
  // and 48x683x2048 (M = 48 and K of a tuned shape, N two thirds of its 1024)
  // 8.7% slower than variant 0.
  EXPECT_EQ(model.slower_than_v0_shapes, std::set<std::string>{}) << model.worst;
  EXPECT_EQ(model.untimed, 0);
  EXPECT_GT(model.within_5pct, tree.within_5pct);
  EXPECT_GE(model.within_5pct, 158);
}

// A finding for the tuner, replayed: variants dropped one at a time, each
// time the one whose absence puts the most probe shapes within 5% of the
// fastest variant left (a shape more than 5% slower than variant 0 counting
// -5), while the geomean over the probes of fastest-of-all / dispatched
// falls by less than 0.5%. The probes drop variants 5, 4 and 9 (a 128x256
// split-K tile, a row kernel, a 128x64 3-stage tile), and the file of the 8
// left puts 74 of the 75 DeepBench shapes within 5% of its fastest variant,
// none slower than variant 0; with all 11: 69 and none. The cost is on
// tuned shapes, where each dropped variant was the fastest: 3000x1000x2000
// (a flagship shape) 11%, 768x1200x2048 14%, 768x2x300000 11% slower. (With
// the model before the spread-waves and data terms: 5, 9 and 4; 74 and 65.)
TEST_P(RecordedProbes, VariantsDroppedOnTheProbesLeaveTheDeepBenchShapesWithinFivePercent) {
  std::ifstream f(std::string(KOPT_SOURCE_DIR) + "/tests/data/dispatch/h200_six_seeds.json");
  ASSERT_TRUE(f);
  const json deepbench = json::parse(f);
  ASSERT_EQ(deepbench["variants"], d_["variants"]);
  ASSERT_EQ(deepbench["tuned"], d_["tuned"]);
  const std::vector<DispatchSample> suite = samples(deepbench["held_out"]);
  ASSERT_EQ(suite.size(), 75u);

  std::vector<size_t> keep(params_.size());
  for (size_t v = 0; v < keep.size(); ++v) keep[v] = v;
  auto score = [&](const std::vector<size_t>& k) {
    const DispatchTree t = grown_with(k);
    const Judged j = judge(t, only(held_out_, k), true);
    return std::make_pair(j.within_5pct - 5 * j.slower_than_v0, speed(t, held_out_, k));
  };
  std::vector<size_t> dropped;
  for (auto now = score(keep);;) {
    size_t drop = 0;
    std::pair<int, double> best{now.first, 0};
    for (size_t i = 1; i < keep.size(); ++i) {
      std::vector<size_t> k = keep;
      k.erase(k.begin() + static_cast<std::ptrdiff_t>(i));
      const auto s = score(k);
      if (s.first > best.first && s.second >= now.second * (1 - 0.005)) {
        best = s;
        drop = i;
      }
    }
    if (!drop) break;
    dropped.push_back(keep[drop]);
    keep.erase(keep.begin() + static_cast<std::ptrdiff_t>(drop));
    now = best;
  }
  EXPECT_EQ(dropped, (std::vector<size_t>{5, 4, 9}));
  const DispatchTree t = grown_with(keep);
  const Judged j = judge(t, only(suite, keep), true);
  std::cout << "dropped on the probes:";
  for (size_t v : dropped) std::cout << " " << v;
  std::cout << "; DeepBench with the " << keep.size() << " left: " << j.within_5pct << " of 75 within 5% of their "
            << "fastest, " << j.slower_than_v0 << " more than 5% slower than variant 0; geomean fastest of all 11 / "
            << "dispatched " << speed(t, suite, keep) << "\n";
  EXPECT_EQ(j.within_5pct, 74);
  EXPECT_EQ(j.slower_than_v0, 0);
}

INSTANTIATE_TEST_SUITE_P(H200, RecordedProbes, ::testing::Values("h200_six_seeds_probes.json"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           return std::string(i.param).substr(0, std::string(i.param).find('.'));
                         });

}  // namespace

namespace {

// Small cases of the cost model's edges (a review found each).
TEST(DispatchModelEdges, ABareSampleGetsTheTreeAnAbsurdLatencyIsIgnoredAndAModelNeedsTunedShapes) {
  // Two variants, three tuned shapes; variant 1 is 4x cheaper per unit of work.
  std::vector<DispatchSample> s;
  for (int64_t m : {1024, 2048, 4096}) {
    DispatchSample x{"s" + std::to_string(m), {m, m, m}, {4e-9 * m * m, 1e-9 * m * m}};
    x.blocks = {m, m};
    x.block_work = {static_cast<double>(m), static_cast<double>(m)};
    s.push_back(x);
  }
  DispatchTree t = derive_dispatch(kMNK, s, 2, 0.03);
  t.model = kopt::model::derive_dispatch_model(t, s, {1, 1}, 132, "1");
  ASSERT_TRUE(t.model.has_value());
  ASSERT_TRUE(t.model->margin.has_value());
  // Off the tuned shapes the model picks variant 1 for a sample with launches...
  DispatchSample off{"off", {3000, 3000, 3000}, {NAN, NAN}};
  off.blocks = {3000, 3000};
  off.block_work = {3000.0, 3000.0};
  EXPECT_EQ(t.select_guarded(off), 1);
  // ...and a sample with sizes alone gets the tree, as documented.
  const DispatchSample bare{"bare", {3000, 3000, 3000}, {}};
  EXPECT_EQ(t.select_guarded(bare), t.select(bare.sizes));
  // A latency of 1e-300 ms (its inverse overflows the sums) is left out of
  // the fit instead of zeroing the variant's coefficients.
  std::vector<DispatchSample> absurd = s;
  absurd[0].ms[1] = 1e-300;
  const auto m = kopt::model::derive_dispatch_model(t, absurd, {1, 1}, 132, "1");
  ASSERT_TRUE(m.has_value());
  EXPECT_GT(m->ms_per_work[1], 0.0);
  EXPECT_TRUE(std::isfinite(m->ms_per_work[1]));
  // The launch term: latencies of 5 us per launch plus 1e-9 ms per unit of work are fitted back
  // (within rounding).
  std::vector<DispatchSample> fixed;
  for (int64_t w : {1000, 100000, 3000000, 20000000}) {
    DispatchSample x{"w" + std::to_string(w), {w, 1, 1}, {0.005 + 1e-9 * w, 0.005 + 1e-9 * w}};
    x.blocks = {1, 1};
    x.block_work = {static_cast<double>(w), static_cast<double>(w)};
    fixed.push_back(x);
  }
  DispatchTree tf = derive_dispatch(kMNK, fixed, 2, 0.03);
  const auto mf = kopt::model::derive_dispatch_model(tf, fixed, {1, 1}, 132, "1");
  ASSERT_TRUE(mf.has_value());
  EXPECT_NEAR(mf->ms_fixed[0], 0.005, 1e-9);
  // One block: the rounded-up and the spread waves are both proportional to the work (1 and 1/132).
  EXPECT_NEAR(mf->ms_per_work[0] + mf->ms_per_work_spread[0] / 132, 1e-9, 1e-15);
  for (const auto& x : fixed)
    EXPECT_NEAR(mf->predicted_ms(0, 1, x.block_work[0], 0.0), x.ms[0], 1e-9) << x.name;
  // A recorded model without tuned shapes would make a header that does not compile: refused.
  json j = t.to_json();
  j["model"]["tuned"] = json::array();
  expect_refused(j, 2, "$.model.tuned", "a model without tuned shapes");
}

}  // namespace

