// CTest's resource allocation, as kopt meets it (ctest(1), "Resource
// Allocation"): the resource spec file that `kopt devices
// --ctest-resource-spec FILE` writes for the machine's GPUs, and the
// environment through which CTest tells a test which GPU it was given.
//
// The resource spec file (version 1.0), one resource type "gpus", one entry
// per CUDA device, its id the device ordinal:
//
//   {"version": {"major": 1, "minor": 0},
//    "local": [{"gpus": [{"id": "0", "slots": 4}, {"id": "1", "slots": 4}]}]}
//
// A test whose RESOURCE_GROUPS is "gpus:N" then runs with
//   CTEST_RESOURCE_GROUP_COUNT=1
//   CTEST_RESOURCE_GROUP_0=gpus
//   CTEST_RESOURCE_GROUP_0_GPUS=id:1,slots:N
// and only with them when ctest was given a resource spec file.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kopt::model {

/// Slots per GPU that `kopt devices --ctest-resource-spec` writes and that
/// optimize_kernel()'s benchmark tests take (a whole GPU); a correctness
/// test takes one. The CMake module's KOPT_CTEST_GPU_SLOTS has the same default.
constexpr int kCtestGpuSlots = 4;

/// The resource spec file for GPUs with these ordinals, each with `slots`
/// slots (>= 1).
nlohmann::json ctest_resource_spec(const std::vector<int>& ordinals, int slots);

/// The GPU CTest gave this test, read from the environment (`getenv` is
/// injectable for tests).
struct CtestGpu {
  int ordinal = 0;    // the id in the resource spec file: a CUDA device ordinal
  int slots = 0;      // how many of its slots the test holds
  std::string value;  // CTEST_RESOURCE_GROUP_0_GPUS as given, for messages
};

/// nullopt when CTest's resource allocation is not active (no
/// CTEST_RESOURCE_GROUP_COUNT: ctest ran without --resource-spec-file, or
/// the command does not run under ctest). Otherwise group 0's first GPU.
/// Throws UsageError naming the variable and its value:
///   kopt.ctest.001 CTEST_RESOURCE_GROUP_COUNT is not a whole number >= 1
///   kopt.ctest.002 group 0 has no "gpus" (CTEST_RESOURCE_GROUP_0 lacks it,
///                  or CTEST_RESOURCE_GROUP_0_GPUS is not set)
///   kopt.ctest.003 CTEST_RESOURCE_GROUP_0_GPUS is not "id:ID,slots:N[;...]"
///   kopt.ctest.004 the id is not a CUDA device ordinal (0 to 1023)
std::optional<CtestGpu> ctest_gpu_from_environment(
    const std::function<const char*(const char*)>& getenv = nullptr);

}  // namespace kopt::model
