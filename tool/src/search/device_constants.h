// The device limits that tuning constraints may name, for the GPU at hand or,
// without one (compile-only with --arch), from a table per architecture.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/device_info.h"
#include "spec/expr.h"
#include "spec/spec.h"

namespace kopt::search {

/// The names tuning constraints may use for device limits, bound for `d` (the
/// driver's device attributes), or, when `d` is null (no GPU: compile-only),
/// for the architecture `arch` ("sm_90", "sm_86", ...; empty: sm_90) from the
/// table of the CUDA C++ Programming Guide, "Technical Specifications per
/// Compute Capability" (an architecture between rows takes the row below it):
///   WARP_SIZE                    threads per warp (32)
///   MAX_THREADS_PER_BLOCK        threads per block (1024)
///   MAX_THREADS_PER_SM           resident threads per multiprocessor
///   MAX_STATIC_SHARED_PER_BLOCK  bytes of static __shared__ per block (48 KiB:
///                                more needs dynamic shared memory and the opt-in)
///   MAX_SHARED_PER_BLOCK         bytes of shared memory per block with the
///                                opt-in, static and dynamic together (227 KiB on sm_90)
///   MAX_SHARED_PER_SM            bytes of shared memory per multiprocessor
///   MAX_REGS_PER_BLOCK           32-bit registers per block (65536)
///   REGS_PER_SM                  32-bit registers per multiprocessor (65536)
///   MAX_REGS_PER_THREAD          registers one thread may use (255)
///   SM_COUNT                     multiprocessors (without a GPU: the table's
///                                GPU of that architecture, e.g. 132 for the
///                                H100/H200 SXM on sm_90; an estimate)
spec::Bindings device_constants(const model::DeviceInfo* d, const std::string& arch = "");

/// What tuning constraints may name besides the parameters: device_constants()
/// and the spec's defines that name no size (spec::Spec::constant_defines).
spec::Bindings constraint_constants(const spec::Spec& s, const model::DeviceInfo* d, const std::string& arch = "");

/// The constraints a template's launch implies on the device limits, as
/// peers filter such configurations before compiling (Kernel Tuner drops
/// configurations whose block has more threads than the device allows):
///   threads:  (block.x) * (block.y) * (block.z) <= MAX_THREADS_PER_BLOCK
///   static:   (static_shared_bytes) <= MAX_STATIC_SHARED_PER_BLOCK
///             (ptxas refuses more static shared memory: "too much shared data")
///   total:    (static_shared_bytes) + (shared_bytes) <= MAX_SHARED_PER_BLOCK
/// each only when its expressions name nothing but `names` (the tuning
/// parameters and constant defines): a block that depends on a case's sizes
/// cannot be decided per configuration, and the worker refuses it per case
/// instead (verdict infeasible). An expression with no name is left to the
/// spec's own checks.
std::vector<spec::Expr> launch_limit_constraints(const spec::Launch& launch, const std::set<std::string>& names);

/// True when constraint `e` names one of the device limits of device_constants().
bool names_device_limit(const spec::Expr& e);

/// How many configurations the device-limit constraints leave out of a space
/// before anything is compiled: those that meet every constraint that names
/// no device limit (`constraints`) but not the others (`limits`, and the
/// constraints that name a device limit). nullopt when counting takes more
/// than `max_work` steps (search::Space::count_valid).
struct LimitFilter {
  uint64_t space = 0;     // meeting every constraint
  uint64_t filtered = 0;  // meeting the others but not the device limits
  std::vector<std::string> limits;  // the constraints that do the filtering, as text
};
std::optional<LimitFilter> count_limit_filtered(const std::vector<spec::TuningParam>& params,
                                                const std::vector<spec::Expr>& constraints,
                                                const spec::Bindings& constants, uint64_t max_work = 20'000'000);

}  // namespace kopt::search
