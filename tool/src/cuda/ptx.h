// Reading a kernel's parameter list from PTX: what the compile-only mode
// checks a kernel's parameters with (NVRTC produces the PTX beside the cubin,
// and needs no GPU).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace kopt::cuda {

/// The size in bytes of each parameter of the kernel `entry` (its lowered
/// name, as in `.entry NAME(`) in `ptx`, in order: `.param .u64 p` is 8,
/// `.param .f32 p` 4, `.param .align 4 .b8 p[12]` 12 (a struct or a half
/// passed by value). nullopt when the PTX has no such entry or its list
/// cannot be read (then nothing is checked).
std::optional<std::vector<size_t>> ptx_param_sizes(const std::string& ptx, const std::string& entry);

/// The size in bytes of the module-scope variable `name` (its lowered name)
/// declared in state space `space` (".const" for __constant__, ".global" for
/// __device__): `.const .align 4 .b8 d_filter[1156];` is 1156,
/// `.const .align 4 .u32 n;` 4. nullopt when `ptx` declares no such variable.
std::optional<size_t> ptx_variable_bytes(const std::string& ptx, const std::string& name,
                                         const std::string& space = ".const");

}  // namespace kopt::cuda
