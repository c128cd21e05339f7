#include "eval/validate.h"

#include <cfloat>
#include <algorithm>
#include <cmath>
#include <cstring>
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

// Shared element loop over `count` values: out_at(i) and ref_at(i) give the
// two values, `allowed(i, ref)` the error allowed at i, `where(i)` how a
// failure names it ("[17]").
template <typename OutFn, typename RefFn, typename AllowedFn, typename WhereFn>
CompareOutcome compare_values(const std::string& name, int64_t count, OutFn out_at, RefFn ref_at, AllowedFn allowed,
                              WhereFn where) {
  CompareOutcome o;
  for (int64_t i = 0; i < count; ++i) {
    const double x = out_at(i);
    const double r = ref_at(i);
    if (x == r) continue;  // equal and not NaN: no error to record
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
        o.reason = name + where(i) + ": " + why;
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

// Element readers: the i-th element of a buffer as a double. The typed one
// is inlined into the element loops (a buffer of 20 M floats is compared in
// tens of milliseconds instead of a call and a dtype switch per element); the
// half types go through spec::element_as_double's conversion.
template <typename T>
struct TypedReader {
  const uint8_t* data;
  double operator()(int64_t i) const {
    T v;
    std::memcpy(&v, data + static_cast<size_t>(i) * sizeof(T), sizeof(T));
    return static_cast<double>(v);
  }
};
struct ConvertingReader {
  const uint8_t* data;
  spec::DType dtype;
  double operator()(int64_t i) const { return spec::element_as_double(data, dtype, i); }
};

/// Calls fn(reader of a, reader of b) with readers specialised for `dtype`.
template <typename Fn>
auto with_readers(spec::DType dtype, const uint8_t* a, const uint8_t* b, Fn&& fn) {
  switch (dtype) {
    case spec::DType::f32: return fn(TypedReader<float>{a}, TypedReader<float>{b});
    case spec::DType::f64: return fn(TypedReader<double>{a}, TypedReader<double>{b});
    case spec::DType::i8: return fn(TypedReader<int8_t>{a}, TypedReader<int8_t>{b});
    case spec::DType::u8: return fn(TypedReader<uint8_t>{a}, TypedReader<uint8_t>{b});
    case spec::DType::i32: return fn(TypedReader<int32_t>{a}, TypedReader<int32_t>{b});
    case spec::DType::u32: return fn(TypedReader<uint32_t>{a}, TypedReader<uint32_t>{b});
    case spec::DType::i64: return fn(TypedReader<int64_t>{a}, TypedReader<int64_t>{b});
    case spec::DType::u64: return fn(TypedReader<uint64_t>{a}, TypedReader<uint64_t>{b});
    case spec::DType::f16:
    case spec::DType::bf16: break;
  }
  return fn(ConvertingReader{a, dtype}, ConvertingReader{b, dtype});
}

template <typename AllowedFn>
CompareOutcome compare_impl(const std::string& name, const uint8_t* out, const uint8_t* ref,
                            spec::DType dtype, int64_t count, AllowedFn allowed) {
  return with_readers(dtype, out, ref, [&](auto out_at, auto ref_at) {
    return compare_values(name, count, out_at, ref_at, allowed,
                          [](int64_t i) { return "[" + std::to_string(i) + "]"; });
  });
}

/// The smallest positive normal number of a floating type (0 for integers).
double smallest_normal(spec::DType dtype) {
  switch (dtype) {
    case spec::DType::f64: return DBL_MIN;
    case spec::DType::f32:
    case spec::DType::bf16: return static_cast<double>(FLT_MIN);
    case spec::DType::f16: return std::ldexp(1.0, -14);
    default: return 0.0;
  }
}

}  // namespace

CompareOutcome compare_allclose(const std::string& name, const uint8_t* out, const uint8_t* ref,
                                spec::DType dtype, int64_t count, const spec::Tolerance& tol) {
  CompareOutcome o = compare_impl(name, out, ref, dtype, count, [&](int64_t, double r) {
    return tol.atol + tol.rtol * std::fabs(r);
  });
  if (o.passed && tol.rel_l2) {
    double num = 0, den = 0;
    with_readers(dtype, out, ref, [&](auto out_at, auto ref_at) {
      for (int64_t i = 0; i < count; ++i) {
        const double x = out_at(i);
        const double r = ref_at(i);
        if (!std::isfinite(r)) continue;
        num += (x - r) * (x - r);
        den += r * r;
      }
      return 0;
    });
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

double unit_roundoff(spec::DType dtype) {
  switch (dtype) {
    case spec::DType::f64: return std::ldexp(1.0, -53);
    case spec::DType::f32: return std::ldexp(1.0, -24);
    case spec::DType::f16: return std::ldexp(1.0, -11);
    case spec::DType::bf16: return std::ldexp(1.0, -8);
    default: return 0.0;
  }
}

double sum_relative_bound(const spec::Tolerance& tol, spec::DType dtype) {
  const double terms = static_cast<double>(std::max<int64_t>(tol.terms_value, 1));
  return tol.rtol + tol.factor * std::sqrt(terms) * unit_roundoff(dtype);
}

double sum_allowed_error(const spec::Tolerance& tol, spec::DType dtype, double ref) {
  return tol.atol + sum_relative_bound(tol, dtype) * std::fabs(ref) + smallest_normal(dtype);
}

namespace {

template <typename Reader>
double add_partials(const Reader& out_at, int64_t first, int64_t n) {
  // Neumaier's compensated summation: the partials' own rounding stays far
  // below the bound (its error is about 2u times the sum of their magnitudes).
  double s = 0, c = 0;
  for (int64_t j = first; j < first + n; ++j) {
    const double x = out_at(j);
    const double t = s + x;
    c += std::fabs(s) >= std::fabs(x) ? (s - t) + x : (x - t) + s;
    s = t;
  }
  return std::isfinite(s) ? s + c : s;
}

}  // namespace

CompareOutcome compare_sum(const std::string& name, const uint8_t* out, const uint8_t* ref, spec::DType dtype,
                           int64_t count, const spec::Tolerance& tol) {
  const int64_t p = std::max<int64_t>(tol.partials_value, 1);
  if (count % p != 0) {
    CompareOutcome o;
    o.passed = false;
    o.failures = 1;
    o.max_ratio = INFINITY;
    o.reason = name + ": " + std::to_string(count) + " elements are no whole number of totals of " +
               std::to_string(p) + " partial sums";
    return o;
  }
  auto where = [p](int64_t g) {
    if (p == 1) return "[" + std::to_string(g) + "]";
    return "[" + std::to_string(g * p) + ".." + std::to_string(g * p + p - 1) + "] (" + std::to_string(p) +
           " partial sums, added up)";
  };
  CompareOutcome o = with_readers(dtype, out, ref, [&](auto out_at, auto ref_at) {
    return compare_values(
        name, count / p, [&](int64_t g) { return add_partials(out_at, g * p, p); }, ref_at,
        [&](int64_t, double r) { return sum_allowed_error(tol, dtype, r); }, where);
  });
  if (o.worst_index >= 0) o.worst_index *= p;
  return o;
}

}  // namespace kopt::eval
