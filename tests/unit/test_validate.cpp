// Output comparison arithmetic (no GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "eval/validate.h"

namespace {

using kopt::eval::compare_allclose;
using kopt::eval::compare_bounded;
using kopt::spec::DType;
using kopt::spec::Tolerance;

std::vector<uint8_t> floats(std::initializer_list<float> v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), std::data(v), out.size());
  return out;
}

Tolerance tol(double rtol, double atol) {
  Tolerance t;
  t.rtol = rtol;
  t.atol = atol;
  return t;
}

TEST(Validate, AllcloseAcceptsWithinAndRejectsBeyond) {
  auto ref = floats({1.0f, 100.0f, -2.0f});
  auto ok = floats({1.0f + 1e-6f, 100.0f + 5e-4f, -2.0f});
  auto o = compare_allclose("C", ok.data(), ref.data(), DType::f32, 3, tol(1e-5, 1e-6));
  EXPECT_TRUE(o.passed) << o.reason;
  EXPECT_LE(o.max_ratio, 1.0);
  auto bad = floats({1.0f, 100.1f, -2.0f});
  o = compare_allclose("C", bad.data(), ref.data(), DType::f32, 3, tol(1e-5, 1e-6));
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.failures, 1);
  EXPECT_EQ(o.worst_index, 1);
  EXPECT_NE(o.reason.find("C[1]"), std::string::npos) << o.reason;
}

TEST(Validate, NanWhereReferenceIsFiniteAlwaysFails) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto ref = floats({1.0f, 2.0f});
  auto out = floats({1.0f, nan});
  auto o = compare_allclose("C", out.data(), ref.data(), DType::f32, 2, tol(1e9, 1e9));
  EXPECT_FALSE(o.passed);
  EXPECT_NE(o.reason.find("NaN"), std::string::npos);
  auto inf = floats({1.0f, std::numeric_limits<float>::infinity()});
  o = compare_allclose("C", inf.data(), ref.data(), DType::f32, 2, tol(1e9, 1e9));
  EXPECT_FALSE(o.passed);
}

TEST(Validate, NanReferenceNeedsNanOutput) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto ref = floats({nan});
  auto same = floats({nan});
  auto other = floats({0.0f});
  EXPECT_TRUE(compare_allclose("C", same.data(), ref.data(), DType::f32, 1, tol(0, 0)).passed);
  EXPECT_FALSE(compare_allclose("C", other.data(), ref.data(), DType::f32, 1, tol(1, 1)).passed);
}

TEST(Validate, PoisonedOutputIsRejected) {
  // An output the kernel never wrote keeps the poison bytes: NaN.
  std::vector<uint8_t> out(8, kopt::eval::kPoisonByte);
  auto ref = floats({0.0f, 0.0f});
  auto o = compare_allclose("C", out.data(), ref.data(), DType::f32, 2, tol(1, 1));
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.failures, 2);
}

TEST(Validate, RelativeL2Bound) {
  auto ref = floats({1.0f, 1.0f, 1.0f, 1.0f});
  auto out = floats({1.01f, 1.01f, 1.01f, 1.01f});
  Tolerance t = tol(0.1, 0.1);
  EXPECT_TRUE(compare_allclose("C", out.data(), ref.data(), DType::f32, 4, t).passed);
  t.rel_l2 = 1e-3;
  auto o = compare_allclose("C", out.data(), ref.data(), DType::f32, 4, t);
  EXPECT_FALSE(o.passed);
  EXPECT_NE(o.reason.find("relative L2"), std::string::npos);
}

TEST(Validate, GemmBoundSeparatesFp32FromHalfRounding) {
  // One output element of a K=1024 dot product: terms a_k*b_k with |a|,|b|~0.5.
  const int64_t K = 1024;
  double sumsq = 0, exact = 0;
  float fp32 = 0, fp16like = 0;
  for (int64_t k = 0; k < K; ++k) {
    const float a = static_cast<float>(std::sin(0.37 * k)), b = static_cast<float>(std::cos(0.11 * k));
    exact += static_cast<double>(a) * b;
    sumsq += (static_cast<double>(a) * b) * (static_cast<double>(a) * b);
    fp32 += a * b;
    // Round the inputs to 11 significant bits, as half precision does.
    auto h = [](float x) { int e; float m = std::frexp(x, &e); return std::ldexp(std::round(m * 2048) / 2048, e); };
    fp16like += h(a) * h(b);
  }
  const double allowed = kopt::eval::gemm_allowed_error(4.0, K, sumsq, exact);
  EXPECT_LE(std::fabs(fp32 - exact), allowed);
  EXPECT_GT(std::fabs(fp16like - exact), allowed);
  // compare_bounded applies it element-wise.
  auto ref = floats({static_cast<float>(exact)});
  auto good = floats({fp32});
  auto bad = floats({fp16like});
  EXPECT_TRUE(compare_bounded("C", good.data(), ref.data(), DType::f32, 1, {allowed}).passed);
  EXPECT_FALSE(compare_bounded("C", bad.data(), ref.data(), DType::f32, 1, {allowed}).passed);
}

}  // namespace
