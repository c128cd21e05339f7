// Host-side comparison of a candidate's outputs with the reference's.
// Pure arithmetic on host buffers: no CUDA, unit-tested on CPU-only machines.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "spec/spec.h"

namespace kopt::eval {

/// Byte value written over every output before every candidate launch, over
/// shared memory before every candidate launch, and into the canary bytes
/// around every buffer. 0xFF bytes are NaN as half, bfloat16, float and double,
/// so an element that is never written is never a plausible value.
constexpr uint8_t kPoisonByte = 0xFF;

struct CompareOutcome {
  bool passed = true;
  double max_abs_error = 0;  // over finite elements
  double max_ratio = 0;      // max |out-ref| / allowed (<= 1 passes); inf for non-finite
  int64_t worst_index = -1;
  int64_t failures = 0;      // elements over their allowed error
  std::string reason;        // first failure, e.g. "C[17]: NaN where the reference is 3.25"
};

/// allclose: every element must satisfy |out - ref| <= atol + rtol*|ref|, and,
/// where rel_l2 is set, ||out - ref||_2 <= rel_l2 * ||ref||_2. Where the
/// reference is finite a NaN or Inf output always fails; where the reference is
/// NaN the output must be NaN, where it is +-Inf the output must be the same Inf.
/// `out` and `ref` hold `count` packed elements of `dtype`.
CompareOutcome compare_allclose(const std::string& name, const uint8_t* out, const uint8_t* ref,
                                spec::DType dtype, int64_t count, const spec::Tolerance& tol);

/// Element-wise bound: |out_i - ref_i| <= allowed_i (e.g. the GEMM bound).
/// Same NaN/Inf rules as compare_allclose.
CompareOutcome compare_bounded(const std::string& name, const uint8_t* out, const uint8_t* ref,
                               spec::DType dtype, int64_t count, const std::vector<double>& allowed);

/// The K-aware FP32 GEMM bound for one element:
///   allowed = factor * sqrt(K) * 2^-24 * sqrt(sumsq) + 2^-24 * |ref| + FLT_MIN
/// where sumsq = sum_k (a_ik * b_kj)^2. The first term bounds accumulated FP32
/// rounding (random-walk growth over K products); the second the rounding of
/// the reference itself to float; FLT_MIN tolerates flush-to-zero of
/// denormals. See README "Tolerances" for the measured separation of FP32
/// from FP16/TF32-rounded products.
double gemm_allowed_error(double factor, int64_t k, double sumsq, double ref);

/// The unit roundoff u of a type, half its machine epsilon: 2^-53 (double),
/// 2^-24 (float), 2^-11 (half), 2^-8 (bfloat16); 0 for integer types (their
/// sums are exact).
double unit_roundoff(spec::DType dtype);

/// The error allowed for one total of a sum tolerance (spec::Tolerance::Kind::sum):
///   atol + (rtol + factor * sqrt(terms) * u) * |ref| + the smallest normal number
/// (u: unit_roundoff of the output's type; terms: tol.terms_value; rtol: the
/// terms' own relative error, such as an exp's, 0 unless the spec gives it). The
/// probabilistic bound of summation in any order (Higham and Mary, "A new
/// approach to probabilistic rounding error analysis", SIAM J. Sci. Comput.
/// 41(5), 2019: with independent rounding errors |computed - exact| <=
/// lambda * sqrt(n) * u * sum |x_i| holds with probability at least
/// 1 - 2n exp(-lambda^2 (1 - u)^2 / 2)), with |ref| standing for sum |x_i|,
/// which is exact when the terms have one sign; for terms of both signs the
/// spec gives atol. The smallest normal number tolerates flush-to-zero.
double sum_allowed_error(const spec::Tolerance& tol, spec::DType dtype, double ref);
/// The factor of |ref| in sum_allowed_error, rtol + factor sqrt(terms) u,
/// computed as sum_allowed_error computes it (the on-GPU screen rebuilds the
/// bound's first two terms from it bit for bit).
double sum_relative_bound(const spec::Tolerance& tol, spec::DType dtype);

/// Sum tolerance: the output (`count` elements) holds count / P totals (P =
/// tol.partials_value), each as P consecutive partial sums; the partials of
/// total g are added up in double (compensated) and compared with element g
/// of the reference within sum_allowed_error (the reference's elements past
/// count / P are not read). NaN/Inf rules as compare_allclose, on the added
/// partials: one NaN partial makes its total NaN. A count that is no multiple
/// of P fails. worst_index is the first partial of the worst total.
CompareOutcome compare_sum(const std::string& name, const uint8_t* out, const uint8_t* ref, spec::DType dtype,
                           int64_t count, const spec::Tolerance& tol);

}  // namespace kopt::eval
