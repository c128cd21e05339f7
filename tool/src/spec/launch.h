// A launch (grid, block, dynamic shared memory) resolved for one case.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "spec/spec.h"

namespace kopt::spec {

struct LaunchDims {
  std::array<int64_t, 3> grid{1, 1, 1};
  std::array<int64_t, 3> block{1, 1, 1};
  int64_t shared_bytes = 0;  // dynamic shared memory, bytes
  std::optional<int64_t> block_work;  // Launch::block_work's value, when the launch has one
  std::optional<int64_t> traffic_bytes;  // Launch::traffic_bytes's value, when the launch has one
};

/// Evaluates grid/block/shared expressions with the case's sizes and
/// `params` (an empty grid or block dimension is 1, empty shared is 0).
/// Throws SpecError(kopt.launch.501) naming the case and the expression, and
/// for a launch from a kernel file's kopt: lines (Launch::origin) the file and line.
LaunchDims resolve_launch(const Launch& l, const Case& c, const std::map<std::string, int64_t>& params);

}  // namespace kopt::spec
