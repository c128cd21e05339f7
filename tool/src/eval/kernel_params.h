// A kernel's parameters against the spec's signature: the count and the byte
// size of each, which is what the launcher relies on (it passes one value per
// signature entry: a device pointer for a buffer, the scalar's own type
// otherwise). Checked at compile time from the PTX (eval::Evaluator::compile,
// also in compile-only mode) and on the GPU from cuFuncGetParamInfo (the
// worker). Types of equal size (a pointer and an int64, an int32 and a float)
// cannot be told apart.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "spec/spec.h"

namespace kopt::eval {

/// One signature entry as the launcher passes it.
struct ExpectedParam {
  std::string name;  // "eps"
  std::string type;  // "float", "int32", "pointer to float"
  size_t size = 0;   // bytes: 8 for a buffer (a device pointer), else the scalar's size
};

/// The kernel parameters of `signature`: every entry but the constants
/// (spec::Role::constant), which are __constant__ symbols.
std::vector<ExpectedParam> expected_params(const std::vector<spec::Param>& signature);

/// Why a kernel whose parameters have the byte sizes `actual` cannot be
/// launched with the signature `expected`, or nullopt when it can. One line,
/// naming the first parameter that differs by its index (from 0, as in PTX
/// and cuFuncGetParamInfo) and name, with the expected and actual sizes, e.g.
/// "the kernel's parameters do not match the spec's signature: it has 3
/// parameters, the signature 4 (x, y, n, eps); parameter 3 ('eps', float,
/// 4 bytes) is missing from the kernel".
std::optional<std::string> param_mismatch(const std::vector<ExpectedParam>& expected,
                                          const std::vector<size_t>& actual);

/// The error_name of a compile result refused for a mismatch.
inline constexpr const char* kParamMismatch = "KOPT_PARAM_MISMATCH";

}  // namespace kopt::eval
