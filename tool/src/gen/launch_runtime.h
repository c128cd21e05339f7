// The fixed part of every generated launch header (gen/generate.h,
// launch_header()): the functions of the launch expression language
// (docs/spec-format.md, spec/expr.h) over long long, and the LaunchConfig
// that launch_config() returns. `kopt generate` copies the text between the
// kopt:embed markers, unchanged, into each header's namespace kopt_<name>;
// tests/unit/test_generate.cpp checks these functions against kopt's own
// evaluation of the expressions (spec::Expr) on positive arguments, where
// launches live.
//
// C++17 and <cstddef> only. The header cannot report errors as kopt does
// (a division by zero, an overflow): the launch expressions were evaluated
// by kopt on every tuned shape before the header was written.
#pragma once

#include <cstddef>

namespace kopt::gen::launch_runtime {

// kopt:embed-begin expression_functions
inline long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
template <typename... R>
inline long long min(long long a, long long b, long long c, R... r) { return min(min(a, b), c, r...); }
inline long long max(long long a, long long b) { return a > b ? a : b; }
template <typename... R>
inline long long max(long long a, long long b, long long c, R... r) { return max(max(a, b), c, r...); }
inline long long abs(long long a) { return a < 0 ? -a : a; }
inline long long align_up(long long a, long long b) { return ceil_div(a, b) * b; }
inline long long pow2(long long a) { return 1LL << a; }
inline long long log2(long long a) { long long r = 0; while (a > 1) { a >>= 1; ++r; } return r; }
inline long long is_pow2(long long a) { return a > 0 && (a & (a - 1)) == 0; }
// kopt:embed-end expression_functions

// Python's floor division and power (spec::Expr::cpp writes '//' and '**' so);
// a header holds them only when one of its expressions uses them.
// kopt:embed-begin python_operators
inline long long floor_div(long long a, long long b) { return a / b - (a % b != 0 && (a % b < 0) != (b < 0)); }
inline long long ipow(long long a, long long b) { long long r = 1; while (b-- > 0) r *= a; return r; }
// kopt:embed-end python_operators

// kopt:embed-begin launch_config
struct LaunchConfig {
  unsigned grid[3];
  unsigned block[3];
  std::size_t shared_bytes;  // dynamic shared memory
  int variant;               // index into kernels[] (0 when there is one variant)
};
// kopt:embed-end launch_config

}  // namespace kopt::gen::launch_runtime
