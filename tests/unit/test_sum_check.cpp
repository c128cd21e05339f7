// The sum tolerance (spec "kind": "sum", eval::compare_sum): partial sums
// added up in another order than the reference's are accepted within
// factor * sqrt(terms) * u * |ref|; wrong sums are rejected. The kernels'
// arithmetic is emulated on the CPU in the precision the kernels use (float
// sums of float elements, double sums of double terms), on the inputs the
// spec's generators make. No GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "eval/validate.h"
#include "spec/inputs.h"

namespace kopt::eval {
namespace {

using spec::DType;
using spec::Tolerance;

Tolerance sum_tolerance(int64_t terms, int64_t partials, double atol = 0) {
  Tolerance t;
  t.kind = Tolerance::Kind::sum;
  t.terms_value = terms;
  t.partials_value = partials;
  t.rtol = 0;  // the spec's default for this kind (allclose's is 1e-5)
  t.atol = atol;
  return t;  // factor 8, the default
}

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

/// n floats uniform on [0, 1), as the reduction spec's generator makes them.
std::vector<float> uniform01(int64_t n, uint64_t seed) {
  spec::Generator g;
  g.low = 0;
  g.high = 1;
  const std::vector<uint8_t> b = spec::generate(g, DType::f32, n, seed);
  std::vector<float> out(static_cast<size_t>(n));
  std::memcpy(out.data(), b.data(), b.size());
  return out;
}

/// Kernel Tuner's sum_floats (templates/reduction/reduction.cu), emulated in
/// float: each thread adds its grid-stride vectors (the vector's elements
/// first, left to right), then the block's tree halves down to one value.
/// `skip_last_vector`: the off-by-one bug `i < n/vector - 1`.
std::vector<float> sum_floats(const std::vector<float>& a, int block, int vector, int blocks,
                              bool skip_last_vector = false) {
  const int64_t nv = static_cast<int64_t>(a.size()) / vector - (skip_last_vector ? 1 : 0);
  const int64_t step = static_cast<int64_t>(blocks) * block;
  std::vector<float> partial(static_cast<size_t>(blocks)), sh(static_cast<size_t>(block));
  for (int b = 0; b < blocks; ++b) {
    for (int t = 0; t < block; ++t) {
      float sum = 0.0f;
      for (int64_t i = static_cast<int64_t>(b) * block + t; i < nv; i += step) {
        const float* v = &a[static_cast<size_t>(i * vector)];
        float x = v[0];
        for (int k = 1; k < vector; ++k) x += v[k];
        sum += x;
      }
      sh[static_cast<size_t>(t)] = sum;
    }
    for (int s = block / 2; s > 0; s >>= 1)
      for (int t = 0; t < s; ++t) sh[static_cast<size_t>(t)] += sh[static_cast<size_t>(t + s)];
    partial[static_cast<size_t>(b)] = sh[0];
  }
  return partial;
}

/// The reference's output: the total in double, rounded once, in element 0 of
/// a buffer as long as the candidate's (its other elements unwritten: NaN).
std::vector<float> reference_total(const std::vector<float>& a, size_t out_count) {
  double s = 0;
  for (float x : a) s += x;
  std::vector<float> ref(out_count, std::numeric_limits<float>::quiet_NaN());
  ref[0] = static_cast<float>(s);
  return ref;
}

CompareOutcome check_reduction(const std::vector<float>& partial, const std::vector<float>& a) {
  const auto ref = reference_total(a, partial.size());
  const auto out = bytes_of(partial), want = bytes_of(ref);
  return compare_sum("sum_global", out.data(), want.data(), DType::f32, static_cast<int64_t>(partial.size()),
                     sum_tolerance(static_cast<int64_t>(a.size()), static_cast<int64_t>(partial.size())));
}

TEST(SumCheck, EveryOrderOfTheReductionKernelPassesWithRoomToSpare) {
  // The spec's correctness sizes and a larger one; the corners of the space.
  double worst = 0;
  for (int64_t n : {4, 68, 4100, 4000012, 16000000}) {
    const std::vector<float> a = uniform01(n, 20261212 + static_cast<uint64_t>(n));
    for (int block : {32, 1024})
      for (int vector : {1, 4})
        for (int blocks : {32, 1024, 32768}) {
          const CompareOutcome o = check_reduction(sum_floats(a, block, vector, blocks), a);
          EXPECT_TRUE(o.passed) << "n " << n << " block " << block << " vector " << vector << " blocks " << blocks
                                << ": " << o.reason;
          worst = std::max(worst, o.max_ratio);
        }
  }
  std::printf("worst error over the sum bound, every order: %.4f\n", worst);
  // Measured: 0.016 of the bound at most; under 0.25 leaves the factor 8
  // four times what any of these orders needs.
  EXPECT_LT(worst, 0.25);
}

TEST(SumCheck, ASequentialFloatSumPassesAtLargeCounts) {
  // One thread adding everything in float, in order (the error grows like
  // sqrt(n) u sum|x| for random rounding, which the bound is). Measured:
  // 0.015 of the bound at 4 million terms.
  for (int64_t n : {1000, 100000, 4000000}) {
    const std::vector<float> a = uniform01(n, 7 + static_cast<uint64_t>(n));
    float s = 0;
    for (float x : a) s += x;
    const CompareOutcome o = check_reduction({s}, a);
    EXPECT_TRUE(o.passed) << n << ": " << o.reason;
    std::printf("one float sum in order of %lld terms: %.4f of the bound\n", static_cast<long long>(n), o.max_ratio);
    EXPECT_LT(o.max_ratio, 0.5) << n;
  }
}

TEST(SumCheck, WrongReductionsAreRejected) {
  const std::vector<float> a = uniform01(4100, 99);
  // The planted kernel of tests/gpu/gallery/reduction.json: the fourth
  // element of every float4 left out.
  std::vector<float> without_w(a);
  for (size_t i = 3; i < without_w.size(); i += 4) without_w[i] = 0;
  EXPECT_FALSE(check_reduction(sum_floats(without_w, 256, 4, 64), a).passed);
  // Off by one: the last vector (4 elements of 4100) left out.
  const CompareOutcome off = check_reduction(sum_floats(a, 256, 4, 64, true), a);
  EXPECT_FALSE(off.passed);
  EXPECT_NE(off.reason.find("sum_global[0..63] (64 partial sums, added up)"), std::string::npos) << off.reason;
  // One block's partial counted twice.
  std::vector<float> twice = sum_floats(a, 256, 1, 64);
  twice[5] *= 2;
  EXPECT_FALSE(check_reduction(twice, a).passed);
  // One partial never written (the poison, NaN).
  std::vector<float> unwritten = sum_floats(a, 256, 1, 64);
  unwritten[63] = std::numeric_limits<float>::quiet_NaN();
  const CompareOutcome nan = check_reduction(unwritten, a);
  EXPECT_FALSE(nan.passed);
  EXPECT_TRUE(std::isinf(nan.max_ratio));
  // The total in element 0 and zeros elsewhere is a right answer, not a bug.
  std::vector<float> total_first(64, 0.0f);
  for (float x : a) total_first[0] += x;
  EXPECT_TRUE(check_reduction(total_first, a).passed);
}

TEST(SumCheck, SeveralTotalsEachFromItsOwnPartials) {
  // Three rows of 1000, each reduced by 4 blocks: out[row * 4 + block].
  std::vector<float> out(12), ref(12, std::numeric_limits<float>::quiet_NaN());
  for (int row = 0; row < 3; ++row) {
    const std::vector<float> a = uniform01(1000, 40 + static_cast<uint64_t>(row));
    const std::vector<float> p = sum_floats(a, 32, 1, 4);
    for (int b = 0; b < 4; ++b) out[static_cast<size_t>(row * 4 + b)] = p[static_cast<size_t>(b)];
    ref[static_cast<size_t>(row)] = reference_total(a, 1)[0];
  }
  const Tolerance tol = sum_tolerance(1000, 4);
  auto o = bytes_of(out), r = bytes_of(ref);
  EXPECT_TRUE(compare_sum("rows", o.data(), r.data(), DType::f32, 12, tol).passed);
  // Two rows' partials swapped: each total is another row's.
  std::swap_ranges(out.begin(), out.begin() + 4, out.begin() + 4);
  o = bytes_of(out);
  const CompareOutcome bad = compare_sum("rows", o.data(), r.data(), DType::f32, 12, tol);
  EXPECT_FALSE(bad.passed);
  EXPECT_EQ(bad.worst_index % 4, 0);
  // A count that is no whole number of totals.
  EXPECT_FALSE(compare_sum("rows", o.data(), r.data(), DType::f32, 12, sum_tolerance(1000, 5)).passed);
}

TEST(SumCheck, DoubleSumsOfPositiveTermsInTilesPass) {
  // The expdist shape: m x n positive terms exp(-d / s) in double, one
  // partial per tile of tx x ty pairs, each tile's pairs in row order.
  const int m = 301, n = 257;
  spec::Generator g;  // uniform [-1, 1): coordinates
  std::vector<double> ax(m), bx(n), sa(m), sb(n);
  auto fill = [&](std::vector<double>& v, uint64_t seed, double lo, double hi) {
    g.low = lo;
    g.high = hi;
    const auto b = spec::generate(g, DType::f64, static_cast<int64_t>(v.size()), seed);
    std::memcpy(v.data(), b.data(), b.size());
  };
  fill(ax, 1, -1, 1);
  fill(bx, 2, -1, 1);
  fill(sa, 3, 0.001, 0.02);
  fill(sb, 4, 0.001, 0.02);
  auto term = [&](int i, int j) { return std::exp(-(ax[i] - bx[j]) * (ax[i] - bx[j]) / (sa[i] + sb[j])); };
  long double exact = 0;
  double largest = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      exact += term(i, j);
      largest = std::max(largest, term(i, j));
    }
  for (int tx : {32, 512})
    for (int ty : {1, 32}) {
      std::vector<double> partial;
      for (int i0 = 0; i0 < m; i0 += tx)
        for (int j0 = 0; j0 < n; j0 += ty) {
          double s = 0;
          for (int i = i0; i < std::min(m, i0 + tx); ++i)
            for (int j = j0; j < std::min(n, j0 + ty); ++j) s += term(i, j);
          partial.push_back(s);
        }
      std::vector<double> ref(partial.size(), std::numeric_limits<double>::quiet_NaN());
      ref[0] = static_cast<double>(exact);
      const auto o = bytes_of(partial), r = bytes_of(ref);
      const auto p = static_cast<int64_t>(partial.size());
      const CompareOutcome c = compare_sum("cross_term", o.data(), r.data(), DType::f64, p,
                                           sum_tolerance(int64_t{m} * n, p));
      EXPECT_TRUE(c.passed) << tx << "x" << ty << ": " << c.reason;
      // The largest term left out of one tile is seen (a term under the
      // bound, 1.8e-12 of the total here, could not be told from rounding).
      std::vector<double> missing = partial;
      missing[0] -= largest;
      const auto mo = bytes_of(missing);
      EXPECT_FALSE(compare_sum("cross_term", mo.data(), r.data(), DType::f64, p, sum_tolerance(int64_t{m} * n, p))
                       .passed);
    }
}

TEST(SumCheck, ElementWiseSumsAreCheckedPerElement) {
  // partials 1: every element is a dot product of 65 float terms (the spmv
  // shape), computed in float in order against a double reference.
  const int rows = 500, k = 65;
  spec::Generator g;
  const auto vb = spec::generate(g, DType::f32, rows * k, 11), xb = spec::generate(g, DType::f32, k, 12);
  std::vector<float> v(rows * k), x(k), y(rows), ref(rows);
  std::memcpy(v.data(), vb.data(), vb.size());
  std::memcpy(x.data(), xb.data(), xb.size());
  double abs_max = 0;
  for (int r = 0; r < rows; ++r) {
    float s = 0;
    double d = 0, sum_abs = 0;
    for (int j = k - 1; j >= 0; --j) s += v[r * k + j] * x[j];  // another order than the reference's
    for (int j = 0; j < k; ++j) {
      d += static_cast<double>(v[r * k + j]) * x[j];
      sum_abs += std::fabs(static_cast<double>(v[r * k + j]) * x[j]);
    }
    y[static_cast<size_t>(r)] = s;
    ref[static_cast<size_t>(r)] = static_cast<float>(d);
    abs_max = std::max(abs_max, sum_abs);
  }
  // Terms of both signs: |ref| is no stand-in for sum |terms|, so the spec
  // gives atol at the scale of the terms' magnitudes.
  const double atol = 8 * std::sqrt(double{k}) * std::ldexp(1.0, -24) * abs_max;
  auto o = bytes_of(y), r = bytes_of(ref);
  EXPECT_TRUE(compare_sum("y", o.data(), r.data(), DType::f32, rows, sum_tolerance(k, 1, atol)).passed);
  // A row that nearly cancels, off by half of atol: accepted with atol, and
  // rejected without it (|ref| is tiny there), the documented reason for atol.
  ref[0] = static_cast<float>(atol / 100);
  y[0] = static_cast<float>(atol / 100 + atol / 2);
  o = bytes_of(y);
  r = bytes_of(ref);
  EXPECT_TRUE(compare_sum("y", o.data(), r.data(), DType::f32, rows, sum_tolerance(k, 1, atol)).passed);
  const CompareOutcome strict = compare_sum("y", o.data(), r.data(), DType::f32, rows, sum_tolerance(k, 1));
  EXPECT_FALSE(strict.passed);
  EXPECT_EQ(strict.reason.rfind("y[0]: ", 0), 0u) << strict.reason;
}

TEST(SumCheck, TheBoundIsFactorTimesSqrtTermsTimesUnitRoundoff) {
  const Tolerance t = sum_tolerance(10000, 1, 0.5);
  EXPECT_DOUBLE_EQ(sum_allowed_error(t, DType::f32, 2.0),
                   0.5 + 8 * 100 * std::ldexp(1.0, -24) * 2.0 + static_cast<double>(FLT_MIN));
  EXPECT_DOUBLE_EQ(sum_allowed_error(t, DType::f64, -2.0), 0.5 + 8 * 100 * std::ldexp(1.0, -53) * 2.0 + DBL_MIN);
  Tolerance with_rtol = t;  // each term's own error (an exp's), over the terms' magnitudes
  with_rtol.rtol = 1e-12;
  EXPECT_DOUBLE_EQ(sum_allowed_error(with_rtol, DType::f64, -2.0),
                   0.5 + (1e-12 + 8 * 100 * std::ldexp(1.0, -53)) * 2.0 + DBL_MIN);
  EXPECT_EQ(unit_roundoff(DType::i32), 0.0);  // integer sums are exact
  EXPECT_EQ(unit_roundoff(DType::f16), std::ldexp(1.0, -11));
  EXPECT_EQ(unit_roundoff(DType::bf16), std::ldexp(1.0, -8));
}

}  // namespace
}  // namespace kopt::eval
