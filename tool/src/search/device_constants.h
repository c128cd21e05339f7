// The device limits that tuning constraints may name.
#pragma once

#include "model/device_info.h"
#include "spec/expr.h"

namespace kopt::search {

/// MAX_SHARED_PER_BLOCK (bytes, with the opt-in), MAX_THREADS_PER_BLOCK,
/// REGS_PER_SM, SM_COUNT and WARP_SIZE of `d`. Without a device (`d` null:
/// compile-only) the values of an H100/H200 (sm_90; CUDA C++ Programming
/// Guide, "Technical Specifications per Compute Capability", 9.0: 227 KB of
/// shared memory per block with the opt-in, 1024 threads, 64K registers per
/// SM; 132 SMs on the H200 SXM) are assumed.
spec::Bindings device_constants(const model::DeviceInfo* d);

}  // namespace kopt::search
