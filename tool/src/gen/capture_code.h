// The shape-capture part of a generated launch header (docs/capture.md): the
// C++ that records the sizes launch_config() is called with, when the
// application runs with KOPT_CAPTURE set, and merges them into a capture file
// at exit. Header-only, C++17 standard library and POSIX; compiled out on
// other systems and with -DKOPT_NO_CAPTURE. The runtime is the shipped
// gen/capture_runtime.h; these functions add the kernel's constants.
#pragma once

#include <string>
#include <vector>

namespace kopt::gen {

/// The #include lines the capture code needs (placed before the header's
/// namespace), inside the capture's #if.
std::string capture_includes();

/// namespace capture { ... } for kernel `name` whose launch_config() takes
/// `sizes` (in that order), to be placed inside namespace kopt_<name>; it
/// defines capture::record(std::array<long long, N>) and capture::flush().
std::string capture_code(const std::string& name, const std::vector<std::string>& sizes);

/// The #if that switches capture on (POSIX, not KOPT_NO_CAPTURE).
constexpr const char* kCaptureIf =
    "#if !defined(KOPT_NO_CAPTURE) && (defined(__unix__) || defined(__APPLE__))";

}  // namespace kopt::gen
