#include "eval/validate.h"

#include <cfloat>
#include <cmath>
#include <sstream>

#include "spec/inputs.h"

namespace kopt::eval {
namespace {

std::string fmt(double v) {
  std::ostringstream ss;
  ss.precision(9);
  ss << v;
  return ss.str();
}

// Shared element loop: `allowed(i, ref)` gives the error allowed at element i.
template <typename AllowedFn>
CompareOutcome compare_impl(const std::string& name, const uint8_t* out, const uint8_t* ref,
                            spec::DType dtype, int64_t count, AllowedFn allowed) {
  CompareOutcome o;
  for (int64_t i = 0; i < count; ++i) {
    const double x = spec::element_as_double(out, dtype, i);
    const double r = spec::element_as_double(ref, dtype, i);
    std::string why;
    if (std::isnan(r)) {
      if (!std::isnan(x)) why = fmt(x) + " where the reference is NaN";
    } else if (std::isinf(r)) {
      if (x != r) why = fmt(x) + " where the reference is " + fmt(r);
    } else if (!std::isfinite(x)) {
      why = std::string(std::isnan(x) ? "NaN" : fmt(x)) + " where the reference is " + fmt(r) +
            (std::isnan(x) ? " (never written, or computed NaN)" : "");
    } else {
      const double err = std::fabs(x - r);
      const double lim = allowed(i, r);
      const double ratio = lim > 0 ? err / lim : (err > 0 ? INFINITY : 0.0);
      if (err > o.max_abs_error) o.max_abs_error = err;
      if (ratio > o.max_ratio) {
        o.max_ratio = ratio;
        o.worst_index = i;
      }
      if (err > lim) why = fmt(x) + " where the reference is " + fmt(r) + " (error " + fmt(err) +
                           " > allowed " + fmt(lim) + ")";
    }
    if (!why.empty()) {
      if (o.failures == 0) {
        o.reason = name + "[" + std::to_string(i) + "]: " + why;
        if (!std::isfinite(x) || !std::isfinite(r)) {
          o.max_ratio = INFINITY;
          o.worst_index = i;
        }
      }
      ++o.failures;
      o.passed = false;
    }
  }
  if (o.failures > 1) o.reason += " (and " + std::to_string(o.failures - 1) + " more elements)";
  return o;
}

}  // namespace

CompareOutcome compare_allclose(const std::string& name, const uint8_t* out, const uint8_t* ref,
                                spec::DType dtype, int64_t count, const spec::Tolerance& tol) {
  CompareOutcome o = compare_impl(name, out, ref, dtype, count, [&](int64_t, double r) {
    return tol.atol + tol.rtol * std::fabs(r);
  });
  if (o.passed && tol.rel_l2) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < count; ++i) {
      const double x = spec::element_as_double(out, dtype, i);
      const double r = spec::element_as_double(ref, dtype, i);
      if (!std::isfinite(r)) continue;
      num += (x - r) * (x - r);
      den += r * r;
    }
    const double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    if (rel > *tol.rel_l2) {
      o.passed = false;
      o.reason = name + ": relative L2 error " + fmt(rel) + " > allowed " + fmt(*tol.rel_l2);
    }
  }
  return o;
}

CompareOutcome compare_bounded(const std::string& name, const uint8_t* out, const uint8_t* ref,
                               spec::DType dtype, int64_t count, const std::vector<double>& allowed) {
  return compare_impl(name, out, ref, dtype, count,
                      [&](int64_t i, double) { return allowed[static_cast<size_t>(i)]; });
}

double gemm_allowed_error(double factor, int64_t k, double sumsq, double ref) {
  const double u = std::ldexp(1.0, -24);  // unit roundoff of float32
  return factor * std::sqrt(static_cast<double>(k)) * u * std::sqrt(sumsq) + u * std::fabs(ref) +
         static_cast<double>(FLT_MIN);
}

}  // namespace kopt::eval
