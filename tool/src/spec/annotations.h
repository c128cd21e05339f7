// Launch annotations inside a kernel source file.
//
// A .cu file may carry its own entry point and launch configuration in comment
// lines, which override the spec's (best.cu files are written this way):
//   // kopt:entry sgemm_naive
//   // kopt:grid ceil_div(N, 16), ceil_div(M, 16), 1
//   // kopt:block 16, 16, 1
//   // kopt:shared 0
//   // kopt:static_shared (BM + BN) * BK * 4
//   // kopt:options -use_fast_math -maxrregcount=128
//   // kopt:param BM=128
// Missing grid/block entries default to 1. Unknown kopt: keys are errors.
// `kopt:static_shared` states the static __shared__ bytes the kernel declares
// (Launch::static_shared_bytes): configurations over the device's limit are
// left out of a search before compiling.
// The first line of each key wins, so a header written in front of a source
// (as best.cu has) supersedes the source's own lines.
// `kopt:param` lines give tuning-parameter values (best.cu carries them), which
// launch expressions may use and which are passed as -D defines.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "spec/expr.h"

namespace kopt::spec {

struct Annotations {
  std::optional<std::string> entry;
  std::optional<std::vector<Expr>> grid, block;  // 1 to 3 expressions
  std::optional<Expr> shared_bytes;
  std::optional<Expr> static_shared_bytes;
  std::vector<std::string> options;
  std::map<std::string, int64_t> params;
  /// Where the launch lines are: the `origin` given to parse_annotations and
  /// the 1-based line of each (0: absent), for messages about them.
  std::string origin;
  int grid_line = 0, block_line = 0, shared_line = 0, static_shared_line = 0;
};

/// Parses the annotations of `source`; `origin` names the file in errors.
/// Throws SpecError(kopt.annot.4xx) with file and line on a malformed line.
Annotations parse_annotations(const std::string& source, const std::string& origin);

/// Splits "a, f(b, c), d" at top-level commas (parentheses respected), trimmed.
std::vector<std::string> split_top_level(const std::string& list);

}  // namespace kopt::spec
