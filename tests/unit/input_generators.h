// Generators and type lists shared by the tests of spec/inputs.h.
#pragma once

#include "spec/inputs.h"

namespace kopt::test {

/// Every element type a buffer can have.
inline constexpr spec::DType kAllTypes[] = {spec::DType::f16, spec::DType::bf16, spec::DType::f32, spec::DType::f64,
                                            spec::DType::i8,  spec::DType::u8,   spec::DType::i32, spec::DType::u32,
                                            spec::DType::i64, spec::DType::u64};

/// A generator of `kind` with its two parameters: low and high (uniform) or
/// mean and stddev (normal).
inline spec::Generator random_generator(spec::Generator::Kind kind, double a, double b) {
  spec::Generator g;
  g.kind = kind;
  if (kind == spec::Generator::Kind::normal) {
    g.mean = a;
    g.stddev = b;
  } else {
    g.low = a;
    g.high = b;
  }
  return g;
}
inline spec::Generator uniform(double lo, double hi) { return random_generator(spec::Generator::Kind::uniform, lo, hi); }
inline spec::Generator normal(double mean, double stddev) {
  return random_generator(spec::Generator::Kind::normal, mean, stddev);
}

}  // namespace kopt::test
