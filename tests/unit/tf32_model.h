// The split-TF32 arithmetic on the CPU, shared by the unit tests of the two split-TF32 templates
// (tests/unit/test_sgemm_tf32.cpp: sgemm_tf32.cu; test_sgemm_tf32_wgmma.cpp: sgemm_tf32_wgmma.cu):
// TF32 rounding as the cvt instructions do it, the hi/lo split, a model of the tensor core's
// truncating adder, error statistics as the harness reports them, and adversarial input classes.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace kopt::test::tf32 {

inline uint32_t bits_of(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
inline float float_of(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// cvt.rna.tf32.f32 (PTX ISA, cvt: ".rna: round to nearest, ties away from zero"; .tf32 keeps the
// 10 high mantissa bits and zeroes the 13 low ones). On the sign-magnitude bits, adding half a
// TF32 ulp (bit 12) and truncating rounds the magnitude to nearest with ties up, i.e. away from
// zero; a carry out of the mantissa moves to the next binade (or to Inf past the largest float).
inline float tf32_rna(float x) {
  const uint32_t u = bits_of(x);
  if ((u & 0x7F800000u) == 0x7F800000u) return x;  // Inf, NaN
  return float_of((u + 0x1000u) & 0xFFFFE000u);
}

// cvt.rn.tf32.f32 (the kernel's CVT = 1 and 2 on sm_90): round to nearest, ties to even, on the same
// 13 low bits. Below half a TF32 ulp down, above up, at the tie towards the even TF32 neighbour.
inline float tf32_rn(float x) {
  const uint32_t u = bits_of(x);
  if ((u & 0x7F800000u) == 0x7F800000u) return x;  // Inf, NaN
  const uint32_t odd = (u >> 13) & 1u;
  return float_of((u + 0xFFFu + odd) & 0xFFFFE000u);  // + 0x1000, but a tie only rounds up from odd
}

struct Split {
  float hi, lo;
};
// sgemm_tf32.cu's split for each CVT (sgemm_tf32_wgmma.cu: CVT 2): 0 both halves with the integer rounding (ties away), 1 hi with
// cvt.rn and lo with the integer rounding, 2 both with cvt.rn.
inline Split split(float x, int cvt = 0) {
  const float hi = cvt >= 1 ? tf32_rn(x) : tf32_rna(x);
  return {hi, cvt == 2 ? tf32_rn(x - hi) : tf32_rna(x - hi)};
}

// One tensor-core accumulation step: c + p[0] + ... + p[n-1] with the products exact (TF32 x TF32
// has 22 significant bits), every addend aligned to the largest magnitude and truncated below
// 2^-(23 + guard) of it, the exact sum of those rounded toward zero to FP32. This is the behaviour
// Fasi, Higham, Mikaitis and Pranesh measured ("Numerical behavior of NVIDIA tensor cores", PeerJ
// CS 2021) and Ootomo and Yokota exploit; guard = 0 is the most pessimistic version of it.
inline float tc_add(float c, const double* p, int n, int guard) {
  double mx = std::fabs(static_cast<double>(c));
  for (int i = 0; i < n; ++i) mx = std::max(mx, std::fabs(p[i]));
  if (mx == 0) return c;
  int e = 0;
  std::frexp(mx, &e);  // mx in [2^(e-1), 2^e)
  const double q = std::ldexp(1.0, e - 1 - 23 - guard);
  double s = std::trunc(static_cast<double>(c) / q) * q;
  for (int i = 0; i < n; ++i) s += std::trunc(p[i] / q) * q;  // exact: all multiples of q, < 2^(e+3)
  float f = static_cast<float>(s);
  if (std::fabs(static_cast<double>(f)) > std::fabs(s)) f = std::nextafter(f, 0.0f);  // toward zero
  return f;
}
// One m16n8k8 TF32 mma for one output element: a[slot], b[slot] over the 8 k slots, as two
// accumulation steps of four (the A100's order for TF32).
inline float tc_mma(float c, const float* a, const float* b, int guard) {
  for (int h = 0; h < 2; ++h) {
    double p[4];
    for (int i = 0; i < 4; ++i) p[i] = static_cast<double>(a[4 * h + i]) * b[4 * h + i];
    c = tc_add(c, p, 4, guard);
  }
  return c;
}

// Relative error as the harness reports it: |c - ref| / sqrt(sum_k (a_k b_k)^2) (a cancelling
// sum never divides by a tiny |ref|); max and RMS over samples.
struct ErrStats {
  double max = 0, sumsq = 0;
  long n = 0;
  void add(double e) {
    max = std::max(max, e);
    sumsq += e * e;
    ++n;
  }
  double rms() const { return n ? std::sqrt(sumsq / static_cast<double>(n)) : 0; }
};

enum class Dist { uniform, wide_exponent, positive, split_hard };
inline const char* dist_name(Dist d) {
  switch (d) {
    case Dist::uniform: return "uniform(-1,1)";
    case Dist::wide_exponent: return "uniform(-1,1) * 2^[-20,20]";
    case Dist::positive: return "uniform(0,1)";
    case Dist::split_hard: return "low 13 bits at the TF32 rounding tie";
  }
  return "?";
}
inline float draw(Dist d, std::mt19937_64& g) {
  std::uniform_real_distribution<double> u(-1.0, 1.0), u01(0.0, 1.0);
  switch (d) {
    case Dist::uniform: return static_cast<float>(u(g));
    case Dist::wide_exponent: return static_cast<float>(std::ldexp(u(g), static_cast<int>(g() % 41) - 20));
    case Dist::positive: return static_cast<float>(u01(g));
    case Dist::split_hard: {
      // Random high mantissa bits, the 13 low ones 0x1000 +- 0..3 (x - hi is at its largest and
      // needs 12-13 bits: the split loses its last bit), random sign, exponent 2^-3..2^0.
      const uint32_t m = static_cast<uint32_t>(g() & 0x7FE000u) | (0x1000u ^ static_cast<uint32_t>(g() & 3u));
      const uint32_t e = 127u - static_cast<uint32_t>(g() % 4);
      return float_of(((g() & 1u) << 31) | (e << 23) | m);
    }
  }
  return 0;
}

// A plain FP32 dot product: fmaf in k order (what a SIMT SGEMM thread does).
inline float dot_fp32(const std::vector<float>& a, const std::vector<float>& b) {
  float c = 0;
  for (size_t k = 0; k < a.size(); ++k) c = std::fma(a[k], b[k], c);
  return c;
}
// The FP64 dot product (every product of two floats exact in double) and, in ss, the sum of the
// squared products: the harness's error scale is sqrt(ss).
inline double fp64_dot(const std::vector<float>& a, const std::vector<float>& b, double& ss) {
  double ref = 0;
  ss = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    const double p = static_cast<double>(a[k]) * b[k];
    ref += p;
    ss += p * p;
  }
  return ref;
}

// A pair of vectors of draws of d (a[k] then b[k] for each k in turn) and their FP64 dot: ref, the
// sum of the squared products ss and the harness's error scale sqrt(ss).
struct DrawnDot {
  double ref = 0, ss = 0, scale = 0;
};
inline DrawnDot draw_dot(Dist d, std::mt19937_64& g, std::vector<float>& a, std::vector<float>& b) {
  for (size_t k = 0; k < a.size(); ++k) {
    a[k] = draw(d, g);
    b[k] = draw(d, g);
  }
  DrawnDot r;
  r.ref = fp64_dot(a, b, r.ss);
  r.scale = std::sqrt(r.ss);
  return r;
}

// Element (i, j) of the product of row-major A (K columns) and B (N columns) in FP64, and in ss the
// sum of its squared products.
inline double fp64_gemm_at(const std::vector<float>& A, const std::vector<float>& B, int N, int K, int i, int j,
                           double& ss) {
  double ref = 0;
  ss = 0;
  for (int k = 0; k < K; ++k) {
    const double p = static_cast<double>(A[static_cast<size_t>(i) * K + k]) * B[static_cast<size_t>(k) * N + j];
    ref += p;
    ss += p * p;
  }
  return ref;
}

// The spec's GEMM tolerance with factor 8 (eval/validate.h, gemm_allowed_error; docs/evaluation.md):
// 8 sqrt(K) 2^-24 sqrt(ss) + 2^-24 |ref|.
inline double gemm_bound(int K, double ss, double ref) {
  const double u = std::ldexp(1.0, -24);
  return 8.0 * std::sqrt(static_cast<double>(K)) * u * std::sqrt(ss) + u * std::fabs(ref);
}

// Checks C (M x N, row-major), the product of A (M x K) and B (K x N), element by element against
// the FP64 product: each element finite and within gemm_bound(K, ss, ref) + `slack`. An ASSERT fails
// at the first element that is not, its message led by `what`; *worst gets the largest
// |C - ref| / gemm_bound(K, ss, ref) of the elements checked.
inline void expect_gemm_within_bound(const std::vector<float>& A, const std::vector<float>& B,
                                     const std::vector<float>& C, int M, int N, int K, const std::string& what,
                                     double slack, double* worst) {
  *worst = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double ss = 0;
      const double ref = fp64_gemm_at(A, B, N, K, i, j, ss);
      const double bound = gemm_bound(K, ss, ref);
      const float c = C[static_cast<size_t>(i) * N + j];
      ASSERT_TRUE(std::isfinite(c)) << what << "C[" << i << ", " << j << "] not finite (not written?)";
      ASSERT_LE(std::fabs(c - ref), bound + slack) << what << "C[" << i << ", " << j << "] = " << c << ", FP64 " << ref;
      *worst = std::max(*worst, std::fabs(c - ref) / bound);
    }
}

// Whether a rasterization, tile_of(bx, by, gx, gy, tm, tn) (each template's Layout::tile_of), maps
// the gx x gy grid of blocks one to one onto the gx x gy grid of output tiles.
inline bool rasterization_one_to_one(int gx, int gy, void (*tile_of)(int, int, int, int, int&, int&)) {
  std::vector<char> seen(static_cast<size_t>(gx) * static_cast<size_t>(gy), 0);
  for (int by = 0; by < gy; ++by)
    for (int bx = 0; bx < gx; ++bx) {
      int tm = -1, tn = -1;
      tile_of(bx, by, gx, gy, tm, tn);
      if (tm < 0 || tm >= gy || tn < 0 || tn >= gx) return false;
      char& s = seen[static_cast<size_t>(tm) * static_cast<size_t>(gx) + static_cast<size_t>(tn)];
      if (s) return false;
      s = 1;
    }
  return true;
}

}  // namespace kopt::test::tf32
