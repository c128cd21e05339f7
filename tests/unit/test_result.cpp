// Result / protocol JSON, latency statistics, verdict names.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

#include "eval/protocol.h"
#include "model/result.h"
#include "util/error.h"
#include "util/json.h"

using namespace kopt::eval;
using nlohmann::json;

namespace {

// Serialises to text and back, as the pipe and history.json do.
json through_text(const json& j) { return json::parse(kopt::dump_json(j)); }

std::string protocol_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const kopt::Error& e) {
    EXPECT_EQ(e.id(), "kopt.protocol.001") << e.what();
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected kopt::Error, got another exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected kopt::Error, nothing thrown";
  return "";
}

}  // namespace

// ---------------------------------------------------------------------------
// Verdicts

TEST(Verdict, NamesAreTheEnumeratorNames) {
  const std::pair<Verdict, const char*> all[] = {
      {Verdict::ok, "ok"},
      {Verdict::compile_error, "compile_error"},
      {Verdict::infeasible, "infeasible"},
      {Verdict::launch_error, "launch_error"},
      {Verdict::runtime_error, "runtime_error"},
      {Verdict::timeout, "timeout"},
      {Verdict::wrong_result, "wrong_result"},
      {Verdict::out_of_bounds, "out_of_bounds"},
      {Verdict::nondeterministic, "nondeterministic"},
      {Verdict::worker_crash, "worker_crash"},
  };
  for (auto [v, name] : all) {
    EXPECT_STREQ(verdict_name(v), name);
    EXPECT_EQ(parse_verdict(name), v);
  }
}

TEST(Verdict, UnknownNameThrows) {
  EXPECT_THROW(parse_verdict("OK"), std::invalid_argument);
  EXPECT_THROW(parse_verdict(""), std::invalid_argument);
  EXPECT_THROW(parse_verdict("crash"), std::invalid_argument);
}

// ---------------------------------------------------------------------------
// Statistics

TEST(LatencyStats, OddCount) {
  LatencyStats s = latency_stats({3.0, 1.0, 2.0});
  EXPECT_EQ(s.samples, 3);
  EXPECT_DOUBLE_EQ(s.median_ms, 2.0);
  EXPECT_DOUBLE_EQ(s.mean_ms, 2.0);
  EXPECT_DOUBLE_EQ(s.min_ms, 1.0);
  EXPECT_DOUBLE_EQ(s.max_ms, 3.0);
  EXPECT_DOUBLE_EQ(s.stddev_ms, std::sqrt(2.0 / 3.0));  // population, not sample
}

TEST(LatencyStats, EvenCountMedianIsMeanOfMiddleTwo) {
  LatencyStats s = latency_stats({4.0, 1.0, 3.0, 2.0});
  EXPECT_EQ(s.samples, 4);
  EXPECT_DOUBLE_EQ(s.median_ms, 2.5);
  EXPECT_DOUBLE_EQ(s.mean_ms, 2.5);
  EXPECT_DOUBLE_EQ(s.min_ms, 1.0);
  EXPECT_DOUBLE_EQ(s.max_ms, 4.0);
  EXPECT_DOUBLE_EQ(s.stddev_ms, std::sqrt(1.25));

  LatencyStats skew = latency_stats({10.0, 1.0, 1.0, 2.0, 2.0, 100.0});
  EXPECT_DOUBLE_EQ(skew.median_ms, 2.0);
  EXPECT_DOUBLE_EQ(skew.mean_ms, 116.0 / 6.0);
}

TEST(LatencyStats, EmptyAndSingle) {
  LatencyStats e = latency_stats({});
  EXPECT_EQ(e.samples, 0);
  EXPECT_EQ(e.median_ms, 0);
  EXPECT_EQ(e.mean_ms, 0);
  EXPECT_EQ(e.min_ms, 0);
  EXPECT_EQ(e.max_ms, 0);
  EXPECT_EQ(e.stddev_ms, 0);

  LatencyStats one = latency_stats({0.125});
  EXPECT_EQ(one.samples, 1);
  EXPECT_EQ(one.median_ms, 0.125);
  EXPECT_EQ(one.mean_ms, 0.125);
  EXPECT_EQ(one.stddev_ms, 0.0);
}

TEST(LatencyStats, StableForTinySpread) {
  // One-pass sum-of-squares would lose this spread to cancellation.
  LatencyStats s = latency_stats({1e6 + 1, 1e6 - 1, 1e6 + 1, 1e6 - 1});
  EXPECT_NEAR(s.stddev_ms, 1.0, 1e-9);
}

TEST(Geomean, KnownValues) {
  EXPECT_DOUBLE_EQ(geomean({1.0, 4.0}), 2.0);
  EXPECT_NEAR(geomean({2.0, 8.0, 4.0}), 4.0, 1e-12);
  EXPECT_DOUBLE_EQ(geomean({5.0}), 5.0);
  EXPECT_EQ(geomean({}), 0.0);
  // Log-sum: the product would overflow / underflow.
  EXPECT_NEAR(geomean({1e300, 1e300, 1e300}) / 1e300, 1.0, 1e-12);
  EXPECT_NEAR(geomean({1e-300, 1e-300, 1e-300}) / 1e-300, 1.0, 1e-12);
}

TEST(Geomean, RejectsNonPositiveAndNonFinite) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(geomean({1.0, 0.0}), std::invalid_argument);
  EXPECT_THROW(geomean({-1.0}), std::invalid_argument);
  EXPECT_THROW(geomean({1.0, inf}), std::invalid_argument);
  EXPECT_THROW(geomean({nan, 1.0}), std::invalid_argument);
  EXPECT_THROW(geomean({-inf}), std::invalid_argument);
}

// ---------------------------------------------------------------------------
// Result JSON

namespace {

Result full_result() {
  Result r;
  r.verdict = Verdict::wrong_result;
  r.detail = "C[3,7]: 1.5 vs 1.25 (ratio 3.2 of the tolerance) \xc3\xa9";
  r.error_name = "CUDA_ERROR_ILLEGAL_ADDRESS";
  r.failed_case = "odd_127x129x65";
  CaseResult a;
  a.name = "odd_127x129x65";
  a.role = "correctness";
  a.passed = false;
  a.max_abs_error = std::numeric_limits<double>::quiet_NaN();
  a.max_error_ratio = std::numeric_limits<double>::infinity();
  a.worst_output = "C";
  CaseResult b;
  b.name = "big";
  b.role = "performance";
  b.passed = true;
  b.max_abs_error = 1.0 / 3.0;  // needs all 17 digits to round-trip
  b.max_error_ratio = 0.1 + 0.2;
  b.worst_output = "C";
  b.latency = latency_stats({0.1, 0.2, 0.30000000000000004, 0.7});
  b.rel_error_max = 3.0e-7 / 7.0;  // 17 digits again
  b.rel_error_rms = 5.9604644775390625e-08;
  b.screened = true;
  b.screen_ms = 0.8;
  b.screen_median_ms = 0.5 / 3.0;
  r.cases = {a, b};
  r.geomean_ms = 0.123456789012345678;
  r.reference_geomean_ms = 1e-310;  // subnormal
  r.speedup = -std::numeric_limits<double>::infinity();
  r.compile_ms = 12.5;
  r.compile_cache_hit = true;
  r.check_ms = 41.25;
  r.timing_ms = 380.5;
  r.compile_log = "line 1\nline 2\t\"quoted\"";
  return r;
}

void expect_same(const Result& x, const Result& y) {
  auto same_double = [](double a, double b) {
    return (std::isnan(a) && std::isnan(b)) || a == b;
  };
  EXPECT_EQ(x.verdict, y.verdict);
  EXPECT_EQ(x.detail, y.detail);
  EXPECT_EQ(x.error_name, y.error_name);
  EXPECT_EQ(x.failed_case, y.failed_case);
  ASSERT_EQ(x.cases.size(), y.cases.size());
  for (size_t i = 0; i < x.cases.size(); ++i) {
    const CaseResult &a = x.cases[i], &b = y.cases[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.role, b.role);
    EXPECT_EQ(a.passed, b.passed);
    EXPECT_TRUE(same_double(a.max_abs_error, b.max_abs_error));
    EXPECT_TRUE(same_double(a.max_error_ratio, b.max_error_ratio));
    EXPECT_EQ(a.worst_output, b.worst_output);
    EXPECT_EQ(a.rel_error_max, b.rel_error_max);
    EXPECT_EQ(a.rel_error_rms, b.rel_error_rms);
    EXPECT_EQ(a.screened, b.screened);
    EXPECT_EQ(a.screen_ms, b.screen_ms);
    EXPECT_EQ(a.screen_median_ms, b.screen_median_ms);
    ASSERT_EQ(a.latency.has_value(), b.latency.has_value());
    if (a.latency) {
      EXPECT_EQ(a.latency->median_ms, b.latency->median_ms);
      EXPECT_EQ(a.latency->mean_ms, b.latency->mean_ms);
      EXPECT_EQ(a.latency->min_ms, b.latency->min_ms);
      EXPECT_EQ(a.latency->max_ms, b.latency->max_ms);
      EXPECT_EQ(a.latency->stddev_ms, b.latency->stddev_ms);
      EXPECT_EQ(a.latency->samples, b.latency->samples);
    }
  }
  EXPECT_EQ(x.geomean_ms, y.geomean_ms);
  EXPECT_EQ(x.reference_geomean_ms, y.reference_geomean_ms);
  EXPECT_EQ(x.speedup, y.speedup);
  EXPECT_EQ(x.compile_ms, y.compile_ms);
  EXPECT_EQ(x.compile_cache_hit, y.compile_cache_hit);
  EXPECT_EQ(x.check_ms, y.check_ms);
  EXPECT_EQ(x.timing_ms, y.timing_ms);
  EXPECT_EQ(x.compile_log, y.compile_log);
}

}  // namespace

TEST(ResultJson, RoundTripsExactlyThroughText) {
  Result r = full_result();
  json j = r.to_json();
  Result back = Result::from_json(through_text(j));
  expect_same(r, back);
  EXPECT_EQ(kopt::dump_json(back.to_json()), kopt::dump_json(j));
}

TEST(ResultJson, NonFiniteValuesAreStringsNotNull) {
  json j = through_text(full_result().to_json());
  EXPECT_EQ(j["cases"][0]["max_abs_error"], "NaN");
  EXPECT_EQ(j["cases"][0]["max_error_ratio"], "Infinity");
  EXPECT_EQ(j["speedup"], "-Infinity");
}

TEST(ResultJson, LatencyObjectLayout) {
  json lat = full_result().to_json()["cases"][1]["latency"];
  EXPECT_EQ(lat.size(), 6u);
  for (const char* k : {"median_ms", "mean_ms", "min_ms", "max_ms", "stddev_ms", "samples"})
    EXPECT_TRUE(lat.contains(k)) << k;
  EXPECT_EQ(lat["samples"], 4);
  EXPECT_TRUE(lat["samples"].is_number_integer());
}

TEST(ResultJson, UnsetOptionalsAreOmitted) {
  Result r;
  r.verdict = Verdict::timeout;
  r.cases.push_back(CaseResult{});
  r.cases[0].name = "c";
  json j = r.to_json();
  EXPECT_FALSE(j.contains("geomean_ms"));
  EXPECT_FALSE(j.contains("reference_geomean_ms"));
  EXPECT_FALSE(j.contains("speedup"));
  EXPECT_FALSE(j["cases"][0].contains("latency"));
  EXPECT_FALSE(j["cases"][0].contains("rel_error_max"));
  EXPECT_FALSE(j["cases"][0].contains("rel_error_rms"));
  EXPECT_EQ(j["verdict"], "timeout");
  Result back = Result::from_json(through_text(j));
  EXPECT_FALSE(back.geomean_ms.has_value());
  EXPECT_FALSE(back.cases[0].latency.has_value());
  expect_same(r, back);
}

TEST(ResultJson, MalformedInputNamesTheField) {
  EXPECT_NE(protocol_error_of([] { Result::from_json(json::object()); }).find("$.verdict"),
            std::string::npos);
  EXPECT_NE(protocol_error_of([] { Result::from_json(json{{"verdict", "great"}}); }).find("great"),
            std::string::npos);
  EXPECT_NE(protocol_error_of([] { Result::from_json(json{{"verdict", 3}}); }).find("$.verdict"),
            std::string::npos);
  EXPECT_NE(protocol_error_of([] {
              Result::from_json(json{{"verdict", "ok"}, {"geomean_ms", "fast"}});
            }).find("$.geomean_ms"),
            std::string::npos);
  EXPECT_NE(protocol_error_of([] {
              Result::from_json(json::parse(
                  R"({"verdict":"ok","cases":[{"name":"a","latency":{"median_ms":1}}]})"));
            }).find("$.cases[0].latency.mean_ms"),
            std::string::npos);
  protocol_error_of([] { Result::from_json(json::array()); });
  protocol_error_of([] { Result::from_json(json()); });
  protocol_error_of([] { Result::from_json(json{{"verdict", "ok"}, {"cases", 1}}); });
}

// ---------------------------------------------------------------------------
// Protocol JSON

namespace {

EvalRequest full_request() {
  EvalRequest r;
  r.id = 42;
  r.candidate = {KernelRef::Kind::cubin, "/tmp/cache/abc.cubin", "_Z4gemmPKfS0_Pfiii",
                 "candidate 0007"};
  r.reference = {KernelRef::Kind::cublas_sgemm, "", "", "reference"};
  r.reference_is_golden = true;
  r.gemm.a = "X";
  r.gemm.b = "Y";
  r.gemm.c = "Z";
  r.gemm.m = "rows";
  r.gemm.n = "cols";
  r.gemm.k = "depth";
  CaseSpec c;
  c.name = "odd";
  c.role = kopt::spec::CaseRole::performance;
  c.sizes = {{"M", 127}, {"N", 129}, {"K", 65}, {"BIG", int64_t{1} << 40}};
  ArgSpec a;
  a.name = "A";
  a.is_buffer = true;
  a.dtype = kopt::spec::DType::f16;
  a.role = kopt::spec::Role::inout;
  a.count = 127 * 65;
  a.generator.kind = kopt::spec::Generator::Kind::normal;
  a.generator.mean = 0.5;
  a.generator.stddev = 2.0;
  a.generator.fixed = true;
  ArgSpec s;
  s.name = "alpha";
  s.is_buffer = false;
  s.dtype = kopt::spec::DType::f64;
  s.role = kopt::spec::Role::input;
  s.float_value = 0.1;
  s.int_value = -5;
  ArgSpec v;  // a view of A, made fresh in no trial
  v.name = "A_odd";
  v.is_buffer = true;
  v.dtype = kopt::spec::DType::f32;
  v.count = 63;
  v.generator.kind = kopt::spec::Generator::Kind::view;
  v.generator.view_of = "A";
  v.generator.view_start = 1;
  v.generator.view_stride = 2;
  c.args = {a, s, v};
  c.launch = {{3, 4, 5}, {32, 8, 1}, 49152};
  c.reference_launch = LaunchDims{{1, 2, 65535}, {256, 1, 1}, 0};
  c.screen_ms = 2.5;
  c.screen_median_ms = 1.5625;
  kopt::spec::Tolerance t1;
  t1.kind = kopt::spec::Tolerance::Kind::gemm;
  t1.factor = 8;
  t1.a = "X";
  t1.b = "Y";
  t1.m = "rows";
  t1.n = "cols";
  t1.k = "depth";
  kopt::spec::Tolerance t2;
  t2.rtol = 1e-3;
  t2.atol = 1e-7;
  t2.rel_l2 = 1e-4;
  kopt::spec::Tolerance t3;
  t3.kind = kopt::spec::Tolerance::Kind::sum;
  t3.terms_value = int64_t{1} << 33;
  t3.partials_value = 4096;
  t3.atol = 0.25;
  c.tolerance = {{"Z", t1}, {"W", t2}, {"S", t3}};
  c.golden_npy = {{"Z", "/data/odd_Z.npy"}};
  CaseSpec c2;
  c2.name = "empty";
  r.cases = {c, c2};
  r.timing.warmup = 3;
  r.timing.iterations = 7;
  r.timing.flush_l2 = true;
  r.timing.launch_timeout_ms = 2500.5;
  r.checks.trials = 2;
  r.checks.repeats = 5;
  r.seed = 0xfedcba9876543210ULL;  // above INT64_MAX
  r.time = false;
  return r;
}

}  // namespace

TEST(ProtocolJson, EvalRequestRoundTripsExactly) {
  EvalRequest r = full_request();
  json j = r.to_json();
  json text = through_text(j);
  EvalRequest back = EvalRequest::from_json(text);
  EXPECT_EQ(kopt::dump_json(back.to_json()), kopt::dump_json(j));

  EXPECT_EQ(back.id, 42);
  EXPECT_EQ(back.candidate.kind, KernelRef::Kind::cubin);
  EXPECT_EQ(back.candidate.entry, "_Z4gemmPKfS0_Pfiii");
  EXPECT_EQ(back.candidate.label, "candidate 0007");
  EXPECT_EQ(back.reference.kind, KernelRef::Kind::cublas_sgemm);
  EXPECT_TRUE(back.reference_is_golden);
  EXPECT_EQ(back.gemm.k, "depth");
  EXPECT_EQ(back.seed, 0xfedcba9876543210ULL);
  EXPECT_FALSE(back.time);
  EXPECT_EQ(back.timing.launch_timeout_ms, 2500.5);
  EXPECT_TRUE(back.timing.flush_l2);
  EXPECT_EQ(back.checks.repeats, 5);
  ASSERT_EQ(back.cases.size(), 2u);
  const CaseSpec& c = back.cases[0];
  EXPECT_EQ(c.role, kopt::spec::CaseRole::performance);
  EXPECT_EQ(c.sizes.at("BIG"), int64_t{1} << 40);
  ASSERT_EQ(c.args.size(), 3u);
  EXPECT_EQ(c.args[2].generator.kind, kopt::spec::Generator::Kind::view);
  EXPECT_EQ(c.args[2].generator.view_of, "A");
  EXPECT_EQ(c.args[2].generator.view_stride, 2);
  EXPECT_EQ(c.tolerance.at("S").kind, kopt::spec::Tolerance::Kind::sum);
  EXPECT_EQ(c.tolerance.at("S").terms_value, int64_t{1} << 33);
  EXPECT_EQ(c.tolerance.at("S").partials_value, 4096);
  EXPECT_EQ(c.tolerance.at("S").atol, 0.25);
  EXPECT_EQ(c.args[0].dtype, kopt::spec::DType::f16);
  EXPECT_EQ(c.args[0].role, kopt::spec::Role::inout);
  EXPECT_EQ(c.args[0].generator.kind, kopt::spec::Generator::Kind::normal);
  EXPECT_EQ(c.args[0].generator.stddev, 2.0);
  EXPECT_TRUE(c.args[0].generator.fixed);
  EXPECT_FALSE(c.args[1].is_buffer);
  EXPECT_EQ(c.args[1].float_value, 0.1);
  EXPECT_EQ(c.args[1].int_value, -5);
  EXPECT_EQ(c.launch.grid[2], 5);
  EXPECT_EQ(c.launch.shared_bytes, 49152);
  ASSERT_TRUE(c.reference_launch.has_value());
  EXPECT_EQ(c.reference_launch->grid[2], 65535);
  EXPECT_EQ(c.tolerance.at("Z").kind, kopt::spec::Tolerance::Kind::gemm);
  EXPECT_EQ(c.tolerance.at("Z").factor, 8);
  EXPECT_EQ(c.tolerance.at("Z").k, "depth");
  EXPECT_FALSE(c.tolerance.at("Z").rel_l2.has_value());
  EXPECT_EQ(c.tolerance.at("W").rel_l2, 1e-4);
  EXPECT_EQ(c.tolerance.at("W").atol, 1e-7);
  EXPECT_EQ(c.golden_npy.at("Z"), "/data/odd_Z.npy");
  EXPECT_EQ(c.screen_ms, 2.5);
  EXPECT_EQ(c.screen_median_ms, 1.5625);
  EXPECT_FALSE(back.cases[1].screen_median_ms.has_value());
  EXPECT_FALSE(back.cases[1].reference_launch.has_value());
  EXPECT_TRUE(back.cases[1].sizes.empty());
}

TEST(ProtocolJson, KindStrings) {
  json j = full_request().to_json();
  EXPECT_EQ(j["candidate"]["kind"], "cubin");
  EXPECT_EQ(j["reference"]["kind"], "cublas_sgemm");
  EXPECT_EQ(j["cases"][0]["tolerance"]["Z"]["kind"], "gemm");
  EXPECT_EQ(j["cases"][0]["tolerance"]["W"]["kind"], "allclose");
}

TEST(ProtocolJson, IgnoresTheOpMember) {
  json j = full_request().to_json();
  j["op"] = "evaluate";
  EXPECT_EQ(EvalRequest::from_json(j).id, 42);
}

TEST(ProtocolJson, MalformedRequestsNameTheField) {
  auto with = [](const std::function<void(json&)>& edit) {
    json j = full_request().to_json();
    edit(j);
    return protocol_error_of([&] { EvalRequest::from_json(j); });
  };
  auto contains = [](const std::string& msg, const char* what) {
    return msg.find(what) != std::string::npos;
  };
  EXPECT_TRUE(contains(with([](json& j) { j["candidate"].erase("entry"); }), "$.candidate.entry"));
  EXPECT_TRUE(contains(with([](json& j) { j["candidate"]["kind"] = "ptx"; }), "$.candidate.kind"));
  EXPECT_TRUE(contains(with([](json& j) { j["id"] = "seven"; }), "$.id"));
  EXPECT_TRUE(contains(with([](json& j) { j["id"] = 1.5; }), "$.id"));
  EXPECT_TRUE(contains(with([](json& j) { j["seed"] = -1; }), "$.seed"));
  EXPECT_TRUE(contains(with([](json& j) { j["cases"][0]["args"][1]["dtype"] = "float7"; }),
                       "$.cases[0].args[1].dtype"));
  EXPECT_TRUE(contains(with([](json& j) { j["cases"][0]["args"][0]["role"] = "both"; }),
                       "$.cases[0].args[0].role"));
  EXPECT_TRUE(contains(with([](json& j) { j["cases"][1]["role"] = "speed"; }),
                       "$.cases[1].role"));
  EXPECT_TRUE(contains(with([](json& j) { j["cases"][0]["launch"]["grid"] = {1, 2}; }),
                       "$.cases[0].launch.grid"));
  EXPECT_TRUE(contains(with([](json& j) { j["cases"][0]["sizes"]["M"] = "127"; }),
                       "$.cases[0].sizes.M"));
  EXPECT_TRUE(contains(with([](json& j) { j["cases"][0]["tolerance"]["Z"]["kind"] = "ulp"; }),
                       "$.cases[0].tolerance.Z.kind"));
  EXPECT_TRUE(contains(with([](json& j) { j["cases"][0]["args"][0]["generator"] = 3; }),
                       "$.cases[0].args[0].generator"));
  EXPECT_TRUE(contains(with([](json& j) { j["timing"].erase("iterations"); }),
                       "$.timing.iterations"));
  EXPECT_TRUE(contains(with([](json& j) { j["timing"]["warmup"] = int64_t{1} << 40; }),
                       "$.timing.warmup"));
  EXPECT_TRUE(contains(with([](json& j) { j["cases"] = json::object(); }), "$.cases"));
  EXPECT_TRUE(contains(with([](json& j) { j.erase("time"); }), "$.time"));
  EXPECT_TRUE(contains(with([](json& j) { j["cases"][0]["screen_median_ms"] = 0; }), "$.cases[0].screen_median_ms"));
  EXPECT_TRUE(contains(with([](json& j) { j["cases"][0]["screen_median_ms"] = "1"; }), "$.cases[0].screen_median_ms"));
  protocol_error_of([] { EvalRequest::from_json(json()); });
  protocol_error_of([] { EvalRequest::from_json(json::array({1, 2})); });
  protocol_error_of([] { EvalRequest::from_json(json("garbage")); });
}

// Every member replaced by a value of every other type: the decoder either
// accepts it or throws kopt::Error, never anything else (and never crashes):
// the worker must answer such a request with an error.
TEST(ProtocolJson, FuzzedMembersGiveProtocolErrorsOnly) {
  const json base = full_request().to_json();
  const json replacements[] = {json(), json(true), json(-3), json(2.5), json("x"),
                               json::array(), json::object(), json::array({1, 2, 3})};
  std::vector<json::json_pointer> leaves;
  std::function<void(const json&, const json::json_pointer&)> walk =
      [&](const json& j, const json::json_pointer& p) {
        if (!p.empty()) leaves.push_back(p);
        if (j.is_object())
          for (auto& [k, v] : j.items()) walk(v, p / k);
        else if (j.is_array())
          for (size_t i = 0; i < j.size(); ++i) walk(j[i], p / i);
      };
  walk(base, json::json_pointer());
  ASSERT_GT(leaves.size(), 50u);
  int rejected = 0;
  for (const auto& p : leaves) {
    for (const json& rep : replacements) {
      json j = base;
      j[p] = rep;
      try {
        EvalRequest::from_json(j);
      } catch (const kopt::Error& e) {
        EXPECT_EQ(e.id(), "kopt.protocol.001");
        ++rejected;
      } catch (const std::exception& e) {
        ADD_FAILURE() << p.to_string() << " = " << rep.dump() << ": " << e.what();
      }
    }
    json j = base;
    j.at(p.parent_pointer()).is_object() ? (void)j.at(p.parent_pointer()).erase(p.back())
                                         : (void)0;
    try {
      EvalRequest::from_json(j);
    } catch (const kopt::Error&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << "without " << p.to_string() << ": " << e.what();
    }
  }
  EXPECT_GT(rejected, 0);
}
